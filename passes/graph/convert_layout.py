"""dlc-convert-layout: run 2-D convolutions and pooling channels-last (NHWC), transposes cancel.

    conv(x, W, b)  -> transpose(conv_nhwc(transpose(x, [0,2,3,1]), Wᴴᵂᶜᶠ, b), [0,3,1,2])
    pool(x)        -> transpose(pool_nhwc(transpose(x, [0,2,3,1])), [0,3,1,2])

Channels-last convolutions vectorize along the output channels (PERF.md: NCHW reaches 0.59x
numpy, NHWC 1.34x). Each op is converted alone, with a transpose on each side, then the
transposes are sunk below the elementwise ops, adds and concats between the convolutions
(dlc-sink-transpose's rules), where the NHWC->NCHW of one conv meets the NCHW->NHWC of the next
and both vanish. A CNN ends up NHWC from its first conv to its head, with one transpose at each
boundary of the conv region.

Converted: 2-D float convolutions with group 1 or depthwise (group = C = M) — a constant filter
is transposed to HWCF at compile time, any other through a dlc.transpose — and 2-D float max and
average pooling. A grouped convolution (static shapes, 2 to MAX_GROUPS groups) becomes one NHWC
conv per group on a channel slice of the input, their results concatenated along the channels
(AlexNet's group-2 convs and ShuffleNet's group-3 ones ran on the naive path: 6.4x and 11x
onnxruntime's time, now 0.8x and 1.3x); one with more groups, or with at most GROUPED_WIDTH
filters per group and a constant filter, becomes one grouped `dlc.conv_nhwc` (HWCF filter
[KH, KW, C/G, M], `group` kept), which `codegen/grouped_conv.py` schedules (RegNet's 8 channels
per group, EfficientViT's 16). Lp pooling, other ranks and integer types keep NCHW.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV, CONV_NHWC, POOL, POOL_NHWC
from dlc.dialects.movement import CONCAT, SLICE
from dlc.dialects.ops import is_float
from dlc.passes.graph import sink_transpose
from dlc.passes.graph.match import RuleTable, apply_rules, attributes, constant, constant_array
from dlc.passes.registry import ModulePass, register

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
FCHW_TO_HWCF = [2, 3, 1, 0]
# a grouped conv with up to this many groups becomes one conv per group (more: one grouped
# conv_nhwc; ResNeXt's 32 groups would be 32 schedules per layer)
MAX_GROUPS = 16
# ... except a conv of at most this many filters per group and a constant filter: one grouped
# conv (`codegen/grouped_conv.py`; 13 groups of 8 filters on 28 x 28: 0.34 -> 0.27 ms, 4 groups
# of 32 on 13 x 13: 0.45 -> 0.32 ms, AVX2, single thread)
GROUPED_WIDTH = 32
# the sinking rounds: a transpose with two uses (a residual) moves once the other use cancels
ROUNDS = 3


def _transpose(value: ir.Value, perm: list[int], loc: ir.Location) -> ir.Value:
    return build(ops.TRANSPOSE, [value], {"perm": perm}, loc=loc)


def _hwcf(weight: ir.Value, loc: ir.Location) -> ir.Value:
    """The filter [M, C/G, KH, KW] as [KH, KW, C/G, M]: folded when constant."""
    array = constant_array(weight)
    if array is None:
        return _transpose(weight, FCHW_TO_HWCF, loc)
    # (a view: `constant` copies it once, in blocks, `blocked_copy.contiguous`; ResNet-50's 53
    # filters, with their attributes: 74 -> 43 ms)
    return constant(np.transpose(array, FCHW_TO_HWCF), weight.type.element_type, loc)


def conv_to_nhwc(op: ir.OpView) -> list[ir.Value] | None:
    # conv(x, W, b) -> transpose(conv_nhwc(transpose(x), W in HWCF, b))
    x, w = op.operands[0], op.operands[1]
    group = attributes(op)["group"]
    if x.type.rank != 4 or not is_float(x.type.element_type):
        return None
    if group != 1 and not group == x.type.shape[1] == w.type.shape[0]:
        return grouped_to_nhwc(op)
    loc = op.location
    operands = [_transpose(x, TO_NHWC, loc), _hwcf(w, loc), *op.operands[2:]]
    y = build(CONV_NHWC, operands, attributes(op), loc=loc)
    return [_transpose(y, TO_NCHW, loc)]


def grouped_to_nhwc(op: ir.OpView) -> list[ir.Value] | None:
    # conv(x, W, b) with G groups -> transpose(concat_g(conv_nhwc(x_g, W_g, b_g)), [0,3,1,2]),
    # x_g the g-th channel slice of transpose(x): each group a plain conv, scheduled (and its
    # filter data-tiled) like any other, the concat written in place by the convs
    x, w = op.operands[0], op.operands[1]
    attrs = attributes(op)
    group = attrs["group"]
    if not x.type.has_static_shape:
        return None
    narrow = w.type.shape[0] // group <= GROUPED_WIDTH and constant_array(w) is not None
    if group > MAX_GROUPS or narrow:
        return grouped_conv_nhwc(op)
    channels = x.type.shape[1]
    per_group, out_per_group = channels // group, w.type.shape[0] // group
    loc = op.location
    xt = _transpose(x, TO_NHWC, loc)
    hwcf = _hwcf(w, loc)
    bias = op.operands[2] if len(op.operands) > 2 else None
    attrs = {**attrs, "group": 1}
    y = None
    for g in range(group):
        xg = _channels(xt, g * per_group, per_group, loc)
        wg = _channels(hwcf, g * out_per_group, out_per_group, loc)
        operands = [xg, wg] + ([_channels(bias, g * out_per_group, out_per_group, loc)]
                               if bias is not None else [])
        yg = build(CONV_NHWC, operands, attrs, loc=loc)
        y = yg if y is None else build(CONCAT, [y, yg], {"axis": 3}, loc=loc)
    return [_transpose(y, TO_NCHW, loc)]


def grouped_conv_nhwc(op: ir.OpView) -> list[ir.Value]:
    # conv(x, W, b) with G groups -> transpose(conv_nhwc(transpose(x), W in HWCF, b, group G)):
    # one grouped conv (`codegen/grouped_conv.py` schedules it)
    loc = op.location
    operands = [_transpose(op.operands[0], TO_NHWC, loc), _hwcf(op.operands[1], loc),
                *op.operands[2:]]
    y = build(CONV_NHWC, operands, attributes(op), loc=loc)
    return [_transpose(y, TO_NCHW, loc)]


def _channels(value: ir.Value, start: int, size: int, loc: ir.Location) -> ir.Value:
    """value[..., start:start + size] (folded when constant)."""
    shape = list(value.type.shape)
    array = constant_array(value)
    if array is not None:
        return constant(np.ascontiguousarray(array[..., start:start + size]),
                        value.type.element_type, loc)
    starts = [0] * (len(shape) - 1) + [start]
    return build(SLICE, [value], {"starts": starts, "sizes": shape[:-1] + [size],
                                      "steps": [1] * len(shape)}, loc=loc)


def pool_to_nhwc(op: ir.OpView) -> list[ir.Value] | None:
    # pool{max|avg}(x) -> transpose(pool_nhwc(transpose(x)))
    x = op.operands[0]
    attrs = attributes(op)
    if x.type.rank != 4 or not is_float(x.type.element_type) or attrs["kind"] == "lp":
        return None
    loc = op.location
    y = build(POOL_NHWC, [_transpose(x, TO_NHWC, loc)], attrs, loc=loc)
    return [_transpose(y, TO_NCHW, loc)]


CONVERSIONS: RuleTable = {CONV: [conv_to_nhwc], POOL: [pool_to_nhwc]}


@register
@dataclass(frozen=True)
class ConvertLayout(ModulePass):
    """Compute 2-D convs and pools in NHWC; the transposes between them cancel."""

    name = "dlc-convert-layout"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, CONVERSIONS)
        for _ in range(ROUNDS):
            apply_rules(module, sink_transpose.RULES)
