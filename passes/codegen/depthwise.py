"""The depthwise 2-D convolution schedule: `linalg.depthwise_conv_2d_nhwc_hwc`, static f32.

Channels are innermost in NHWC, so the op vectorizes over channels: it is split so that each
part divides its tiles (no masks), tiled [1, 1, ow, c] over (n, oh, ow, c) and by 1 over kh,
decomposed to a 1-D depthwise convolution (`transform.structured.decompose`) and vectorized: an
ow x c register tile of FMAs per kernel tap, its accumulator hoisted out of the kh loop.

The op runs in an `scf.forall` over blocks of output rows (all of OW and C, at most 16 KiB,
else one row),
with its bias init and its elementwise epilogue (ReLU6...) fused into each block
(`fusion.py`), so that the output is written once while in cache. Where C is a multiple of 16
(one channel tile divides it) the init and the epilogue are fused further, into the [ow, c]
register tiles (`register_fused`, also used by pool.py): the accumulator starts from the bias
and the ReLU6 runs on it before its store (MobileNetV2 0.95x -> 0.93x onnxruntime, Zen 5,
same-process A/B; ResNet-18's max pool unchanged).

Tile heuristic, from the static shape (channel widths of the target CPU, `c_widths`: 32 and 16
on AVX-512, 16 and 8 on AVX2): c = 32 when C % 32 == 0, else 16 (C is split into a
multiple of 16 and a remainder computed whole) or all of C when C < 16; ow = the largest
divisor of OW in [4, 8] other than c (equal inner tiles hit the LLVM 22 miscompile,
PERF.md), else all of OW when OW < 8, else 8 (OW is split into a multiple of 8 and a
remainder computed whole).

`linalg.depthwise_conv_2d_nchw_chw` (what dlc lowers an NCHW model's Conv with group = C to
today) keeps the naive path: computing it in NHWC between two transposes (as `conv.py` does)
measured no faster than the naive loops, the transposes costing what the schedule saves. A
layout pass that keeps CNNs in NHWC brings those convolutions here.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.passes.codegen import elementwise_lines, fusion, target
from dlc.passes.codegen.script import Lines, split_parts, tile

NHWC = "linalg.depthwise_conv_2d_nhwc_hwc"
REGISTER_FUSION = True  # init and epilogue fused into the register tiles (`register_fused`)
OW_MAX, OW_MIN = 8, 4
OUTER_BYTES = 16 * 1024  # the output tile of one forall iteration (rows of all channels):
# in L1 between the init, the conv and the epilogue (256 KiB: 1.2-1.9x onnxruntime's kernel on
# MobileNetV2's layers, 16 KiB: 0.9-1.2x, with the input already padded)


@dataclass(frozen=True)
class Depthwise:
    n: int
    oh: int
    ow: int
    c: int
    kh: int
    kw: int
    epilogue: bool = False  # an elementwise consumer fused into the outer tiles
    init: bool = False  # the accumulator's fill / bias broadcast fused into the outer tiles
    greedy: bool = False  # one transform builds the forall (fusion_plan.fuses_exactly)


def match(op: ir.Operation) -> Depthwise | None:
    if op.name != NHWC or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if any(str(t.element_type) != "f32" for t in types) or 0 in types[2].shape:
        return None
    _, w, y = (list(t.shape) for t in types)
    return Depthwise(y[0], y[1], y[2], y[3], w[0], w[1], fusion.epilogue(op) is not None,
                     fusion.init_producer(op) is not None)


def volume(problem: Depthwise) -> int:
    p = problem
    return p.n * p.oh * p.ow * p.c * p.kh * p.kw


def c_widths() -> tuple[int, ...]:
    """The channel tiles, widest first: the target CPU's (`target.py`): 32 and 16 on AVX-512,
    16 and 8 on AVX2 (an [8, 32] tile spills its 16 ymm registers: MobileNetV2 1.43x -> 1.06x
    onnxruntime, single thread, AVX2 AMD EPYC)."""
    return target.current().window_widths


def c_tile(c: int) -> int:
    """The channel tile of a part whose C is a multiple of it (see `lines`)."""
    for width in c_widths():
        if c % width == 0:
            return width
    return c


def ow_tile(ow: int, c: int) -> int:
    """The output-width tile of a part of OW (a part is a multiple of 8 or smaller than 8)."""
    divisors = [d for d in range(OW_MIN, OW_MAX + 1) if ow % d == 0 and d != c]
    if divisors:
        return max(divisors)
    if ow < OW_MAX:
        return ow
    return OW_MAX if OW_MAX != c else OW_MAX // 2


def _ow_split_width(ow: int) -> int:
    """OW is split at a multiple of 8 only when no divisor in [4, 8] exists."""
    if ow < OW_MAX or any(ow % d == 0 for d in range(OW_MIN, OW_MAX + 1)):
        return ow  # (no split)
    return OW_MAX


def window_lines(handle: str, ow: int, c: int, kh: int, prefix: str) -> Lines:
    """Split, tile, decompose to 1-D and vectorize an NHWC windowed op (loops n, oh, ow, c,
    kh, kw): depthwise convolutions and poolings."""
    ops: list[str] = []
    result = Lines(ops)
    c_width = min(c_widths()[-1], c)
    for i, (c_handle, c_part) in enumerate(split_parts(handle, 3, c, c_width, f"{prefix}c", ops)):
        ow_parts = split_parts(c_handle, 2, ow, _ow_split_width(ow), f"{prefix}w{i}", ops)
        for j, (part, ow_part) in enumerate(ow_parts):
            ct = c_tile(c_part)
            name = f"{prefix}p{i}{j}"
            more, tiled, loops = tile(part, [1, 1, ow_tile(ow_part, ct), ct, 1, 0], name)
            ops += more
            ops.append(f"%{name}_d = transform.structured.decompose {tiled} "
                       ": (!transform.any_op) -> !transform.any_op")
            ops.append(f"transform.structured.vectorize %{name}_d : !transform.any_op")
            if kh > 1:  # the kh loop carries the accumulator (one iteration: folded away)
                result.hoist_loops.append(loops[-1])
    return result


def outer(problem: Depthwise) -> fusion.Outer:
    """Rows of the output (all of OW and C) up to OUTER_BYTES per forall iteration."""
    rows = [d for d in range(1, problem.oh + 1)
            if problem.oh % d == 0 and d * problem.ow * problem.c * 4 <= OUTER_BYTES]
    oh = rows[-1] if rows else 1
    return fusion.Outer([1, oh, 0, 0, 0, 0], [1, oh, 0, 0], (1, oh, problem.ow, problem.c),
                        problem.epilogue, problem.init, problem.greedy)


def register_fused(handle: str, problem, ops: tuple[str, ...], prefix: str) -> Lines | None:
    """The forall of `outer`, then [1, 1, ow, c] register tiles of the epilogue (or of the op)
    with the windowed op (`ops`: its names) and its init fused into them
    (`fusion.register_fused_lines`): the accumulator starts from the init, the activation
    runs on it before its store, where the forall alone ran the init, the op and the epilogue
    as three passes over each 16 KiB tile. None where C is not a multiple of one channel tile
    (its parts are split) or nothing is fused."""
    p = problem
    ct = c_tile(p.c)
    if not (REGISTER_FUSION and p.greedy and (p.epilogue or p.init)) or p.c % c_widths()[-1]:
        return None
    width = _ow_split_width(p.ow)
    peel = width != p.ow  # (OW split at a multiple of 8: the remainder is the peeled tile)
    ow = ow_tile(p.ow - p.ow % width, ct)

    def kernel(tiled: str, name: str) -> tuple[list[str], list[str]]:
        lines, kh_tile, loops = tile(tiled, [0, 0, 0, 0, 1, 0], name)  # (kh by 1)
        lines += [(f"%{name}_d = transform.structured.decompose {kh_tile} "
                  ": (!transform.any_op) -> !transform.any_op"),
                  f"transform.structured.vectorize %{name}_d : !transform.any_op"]
        return lines, loops if p.kh > 1 else []

    names = ", ".join(f'"{name}"' for name in ops)
    return fusion.register_fused_lines(handle, outer(p), [1, 1, ow, ct], 2,
                                       f"ops{{[{names}]}}", kernel, prefix, peel)


def lines(handle: str, problem: Depthwise, prefix: str) -> Lines:
    """The forall of output rows, fused with the bias init and the epilogue (activation):
    the output is written once, while in cache (a depthwise conv is memory-bound: with the
    init and the ReLU6 as separate passes over the output, it ran 3x slower)."""
    p = problem
    fused = register_fused(handle, p, (NHWC,), prefix)
    if fused is not None:
        return fused
    return fusion.forall_lines(
        handle, outer(problem), prefix,
        lambda tile: window_lines(tile, p.ow, p.c, p.kh, f"{prefix}t"),
        elementwise_lines.tile_lines)


def prepare(op: ir.Operation) -> None:
    return None
