"""Compile-time folding of small constant subgraphs (shape computations) during ONNX import.

Exporters compute shapes at run time (Shape -> Gather -> Concat -> Reshape, Range, Where...).
With static shapes every such value is known while importing, and the ops that consume it
(Reshape, Expand, Slice, ConstantOfShape...) need it as a constant. So a node whose inputs are
all constants, of an op in `FOLDERS`, each input at most `MAX_ELEMENTS` elements, is evaluated
here by the function in the table (numpy on a handful of integers) and its outputs become
constants. This is constant folding, as every compiler does; it never runs on model inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
from onnx import helper

MAX_ELEMENTS = 4096
# the limit in force (`fold_limit`): dlc.batching's plans import a model at batch 1, 2 and 11,
# which must be the same program; index arithmetic of a batch of long sequences (BERT's mask
# positions b * S + s: 11 x 384 elements) folded at batch 1 but not at 11 made them differ
_LIMIT: ContextVar[int] = ContextVar("fold_limit", default=MAX_ELEMENTS)


@contextmanager
def fold_limit(elements: int) -> Iterator[None]:
    """Fold inputs of up to `elements` elements in this context (imports to compare)."""
    token = _LIMIT.set(elements)
    try:
        yield
    finally:
        _LIMIT.reset(token)

Folder = Callable[[list[np.ndarray | None], dict[str, Any], int], list[np.ndarray]]


def _axes_input(inputs: list, attrs: dict, opset: int, since: int) -> list[int] | None:
    if opset >= since:
        return None if len(inputs) < 2 or inputs[1] is None else \
            [int(a) for a in inputs[1].reshape(-1)]
    return attrs.get("axes")


def fold_unsqueeze(inputs, attrs, opset):
    x = inputs[0]
    axes = _axes_input(inputs, attrs, opset, 13) or []
    rank = x.ndim + len(axes)
    for axis in sorted(a + rank if a < 0 else a for a in axes):
        x = np.expand_dims(x, axis)
    return [x]


def fold_squeeze(inputs, attrs, opset):
    x = inputs[0]
    axes = _axes_input(inputs, attrs, opset, 13)
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(a + x.ndim if a < 0 else a for a in axes))]


def fold_slice(inputs, attrs, opset):
    x = inputs[0]
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts, ends = inputs[1].reshape(-1), inputs[2].reshape(-1)
        axes = inputs[3].reshape(-1) if len(inputs) > 3 and inputs[3] is not None else \
            range(len(starts))
        steps = inputs[4].reshape(-1) if len(inputs) > 4 and inputs[4] is not None else \
            [1] * len(starts)
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = x.shape[int(axis)]
        start, end, step = int(start), int(end), int(step)
        # ONNX clamps out-of-range bounds; Python slices do the same for these magnitudes
        start = max(-size - 1, min(start, size))
        end = max(-size - 1, min(end, size))
        if step < 0 and end < -size:
            end = None
        index[int(axis)] = slice(start, end, step)
    return [x[tuple(index)]]


def fold_gather(inputs, attrs, opset):
    x, indices = inputs[0], inputs[1].astype(np.int64)
    axis = attrs.get("axis", 0)
    axis = axis + x.ndim if axis < 0 else axis
    indices = np.where(indices < 0, indices + x.shape[axis], indices)
    return [np.take(x, indices, axis=axis)]


def fold_gather_elements(inputs, attrs, opset):
    x, indices = inputs[0], inputs[1].astype(np.int64)
    axis = attrs.get("axis", 0)
    axis = axis + x.ndim if axis < 0 else axis
    if x.ndim != indices.ndim:
        raise ValueError(f"indices of rank {indices.ndim} for data of rank {x.ndim}")
    indices = np.where(indices < 0, indices + x.shape[axis], indices)
    return [np.take_along_axis(x, indices, axis=axis)]


def fold_concat(inputs, attrs, opset):
    return [np.concatenate([i for i in inputs if i is not None], axis=attrs["axis"])]


def fold_cast(inputs, attrs, opset):
    return [inputs[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))]


def fold_range(inputs, attrs, opset):
    start, limit, delta = (i.reshape(()) for i in inputs[:3])
    return [np.arange(start, limit, delta).astype(start.dtype)]


def fold_constant_of_shape(inputs, attrs, opset):
    from onnx import numpy_helper

    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else \
        np.zeros(1, np.float32)
    return [np.full([int(d) for d in inputs[0].reshape(-1)], fill[0], fill.dtype)]


def fold_reduce(fn: Callable) -> Folder:
    def fold(inputs, attrs, opset):
        x = inputs[0]
        axes = _axes_input(inputs, attrs, opset, 18 if fn is not np.sum else 13)
        keepdims = bool(attrs.get("keepdims", 1))
        if not axes and attrs.get("noop_with_empty_axes", 0):
            return [x]
        axis = None if not axes else tuple(a + x.ndim if a < 0 else a for a in axes)
        return [np.asarray(fn(x, axis=axis, keepdims=keepdims)).astype(x.dtype)]

    return fold


def fold_cast_like(inputs, attrs, opset):
    return [inputs[0].astype(inputs[1].dtype)]


def fold_transpose(inputs, attrs, opset):
    x = inputs[0]
    return [np.transpose(x, attrs.get("perm") or None)]


def fold_tile(inputs, attrs, opset):
    return [np.tile(inputs[0], [int(r) for r in inputs[1].reshape(-1)])]


def fold_split(inputs, attrs, opset):
    # the sizes come from the split input (opset 13+) or attribute, else from num_outputs
    # (opset 18+); a Split giving neither (its count is its number of outputs) is not folded
    x = inputs[0]
    axis = attrs.get("axis", 0)
    axis = axis + x.ndim if axis < 0 else axis
    split = inputs[1] if opset >= 13 and len(inputs) > 1 and inputs[1] is not None else \
        attrs.get("split") if opset < 13 else None
    if split is None:
        count = attrs["num_outputs"]
        chunk = -(-x.shape[axis] // count)  # the last part may be smaller
        split = [min(chunk, x.shape[axis] - i * chunk) for i in range(count)]
    bounds = np.cumsum([int(s) for s in np.asarray(split).reshape(-1)])[:-1]
    return list(np.split(x, bounds, axis=axis))


def fold_pow(inputs, attrs, opset):
    base, exponent = inputs
    if base.dtype.kind in "iu":  # (numpy refuses negative integer exponents)
        return [np.power(base.astype(np.float64), exponent).astype(base.dtype)]
    return [np.power(base, exponent).astype(base.dtype)]


def fold_reshape(inputs, attrs, opset):
    x = inputs[0]
    shape = [int(d) for d in inputs[1].reshape(-1)]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def fold_expand(inputs, attrs, opset):
    x, shape = inputs[0], [int(d) for d in inputs[1].reshape(-1)]
    return [x * np.ones(shape, x.dtype)]


def _elementwise(fn: Callable) -> Folder:
    return lambda inputs, attrs, opset: [np.asarray(fn(*inputs))]


def _integer_div(a, b):
    # what the compiled code gives (passes/lowering/elementwise.py, divide_integers): integers
    # truncated toward zero in integer arithmetic (a float64 quotient loses the low bits of
    # int64s beyond 2**53), x / 0 -> 0 and MIN / -1 -> MIN (wrapped); floats as IEEE
    with np.errstate(all="ignore"):
        if a.dtype.kind not in "iu":
            return a / b
        a, b = np.broadcast_arrays(a, b.astype(a.dtype))
        by_zero = b == 0
        by_minus_one = b == -1 if a.dtype.kind == "i" else np.zeros(b.shape, bool)
        divisor = np.where(by_zero | by_minus_one, np.ones((), a.dtype), b)
        quotient = a // divisor  # floored: one more toward zero where signs differ, inexact
        inexact = (quotient * divisor != a) & ((a < 0) != (divisor < 0))
        quotient = (quotient + inexact).astype(a.dtype)
        quotient = np.where(by_minus_one, np.negative(a), quotient)
        return np.where(by_zero, np.zeros((), a.dtype), quotient).astype(a.dtype)


def fold_mod(inputs, attrs, opset):
    # integers: x mod 0 -> 0 (as the compiled code); floats: x mod 0 -> NaN (IEEE fmod)
    a, b = inputs
    with np.errstate(all="ignore"):
        divisor = np.where(b == 0, np.ones((), b.dtype), b) if a.dtype.kind in "iu" else b
        if attrs.get("fmod", 0):
            return [np.fmod(a, divisor).astype(a.dtype)]
        return [np.mod(a, divisor).astype(a.dtype)]


def fold_unique(inputs, attrs, opset):
    # numpy's unique (NaNs one value, last); not sorted: in first-occurrence order
    x, axis = inputs[0], attrs.get("axis")
    flat, axis = (x.reshape(-1), 0) if axis is None else (x, axis + x.ndim if axis < 0 else axis)
    y, indices, inverse, counts = np.unique(flat, True, True, True, axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs.get("sorted", 1):
        order = np.argsort(indices, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        indices, counts, inverse = indices[order], counts[order], rank[inverse]
        y = np.take(flat, indices, axis=axis)
    return [y, *(a.astype(np.int64) for a in (indices, inverse, counts))]


FOLDERS: dict[str, Folder] = {
    "Mod": fold_mod,
    "Unique": fold_unique,
    "Floor": _elementwise(np.floor),
    "Ceil": _elementwise(np.ceil),
    "Sign": _elementwise(np.sign),
    "LessOrEqual": _elementwise(np.less_equal),
    "GreaterOrEqual": _elementwise(np.greater_equal),
    "Xor": _elementwise(np.logical_xor),
    "Identity": _elementwise(lambda x: x),
    "Unsqueeze": fold_unsqueeze,
    "Squeeze": fold_squeeze,
    "Slice": fold_slice,
    "Gather": fold_gather,
    "Concat": fold_concat,
    "Cast": fold_cast,
    "CastLike": fold_cast_like,
    "Transpose": fold_transpose,
    "Tile": fold_tile,
    "Split": fold_split,
    "Range": fold_range,
    "ConstantOfShape": fold_constant_of_shape,
    "ReduceProd": fold_reduce(np.prod),
    "ReduceSum": fold_reduce(np.sum),
    "ReduceMax": fold_reduce(np.max),
    "ReduceMin": fold_reduce(np.min),
    "Reshape": fold_reshape,
    "Expand": fold_expand,
    "Add": _elementwise(np.add),
    "Sub": _elementwise(np.subtract),
    "Mul": _elementwise(np.multiply),
    "Div": _elementwise(_integer_div),
    "Neg": _elementwise(np.negative),
    "Abs": _elementwise(np.abs),
    "Max": _elementwise(lambda *xs: np.maximum.reduce(np.broadcast_arrays(*xs))),
    "Min": _elementwise(lambda *xs: np.minimum.reduce(np.broadcast_arrays(*xs))),
    "Equal": _elementwise(np.equal),
    "Less": _elementwise(np.less),
    "Greater": _elementwise(np.greater),
    "Not": _elementwise(np.logical_not),
    "And": _elementwise(np.logical_and),
    "Or": _elementwise(np.logical_or),
    "Where": _elementwise(np.where),
    "Sqrt": _elementwise(np.sqrt),
    "Pow": fold_pow,
    "Relu": _elementwise(lambda x: np.maximum(x, np.zeros((), x.dtype))),
}


# folders for the shape computations on a dynamic size only (`onnx_symbolic`: transformers'
# token types, gathered by positions): a static import keeps these ops, whose inputs grow
# with the batch (a static import's folding of them is unchanged by the dynamic import)
PROBE_FOLDERS: dict[str, Folder] = {"GatherElements": fold_gather_elements}


def foldable(op_type: str, inputs: list[np.ndarray | None],
             attrs: dict[str, Any] | None = None, opset: int = 0) -> bool:
    """Whether `fold` can evaluate the node (pass attrs and opset where they matter: a Split
    whose part count is only its number of outputs is not foldable)."""
    present = [i for i in inputs if i is not None]
    if op_type == "Split" and not _split_sized(inputs, attrs or {}, opset):
        return False
    return op_type in FOLDERS and bool(present) and \
        all(i.size <= _LIMIT.get() for i in present)


def _split_sized(inputs: list[np.ndarray | None], attrs: dict[str, Any], opset: int) -> bool:
    if opset >= 13:
        return (len(inputs) > 1 and inputs[1] is not None) or "num_outputs" in attrs
    return "split" in attrs


def fold(op_type: str, inputs: list[np.ndarray | None], attrs: dict[str, Any],
         opset: int) -> list[np.ndarray]:
    """The outputs of `op_type` on constant `inputs` (raises on malformed input)."""
    return [np.asarray(r) for r in FOLDERS[op_type](inputs, attrs, opset)]
