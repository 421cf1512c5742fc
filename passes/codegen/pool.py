"""The 2-D pooling schedule: `linalg.pooling_nhwc_max` and `linalg.pooling_nhwc_sum`, static f32.

Pooling is a depthwise convolution without a filter: the same schedule applies
(`depthwise.window_lines`): split so that each part divides its tiles, tile [1, 1, ow, c]
over (n, oh, ow, c) and by 1 over kh, decompose to a 1-D pooling, vectorize over channels
(a max or add per window tap on an ow x c register tile, hoisted out of the kh loop). Same tile
heuristic as `depthwise.py`. Average pooling is a sum pooling followed by an elementwise
division (scheduled by `elementwise.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.passes.codegen.depthwise import window_lines
from dlc.passes.codegen.script import Lines

OPS = ("linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")


@dataclass(frozen=True)
class Pool:
    n: int
    oh: int
    ow: int
    c: int
    kh: int
    kw: int


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
    return Pool(y[0], y[1], y[2], y[3], window[0], window[1])


def volume(problem: Pool) -> int:
    p = problem
    return p.n * p.oh * p.ow * p.c * p.kh * p.kw


def lines(handle: str, problem: Pool, prefix: str) -> Lines:
    return window_lines(handle, problem.ow, problem.c, problem.kh, prefix)
