"""Small IR builders shared by the lowering families (insert at the current InsertionPoint)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.dialects.ops import is_float

PARALLEL = linalg.IteratorType.parallel
REDUCTION = linalg.IteratorType.reduction


# The run-time value (index) of the one dynamic size (`?`) of the function being lowered: every
# `?` of a function is that one size (dlc-to-linalg's rule; the runtime checks that a call's
# inputs agree on it), so every `?` of every tensor its lowering builds is that value.
_DYNAMIC_SIZE: ContextVar[ir.Value | None] = ContextVar("dynamic_size", default=None)


@contextmanager
def dynamic_size(value: ir.Value | None) -> Iterator[None]:
    """Within: every `?` size of a tensor the builders make is `value`."""
    token = _DYNAMIC_SIZE.set(value)
    try:
        yield
    finally:
        _DYNAMIC_SIZE.reset(token)


def sizes_of(shape: list[int]) -> list[int | ir.Value]:
    """`shape` with each dynamic size as its run-time value (see `dynamic_size`)."""
    if all(not ir.ShapedType.is_dynamic_size(d) for d in shape):
        return list(shape)
    value = _DYNAMIC_SIZE.get()
    if value is None:
        raise ValueError("a tensor with a dynamic size outside a function lowered with one")
    return [value if ir.ShapedType.is_dynamic_size(d) else d for d in shape]


def empty_like(result_type: ir.RankedTensorType) -> ir.Value:
    return tensor.EmptyOp(sizes_of(list(result_type.shape)), result_type.element_type).result


def scalar(element_type: ir.Type, value: float) -> ir.Value:
    if is_float(element_type):
        return arith.ConstantOp(element_type, ir.FloatAttr.get(element_type, float(value))).result
    return arith.ConstantOp(element_type, ir.IntegerAttr.get(element_type, int(value))).result


def filled(result_type: ir.RankedTensorType, value: float) -> ir.Value:
    """A tensor of `result_type` with every element `value` (linalg.fill of tensor.empty)."""
    return linalg.fill(scalar(result_type.element_type, value), outs=[empty_like(result_type)])


def broadcast_map(shape: list[int], result_shape: list[int]) -> ir.AffineMap:
    """The indexing map reading an operand of `shape` broadcast (numpy rules) to `result_shape`."""
    rank = len(result_shape)
    exprs = []
    for i, size in enumerate(shape):
        axis = rank - len(shape) + i
        broadcast = size == 1 and result_shape[axis] != 1
        exprs.append(ir.AffineConstantExpr.get(0) if broadcast else ir.AffineDimExpr.get(axis))
    return ir.AffineMap.get(rank, 0, exprs)


def dims_map(num_dims: int, dims: list[int | None]) -> ir.AffineMap:
    """A map of `num_dims` loops selecting `dims` (None: the constant 0, a broadcast axis)."""
    exprs = [ir.AffineConstantExpr.get(0) if d is None else ir.AffineDimExpr.get(d) for d in dims]
    return ir.AffineMap.get(num_dims, 0, exprs)


def generic(
    inputs: list[ir.Value],
    init: ir.Value,
    maps: list[ir.AffineMap],
    iterators: list,
    body: Callable[..., ir.Value],
) -> ir.Value:
    """A one-result linalg.generic whose region computes `body(*input_elements, out_element)`."""

    @linalg.generic(inputs, [init], maps, iterators)
    def result(*args):
        return body(*args)

    return result


def elementwise(
    inputs: list[ir.Value], result_type: ir.RankedTensorType, body: Callable[..., ir.Value]
) -> ir.Value:
    """An elementwise linalg.generic over `result_type`, broadcasting inputs (numpy rules)."""
    shape = list(result_type.shape)
    maps = [broadcast_map(list(v.type.shape), shape) for v in inputs]
    maps.append(ir.AffineMap.get_identity(len(shape)))
    return generic(inputs, empty_like(result_type), maps, [PARALLEL] * len(shape),
                   lambda *args: body(*args[:-1]))


def as_value(result) -> ir.Value:
    """The single Value of what a builder returned (a Value, an op, or a one-result list)."""
    if isinstance(result, ir.Value):
        return result
    if isinstance(result, (ir.OpView, ir.Operation)):
        return result.results[0]
    return result[0]


def reshaped(x: ir.Value, shape: list[int]) -> ir.Value:
    """x with the same elements in row-major order, as `shape` (x itself if already so).

    A `tensor.reshape`, not collapse_shape/expand_shape: linalg-fuse-elementwise-ops folds
    those into a neighbouring linalg op by expanding its loops, which turns the named
    contraction back into a generic (and then fuses the elementwise producer into it)."""
    if list(x.type.shape) == shape:
        return x
    i64 = ir.IntegerType.get_signless(64)
    shape_type = ir.RankedTensorType.get([len(shape)], i64)
    sizes = sizes_of(shape)
    if sizes == shape:
        target = arith.ConstantOp(shape_type, ir.DenseElementsAttr.get(
            np.array(shape, dtype=np.int64), type=shape_type)).result
    else:  # (a dynamic size: its run-time value)
        target = tensor.from_elements(shape_type, [
            arith.index_cast(i64, d) if isinstance(d, ir.Value)
            else arith.ConstantOp(i64, ir.IntegerAttr.get(i64, d)).result for d in sizes])
    return tensor.reshape(ir.RankedTensorType.get(shape, x.type.element_type), x, target)
