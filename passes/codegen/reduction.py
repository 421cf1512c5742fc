"""The row schedule: reductions along the innermost axis, and the elementwise ops that use their
result broadcast along that axis (the rows of softmax, layernorm, logsumexp, mean).

Two kinds of static f32 `linalg.generic` ops are matched:
- a *row reduction*: every loop parallel but the innermost, a reduction; inputs read with
  identity maps, the output with the parallel loops; the body combines the output with one
  `arith` add/mul/max/min (`acc = acc op f(x...)`). Also with an integer output (8 to 64 bits)
  of f32 or integer inputs and an integer combiner (add/mul/max/min/or/and: timm attention's
  `any()` over a boolean mask, ONNX's integer ReduceMax/Min/Sum).
- a *row broadcast*: all loops parallel, identity output, each input read with an identity or
  broadcast map or with a map whose trailing results are the constant 0 (`(d0, d1) -> (d0, 0)`:
  a row value broadcast along the row; `elementwise.py` leaves those maps alone).

Row reduction recipe: the rows loop (the innermost parallel loop longer than 1) is tiled by R
and the other parallel loops by 1; the reduction is tiled by L with
`tile_reduction_using_for`: an R x L tile of partial results stays in vector registers (the
loop's accumulator is hoisted) while the row is read L elements at a time, then the partial
results are merged once per R rows (`vector.multi_reduction`, lowered by `dlc-lower-vectors`
with the "innerparallel" strategy: an R x L transpose then L - 1 vector ops on R lanes).
R = 8 rows, L = 16 lanes (R != L: equal tile sizes hit the LLVM 22 miscompile, PERF.md): one
AVX-512 vector a row, 8 accumulators, enough for the adds' latency. L = 32 merged an 8 x 32
tile per 8 rows (a transpose and 31 vector ops), which dominated short rows: Zen 4, one
thread, CPU ms, L 32 -> 16 (onnxruntime): ReduceMax of 2364 rows of 192 0.055 -> 0.044
(0.038), ReduceSum rows of 197 0.055 -> 0.048 (0.043), Softmax [1,12,197,197] 0.354 -> 0.335
(0.186), [1,12,128,128] 0.119 -> 0.110 (0.089), [1,12,64,1024] 0.392 -> 0.385 (0.264),
LayerNormalization [1,197,768] 0.057 -> 0.055 (0.080). (On AVX2, two vectors a row: 16
accumulators of the 16 registers, where 32 lanes took 32.)
Rows are split into a multiple of R and a remainder tiled whole; a row length that L does not
divide is split into a multiple of L and a remainder (< L); a row of at most L elements is
reduced whole without the partial tile.
Row broadcast recipe: like `elementwise.py`, the innermost loop tiled by its vector width
(64, 32 or 16 dividing it, or all of it up to 64, else split), every other loop by 1.

Threads: a part of a reduction (a broadcast) of at least THREAD_MIN elements has its row tiles
(its rows) as the iterations of an scf.forall, which num_threads > 1 runs on OpenMP threads and
one thread runs as the loop it was (the same code: BERT, MobileNetV2, SqueezeNet unchanged at
1 thread). Smaller ones keep serial loops: a parallel region costs about 2 us on this VM, so
(Zen 4, 2 threads, softmax, each of its 4 ops serial -> a forall) 8 Ki elements an op 9.9 ->
11.6 us, 16 Ki 13.6 -> 13.0, 32 Ki 21.4 -> 16.5, 96 Ki 62 -> 37.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mlir import ir

from dlc.passes.codegen import predicates
from dlc.passes.codegen.script import ANY, Lines, split, split_parts, tile, tile_forall

ROWS, LANES = 8, 16
WIDTHS = (64, 32, 16)
COMBINERS = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf",
             "arith.minnumf")
# an integer row reduction (timm attention's any() over a boolean mask: max of i8 flags): the
# combiners whose neutral element `tile_reduction_using_for` knows
INTEGER_COMBINERS = ("arith.addi", "arith.muli", "arith.maxsi", "arith.minsi", "arith.maxui",
                     "arith.minui", "arith.ori", "arith.andi")
INTEGER_WIDTHS = (8, 16, 32, 64)
THREAD_MIN = 32 * 1024  # elements of a part whose row tiles are an scf.forall (threads: above)


@dataclass(frozen=True)
class Rows:
    """A row reduction (reduce=True) or row broadcast over loops of `shape` (row innermost)."""

    shape: tuple[int, ...]
    reduce: bool


def prepare(op: ir.Operation) -> None:
    return None


def _dims(affine_map: ir.AffineMap) -> list[int] | None:
    """Loop positions of a map's results, -1 for a constant 0 (None: anything else)."""
    dims = []
    for expr in affine_map.results:
        if isinstance(expr, ir.AffineDimExpr):
            dims.append(ir.AffineDimExpr(expr).position)
        elif isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0:
            dims.append(-1)
        else:
            return None
    return dims


def _row_broadcast(affine_map: ir.AffineMap) -> bool:
    """Ordered loops, then only constant zeros (`(d0, d1, d2) -> (d1, 0)`)."""
    dims = _dims(affine_map)
    if dims is None:
        return False
    loops = [d for d in dims if d >= 0]
    zeros = len(dims) - len(loops)
    return loops == sorted(set(loops)) and all(d < 0 for d in dims[len(loops):]) and zeros > 0


def _ordered(affine_map: ir.AffineMap) -> bool:
    dims = _dims(affine_map)
    return dims is not None and -1 not in dims and dims == sorted(set(dims))


def _combines_output(op: ir.Operation, combiners: tuple[str, ...] = COMBINERS) -> bool:
    """The yielded value is `combiner(out, v)` (or `(v, out)`) and `out` (the output block
    argument) is used nowhere else: the form `tile_reduction_using_for` splits."""
    block = op.regions[0].blocks[0]
    out = block.arguments[len(block.arguments) - 1]
    yielded = block.operations[len(block.operations) - 1].operands[0]
    owner = yielded.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name not in combiners:
        return False
    uses = [o for inner in block.operations for o in inner.operands if o == out]
    return len(uses) == 1 and any(o == out for o in owner.operands)


def _static(op: ir.Operation) -> list[ir.RankedTensorType] | None:
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    return None if 0 in types[-1].shape else types


def _integer(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width in INTEGER_WIDTHS


def _integer_reduction(types: list[ir.RankedTensorType]) -> bool:
    """An integer output of f32 or integer inputs (a row reduction only)."""
    return _integer(types[-1].element_type) and all(
        str(t.element_type) == "f32" or _integer(t.element_type) for t in types[:-1])


def match(op: ir.Operation) -> Rows | None:
    if op.name != "linalg.generic" or len(op.results) != 1 or len(op.regions) != 1:
        return None
    types = _static(op)
    if types is None or not predicates.body_is_plain(op):
        return None
    f32 = all(str(t.element_type) == "f32" for t in types)
    if not f32 and not _integer_reduction(types):
        return None
    iterators = ["reduction" in str(i) for i in ir.ArrayAttr(op.attributes["iterator_types"])]
    maps = predicates.maps(op)
    rank = len(iterators)
    identity = ir.AffineMap.get_identity(rank)
    if rank < 2 or 0 in op.operands[0].type.shape:
        return None
    shape = tuple(_loop_sizes(op, maps, rank))
    if iterators == [False] * (rank - 1) + [True]:
        outputs = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(rank - 1)])
        if maps[-1] != outputs or any(m != identity for m in maps[:-1]):
            return None
        combiners = COMBINERS if f32 else INTEGER_COMBINERS
        return Rows(shape, True) if _combines_output(op, combiners) else None
    if not f32 or any(iterators) or maps[-1] != identity:
        return None
    inputs = maps[:-1]
    if not any(_row_broadcast(m) for m in inputs):
        return None
    if not all(_row_broadcast(m) or _ordered(m) for m in inputs):
        return None
    return Rows(shape, False)


def _loop_sizes(op: ir.Operation, maps: list[ir.AffineMap], rank: int) -> list[int]:
    """Each loop's size, read from the first operand whose map indexes it directly."""
    sizes = [0] * rank
    for value, affine_map in zip(op.operands, maps):
        for position, dim in enumerate(_dims(affine_map) or []):
            if dim >= 0 and not sizes[dim]:
                sizes[dim] = value.type.shape[position]
    return sizes


def volume(problem: Rows) -> int:
    return prod(problem.shape)


def rows_dim(shape: tuple[int, ...]) -> int:
    """The innermost parallel loop longer than 1 (the loop tiled by R), else the last one."""
    parallel = range(len(shape) - 1)
    longer = [d for d in parallel if shape[d] > 1]
    return longer[-1] if longer else len(shape) - 2


def _reduce_part(handle: str, rank: int, axis: int, rows: int, row: int, elements: int,
                 prefix: str) -> Lines:
    """Tile one part (rows a multiple of R or fewer, row a multiple of L or fewer, `elements`
    in all): its row tiles are an scf.forall when it has at least THREAD_MIN elements."""
    sizes = [1] * (rank - 1) + [0]
    sizes[axis] = min(rows, ROWS)
    if elements >= THREAD_MIN:
        ops, tiled, _ = tile_forall(handle, sizes, f"{prefix}t")
    else:
        ops, tiled, _ = tile(handle, sizes, f"{prefix}t")
    if row <= LANES or row % LANES:  # (a one-iteration loop would fold: its handle dies)
        ops.append(f"transform.structured.vectorize {tiled} : {ANY}")
        return Lines(ops)
    lanes = [0] * (rank - 1) + [LANES]
    names = [f"%{prefix}_{n}" for n in ("fill", "part", "merge", "loop")]
    ops.append(f"{', '.join(names)} = transform.structured.tile_reduction_using_for {tiled} "
               f"by tile_sizes = [{', '.join(map(str, lanes))}] : ({ANY}) -> "
               f"({ANY}, {ANY}, {ANY}, {ANY})")
    ops += [f"transform.structured.vectorize {n} : {ANY}" for n in names[:3]]
    return Lines(ops, [names[3]])


def _reduce_lines(handle: str, shape: tuple[int, ...], prefix: str) -> Lines:
    rank, axis = len(shape), rows_dim(shape)
    result = Lines()
    row_parts = split_parts(handle, axis, shape[axis], ROWS, f"{prefix}r", result.ops)
    for i, (rows_handle, rows) in enumerate(row_parts):
        parts = split_parts(rows_handle, rank - 1, shape[-1], LANES, f"{prefix}n{i}", result.ops)
        for j, (part, row) in enumerate(parts):
            elements = prod(shape) // (shape[axis] * shape[-1]) * rows * row
            result += _reduce_part(part, rank, axis, rows, row, elements, f"{prefix}p{i}{j}")
    return result


def vector_width(size: int) -> int | None:
    for width in WIDTHS:
        if size % width == 0:
            return width
    return size if size <= WIDTHS[0] else None


def _broadcast_lines(handle: str, shape: tuple[int, ...], prefix: str) -> Lines:
    rank, inner = len(shape), shape[-1]
    ops: list[str] = []
    outer = 1  # (the tile of the loops but the innermost: 0 inside the forall of rows)
    if prod(shape) >= THREAD_MIN:
        ops, handle, _ = tile_forall(handle, [1] * (rank - 1) + [0], f"{prefix}f")
        outer = 0
    parts = [(handle, inner)]
    if vector_width(inner) is None:
        at = inner - inner % WIDTHS[-1]
        more, low, high = split(handle, rank - 1, at, f"{prefix}s")
        ops += more
        parts = [(low, at), (high, inner - at)]
    for i, (part, size) in enumerate(parts):
        more, tiled, _ = tile(part, [outer] * (rank - 1) + [vector_width(size)],
                              f"{prefix}v{i}")
        ops += more + [f"transform.structured.vectorize {tiled} : {ANY}"]
    return Lines(ops)


def lines(handle: str, problem: Rows, prefix: str) -> Lines:
    if problem.reduce:
        return _reduce_lines(handle, problem.shape, prefix)
    return _broadcast_lines(handle, problem.shape, prefix)
