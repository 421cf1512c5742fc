"""dlc-conv-transpose-matmul: a 2-D f32 transposed convolution as a matmul (kernel = stride) or
as its sub-pixel convolutions (strided) or the convolution of its zero-stuffed input (any
other), all on the schedules.

A kernel equal to the stride (no overlap: a UNet decoder's 2x2 stride 2) is one matmul and a
depth-to-space:

Each input pixel then writes its own kh x kw block of the output:

    y[n, f, h kh + i, w kw + j] = b[f] + sum_c x[n, c, h, w] W[c, f, i, j]

    -> matmul(transpose(x) as [N H W, C], W as [C, F kh kw]) as [N, H, W, F, kh, kw],
       transposed to [N, F, H, kh, W, kw] and reshaped to [N, F, H kh, W kw] (+ b)

Any other (a GAN's or a decoder's 4x4 or 3x3 stride 2, overlapping) is, in effect, the
stride-1 convolution of the input with s - 1 zeros stuffed between its pixels, padded by
L = d (k - 1) - p at each side (+ the output padding at the end), by the flipped kernel with
its channel axes swapped per group. Undilated and strided, it is computed without the zeros,
as its s_h s_w sub-pixel convs: the outputs s q + r of phase r read input pixels only with
the flipped kernel's taps k0, k0 + s, ... (k0 = (L - r) mod s), consecutive taps reading
consecutive pixels from q + (r + k0 - L) / s on; so phase (r_h, r_w) is a stride-1 conv
without padding of a window of the (once padded, channels-last) input by those taps, with the
bias, and the phases are interleaved (two concats and a reshape, [N, Q, s_h, P, s_w, F] ->
[N, Q s_h, P s_w, F], the last row or column cut when the output is not a multiple of the
stride). A 4x4 stride-2 256 -> 128 on 32x32: 41.5 ms stuffed, 10.7 ms sub-pixel (onnxruntime
11.5); 3x3 stride 2 128 -> 64 with output padding: 6.3 -> 2.0 ms (2.0). A dilated one, or
one where a phase has no tap (a kernel narrower than the stride), is the conv of the stuffed
input:

    conv(pad(stuff(x)), flip(W) as [F, C/g, kh, kw]) {stride 1, dilation d, group g}

s² times the multiply-adds (the stuffed zeros), on the conv schedules.

The lowering of `dlc.conv_transpose` is a linalg.generic that no schedule matches: it ran as
naive loops (a NaivePathWarning; a UNet's 2x2 stride-2 decoder 0.5-0.9 s a layer, a 4x4
stride-2 256 -> 128 on 32x32 2.05 s against onnxruntime's 12 ms; found by a sweep of models
dlc had not seen). Rewritten: 2-D, f32, static shapes; the matmul form needs group 1,
dilation 1, no pads or output padding and strides equal to the kernel; the stuffed form
pads d (k - 1) >= p (else the generic stays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV, CONV_NHWC, CONV_TRANSPOSE
from dlc.dialects.movement import PAD, SLICE
from dlc.passes.graph.match import (
    apply_rules,
    attributes,
    concatenated,
    constant,
    constant_array,
)
from dlc.passes.registry import ModulePass, register


def conv_transpose_matmul(op: ir.OpView) -> list[ir.Value] | None:
    x, w = op.operands[0], op.operands[1]
    if not (x.type.rank == 4 and x.type.has_static_shape and w.type.has_static_shape
            and isinstance(x.type.element_type, ir.F32Type)):
        return None
    attrs = attributes(op)
    n, c, h, wd = x.type.shape
    _, f, kh, kw = w.type.shape
    if attrs["group"] != 1 or list(attrs["strides"]) != [kh, kw] or any(attrs["pads"]) \
            or list(attrs["dilations"]) != [1, 1] or any(attrs["output_padding"]):
        return _as_conv(op, attrs)
    loc = op.location
    rows = build(ops.RESHAPE, [build(ops.TRANSPOSE, [x], {"perm": [0, 2, 3, 1]}, loc=loc)],
                 {"shape": [n * h * wd, c]}, loc=loc)
    weight = build(ops.RESHAPE, [w], {"shape": [c, f * kh * kw]}, loc=loc)
    y = build(ops.MATMUL, [rows, weight], loc=loc)
    y = build(ops.RESHAPE, [y], {"shape": [n, h, wd, f, kh, kw]}, loc=loc)
    y = build(ops.TRANSPOSE, [y], {"perm": [0, 3, 1, 4, 2, 5]}, loc=loc)
    y = build(ops.RESHAPE, [y], {"shape": [n, f, h * kh, wd * kw]}, loc=loc)
    if len(op.operands) > 2:
        bias = build(ops.RESHAPE, [op.operands[2]], {"shape": [f, 1, 1]}, loc=loc)
        y = build(ops.ADD, [y, bias], loc=loc)
    return [y]


def _flipped(w: ir.Value, c: int, g: int, loc: ir.Location) -> ir.Value:
    """W [C, F/g, kh, kw] -> [g, C/g, F/g, kh, kw] -> [g, F/g, C/g, kh, kw] flipped -> [F, C/g,
    kh, kw]: the filter of the equivalent stride-1 conv (a constant when W is one: as ops, a
    filter above dlc-fold-constants' size limit was flipped at run time on naive loops, a
    DCGAN's 512 -> 256 4x4 7.6 ms)."""
    _, fg, kh, kw = w.type.shape
    array = constant_array(w)
    if array is not None:
        flipped = array.reshape(g, c // g, fg, kh, kw).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
        return constant(np.ascontiguousarray(flipped.reshape(g * fg, c // g, kh, kw)),
                        w.type.element_type, loc)
    weight = build(ops.RESHAPE, [w], {"shape": [g, c // g, fg, kh, kw]}, loc=loc)
    weight = build(ops.TRANSPOSE, [weight], {"perm": [0, 2, 1, 3, 4]}, loc=loc)
    weight = build(SLICE, [weight], {"starts": [0, 0, 0, kh - 1, kw - 1],
                                     "sizes": [g, fg, c // g, kh, kw],
                                     "steps": [1, 1, 1, -1, -1]}, loc=loc)
    return build(ops.RESHAPE, [weight], {"shape": [g * fg, c // g, kh, kw]}, loc=loc)


Phase = tuple[int, int, int]  # first tap, taps, input offset of output 0 of the phase


def _phases(kernel: int, stride: int, low: int) -> list[Phase] | None:
    """Per output phase r (outputs s q + r) of one dimension of the stuffed conv (stride-1 conv
    of the input with s - 1 zeros between pixels, padded by `low` before): the flipped
    kernel's taps that read input pixels (k0, k0 + s, ...) and the input pixel its output
    q = 0 reads with tap k0 (consecutive taps read consecutive pixels); None if a phase has
    no tap (a kernel narrower than the stride)."""
    phases = []
    for r in range(stride):
        k0 = (low - r) % stride
        if k0 >= kernel:
            return None
        phases.append((k0, len(range(k0, kernel, stride)), (r + k0 - low) // stride))
    return phases


def _subpixel(op: ir.OpView, attrs: dict, low: list[int]) -> ir.Value | None:
    """The transposed conv (dilation 1, a stride above 1) as its s_h s_w sub-pixel convs: the
    outputs of phase (r_h, r_w) are a stride-1 conv of the input with the flipped kernel's
    taps of that phase, interleaved (see the module doc); None if a phase has no tap."""
    x, w = op.operands[0], op.operands[1]
    n, c, h, wd = x.type.shape
    _, f, oh, ow = op.results[0].type.shape
    kh, kw = w.type.shape[2:]
    sh, sw = attrs["strides"]
    rows, cols = _phases(kh, sh, low[0]), _phases(kw, sw, low[1])
    if rows is None or cols is None:
        return None
    qh, qw = -(-oh // sh), -(-ow // sw)  # outputs per phase (the last ones cut at the end)
    loc = op.location
    # the input padded once for every phase's window: rows off .. off + q + taps - 2
    top = max(max(0, -off) for _, _, off in rows)
    left = max(max(0, -off) for _, _, off in cols)
    bottom = max(max(0, off + qh + t - 1 - h) for _, t, off in rows)
    right = max(max(0, off + qw + t - 1 - wd) for _, t, off in cols)
    # channels-last from here (one transpose in, one out, which dlc-convert-layout cancels
    # against its neighbours): NCHW convs would each transpose their window and result
    xp = build(ops.TRANSPOSE, [x], {"perm": [0, 2, 3, 1]}, loc=loc)
    if top or left or bottom or right:
        xp = build(PAD, [xp], {"mode": "constant", "pads": [0, top, left, 0, 0, bottom, right, 0]},
                   loc=loc)
    g = attrs["group"]
    weight = _flipped(w, c, g, loc)
    bands = []
    for k0h, th, offh in rows:
        parts = []
        for k0w, tw, offw in cols:
            window = build(SLICE, [xp], {"starts": [0, offh + top, offw + left, 0],
                                         "sizes": [n, qh + th - 1, qw + tw - 1, c],
                                         "steps": [1, 1, 1, 1]}, loc=loc)
            taps = _taps(weight, k0h, k0w, th, tw, sh, sw, loc)
            y = build(CONV_NHWC, [window, taps, *op.operands[2:]],
                      {"strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0],
                       "group": g}, loc=loc)
            parts.append(build(ops.RESHAPE, [y], {"shape": [n, qh, 1, qw, 1, f]}, loc=loc))
        bands.append(concatenated(parts, 4, loc))
    y = build(ops.RESHAPE, [concatenated(bands, 2, loc)], {"shape": [n, qh * sh, qw * sw, f]},
              loc=loc)
    if (qh * sh, qw * sw) != (oh, ow):
        y = build(SLICE, [y], {"starts": [0, 0, 0, 0], "sizes": [n, oh, ow, f],
                               "steps": [1, 1, 1, 1]}, loc=loc)
    return build(ops.TRANSPOSE, [y], {"perm": [0, 3, 1, 2]}, loc=loc)


def _taps(weight: ir.Value, k0h: int, k0w: int, th: int, tw: int, sh: int, sw: int,
          loc: ir.Location) -> ir.Value:
    """The taps (k0h, k0w) + (s i, s j) of the flipped filter [F, C/g, kh, kw], as HWCF."""
    array = constant_array(weight)
    if array is not None:
        taps = array[:, :, k0h::sh, k0w::sw].transpose(2, 3, 1, 0)
        return constant(np.ascontiguousarray(taps), weight.type.element_type, loc)
    f, cg = weight.type.shape[:2]
    taps = build(SLICE, [weight], {"starts": [0, 0, k0h, k0w], "sizes": [f, cg, th, tw],
                                   "steps": [1, 1, sh, sw]}, loc=loc)
    return build(ops.TRANSPOSE, [taps], {"perm": [2, 3, 1, 0]}, loc=loc)


def _as_conv(op: ir.OpView, attrs: dict) -> list[ir.Value] | None:
    """The transposed conv as its sub-pixel convs, or as the conv of its zero-stuffed input
    (see the module doc)."""
    x, w = op.operands[0], op.operands[1]
    n, c, h, wd = x.type.shape
    kh, kw = w.type.shape[2:]
    g = attrs["group"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oph, opw = attrs["output_padding"]
    pads = [dh * (kh - 1) - top, dw * (kw - 1) - left,
            dh * (kh - 1) - bottom + oph, dw * (kw - 1) - right + opw]
    if (dh, dw) == (1, 1) and (sh, sw) != (1, 1):
        y = _subpixel(op, attrs, pads[:2])
        if y is not None:
            return [y] if y.type == op.results[0].type else None
    if min(pads) < 0:
        return None
    loc = op.location
    if (sh, sw) != (1, 1):  # s - 1 zeros after each pixel, the last ones cut
        x = build(ops.RESHAPE, [x], {"shape": [n, c, h, 1, wd, 1]}, loc=loc)
        x = build(PAD, [x], {"mode": "constant",
                             "pads": [0] * 6 + [0, 0, 0, sh - 1, 0, sw - 1]}, loc=loc)
        x = build(ops.RESHAPE, [x], {"shape": [n, c, h * sh, wd * sw]}, loc=loc)
        x = build(SLICE, [x], {"starts": [0, 0, 0, 0],
                               "sizes": [n, c, (h - 1) * sh + 1, (wd - 1) * sw + 1],
                               "steps": [1, 1, 1, 1]}, loc=loc)
    weight = _flipped(w, c, g, loc)
    y = build(CONV, [x, weight, *op.operands[2:]],
              {"strides": [1, 1], "dilations": [dh, dw], "pads": pads, "group": g}, loc=loc)
    return [y] if y.type == op.results[0].type else None


@register
@dataclass(frozen=True)
class ConvTransposeMatmul(ModulePass):
    """Transposed convs whose kernel equals their stride as a matmul and a depth-to-space
    (see the module doc)."""

    name = "dlc-conv-transpose-matmul"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, {CONV_TRANSPOSE: [conv_transpose_matmul]})
