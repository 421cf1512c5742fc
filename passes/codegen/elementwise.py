"""The elementwise schedule: all-parallel linalg.generic ops on static f32 tensors.

Elementwise chains are already one generic each (linalg-fuse-elementwise-ops runs first), so
one loop nest per chain. Recipe: an op whose operands all use identity maps is flattened to
1-D (`flatten_elementwise`); the innermost dimension is tiled by the vector width V and every
other dimension by 1, then vectorized (vector<Vxf32>). V is 64, 32 or 16 when it divides the
innermost size, the whole innermost size when that is <= 64; otherwise the dimension is split
into a part divisible by 16 and a remainder vectorized whole (no masks). Operands may be
broadcast (maps selecting an ordered subset of the loops); transposing maps are left alone.
With exp/tanh/erf turned into polynomials (dlc-polynomial-math) the body vectorizes whole.
A large op (tiles of at least THREAD_MIN elements) first gets an scf.forall of 4 or 2 tiles of
its outer dimension, so that it runs on the threads (`thread_tile`; single-threaded, a loop):
the BERT encoder at 2 threads 1.34 -> 1.30 ms, 1 thread unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mlir import ir

from dlc.passes.codegen import fusion
from dlc.passes.codegen.predicates import body_is_plain, is_identity, ordered_projection
from dlc.passes.codegen.script import Lines, split, tile

WIDTHS = (64, 32, 16)
THREAD_TILES = (4, 2)  # forall tiles of a large op's outer dimension (for the threads) ...
THREAD_MIN = 32 * 1024  # ... each of at least this many elements


def prepare(op: ir.Operation) -> None:
    return None


@dataclass(frozen=True)
class Elementwise:
    shape: tuple[int, ...]
    identity: bool  # every operand uses the identity map: flattened to 1-D first


def match(op: ir.Operation) -> Elementwise | None:
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    iterators = ir.ArrayAttr(op.attributes["iterator_types"])
    if not all("parallel" in str(i) for i in iterators):
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    result = op.results[0].type
    if str(result.element_type) != "f32" or result.rank == 0 or 0 in result.shape:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if not is_identity(maps[-1]) or not all(ordered_projection(m) for m in maps):
        return None
    if not body_is_plain(op) or fusion.fused_elsewhere(op):
        return None
    return Elementwise(tuple(result.shape), all(is_identity(m) for m in maps))


def volume(problem: Elementwise) -> int:
    return prod(problem.shape)


def vector_width(size: int) -> int | None:
    """The inner tile of a dimension of `size`, None if it must be split first."""
    for width in WIDTHS:
        if size % width == 0:
            return width
    return size if size <= WIDTHS[0] else None


def _vectorize(handle: str, rank: int, width: int, prefix: str) -> list[str]:
    ops, tiled, _ = tile(handle, [1] * (rank - 1) + [width], prefix)
    return ops + [f"transform.structured.vectorize {tiled} : !transform.any_op"]


def tile_lines(handle: str, shape: tuple[int, ...], prefix: str) -> Lines:
    """The schedule of a tile of `shape` of an elementwise op (a slice: never flattened)."""
    return lines(handle, Elementwise(shape, identity=False), prefix, threads=False)


def thread_tile(shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(dimension, tile) of the forall: the outermost dimension longer than 1, divided by 4 or
    2 (a multiple of 16 when it is also the vectorized one), each tile at least THREAD_MIN
    elements; None."""
    dim = next((d for d, size in enumerate(shape) if size > 1), None)
    if dim is None:
        return None
    rest = prod(shape[dim + 1:])
    for count in THREAD_TILES:
        size = shape[dim] // count
        if shape[dim] % count or size * rest < THREAD_MIN:
            continue
        if dim == len(shape) - 1 and size % WIDTHS[-1]:
            continue
        return dim, size
    return None


def lines(handle: str, problem: Elementwise, prefix: str, threads: bool = True) -> Lines:
    """Flattened when it can be, tiled for the threads (`thread_tile`: an scf.forall over the
    outer dimension, a loop when single-threaded), then by vectors."""
    shape = problem.shape
    ops: list[str] = []
    if problem.identity and len(shape) > 1:
        flat = f"%{prefix}_flat"
        ops.append(f"{flat} = transform.structured.flatten_elementwise {handle} "
                   ": (!transform.any_op) -> !transform.any_op")
        handle, shape = flat, (prod(shape),)
    parallel = thread_tile(shape) if threads else None
    if parallel is not None:
        dim, size = parallel
        sizes = [0] * len(shape)
        sizes[dim] = size
        ops.append(f"%{prefix}_par, %{prefix}_forall = transform.structured.tile_using_forall "
                   f"{handle} tile_sizes [{', '.join(map(str, sizes))}] : (!transform.any_op) "
                   "-> (!transform.any_op, !transform.any_op)")
        handle, shape = f"%{prefix}_par", tuple(size if d == dim else n
                                                for d, n in enumerate(shape))
    rank, inner = len(shape), shape[-1]
    width = vector_width(inner)
    if width is not None:
        return Lines(ops + _vectorize(handle, rank, width, f"{prefix}v"))
    at = inner - inner % WIDTHS[-1]
    more, low, high = split(handle, rank - 1, at, f"{prefix}s")
    ops += more
    ops += _vectorize(low, rank, vector_width(at) or WIDTHS[-1], f"{prefix}a")
    ops += _vectorize(high, rank, inner - at, f"{prefix}b")
    return Lines(ops)
