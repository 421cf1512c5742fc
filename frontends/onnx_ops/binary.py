"""Importers of binary and variadic elementwise ONNX ops, comparisons, logic, Where and Cast.

They build `dlc.binary`, `dlc.compare`, `dlc.select` and `dlc.cast` (dialects/binary.py), plus
`dlc.add`, `dlc.mul`, `dlc.div` and `dlc.constant`, decomposing where ONNX has no one-op match:
- Max, Min, Sum, Mean: a chain of binary ops over the inputs (numpy broadcasting throughout);
  Mean divides the sum by the input count.
- Pow with a mixed base/exponent: casts to one element type first (see `import_pow`).
- Clip: max(x, min) then min(., max) (as np.clip: max wins when min > max); attributes before
  opset 11, optional inputs since.
- PRelu: select(x < 0, x * slope, x), slope broadcast to x only.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.ops import broadcast_shapes, is_float, is_int, shape_str
from dlc.element_types import numpy_dtype
from dlc.frontends.onnx_node import (
    FrontendError,
    Importer,
    NodeContext,
    dense,
    element_type,
)
from dlc.frontends.onnx_ops.core import check_same_shapes


def _element(value: ir.Value) -> ir.Type:
    return value.type.element_type


def _cast(n: NodeContext, x: ir.Value, to: ir.Type) -> ir.Value:
    return x if _element(x) == to else n.build(CAST, [x], {"to": to})


def _constant(n: NodeContext, value: float, like: ir.Type) -> ir.Value:
    """A rank-0 constant `value` of element type `like`."""
    array = np.array(value, dtype=numpy_dtype(like))
    return n.build(ops.CONSTANT, [], {"value": dense(array, n)})


def _present(n: NodeContext) -> list[ir.Value]:
    inputs = [v for v in n.inputs if v is not None]
    if not inputs:
        raise n.error("needs at least one input")
    return inputs


def _fold(n: NodeContext, step) -> ir.Value:
    return functools.reduce(step, _present(n))


def _binary(fn: str) -> Importer:
    def import_binary(n: NodeContext) -> list[ir.Value]:
        check_same_shapes(n, 7)
        return [n.build(BINARY, n.inputs[:2], {"fn": fn})]

    return import_binary


def _variadic(fn: str) -> Importer:
    def import_variadic(n: NodeContext) -> list[ir.Value]:
        # Max(a, b, c) -> binary{max}(binary{max}(a, b), c)
        check_same_shapes(n, 8)
        return [_fold(n, lambda a, b: n.build(BINARY, [a, b], {"fn": fn}))]

    return import_variadic


def _compare(fn: str) -> Importer:
    def import_compare(n: NodeContext) -> list[ir.Value]:
        check_same_shapes(n, 7)
        return [n.build(COMPARE, n.inputs[:2], {"fn": fn})]

    return import_compare


def import_sum(n: NodeContext) -> list[ir.Value]:
    # Sum(a, b, c) -> add(add(a, b), c)
    check_same_shapes(n, 8)
    return [_fold(n, lambda a, b: n.build(ops.ADD, [a, b]))]


def import_mean(n: NodeContext) -> list[ir.Value]:
    # Mean(a, b, c) -> div(add(add(a, b), c), 3)
    check_same_shapes(n, 8)
    total = _fold(n, lambda a, b: n.build(ops.ADD, [a, b]))
    count = len(_present(n))
    if count == 1:
        return [total]
    return [n.build(ops.DIV, [total, _constant(n, count, _element(total))])]


def import_pow(n: NodeContext) -> list[ir.Value]:
    # Pow(x, y) -> binary{pow}(x, cast(y)); an integer base with a float exponent computes in
    # f64 and truncates back, as numpy's power(int, float).astype(int)
    check_same_shapes(n, 7)
    base, exponent = n.inputs[:2]
    base_type, exponent_type = _element(base), _element(exponent)
    if is_int(base_type) and is_float(exponent_type):
        f64 = ir.F64Type.get()
        power = n.build(BINARY, [_cast(n, base, f64), _cast(n, exponent, f64)], {"fn": "pow"})
        return [_cast(n, power, base_type)]
    return [n.build(BINARY, [base, _cast(n, exponent, base_type)], {"fn": "pow"})]


def import_mod(n: NodeContext) -> list[ir.Value]:
    fn = "fmod" if n.attr("fmod", 0) else "mod"
    return [n.build(BINARY, n.inputs[:2], {"fn": fn})]


def import_bitshift(n: NodeContext) -> list[ir.Value]:
    direction = n.attr("direction", b"")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    fns = {"LEFT": "shl", "RIGHT": "shr"}
    if direction not in fns:
        raise n.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    return [n.build(BINARY, n.inputs[:2], {"fn": fns[direction]})]


def import_where(n: NodeContext) -> list[ir.Value]:
    return [n.build(SELECT, n.inputs[:3])]


def _target_type(n: NodeContext, onnx_type: int) -> ir.Type:
    try:
        return element_type(onnx_type, "the target type")
    except FrontendError as error:
        raise n.error(f"cannot cast: {error}") from None


def import_cast(n: NodeContext) -> list[ir.Value]:
    # Cast{to}(x) -> cast{to}(x); `saturate` and `round_mode` only concern float8 types
    to = n.attr("to")
    if to is None:
        raise n.error("needs its 'to' attribute")
    if isinstance(to, bytes):  # opset < 6 named the type
        to = onnx.TensorProto.DataType.Value(to.decode().upper())
    return [n.build(CAST, n.inputs[:1], {"to": _target_type(n, int(to))})]


def import_cast_like(n: NodeContext) -> list[ir.Value]:
    x, like = n.inputs[:2]
    return [n.build(CAST, [x], {"to": _element(like)})]


def import_clip(n: NodeContext) -> list[ir.Value]:
    # Clip(x, lo, hi) -> binary{min}(binary{max}(x, lo), hi)
    x = n.inputs[0]
    element = _element(x)
    if n.opset < 11:
        bounds = [_constant(n, n.attr(name, default), element) for name, default in
                  (("min", -3.402823e38), ("max", 3.402823e38))]
    else:
        bounds = [n.inputs[i] if i < len(n.inputs) else None for i in (1, 2)]
    for bound, name in zip(bounds, ("min", "max")):
        if bound is not None and bound.type.rank != 0 and list(bound.type.shape) != [1]:
            raise n.error(f"{name} must be a scalar, got shape [{shape_str(bound.type.shape)}]")
    lo, hi = bounds
    value = x
    if lo is not None:
        value = n.build(BINARY, [value, lo], {"fn": "max"})
    if hi is not None:
        value = n.build(BINARY, [value, hi], {"fn": "min"})
    if list(value.type.shape) != list(x.type.shape):  # a [1] bound and a rank-0 x
        value = n.build(ops.RESHAPE, [value], {"shape": list(x.type.shape)})
    return [value]


def import_prelu(n: NodeContext) -> list[ir.Value]:
    # PRelu(x, slope) -> select(x < 0, x * slope, x)
    x, slope = n.inputs[:2]
    shape = list(x.type.shape)
    try:
        unidirectional = broadcast_shapes(shape, list(slope.type.shape)) == shape
    except ValueError:
        unidirectional = False
    if not unidirectional:
        raise n.error(f"slope of shape [{shape_str(slope.type.shape)}] does not broadcast to "
                      f"x of shape [{shape_str(shape)}]")
    negative = n.build(COMPARE, [x, _constant(n, 0, _element(x))], {"fn": "lt"})
    return [n.build(SELECT, [negative, n.build(ops.MUL, [x, slope]), x])]


# The dispatch table: ONNX op type -> importer.
IMPORTERS: dict[str, Importer] = {
    "Pow": import_pow,
    "Max": _variadic("max"),
    "Min": _variadic("min"),
    "Sum": import_sum,
    "Mean": import_mean,
    "Mod": import_mod,
    "BitShift": import_bitshift,
    "BitwiseAnd": _binary("and"),
    "BitwiseOr": _binary("or"),
    "BitwiseXor": _binary("xor"),
    "And": _binary("and"),
    "Or": _binary("or"),
    "Xor": _binary("xor"),
    "Equal": _compare("eq"),
    "Greater": _compare("gt"),
    "GreaterOrEqual": _compare("ge"),
    "Less": _compare("lt"),
    "LessOrEqual": _compare("le"),
    "Where": import_where,
    "Cast": import_cast,
    "CastLike": import_cast_like,
    "Clip": import_clip,
    "PRelu": import_prelu,
}
