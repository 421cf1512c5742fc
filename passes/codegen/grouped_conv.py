"""The grouped 2-D convolution schedule: `linalg.conv_2d_nhwgc_gfhwc` (1 < groups < channels),
static f32 with a constant filter, data-tiled at compile time.

dlc-convert-layout makes a grouped conv of more than 16 groups one `dlc.conv_nhwc` with its
`group` (fewer groups become one conv per group), which dlc-to-linalg lowers to
`linalg.conv_2d_nhwgc_gfhwc` on the input and output viewed as [N, H, W, G, C/G] (free: NHWC's
bytes) and the filter as [G, F, KH, KW, C/G] (F: output channels per group, C: input channels
per group). No named-op schedule vectorizes that op (RegNetY-400MF's 3x3 convs of 8 channels
per group ran as naive loops: ~40 % of the model's time).

`prepare` rewrites it into a `linalg.generic` over (n, oh, ow, g, f, c) whose kernel taps are
unrolled into its body: one input per tap t = (kh, kw), the strided view
x[n, oh * s + kh * d, ow * s + kw * d, g, c] (a `tensor.extract_slice` with strides: no copy, and
any stride or dilation takes the same path), and one filter input per tap, P[g, c, t, f] of a
filter packed [G][C][KH*KW][F] at compile time (the T filter vectors one input channel needs are
adjacent); the body is a chain of `math.fma`, acc += x_t * P_t for each tap. The output keeps the
[N, OH, OW, G, F] view, the vectorized dimension is f (the output channels of a group), and the
accumulator's init (bias) and the elementwise epilogue (activation), which
linalg-fuse-elementwise-ops already rewrote on that 5-D view, are fused as `fusion.py` does for
the other contractions.

Schedule (`lines`): an `scf.forall` of [1, oh, OW, g, F] output tiles (`outer`); inside, register
tiles [1, 1, ow, 1, F] over (n, oh, ow, g) with the group loop outermost (a group's filter stays
in L1 while every output position uses it), the input channels of the group by 1, the unit dims
folded away (an [ow, F] generic is left: one broadcast of x and one filter vector per tap, ow x
F/8 FMAs) and vectorized, the accumulator hoisted out of the channel loop. Where the forall is
built greedily (`fusion_plan.fuses_exactly`) the init and the epilogue are fused into the
register tiles too (`fusion.register_fused_lines`: one store per tile).

Tile heuristic (the target CPU's, `target.py`): ow = the widest divisor of OW up to
`accumulators / ceil(F / lanes)` (12 on AVX2 for 8 channels per group, 6 for 16), and on AVX-512 up
to OW_FULL_VECTORS = 4 where F fills whole vectors (the taps' broadcasts spill), other than F
(equal inner tiles hit the LLVM 22 miscompile, PERF.md); where that is narrower than 4, OW is
tiled by the widest such width and its last, partial tile peeled (`fusion.register_fused_lines`)
or split off. Never masked. F is one register tile up to accumulators / 2 vectors (an ow tile
of at least 2); a wider F (RegNetY-8GF's 56 per group) is tiled by the widest of the target's
conv widths dividing it (AVX2: 16 or 8; `f_tile`), its init and epilogue then fused into the
forall only; an F no width divides keeps the naive path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from dlc.passes.blocked_copy import contiguous
from dlc.passes.codegen import elementwise_lines, fusion, target
from dlc.passes.codegen.predicates import constant_filter, window
from dlc.passes.codegen.script import ANY, Lines, split, tile, vectorize_each

NAMED = "linalg.conv_2d_nhwgc_gfhwc"
TAG = "dlc.grouped_conv"  # marks the packed generic (and its tiles) for the script
OUTER_BYTES = 64 * 1024  # the output tile of one forall iteration
MIN_TILES = 4  # forall tiles wanted, for the threads
OW_MIN = 4  # narrower divisors of OW than this split OW (or peel its last tile)
# the widest OW register tile where F fills whole vectors: the body holds every tap's
# broadcasts of x at once (KH KW of them, unrolled), so a wide tile spills. AVX-512 took 14
# (14 accumulators of one vector, F = 16): ResNeXt-50's 3x3 convs of 16 channels per group,
# 14 x 14, 0.72 -> 0.40 ms (onnxruntime 0.36), stride 2 1.47 -> 0.56; the model 0.975x its
# time; F = 8 (half a vector: RegNetY) keeps its wide tiles (capped: 1.09x slower). AVX-512
# only: AVX2's 12 accumulators already bound the tile (ow 6 for F = 16) and were not re-measured
OW_FULL_VECTORS = 4


@dataclass(frozen=True)
class Grouped:
    n: int
    oh: int
    ow: int
    g: int
    f: int  # output channels per group (the vectorized dimension)
    c: int  # input channels per group
    kh: int
    kw: int
    epilogue: bool = False  # an elementwise consumer fused into the outer tiles
    init: bool = False  # the accumulator's fill / bias broadcast fused into the outer tiles
    greedy: bool = False  # one transform builds the forall (fusion_plan.fuses_exactly)


def _vectors(f: int) -> int:
    """Vector registers one output position's F channels take."""
    return -(-f // target.current().lanes)


def f_tile(f: int) -> int:
    """The register tile of a group's F output channels: all of them where they take at most
    half the accumulators (an ow tile of 2 or more), else the widest of the target's conv
    widths dividing F (AVX2: 16 or 8); 0: none (not matched)."""
    if 2 * _vectors(f) <= target.current().conv_accumulators:
        return f
    return next((w for w in target.current().conv_widths if f % w == 0), 0)


def match(op: ir.Operation) -> Grouped | None:
    if op.name != NAMED or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if any(str(t.element_type) != "f32" for t in types) or 0 in types[2].shape:
        return None
    if constant_filter(op) is None or not f_tile(types[2].shape[4]):
        return None
    y, w = list(types[2].shape), list(types[1].shape)
    epilogue = fusion.epilogue(op)
    return Grouped(y[0], y[1], y[2], y[3], y[4], w[4], w[2], w[3],
                   epilogue is not None and _claims(op, epilogue),
                   fusion.init_producer(op) is not None)


def _claims(op: ir.Operation, epilogue: ir.Operation) -> bool:
    """Whether `op` fuses its epilogue: no other operand of it comes from a contraction (a
    residual add of two convs: the other one fuses it, `fusion.epilogue`)."""
    for operand in epilogue.operands:
        owner = operand.owner
        if operand == op.results[0] or not isinstance(owner, ir.Operation | ir.OpView):
            continue
        if fusion.is_contraction(owner) or owner.name == NAMED or TAG in owner.attributes:
            return False
    return True


def volume(problem: Grouped) -> int:
    p = problem
    return p.n * p.oh * p.ow * p.g * p.f * p.c * p.kh * p.kw


# ----------------------------------------------------------------------------- the rewrite


def _packed_filter(attr: ir.DenseElementsAttr, shape: list[int]) -> ir.Value:
    """The [G, F, KH, KW, C] filter as a constant [G, C, KH*KW, F]."""
    g, f, kh, kw, c = shape
    packed_type = ir.RankedTensorType.get([g, c, kh * kw, f], ir.F32Type.get())
    if attr.is_splat:
        packed = ir.DenseElementsAttr.get_splat(packed_type, attr.get_splat_value())
    else:
        array = np.asarray(attr).transpose(0, 4, 2, 3, 1).reshape(g, c, kh * kw, f)
        packed = ir.DenseElementsAttr.get(contiguous(array))
    return arith.ConstantOp(packed_type, packed).result


def _slice(source: ir.Value, offsets: list[int], sizes: list[int], strides: list[int],
           shape: list[int]) -> ir.Value:
    result = ir.RankedTensorType.get(shape, ir.F32Type.get())
    return tensor.ExtractSliceOp(result, source, [], [], [], offsets, sizes, strides).result


def prepare(op: ir.Operation) -> ir.Operation:
    """conv_2d_nhwgc_gfhwc(x, W, acc) -> generic(x_t..., P_t..., acc) (see the docstring)."""
    x, weight, acc = op.operands
    g, f, kh, kw, c = weight.type.shape
    n, oh, ow = acc.type.shape[:3]
    sh, sw = window(op, "strides")
    dh, dw = window(op, "dilations")
    taps = [(i, j) for i in range(kh) for j in range(kw)]
    with ir.InsertionPoint(op), op.location:
        packed = _packed_filter(ir.DenseElementsAttr(constant_filter(op)), [g, f, kh, kw, c])
        views = [_slice(x, [0, i * dh, j * dw, 0, 0], [n, oh, ow, g, c], [1, sh, sw, 1, 1],
                        [n, oh, ow, g, c]) for i, j in taps]
        filters = [_slice(packed, [0, 0, t, 0], [g, c, 1, f], [1, 1, 1, 1], [g, c, f])
                   for t in range(len(taps))]
        d = [ir.AffineDimExpr.get(i) for i in range(6)]  # n, oh, ow, g, f, c
        maps = ([ir.AffineMap.get(6, 0, [d[0], d[1], d[2], d[3], d[5]])] * len(taps)
                + [ir.AffineMap.get(6, 0, [d[3], d[5], d[4]])] * len(taps)
                + [ir.AffineMap.get(6, 0, d[:5])])
        generic = _fma_generic(views + filters + [acc], maps)
    op.results[0].replace_all_uses_with(generic.results[0])
    op.erase()
    return generic


def _fma_generic(operands: list[ir.Value], affine_maps: list[ir.AffineMap]) -> ir.Operation:
    """generic(x_0..x_T-1, w_0..w_T-1, acc): acc = fma(x_T-1, w_T-1, ... fma(x_0, w_0, acc))."""
    acc = operands[-1]
    taps = (len(operands) - 1) // 2
    generic = ir.Operation.create(
        "linalg.generic", results=[acc.type], operands=operands,
        attributes={
            "indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in affine_maps]),
            "iterator_types": ir.ArrayAttr.get(
                [ir.Attribute.parse(f"#linalg.iterator_type<{kind}>")
                 for kind in ["parallel"] * 5 + ["reduction"]]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(operands) - 1, 1]),
            TAG: ir.UnitAttr.get(),
        }, regions=1)
    element = acc.type.element_type
    block = generic.regions[0].blocks.append(*[element] * len(operands))
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        total = args[-1]
        for t in range(taps):
            total = math.FmaOp(args[t], args[taps + t], total).result
        linalg.YieldOp([total])
    return generic


# ----------------------------------------------------------------------------- the schedule


def ow_register(problem: Grouped) -> tuple[int, bool]:
    """The register tile of OW and whether OW's last tile is partial (peeled or split off)."""
    f = f_tile(problem.f)
    widest = min(problem.ow, target.current().conv_accumulators // _vectors(f))
    if f >= target.current().lanes >= 16:  # (measured on AVX-512; AVX2's tiles as they were)
        widest = min(widest, OW_FULL_VECTORS)
    divisors = [d for d in range(1, widest + 1) if problem.ow % d == 0 and d != f]
    best = max(divisors, default=1)
    if best >= min(OW_MIN, problem.ow):
        return best, False
    # the widest tile leaving a last tile of 2 or more (a peeled tile of one position, its
    # unit dims folded apart from the init's, was written into a fresh buffer and copied:
    # EfficientViT's 7 x 7 with 16 channels per group, 6 + 1 -> 5 + 2)
    width = next((w for w in range(widest, 1, -1)
                  if w != f and problem.ow % w not in (1, f)), widest)
    return width, problem.ow % width != 0


def outer(problem: Grouped) -> fusion.Outer:
    """[1, oh, OW, g, F] forall tiles: all groups and the most rows dividing OH within
    OUTER_BYTES; fewer groups while that leaves fewer than MIN_TILES tiles."""
    p = problem
    rows = [d for d in range(1, p.oh + 1) if p.oh % d == 0 and d * p.ow * p.g * p.f * 4
            <= OUTER_BYTES]
    oh = rows[-1] if rows else 1
    g = p.g
    if p.oh // oh < MIN_TILES:
        wanted = -(-MIN_TILES // (p.oh // oh))
        g = max((d for d in range(1, p.g + 1) if p.g % d == 0 and p.g // d >= wanted),
                default=1)
    return fusion.Outer([1, oh, 0, g, 0, 0], [1, oh, 0, g, 0], (1, oh, p.ow, g, p.f),
                        p.epilogue, p.init, p.greedy, f"attributes {{{TAG}}}")


def lines(handle: str, problem: Grouped, prefix: str) -> Lines:
    tiles = outer(problem)
    ow, peel = ow_register(problem)
    if tiles.greedy and (tiles.epilogue or tiles.init) and f_tile(problem.f) == problem.f:
        return fusion.register_fused_lines(handle, tiles, [1, 1, ow, 1, 0], 1,
                                           f"attributes {{{TAG}}}", _kernel_lines, prefix, peel)
    return _forall_lines(handle, tiles, problem, prefix)


def _forall_lines(handle: str, outer: fusion.Outer, problem: Grouped, prefix: str) -> Lines:
    """The forall of output tiles with the epilogue and init fused by
    `fuse_into_containing_op` (as `fusion.forall_lines`, the accumulator being the last of the
    generic's 2 KH KW + 1 operands), the conv tile's register tiles inside."""
    forall, tiled, init = f"%{prefix}_forall", f"%{prefix}_tile", f"%{prefix}_init"
    ops: list[str] = []
    if outer.init:
        acc = 2 * problem.kh * problem.kw
        ops.append(f"{init} = transform.get_producer_of_operand {handle}[{acc}] "
                   f": ({ANY}) -> {ANY}")
    sizes = ", ".join(map(str, outer.epilogue_sizes if outer.epilogue
                          else outer.contraction_sizes))
    if outer.epilogue:
        ops += [(f"%{prefix}_ep = transform.get_consumers_of_result {handle}[0] "
                 f": ({ANY}) -> {ANY}"),
                (f"%{prefix}_eptile, {forall}0 = transform.structured.tile_using_forall "
                 f"%{prefix}_ep tile_sizes [{sizes}] : ({ANY}) -> ({ANY}, {ANY})"),
                (f"{tiled}, {forall} = transform.structured.fuse_into_containing_op "
                 f"{handle} into {forall}0 : ({ANY}, {ANY}) -> ({ANY}, {ANY})")]
    else:
        ops.append(f"{tiled}, {forall} = transform.structured.tile_using_forall {handle} "
                   f"tile_sizes [{sizes}] : ({ANY}) -> ({ANY}, {ANY})")
    if outer.init:
        ops.append(f"{init}tile, {forall}1 = transform.structured.fuse_into_containing_op "
                   f"{init} into {forall} : ({ANY}, {ANY}) -> ({ANY}, {ANY})")
    result = Lines(ops)
    result += tile_lines(tiled, problem, f"{prefix}t")
    if outer.init:
        result += elementwise_lines.tile_lines(f"{init}tile", outer.tile_shape, f"{prefix}i")
    if outer.epilogue:
        result += elementwise_lines.tile_lines(f"%{prefix}_eptile", outer.tile_shape,
                                               f"{prefix}e")
    return result


def tile_lines(handle: str, problem: Grouped, prefix: str) -> Lines:
    """An output tile: OW split where its last register tile is partial, then register tiles
    [1, 1, ow, 1, F] with the group loop outermost, `_kernel_lines` inside."""
    ow, partial = ow_register(problem)
    ops: list[str] = []
    parts = [(handle, ow)]
    if partial:
        more, low, high = split(handle, 2, problem.ow - problem.ow % ow, f"{prefix}w")
        ops += more
        parts = [(low, ow), (high, problem.ow % ow)]
    result = Lines(ops)
    for j, (part, width) in enumerate(parts):
        f = f_tile(problem.f)
        more, registers, _ = tile(part, [1, 1, width, 1, 0 if f == problem.f else f, 0],
                                  f"{prefix}o{j}", [3, 4, 0, 1, 2, 5])
        kernel, loops = _kernel_lines(registers, f"{prefix}k{j}")
        result += Lines(more + kernel, list(reversed(loops)))
    return result


def _kernel_lines(handle: str, prefix: str) -> tuple[list[str], list[str]]:
    """A register tile: the input channels by 1, the unit dims folded away (an [ow, F] generic
    of FMAs is left) and vectorized; the ops and the channel loop's handle."""
    ops, _, loops = tile(handle, [0, 0, 0, 0, 0, 1], prefix)
    ops += vectorize_each(loops[-1], prefix)
    return ops, loops
