"""dlc-conv-transpose-matmul: a 2-D f32 transposed convolution as a matmul (kernel = stride) or
as a convolution of its zero-stuffed input (any other), both on the schedules.

A kernel equal to the stride (no overlap: a UNet decoder's 2x2 stride 2) is one matmul and a
depth-to-space:

Each input pixel then writes its own kh x kw block of the output:

    y[n, f, h kh + i, w kw + j] = b[f] + sum_c x[n, c, h, w] W[c, f, i, j]

    -> matmul(transpose(x) as [N H W, C], W as [C, F kh kw]) as [N, H, W, F, kh, kw],
       transposed to [N, F, H, kh, W, kw] and reshaped to [N, F, H kh, W kw] (+ b)

Any other (a GAN's or a decoder's 4x4 or 3x3 stride 2, overlapping) is the stride-1
convolution of the input with s - 1 zeros stuffed between its pixels, padded by
d (k - 1) - p at each side (+ the output padding at the end), by the flipped kernel with its
channel axes swapped per group:

    conv(pad(stuff(x)), flip(W) as [F, C/g, kh, kw]) {stride 1, dilation d, group g}

s² times the multiply-adds (the stuffed zeros), on the conv schedules (packed, Winograd).

The lowering of `dlc.conv_transpose` is a linalg.generic that no schedule matches: it ran as
naive loops (a NaivePathWarning; a UNet's 2x2 stride-2 decoder 0.5-0.9 s a layer, a 4x4
stride-2 256 -> 128 on 32x32 2.05 s against onnxruntime's 12 ms; found by a sweep of models
dlc had not seen). Rewritten: 2-D, f32, static shapes; the matmul form needs group 1,
dilation 1, no pads or output padding and strides equal to the kernel; the conv form pads
d (k - 1) >= p (else the generic stays).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV, CONV_TRANSPOSE
from dlc.dialects.movement import PAD, SLICE
from dlc.passes.graph.match import apply_rules, attributes
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


def _as_conv(op: ir.OpView, attrs: dict) -> list[ir.Value] | None:
    """The transposed conv as the conv of its zero-stuffed input (see the module doc)."""
    x, w = op.operands[0], op.operands[1]
    n, c, h, wd = x.type.shape
    _, fg, kh, kw = w.type.shape
    g = attrs["group"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oph, opw = attrs["output_padding"]
    pads = [dh * (kh - 1) - top, dw * (kw - 1) - left,
            dh * (kh - 1) - bottom + oph, dw * (kw - 1) - right + opw]
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
    # W [C, F/g, kh, kw] -> [g, C/g, F/g, kh, kw] -> [g, F/g, C/g, kh, kw] flipped -> [F, C/g, ...]
    weight = build(ops.RESHAPE, [w], {"shape": [g, c // g, fg, kh, kw]}, loc=loc)
    weight = build(ops.TRANSPOSE, [weight], {"perm": [0, 2, 1, 3, 4]}, loc=loc)
    weight = build(SLICE, [weight], {"starts": [0, 0, 0, kh - 1, kw - 1],
                                     "sizes": [g, fg, c // g, kh, kw],
                                     "steps": [1, 1, 1, -1, -1]}, loc=loc)
    weight = build(ops.RESHAPE, [weight], {"shape": [g * fg, c // g, kh, kw]}, loc=loc)
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
