"""What the convolution schedules share: the `Conv` problem, its tile heuristic and its outer
(forall) tile.

`conv.py` (the named NHWC conv) and `packed_conv.py` (the data-tiled one) both tile by these
rules, so they live here, below both: `conv` imports `packed_conv` (it hands the convs that
pack over to it) and neither is imported by this module. The heuristic itself is described in
`conv.py`'s docstring; `conv` re-exports every name defined here.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlc.passes.codegen import fusion, target
from dlc.passes.codegen.conv_params import ConvParams
from dlc.passes.codegen.script import split

# The heuristic's limits (a tuning record replaces them per op: `conv_params.py`)
OUTER_BYTES = 256 * 1024
OUTER_F = 256  # the widest forall tile of an F that 32 and 16 do not divide
# The register tiles follow the target CPU (`target.py`): on AVX-512, widths of F 32 and 16
# (two or one 16-lane vectors), OW tiles up to 8 (`ow_width`), at most 24 accumulators (as
# below); on AVX2 (16 ymm registers) F 16 and 8, OW up to 6, 12 accumulators. "32", "16" and
# "8" in the comments stand for the target's.
OW_MIN = 4  # narrower divisors of OW than this split OW
OW_WHOLE = 14  # ... but an OW up to this with no such divisor is one register tile (split 8 + 5
# without the peel, 13 read the filter twice: SqueezeNet's classifier conv 3.8 -> 3.1 ms) ...
# ... when its accumulators (24 16-lane vectors on AVX-512) fit the 32 zmm registers beside
# the filter's vectors and the broadcasts: 13 x 32 channels (26) spilled and copied registers
# in the inner loop; 8 + 5, the 5 peeled (`ow_register`), took SqueezeNet 1.09x -> 1.01x
# onnxruntime (Zen 5, same-process A/B)
# The filter slice one block of the C reduction reads (L2) is the target's
# (`target.conv_filter_bytes`): 64 KiB blocked 3x3 convs of 64 channels in two, their
# accumulators stored and reloaded between the blocks (128 KiB: ResNet-18 1.06x -> 1.05x,
# ResNet-50 1.06x -> 1.05x onnxruntime, Zen 5, same process); on AVX-512 512 KiB, half a 1 MiB
# L2 (Zen 4, single thread, same-process A/B, 128 -> 512 KiB: ResNet-18 37.1 -> 35.1 ms,
# Inception-v1 34.5 -> 33.6, ResNet-50 79.8 -> 78.7, ResNet-26-D 50.4 -> 49.5, DenseNet-121
# 55.9 -> 55.0, VGG-19 402 -> 398, SqueezeNet 7.23 -> 7.21; `dlc tune`'s records on ResNet-50
# had found 256-512 KiB for its deepest convs)
PAGE, FILTER_PAGES = 4096, 128  # ... and the pages it may touch (the TLB)
OUTER_FILTER = 1024 * 1024  # (packed) the filter slice of one forall tile (half the 2 MiB L2)
MIN_TILES = 4  # (packed) forall tiles (of output channels and rows) wanted, for the threads
REGISTER_FUSION = True  # init and epilogue fused into the register tiles (conv.py's and
# packed_conv.py's `_register_fused_lines`)


@dataclass(frozen=True)
class Conv:
    n: int
    oh: int
    ow: int
    f: int
    c: int
    kh: int
    kw: int
    epilogue: bool = False  # an elementwise consumer fused into the outer tiles
    init: bool = False  # the accumulator's fill / broadcast fused into the outer tiles
    greedy: bool = False  # one transform builds the forall (fusion_plan.fuses_exactly)
    f_total: int = 0  # (of a tile: the whole op's F, the row length of its filter)
    packed: bool = False  # data-tiled filter: `packed_conv.pack` rewrites it, `.lines` schedules
    params: ConvParams | None = None  # a tuning record's knobs; None: `default_params()`


def default_params() -> ConvParams:
    """The heuristic's point of the space (`conv_params.py`): the constants above and the
    target CPU's filter block and widest OW tile."""
    return ConvParams(OUTER_BYTES, OUTER_FILTER, MIN_TILES, target.current().conv_filter_bytes,
                      FILTER_PAGES, ow_width(), REGISTER_FUSION, "auto")


def params_of(problem: Conv) -> ConvParams:
    return problem.params or default_params()


def ow_limit() -> int:
    """The widest OW tile a record may ask for: its accumulators, with the widest F tile,
    fit the target's (12 on AVX-512, 6 on AVX2)."""
    cpu = target.current()
    return cpu.conv_accumulators // -(-cpu.conv_widths[0] // cpu.lanes)


def register_widths() -> tuple[int, ...]:
    """The register tile widths of F, widest first: (32, 16) on AVX-512, (16, 8) on AVX2."""
    return target.current().conv_widths


def ow_width() -> int:
    """The widest register tile of OW: 8 on AVX-512, 6 on AVX2."""
    return target.current().conv_ow


def filter_tile(f: int) -> int:
    """The register tile of an F part: 32 or 16 when it divides the part, else the whole part
    (`filter_parts` makes every part a multiple of 32 or at most 32 wide)."""
    for width in register_widths():
        if f % width == 0:
            return width
    return f


def forall_filter_tile(f: int) -> int:
    """The forall tile of F: 32 or 16 when it divides F, all of F up to 32, else the largest
    divisor of F up to OUTER_F, preferring one whose remainder past a multiple of 32 is a
    multiple of 8 (1000: 200 = 192 + 8)."""
    widths = register_widths()
    if f <= widths[0] or any(f % width == 0 for width in widths):
        return filter_tile(f)
    divisors = [d for d in range(1, min(f, OUTER_F) + 1) if f % d == 0]
    return max(divisors, key=lambda d: (d % widths[0] % 8 == 0, d))


def filter_parts(f: int) -> list[int]:
    """An F tile that no register width divides, split into a multiple of 32, then of 16 (the
    target's widths, widest first), then the rest narrower than 16: [192, 8] for 200, [64,
    16, 8] for 88 (RegNetY's forall tiles of 440 channels), [16, 8] for 24. A 24-wide register
    tile ran at 2 GFLOP/s; on AVX-512 RegNetY-400MF's 1x1 440 -> 440 convs on 7 x 7 took 1.16
    ms with [64, 24] parts, 0.26 with AVX2's 8-wide tiles (Zen 4, issue 18)."""
    widths = register_widths()
    if any(f % width == 0 for width in widths) or f < widths[-1]:
        return [f]
    parts, rest = [], f
    for width in widths:
        if rest >= width:
            parts.append(rest - rest % width)
            rest %= width
    return parts + [rest] if rest else parts


def ow_tile(ow: int, f_tile: int, widest: int = 0) -> int:
    """The widest divisor of ow up to 8 (`widest`, 0: `ow_width()`) other than f_tile (equal
    inner tiles miscompile); 0 when there is none."""
    widest = widest or ow_width()
    return max((d for d in range(1, min(ow, widest) + 1) if ow % d == 0 and d != f_tile),
               default=0)


def whole(ow: int, f_tile: int) -> bool:
    """Whether all of an OW without a divisor in [4, 8] is one register tile (`OW_WHOLE`)."""
    cpu = target.current()
    return (ow <= OW_WHOLE and ow != f_tile
            and ow * -(-f_tile // cpu.lanes) <= cpu.conv_accumulators)


def ow_parts(ow: int, f_tile: int, widest: int = 0) -> list[int]:
    """OW as one part when a divisor in [4, 8] (or all of OW, `whole`) is a register tile,
    else split at a multiple of 8 (7 or 6 where 8 or the remainder would equal the f tile):
    13 -> [13] with 16 channels, [8, 5] with 32; 111 -> [104, 7]. (8: `widest`, 0 for
    `ow_width()`.)"""
    if ow_tile(ow, f_tile, widest) >= OW_MIN or whole(ow, f_tile):
        return [ow]
    for width in range(widest or ow_width(), OW_MIN - 1, -1):
        rest = ow % width
        if width != f_tile and rest != f_tile:
            return [ow - rest, rest] if rest else [ow]
    return [ow]


def part_ow_tile(ow: int, f_tile: int, widest: int = 0) -> int:
    """The register tile of one OW part from `ow_parts` (all of it when no divisor fits)."""
    tile_size = ow_tile(ow, f_tile, widest)
    return tile_size if tile_size >= OW_MIN or not whole(ow, f_tile) else ow


def ow_register(ow: int, f_tile: int, widest: int = 0) -> tuple[int, bool]:
    """The register tile of OW's first part (`ow_parts`), and whether there is a second
    part, which `fusion.register_fused_lines` peels off the register tile loop."""
    parts = ow_parts(ow, f_tile, widest)
    return part_ow_tile(parts[0], f_tile, widest), len(parts) == 2


BALANCE = 0.95  # (threads) the least share of the threads' time a conv's forall keeps busy


def outer(problem: Conv) -> fusion.Outer:
    f = forall_filter_tile(problem.f)
    limit = params_of(problem).outer_bytes
    rows = [d for d in range(1, problem.oh + 1)
            if problem.oh % d == 0 and d * problem.ow * f * 4 <= limit]
    oh = rows[-1] if rows else 1
    if target.balance((problem.oh // oh) * (problem.f // f)) < BALANCE:
        # (threads: the most rows whose tile count keeps them busy; MobileNetV2's stem,
        # 112 rows: 7 tiles of 16 -> 8 of 14)
        oh = max((d for d in rows if target.balance(
            (problem.oh // d) * (problem.f // f)) >= BALANCE), default=oh)
    return fusion.Outer([1, oh, 0, f, 0, 0, 0], [1, oh, 0, f], (1, oh, problem.ow, f),
                        problem.epilogue, problem.init, problem.greedy,
                        filter_outer=filter_outer(problem, oh, f))


def filter_outer(problem: Conv, oh: int, f: int) -> bool:
    """Whether the forall of [oh, f] output tiles runs filter tiles outermost. Rows outermost
    read the whole filter once per row tile (the input of a row tile stays in L2 across the
    filter tiles); filter tiles outermost read the input once per filter tile. The order that
    moves fewer bytes past L2 wins: SqueezeNet's last conv (1x1 512 -> 1000 on 13 x 13, a 2 MiB
    filter, 13 row tiles) read 26 MiB of filter per call rows outermost (6 % slower).
    A record's `order` other than "auto" decides instead."""
    order = params_of(problem).order
    if order != "auto":
        return order == "filters"
    filter_bytes = problem.kh * problem.kw * problem.c * problem.f * 4
    input_bytes = problem.oh * problem.ow * problem.c * 4  # (stride 1, without the halo)
    row_tiles, filter_tiles = problem.oh // oh, problem.f // f
    return filter_bytes * (row_tiles - 1) > input_bytes * (filter_tiles - 1) > 0


def channel_block(problem: Conv, f_tile: int) -> int:
    """The C tile of the reduction: all of C when the [kh, kw, C, f] slice of the filter fits
    the target's filter bytes and touches at most FILTER_PAGES pages, else the largest divisor of C whose
    slice does (at least 1). With F >= 1024 each channel's row of the HWCF filter is a page
    or more apart: a 1x1 512 -> 2048 conv ran at 17 GFLOP/s with all 512 channels in one
    block (TLB misses on every step), 38 GFLOP/s with 128."""
    def size(c: int) -> int:
        return problem.kh * problem.kw * c * f_tile * 4

    row = (problem.f_total or f_tile) * 4  # bytes between the filter rows of two channels

    def pages(c: int) -> float:  # 4 KiB pages the [kh, kw, c, f] slice touches
        return problem.kh * problem.kw * c * min(1.0, row / PAGE)

    params = params_of(problem)

    def fits(c: int) -> bool:
        return size(c) <= params.filter_bytes and pages(c) <= params.filter_pages

    return max((d for d in range(1, problem.c + 1)
                if problem.c % d == 0 and (fits(d) or d == 1)), default=1)


def split_along(handle: str, dim: int, sizes: list[int], prefix: str,
                ops: list[str]) -> list[tuple[str, int]]:
    """`handle` split along loop `dim` into parts of `sizes` (each split cuts the last part
    off the one before: `split`'s point is relative to the part it splits)."""
    parts = []
    for i, size in enumerate(sizes[:-1]):
        more, low, handle = split(handle, dim, size, f"{prefix}{i}" if i else prefix)
        ops += more
        parts.append((low, size))
    return parts + [(handle, sizes[-1])]
