"""Lowering of the quantization ops: dlc.quantize, dlc.dequantize and dlc.bitcast.

Each becomes one elementwise `linalg.generic`. Scale and zero point are read through an
indexing map that encodes their granularity: none of the loops (per tensor), the quantized
axis's loop (per axis), or every loop with the quantized axis divided by the block size
(`d_axis floordiv block_size`, blocked). Quantize divides in the operands' float type (f16 in
f32, rounded back to f16 as numpy does), rounds half to even, then adds the zero point and
clamps in f64, where every value of a quantized type is exact, before converting: NaN gives
the type's minimum, infinities saturate. Dequantize computes `(x - zero_point) * scale` in f64
(exact for the quantized types) and rounds once to the result type. BitCast is `arith.bitcast`
on the storage types (bool is stored as i8, see `storage.py`; a bool result is `x != 0`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math

from dlc.dialects import quant
from dlc.dialects.ops import is_bool, is_unsigned
from dlc.passes.lowering.builders import PARALLEL, as_value, empty_like, generic, scalar
from dlc.passes.lowering.storage import source_types


def granularity_map(op: ir.OpView, rank: int, scale: ir.RankedTensorType) -> ir.AffineMap:
    """How a scale (or zero point) of shape `scale` is read inside x's loops."""
    axis, block = (ir.IntegerAttr(op.attributes[a]).value for a in ("axis", "block_size"))
    if scale.rank == 0:
        return ir.AffineMap.get(rank, 0, [])
    along = ir.AffineDimExpr.get(axis)
    if block == 0:
        return ir.AffineMap.get(rank, 0, [along])
    exprs = [ir.AffineDimExpr.get(d) for d in range(rank)]
    exprs[axis] = ir.AffineFloorDivExpr.get(along, ir.AffineConstantExpr.get(block))
    return ir.AffineMap.get(rank, 0, exprs)


def _elementwise_quant(op: ir.OpView, body) -> ir.Value:
    """A generic over x's shape reading scale and zero point through their granularity map."""
    operands = list(op.operands)
    result_type = op.results[0].type
    rank = result_type.rank
    identity = ir.AffineMap.get_identity(rank)
    scale_map = granularity_map(op, rank, operands[1].type)
    maps = [identity] + [scale_map] * (len(operands) - 1) + [identity]
    return generic(operands, empty_like(result_type), maps, [PARALLEL] * rank,
                   lambda *args: body(*args[:-1]))


def to_f64(value: ir.Value, unsigned: bool = False) -> ir.Value:
    """An integer or float scalar as f64 (exactly, for the quantized types)."""
    f64 = ir.F64Type.get()
    if isinstance(value.type, ir.IntegerType):
        return arith.uitofp(f64, value) if unsigned else arith.sitofp(f64, value)
    if value.type == f64:
        return value
    return arith.extf(f64, value)


def divide_rounded(x: ir.Value, scale: ir.Value) -> ir.Value:
    # round_half_even(x / scale) in x's type; f16 divides in f32 and rounds to f16 first
    if x.type in (ir.F16Type.get(), ir.BF16Type.get()):
        f32 = ir.F32Type.get()
        quotient = arith.divf(arith.extf(f32, x), arith.extf(f32, scale))
        return math.roundeven(arith.extf(f32, arith.truncf(x.type, quotient)))
    return math.roundeven(arith.divf(x, scale))


def _narrow_f32(value: ir.Type, scale: ir.Type, quantized: ir.Type) -> bool:
    """Whether a quantize / dequantize between f32 (value and scale) and an integer type of 8 or
    16 bits can be computed in f32 with the f64 path's results (its integers, the zero point
    included, are exact in f32 and their products by an f32 scale exact in f64)."""
    f32 = ir.F32Type.get()
    return value == f32 and scale == f32 and isinstance(quantized, ir.IntegerType) \
        and quantized.width <= 16


def lower_quantize(op: ir.OpView, rewriter) -> None:
    # dlc.quantize(x, s, zp) -> linalg.generic {clamp(roundeven(x / s) + zp) -> fptosi/fptoui}
    to = source_types(op)[1][0]
    low, high = quant.integer_range(to)
    unsigned = is_unsigned(to)
    storage = op.results[0].type.element_type

    def body(x: ir.Value, scale: ir.Value, zero_point: ir.Value | None = None) -> ir.Value:
        if _narrow_f32(x.type, scale.type, to):
            # (all in f32, the same values: the clamp's bounds and the rounded quotient plus
            # the zero point are small integers, exact; maxnumf(NaN, low - zp) + zp is low)
            value = divide_rounded(x, scale)
            lower, upper = scalar(x.type, low), scalar(x.type, high)
            if zero_point is not None:
                zero = arith.uitofp(x.type, zero_point) if unsigned else \
                    arith.sitofp(x.type, zero_point)
                lower, upper = arith.subf(lower, zero), arith.subf(upper, zero)
            value = arith.minnumf(arith.maxnumf(value, lower), upper)
            if zero_point is not None:
                value = arith.addf(value, zero)
            return arith.fptoui(storage, value) if unsigned else arith.fptosi(storage, value)
        value = to_f64(divide_rounded(x, scale))
        if zero_point is not None:
            value = arith.addf(value, to_f64(zero_point, unsigned))
        f64 = value.type
        value = arith.maxnumf(value, scalar(f64, low))  # maxnumf(NaN, low) is low
        value = arith.minnumf(value, scalar(f64, high))
        return arith.fptoui(storage, value) if unsigned else arith.fptosi(storage, value)

    with rewriter.ip, op.location:
        rewriter.replace_op(op, [as_value(_elementwise_quant(op, body))])


def lower_dequantize(op: ir.OpView, rewriter) -> None:
    # dlc.dequantize(x, s, zp) -> linalg.generic {truncf((f64(x) - f64(zp)) * f64(s))}
    unsigned = is_unsigned(source_types(op)[0][0])
    to = op.results[0].type.element_type

    def body(x: ir.Value, scale: ir.Value, zero_point: ir.Value | None = None) -> ir.Value:
        if _narrow_f32(to, scale.type, source_types(op)[0][0]):
            # (in f32, the same value: x - zp is exact, and so is its product by the scale
            # in f64; f32's product is that exact product rounded once, as truncf rounds it)
            value = arith.uitofp(to, x) if unsigned else arith.sitofp(to, x)
            if zero_point is not None:
                zero = arith.uitofp(to, zero_point) if unsigned else arith.sitofp(to, zero_point)
                value = arith.subf(value, zero)
            return arith.mulf(value, scale)
        value = to_f64(x, unsigned)
        if zero_point is not None:
            value = arith.subf(value, to_f64(zero_point, unsigned))
        value = arith.mulf(value, to_f64(scale))
        return value if to == value.type else arith.truncf(to, value)

    with rewriter.ip, op.location:
        rewriter.replace_op(op, [as_value(_elementwise_quant(op, body))])


def lower_bitcast(op: ir.OpView, rewriter) -> None:
    # dlc.bitcast{to}(x) -> x (same storage type) | linalg.generic {arith.bitcast}
    (x,) = op.operands
    result_type = op.results[0].type
    to = source_types(op)[1][0]
    storage = result_type.element_type
    rank = result_type.rank

    def body(value: ir.Value, _out: ir.Value) -> ir.Value:
        if is_bool(to):  # bool holds 0 or 1: any non-zero byte is true
            nonzero = arith.cmpi(arith.CmpIPredicate.ne, value, scalar(value.type, 0))
            return arith.extui(storage, nonzero)
        return arith.bitcast(storage, value)

    with rewriter.ip, op.location:
        if x.type == result_type and not is_bool(to):
            rewriter.replace_op(op, [x])
            return
        identity = ir.AffineMap.get_identity(rank)
        value = generic([x], empty_like(result_type), [identity, identity], [PARALLEL] * rank,
                        body)
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {
    quant.QUANTIZE: lower_quantize,
    quant.DEQUANTIZE: lower_dequantize,
    quant.BITCAST: lower_bitcast,
}
