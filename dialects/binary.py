"""Binary elementwise, comparison, select and cast ops of the `dlc` dialect.

- `dlc.binary {fn}`: `fn(lhs, rhs)` elementwise, numpy broadcasting, operands and result of one
  element type. `fn` is one of `BINARY_FNS`; each names the element types it accepts.
- `dlc.compare {fn}`: `lhs <fn> rhs` elementwise (eq, ne, lt, le, gt, ge), numpy broadcasting,
  operands of one element type (bool too), result bool (i1).
- `dlc.select(cond, lhs, rhs)`: `cond ? lhs : rhs`, numpy broadcasting of all three; cond is i1.
- `dlc.cast {to}`: converts every element to the element type `to` (float -> int truncates
  toward zero, x -> bool is x != 0).

Semantics per element type (floor vs truncated remainder, shifts by at least the bit width,
NaN propagation of max/min) are ONNX's; the lowering in `passes/lowering/binary.py` states them.
The ONNX ops built from these live in `frontends/onnx_ops/binary.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import (
    TensorTypes,
    broadcast_shapes,
    is_bool,
    is_float,
    is_int,
    same_element_type,
    tensor,
)


def is_numeric(t: ir.Type) -> bool:
    return is_float(t) or (is_int(t) and not is_bool(t))


def is_integer(t: ir.Type) -> bool:
    return is_int(t) and not is_bool(t)


def is_scalar_type(t: ir.Type) -> bool:
    """An element type a dlc tensor may hold: float, integer (signed/unsigned) or bool."""
    return is_float(t) or is_int(t)


# element-type rule -> (check, what the error message calls it)
KINDS: dict[str, tuple[Callable[[ir.Type], bool], str]] = {
    "numeric": (is_numeric, "a numeric (float or integer)"),
    "integer": (is_integer, "an integer (not bool)"),
    "logical": (is_int, "an integer or bool"),
}

# fn -> the element types it accepts (a key of KINDS)
BINARY_FNS: dict[str, str] = {
    "pow": "numeric",    # lhs ** rhs
    "max": "numeric",    # NaN wins on floats
    "min": "numeric",
    "mod": "numeric",    # floor remainder: the sign of the divisor (Python's %)
    "fmod": "numeric",   # truncated remainder: the sign of the dividend (C's fmod, %)
    "shl": "integer",    # lhs << rhs; shifts outside [0, width) give 0
    "shr": "integer",    # lhs >> rhs, arithmetic on signed; outside [0, width): 0 or -1
    "and": "logical",    # bitwise, hence logical on bool
    "or": "logical",
    "xor": "logical",
}
COMPARE_FNS = ("eq", "ne", "lt", "le", "gt", "ge")


def _fn(attrs: dict[str, Any], known) -> str:
    fn = attrs["fn"]
    if fn not in known:
        raise ShapeError(f"unknown fn {fn!r}; expected one of {', '.join(known)}")
    return fn


def infer_binary_fn(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    fn = _fn(attrs, BINARY_FNS)
    element = same_element_type(types)
    check, description = KINDS[BINARY_FNS[fn]]
    if not check(element):
        raise ShapeError(f"fn {fn!r} expects {description} element type, got {element}")
    return [tensor(broadcast_shapes(*(t.shape for t in types)), element)]


def infer_compare(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    _fn(attrs, COMPARE_FNS)
    element = same_element_type(types)
    if not is_scalar_type(element):
        raise ShapeError(f"expects float, integer or bool operands, got {element}")
    shape = broadcast_shapes(*(t.shape for t in types))
    return [tensor(shape, ir.IntegerType.get_signless(1))]


def infer_select(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    cond, lhs, rhs = types
    if not is_bool(cond.element_type):
        raise ShapeError(f"condition must be a bool (i1) tensor, got {cond.element_type}")
    element = same_element_type([lhs, rhs])
    return [tensor(broadcast_shapes(cond.shape, lhs.shape, rhs.shape), element)]


def infer_cast(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    to = attrs["to"]
    for what, element in (("from", x.element_type), ("to", to)):
        if not is_scalar_type(element):
            raise ShapeError(f"cannot cast {what} {element}: float, integer or bool expected")
    return [tensor(x.shape, to)]


BINARY = define(OpDef("binary", ("lhs", "rhs"), infer_binary_fn, {"fn": "str"},
                      "fn(lhs, rhs) elementwise (pow, max, min, mod, fmod, shl, shr, and, or, "
                      "xor), numpy broadcasting"))
COMPARE = define(OpDef("compare", ("lhs", "rhs"), infer_compare, {"fn": "str"},
                       "lhs <fn> rhs (eq, ne, lt, le, gt, ge) -> i1, numpy broadcasting"))
SELECT = define(OpDef("select", ("cond", "lhs", "rhs"), infer_select,
                      summary="cond ? lhs : rhs, numpy broadcasting of all three"))
CAST = define(OpDef("cast", ("x",), infer_cast, {"to": "type"},
                    "convert each element to the type `to`"))
