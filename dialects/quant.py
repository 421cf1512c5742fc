"""Quantization `dlc` ops: quantize, dequantize and bitcast.

- `dlc.quantize(x, scale, zero_point?) {axis, block_size, to}`: ONNX QuantizeLinear on integer
  outputs: `clamp(round_half_even(x / scale) + zero_point, min(to), max(to))`, converted to the
  integer type `to` (i8, ui8, i16, ui16, i32). x and scale have one float element type (the
  division is done in it, as numpy does); the zero point, when present, has the type `to`.
- `dlc.dequantize(x, scale, zero_point?) {axis, block_size, to}`: ONNX DequantizeLinear:
  `(x - zero_point) * scale` converted to the float type `to`; x and the zero point are integers
  of one type (i8, ui8, i16, ui16, i32), scale a float.
- `dlc.bitcast(x) {to}`: ONNX BitCast: every element's bits reinterpreted as the type `to`, of
  the same width (bool counts as 8 bits, as ONNX stores it); the shape is unchanged.

The granularity of scale and zero point (which have one shape) follows from their shape:
- per tensor: rank 0 (axis and block_size are ignored, the importer passes 0);
- per axis: rank 1 of x's size along `axis`, block_size 0;
- blocked: x's rank and shape except along `axis`, where it is ceil(size / block_size).
The importer normalizes axis (non-negative) and reshapes one-element scales to rank 0. The
float8, int4/uint4, int2/uint2 and float4 types of recent opsets are not dlc element types.
QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger and DynamicQuantizeLinear decompose into
these ops and the foundation ones (`frontends/onnx_ops/quant.py`).
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import TensorTypes, is_bool, is_float, is_int, shape_str, tensor

QUANTIZED_WIDTHS = (8, 16, 32)  # integer widths of quantized values


def is_quantized(t: ir.Type) -> bool:
    """An integer element type a quantized tensor may hold: (u)int8, (u)int16, (u)int32."""
    return is_int(t) and not is_bool(t) and t.width in QUANTIZED_WIDTHS


def integer_range(t: ir.IntegerType) -> tuple[int, int]:
    """The smallest and largest value of the integer type `t` (signless is signed)."""
    if t.is_unsigned:
        return 0, (1 << t.width) - 1
    return -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1


def check_granularity(x: ir.RankedTensorType, scale: ir.RankedTensorType,
                      attrs: dict[str, Any]) -> None:
    """Checks that scale's shape is per tensor, per axis or blocked along attrs' axis."""
    axis, block = attrs["axis"], attrs["block_size"]
    if block < 0:
        raise ShapeError(f"block_size {block} must be non-negative")
    if scale.rank == 0:
        return
    if not 0 <= axis < x.rank:
        raise ShapeError(f"axis {axis} is out of range [0, {x.rank}) for a rank-{x.rank} input")
    size = x.shape[axis]
    if block == 0:
        if list(scale.shape) != [size]:
            raise ShapeError(f"a per-axis scale must be [{size}] (axis {axis} of "
                             f"[{shape_str(x.shape)}]), got [{shape_str(scale.shape)}]")
        return
    blocks = -(-size // block)
    expected = [blocks if i == axis else d for i, d in enumerate(x.shape)]
    if list(scale.shape) != expected:
        raise ShapeError(f"a blocked scale (block_size {block} along axis {axis}) must be "
                         f"[{shape_str(expected)}], got [{shape_str(scale.shape)}]")


def _check_zero_point(types: TensorTypes, element: ir.Type) -> None:
    if len(types) < 3:
        return
    scale, zero_point = types[1], types[2]
    if zero_point.shape != scale.shape:
        raise ShapeError(f"zero point [{shape_str(zero_point.shape)}] must have the scale's "
                         f"shape [{shape_str(scale.shape)}]")
    if zero_point.element_type != element:
        raise ShapeError(f"zero point must be {element}, got {zero_point.element_type}")


def infer_quantize(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, scale = types[0], types[1]
    to = attrs["to"]
    if not is_float(x.element_type) or scale.element_type != x.element_type:
        raise ShapeError(f"x and scale must have one float element type, got "
                         f"{x.element_type} and {scale.element_type}")
    if not is_quantized(to):
        raise ShapeError(f"cannot quantize to {to}: i8, ui8, i16, ui16 or i32 expected")
    check_granularity(x, scale, attrs)
    _check_zero_point(types, to)
    return [tensor(x.shape, to)]


def infer_dequantize(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, scale = types[0], types[1]
    to = attrs["to"]
    if not is_quantized(x.element_type):
        raise ShapeError(f"x must be i8, ui8, i16, ui16 or i32, got {x.element_type}")
    if not is_float(scale.element_type):
        raise ShapeError(f"scale must be a float, got {scale.element_type}")
    if not is_float(to):
        raise ShapeError(f"cannot dequantize to {to}: a float type expected")
    check_granularity(x, scale, attrs)
    _check_zero_point(types, x.element_type)
    return [tensor(x.shape, to)]


def bit_width(t: ir.Type) -> int | None:
    """The width ONNX gives an element type (bool is a byte), None for non-scalar types."""
    if is_bool(t):
        return 8
    if is_int(t):
        return t.width
    if is_float(t):
        return {ir.F16Type: 16, ir.BF16Type: 16, ir.F32Type: 32, ir.F64Type: 64}[type(t)]
    return None


def infer_bitcast(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    to = attrs["to"]
    have, want = bit_width(x.element_type), bit_width(to)
    if want is None:
        raise ShapeError(f"cannot bitcast to {to}: a float, integer or bool type expected")
    if have != want:
        raise ShapeError(f"cannot bitcast {x.element_type} ({have} bits) to {to} "
                         f"({want} bits): the widths must be equal")
    return [tensor(x.shape, to)]


QUANTIZE = define(OpDef(
    "quantize", ("x", "scale", "zero_point?"), infer_quantize,
    {"axis": "int", "block_size": "int", "to": "type"},
    "clamp(round_half_even(x / scale) + zero_point) as the integer type `to`",
))
DEQUANTIZE = define(OpDef(
    "dequantize", ("x", "scale", "zero_point?"), infer_dequantize,
    {"axis": "int", "block_size": "int", "to": "type"},
    "(x - zero_point) * scale as the float type `to`",
))
BITCAST = define(OpDef(
    "bitcast", ("x",), infer_bitcast, {"to": "type"},
    "reinterpret each element's bits as the type `to` (same width)",
))
