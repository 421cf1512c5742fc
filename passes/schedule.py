"""dlc-schedule: tile, vectorize and lower to FMA every large static f32 contraction.

At -O2/-O3 the linalg stage ends with this pass. For each `linalg.matmul` (plain or with
transposed operands, as Gemm lowers to) and `linalg.batch_matmul` with static shapes, f32
operands and at least `min_volume` multiply-adds, it builds a transform-dialect script as text
(one named sequence per op, found by a tag attribute) and applies it with the upstream transform
interpreter. The recipe is the one measured in ../shared/PERF.md:

1. split M and N so that each part divides its register tile (remainders become their own op
   with a full-size register tile: no masked vectors, no dynamic shapes);
2. tile for cache (mc x nc x kc, loop order n, k, m), then for registers (mr x nr x 1);
3. vectorize, then at once `reduction_to_contract` and the outer-product lowering of
   `vector.contract` (before any canonicalization, which would turn it into mulf+addf, not FMA);
4. hoist the accumulator's transfer pair out of the k loop while still on tensors.

The tile heuristic (`matmul_tiles`), from the static shape only:
- register tile: nr = 32 (two 16-lane vectors) when N >= 32, else N; mr = 8 when M >= 8,
  else M (8 x 32 = 16 accumulators of the 32 zmm registers). mr == nr is avoided (LLVM 22.1.8
  miscompiles shape_cast(broadcast) for equal inner tiles, see PERF.md): mr is halved.
- cache tile: the largest multiple of mr dividing the part's M and <= 64, of nr dividing N and
  <= 512; kc the largest divisor of K in [64, 256], else all of K.
Ops that do not match (dynamic shapes, other element types, tiny volumes, generic contractions)
are left to the naive loop path. The vector ops left behind are lowered after bufferization by
`dlc-lower-vectors` (passes/lower_vectors.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func
from mlir.dialects.transform import interpreter

from dlc.passes.registry import ModulePass, register

TAG = "dlc.schedule"
MATMUL_OPS = ("linalg.matmul", "linalg.batch_matmul")
REGISTER_N = 32
REGISTER_M = 8
CACHE_M, CACHE_N, CACHE_K = 64, 512, 256


@dataclass(frozen=True)
class Tiles:
    """Cache and register tile sizes of one contraction part (m, n, k)."""

    cache: tuple[int, int, int]
    register: tuple[int, int, int]


@dataclass(frozen=True)
class Contraction:
    """The static problem of a matmul-like op: batch, M, N, K."""

    batch: int | None
    m: int
    n: int
    k: int


def largest_multiple_dividing(size: int, step: int, limit: int) -> int:
    """The largest multiple of `step` that divides `size` and is <= limit (at least step)."""
    best = step
    for candidate in range(step, min(size, limit) + 1, step):
        if size % candidate == 0:
            best = candidate
    return best


def k_cache_tile(k: int) -> int:
    for candidate in range(min(k, CACHE_K), 63, -1):
        if k % candidate == 0:
            return candidate
    return k


def register_tile(m: int, n: int) -> tuple[int, int]:
    nr = REGISTER_N if n >= REGISTER_N else n
    mr = REGISTER_M if m >= REGISTER_M else m
    while mr == nr and mr > 1:  # equal inner tiles hit the LLVM 22 miscompile
        mr //= 2
    while m % mr:
        mr -= 1
    return mr, nr


def matmul_tiles(m: int, n: int, k: int) -> Tiles:
    """Tile sizes of a part whose M and N are multiples of its register tile (see `split`)."""
    mr, nr = register_tile(m, n)
    mc = largest_multiple_dividing(m, mr, CACHE_M)
    nc = largest_multiple_dividing(n, nr, CACHE_N)
    return Tiles((mc, nc, k_cache_tile(k)), (mr, nr, 1))


def split_point(size: int, tile: int) -> int | None:
    """Where to split a dimension so its first part is a multiple of `tile` (None: no split)."""
    if size <= tile or size % tile == 0:
        return None
    return size - size % tile


def contraction(op: ir.Operation) -> Contraction | None:
    """The static shape of a schedulable matmul-like op, or None to leave it to the naive path."""
    if op.name not in MATMUL_OPS or len(op.operands) != 3 or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if any(str(t.element_type) != "f32" for t in types):
        return None
    a, _, c = (list(t.shape) for t in types)
    batch = c[0] if op.name == "linalg.batch_matmul" else None
    m, n = c[-2], c[-1]
    if m == 0 or n == 0:
        return None
    k = (a[-1] * a[-2]) // m
    return Contraction(batch, m, n, k)


def _tile_ops(handle: str, sizes: list[int], prefix: str,
              interchange: list[int] | None = None) -> tuple[list[str], str, list[str]]:
    """Lines tiling `handle` by `sizes` (all non-zero): the tiled op and loop handles."""
    loops = [f"%{prefix}_l{i}" for i in range(len(sizes))]
    types = ", ".join(["!transform.any_op"] * (len(sizes) + 1))
    order = f" interchange = [{', '.join(map(str, interchange))}]" if interchange else ""
    line = (f"%{prefix}_t, {', '.join(loops)} = transform.structured.tile_using_for {handle} "
            f"tile_sizes [{', '.join(map(str, sizes))}]{order} "
            f": (!transform.any_op) -> ({types})")
    return [line], f"%{prefix}_t", loops


def _schedule_part(handle: str, problem: Contraction, m: int, n: int, prefix: str) -> list[str]:
    """Tile, vectorize and lower one part (M and N are multiples of its register tile)."""
    tiles = matmul_tiles(m, n, problem.k)
    batch = [1] if problem.batch is not None else []
    # cache loops n, k, m: a kc x nc panel of B stays in L2 while the m loop runs over it
    order = [0, 2, 3, 1] if batch else [1, 2, 0]
    lines, cached, _ = _tile_ops(handle, batch + list(tiles.cache), f"{prefix}c", order)
    more, tiled, loops = _tile_ops(cached, batch + list(tiles.register), f"{prefix}r")
    lines += more
    lines.append(f"transform.structured.vectorize {tiled} : !transform.any_op")
    lines.append(f"__LOWER__ {loops[-1]}")
    return lines


def _split(handle: str, dim: int, at: int, prefix: str) -> tuple[list[str], str, str]:
    both, low, high = f"%{prefix}_s", f"%{prefix}_lo", f"%{prefix}_hi"
    return [
        f"{both} = transform.structured.split {handle} after {at} {{dimension = {dim}}} "
        ": !transform.any_op",
        f"{low}, {high} = transform.split_handle {both} "
        ": (!transform.any_op) -> (!transform.any_op, !transform.any_op)",
    ], low, high


def schedule_lines(handle: str, problem: Contraction, prefix: str) -> list[str]:
    """The transform ops scheduling one contraction (split into divisible parts first)."""
    offset = 0 if problem.batch is None else 1
    mr, nr = REGISTER_M, REGISTER_N
    lines: list[str] = []
    m_parts = [(handle, problem.m)]
    at = split_point(problem.m, mr)
    if at is not None:
        more, low, high = _split(handle, offset, at, f"{prefix}m")
        lines += more
        m_parts = [(low, at), (high, problem.m - at)]
    for i, (m_handle, m) in enumerate(m_parts):
        n_parts = [(m_handle, problem.n)]
        at = split_point(problem.n, nr)
        if at is not None:
            more, low, high = _split(m_handle, offset + 1, at, f"{prefix}n{i}")
            lines += more
            n_parts = [(low, at), (high, problem.n - at)]
        for j, (n_handle, n) in enumerate(n_parts):
            lines += _schedule_part(n_handle, problem, m, n, f"{prefix}p{i}{j}")
    return lines


_LOWER_CONTRACT = """
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
    } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
    } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f : !transform.any_op"""


def transform_script(problems: list[Contraction]) -> str:
    """The transform module scheduling the ops tagged 0..len(problems)-1."""
    body: list[str] = []
    hoists: list[str] = []
    for index, problem in enumerate(problems):
        body.append(
            f"%op{index} = transform.structured.match attributes {{{TAG} = {index} : i64}} "
            "in %root : (!transform.any_op) -> !transform.any_op"
        )
        for line in schedule_lines(f"%op{index}", problem, f"s{index}"):
            if line.startswith("__LOWER__"):
                hoists.append(line.split()[1])
                continue
            body.append(line)
    body.append("%f = transform.structured.match ops{[\"func.func\"]} in %root "
                ": (!transform.any_op) -> !transform.any_op")
    text = "\n    ".join(body) + _LOWER_CONTRACT
    for loop in hoists:
        text += f"\n    transform.loop.hoist_loop_invariant_subsets {loop} : !transform.any_op"
    text += ("\n    transform.apply_patterns to %f {\n"
             "      transform.apply_patterns.canonicalization\n"
             "    } : !transform.any_op")
    return (
        "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main(%root: !transform.any_op "
        "{transform.readonly}) {\n    " + text + "\n    transform.yield\n  }\n}\n"
    )


def candidates(module: ir.Operation, min_volume: int) -> list[tuple[ir.Operation, Contraction]]:
    found: list[tuple[ir.Operation, Contraction]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        problem = contraction(op)
        if problem is not None and (problem.batch or 1) * problem.m * problem.n * problem.k \
                >= min_volume:
            found.append((op, problem))
        return ir.WalkResult.ADVANCE

    for top in module.regions[0].blocks[0].operations:
        if isinstance(top, func.FuncOp):
            top.operation.walk(visit)
    return found


@register
@dataclass(frozen=True)
class Schedule(ModulePass):
    """Tile, vectorize and FMA-lower static f32 matmuls with a transform-dialect schedule."""

    name = "dlc-schedule"
    min_volume: int = 32 * 32 * 32

    def run(self, module: ir.Operation) -> None:
        found = candidates(module, self.min_volume)
        if not found:
            return
        i64 = ir.IntegerType.get_signless(64)
        for index, (op, _) in enumerate(found):
            op.attributes[TAG] = ir.IntegerAttr.get(i64, index)
        script = ir.Module.parse(transform_script([p for _, p in found]))
        saved = module.clone()
        try:
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
        except ir.MLIRError:
            # a schedule that does not apply must never break a model: the naive path runs
            _restore(module, saved)
        finally:
            saved.erase()
            _untag(module)


def _restore(module: ir.Operation, saved: ir.Operation) -> None:
    """Replace the body of `module` by the body of its clone `saved`."""
    body = module.regions[0].blocks[0]
    for op in list(body.operations):
        op.erase()
    for op in list(saved.regions[0].blocks[0].operations):
        body.append(op)


def _untag(module: ir.Operation) -> None:
    def visit(op: ir.Operation) -> ir.WalkResult:
        if TAG in op.attributes:
            del op.attributes[TAG]
        return ir.WalkResult.ADVANCE

    module.walk(visit)
