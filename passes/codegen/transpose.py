"""The transpose schedule: `linalg.transpose` ops that move the innermost dimension.

A transpose that keeps the innermost dimension in place copies contiguous rows and LLVM
vectorizes its loops as they are. One that moves it (NHWC -> NCHW at a model's output, the
[N, C, H, W] <-> [N, H, W, C] of a layout boundary, a matrix transpose) reads with a stride
in its naive loops: 2.2 ms for a 1x56x56x256 NHWC -> NCHW on the 2-core AVX2 machine,
onnxruntime 0.53 ms. Recipe: tile the output by 8 x 8 blocks of its innermost dimension and of
the dimension the input's innermost one lands on (every other dimension by 1), vectorize each
block (a vector<8x8> read along the input's rows, `vector.transpose`, a write along the
output's rows), which the vector lowering turns into register shuffles; a block dimension
that 8 does not divide is split at its last multiple of 8 and its remainder is one block of
that size (28 = 24 + 4: 8 x 4 blocks), never masked. A part of at least THREAD_MIN elements
has its rows (the other dimensions, by 1) in an scf.forall, for the threads (single-threaded,
the same loops). Matched: static shapes of 32-bit
elements whose two block dimensions are at least 4, of at least `min-elements` elements
(dlc-schedule's elementwise threshold).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mlir import ir

from dlc.passes.codegen.reduction import THREAD_MIN
from dlc.passes.codegen.script import ANY, Lines, split_parts, tile, tile_forall

BLOCK = 8  # the square block: 8 lanes of f32 (one ymm register per row)


@dataclass(frozen=True)
class Transpose:
    shape: tuple[int, ...]  # the output's
    inner: int  # the output dimension that is the input's innermost


def match(op: ir.Operation) -> Transpose | None:
    if op.name != "linalg.transpose" or len(op.results) != 1:
        return None
    source, result = op.operands[0].type, op.results[0].type
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape
               for t in (source, result)):
        return None
    if str(result.element_type) not in ("f32", "i32"):
        return None
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    rank = len(permutation)
    if rank < 2 or permutation[-1] == rank - 1:
        return None  # (the innermost dimension stays: rows are copied whole)
    inner = permutation.index(rank - 1)
    shape = tuple(result.shape)
    if min(shape[-1], shape[inner]) < 4:
        return None  # (a vector of fewer lanes than 4 gains nothing)
    return Transpose(shape, inner)


def volume(problem: Transpose) -> int:
    return prod(problem.shape)


def prepare(op: ir.Operation) -> None:
    return None


def lines(handle: str, problem: Transpose, prefix: str) -> Lines:
    """Each block dimension split at its last multiple of 8 (the remainder, < 8, one block
    of that size: no masks), each part tiled by its blocks and vectorized."""
    ops: list[str] = []
    rank, inner = len(problem.shape), problem.inner
    for i, (part, inner_size) in enumerate(split_parts(handle, inner, problem.shape[inner],
                                                       BLOCK, f"{prefix}i", ops)):
        for j, (piece, last_size) in enumerate(split_parts(part, rank - 1, problem.shape[-1],
                                                           BLOCK, f"{prefix}l{i}", ops)):
            sizes = [1] * rank
            sizes[inner], sizes[-1] = min(BLOCK, inner_size), min(BLOCK, last_size)
            rows = prod(problem.shape) // (problem.shape[inner] * problem.shape[-1])
            if rows > 1 and rows * inner_size * last_size >= THREAD_MIN:
                outer = [0 if d in (inner, rank - 1) else 1 for d in range(rank)]
                more, piece, _ = tile_forall(piece, outer, f"{prefix}f{i}{j}")
                ops += more
                sizes = [s if d in (inner, rank - 1) else 0 for d, s in enumerate(sizes)]
            more, block, _ = tile(piece, sizes, f"{prefix}t{i}{j}")
            ops += more
            ops.append(f"transform.structured.vectorize {block} : {ANY}")
    return Lines(ops)
