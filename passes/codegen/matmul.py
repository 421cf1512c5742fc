"""The contraction schedule: linalg.matmul (plain or transposed operands) and batch_matmul.

Recipe (../shared/PERF.md): split M and N so that each part divides its register tile (a
remainder becomes its own op with a full-size register tile: no masks, no dynamic shapes); tile
for cache (mc x nc x kc, loops in order n, k, m: a kc x nc panel of B stays in L2 while m runs
over it), then for registers (mr x nr x 1); vectorize; the k loop's accumulator is hoisted.

Tile heuristic, from the static shape only:
- register tile: nr = 32 (two 16-lane vectors) when N >= 32, else N; mr = 8 when M >= 8, else
  M (8 x 32 = 16 accumulators of the 32 zmm registers). mr == nr is avoided (LLVM 22.1.8
  miscompiles shape_cast(broadcast) with equal inner tiles, PERF.md): mr is halved.
- cache tile: the largest multiple of mr dividing the part's M and <= 64, of nr dividing N and
  <= 512; kc the largest divisor of K in [64, 256], else all of K.
- outer (forall) tile, one output tile per iteration: mt = the largest multiple of mr dividing
  M and <= 128, nt = of nr dividing N and <= 512 (else the whole dimension when it is at most
  twice the limit, else its largest divisor under the limit); the schedule above runs inside.
  The fill or bias broadcast of the accumulator and the elementwise epilogue are fused into
  the forall (`fusion.py`), whose iterations may run on threads.
Only static f32 ops are matched. A constant B read transposed (Gemm transB=1, PyTorch's Linear)
is transposed at compile time (`pretranspose_constant_b`), so the tile reads rows of B.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith

from dlc.passes.codegen import elementwise, fusion
from dlc.passes.codegen.script import Lines, split, split_point, tile

OPS = ("linalg.matmul", "linalg.batch_matmul")
REGISTER_N, REGISTER_M = 32, 8
CACHE_M, CACHE_N, CACHE_K = 64, 512, 256
OUTER_M, OUTER_N = 128, 512


@dataclass(frozen=True)
class Tiles:
    """Cache and register tile sizes of one contraction part (m, n, k)."""

    cache: tuple[int, int, int]
    register: tuple[int, int, int]


@dataclass(frozen=True)
class Contraction:
    """The static problem of a matmul-like op: batch (None for 2-D), M, N, K."""

    batch: int | None
    m: int
    n: int
    k: int
    epilogue: bool = False  # an elementwise consumer fused into the outer tiles
    init: bool = False  # the accumulator's fill / broadcast fused into the outer tiles
    greedy: bool = False  # one transform builds the forall (fusion.fuses_exactly)


def largest_multiple_dividing(size: int, step: int, limit: int) -> int:
    """The largest multiple of `step` that divides `size` and is <= limit (at least step)."""
    best = step
    for candidate in range(step, min(size, limit) + 1, step):
        if size % candidate == 0:
            best = candidate
    return best


def outer_tile(size: int, step: int, limit: int) -> int:
    """The forall tile of a dimension: a multiple of `step` dividing `size` up to `limit`,
    else the whole dimension up to twice the limit, else its largest divisor up to limit."""
    multiples = [d for d in range(step, min(size, limit) + 1, step) if size % d == 0]
    if multiples:
        return multiples[-1]
    if size <= 2 * limit:
        return size
    return max(d for d in range(1, limit + 1) if size % d == 0)


def k_cache_tile(k: int) -> int:
    for candidate in range(min(k, CACHE_K), 63, -1):
        if k % candidate == 0:
            return candidate
    return k


def register_tile(m: int, n: int) -> tuple[int, int]:
    nr = min(REGISTER_N, n)
    mr = min(REGISTER_M, m)
    while mr == nr and mr > 1:  # equal inner tiles hit the LLVM 22 miscompile
        mr //= 2
    while m % mr:
        mr -= 1
    return mr, nr


def matmul_tiles(m: int, n: int, k: int) -> Tiles:
    """Tile sizes of a part whose M and N are multiples of its register tile (see `lines`)."""
    mr, nr = register_tile(m, n)
    mc = largest_multiple_dividing(m, mr, CACHE_M)
    nc = largest_multiple_dividing(n, nr, CACHE_N)
    return Tiles((mc, nc, k_cache_tile(k)), (mr, nr, 1))


def match(op: ir.Operation) -> Contraction | None:
    """The static shape of a schedulable matmul-like op, or None."""
    if op.name not in OPS or len(op.operands) != 3 or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if any(str(t.element_type) != "f32" for t in types):
        return None
    a, _, c = (list(t.shape) for t in types)
    m, n = c[-2], c[-1]
    if 0 in a or 0 in c:
        return None
    batch = c[0] if op.name == "linalg.batch_matmul" else None
    return Contraction(batch, m, n, (a[-1] * a[-2]) // m, fusion.epilogue(op) is not None,
                       fusion.init_producer(op) is not None)


def volume(problem: Contraction) -> int:
    return (problem.batch or 1) * problem.m * problem.n * problem.k


def _part(handle: str, problem: Contraction, m: int, n: int, prefix: str) -> Lines:
    """Tile, vectorize one part (M and N are multiples of its register tile)."""
    tiles = matmul_tiles(m, n, problem.k)
    batch = [1] if problem.batch is not None else []
    order = [0, 2, 3, 1] if batch else [1, 2, 0]  # cache loops n, k, m
    ops, cached, _ = tile(handle, batch + list(tiles.cache), f"{prefix}c", order)
    more, tiled, loops = tile(cached, batch + list(tiles.register), f"{prefix}r")
    ops += more
    ops.append(f"transform.structured.vectorize {tiled} : !transform.any_op")
    return Lines(ops, [loops[-1]])


def outer(problem: Contraction) -> fusion.Outer:
    mr, nr = register_tile(problem.m, problem.n)
    mt = outer_tile(problem.m, mr, OUTER_M)
    nt = outer_tile(problem.n, nr, OUTER_N)
    batch = [1] if problem.batch is not None else []
    return fusion.Outer(batch + [mt, nt, 0], batch + [mt, nt], tuple(batch + [mt, nt]),
                        problem.epilogue, problem.init, problem.greedy)


def lines(handle: str, problem: Contraction, prefix: str) -> Lines:
    """The forall of output tiles, fused with the init and epilogue; inside, `tile_lines`."""
    tiles = outer(problem)
    m, n = tiles.tile_shape[-2:]
    inner = Contraction(None if problem.batch is None else 1, m, n, problem.k)
    return fusion.forall_lines(handle, tiles, prefix,
                               lambda tile: tile_lines(tile, inner, f"{prefix}t"),
                               elementwise.tile_lines)


def tile_lines(handle: str, problem: Contraction, prefix: str) -> Lines:
    """The schedule of one contraction, split into parts that divide the register tiles."""
    offset = 0 if problem.batch is None else 1
    result = Lines()
    m_parts = [(handle, problem.m)]
    at = split_point(problem.m, REGISTER_M)
    if at is not None:
        ops, low, high = split(handle, offset, at, f"{prefix}m")
        result.ops += ops
        m_parts = [(low, at), (high, problem.m - at)]
    for i, (m_handle, m) in enumerate(m_parts):
        n_parts = [(m_handle, problem.n)]
        at = split_point(problem.n, REGISTER_N)
        if at is not None:
            ops, low, high = split(m_handle, offset + 1, at, f"{prefix}n{i}")
            result.ops += ops
            n_parts = [(low, at), (high, problem.n - at)]
        for j, (n_handle, n) in enumerate(n_parts):
            result += _part(n_handle, problem, m, n, f"{prefix}p{i}{j}")
    return result


def _map_results(op: ir.Operation, index: int) -> list[str] | None:
    if "indexing_maps" not in op.attributes:
        return None
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    return [str(e) for e in ir.AffineMapAttr(maps[index]).value.results]


def pretranspose_constant_b(op: ir.Operation) -> None:
    """matmul(A, constant B, maps reading B^T) -> matmul(A, transposed constant), plain maps.

    Otherwise the register tile would gather 32 strided elements of B per k.
    """
    if op.name != "linalg.matmul" or _map_results(op, 1) != ["d1", "d2"]:
        return
    if _map_results(op, 0) != ["d0", "d2"]:
        return
    weight = op.operands[1].owner
    if not isinstance(weight, ir.Operation | ir.OpView) or weight.name != "arith.constant":
        return
    attr = weight.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or attr.is_splat:
        return
    transposed = np.ascontiguousarray(np.array(attr).T)
    with ir.InsertionPoint(weight), weight.location:
        value = arith.ConstantOp(
            ir.RankedTensorType.get(list(transposed.shape), attr.type.element_type),
            ir.DenseElementsAttr.get(transposed),
        ).result
    maps = [ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(i) for i in dims])
            for dims in ((0, 2), (2, 1), (0, 1))]
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    op.operands[1] = value


def prepare(op: ir.Operation) -> None:
    """Payload rewrites before the schedule runs (data layout of constant operands)."""
    pretranspose_constant_b(op)
