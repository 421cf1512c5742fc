"""dlc-fuse-batchnorm: fold per-channel scales and shifts into the conv or gemm before them.

The importer decomposes an inference BatchNormalization into `(x - mean) * inv_std * scale +
bias` on [C, 1, ...] constants (dlc-fold-constants turns each factor into one constant). When
x is a conv (or gemm) used only there, each step folds into its weights:

    conv(x, W, b) * s  -> conv(x, W * s[:, None, ...], b * s)
    conv(x, W, b) + t  -> conv(x, W, b + t)            (- t likewise)
    gemm(A, B, C) * s  -> gemm(A, B * s, C * s)        (s per output column)
    gemm(A, B, C) + t  -> gemm(A, B, C + t)            (beta = 1 or no C)

s and t are constants that vary at most along the channel axis (axis 1 of the conv's
[N, M, ...] result, axis 1 of the gemm's [M, N]) and do not broadcast the result to a larger
shape. W, b, B and C must be constants: the folded weights are computed with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV
from dlc.dialects.ops import is_float
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant,
    constant_array,
    producer,
    single_use,
)
from dlc.passes.registry import ModulePass, register


def channel_vector(c: np.ndarray, result: ir.RankedTensorType) -> np.ndarray | None:
    """`c` as one value per channel (axis 1 of `result`), if it varies along no other axis."""
    rank, channels = result.rank, result.shape[1]
    if c.ndim > rank:
        return None
    shape = [1] * (rank - c.ndim) + list(c.shape)
    if any(d != 1 for axis, d in enumerate(shape) if axis != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(c.reshape(shape), [1, channels] + [1] * (rank - 2)).reshape(channels)


def _match(op: ir.OpView, definition: ops.OpDef):
    """(producer op, per-channel vector) for op(producer, constant) in either order, or None."""
    for index in (0, 1) if op.name != ops.SUB.name else (0,):
        value, other = op.operands[index], op.operands[1 - index]
        inner = producer(value, definition)
        c = constant_array(other)
        if inner is None or c is None or not single_use(value):
            continue
        result = value.type
        if op.results[0].type != result or not is_float(result.element_type):
            continue
        vector = channel_vector(c, result)
        if vector is not None:
            return inner, vector
    return None


def _signed(op: ir.OpView, vector: np.ndarray) -> np.ndarray:
    return -vector if op.name == ops.SUB.name else vector


def fold_into_conv(op: ir.OpView) -> list[ir.Value] | None:
    # conv(x, W, b) * s -> conv(x, W * s, b * s); conv(x, W, b) + t -> conv(x, W, b + t)
    found = _match(op, CONV)
    if found is None:
        return None
    conv, vector = found
    x, w = conv.operands[0], conv.operands[1]
    weights = constant_array(w)
    bias = constant_array(conv.operands[2]) if len(conv.operands) > 2 else None
    if weights is None or (len(conv.operands) > 2 and bias is None):
        return None
    element, loc = w.type.element_type, conv.location  # (the folded op is the conv: its name)
    if op.name == ops.MUL.name:
        weights = weights * vector.reshape([-1] + [1] * (weights.ndim - 1))
        bias = None if bias is None else bias * vector
    else:
        bias = (np.zeros_like(vector) if bias is None else bias) + _signed(op, vector)
    operands = [x, constant(weights, element, loc)]
    if bias is not None:
        operands.append(constant(bias.astype(weights.dtype), element, loc))
    return [build(CONV, operands, attributes(conv), loc=loc)]


def fold_into_gemm(op: ir.OpView) -> list[ir.Value] | None:
    # gemm(A, B, C) * s -> gemm(A, B * s, C * s); gemm(A, B, C) + t -> gemm(A, B, C + t)
    found = _match(op, ops.GEMM)
    if found is None:
        return None
    gemm, vector = found
    attrs = attributes(gemm)
    a, b = gemm.operands[0], gemm.operands[1]
    has_c = len(gemm.operands) > 2
    c = constant_array(gemm.operands[2]) if has_c else None
    weights = constant_array(b)
    if weights is None or (has_c and c is None):
        return None
    element, loc = b.type.element_type, gemm.location  # (the folded op is the gemm: its name)
    if op.name == ops.MUL.name:
        weights = weights * (vector[:, None] if attrs["transB"] else vector[None, :])
        c = None if c is None else c * (vector if c.ndim <= 1 else vector[None, :])
    else:
        if has_c and attrs["beta"] != 1:
            return None
        c = (np.zeros_like(vector) if c is None else c) + _signed(op, vector)
        attrs = {**attrs, "beta": 1.0}
    operands = [a, constant(weights, element, loc)]
    if c is not None:
        operands.append(constant(c.astype(weights.dtype), element, loc))
    return [build(ops.GEMM, operands, attrs, loc=loc)]


RULES: RuleTable = {
    ops.MUL: [fold_into_conv, fold_into_gemm],
    ops.ADD: [fold_into_conv, fold_into_gemm],
    ops.SUB: [fold_into_conv, fold_into_gemm],
}


@register
@dataclass(frozen=True)
class FuseBatchnorm(ModulePass):
    """Fold per-channel scale/shift (inference BatchNormalization) into conv/gemm weights."""

    name = "dlc-fuse-batchnorm"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
