"""Decompositions both frontends use, written once against a small builder protocol.

An ONNX `NodeContext` and a torch `AtenNode` are both a `Builder`: `build(op, operands, attrs)`
makes a dlc op at the node's location (a shape error becomes the node's error) and
`error(message)` makes a FrontendError naming the node. The functions here build the dlc ops of
the math that several ops (and both frontends) write the same way: normalization statistics,
softmax, per-channel parameters, constants of a value's element type. What is one frontend's
own (attribute parsing, opset rules, dtype promotion) stays in that frontend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.reduction import REDUCE
from dlc.dialects.unary import UNARY
from dlc.element_types import numpy_dtype
from dlc.frontends.common import FrontendError, dense


class Builder(Protocol):
    def build(self, op: ops.OpDef, operands: Sequence[ir.Value], attrs: dict | None = None
              ) -> ir.Value: ...

    def error(self, message: str) -> FrontendError: ...


def constant_like(b: Builder, value: float | np.ndarray, like: ir.Value) -> ir.Value:
    """A constant `value` (a scalar: rank 0) of the element type of `like`."""
    element = like.type.element_type
    try:
        dtype = numpy_dtype(element)
    except TypeError:
        raise b.error(f"element type {element} is not supported") from None
    return b.build(ops.CONSTANT, [], {"value": dense(np.asarray(value, dtype=dtype), b)})


def unary(b: Builder, fn: str, x: ir.Value, *params: float) -> ir.Value:
    return b.build(UNARY, [x], {"fn": fn, "params": list(params)})


def reduce(b: Builder, fn: str, x: ir.Value, axes: Sequence[int], keepdims: bool = True
           ) -> ir.Value:
    return b.build(REDUCE, [x], {"fn": fn, "axes": list(axes), "keepdims": int(keepdims)})


def inverse_std(b: Builder, var: ir.Value, epsilon: float) -> ir.Value:
    """1 / sqrt(var + epsilon)."""
    root = unary(b, "sqrt", b.build(ops.ADD, [var, constant_like(b, epsilon, var)]))
    return unary(b, "reciprocal", root)


def centered(b: Builder, x: ir.Value, axes: Sequence[int]) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(x - mean, mean, the variance mean((x - mean)^2)) over `axes`, kept dims."""
    mean = reduce(b, "mean", x, axes)
    d = b.build(ops.SUB, [x, mean])
    return d, mean, reduce(b, "mean", b.build(ops.MUL, [d, d]), axes)


def normalize(b: Builder, x: ir.Value, axes: Sequence[int], epsilon: float
              ) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(x - mean) / sqrt(var + epsilon) over `axes` (layer norm's statistics), with the mean
    and the inverse standard deviation (kept dims)."""
    d, mean, var = centered(b, x, axes)
    rstd = inverse_std(b, var, epsilon)
    return b.build(ops.MUL, [d, rstd]), mean, rstd


def affine(b: Builder, y: ir.Value, weight: ir.Value | None, bias: ir.Value | None) -> ir.Value:
    """y * weight + bias, each optional."""
    if weight is not None:
        y = b.build(ops.MUL, [y, weight])
    if bias is not None:
        y = b.build(ops.ADD, [y, bias])
    return y


def per_channel(b: Builder, p: ir.Value, rank: int) -> ir.Value:
    """A parameter of shape [C] reshaped to [C, 1, ...] for an input [N, C, D1, ...]."""
    if p.type.rank != 1 or rank <= 2:
        return p
    return b.build(ops.RESHAPE, [p], {"shape": [p.type.shape[0]] + [1] * (rank - 2)})


def shifted_by_max(b: Builder, x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """x - max(x over axes), kept dims: the largest element becomes 0."""
    return b.build(ops.SUB, [x, reduce(b, "max", x, axes)])


def softmax(b: Builder, x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """e / sum(e), e = exp(x - max(x)), over `axes`."""
    e = unary(b, "exp", shifted_by_max(b, x, axes))
    return b.build(ops.DIV, [e, reduce(b, "sum", e, axes)])


def log_softmax(b: Builder, x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """d - log(sum(exp(d))), d = x - max(x), over `axes`."""
    d = shifted_by_max(b, x, axes)
    return b.build(ops.SUB, [d, reduce(b, "logsumexp", d, axes)])
