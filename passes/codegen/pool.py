"""The 2-D pooling schedule: `linalg.pooling_nhwc_max` and `linalg.pooling_nhwc_sum`, static f32.

Pooling is a depthwise convolution without a filter: the same schedule applies
(`depthwise.window_lines`): split so that each part divides its tiles, tile [1, 1, ow, c]
over (n, oh, ow, c) and by 1 over kh, decompose to a 1-D pooling, vectorize over channels
(a max or add per window tap on an ow x c register tile, hoisted out of the kh loop). Same tile
heuristic as `depthwise.py`, and the same forall of output rows (16 KiB tiles, parallel with
`num_threads` > 1) with the accumulator's fill (-inf or 0) and the elementwise consumer fused
into each tile: average pooling is a sum pooling followed by an elementwise division, which
becomes that epilogue (SqueezeNet and ResNet-50: ~1 % faster single-threaded than a separate
fill and pooling).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.passes.codegen import depthwise, elementwise_lines, fusion
from dlc.passes.codegen.depthwise import window_lines
from dlc.passes.codegen.script import Lines

FORALL = True  # the forall of output rows with the init and epilogue fused (see above)
OPS = ("linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")


@dataclass(frozen=True)
class Pool:
    n: int
    oh: int
    ow: int
    c: int
    kh: int
    kw: int
    epilogue: bool = False  # an elementwise consumer fused into the outer tiles (avg: divide)
    init: bool = False  # the accumulator's fill (-inf or 0) fused into the outer tiles
    greedy: bool = False  # one transform builds the forall (fusion_plan.fuses_exactly)


def prepare(op: ir.Operation) -> None:
    return None


def match(op: ir.Operation) -> Pool | None:
    if op.name not in OPS or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if str(types[0].element_type) != "f32" or str(types[2].element_type) != "f32":
        return None
    _, window, y = (list(t.shape) for t in types)
    if 0 in y:
        return None
    return Pool(y[0], y[1], y[2], y[3], window[0], window[1], fusion.epilogue(op) is not None,
                fusion.init_producer(op) is not None)


def volume(problem: Pool) -> int:
    p = problem
    return p.n * p.oh * p.ow * p.c * p.kh * p.kw


def lines(handle: str, problem: Pool, prefix: str) -> Lines:
    """As a depthwise conv: the forall of output rows (16 KiB), its init and epilogue fused."""
    p = problem
    if not FORALL:
        return window_lines(handle, p.ow, p.c, p.kh, prefix)
    fused = depthwise.register_fused(handle, p, OPS, prefix)
    if fused is not None:
        return fused
    return fusion.forall_lines(handle, depthwise.outer(p), prefix,
                               lambda tile: window_lines(tile, p.ow, p.c, p.kh, f"{prefix}t"),
                               elementwise_lines.tile_lines)
