"""Reduction `dlc` ops: reduce, argreduce, hardmax, cumulative and det.

- `dlc.reduce {fn, axes, keepdims}`: `fn` over `axes` (sorted, distinct, non-negative; empty
  means no axis is reduced: the per-element transform of `fn` still applies, as ONNX's
  reference does). `fn` is one of `REDUCE_FNS`: sum, mean, max, min, prod, l1 (sum |x|), l2
  (sqrt of sum x*x), logsum (log of sum), logsumexp (log of sum exp, computed stably),
  sumsquare (sum x*x). Reducing an empty axis gives the identity (0, 1, -inf, +inf, ...) run
  through the final transform (so logsum gives -inf and mean NaN, as numpy).
- `dlc.argreduce {fn, axis, keepdims, select_last_index}`: the int64 index of the max or min
  along `axis` (the first one, or the last with select_last_index = 1).
- `dlc.hardmax {axis}`: 1 where the first maximum along `axis` is, 0 elsewhere.
- `dlc.cumulative {fn, axis, exclusive, reverse}`: running sum or product (`fn` one of
  `CUMULATIVE_FNS`) along `axis`; exclusive leaves the element itself out (the first result
  is the identity, 0 or 1), reverse runs from the end of the axis.
- `dlc.det`: the determinants of a batch of square matrices, [B, n, n] -> [B] (float).

Every axis is normalized (non-negative) by the importer; the inference functions only check
consistency. Softmax, LogSoftmax and the normalizations are decomposed by the importers in
`frontends/onnx_ops/{reduction,normalization}.py` into these ops and elementwise ones.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import TensorTypes, is_bool, is_float, is_int, shape_str, tensor

# fn -> the element types it accepts: "float", "numeric" (float or integer) or "ordered"
# (numeric or bool)
REDUCE_FNS: dict[str, str] = {
    "sum": "numeric",
    "mean": "numeric",
    "max": "ordered",
    "min": "ordered",
    "prod": "numeric",
    "l1": "numeric",
    "l2": "numeric",
    "logsum": "float",
    "logsumexp": "float",
    "sumsquare": "numeric",
}
ARGREDUCE_FNS = ("max", "min")
CUMULATIVE_FNS = ("sum", "prod")

_KIND_CHECKS = {
    "float": (is_float, "a float"),
    "numeric": (lambda t: is_float(t) or (is_int(t) and not is_bool(t)), "a numeric"),
    "ordered": (lambda t: is_float(t) or is_int(t), "a numeric or bool"),
}


def _check_fn(fn: str, known) -> None:
    if fn not in known:
        raise ShapeError(f"unknown fn {fn!r}; expected one of {', '.join(known)}")


def _check_element(fn: str, kind: str, element: ir.Type) -> None:
    check, description = _KIND_CHECKS[kind]
    if not check(element):
        raise ShapeError(f"fn {fn!r} expects {description} element type, got {element}")


def _check_axis(axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range [0, {rank}) for a rank-{rank} operand")


def _check_flag(attrs: dict[str, Any], *names: str) -> None:
    for name in names:
        if attrs[name] not in (0, 1):
            raise ShapeError(f"{name} must be 0 or 1, got {attrs[name]}")


def reduced_shape(shape: list[int], axes: list[int], keepdims: bool) -> list[int]:
    if keepdims:
        return [1 if axis in axes else size for axis, size in enumerate(shape)]
    return [size for axis, size in enumerate(shape) if axis not in axes]


def infer_reduce(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    fn, axes = attrs["fn"], list(attrs["axes"])
    _check_fn(fn, REDUCE_FNS)
    _check_element(fn, REDUCE_FNS[fn], x.element_type)
    _check_flag(attrs, "keepdims")
    for axis in axes:
        _check_axis(axis, x.rank)
    if axes != sorted(set(axes)):
        raise ShapeError(f"axes {axes} must be sorted and distinct")
    return [tensor(reduced_shape(list(x.shape), axes, attrs["keepdims"]), x.element_type)]


def infer_argreduce(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    fn, axis = attrs["fn"], attrs["axis"]
    _check_fn(fn, ARGREDUCE_FNS)
    _check_element(fn, "numeric", x.element_type)
    _check_flag(attrs, "keepdims", "select_last_index")
    _check_axis(axis, x.rank)
    if x.shape[axis] == 0:
        raise ShapeError(f"cannot take the arg{fn} of an empty axis {axis}")
    shape = reduced_shape(list(x.shape), [axis], attrs["keepdims"])
    return [tensor(shape, ir.IntegerType.get_signless(64))]


def infer_hardmax(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    _check_element("hardmax", "float", x.element_type)
    _check_axis(attrs["axis"], x.rank)
    return [x]


def infer_cumulative(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    _check_fn(attrs["fn"], CUMULATIVE_FNS)
    _check_element(attrs["fn"], "numeric", x.element_type)
    _check_flag(attrs, "exclusive", "reverse")
    _check_axis(attrs["axis"], x.rank)
    return [x]


def infer_det(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    _check_element("det", "float", x.element_type)
    if x.rank != 3 or x.shape[1] != x.shape[2]:
        raise ShapeError(f"det expects a batch of square matrices [B, n, n], got "
                         f"[{shape_str(x.shape)}]")
    return [tensor([x.shape[0]], x.element_type)]


REDUCE = define(OpDef("reduce", ("x",), infer_reduce,
                      {"fn": "str", "axes": "ints", "keepdims": "int"},
                      "fn (sum, mean, max, min, prod, l1, l2, logsum, logsumexp, sumsquare) "
                      "over axes"))
ARGREDUCE = define(OpDef("argreduce", ("x",), infer_argreduce,
                         {"fn": "str", "axis": "int", "keepdims": "int",
                          "select_last_index": "int"},
                         "int64 index of the max or min along axis"))
HARDMAX = define(OpDef("hardmax", ("x",), infer_hardmax, {"axis": "int"},
                       "1 at the first maximum along axis, 0 elsewhere"))
CUMULATIVE = define(OpDef("cumulative", ("x",), infer_cumulative,
                          {"fn": "str", "axis": "int", "exclusive": "int", "reverse": "int"},
                          "running sum or product along axis (exclusive: without the element "
                          "itself; reverse: from the end)"))
DET = define(OpDef("det", ("x",), infer_det, {},
                   "determinant of each square matrix of a batch [B, n, n] -> [B]"))
