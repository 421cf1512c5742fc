"""The elementwise schedule's transform lines (`lines`, `tile_lines`: see `elementwise.py`).

Apart from the family (`elementwise.match`), which asks the contraction families whether they
fuse an op (`fusion_plan.fused_elsewhere`): those families schedule their epilogue tiles with
`tile_lines`, so this module imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from dlc.passes.codegen.script import Lines, split, tile

WIDTHS = (64, 32, 16)
THREAD_TILES = (4, 2)  # forall tiles of a large op's outer dimension (for the threads) ...
THREAD_MIN = 32 * 1024  # ... of an op of at least this many elements ...
TILE_MIN = 8 * 1024  # ... each tile of at least this many


@dataclass(frozen=True)
class Elementwise:
    shape: tuple[int, ...]
    identity: bool  # every operand uses the identity map: flattened to 1-D first


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
    """(dimension, tile) of the forall of an op of at least THREAD_MIN elements: the outermost
    dimension longer than 1, divided by 4 or 2 (a multiple of 16 when it is also the vectorized
    one), each tile at least TILE_MIN elements; None (serial loops)."""
    dim = next((d for d, size in enumerate(shape) if size > 1), None)
    if dim is None or prod(shape) < THREAD_MIN:
        return None
    rest = prod(shape[dim + 1:])
    for count in THREAD_TILES:
        size = shape[dim] // count
        if shape[dim] % count or size * rest < TILE_MIN:
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
