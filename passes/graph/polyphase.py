"""dlc-polyphase: a strided conv with a large filter as stride-1 convs on its input's phases.

A stride-s conv reads input row s*oh + kh for output row oh and tap kh: tap kh reads only the
rows of phase kh mod s (rows a, a+s, a+2s...), at offset kh div s within that phase. So
(per dimension, with a = kh mod s)

    y = sum over phases (a, b) of conv_stride1(x_pad[a::s, b::s], w[a::s, b::s])

the same multiply-adds as the strided conv (each tap is in exactly one phase), as up to
s_h * s_w convs of stride 1 on strided slices of the padded input, each filter the taps of
its phase. The first carries the bias, the others are added (each add is its conv's fused
epilogue). What this buys: stride-1 convs take the packed-filter schedule (`codegen/
packed_conv.py`: the filter in blocks of 32 output channels, one sequential stream), which a
strided 3x3 conv does not (its generic's strided input index does not vectorize); a filter of
megabytes, streamed from L3/DRAM once per call, otherwise arrives by demand misses in rows
F*4 bytes apart. Measured alone (conv + bias + relu, 1 thread, Zen 4, polyphase / direct):
3x3 s2 14x14x512 -> 512 0.62, 28x28x512 -> 512 0.80, 14x14x256 -> 512 0.73, 28x28x256 -> 256
0.95; 2x2 s2 (ConvNeXt's downsampling) 14x14x384 -> 768 0.77. Small filters lose (the extra
passes over the output and the slices are not paid back: 56x56x128 -> 128 1.05, 56x56x64 ->
128 1.07, 112x112x32 -> 64 1.20; 2x2 s2 56x56x96 -> 192 1.10), hence `min-filter-bytes`
(2 MiB; the filters above are 9.4, 9.4, 4.7, 2.4, 4.7 MB against 0.6, 0.3, 0.07, 0.3).

Rewritten: 2-D f32 `dlc.conv_nhwc` of group 1, dilation 1, strides of at most 2 (more phases
than 4 make thin convs: a ViT patch embedding, 16x16 stride 16 on 3 channels, would be 256
convs of 3 channels), some stride 2 with a kernel wider than 1 in that dimension (a strided
1x1 conv is packed as a view already), at least `min-channels` input channels (64) and a
constant filter of non-integer values (a quantized conv's integer filter keeps the exact int8
kernels) of at least `min-filter-bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV_NHWC
from dlc.dialects.movement import PAD, SLICE
from dlc.passes.graph.match import apply_rules, attributes, constant, constant_array
from dlc.passes.registry import ModulePass, register

MIN_FILTER_BYTES = 2 << 20
MIN_CHANNELS = 64
MAX_STRIDE = 2


def applies(op: ir.OpView, min_filter_bytes: int, min_channels: int) -> bool:
    """Whether `op` (a dlc.conv_nhwc) is a conv this pass rewrites (see the module doc)."""
    x, w = op.operands[0], op.operands[1]
    if not (x.type.has_static_shape and w.type.has_static_shape and x.type.rank == 4
            and op.results[0].type.has_static_shape):
        return False
    if not isinstance(x.type.element_type, ir.F32Type):
        return False
    attrs = attributes(op)
    strides = list(attrs["strides"])
    if attrs["group"] != 1 or list(attrs["dilations"]) != [1, 1]:
        return False
    kh, kw, c, f = w.type.shape
    if max(strides) > MAX_STRIDE or min(strides) < 1 or not any(
            s > 1 and k > 1 for s, k in zip(strides, (kh, kw))):
        return False
    if c < min_channels or kh * kw * c * f * 4 < min_filter_bytes:
        return False
    if 0 in op.results[0].type.shape:
        return False
    filt = constant_array(w)
    return filt is not None and not np.array_equal(filt, np.round(filt))


def _phases(kernel: int, stride: int) -> list[tuple[int, int]]:
    """(phase, taps) of one dimension: the phases that have taps, and how many each has."""
    return [(a, len(range(a, kernel, stride))) for a in range(stride) if a < kernel]


def polyphase(op: ir.OpView) -> ir.Value:
    """The stride-1 phase convs of conv_nhwc `op` (`applies`), its result's replacement."""
    x, w = op.operands[0], op.operands[1]
    loc = op.location
    element = x.type.element_type
    n, h, wd, c = x.type.shape
    kh, kw = w.type.shape[:2]
    _, oh, ow, _ = op.results[0].type.shape
    attrs = attributes(op)
    sh, sw = attrs["strides"]
    top, left = attrs["pads"][:2]
    rows, cols = _phases(kh, sh), _phases(kw, sw)
    # the padded input covers every row a phase reads: a + s (out + taps - 2) at most
    hp = max(a + sh * (oh + taps - 2) + 1 for a, taps in rows)
    wp = max(b + sw * (ow + taps - 2) + 1 for b, taps in cols)
    bottom, right = hp - h - top, wp - wd - left  # (negative: rows the conv never reads)
    xp = x
    if min(bottom, right) < 0:
        xp = build(SLICE, [xp], {"starts": [0, 0, 0, 0],
                                 "sizes": [n, min(h, h + bottom), min(wd, wd + right), c],
                                 "steps": [1, 1, 1, 1]}, loc=loc)
    pads = [0, top, left, 0, 0, max(bottom, 0), max(right, 0), 0]
    if any(pads):
        xp = build(PAD, [xp], {"mode": "constant", "pads": pads}, loc=loc)
    filt = constant_array(w)
    # the phases with the most taps first: the first conv carries the bias
    phases = sorted(((a, ta, b, tb) for a, ta in rows for b, tb in cols),
                    key=lambda p: -p[1] * p[3])
    y = None
    for a, ta, b, tb in phases:
        part = build(SLICE, [xp], {"starts": [0, a, b, 0], "sizes": [n, oh + ta - 1, ow + tb - 1, c],
                                   "steps": [1, sh, sw, 1]}, loc=loc)
        sub = constant(np.ascontiguousarray(filt[a::sh, b::sw]), element, loc)
        operands = [part, sub, *op.operands[2:]] if y is None else [part, sub]
        conv = build(CONV_NHWC, operands, {"strides": [1, 1], "dilations": [1, 1],
                                           "pads": [0, 0, 0, 0], "group": 1}, loc=loc)
        y = conv if y is None else build(ops.ADD, [y, conv], loc=loc)
    return y


@register
@dataclass(frozen=True)
class Polyphase(ModulePass):
    """Strided convs with a large filter as stride-1 convs on the input's phases (module doc)."""

    name = "dlc-polyphase"
    min_filter_bytes: int = MIN_FILTER_BYTES  # KH KW C F 4 of a conv rewritten
    min_channels: int = MIN_CHANNELS  # its input channels

    def run(self, module: ir.Operation) -> None:
        def rule(op: ir.OpView) -> list[ir.Value] | None:
            if not applies(op, self.min_filter_bytes, self.min_channels):
                return None
            return [polyphase(op)]

        apply_rules(module, {CONV_NHWC: [rule]})
