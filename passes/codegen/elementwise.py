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

from math import prod

from mlir import ir

from dlc.passes.codegen import fusion_plan
from dlc.passes.codegen.elementwise_lines import (
    Elementwise,
    lines,
    thread_tile,
    tile_lines,
    vector_width,
)
from dlc.passes.codegen.predicates import body_is_plain, is_identity, ordered_projection

# the family's interface (`passes/codegen/__init__.py`); its schedule is in elementwise_lines.py
__all__ = ["Elementwise", "lines", "match", "prepare", "thread_tile", "tile_lines", "vector_width",
           "volume"]


def prepare(op: ir.Operation) -> None:
    return None


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
    # (8- and 32-bit integer results too: the quantize ending a QDQ model's epilogue, which
    # the integer kernels (`int8_matmul.py`) do not fuse, ran as naive loops)
    if str(result.element_type) not in ("f32", "i8", "ui8", "i32") or result.rank == 0 \
            or 0 in result.shape:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if not is_identity(maps[-1]) or not all(ordered_projection(m) for m in maps):
        return None
    if not body_is_plain(op) or fusion_plan.fused_elsewhere(op):
        return None
    return Elementwise(tuple(result.shape), all(is_identity(m) for m in maps))


def volume(problem: Elementwise) -> int:
    return prod(problem.shape)
