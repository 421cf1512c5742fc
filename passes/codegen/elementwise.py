"""The elementwise schedule: all-parallel linalg.generic ops on static f32 tensors.

Elementwise chains are already one generic each (linalg-fuse-elementwise-ops runs first), so
one loop nest per chain. Recipe: an op whose operands all use identity maps is flattened to
1-D (`flatten_elementwise`); the innermost dimension is tiled by the vector width V and every
other dimension by 1, then vectorized (vector<Vxf32>). V is 64, 32 or 16 when it divides the
innermost size, the whole innermost size when that is <= 64; otherwise the dimension is split
into a part divisible by 16 and a remainder vectorized whole (no masks). Operands may be
broadcast (maps selecting an ordered subset of the loops), also on unit dims (maps with
constant-0 results on size-1 dims: a squeeze-and-excitation scale [1, 1, 1, C] read at
(d0, 0, 0, d3), or [1, C, 1, 1] at (d0, d1, 0, 0); `prepare` reads such an operand through a
rank-reducing slice, whose map is then an ordered projection: in f32, i32 and the 8-bit QDQ
chains alike, where they ran as naive loops, 94,080-element products of MobileNetV3 among
them: 5-18% faster per op single-threaded (LLVM had vectorized the naive innermost loop; a
chain with a byte-table lookup, scalar there, gained most), threaded by the forall when
large); transposing maps are left alone. A map whose constant 0s all trail, (d0, d1) -> (d0, 0),
is a row broadcast (softmax, layernorm) when f32: those stay the row family's
(`reduction.py`: the same vectors, IR unchanged).
With exp/tanh/erf turned into polynomials (dlc-polynomial-math) the body vectorizes whole.
A large op (at least THREAD_MIN = 32 Ki elements, tiles of at least 8 Ki) first gets an
scf.forall of 4 or 2 tiles of its outer dimension, so that it runs on the threads
(`thread_tile`; single-threaded, a loop): the BERT encoder at 2 threads 1.34 -> 1.30 ms, 1
thread unchanged. Smaller ops stay serial: a parallel region costs about 1-2 us (Zen 4 VM, 2
threads, relu(a + b) serial -> 4 tiles: 8 Ki elements 8.5 -> 8.7 us, 16 Ki 9.3 -> 9.4, 32 Ki
11.7 -> 10.4, 64 Ki 17.0 -> 12.8; with tiles of 32 Ki, as before, 32 to 64 Ki stayed serial).
"""

from __future__ import annotations

from math import prod

from mlir import ir
from mlir.dialects import tensor

from dlc.passes.codegen import fusion_plan, reduction
from dlc.passes.codegen.elementwise_lines import (
    Elementwise,
    lines,
    thread_tile,
    tile_lines,
    vector_width,
)
from dlc.passes.codegen.predicates import (
    body_is_plain,
    is_identity,
    ordered_projection,
    strided_slice,
)

# the family's interface (`passes/codegen/__init__.py`); its schedule is in elementwise_lines.py
__all__ = ["Elementwise", "lines", "match", "prepare", "thread_tile", "tile_lines", "vector_width",
           "volume"]


def _unit_broadcast(affine_map: ir.AffineMap, shape: list[int]) -> list[int] | None:
    """The results of `affine_map` that are the constant 0 on a unit dimension of the operand
    (`shape`), when the others select loop dims in increasing order: an SE block's scale
    [1, 1, 1, C] read at (d0, 0, 0, d3); None for any other map."""
    dims, zeros = [], []
    for position, expr in enumerate(affine_map.results):
        if isinstance(expr, ir.AffineDimExpr):
            dims.append(ir.AffineDimExpr(expr).position)
        elif isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0 \
                and shape[position] == 1:
            zeros.append(position)
        else:
            return None
    return zeros if dims == sorted(set(dims)) else None


def prepare(op: ir.Operation) -> None:
    """A unit-broadcast operand (`_unit_broadcast`) is read through a rank-reducing slice
    without its unit dims, its map without the constant results (an ordered projection, which
    the schedule takes)."""
    affine_maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    changed = False
    for index, (operand, affine_map) in enumerate(zip(op.operands, affine_maps)):
        if ordered_projection(affine_map):
            continue
        shape = list(operand.type.shape)
        zeros = _unit_broadcast(affine_map, shape)
        kept = [e for position, e in enumerate(affine_map.results) if position not in zeros]
        with ir.InsertionPoint(op), op.location:
            reduced = ir.RankedTensorType.get([n for d, n in enumerate(shape) if d not in zeros],
                                              operand.type.element_type)
            value = tensor.ExtractSliceOp(reduced, operand, [], [], [], [0] * len(shape), shape,
                                          [1] * len(shape)).result
            affine_maps[index] = ir.AffineMap.get(affine_map.n_dims, 0, kept)
        op.operands[index] = value
        changed = True
    if changed:
        op.attributes["indexing_maps"] = ir.ArrayAttr.get(
            [ir.AffineMapAttr.get(m) for m in affine_maps])


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
    if not is_identity(maps[-1]):
        return None
    projections = True
    for operand, affine_map in zip(op.operands, maps):
        if ordered_projection(affine_map):
            continue
        if _unit_broadcast(affine_map, list(operand.type.shape)) is None:
            return None
        projections = False
    if not projections and reduction.match(op) is not None:
        return None  # (a row broadcast, (d0, d1) -> (d0, 0): the row family's, as before)
    if not body_is_plain(op) or fusion_plan.fused_elsewhere(op):
        return None
    # (flattened to 1-D when every map is the identity, unless an operand is a strided slice:
    # its flattening is a copy when bufferized)
    flat = all(is_identity(m) for m in maps) and not any(strided_slice(v) for v in op.operands)
    return Elementwise(tuple(result.shape), flat)


def volume(problem: Elementwise) -> int:
    return prod(problem.shape)
