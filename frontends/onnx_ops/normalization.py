"""Importers of the ONNX normalizations, each decomposed into reductions and elementwise ops.

BatchNormalization (inference only), InstanceNormalization, LayerNormalization,
GroupNormalization, MeanVarianceNormalization, LpNormalization and LRN become `dlc.reduce`
(mean, l1, l2), the foundation arithmetic (add/sub/mul/div), `dlc.unary` (sqrt, reciprocal),
`dlc.binary {pow}`, `dlc.compare`/`dlc.select` and `dlc.reshape`; LRN's sum over a window of
channels is a `dlc.matmul` with a constant band matrix. Per-channel parameters of shape [C]
are reshaped to [C, 1, ...] to broadcast over the spatial axes. Statistics are computed in the
input's element type, except LayerNormalization and GroupNormalization (opset 21) with
stash_type = 1, which compute float16 inputs in float32.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.reduction import REDUCE
from dlc.frontends.decompose import (
    centered,
    constant_like,
    inverse_std,
    normalize,
    per_channel,
    reduce,
    unary,
)
from dlc.frontends.onnx_node import Importer, NodeContext
from dlc.frontends.onnx_ops.reduction import normalize_axes, normalize_axis

# ----------------------------------------------------------------------------- building blocks


constant = constant_like  # (the name recurrent.py and loss.py import)


def mean(n: NodeContext, x: ir.Value, axes: list[int]) -> ir.Value:
    return reduce(n, "mean", x, axes)


def cast_to(n: NodeContext, x: ir.Value, element: ir.Type) -> ir.Value:
    return x if x.type.element_type == element else n.build(CAST, [x], {"to": element})


def stash_element(n: NodeContext, x: ir.Value) -> ir.Type:
    """The element type statistics are computed in: float32 for float16 with stash_type 1."""
    element = x.type.element_type
    if n.attr("stash_type", 1) == 1 and isinstance(element, ir.F16Type):
        return ir.F32Type.get()
    return element


def _channels_input(n: NodeContext, what: str) -> ir.Value:
    x = n.inputs[0]
    if x.type.rank < 2:
        raise n.error(f"{what} needs an input of rank >= 2 [N, C, ...], got rank {x.type.rank}")
    return x


# ----------------------------------------------------------------------------- importers


def import_batch_normalization(n: NodeContext) -> list[ir.Value]:
    # y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (inference)
    if n.attr("training_mode", 0):
        return _batch_statistics_normalization(n)
    if n.opset < 14 and sum(1 for name in n.node.output if name) > 1:
        raise n.error("the running mean/variance outputs (training) are not supported: "
                      "dlc compiles inference graphs (export the model in eval mode)")
    x = _channels_input(n, "BatchNormalization")
    rank = x.type.rank
    scale, bias, mean_, var = n.inputs[1:5]
    if n.opset >= 9 or n.attr("spatial", 1):
        # (spatial = 0, before opset 9: parameters [C, D1, ...] broadcast as they are)
        scale, bias, mean_, var = (per_channel(n, p, rank) for p in (scale, bias, mean_, var))
    inv_std = inverse_std(n, var, n.attr("epsilon", 1e-5))
    y = n.build(ops.MUL, [n.build(ops.SUB, [x, mean_]), inv_std])
    return [n.build(ops.ADD, [n.build(ops.MUL, [y, scale]), bias])]


def _batch_statistics_normalization(n: NodeContext) -> list[ir.Value]:
    """BatchNormalization with training_mode = 1 (opset 14+): normalized by the statistics of
    this batch (mean and population variance over every axis but the channels'), and the
    optional running mean and variance outputs, input * momentum + current * (1 - momentum).
    Only values: nothing is updated. (timm's NFNets standardize their weights so: an eval-mode
    export of ScaledStdConv2d is a training-mode BatchNormalization of a constant.)"""
    x = _channels_input(n, "BatchNormalization")
    rank = x.type.rank
    axes = [0, *range(2, rank)]
    scale, bias, mean_in, var_in = n.inputs[1:5]
    d, mean_, var = centered(n, x, axes)
    y = n.build(ops.MUL, [d, inverse_std(n, var, n.attr("epsilon", 1e-5))])
    y = n.build(ops.ADD, [n.build(ops.MUL, [y, per_channel(n, scale, rank)]),
                          per_channel(n, bias, rank)])
    outputs = [y]
    if len(n.node.output) > 1:
        momentum = n.attr("momentum", 0.9)
        channels = [x.type.shape[1]]
        for running, current in ((mean_in, mean_), (var_in, var)):
            current = n.build(ops.RESHAPE, [current], {"shape": channels})
            outputs.append(n.build(ops.ADD, [
                n.build(ops.MUL, [running, constant_like(n, momentum, running)]),
                n.build(ops.MUL, [current, constant_like(n, 1 - momentum, current)])]))
    return outputs[:len(n.node.output)]


def import_instance_normalization(n: NodeContext) -> list[ir.Value]:
    # y = (x - mean) / sqrt(var + epsilon) * scale + bias, statistics over the spatial axes
    x = _channels_input(n, "InstanceNormalization")
    rank = x.type.rank
    scale, bias = (per_channel(n, p, rank) for p in n.inputs[1:3])
    d, _, var = centered(n, x, list(range(2, rank)))
    y = n.build(ops.MUL, [d, inverse_std(n, var, n.attr("epsilon", 1e-5))])
    return [n.build(ops.ADD, [n.build(ops.MUL, [y, scale]), bias])]


def import_layer_normalization(n: NodeContext) -> list[ir.Value]:
    # y = (x - mean) / sqrt(var + epsilon) * scale + bias over axes [axis, rank)
    x = n.inputs[0]
    rank = x.type.rank
    axes = list(range(normalize_axis(n, n.attr("axis", -1), rank), rank))
    element = x.type.element_type
    wide = cast_to(n, x, stash_element(n, x))
    normalized, mean_, inv_std = normalize(n, wide, axes, n.attr("epsilon", 1e-5))
    y = cast_to(n, normalized, element)
    y = n.build(ops.MUL, [y, n.inputs[1]])
    if len(n.inputs) > 2 and n.inputs[2] is not None:
        y = n.build(ops.ADD, [y, n.inputs[2]])
    # Mean and InvStdDev (optional outputs) are of the stash type
    return [y, mean_, inv_std][:max(1, len(n.node.output))]


def import_rms_normalization(n: NodeContext) -> list[ir.Value]:
    # y = x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale
    x = n.inputs[0]
    rank = x.type.rank
    axes = list(range(normalize_axis(n, n.attr("axis", -1), rank), rank))
    wide = cast_to(n, x, stash_element(n, x))
    inv_rms = inverse_std(n, mean(n, n.build(ops.MUL, [wide, wide]), axes),
                          n.attr("epsilon", 1e-5))
    y = cast_to(n, n.build(ops.MUL, [wide, inv_rms]), x.type.element_type)
    return [n.build(ops.MUL, [y, n.inputs[1]])]


def import_group_normalization(n: NodeContext) -> list[ir.Value]:
    # statistics per (sample, group of C/G channels); scale/bias per group (opset 18) or per
    # channel (opset 21)
    x = _channels_input(n, "GroupNormalization")
    shape, rank = list(x.type.shape), x.type.rank
    groups = n.attr("num_groups")
    if groups is None or groups <= 0 or shape[1] % groups:
        raise n.error(f"num_groups ({groups}) must be a positive divisor of the {shape[1]} "
                      "channels")
    element = x.type.element_type
    grouped_shape = [shape[0], groups, math.prod(shape[1:]) // groups]
    grouped = n.build(ops.RESHAPE, [cast_to(n, x, stash_element(n, x))],
                      {"shape": grouped_shape})
    d, _, var = centered(n, grouped, [2])
    y = cast_to(n, n.build(ops.MUL, [d, inverse_std(n, var, n.attr("epsilon", 1e-5))]),
                element)
    scale, bias = n.inputs[1], n.inputs[2]
    if n.opset < 21:  # per group: [G] -> [G, 1] over [N, G, C/G * D...]
        scale, bias = (n.build(ops.RESHAPE, [p], {"shape": [groups, 1]}) for p in (scale, bias))
        y = n.build(ops.ADD, [n.build(ops.MUL, [y, scale]), bias])
        return [n.build(ops.RESHAPE, [y], {"shape": shape})]
    y = n.build(ops.RESHAPE, [y], {"shape": shape})
    scale, bias = (per_channel(n, p, rank) for p in (scale, bias))
    return [n.build(ops.ADD, [n.build(ops.MUL, [y, scale]), bias])]


def import_mean_variance_normalization(n: NodeContext) -> list[ir.Value]:
    # y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), as the ONNX function body
    x = n.inputs[0]
    axes = normalize_axes(n, list(n.attr("axes", [0, 2, 3])), x.type.rank)
    mean_ = mean(n, x, axes)
    var = n.build(ops.SUB, [mean(n, n.build(ops.MUL, [x, x]), axes),
                            n.build(ops.MUL, [mean_, mean_])])
    std = n.build(ops.ADD, [unary(n, "sqrt", var), constant(n, 1e-9, x)])
    return [n.build(ops.DIV, [n.build(ops.SUB, [x, mean_]), std])]


def import_lp_normalization(n: NodeContext) -> list[ir.Value]:
    # y = x / norm_p(x) over axis, 0 where the norm is 0
    x = n.inputs[0]
    p = n.attr("p", 2)
    if p not in (1, 2):
        raise n.error(f"p must be 1 or 2, got {p}")
    axis = normalize_axis(n, n.attr("axis", -1), x.type.rank)
    norm = n.build(REDUCE, [x], {"fn": f"l{p}", "axes": [axis], "keepdims": 1})
    zero = constant(n, 0, x)
    is_zero = n.build(COMPARE, [norm, zero], {"fn": "eq"})
    return [n.build(SELECT, [is_zero, zero, n.build(ops.DIV, [x, norm])])]


def import_lrn(n: NodeContext) -> list[ir.Value]:
    # y = x / (bias + alpha / size * window_sum(x^2))^beta, the window over channels
    # [c - (size-1)//2, c + ceil((size-1)/2)]: a matmul by a band matrix
    x = _channels_input(n, "LRN")
    size = n.attr("size")
    if size is None or size < 1:
        raise n.error(f"size must be a positive integer, got {size}")
    shape = list(x.type.shape)
    channels = shape[1]
    low, high = (size - 1) // 2, math.ceil((size - 1) / 2)
    c = np.arange(channels)
    band = ((c[None, :] >= c[:, None] - low) & (c[None, :] <= c[:, None] + high))
    squares = n.build(ops.RESHAPE, [n.build(ops.MUL, [x, x])],
                      {"shape": [shape[0], channels, math.prod(shape[2:])]})
    window = n.build(ops.MATMUL, [constant(n, band, x), squares])
    window = n.build(ops.RESHAPE, [window], {"shape": shape})
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    base = n.build(ops.ADD, [constant(n, bias, x),
                             n.build(ops.MUL, [constant(n, alpha / size, x), window])])
    scale = n.build(BINARY, [base, constant(n, beta, x)], {"fn": "pow"})
    return [n.build(ops.DIV, [x, scale])]


IMPORTERS: dict[str, Importer] = {
    "BatchNormalization": import_batch_normalization,
    "InstanceNormalization": import_instance_normalization,
    "LayerNormalization": import_layer_normalization,
    "RMSNormalization": import_rms_normalization,
    "GroupNormalization": import_group_normalization,
    "MeanVarianceNormalization": import_mean_variance_normalization,
    "LpNormalization": import_lp_normalization,
    "LRN": import_lrn,
}
