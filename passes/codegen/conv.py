"""The 2-D convolution schedule: NCHW convolutions with constant filters, computed in NHWC.

NCHW convolutions vectorize badly (PERF.md: 0.59x numpy at best, NHWC 1.34x). `prepare`
rewrites `linalg.conv_2d_nchw_fchw(x, constant w)` into transpose(x) -> NHWC,
`linalg.conv_2d_nhwc_hwcf` with the filter transposed to HWCF at compile time, and a transpose
of the result back to NCHW (the layout the rest of the graph uses). Since dlc-convert-layout,
convs mostly arrive as `linalg.conv_2d_nhwc_hwcf` with a constant HWCF filter already.

Outer (forall) tile, one output tile per iteration: [1, oh, OW, ft] with ft the forall F tile
and oh the largest divisor of OH keeping the tile under 256 KiB; the accumulator's init (for
NCHW convs, a fill or bias broadcast rebuilt in NHWC) and, for NHWC convs, the elementwise
epilogue are fused into the forall (`fusion.py`), whose iterations may run on threads. The
NCHW case keeps its epilogue separate (it reads the result after the transpose back to NCHW).

Inside, remainders are split off, never masked (PERF.md: masks run at ~3 GFLOP/s): the static
output tile is split along F at its last multiple of 32 and each F part along OW so that every
part divides its register tile; each part is blocked along C (a [kh, kw, kc, f] filter slice
of at most the target's 512 KiB (AVX-512) or 128 KiB (AVX2) stays in L2 while every output
position of the tile uses it: deep layers with C = 256-512 ran at half speed without it),
tiled [1, 1, ow, f] over (n, oh, ow, f) with
the f loop outermost, its reduction loops (kh, kw, c) by 1, decomposed to a 1-D convolution,
vectorized (an ow x f register tile of FMAs) and its accumulator hoisted.

Tile heuristic, from the static shape (its functions, the `Conv` problem and the forall tile
`outer` are in `conv_common.py`, shared with `packed_conv.py`):
- ft = 32 when F % 32 == 0, else 16 when F % 16 == 0, else all of F up to 32, else the largest
  divisor of F up to 256 whose part past a multiple of 32 is a multiple of 8 (1000: 200 = 192
  + 8); an F tile between 16 and 32 is split at 16 (24 = 16 + 8); register f tile = 32 or 16
  when it divides the part, else the part (< 32).
- register ow tile = the largest divisor of the OW part up to 8 other than the f tile (equal
  inner tiles hit the LLVM 22 miscompile, PERF.md); when no divisor in [4, 8] exists and OW > 8,
  OW is split at its last multiple of 8 (7 or 6 when 8 or the remainder equals the f tile):
  13 -> 8 + 5, 111 -> 104 + 7; the remainder is one register tile.
- these are AVX-512's tiles; on AVX2 (`target.py`: 16 ymm registers of 8 lanes, where [8, 32]
  tiles spill) the widths of F are 16 and 8 (packed blocks of 16) and OW tiles at most 6
  (ResNet-50 2.9x -> 1.4x onnxruntime on an AVX2 AMD EPYC, single thread).
- kc = all of C when kh * kw * C * f * 4 <= the target's filter bytes (`target.py`) and that
  slice of the filter touches at most 128 pages of 4 KiB (wide F: a row of the filter per
  channel), else the largest divisor of C that fits both.
Where the forall is built greedily, F is one part and C one block, the init and the epilogue
are fused into the register tiles instead (`_register_fused_lines`); an OW in two parts is
then tiled by the first part's register tile and its last iteration peeled off (SqueezeNet's
stem, OW 111 = 13 x 8 + 7: 0.90 -> 0.58 ms, its bias and ReLU no longer separate passes over
a 3 MiB output). The forall runs its filter tiles outermost where that moves fewer bytes
(`filter_outer`).
Strides and dilations are kept; 1x1 and strided convolutions take the same path. Depthwise and
grouped convolutions are not matched.

NHWC convs with a constant filter, F a multiple of 16, dilation 1 and stride 1 (any stride for
1x1) are data-tiled instead (`packed_conv.py`: the filter packed per block of 32 or 16 output
channels at compile time, `prepare` rewrites the op, `lines` schedules it there).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.passes.blocked_copy import transposed
from dlc.passes.codegen import elementwise_lines, fusion, packed_conv
from dlc.passes.codegen.conv_common import (
    Conv,
    channel_block,
    filter_parts,
    filter_tile,
    outer,
    ow_parts,
    ow_register,
    params_of,
    part_ow_tile,
    split_along,
)
from dlc.passes.codegen.matmul import UNPACKED
from dlc.passes.codegen.predicates import constant_filter, window
from dlc.passes.codegen.script import ANY, Lines, tile

NCHW, NHWC = "linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_hwcf"
TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
PACK = True  # data-tile the filters of NHWC convs that `packed_conv.packs` accepts


def match(op: ir.Operation) -> Conv | None:
    if op.name not in (NCHW, NHWC) or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if any(str(t.element_type) != "f32" for t in types) or 0 in types[2].shape:
        return None
    if op.name == NCHW and constant_filter(op) is None:
        return None
    x, w, y = (list(t.shape) for t in types)
    if op.name == NCHW:
        init = _nhwc_init_kind(op.operands[2]) != "transpose"
        problem = Conv(y[0], y[2], y[3], y[1], x[1], w[2], w[3], False, init)
    else:
        problem = Conv(y[0], y[1], y[2], y[3], x[3], w[0], w[1],
                       fusion.epilogue(op) is not None, fusion.init_producer(op) is not None)
        if PACK and packed_conv.packs(op, problem, constant_filter(op)):
            problem = replace(problem, packed=True, f=packed_conv.padded(problem.f))
    return problem


def volume(problem: Conv) -> int:
    p = problem
    return p.n * p.oh * p.ow * p.f * p.c * p.kh * p.kw


def _nhwc_init_kind(acc: ir.Value) -> str:
    """How `prepare` builds the NHWC accumulator: "fill", "broadcast" (of a per-filter bias)
    or "transpose" (of the NCHW one), by the NCHW accumulator's producer."""
    owner = acc.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or fusion._single_user(acc) is None:
        return "transpose"
    if owner.name == "linalg.fill":
        return "fill"
    if owner.name != "linalg.generic" or len(owner.operands) != 2:
        return "transpose"
    maps = [str(m) for m in ir.ArrayAttr(owner.attributes["indexing_maps"])]
    body = list(owner.regions[0].blocks[0].operations)
    block = owner.regions[0].blocks[0]
    if maps[0] != "affine_map<(d0, d1, d2, d3) -> (d1)>" or len(body) != 1 \
            or body[0].operands[0] != block.arguments[0]:
        return "transpose"
    return "broadcast"


def _nhwc_init(acc: ir.Value) -> ir.Value:
    shape = [acc.type.shape[p] for p in TO_NHWC]
    kind = _nhwc_init_kind(acc)
    if kind == "transpose":
        return _transpose(acc, TO_NHWC)
    empty = tensor.EmptyOp(shape, acc.type.element_type).result
    source = acc.owner.operands[0]
    if kind == "fill":
        return _value(linalg.fill(source, outs=[empty]))
    return _value(linalg.broadcast(source, outs=[empty], dimensions=[0, 1, 2]))


def _transpose(value: ir.Value, permutation: list[int]) -> ir.Value:
    shape = [value.type.shape[p] for p in permutation]
    init = tensor.EmptyOp(shape, value.type.element_type).result
    return _value(linalg.transpose(value, outs=[init], permutation=permutation))


def _value(built) -> ir.Value:
    return built if isinstance(built, ir.Value) else built.results[0]


def prepare(op: ir.Operation) -> ir.Operation | None:
    """conv_nchw(x, constant w) -> transpose(conv_nhwc(transpose(x), w in HWCF)) (same op);
    an NHWC conv that packs is packed (`packed_conv.pack`), unless a tuning record's `pack`
    is False (`UNPACKED`, set by `tuning.families`)."""
    if op.name != NCHW:
        if UNPACKED in op.attributes:
            del op.attributes[UNPACKED]
            return None
        problem = match(op)
        return packed_conv.pack(op) if problem is not None and problem.packed else None
    attr = constant_filter(op)
    hwcf = transposed(np.asarray(attr), (2, 3, 1, 0))
    x, _, acc = op.operands
    with ir.InsertionPoint(op), op.location:
        weight = arith.ConstantOp(
            ir.RankedTensorType.get(list(hwcf.shape), attr.type.element_type),
            ir.DenseElementsAttr.get(hwcf)).result
        nhwc = _value(linalg.conv_2d_nhwc_hwcf(
            _transpose(x, TO_NHWC), weight, outs=[_nhwc_init(acc)],
            strides=window(op, "strides"), dilations=window(op, "dilations")))
        result = _transpose(nhwc, TO_NCHW)
    op.results[0].replace_all_uses_with(result)
    op.erase()
    return nhwc.owner


def lines(handle: str, problem: Conv, prefix: str) -> Lines:
    """The forall of output tiles, fused with the init and epilogue; inside, `tile_lines`."""
    if problem.packed:
        return packed_conv.lines(handle, problem, prefix)
    tiles = outer(problem)
    _, oh, ow, f = tiles.tile_shape
    p = problem
    inner = Conv(1, oh, ow, f, p.c, p.kh, p.kw, f_total=p.f, params=p.params)
    if params_of(p).register_fusion and tiles.greedy and (tiles.epilogue or tiles.init) \
            and filter_parts(f) == [f] and channel_block(inner, filter_tile(f)) == inner.c:
        return _register_fused_lines(handle, tiles, inner, filter_tile(f), prefix)
    return fusion.forall_lines(handle, tiles, prefix,
                               lambda tile: tile_lines(tile, inner, f"{prefix}t"),
                               elementwise_lines.tile_lines)


def _register_fused_lines(handle: str, tiles: fusion.Outer, problem: Conv, f: int,
                          prefix: str) -> Lines:
    """As packed_conv's, for the named conv: the forall, then register tiles [1, 1, ow, f] of
    the epilogue (or of the conv) with the conv and its init fused in, so that the init's
    store and the accumulator's load meet in L1 (the stems, strided and not packed, wrote the
    bias into the whole output tile before the conv read it back)."""
    ow, peel = ow_register(problem.ow, f, params_of(problem).ow_max)
    return fusion.register_fused_lines(handle, tiles, [1, 1, ow, f], 3, f"ops{{[\"{NHWC}\"]}}",
                                       _kernel_lines, prefix, peel)


def _kernel_lines(handle: str, prefix: str) -> tuple[list[str], list[str]]:
    """A register tile of the conv: its reductions (kh, kw, c) tiled by 1, decomposed to a
    1-D convolution and vectorized; the ops and the reduction loops' handles."""
    ops, inner, loops = tile(handle, [0, 0, 0, 0, 1, 1, 1], prefix)
    ops.append(f"%{prefix}_d = transform.structured.decompose {inner} : ({ANY}) -> {ANY}")
    ops.append(f"transform.structured.vectorize %{prefix}_d : {ANY}")
    return ops, loops


def tile_lines(handle: str, problem: Conv, prefix: str) -> Lines:
    """A static output tile: F and OW split so that each part divides its register tile,
    then per part register tiles of FMAs, [1, 1, ow, f] over (n, oh, ow, f), reductions by
    1, decomposed to 1-D convolutions and vectorized."""
    ops: list[str] = []
    result = Lines(ops)
    widest = params_of(problem).ow_max
    for i, (f_part, f_size) in enumerate(split_along(handle, 3, filter_parts(problem.f),
                                                f"{prefix}f", ops)):
        f = filter_tile(f_size)
        for j, (part, ow_size) in enumerate(split_along(f_part, 2, ow_parts(problem.ow, f, widest),
                                                   f"{prefix}w{i}", ops)):
            sizes = Conv(1, problem.oh, ow_size, f_size, problem.c, problem.kh, problem.kw,
                         f_total=problem.f_total, params=problem.params)
            result += _part_lines(part, sizes, f, f"{prefix}p{i}{j}")
    return result


def _part_lines(handle: str, problem: Conv, f: int, prefix: str) -> Lines:
    ow = part_ow_tile(problem.ow, f, params_of(problem).ow_max)
    ops: list[str] = []
    kc = channel_block(problem, f)
    if kc < problem.c:
        more, handle, _ = tile(handle, [0, 0, 0, 0, 0, 0, kc], f"{prefix}c")
        ops += more
    # filter tiles outermost: a [kh, kw, c, f] slice of the filter stays in cache while
    # every output position uses it
    more, outer_tile, _ = tile(handle, [1, 1, ow, f, 0, 0, 0], f"{prefix}o",
                               [3, 0, 1, 2, 4, 5, 6])
    ops += more
    more, loops = _kernel_lines(outer_tile, f"{prefix}k")
    ops += more
    return Lines(ops, list(reversed(loops)))
