"""numpy evaluators of dlc ops, for constant folding: `EVALUATORS[OpDef](arrays, attrs)`.

Only ops whose numpy evaluation gives what the compiled code gives are here: IEEE-exact
arithmetic (add, sub, mul, float div, sqrt, reciprocal, abs, neg, rounding), comparisons,
selection, casts between representable values, data movement (reshape, transpose, broadcast,
concat, slice, pad) and the order-free reductions. Transcendental functions (exp, tanh, erf...)
are not folded: numpy's implementations differ from libm's in the last bits. An evaluator
returns None for a case it cannot evaluate exactly (integer division, an out-of-range
float -> int cast); the caller then leaves the op alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.movement import BROADCAST, CONCAT, PAD, SLICE
from dlc.dialects.quant import DEQUANTIZE
from dlc.dialects.reduction import CUMULATIVE, REDUCE
from dlc.dialects.unary import UNARY
from dlc.passes.graph.match import dtype_of

Evaluator = Callable[[list[np.ndarray], dict[str, Any]], "np.ndarray | None"]


UNARY_FNS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs,
    "neg": np.negative,
    "sign": np.sign,
    "sqrt": np.sqrt,
    "reciprocal": lambda x: np.reciprocal(x) if x.dtype.kind == "f" else None,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,  # half to even, as dlc
    "not": np.logical_not,
    "bitwise_not": np.invert,
}
BINARY_FNS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "max": np.maximum,  # NaN wins, as dlc
    "min": np.minimum,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}
COMPARE_FNS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}
REDUCE_FNS = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def evaluate_unary(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    fn = UNARY_FNS.get(attrs["fn"])
    return None if fn is None else fn(arrays[0])


def evaluate_binary(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    fn = BINARY_FNS.get(attrs["fn"])
    return None if fn is None else fn(*arrays)


def evaluate_cast(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    # float -> int truncates toward zero (numpy too) but is undefined out of range: not folded
    (x,), target = arrays, dtype_of(attrs["to"])
    if target is None:
        return None
    if target == np.bool_:
        return x != 0
    if x.dtype.kind == "f" and target.kind in "iu":
        info = np.iinfo(target)
        if not np.all(np.isfinite(x)) or np.any(x <= info.min - 1) or np.any(x >= info.max + 1):
            return None
    return x.astype(target)


def evaluate_slice(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = arrays[0]
    for axis, (start, count, step) in enumerate(zip(attrs["starts"], attrs["sizes"],
                                                    attrs["steps"])):
        x = np.take(x, start + step * np.arange(count, dtype=np.int64), axis=axis)
    return x


def evaluate_pad(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, rank = arrays[0], arrays[0].ndim
    pads = list(zip(attrs["pads"][:rank], attrs["pads"][rank:]))
    if attrs["mode"] != "constant":
        return np.pad(x, pads, mode={"reflect": "reflect", "edge": "edge",
                                     "wrap": "wrap"}[attrs["mode"]])
    value = arrays[1].reshape(()) if len(arrays) > 1 else 0
    return np.pad(x, pads, mode="constant", constant_values=value)


def evaluate_reduce(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    (x,) = arrays
    if not attrs["axes"] or 0 in x.shape:
        return None
    axes, keepdims = tuple(attrs["axes"]), bool(attrs["keepdims"])
    if attrs["fn"] == "mean":  # the sum divided by the count, as the lowering (floats only:
        # an integer mean is dlc's own division)
        if x.dtype.kind != "f":
            return None
        count = int(np.prod([x.shape[a] for a in axes]))
        return np.sum(x, axis=axes, keepdims=keepdims) / x.dtype.type(count)
    fn = REDUCE_FNS.get(attrs["fn"])
    return None if fn is None else fn(x, axis=axes, keepdims=keepdims)


def evaluate_cumulative(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    # numpy's running sum/product is sequential along the axis, as dlc's scan (float16
    # accumulates in float32 there: not folded)
    (x,) = arrays
    if x.dtype == np.float16 or x.dtype.kind not in "iuf" or 0 in x.shape:
        return None
    axis = attrs["axis"] % x.ndim
    if attrs["reverse"]:
        x = np.flip(x, axis)
    fn = np.cumsum if attrs["fn"] == "sum" else np.cumprod if attrs["fn"] == "prod" else None
    if fn is None:
        return None
    y = fn(x, axis=axis, dtype=x.dtype)
    if attrs["exclusive"]:
        first = np.full_like(np.take(y, [0], axis=axis), 0 if attrs["fn"] == "sum" else 1)
        y = np.concatenate([first, np.delete(y, -1, axis=axis)], axis=axis)
    return np.flip(y, axis) if attrs["reverse"] else y


def evaluate_div(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    a, b = arrays
    return a / b if a.dtype.kind == "f" else None  # integer division: dlc's own rules


def _per_element(values: np.ndarray, shape: tuple[int, ...], attrs: dict[str, Any]) -> np.ndarray:
    """A scale or zero point (per tensor, per axis or blocked) broadcast to x's `shape`."""
    if values.ndim == 0:
        return values
    axis = attrs["axis"] % len(shape)
    if attrs["block_size"] > 0:  # blocked: x's axis divided by the block size
        values = np.repeat(values, attrs["block_size"], axis=axis)
        return values[tuple(slice(0, n) for n in shape)]
    return values.reshape([n if d == axis else 1 for d, n in enumerate(shape)])


def evaluate_dequantize(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    # (f64(x) - f64(zero point)) * f64(scale), rounded once: the lowering's arithmetic, exact
    # in f64 for the quantized types (a constant weight's DequantizeLinear: its convolution
    # then gets a constant filter and its schedule)
    x = arrays[0]
    if x.dtype.kind not in "iu" or arrays[1].dtype.kind != "f":
        return None
    value = x.astype(np.float64)
    if len(arrays) > 2:
        value = value - _per_element(arrays[2].astype(np.float64), x.shape, attrs)
    return value * _per_element(arrays[1].astype(np.float64), x.shape, attrs)


def evaluate_matmul(arrays: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray | None:
    a, b = arrays
    return np.matmul(a, b) if a.dtype.kind in "iuf" else None


EVALUATORS: dict[ops.OpDef, Evaluator] = {
    ops.ADD: lambda a, _: a[0] + a[1],
    ops.SUB: lambda a, _: a[0] - a[1],
    ops.MUL: lambda a, _: a[0] * a[1],
    ops.DIV: evaluate_div,
    ops.RELU: lambda a, _: np.maximum(a[0], np.zeros((), a[0].dtype)),
    ops.MATMUL: evaluate_matmul,
    ops.RESHAPE: lambda a, _: a[0],  # the caller reshapes every result to its type's shape
    ops.TRANSPOSE: lambda a, attrs: np.transpose(a[0], attrs["perm"]),
    UNARY: evaluate_unary,
    BINARY: evaluate_binary,
    COMPARE: lambda a, attrs: COMPARE_FNS[attrs["fn"]](a[0], a[1]),
    SELECT: lambda a, _: np.where(a[0], a[1], a[2]),
    CAST: evaluate_cast,
    BROADCAST: lambda a, attrs: np.broadcast_to(a[0], attrs["shape"]),
    CONCAT: lambda a, attrs: np.concatenate(a, axis=attrs["axis"]),
    SLICE: evaluate_slice,
    PAD: evaluate_pad,
    REDUCE: evaluate_reduce,
    CUMULATIVE: evaluate_cumulative,
    DEQUANTIZE: evaluate_dequantize,
}


def evaluate(definition: ops.OpDef, arrays: list[np.ndarray], attrs: dict[str, Any],
             shape: list[int], dtype: np.dtype) -> np.ndarray | None:
    """`definition` applied to `arrays`, as an array of `shape` and `dtype`; None if unknown."""
    evaluator = EVALUATORS.get(definition)
    if evaluator is None:
        return None
    with np.errstate(all="ignore"):
        result = evaluator(arrays, attrs)
    if result is None:
        return None
    result = np.asarray(result)
    if result.size != int(np.prod(shape, dtype=np.int64)):
        return None
    if result.dtype != dtype and not (result.dtype.kind == dtype.kind == "b"):
        if definition is not CAST and result.dtype.kind != dtype.kind:
            return None  # a numpy promotion we did not expect: do not guess
        result = result.astype(dtype)
    return result.reshape(shape)

