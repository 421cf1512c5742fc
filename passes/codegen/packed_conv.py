"""Data tiling of convolutions: the filter packed per block of 32 output channels (16 where 32
does not divide F: MobileNetV2's 144, SqueezeNet's 16 and 48; always 16 on AVX2, `blocks`; "32"
below stands for the block).

An NHWC convolution reads its HWCF filter in rows F*4 bytes apart (one row per kh, kw, c):
with F = 512-2048 every row of a register tile's filter slice is on its own page and the
rows of a C block fall in a few L1 sets, so the filter, streamed from L3/DRAM once per call
(ResNet-50's deep layers hold 2-9 MiB of filter each), arrives by demand misses the hardware
prefetcher does not follow. Packed as P[F/32][KH][KW][C][32] (at compile time: the filter is a
constant), the filter slice each register tile reads is one sequential stream (a C program
with this loop nest: 1x1 512 -> 2048 on 7x7, 55-85 GFLOP/s from HWCF, 115 from P).

`pack` rewrites `linalg.conv_2d_nhwc_hwcf(x, W, acc)` into a `linalg.generic` over
(n, oh, ow, fo, fi, kh, kw, c) reading x and P and writing the output viewed as
[N][OH][OW][F/32][32] (a `tensor.expand_shape` of NHWC: the same bytes), then collapsed back
to NHWC for its users. The accumulator's producer (fill, bias broadcast) and the elementwise
epilogue (bias, activation, residual add) are rebuilt in the same 5-D shape, so that
`fusion.py` fuses them into the forall exactly as for the named conv. A 1x1 convolution with
strides reads a strided slice of its input (a view, no copy) and is packed with stride 1.

Schedule (`lines`): the forall of `conv_common.outer`'s output tiles; inside, OW split into parts
that divide the register tile (`conv_common.ow_parts`), C blocked (`channel_block`, the filter
rows now contiguous), [1, 1, ow, 1] register tiles over (n, oh, ow, fo) with fo outermost,
the reductions (kh, kw, c) by 1, the unit dims folded away (a 2-D [ow, 32] generic is left,
out[ow, fi] += x[ow] * P[fi]) and vectorized: ow x 2 zmm accumulators, one broadcast per
output position and two filter loads per step, the multiply-add contracted to FMA.

When the forall is built greedily (fusion_plan.fuses_exactly) and C is one block, the init and the
epilogue are also fused into the register tiles (`_register_fused_lines`): the epilogue is
tiled [1, 1, ow, 1, 32] and the conv and its init fused into those loops (an OW split in two
parts by `ow_parts`, 27 = 24 + 3, is tiled by the first part's register tile and the
last iteration peeled off: SqueezeNet's 27 x 27 layers 6-9 % faster), so that
the accumulator is stored once, after the epilogue (LLVM forwards the init's store to the
accumulator's load); small reductions gain most (a 1x1 64 -> 64 conv on 56x56: 0.53 -> 0.47 ms,
MobileNetV2 1.50 -> 1.43x onnxruntime in one A/B run).

Packed: f32 NHWC convs with a constant filter (a splat one packs to a splat), F a multiple of 16, dilation 1,
stride 1 (or any stride when the kernel is 1x1). Others keep `conv.py`'s schedule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.passes.codegen import elementwise_lines, fusion, target
from dlc.passes.codegen.conv_common import (
    BALANCE,
    Conv,
    channel_block,
    filter_outer,
    outer,
    ow_parts,
    ow_register,
    params_of,
    part_ow_tile,
    split_along,
)
from dlc.passes.codegen.matmul import multiply_add
from dlc.passes.codegen.predicates import maps, reassociation, window
from dlc.passes.codegen.script import Lines, tile, vectorize_each

# (the forall tile's limits, OUTER_BYTES, OUTER_FILTER and MIN_TILES, and REGISTER_FUSION are
# conv_common's: the heuristic's point of the tuning space, `conv_params.py`)
PAD_MIN = 128  # from this F, a filter count no block divides is padded with zero filters
DISTINCT = "dlc.distinct"
# the numbers of the distinct empties of the running dlc-schedule (`numbering`): counted per run,
# so that a model's IR is the same in every compile (a process-wide counter made the second
# compile of a model in one process differ from the first, issue 19); a context variable, so
# that compiles in two threads do not share it
_NUMBERS: ContextVar[Iterator[int] | None] = ContextVar("dlc_distinct_numbers", default=None)
TAG = fusion.PACKED  # marks the packed conv generic (and its tiles) for the script


def packs(op: ir.Operation, problem: Conv, filter_attr: ir.DenseElementsAttr | None) -> bool:
    """Whether NHWC conv `op` (matched as `problem`) takes the packed schedule."""
    if filter_attr is None or not padded(problem.f):
        return False
    strides, dilations = window(op, "strides"), window(op, "dilations")
    if strides != [1, 1] and (dilations != [1, 1] or (problem.kh, problem.kw) != (1, 1)):
        return False
    if _init_kind(op) is None:
        return False
    return bool(block_of(problem.f)) or _paddable(op)


def block_of(f: int) -> int:
    """The filter block of F output channels: 32 when it divides F, else 16, else 0 (the
    target CPU's blocks, `target.py`: 16 alone on AVX2)."""
    return next((b for b in blocks() if f % b == 0), 0)


def blocks() -> tuple[int, ...]:
    """Output channels per packed filter block, widest first: (32, 16) on AVX-512 (two or one
    16-lane vectors), (16,) on AVX2 (two 8-lane vectors)."""
    return target.current().conv_blocks


def padded(f: int) -> int:
    """The F a conv of F output channels is packed with: F when a block divides it, else F
    padded with zero filters to a multiple of 32 (F >= 512) or of 16 (F >= PAD_MIN), else 0
    (not packed). SqueezeNet's classifier conv (1000 filters) ran 1.8x onnxruntime's kernel
    unpacked: its filter rows are 4000 bytes apart."""
    if block_of(f):
        return f
    if f >= PAD_MIN:
        block = blocks()[0] if f >= 512 else blocks()[-1]
        return -(-f // block) * block
    return 0


def _paddable(op: ir.Operation) -> bool:
    """Whether the conv's init and epilogue can be rebuilt on padded channels: the init a
    fill or a broadcast of a constant, the epilogue's per-channel operands constants."""
    kind = _init_kind(op)
    if kind not in ("fill", "broadcast", "generic"):
        return False
    producer = fusion.init_producer(op)
    if kind == "broadcast" and _constant(producer.operands[0]) is None:
        return False
    if kind == "generic" and not _channels_constant(producer, None):
        return False
    epilogue = fusion.epilogue(op)
    if epilogue is None:
        return True
    return _channels_constant(epilogue, next(u.operand_number for u in op.results[0].uses))


def _reads_channels(affine_map: ir.AffineMap) -> bool:
    """Whether an operand's map of a 4-D (n, h, w, f) generic indexes the channel dim."""
    return 3 in [ir.AffineDimExpr(e).position for e in affine_map.results]


def _channels_constant(generic: ir.Operation, skipped: int | None) -> bool:
    """Whether each operand of a 4-D `generic` indexed by the channel dim (but `skipped`) is
    a constant, or its output a tensor.empty."""
    last = len(generic.operands) - 1
    for i, (operand, old) in enumerate(zip(generic.operands, maps(generic), strict=True)):
        if i == skipped or not _reads_channels(old):
            continue
        if not (i == last and fusion.is_empty(operand)) and _constant(operand) is None:
            return False
    return True


def _padded_generic(generic: ir.Operation, replaced: dict[int, ir.Value], fp: int) -> ir.Value:
    """4-D `generic` rebuilt on fp channels: `replaced` operands given, the others indexed by
    the channel dim padded (constants) or made anew (the output's empty)."""
    shape = list(generic.results[0].type.shape[:3]) + [fp]
    operands = []
    for i, (operand, old) in enumerate(zip(generic.operands, maps(generic), strict=True)):
        if i in replaced:
            operands.append(replaced[i])
        elif not _reads_channels(old):
            operands.append(operand)
        elif fusion.is_empty(operand):
            operands.append(tensor.EmptyOp(shape, ir.F32Type.get()).result)
        else:
            operands.append(_padded_constant(operand, fp))
    return fusion.rebuilt(generic, operands, maps(generic)).results[0]


def _constant(value: ir.Value) -> np.ndarray | None:
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr):
        return None
    if attr.is_splat:
        return np.full(value.type.shape, attr.get_splat_value().value, dtype=np.float32)
    return np.asarray(attr)  # (a read-only view: the predicates that call this copy nothing)


def _padded_constant(value: ir.Value, f: int) -> ir.Value:
    """A constant [..., F0] padded with zeros to [..., f]."""
    array = _constant(value)
    pads = [(0, 0)] * (array.ndim - 1) + [(0, f - array.shape[-1])]
    array = np.ascontiguousarray(np.pad(array, pads).astype(np.float32, copy=False))
    return arith.ConstantOp(ir.RankedTensorType.get(list(array.shape), ir.F32Type.get()),
                            ir.DenseElementsAttr.get(array)).result


def _pad_filters(op: ir.Operation) -> ir.Operation:
    """conv(x, W, acc) with F output channels -> extract_slice(conv(x, W', acc'), F) with W'
    padded by zero filters to `padded(F)`; the init (acc') and the epilogue are rebuilt on
    the padded channels (their constants padded), the slice taken after the epilogue. Returns
    the padded conv, which `pack` then packs like any other."""
    x, weight, acc = op.operands
    f = weight.type.shape[3]
    fp = padded(f)
    shape = list(acc.type.shape[:3]) + [fp]
    f32 = ir.F32Type.get()
    epilogue = fusion.epilogue(op)
    producer = acc.owner
    with ir.InsertionPoint(op), op.location:
        filters = _padded_constant(weight, fp)
        kind = _init_kind(op)
        if kind == "fill":
            init = linalg.fill(producer.operands[0], outs=[tensor.EmptyOp(shape, f32).result])
        elif kind == "generic":
            init = _padded_generic(producer.operation, {}, fp)
        else:
            dims = [int(v) for v in ir.DenseI64ArrayAttr(producer.attributes["dimensions"])]
            init = linalg.broadcast(_padded_constant(producer.operands[0], fp),
                                    outs=[tensor.EmptyOp(shape, f32).result], dimensions=dims)
        init = init if isinstance(init, ir.Value) else init.results[0]
        conv = linalg.conv_2d_nhwc_hwcf(x, filters, outs=[init], strides=window(op, "strides"),
                                        dilations=window(op, "dilations"))
        result = conv if isinstance(conv, ir.Value) else conv.results[0]
    last, replaced = op, result
    if epilogue is not None:
        index = next(u.operand_number for u in op.results[0].uses)
        with ir.InsertionPoint(epilogue), epilogue.location:
            replaced = _padded_generic(epilogue, {index: result}, fp)
        last = epilogue
    with ir.InsertionPoint(last), last.location:
        sizes = list(acc.type.shape)
        sliced = tensor.ExtractSliceOp(acc.type, replaced, [], [], [], [0, 0, 0, 0], sizes,
                                       [1, 1, 1, 1]).result
    last.results[0].replace_all_uses_with(sliced)
    if epilogue is not None:
        epilogue.erase()
    op.erase()
    if not list(producer.results[0].uses):
        producer.erase()
    return result.owner.operation


def _init_kind(op: ir.Operation) -> str | None:
    """How the accumulator is rebuilt in 5-D: "fill", "broadcast", "generic" (the fused init
    producers of fusion.init_producer), "view" (any other value: expanded), None: neither."""
    producer = fusion.init_producer(op)
    if producer is None:
        return "view"
    if producer.name == "linalg.fill":
        return "fill"
    if producer.name == "linalg.broadcast":  # (of a per-channel vector, not along channels)
        dims = [int(v) for v in ir.DenseI64ArrayAttr(producer.attributes["dimensions"])]
        return "broadcast" if 3 not in dims else None
    return "generic" if producer.name == "linalg.generic" else None


# ----------------------------------------------------------------------------- the rewrite


def _expand(value: ir.Value) -> ir.Value:
    """A [..., F] tensor viewed as [..., F/32, 32] (the source of a collapse that made it)."""
    owner = value.owner
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "tensor.collapse_shape":
        source = owner.operands[0]
        shape = list(value.type.shape)
        block = block_of(shape[-1])
        if list(source.type.shape) == shape[:-1] + [shape[-1] // block, block]:
            return source
    shape = list(value.type.shape)
    block = block_of(shape[-1])
    expanded = shape[:-1] + [shape[-1] // block, block]
    groups = [[i] for i in range(len(shape) - 1)] + [[len(shape) - 1, len(shape)]]
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(expanded, value.type.element_type),
                                value, reassociation(groups), [], expanded).result


def _collapse(value: ir.Value) -> ir.Value:
    """[..., F/32, 32] -> [..., F]."""
    shape = list(value.type.shape)
    collapsed = shape[:-2] + [shape[-2] * shape[-1]]
    groups = [[i] for i in range(len(shape) - 2)] + [[len(shape) - 2, len(shape) - 1]]
    return tensor.CollapseShapeOp(ir.RankedTensorType.get(collapsed, value.type.element_type),
                                  value, reassociation(groups)).result


def _empty5(shape4: list[int]) -> ir.Value:
    """A fresh [..., F/32, 32] tensor.empty, marked distinct: CSE would merge the identical
    empties (then fills) of two convs of one shape into one destination, which bufferization
    copies for each (dlc-pad-in-place then rewrites each chain's root to a 4-D buffer)."""
    block = block_of(shape4[-1])
    empty = tensor.EmptyOp(shape4[:-1] + [shape4[-1] // block, block], ir.F32Type.get())
    number = _next_number(ir.InsertionPoint.current.block)
    empty.operation.attributes[DISTINCT] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), number)
    return empty.result


@contextmanager
def numbering() -> Iterator[None]:
    """Number the distinct empties made inside the block 0, 1, 2, ... (dlc-schedule's run)."""
    token = _NUMBERS.set(itertools.count())
    try:
        yield
    finally:
        _NUMBERS.reset(token)


def _next_number(block: ir.Block) -> int:
    """The next number of the running `numbering`; outside one (a direct call of `pack`), one
    more than the largest number in `block`, where the empties of the rewrite are made."""
    numbers = _NUMBERS.get()
    if numbers is not None:
        return next(numbers)
    taken = [ir.IntegerAttr(op.attributes[DISTINCT]).value for op in block.operations
             if DISTINCT in op.attributes]
    return max(taken, default=-1) + 1


def _generic5(op: ir.Operation, replaced: dict[int, ir.Value]) -> ir.Operation:
    """All-parallel 4-D generic `op` (identity result map, ordered-projection operand maps)
    rebuilt over (n, h, w, fo, fi): an operand indexed by the channel dim d3 is expanded
    (`replaced[i]`: operand i's 5-D value, given), the result is 5-D. The body is cloned."""
    old_maps = maps(op)
    count = len(op.operands)
    d = [ir.AffineDimExpr.get(i) for i in range(5)]
    new_maps, operands = [], []
    for index, (operand, old) in enumerate(zip(op.operands, old_maps, strict=True)):
        dims = [ir.AffineDimExpr(e).position for e in old.results]
        if 3 in dims:
            results = [d[i] for i in dims] + [d[4]]
            if index in replaced:
                value = replaced[index]
            elif index == count - 1 and fusion.is_empty(operand):
                value = _empty5(list(operand.type.shape))
            else:
                value = _expand(operand)
        else:
            results, value = [d[i] for i in dims], operand
        new_maps.append(ir.AffineMap.get(5, 0, results))
        operands.append(value)
    return fusion.rebuilt(op, operands, new_maps)


def _accumulator(op: ir.Operation) -> ir.Value:
    """The 5-D accumulator: the init producer rebuilt in 5-D, or a view of the value."""
    acc = op.operands[2]
    kind = _init_kind(op)
    producer = acc.owner
    if kind == "fill":
        built = linalg.fill(producer.operands[0], outs=[_empty5(list(acc.type.shape))])
        return built if isinstance(built, ir.Value) else built.results[0]
    if kind == "broadcast":
        dims = [int(v) for v in ir.DenseI64ArrayAttr(producer.attributes["dimensions"])]
        built = linalg.broadcast(_expand(producer.operands[0]),
                                 outs=[_empty5(list(acc.type.shape))],
                                 dimensions=dims)
        return built if isinstance(built, ir.Value) else built.results[0]
    if kind == "generic":
        return _generic5(producer.operation, {}).results[0]
    return _expand(acc)


def pack(op: ir.Operation) -> ir.Operation:
    """conv_2d_nhwc_hwcf(x, W, acc) -> generic(x, P, acc5) (see above), with its init and
    epilogue rebuilt in 5-D; returns the generic."""
    if not block_of(op.operands[1].type.shape[3]):
        op = _pad_filters(op)
    x, weight, acc = op.operands
    kh, kw, _, f = weight.type.shape
    strides = window(op, "strides")
    epilogue = fusion.epilogue(op)
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(op), op.location:
        attr = ir.DenseElementsAttr(weight.owner.attributes["value"])
        c = weight.type.shape[2]
        packed_type = ir.RankedTensorType.get([f // block_of(f), kh, kw, c, block_of(f)], f32)
        if attr.is_splat:  # (a zero-initialised last layer of a block: timm's ResNets)
            packed_attr = ir.DenseElementsAttr.get_splat(packed_type, attr.get_splat_value())
        else:
            # (a copy first, not a view of the attribute: numpy's memory has huge pages, the
            # attribute's 4 KiB ones, and the packing reads 64 bytes a page; ResNet-50's 49
            # filters: 38 ms with the copy, 45 ms from the view)
            array = np.array(attr)
            packed_attr = ir.DenseElementsAttr.get(np.ascontiguousarray(
                array.reshape(kh, kw, c, f // block_of(f), block_of(f)).transpose(3, 0, 1, 2, 4)))
        filter_value = arith.ConstantOp(packed_type, packed_attr).result
        if strides != [1, 1]:  # (1x1 only: the strided positions, a view)
            n, oh, ow, _ = acc.type.shape
            sizes = [n, oh, ow, x.type.shape[3]]
            x = tensor.ExtractSliceOp(ir.RankedTensorType.get(sizes, f32), x, [], [], [],
                                      [0, 0, 0, 0], sizes, [1, *strides, 1]).result
        dh, dw = window(op, "dilations")
        d = [ir.AffineDimExpr.get(i) for i in range(8)]  # n, oh, ow, fo, fi, kh, kw, c
        conv_maps = [ir.AffineMap.get(8, 0, [d[0], d[1] + d[5] * dh, d[2] + d[6] * dw, d[7]]),
                     ir.AffineMap.get(8, 0, [d[3], d[5], d[6], d[7], d[4]]),
                     ir.AffineMap.get(8, 0, d[:5])]
        generic = multiply_add([x, filter_value, _accumulator(op)], conv_maps,
                               ["parallel"] * 5 + ["reduction"] * 3)
        generic.attributes[TAG] = ir.UnitAttr.get()
        if epilogue is None:
            op.results[0].replace_all_uses_with(_collapse(generic.results[0]))
        else:
            with ir.InsertionPoint(epilogue):
                index = next(u.operand_number for u in op.results[0].uses)
                new = _generic5(epilogue, {index: generic.results[0]})
                epilogue.results[0].replace_all_uses_with(_collapse(new.results[0]))
            epilogue.erase()
    init = acc.owner
    op.erase()
    if isinstance(init, ir.Operation | ir.OpView) and not list(init.results[0].uses) \
            and init.name != "tensor.empty":
        init.erase()
    return generic


# ----------------------------------------------------------------------------- the schedule


def outer_tile(problem: Conv) -> tuple[int, int]:
    """(oh, f) of the forall's [1, oh, OW, f] output tiles: f the widest multiple of 32
    dividing F whose filter slice fits OUTER_FILTER, oh the most rows dividing OH whose tile
    fits OUTER_BYTES; f narrowed while that leaves fewer than MIN_TILES tiles (the threads'
    share) and a narrower f exists, then oh (a conv of one filter block, MobileNetV2's 28 x 28
    x 32: one tile of all 28 rows before, 4 of 7 now; Zen 4, same-process A/B, new/old at 2
    threads MobileNetV2 0.941, SqueezeNet 0.963, at 1 thread 0.992-1.008 and 0.992-0.996).
    (The limits: `params_of(problem)`.)"""
    params = params_of(problem)

    def rows(f: int) -> int:
        fits = [d for d in range(1, problem.oh + 1)
                if problem.oh % d == 0 and d * problem.ow * f * 4 <= params.outer_bytes]
        return fits[-1] if fits else 1

    block = block_of(problem.f)
    widths = [d for d in range(block, problem.f + 1, block) if problem.f % d == 0 and (
        d == block or problem.kh * problem.kw * problem.c * d * 4 <= params.outer_filter)]
    balanced = _balanced_tile(problem, widths, rows, params.min_tiles)
    if balanced is not None:
        return balanced
    choices = [(rows(f), f) for f in reversed(widths)]  # widest first
    for oh, f in choices:
        if (problem.oh // oh) * (problem.f // f) >= params.min_tiles:
            return oh, f
    oh, f = choices[-1]  # (the narrowest f: fewer rows, while that leaves enough tiles)
    fewer = [d for d in range(1, oh + 1) if problem.oh % d == 0
             and (problem.oh // d) * (problem.f // f) >= params.min_tiles]
    return (fewer[-1] if fewer else oh), f


def _balanced_tile(problem: Conv, widths: list[int], rows, min_tiles: int
                   ) -> tuple[int, int] | None:
    """For threads (`target.threads() > 1`): the largest (oh, f) tile (oh at most `rows(f)`,
    f one of `widths`) of at least `min_tiles` tiles that keeps the threads BALANCE busy
    (`target.balance`), widest f first among equal sizes; None single-threaded or where no
    tile does (the heuristic's tile then). SqueezeNet's 3x3 16 -> 64 convs on 55 x 55 took
    5 tiles of 11 rows, 3 rounds on one thread and 2 on the other (speed-up 1.69 at 2
    threads); now 10 tiles of 11 rows and 32 channels."""
    if target.threads() <= 1:
        return None
    found = [(oh * f, f, oh) for f in widths for oh in range(1, rows(f) + 1)
             if problem.oh % oh == 0 and (tiles := (problem.oh // oh) * (problem.f // f))
             >= min_tiles and target.balance(tiles) >= BALANCE]
    if not found:
        return None
    _, f, oh = max(found)
    return oh, f


def lines(handle: str, problem: Conv, prefix: str) -> Lines:
    forall = outer(problem)
    oh, f = outer_tile(problem)
    ow = problem.ow
    block = block_of(problem.f)
    tiles = fusion.Outer([1, oh, 0, f // block, 0, 0, 0, 0], [1, oh, 0, f // block, 0],
                         (1, oh, ow, f // block, block), forall.epilogue, forall.init,
                         forall.greedy, f"attributes {{{TAG}}}",
                         filter_outer(problem, oh, f))
    inner = Conv(1, oh, ow, f, problem.c, problem.kh, problem.kw, f_total=block,
                 params=problem.params)
    if params_of(problem).register_fusion and tiles.greedy and (tiles.epilogue or tiles.init) \
            and channel_block(inner, block) == inner.c:
        return _register_fused_lines(handle, tiles, inner, block, prefix)
    return fusion.forall_lines(handle, tiles, prefix,
                               lambda tiled: tile_lines(tiled, inner, block, f"{prefix}t"),
                               elementwise_lines.tile_lines)


def _register_fused_lines(handle: str, tiles: fusion.Outer, problem: Conv, block: int,
                          prefix: str) -> Lines:
    """The forall as in fusion._greedy_lines, then register tiles of the epilogue (or of the
    conv) with the conv and its init fused into them (`fusion.register_fused_lines`)."""
    ow, peel = ow_register(problem.ow, block, params_of(problem).ow_max)
    return fusion.register_fused_lines(handle, tiles, [1, 1, ow, 1, 0], 3,
                                       f"attributes {{{TAG}}}", _kernel_lines, prefix, peel)


def tile_lines(handle: str, problem: Conv, block: int, prefix: str) -> Lines:
    """One output tile [1, oh, OW, f/32, 32]: OW parts, C blocks, register tiles."""
    ops: list[str] = []
    result = Lines(ops)
    widest = params_of(problem).ow_max
    parts = ow_parts(problem.ow, block, widest)
    for j, (part, ow_size) in enumerate(split_along(handle, 2, parts, f"{prefix}w", ops)):
        ow = part_ow_tile(ow_size, block, widest)
        kc = channel_block(problem, block)
        p = f"{prefix}p{j}"
        if kc < problem.c:
            more, part, _ = tile(part, [0] * 7 + [kc], f"{p}c")
            ops += more
        more, registers, _ = tile(part, [1, 1, ow, 1, 0, 0, 0, 0], f"{p}o",
                                  [3, 0, 1, 2, 4, 5, 6, 7])
        ops += more
        more, loops = _kernel_lines(registers, f"{p}k")
        ops += more
        result += Lines([], list(reversed(loops)))
    return result


def _kernel_lines(handle: str, prefix: str) -> tuple[list[str], list[str]]:
    """A register tile of the packed generic: its reductions (kh, kw, c) tiled by 1, the unit
    dims folded away (an [ow, 32] multiply-add is left) and vectorized; the ops and the
    reduction loops' handles."""
    ops, _, loops = tile(handle, [0, 0, 0, 0, 0, 1, 1, 1], prefix)
    ops += vectorize_each(loops[-1], prefix)  # (a handle to one loop per part)
    return ops, loops
