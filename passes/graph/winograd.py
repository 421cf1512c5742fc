"""dlc-winograd: 3x3 convolutions as Winograd F(2x2, 3x3): 16 multiplies a 2x2 output tile
per channel pair instead of 36, 2.25x fewer multiply-adds.

    conv_nhwc(x, W, b)  (3x3, stride 1, dilation 1, group 1, W constant)
      -> xp = pad(x) to [N, 2th + 2, 2tw + 2, C]           (th x tw tiles of 2x2 outputs)
         D[i] = xp[:, i::2] (i < 4), stacked                [4, N, th, Wp, C]
         R = Bᵀ D                                           [4(k), N th, Wp, C]
         E[j] = R[:, :, j::2] (j < 4), stacked; V = Bᵀ E    [4(l), 4(k), T, C]
         M = matmul(V [16, T, C], U [16, C, F])             (U = G W Gᵀ, at compile time)
         Y = Aᵀ (Aᵀ M over k) over l                         [2(b), 2(a), N, th, tw, F]
         y = transpose(Y) as [N, 2th, 2tw, F][:, :OH, :OW] + b

with T = N th tw tiles, Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]], G = [[1,0,0],
[1/2,1/2,1/2],[1/2,-1/2,1/2],[0,0,1]], Aᵀ = [[1,1,1,0],[0,1,-1,-1]] (Lavin and Gray, "Fast
Algorithms for Convolutional Neural Networks", 2015). Everything is built from dlc ops that the
rest of the pipeline already schedules: the strided slices stacked by concats (written in
place), the transforms as products by the 4 x 4 Bᵀ and the 2 x 4 Aᵀ (K = 4: as much memory
traffic as adds, and each transform one op), the 16 products one batch matmul (`num_threads`
> 1 splits its batch), one transpose that keeps the channels innermost. F(2x2, 3x3)'s
transforms round like 2 to 4 extra adds a value (F(4x4, 3x3) saves 4x but loses digits).

Onnxruntime's CPU convs (MLAS: im2col or NCHWc direct) do not use Winograd: on one core dlc's
direct NHWC conv is at its peak, so this is where dlc goes past it. Measured alone (single
thread, AMD EPYC Zen 4, conv + bias + relu, dlc winograd / dlc direct): 56x56x64 -> 64 0.68,
28x28x128 -> 128 0.59, 14x14x256 -> 256 0.54, 7x7x512 -> 512 1.30. The 7x7 layer has 16 tiles:
U (16 C F weights, 1.8x the filter) is read for 16 rows of each matmul and the products are too
thin to hide it, so a conv needs `min_tiles` tiles (default 36), `min_channels` input and
output channels (default 64: K and N of the matmuls; the transforms' cost grows with C + F,
the savings with C F) and `min_macs` direct multiply-adds (default 2^24) to be rewritten.

Compile time is the price: a first form of the transforms as adds on 16 strided slices (and 15
concats, ~130 dlc ops a conv) made upstream eliminate-empty-tensors and one-shot-bufferize,
which grow faster than the function, take DenseNet-121's compile (its 42 growth convs, 128 ->
32 channels) from 5.9 to 27.8 s for 0.98x its time, and ResNet-50's from 2.9 to 7.3 s; this
form (~35 ops a conv) compiles ResNet-50 in 4.8 s, at the same speed (same process, 1 thread,
this form / the first: ResNet-50 1.00, ResNet-18 0.97-0.99). DenseNet's growth convs are left
direct (`min_channels`). Skipped too: a filter of integer values (a quantized conv's, which
`codegen/int8_*` computes exactly in integers; U of halves would lose that), other types than
f32, and non-constant filters.
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
MIN_TILES = 36
MIN_CHANNELS = 64
# a conv's direct multiply-adds (N OH OW F C 9): each rewritten conv adds ~35 dlc ops to compile
MIN_MACS = 1 << 24
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])


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


def _concat(values: list[ir.Value], axis: int, loc: ir.Location) -> ir.Value:
    result = values[0]
    for value in values[1:]:
        result = build(CONCAT, [result, value], {"axis": axis}, loc=loc)
    return result


def _reshape(value: ir.Value, shape: list[int], loc: ir.Location) -> ir.Value:
    return build(ops.RESHAPE, [value], {"shape": shape}, loc=loc)


def _stacked_slices(value: ir.Value, axis: int, tiles: int, loc: ir.Location) -> ir.Value:
    """[4, *value.shape with `tiles` at `axis`]: the strided slices value[i::2] (tiles each)
    for i < 4, stacked on a new leading axis."""
    parts = []
    for i in range(4):
        part = _slice(value, axis, i, tiles, 2, loc)
        parts.append(_reshape(part, [1, *part.type.shape], loc))
    return _concat(parts, 0, loc)


def winograd(op: ir.OpView) -> ir.Value:
    """The F(2x2, 3x3) form of conv_nhwc `op` (`applies`), its result's replacement."""
    x, w = op.operands[0], op.operands[1]
    loc = op.location
    element = x.type.element_type
    n, h, wd, c = x.type.shape
    _, oh, ow, f = op.results[0].type.shape
    top, left = attributes(op)["pads"][:2]
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    hp, wp = 2 * th + 2, 2 * tw + 2
    pads = [0, top, left, 0, 0, hp - h - top, wp - wd - left, 0]
    xp = build(PAD, [x], {"mode": "constant", "pads": pads}, loc=loc) if any(pads) else x
    bt = constant(BT.astype(np.float32), element, loc)
    at = constant(AT.astype(np.float32), element, loc)
    tiles = n * th * tw
    # rows: D[i] = xp[:, i::2], R[k] = sum_i Bᵀ[k, i] D[i]: [4(k), N, th, Wp, C]
    d = _reshape(_stacked_slices(xp, 1, th, loc), [4, n * th * wp * c], loc)
    r = _reshape(build(ops.MATMUL, [bt, d], loc=loc), [4 * n * th, wp, c], loc)
    # columns: E[j] = R[..., j::2, :], V[l, k] = sum_j Bᵀ[l, j] E[j]: [4(l), 4(k), T, C]
    e = _reshape(_stacked_slices(r, 1, tw, loc), [4, 4 * tiles * c], loc)
    v = _reshape(build(ops.MATMUL, [bt, e], loc=loc), [16, tiles, c], loc)
    u = filter_transform(constant_array(w)).reshape(4, 4, c, f).transpose(1, 0, 2, 3)
    u = constant(np.ascontiguousarray(u.reshape(16, c, f)), element, loc)
    m = build(ops.MATMUL, [v, u], loc=loc)  # [16 (l, k), T, F]
    # Aᵀ over k (per l), then over l: [2(b), 2(a), N, th, tw, F]
    # (the first Aᵀ as a [4, 2, 4] constant: a broadcast [2, 4] left 32 elements to naive
    # loops, which showed every rewritten conv as `naive` in the profile)
    at4 = constant(np.broadcast_to(AT, (4, 2, 4)).astype(np.float32), element, loc)
    y = build(ops.MATMUL, [at4, _reshape(m, [4, 4, tiles * f], loc)], loc=loc)
    y = build(ops.MATMUL, [at, _reshape(y, [4, 2 * tiles * f], loc)], loc=loc)
    y = _reshape(y, [2, 2, n, th, tw, f], loc)
    y = build(ops.TRANSPOSE, [y], {"perm": [2, 3, 1, 4, 0, 5]}, loc=loc)
    y = _reshape(y, [n, 2 * th, 2 * tw, f], loc)
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
