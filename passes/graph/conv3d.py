"""dlc-conv3d-as-2d: a 3-D f32 convolution as one channels-last 2-D convolution per depth tap.

Tap t of the kernel's depth reads input depth od*s + t*d for output depth od, so (per group,
with x padded along D)

    y[n, :, od] = sum over t of conv2d(x[n, :, od*s + t*d], w[:, :, t])

and each term is one 2-D conv over the N*OD images of a depth-strided slice of the input
(kept channels-last: x transposed once to [N, D, H, W, C], each slice reshaped to [N*OD, H, W,
C]), by the filter's depth slice t as HWCF, with the conv's strides, dilations and pads along H
and W; the first carries the bias, the others are added (the add is that conv's fused
epilogue), and the sum is reshaped to [N, OD, OH, OW, F] and transposed back. The same
multiply-adds, on the 2-D conv schedules (packed, depthwise, grouped); a 3-D conv's
`linalg.conv_3d_ncdhw_fcdhw` matched no schedule and ran as naive loops (a NaivePathWarning:
torchvision's video ResNets r3d_18 and mc3_18 did not finish a call in minutes; found by a
sweep of models dlc had not seen). After dlc-fuse-batchnorm, so that a BatchNorm3d folds
into the 3-D conv's filter first.

A 3-D max pool (floor mode) is decomposed the same way: the max over its depth taps of 2-D
channels-last max pools of the depth slices (the input padded with -inf along D), on the pool
schedule; as a 5-D generic it ran as naive loops (MaxPool 1x3x3 stride 1,2,2 on 64x16x56x56:
3.2 ms against onnxruntime's 1.2; 3x3x3 stride 2: 5.1 against 1.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.binary import BINARY
from dlc.dialects.conv import CONV, CONV_NHWC, POOL, POOL_NHWC
from dlc.dialects.movement import PAD, SLICE
from dlc.passes.graph.match import apply_rules, attributes, constant, constant_array
from dlc.passes.registry import ModulePass, register


def _filter(w: ir.Value, t: int, loc: ir.Location) -> ir.Value:
    """Depth tap t of w [F, C/g, KD, KH, KW] as an HWCF filter [KH, KW, C/g, F]."""
    array = constant_array(w)
    if array is not None:
        return constant(np.ascontiguousarray(array[:, :, t].transpose(2, 3, 1, 0)),
                        w.type.element_type, loc)
    f, cg, _, kh, kw = w.type.shape
    tap = build(SLICE, [w], {"starts": [0, 0, t, 0, 0], "sizes": [f, cg, 1, kh, kw],
                             "steps": [1, 1, 1, 1, 1]}, loc=loc)
    tap = build(ops.RESHAPE, [tap], {"shape": [f, cg, kh, kw]}, loc=loc)
    return build(ops.TRANSPOSE, [tap], {"perm": [2, 3, 1, 0]}, loc=loc)


def conv3d_as_2d(op: ir.OpView) -> list[ir.Value] | None:
    x, w = op.operands[0], op.operands[1]
    y_type = op.results[0].type
    if not (x.type.rank == 5 and w.type.rank == 5 and x.type.has_static_shape
            and w.type.has_static_shape and y_type.has_static_shape
            and isinstance(x.type.element_type, ir.F32Type)):
        return None
    n, c, depth, h, wd = x.type.shape
    f, _, kd, _, _ = w.type.shape
    _, _, od, oh, ow = y_type.shape
    if 0 in (n, c, depth, h, wd, f, od, oh, ow):
        return None
    attrs = attributes(op)
    sd, sh, sw = attrs["strides"]
    dd, dh, dw = attrs["dilations"]
    front, top, left, back, bottom, right = attrs["pads"]
    loc = op.location
    y = None
    for t, images in enumerate(_depth_taps(x, od, kd, sd, dd, front, back, None, loc)):
        operands = [images, _filter(w, t, loc), *(op.operands[2:] if y is None else [])]
        conv = build(CONV_NHWC, operands, {"strides": [sh, sw], "dilations": [dh, dw],
                                           "pads": [top, left, bottom, right],
                                           "group": attrs["group"]}, loc=loc)
        y = conv if y is None else build(ops.ADD, [y, conv], loc=loc)
    return [_channels_first(y, [n, od, oh, ow, f], loc)]


def _depth_taps(x: ir.Value, od: int, kd: int, sd: int, dd: int, front: int, back: int,
                padding: float | None, loc: ir.Location) -> Iterator[ir.Value]:
    """The images each depth tap reads: x [N, C, D, H, W] transposed once to [N, D, H, W, C],
    padded along D by `padding` (zeros when None), and per tap t the depths od*s + t*d as
    [N*OD, H, W, C], built as they are taken (each tap's ops before its consumer's)."""
    n, c, _, h, wd = x.type.shape
    xt = build(ops.TRANSPOSE, [x], {"perm": [0, 2, 3, 4, 1]}, loc=loc)
    if front or back:
        value = [] if padding is None else \
            [constant(np.array(padding, np.float32), x.type.element_type, loc)]
        xt = build(PAD, [xt, *value],
                   {"mode": "constant", "pads": [0, front, 0, 0, 0, 0, back, 0, 0, 0]},
                   loc=loc)
    for t in range(kd):
        images = build(SLICE, [xt], {"starts": [0, t * dd, 0, 0, 0], "sizes": [n, od, h, wd, c],
                                     "steps": [1, sd, 1, 1, 1]}, loc=loc)
        yield build(ops.RESHAPE, [images], {"shape": [n * od, h, wd, c]}, loc=loc)


def _channels_first(y: ir.Value, shape: list[int], loc: ir.Location) -> ir.Value:
    """[N*OD, OH, OW, F] as [N, F, OD, OH, OW] (`shape`: [N, OD, OH, OW, F])."""
    y = build(ops.RESHAPE, [y], {"shape": shape}, loc=loc)
    return build(ops.TRANSPOSE, [y], {"perm": [0, 4, 1, 2, 3]}, loc=loc)


def max_pool3d_as_2d(op: ir.OpView) -> list[ir.Value] | None:
    """A 3-D f32 max pool as the max over its depth taps of channels-last 2-D max pools (the
    same decomposition; depth padding is -inf). Floor mode only."""
    x = op.operands[0]
    y_type = op.results[0].type
    attrs = attributes(op)
    if not (x.type.rank == 5 and x.type.has_static_shape and y_type.has_static_shape
            and isinstance(x.type.element_type, ir.F32Type) and attrs["kind"] == "max"
            and not attrs["ceil_mode"] and len(op.results) == 1):
        return None
    n, c, depth, h, wd = x.type.shape
    _, _, od, oh, ow = y_type.shape
    if 0 in (n, c, depth, h, wd, od, oh, ow):
        return None
    kd, kh, kw = attrs["kernel"]
    sd, sh, sw = attrs["strides"]
    dd, dh, dw = attrs["dilations"]
    front, top, left, back, bottom, right = attrs["pads"]
    loc = op.location
    y = None
    for images in _depth_taps(x, od, kd, sd, dd, front, back, -np.inf, loc):
        pooled = build(POOL_NHWC, [images], {
            "kind": "max", "kernel": [kh, kw], "strides": [sh, sw], "dilations": [dh, dw],
            "pads": [top, left, bottom, right], "ceil_mode": 0,
            "count_include_pad": attrs["count_include_pad"], "p": attrs["p"]}, loc=loc)
        y = pooled if y is None else build(BINARY, [y, pooled], {"fn": "max"}, loc=loc)
    return [_channels_first(y, [n, od, oh, ow, c], loc)]


@register
@dataclass(frozen=True)
class Conv3dAs2d(ModulePass):
    """3-D f32 convs (and max pools) as channels-last 2-D ones, one per depth tap (see the
    module doc)."""

    name = "dlc-conv3d-as-2d"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, {CONV: [conv3d_as_2d], POOL: [max_pool3d_as_2d]})
