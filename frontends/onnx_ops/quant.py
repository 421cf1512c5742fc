"""Importers of the quantization ops, onto dlc.quantize, dlc.dequantize and dlc.bitcast
(dialects/quant.py) and the foundation ops.

- QuantizeLinear / DequantizeLinear (opsets 10, 13, 19, 21, 23+): per tensor, per axis (`axis`,
  13+) and blocked (`block_size`, 21+); the quantized type is the zero point's, else
  `output_dtype` (21+), else uint8; `precision` (23+) is the type the division is done in;
  `saturate` only concerns float8 types. A one-element scale is per tensor.
- MatMulInteger, QLinearMatMul: the zero points (per tensor, per row of A, per column of B)
  are subtracted from the operands and the product is accumulated exactly in i32. It is
  computed by f32 `dlc.matmul`s, which the codegen schedules (packing, tiling, FMAs: the
  integer matmul had no schedule and ran as naive loops, ~130x slower than onnxruntime, issue
  18): 8-bit operands minus their zero points are integers of at most 255 in magnitude, exact
  in f32, and so is every sum of their products up to 2^24 in magnitude (in any order, FMA or
  not). K is split into chunks that keep `K_chunk * max|a - za| * max|b - zb| <= 2^24` (from
  the types, or from the values of a constant operand and zero points: 384 rows of
  u8 x symmetric i8 weights, 256 in the worst case; for a constant B, the actual sums of
  |b - zb| over each chunk, column by column: `weight_chunks`), one f32 matmul per chunk, each
  converted to i32 (exact) and summed in i32. A constant B (a weight) is centered, converted
  and sliced at import, so the schedule packs it at compile time. Operands whose bound leaves chunks under
  `MIN_CHUNK` (16-bit types) keep the i32 `dlc.matmul` (naive loops, exact). QLinearMatMul then
  requantizes: `quantize(f64(C) * (a_scale * b_scale / y_scale), scale 1, y_zero_point)` (the
  multiplier in the scales' type, the product in f64, as numpy computes the reference).
- ConvInteger, QLinearConv: `dlc.conv` has float operands only; as the integer matmul, the
  zero-point-corrected operands convolve in f32 over chunks of the input channels whose sums
  stay exact (`channels * taps * max|x - zx| * max|w - zw| <= 2^24`), each converted to i32
  and summed: the conv schedule takes them. A grouped conv that does not fit one chunk (or
  16-bit data) convolves in f64, which is exact (each product < 2^33, sums far below 2^53).
  QLinearConv adds its i32 bias, then requantizes as QLinearMatMul does (the weight's scale and
  zero point may be per output channel).
- DynamicQuantizeLinear: scale = (max(x, 0) - min(x, 0)) / 255 (1/255 when they are equal),
  zero point = quantize(-min(x, 0), scale) to uint8, y = quantize(x, scale, zero point).
- BitCast (26): dlc.bitcast.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.conv import CONV
from dlc.dialects.core import ShapeError
from dlc.dialects.movement import CONCAT, SLICE
from dlc.dialects.quant import BITCAST, DEQUANTIZE, QUANTIZE, integer_range
from dlc.dialects.reduction import REDUCE
from dlc.dialects.unary import UNARY
from dlc.frontends.onnx_node import FrontendError, Importer, NodeContext, dense, element_type
from dlc.frontends.onnx_ops.conv import auto_pads

FLOAT_WIDTHS = {ir.F16Type: 16, ir.BF16Type: 16, ir.F32Type: 32, ir.F64Type: 64}


def I32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def F64() -> ir.Type:
    return ir.F64Type.get()


def UINT8() -> ir.Type:
    return ir.IntegerType.get_unsigned(8)


def _input(n: NodeContext, index: int) -> ir.Value | None:
    return n.inputs[index] if index < len(n.inputs) else None


def _shape(value: ir.Value) -> list[int]:
    return list(value.type.shape)


def _element(value: ir.Value) -> ir.Type:
    return value.type.element_type


def _cast(n: NodeContext, x: ir.Value, to: ir.Type) -> ir.Value:
    return x if _element(x) == to else n.build(CAST, [x], {"to": to})


def _reshape(n: NodeContext, x: ir.Value, shape: list[int]) -> ir.Value:
    return x if _shape(x) == shape else n.build(ops.RESHAPE, [x], {"shape": shape})


def _constant(n: NodeContext, array: np.ndarray) -> ir.Value:
    return n.build(ops.CONSTANT, [], {"value": dense(np.asarray(array), n)})


def _scalar(n: NodeContext, value: float, like: ir.Type) -> ir.Value:
    """A rank-0 float constant of type `like`."""
    dtypes = {16: np.float16, 32: np.float32, 64: np.float64}
    return _constant(n, np.array(value, dtype=dtypes[FLOAT_WIDTHS[type(like)]]))


def _type(n: NodeContext, onnx_type: int, what: str) -> ir.Type:
    try:
        return element_type(onnx_type, what)
    except FrontendError as error:
        raise n.error(str(error)) from None


def _wider_float(a: ir.Type, b: ir.Type) -> ir.Type:
    return a if FLOAT_WIDTHS[type(a)] >= FLOAT_WIDTHS[type(b)] else b


# ----------------------------------------------------------------------------- Quantize/Dequantize


def _granularity(n: NodeContext, x: ir.Value, scale: ir.Value, zero_point: ir.Value | None
                 ) -> tuple[ir.Value, ir.Value | None, dict[str, int]]:
    """Scale and zero point (one-element ones made rank 0) and the normalized axis, block_size."""
    block = int(n.attr("block_size", 0)) if n.opset >= 21 else 0
    if n.opset < 13 and scale.type.rank > 0 and int(np.prod(_shape(scale))) != 1:
        raise n.error("scale must be a scalar before opset 13 (per-axis quantization is 13+)")
    if int(np.prod(_shape(scale))) == 1:
        scale = _reshape(n, scale, [])
        zero_point = None if zero_point is None else _reshape(n, zero_point, [])
        return scale, zero_point, {"axis": 0, "block_size": 0}
    rank = x.type.rank
    axis = int(n.attr("axis", 1))
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range for a rank-{rank} input")
    return scale, zero_point, {"axis": axis % rank, "block_size": block}


def import_quantize_linear(n: NodeContext) -> list[ir.Value]:
    # QuantizeLinear(x, s, zp) -> dlc.quantize{axis, block_size, to}(x, s, zp)
    x, scale, zero_point = n.inputs[0], n.inputs[1], _input(n, 2)
    output_dtype = int(n.attr("output_dtype", 0)) if n.opset >= 21 else 0
    if zero_point is not None:
        to = _element(zero_point)
        if output_dtype and _type(n, output_dtype, "output_dtype") != to:
            raise n.error(f"output_dtype differs from the zero point's type {to}")
    else:
        to = _type(n, output_dtype, "output_dtype") if output_dtype else UINT8()
    precision = int(n.attr("precision", 0)) if n.opset >= 23 else 0
    compute = _type(n, precision, "precision") if precision else \
        _wider_float(_element(x), _element(scale))
    scale, zero_point, attrs = _granularity(n, x, scale, zero_point)
    operands = [_cast(n, x, compute), _cast(n, scale, compute)]
    operands += [] if zero_point is None else [zero_point]
    return [n.build(QUANTIZE, operands, attrs | {"to": to})]


def import_dequantize_linear(n: NodeContext) -> list[ir.Value]:
    # DequantizeLinear(x, s, zp) -> dlc.dequantize{axis, block_size, to}(x, s, zp)
    x, scale, zero_point = n.inputs[0], n.inputs[1], _input(n, 2)
    output_dtype = int(n.attr("output_dtype", 0)) if n.opset >= 23 else 0
    to = _type(n, output_dtype, "output_dtype") if output_dtype else _element(scale)
    scale, zero_point, attrs = _granularity(n, x, scale, zero_point)
    operands = [x, scale] + ([] if zero_point is None else [zero_point])
    return [n.build(DEQUANTIZE, operands, attrs | {"to": to})]


# ----------------------------------------------------------------------------- integer contractions


def _centered(n: NodeContext, x: ir.Value, zero_point: ir.Value | None, to: ir.Type,
              zero_point_shape: list[int] | None = None) -> ir.Value:
    """cast(x, to) - cast(zero_point, to); a 1-D zero point is reshaped to zero_point_shape."""
    value = _cast(n, x, to)
    if zero_point is None:
        return value
    zero_point = _scalar_or(n, zero_point, zero_point_shape)
    return n.build(ops.SUB, [value, _cast(n, zero_point, to)])


def _per_row(a: ir.Value) -> list[int] | None:
    """The shape a per-row zero point or scale of A takes to broadcast along A's rows."""
    return [a.type.shape[-2], 1] if a.type.rank >= 2 else None


def _requantize(n: NodeContext, accumulated: ir.Value, multiplier: ir.Value,
                zero_point: ir.Value | None, to: ir.Type) -> ir.Value:
    # quantize(f64(acc) * f64(multiplier), 1.0, zp): rint(acc * m + zp) as rint(acc * m) + zp
    value = n.build(ops.MUL, [_cast(n, accumulated, F64()), _cast(n, multiplier, F64())])
    one = _scalar(n, 1.0, F64())
    operands = [value, one]
    if zero_point is not None:
        if int(np.prod(_shape(zero_point))) != 1:
            raise n.error("the output zero point must be a scalar")
        operands.append(_reshape(n, zero_point, []))
    return n.build(QUANTIZE, operands, {"axis": 0, "block_size": 0, "to": to})


def _scalar_or(n: NodeContext, value: ir.Value, shape: list[int] | None) -> ir.Value:
    """A one-element value as rank 0; a 1-D one reshaped to `shape` (to broadcast)."""
    if int(np.prod(_shape(value))) == 1:
        return _reshape(n, value, [])
    if value.type.rank == 1 and shape is not None:
        return _reshape(n, value, shape)
    return value


F32_EXACT = 1 << 24  # every integer up to this magnitude is exact in f32
MIN_CHUNK = 64  # smaller K chunks (operands wider than 8 bits) keep the i32 matmul
CHUNK_STEPS = (64, 16, 8, 1)  # chunk sizes are rounded up to a multiple of one of these


def _constant_input(n: NodeContext, index: int) -> np.ndarray | None:
    """The value of input `index` when it is a constant (initializer, Constant node)."""
    names = n.node.input
    if index < len(names) and names[index] and names[index] in n.constants:
        return np.asarray(n.constants[names[index]])
    return None


def _value_range(n: NodeContext, value: ir.Value | None, index: int) -> tuple[int, int]:
    """The smallest and largest value input `index` may hold: its values when constant, else
    its type's range ((0, 0) when absent)."""
    if value is None:
        return 0, 0
    array = _constant_input(n, index)
    if array is not None and array.size:
        return int(array.min()), int(array.max())
    return integer_range(_element(value))


def _magnitude(n: NodeContext, x: ir.Value, index: int, zero_point: ir.Value | None,
               zero_index: int) -> int:
    """The largest |x - zero_point| of operand `index` (at least 1)."""
    low, high = _value_range(n, x, index)
    zero_low, zero_high = _value_range(n, zero_point, zero_index)
    return max(high - zero_low, zero_high - low, 1)


def k_chunks(k: int, bound: int) -> list[tuple[int, int]]:
    """(start, size) of the chunks of K, each at most `bound`: as few as possible, of one size
    rounded up to a multiple of 64 (else 16, 8, 1) where that stays within the bound, the last
    one the remainder."""
    count = -(-k // bound)
    even = -(-k // count)
    size = next(s for s in (-(-even // step) * step for step in CHUNK_STEPS) if s <= bound)
    return [(start, min(size, k - start)) for start in range(0, k, size)]


def weight_chunks(k: int, bound: int, magnitude: int, b: np.ndarray) -> list[tuple[int, int]]:
    """K chunks for a constant centered B ([..., K, N]): as few as keep every product column's
    sum of |a - za| * |b - zb| within 2^24 given B's values (`magnitude` = max |a - za|), which
    bounds every partial sum, so that the f32 sums are exact; never more than `k_chunks(k,
    bound)` (the worst case of B's type). BERT's 8-bit weights: 768 in one chunk, not 2."""
    columns = np.abs(b.astype(np.int64)).reshape(-1, k, b.shape[-1]).transpose(1, 0, 2)
    sums = np.concatenate([np.zeros((1, columns.shape[1] * columns.shape[2]), np.int64),
                           np.cumsum(columns.reshape(k, -1), axis=0)])
    worst = k_chunks(k, bound)
    for count in range(1, len(worst)):
        even = -(-k // count)
        for step in CHUNK_STEPS:
            size = -(-even // step) * step
            chunks = [(start, min(size, k - start)) for start in range(0, k, size)]
            if all(int((sums[start + n] - sums[start]).max()) * magnitude <= F32_EXACT
                   for start, n in chunks):
                return chunks
    return worst


def _k_slice(n: NodeContext, x: ir.Value, axis: int, start: int, size: int) -> ir.Value:
    shape = _shape(x)
    if start == 0 and size == shape[axis]:
        return x
    starts, sizes = [0] * len(shape), list(shape)
    starts[axis], sizes[axis] = start, size
    return n.build(SLICE, [x], {"starts": starts, "sizes": sizes, "steps": [1] * len(shape)})


def _centered_constant(b: np.ndarray, zero_point: np.ndarray | None) -> np.ndarray:
    """b - zero_point (numpy broadcasting: a 1-D one is per column of B) as f32, computed in
    i64: exact."""
    value = b.astype(np.int64)
    if zero_point is not None:
        zero = zero_point.astype(np.int64)
        value = value - (zero.reshape(()) if zero.size == 1 else zero)
    return value.astype(np.float32)


def _integer_matmul(n: NodeContext, a: ir.Value, b: ir.Value, a_zero: ir.Value | None,
                    b_zero: ir.Value | None, indices: tuple[int, int, int, int]) -> ir.Value:
    """sum_k (a - za)(b - zb) in i32 (numpy matmul shapes), as f32 matmuls of K chunks (see the
    module's docstring); `indices` are the node inputs of a, b, za and zb."""
    a_index, b_index, a_zero_index, b_zero_index = indices
    try:  # the shapes MatMul takes, checked before the chunking below computes on them
        ops.infer_matmul([a.type, ir.RankedTensorType.get(b.type.shape, a.type.element_type)],
                         {})
    except ShapeError as error:
        raise n.error(str(error)) from None
    a_magnitude = _magnitude(n, a, a_index, a_zero, a_zero_index)
    bound = F32_EXACT // (a_magnitude * _magnitude(n, b, b_index, b_zero, b_zero_index))
    k = _shape(a)[-1]
    if k == 0 or (bound < MIN_CHUNK and bound < k):
        lhs = _centered(n, a, a_zero, I32(), _per_row(a))
        rhs = _centered(n, b, b_zero, I32())
        return n.build(ops.MATMUL, [lhs, rhs])
    f32 = ir.F32Type.get()
    lhs = _centered(n, a, a_zero, f32, _per_row(a))
    b_value = _constant_input(n, b_index)
    b_zero_value = None if b_zero is None else _constant_input(n, b_zero_index)
    constant_b = b_value is not None and (b_zero is None or b_zero_value is not None)
    if constant_b and b_zero_value is not None and b_zero_value.size != 1:
        try:  # (as the SUB of the computed case would check)
            np.broadcast_shapes(b_value.shape, b_zero_value.shape)
        except ValueError:
            raise n.error(f"B's zero point of shape {list(b_zero_value.shape)} does not "
                          f"broadcast to B's shape {list(b_value.shape)}") from None
    rhs = _centered_constant(b_value, b_zero_value) if constant_b else \
        _centered(n, b, b_zero, f32)
    b_axis = max(b.type.rank - 2, 0)
    total = None
    chunks = weight_chunks(k, bound, a_magnitude, rhs) if constant_b else k_chunks(k, bound)
    for start, size in chunks:
        if constant_b:
            rhs_part = _constant(n, np.take(rhs, range(start, start + size), b_axis))
        else:
            rhs_part = _k_slice(n, rhs, b_axis, start, size)
        lhs_part = _k_slice(n, lhs, a.type.rank - 1, start, size)
        product = _cast(n, n.build(ops.MATMUL, [lhs_part, rhs_part]), I32())
        total = product if total is None else n.build(ops.ADD, [total, product])
    return total


def import_matmul_integer(n: NodeContext) -> list[ir.Value]:
    # MatMulInteger(a, b, za, zb) -> sum over K chunks of i32(matmul(f32(a) - za, f32(b) - zb))
    a, b = n.inputs[0], n.inputs[1]
    a_zero, b_zero = _input(n, 2), _input(n, 3)
    return [_integer_matmul(n, a, b, a_zero, b_zero, (0, 1, 2, 3))]


def import_qlinear_matmul(n: NodeContext) -> list[ir.Value]:
    # QLinearMatMul -> requantize(integer product (a - za)(b - zb), sa * sb / sy, zy)
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale = n.inputs[:7]
    y_zero = _input(n, 7)
    product = _integer_matmul(n, a, b, a_zero, b_zero, (0, 3, 2, 5))
    scales = n.build(ops.MUL, [_scalar_or(n, a_scale, _per_row(a)), _scalar_or(n, b_scale, None)])
    multiplier = n.build(ops.DIV, [scales, _scalar_or(n, y_scale, None)])
    to = _element(y_zero) if y_zero is not None else _element(a)
    return [_requantize(n, product, multiplier, y_zero, to)]


def _conv_attrs(n: NodeContext, x: ir.Value, w: ir.Value) -> dict:
    """dlc.conv's explicit attributes from ConvInteger/QLinearConv's (as Conv's importer)."""
    if x.type.rank < 3:
        raise n.error(f"input must be [N, C, D1, ...] (rank >= 3), got rank {x.type.rank}")
    k = x.type.rank - 2
    kernel = list(w.type.shape[2:])
    given = n.attr("kernel_shape")
    if given is not None and [int(v) for v in given] != kernel:
        raise n.error(f"kernel_shape {list(given)} differs from the weight's {kernel}")
    strides = [int(v) for v in n.attr("strides", [1] * k)]
    dilations = [int(v) for v in n.attr("dilations", [1] * k)]
    if len(strides) != k or len(dilations) != k:
        raise n.error(f"strides {strides} and dilations {dilations} must have {k} values")
    pads = auto_pads(n, list(x.type.shape[2:]), kernel, strides, dilations)
    return {"strides": strides, "dilations": dilations, "pads": pads,
            "group": int(n.attr("group", 1))}


def _per_channel(w: ir.Value) -> list[int]:
    """The shape a per-output-channel weight zero point takes to broadcast along W's axis 0."""
    return [w.type.shape[0]] + [1] * (w.type.rank - 1)


def _integer_conv(n: NodeContext, x: ir.Value, w: ir.Value, x_zero: ir.Value | None,
                  w_zero: ir.Value | None, attrs: dict, indices: tuple[int, int, int, int]
                  ) -> ir.Value:
    """conv(x - zx, w - zw) in i32 (`indices`: the node inputs of x, w, zx and zw), as f32
    convs over chunks of the input channels whose partial sums stay exact (as
    `_integer_matmul`: `channels * taps * max|x - zx| * max|w - zw| <= 2^24`), each converted
    to i32 and summed. A grouped conv is one chunk or none; where no chunk fits (or with
    16-bit operands) the conv is computed in f64, which is exact for 8- and 16-bit data."""
    x_index, w_index, x_zero_index, w_zero_index = indices
    bound = F32_EXACT // (_magnitude(n, x, x_index, x_zero, x_zero_index)
                          * _magnitude(n, w, w_index, w_zero, w_zero_index))
    channels, taps = w.type.shape[1], math.prod(w.type.shape[2:])
    per_chunk = bound // max(taps, 1)
    if channels == 0 or taps == 0 or \
            (per_chunk < channels and (attrs["group"] != 1 or per_chunk * taps < MIN_CHUNK)):
        lhs = _centered(n, x, x_zero, F64())
        rhs = _centered(n, w, w_zero, F64(), _per_channel(w))
        return _cast(n, n.build(CONV, [lhs, rhs], attrs), I32())
    f32 = ir.F32Type.get()
    lhs = _centered(n, x, x_zero, f32)
    w_value = _constant_input(n, w_index)
    w_zero_value = None if w_zero is None else _constant_input(n, w_zero_index)
    constant_w = w_value is not None and (w_zero is None or w_zero_value is not None)
    if constant_w:
        if w_zero_value is not None and w_zero_value.size not in (1, w.type.shape[0]):
            raise n.error(f"the weight's zero point of shape {list(w_zero_value.shape)} must "
                          f"be a scalar or hold one value per output channel "
                          f"({w.type.shape[0]})")
        zero = None if w_zero_value is None else \
            w_zero_value.reshape(() if w_zero_value.size == 1 else _per_channel(w))
        rhs = _centered_constant(w_value, zero)
    else:
        rhs = _centered(n, w, w_zero, f32, _per_channel(w))
    if attrs["group"] != 1:  # (one chunk: every channel)
        rhs = _constant(n, rhs) if constant_w else rhs
        return _cast(n, n.build(CONV, [lhs, rhs], attrs), I32())
    total = None
    for start, size in k_chunks(channels, min(per_chunk, channels)):
        if constant_w:
            rhs_part = _constant(n, np.ascontiguousarray(rhs[:, start:start + size]))
        else:
            rhs_part = _k_slice(n, rhs, 1, start, size)
        lhs_part = _k_slice(n, lhs, 1, start, size)
        product = _cast(n, n.build(CONV, [lhs_part, rhs_part], attrs), I32())
        total = product if total is None else n.build(ops.ADD, [total, product])
    return total


def import_conv_integer(n: NodeContext) -> list[ir.Value]:
    # ConvInteger(x, w, zx, zw) -> i32 conv(x - zx, w - zw) (f32 chunks, `_integer_conv`)
    x, w = n.inputs[0], n.inputs[1]
    attrs = _conv_attrs(n, x, w)
    return [_integer_conv(n, x, w, _input(n, 2), _input(n, 3), attrs, (0, 1, 2, 3))]


def import_qlinear_conv(n: NodeContext) -> list[ir.Value]:
    # QLinearConv -> requantize(i32 conv(x - zx, w - zw) + B, sx * sw / sy, zy)
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale = n.inputs[:7]
    y_zero, bias = _input(n, 7), _input(n, 8)
    attrs = _conv_attrs(n, x, w)
    accumulated = _integer_conv(n, x, w, x_zero, w_zero, attrs, (0, 3, 2, 5))
    if bias is not None:
        channel_bias = _reshape(n, _cast(n, bias, I32()), [w.type.shape[0]]
                                + [1] * (x.type.rank - 2))
        accumulated = n.build(ops.ADD, [accumulated, channel_bias])
    channel_scale = _scalar_or(n, w_scale, [w.type.shape[0]] + [1] * (x.type.rank - 2))
    scales = n.build(ops.MUL, [_scalar_or(n, x_scale, None), channel_scale])
    multiplier = n.build(ops.DIV, [scales, _scalar_or(n, y_scale, None)])
    to = _element(y_zero) if y_zero is not None else _element(x)
    return [_requantize(n, accumulated, multiplier, y_zero, to)]


# ----------------------------------------------------------------------------- dynamic, bitcast


def import_dynamic_quantize_linear(n: NodeContext) -> list[ir.Value]:
    # y_scale = (max(x, 0) - min(x, 0)) / 255, y_zp = quantize(-min(x, 0), y_scale),
    # y = quantize(x, y_scale, y_zp)
    x = n.inputs[0]
    element = _element(x)
    axes = list(range(x.type.rank))
    zero = _scalar(n, 0.0, element)

    def extreme(fn: str) -> ir.Value:
        # rows first (a row reduction the reduction schedule vectorizes), then the small rest:
        # one reduction over every axis had no schedule (naive loops, a NaivePathWarning on
        # every quantized activation of BERT); min and max are exact in any order
        reduced = x
        if x.type.rank >= 2:
            reduced = n.build(REDUCE, [x], {"fn": fn, "axes": [axes[-1]], "keepdims": 0})
        reduced = n.build(REDUCE, [reduced], {"fn": fn, "axes": axes[:reduced.type.rank],
                                              "keepdims": 0})
        return n.build(BINARY, [reduced, zero], {"fn": fn})

    high, low = extreme("max"), extreme("min")
    same = n.build(COMPARE, [high, low], {"fn": "eq"})
    span = n.build(SELECT, [same, _scalar(n, 1.0, element), n.build(ops.SUB, [high, low])])
    scale = n.build(ops.DIV, [span, _scalar(n, 255.0, element)])
    negated_low = n.build(UNARY, [low], {"fn": "neg", "params": []})
    attrs = {"axis": 0, "block_size": 0, "to": UINT8()}
    zero_point = n.build(QUANTIZE, [negated_low, scale], attrs)
    y = n.build(QUANTIZE, [x, scale, zero_point], attrs)
    return [y, scale, zero_point]


def import_bitcast(n: NodeContext) -> list[ir.Value]:
    # BitCast{to}(x) -> dlc.bitcast{to}(x)
    to = n.attr("to")
    if to is None:
        raise n.error("needs its 'to' attribute")
    return [n.build(BITCAST, n.inputs[:1], {"to": _type(n, int(to), "the target type")})]


# ----------------------------------------------------------------------------- onnxruntime's QOperator contrib ops
# (what quantize_static(QuantFormat.QOperator) writes beside QLinearConv/QLinearMatMul): each is
# its float op between a dequantization of its inputs and a quantization of its result, which
# the graph passes treat as the QDQ form (dlc-qdq-conv multiplies a QGemm's integers)


def _per_tensor(n: NodeContext, value: ir.Value | None) -> ir.Value | None:
    if value is None:
        return None
    if int(np.prod(_shape(value))) != 1:
        raise n.error("expects per-tensor scales and zero points here (one element each)")
    return _reshape(n, value, [])


def _dq(n: NodeContext, x: ir.Value, scale: ir.Value, zero: ir.Value | None) -> ir.Value:
    operands = [x, _per_tensor(n, scale)] + ([] if zero is None else [_per_tensor(n, zero)])
    return n.build(DEQUANTIZE, operands, {"axis": 0, "block_size": 0, "to": _element(scale)})


def _q(n: NodeContext, y: ir.Value, scale: ir.Value, zero: ir.Value | None,
       like: ir.Value) -> ir.Value:
    """y quantized per tensor to the zero point's type, else to `like`'s (the op's input)."""
    operands = [y, _per_tensor(n, scale)] + ([] if zero is None else [_per_tensor(n, zero)])
    to = _element(zero) if zero is not None else _element(like)
    return n.build(QUANTIZE, operands, {"axis": 0, "block_size": 0, "to": to})


def _qlinear_binary(op: ops.OpDef) -> Importer:
    def convert(n: NodeContext) -> list[ir.Value]:
        # QLinearAdd/Mul(a, sa, za, b, sb, zb, sc, zc) -> q(dq(a) op dq(b), sc, zc)
        a, b = n.inputs[0], n.inputs[3]
        if a is None or b is None or len(n.inputs) < 7 or n.inputs[6] is None:
            raise n.error("needs A, A_scale, B, B_scale and C_scale")
        value = n.build(op, [_dq(n, a, n.inputs[1], _input(n, 2)),
                             _dq(n, b, n.inputs[4], _input(n, 5))])
        return [_q(n, value, n.inputs[6], _input(n, 7), a)]
    return convert


def _qlinear_unary(fn: str, params: dict[str, float]) -> Importer:
    def convert(n: NodeContext) -> list[ir.Value]:
        # QLinearSigmoid/LeakyRelu(x, sx, zx, sy, zy) -> q(fn(dq(x)), sy, zy)
        x = n.inputs[0]
        if len(n.inputs) < 4 or n.inputs[3] is None:
            raise n.error("needs X, X_scale and Y_scale")
        value = n.build(UNARY, [_dq(n, x, n.inputs[1], _input(n, 2))],
                        {"fn": fn, "params": [float(n.attr(k, v)) for k, v in params.items()]})
        return [_q(n, value, n.inputs[3], _input(n, 4), x)]
    return convert


def import_qlinear_global_average_pool(n: NodeContext) -> list[ir.Value]:
    # QLinearGlobalAveragePool(x, sx, zx, sy, zy){channels_last} -> q(mean over space(dq(x)))
    x = n.inputs[0]
    if len(n.inputs) < 4 or x.type.rank < 3:
        raise n.error("needs X (rank >= 3), x_scale, x_zero_point and y_scale")
    rank = x.type.rank
    axes = list(range(1, rank - 1)) if n.attr("channels_last", 0) else list(range(2, rank))
    value = n.build(REDUCE, [_dq(n, x, n.inputs[1], n.inputs[2])],
                    {"fn": "mean", "axes": axes, "keepdims": 1})
    return [_q(n, value, n.inputs[3], _input(n, 4), x)]


def import_qgemm(n: NodeContext) -> list[ir.Value]:
    # QGemm(a, sa, za, b, sb, zb, c, sy, zy){alpha, transA, transB}
    #   -> alpha (dq(a) @ dq(b)) + dq(c, sa * sb) [-> q(., sy, zy) when sy is given]
    a, a_scale, a_zero, b, b_scale, b_zero = n.inputs[:6]
    c, y_scale, y_zero = _input(n, 6), _input(n, 7), _input(n, 8)
    trans_a, trans_b = int(n.attr("transA", 0)), int(n.attr("transB", 0))
    if a.type.rank != 2 or b.type.rank != 2:
        raise n.error("A and B must be 2-D")
    dq_a = _dq(n, a, a_scale, a_zero)
    count = int(np.prod(_shape(b_scale)))
    if count == 1:
        dq_b = _dq(n, b, b_scale, b_zero)
    else:  # per output column of op(B): axis 0 of a transposed B, else axis 1
        axis = 0 if trans_b else 1
        if count != b.type.shape[axis]:
            raise n.error(f"b_scale has {count} elements, expected 1 or {b.type.shape[axis]}")
        operands = [b, _reshape(n, b_scale, [count])]
        if b_zero is not None:
            operands.append(_reshape(n, b_zero, [count]))
        dq_b = n.build(DEQUANTIZE, operands, {"axis": axis, "block_size": 0,
                                               "to": _element(a_scale)})
    operands = [dq_a, dq_b]
    if c is not None:  # the int32 bias, at scale sa * sb
        scales = n.build(ops.MUL, [_per_tensor(n, a_scale), _scalar_or(n, b_scale, None)])
        operands.append(n.build(ops.MUL, [_cast(n, c, _element(a_scale)), scales]))
    value = n.build(ops.GEMM, operands, {"alpha": float(n.attr("alpha", 1.0)), "beta": 1.0,
                                         "transA": trans_a, "transB": trans_b})
    if y_scale is None:
        return [value]
    return [_q(n, value, y_scale, y_zero, a)]


def import_qlinear_concat(n: NodeContext) -> list[ir.Value]:
    # QLinearConcat(sy, zy, (x, sx, zx)...){axis} -> q(concat(dq(x)...), sy, zy)
    if len(n.inputs) < 5 or (len(n.inputs) - 2) % 3:
        raise n.error("needs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triples")
    parts = [_dq(n, n.inputs[i], n.inputs[i + 1], n.inputs[i + 2])
             for i in range(2, len(n.inputs), 3)]
    rank = parts[0].type.rank
    axis = int(n.attr("axis", 0))
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range for rank {rank}")
    value = parts[0]
    for part in parts[1:]:
        value = n.build(CONCAT, [value, part], {"axis": axis % rank})
    return [_q(n, value, n.inputs[0], n.inputs[1], n.inputs[2])]


IMPORTERS: dict[str, Importer] = {
    "com.microsoft.QLinearAdd": _qlinear_binary(ops.ADD),
    "com.microsoft.QLinearMul": _qlinear_binary(ops.MUL),
    "com.microsoft.QLinearSigmoid": _qlinear_unary("sigmoid", {}),
    "com.microsoft.QLinearLeakyRelu": _qlinear_unary("leaky_relu", {"alpha": 0.01}),
    "com.microsoft.QLinearGlobalAveragePool": import_qlinear_global_average_pool,
    "com.microsoft.QGemm": import_qgemm,
    "com.microsoft.QLinearConcat": import_qlinear_concat,
    "QuantizeLinear": import_quantize_linear,
    "DequantizeLinear": import_dequantize_linear,
    "MatMulInteger": import_matmul_integer,
    "QLinearMatMul": import_qlinear_matmul,
    "ConvInteger": import_conv_integer,
    "QLinearConv": import_qlinear_conv,
    "DynamicQuantizeLinear": import_dynamic_quantize_linear,
    "BitCast": import_bitcast,
}
