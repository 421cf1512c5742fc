"""dlc-winograd: 3x3 convolutions as Winograd F(2x2, 3x3): 16 matmuls instead of 36 multiplies
an output pixel's 2x2 tile per channel pair, 2.25x fewer multiply-adds.

    conv_nhwc(x, W, b)  (3x3, stride 1, dilation 1, group 1, W constant)
      -> xp = pad(x) to [N, 2th + 2, 2tw + 2, C]          (th x tw tiles of 2x2 outputs)
         V[k, l] = (Bᵀ d B)[k, l] for every 4x4 tile d    (strided slices of xp, adds and subs)
         M = matmul(V [16, T, C], U [16, C, F])           (U = G W Gᵀ, computed at compile time)
         Y = Aᵀ M A                                       (adds and subs, 2x2 outputs a tile)
         y = interleave(Y)[:, :OH, :OW] + b                (concats along unit axes, a reshape)

with T = N th tw tiles, Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]], G = [[1,0,0],
[1/2,1/2,1/2],[1/2,-1/2,1/2],[0,0,1]], Aᵀ = [[1,1,1,0],[0,1,-1,-1]] (Lavin and Gray, "Fast
Algorithms for Convolutional Neural Networks", 2015). Everything is built from dlc ops that the
rest of the pipeline already schedules: the transforms are elementwise ops on strided slices
(fused, vectorized along the channels), the 16 products one batch matmul (its schedule, and
`num_threads` > 1 splits its batch), the concats written in place. The transforms' rounding is
that of 2 to 4 extra adds a value (F(2x2, 3x3) is the accurate one of the family; F(4x4, 3x3)
saves 4x but loses digits).

Onnxruntime's CPU convs (MLAS: im2col or NCHWc direct) do not use Winograd: on one core dlc's
direct NHWC conv is at its peak, so this is where dlc goes past it. Measured alone (single
thread, AMD EPYC Zen 4, conv + bias + relu, dlc winograd / dlc direct): 56x56x64 -> 64 0.68,
28x28x128 -> 128 0.59, 14x14x256 -> 256 0.54, 7x7x512 -> 512 1.30. The 7x7 layer has 16 tiles:
U (16 C F weights, 1.8x the filter) is read for 16 rows of each matmul and the products are too
thin to hide it, so a conv needs `min_tiles` tiles (default 36), `min_channels` input and
output channels (default 64: K and N of the matmuls; the transforms' cost grows with C + F,
the savings with C F) and `min_macs` direct multiply-adds (default 2^24) to be rewritten. The last bounds the compile time: a rewritten conv is ~130 dlc
ops (slices, adds, concats), and upstream eliminate-empty-tensors and one-shot-bufferize grow
faster than the function: DenseNet-121's 42 growth convs (128 -> 32 channels) rewritten took
its compile from 5.9 to 27.8 s (eliminate-empty-tensors 0.2 -> 13.5 s) for 0.98x its time;
with `min_macs` 18 of them, 14.8 s for 0.977x; with `min_channels` 64 none. ResNet-50's 13
took it from 2.9 to 6.2 s, for 0.95x its time. Skipped too: a filter of
integer values (a quantized conv's, which `codegen/int8_*` computes exactly in integers; U of
halves would lose that), other types than f32, and non-constant filters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV_NHWC
from dlc.dialects.movement import CONCAT, PAD, SLICE
from dlc.passes.graph.match import apply_rules, attributes, constant, constant_array
from dlc.passes.registry import ModulePass, register

G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
# Bᵀ's rows as (sign, index) pairs: row k of Bᵀ d is d[i] + sign * d[j] (each has two entries)
B_ROWS = ((0, -1, 2), (1, 1, 2), (2, -1, 1), (1, -1, 3))
MIN_TILES = 36
MIN_CHANNELS = 64
# a conv's direct multiply-adds (N OH OW F C 9): each rewritten conv adds ~130 dlc ops, and
# the compile time of the bufferization passes grows faster than the function
MIN_MACS = 1 << 24


def filter_transform(w: np.ndarray) -> np.ndarray:
    """U [16, C, F] = G W Gᵀ of each (c, f) of the HWCF filter W [3, 3, C, F] (in f64)."""
    u = np.einsum("ai,ijcf,bj->abcf", G, w.astype(np.float64), G)
    return u.reshape(16, w.shape[2], w.shape[3]).astype(w.dtype)


def applies(op: ir.OpView, min_tiles: int, min_channels: int, min_macs: int = 0) -> bool:
    """Whether `op` (a dlc.conv_nhwc) is a conv this pass rewrites (see the module doc)."""
    x, w = op.operands[0], op.operands[1]
    if not (x.type.has_static_shape and w.type.has_static_shape and x.type.rank == 4):
        return False
    if not isinstance(x.type.element_type, ir.F32Type):
        return False
    attrs = attributes(op)
    if attrs["group"] != 1 or list(attrs["strides"]) != [1, 1] \
            or list(attrs["dilations"]) != [1, 1]:
        return False
    kh, kw, c, f = w.type.shape
    if (kh, kw) != (3, 3) or min(c, f) < min_channels:
        return False
    n, oh, ow, _ = op.results[0].type.shape
    if n * ((oh + 1) // 2) * ((ow + 1) // 2) < min_tiles or n * oh * ow * f * c * 9 < min_macs:
        return False
    filt = constant_array(w)
    return filt is not None and not np.array_equal(filt, np.round(filt))


def _slice(value: ir.Value, axis: int, start: int, size: int, step: int,
           loc: ir.Location) -> ir.Value:
    shape = list(value.type.shape)
    starts, sizes, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], sizes[axis], steps[axis] = start, size, step
    return build(SLICE, [value], {"starts": starts, "sizes": sizes, "steps": steps}, loc=loc)


def _b_transform(value: ir.Value, axis: int, tiles: int, loc: ir.Location) -> list[ir.Value]:
    """Bᵀ along `axis` of `value`: the 4 strided slices d_i = value[i::2] (tiles each), then
    d_i + sign d_j per row of Bᵀ."""
    d = [_slice(value, axis, i, tiles, 2, loc) for i in range(4)]
    return [build(ops.ADD if sign > 0 else ops.SUB, [d[i], d[j]], loc=loc)
            for i, sign, j in B_ROWS]


def _a_transform(m: list[ir.Value], loc: ir.Location) -> list[ir.Value]:
    """Aᵀ of 4 values: [m0 + m1 + m2, m1 - m2 - m3]."""
    first = build(ops.ADD, [build(ops.ADD, [m[0], m[1]], loc=loc), m[2]], loc=loc)
    second = build(ops.SUB, [build(ops.SUB, [m[1], m[2]], loc=loc), m[3]], loc=loc)
    return [first, second]


def _concat(values: list[ir.Value], axis: int, loc: ir.Location) -> ir.Value:
    result = values[0]
    for value in values[1:]:
        result = build(CONCAT, [result, value], {"axis": axis}, loc=loc)
    return result


def _reshape(value: ir.Value, shape: list[int], loc: ir.Location) -> ir.Value:
    return build(ops.RESHAPE, [value], {"shape": shape}, loc=loc)


def winograd(op: ir.OpView) -> ir.Value:
    """The F(2x2, 3x3) form of conv_nhwc `op` (`applies`), its result's replacement."""
    x, w = op.operands[0], op.operands[1]
    loc = op.location
    n, h, wd, c = x.type.shape
    _, oh, ow, f = op.results[0].type.shape
    top, left = attributes(op)["pads"][:2]
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    hp, wp = 2 * th + 2, 2 * tw + 2
    pads = [0, top, left, 0, 0, hp - h - top, wp - wd - left, 0]
    xp = build(PAD, [x], {"mode": "constant", "pads": pads}, loc=loc) if any(pads) else x
    # V: Bᵀ along the rows, then along the columns of each; [16 N, th, tw, C] in (k, l) order
    v = [vk for rows in _b_transform(xp, 1, th, loc) for vk in _b_transform(rows, 2, tw, loc)]
    tiles = n * th * tw
    v = _reshape(_concat(v, 0, loc), [16, tiles, c], loc)
    u = constant(filter_transform(constant_array(w)), x.type.element_type, loc)
    m = build(ops.MATMUL, [v, u], loc=loc)  # [16, T, F]
    # Aᵀ M A: the products viewed [16, N, th, 1, tw, 1, F], the outputs of a tile interleaved
    # by concats along the unit axes: [N, th, 2, tw, 2, F] is [N, 2 th, 2 tw, F]
    m = _reshape(m, [16, n, th, 1, tw, 1, f], loc)
    parts = [_reshape(_slice(m, 0, i, 1, 1, loc), [n, th, 1, tw, 1, f], loc) for i in range(16)]
    by_column = [_a_transform(parts[4 * k:4 * k + 4], loc) for k in range(4)]  # [k][b]
    rows = []
    for a_values in zip(*[_a_transform([by_column[k][b] for k in range(4)], loc)
                          for b in range(2)], strict=True):  # a_values[b]: Y[a, b]
        rows.append(_concat(list(a_values), 4, loc))
    y = _reshape(_concat(rows, 2, loc), [n, 2 * th, 2 * tw, f], loc)
    if (2 * th, 2 * tw) != (oh, ow):
        y = build(SLICE, [y], {"starts": [0, 0, 0, 0], "sizes": [n, oh, ow, f],
                               "steps": [1, 1, 1, 1]}, loc=loc)
    if len(op.operands) > 2:
        y = build(ops.ADD, [y, op.operands[2]], loc=loc)
    return y


@register
@dataclass(frozen=True)
class Winograd(ModulePass):
    """3x3 stride-1 convs with a constant filter as Winograd F(2x2, 3x3) (see the module doc)."""

    name = "dlc-winograd"
    min_tiles: int = MIN_TILES  # N * ceil(OH/2) * ceil(OW/2) of a conv rewritten
    min_channels: int = MIN_CHANNELS  # its input and output channels
    min_macs: int = MIN_MACS  # its direct multiply-adds

    def run(self, module: ir.Operation) -> None:
        def rule(op: ir.OpView) -> list[ir.Value] | None:
            if not applies(op, self.min_tiles, self.min_channels, self.min_macs):
                return None
            return [winograd(op)]

        apply_rules(module, {CONV_NHWC: [rule]})
