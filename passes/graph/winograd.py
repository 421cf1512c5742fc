"""dlc-winograd: 3x3 convolutions as Winograd F(m x m, 3x3), m = 4 or 2: (m + 2)² multiplies an
m x m output tile per channel pair instead of 9 m², 4x (m = 4) or 2.25x (m = 2) fewer
multiply-adds.

    conv_nhwc(x, W, b)  (3x3, stride 1, dilation 1, group 1, W constant); a = m + 2
      -> xp = pad(x) to [N, m th + 2, m tw + 2, C]         (th x tw tiles of m x m outputs)
         D[i] = xp[:, i::m] (i < a), stacked                [a, N, th, Wp, C]
         R = Bᵀ D                                           [a(k), N th, Wp, C]
         E[j] = R[:, :, j::m] (j < a), stacked; V = Bᵀ E    [a(l), a(k), T, C]
         M = matmul(V [a², T, C], U [a², C, F])             (U = G W Gᵀ, at compile time)
         Y = Aᵀ (Aᵀ M over k) over l                         [m(b), m(a), N, th, tw, F]
         y = transpose(Y) as [N, m th, m tw, F][:, :OH, :OW] + b

with T = N th tw tiles and, for F(2x2, 3x3), Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],
[0,1,0,-1]], G = [[1,0,0],[1/2,1/2,1/2],[1/2,-1/2,1/2],[0,0,1]], Aᵀ = [[1,1,1,0],[0,1,-1,-1]];
for F(4x4, 3x3) the 6 x 6, 6 x 3 and 4 x 6 matrices of the points 0, ±1, ±2 (`TRANSFORMS`;
Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015). Everything is
built from dlc ops that the rest of the pipeline already schedules: the strided slices stacked
by concats (written in place), the transforms as products by Bᵀ and Aᵀ (K = a: as much memory
traffic as adds, and each transform one op), the a² products one batch matmul (`num_threads`
> 1 splits its batch), one transpose that keeps the channels innermost.

F(4x4, 3x3) is taken where the conv has `min_tiles` tiles of 4 x 4, F(2x2, 3x3) where it has
them of 2 x 2 only (`max_tile` = 2: always F(2x2)). Rounding: F(2x2)'s transforms round like
2 to 4 extra adds a value, within the direct conv's error (relative to the largest output,
3e-7 to 6e-7 against 6e-7 to 1.1e-6 for the direct f32 conv, 64 and 256 channels); F(4x4)'s
multiply by up to 8 and round about 10x more (5e-6 to 8e-6 a layer); at a model's output
ResNet-50's error against onnxruntime stays 1.0e-6 (both). `$DLC_WINOGRAD=2` keeps F(2x2, 3x3).
Non-finite inputs: the transforms mix a tile's inputs, so an inf or NaN input makes every
output of the tiles it reaches non-finite (inf - inf), where the direct conv keeps those outside
its 3x3 window finite (a 28x28x128 conv with one inf input: 2048 non-finite outputs against the
direct conv's and onnxruntime's 597), as cuDNN's and NNPACK's Winograd convs do;
`$DLC_WINOGRAD=0` computes every conv directly.
Same process, 1 thread, F(4x4) where it applies / F(2x2) everywhere: ResNet-18 0.88,
ResNet-50 0.97-0.98, ResNet-26-D 0.97-0.98; its 56x56x64 conv alone (winograd part) about
0.6x the F(2x2) one.

Onnxruntime's CPU convs (MLAS: im2col or NCHWc direct) do not use Winograd: on one core dlc's
direct NHWC conv is at its peak, so this is where dlc goes past it. Measured alone (single
thread, AMD EPYC Zen 4, conv + bias + relu, dlc winograd / dlc direct): 56x56x64 -> 64 0.68,
28x28x128 -> 128 0.59, 14x14x256 -> 256 0.54, 7x7x512 -> 512 1.30. The 7x7 layer has 16 tiles:
U (16 C F weights, 1.8x the filter) is read for 16 rows of each matmul and the products are too
thin to hide it, so a conv needs `min_tiles` tiles (default 36, of 2x2 for F(2x2), of 4x4 for
F(4x4)), `min_channels` input and
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
from dlc.dialects.movement import PAD, SLICE
from dlc.passes.graph.match import (
    apply_rules,
    attributes,
    concatenated,
    constant,
    constant_array,
)
from dlc.passes.registry import ModulePass, PipelineError, register

G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
MIN_TILES = 36
MIN_CHANNELS = 64
# a conv's direct multiply-adds (N OH OW F C 9): each rewritten conv adds ~35 dlc ops to compile
MIN_MACS = 1 << 24
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])
# F(4x4, 3x3), interpolation points 0, 1, -1, 2, -2 (Lavin and Gray)
BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]])
G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                [0, 1, -1, 8, -8, 1]])
# output tile m -> (Bᵀ [a, a], G [a, 3], Aᵀ [m, a]), a = m + 2 the input tile
TRANSFORMS = {2: (BT, G, AT), 4: (BT4, G4, AT4)}
MAX_TILE = 4


def filter_transform(w: np.ndarray, m: int = 2) -> np.ndarray:
    """U [a², C, F] = G W Gᵀ of each (c, f) of the HWCF filter W [3, 3, C, F] (in f64), for
    F(m x m, 3x3) (a = m + 2)."""
    g = TRANSFORMS[m][1]
    u = np.einsum("ai,ijcf,bj->abcf", g, w.astype(np.float64), g)
    return u.reshape(len(g) ** 2, w.shape[2], w.shape[3]).astype(w.dtype)


def tiles(op: ir.OpView, m: int) -> int:
    """N ceil(OH/m) ceil(OW/m): the m x m output tiles of conv `op`."""
    n, oh, ow, _ = op.results[0].type.shape
    return n * -(-oh // m) * -(-ow // m)


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
    if tiles(op, 2) < min_tiles or n * oh * ow * f * c * 9 < min_macs:
        return False
    filt = constant_array(w)
    return filt is not None and not np.array_equal(filt, np.round(filt))


def _slice(value: ir.Value, axis: int, start: int, size: int, step: int,
           loc: ir.Location) -> ir.Value:
    shape = list(value.type.shape)
    starts, sizes, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], sizes[axis], steps[axis] = start, size, step
    return build(SLICE, [value], {"starts": starts, "sizes": sizes, "steps": steps}, loc=loc)


def _reshape(value: ir.Value, shape: list[int], loc: ir.Location) -> ir.Value:
    return build(ops.RESHAPE, [value], {"shape": shape}, loc=loc)


def _stacked_slices(value: ir.Value, axis: int, count: int, a: int, m: int,
                    loc: ir.Location) -> ir.Value:
    """[a, *value.shape with `count` at `axis`]: the strided slices value[i::m] (`count`
    each) for i < a, stacked on a new leading axis."""
    parts = []
    for i in range(a):
        part = _slice(value, axis, i, count, m, loc)
        parts.append(_reshape(part, [1, *part.type.shape], loc))
    return concatenated(parts, 0, loc)


def winograd(op: ir.OpView, m: int = 2) -> ir.Value:
    """The F(m x m, 3x3) form of conv_nhwc `op` (`applies`; m = 2 or 4), its result's
    replacement."""
    bt_m, _, at_m = TRANSFORMS[m]
    a = m + 2
    x, w = op.operands[0], op.operands[1]
    loc = op.location
    element = x.type.element_type
    n, h, wd, c = x.type.shape
    _, oh, ow, f = op.results[0].type.shape
    top, left = attributes(op)["pads"][:2]
    th, tw = -(-oh // m), -(-ow // m)
    hp, wp = m * th + 2, m * tw + 2
    pads = [0, top, left, 0, 0, hp - h - top, wp - wd - left, 0]
    xp = build(PAD, [x], {"mode": "constant", "pads": pads}, loc=loc) if any(pads) else x
    bt = constant(bt_m.astype(np.float32), element, loc)
    at = constant(at_m.astype(np.float32), element, loc)
    count = n * th * tw
    # rows: D[i] = xp[:, i::m], R[k] = sum_i Bᵀ[k, i] D[i]: [a(k), N, th, Wp, C]
    d = _reshape(_stacked_slices(xp, 1, th, a, m, loc), [a, n * th * wp * c], loc)
    r = _reshape(build(ops.MATMUL, [bt, d], loc=loc), [a * n * th, wp, c], loc)
    # columns: E[j] = R[..., j::m, :], V[l, k] = sum_j Bᵀ[l, j] E[j]: [a(l), a(k), T, C]
    e = _reshape(_stacked_slices(r, 1, tw, a, m, loc), [a, a * count * c], loc)
    v = _reshape(build(ops.MATMUL, [bt, e], loc=loc), [a * a, count, c], loc)
    u = filter_transform(constant_array(w), m).reshape(a, a, c, f).transpose(1, 0, 2, 3)
    u = constant(np.ascontiguousarray(u.reshape(a * a, c, f)), element, loc)
    product = build(ops.MATMUL, [v, u], loc=loc)  # [a² (l, k), T, F]
    # Aᵀ over k (per l), then over l: [m(b), m(a), N, th, tw, F]. (The first Aᵀ as an
    # [a, m, a] constant: a broadcast [m, a] left its elements to naive loops, which showed
    # every rewritten conv as `naive` in the profile.)
    at3 = constant(np.broadcast_to(at_m, (a, m, a)).astype(np.float32), element, loc)
    y = build(ops.MATMUL, [at3, _reshape(product, [a, a, count * f], loc)], loc=loc)
    y = build(ops.MATMUL, [at, _reshape(y, [a, m * count * f], loc)], loc=loc)
    y = _reshape(y, [m, m, n, th, tw, f], loc)
    y = build(ops.TRANSPOSE, [y], {"perm": [2, 3, 1, 4, 0, 5]}, loc=loc)
    y = _reshape(y, [n, m * th, m * tw, f], loc)
    if (m * th, m * tw) != (oh, ow):
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
    max_tile: int = MAX_TILE  # 4: F(4x4, 3x3) where it has min_tiles tiles; 2: F(2x2) only

    def __post_init__(self) -> None:
        if self.max_tile not in TRANSFORMS:
            raise PipelineError(f"pass 'dlc-winograd': max-tile must be 2 or 4, got "
                                f"{self.max_tile}")

    def run(self, module: ir.Operation) -> None:
        def rule(op: ir.OpView) -> list[ir.Value] | None:
            if not applies(op, self.min_tiles, self.min_channels, self.min_macs):
                return None
            m = 4 if self.max_tile == 4 and tiles(op, 4) >= self.min_tiles else 2
            return [winograd(op, m)]

        apply_rules(module, {CONV_NHWC: [rule]})
