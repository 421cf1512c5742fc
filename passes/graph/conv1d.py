"""dlc-conv1d-as-2d: a 1-D f32 convolution as the 2-D convolution of height 1.

    conv(x [N, C, L], w [F, C/g, K]) {strides [s], dilations [d], pads [p0, p1], group g}
      -> reshape(conv(reshape(x) [N, C, 1, L], reshape(w) [F, C/g, 1, K])
                 {strides [1, s], dilations [1, d], pads [0, p0, 0, p1], group g}) [N, F, L']

The same products and sums; the 2-D conv then runs channels-last with the conv schedules
(`dlc-convert-layout`, the packed, grouped and depthwise families), where a 1-D conv's
`linalg.conv_1d_ncw_fcw` matched no schedule and ran as naive loops (a NaivePathWarning):
Whisper's encoder convs, wav2vec2's feature extractor and positional conv, SqueezeBERT's 1x1
convs (found by a sweep of models dlc had not seen). The weight's reshape folds at compile
time.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.conv import CONV
from dlc.passes.graph.match import apply_rules, attributes
from dlc.passes.registry import ModulePass, register


def conv1d_as_2d(op: ir.OpView) -> list[ir.Value] | None:
    x, w = op.operands[0], op.operands[1]
    if not (x.type.rank == 3 and w.type.rank == 3 and x.type.has_static_shape
            and w.type.has_static_shape and op.results[0].type.has_static_shape
            and isinstance(x.type.element_type, ir.F32Type)):
        return None
    attrs = attributes(op)
    loc = op.location
    n, c, length = x.type.shape
    f, cg, k = w.type.shape
    x2 = build(ops.RESHAPE, [x], {"shape": [n, c, 1, length]}, loc=loc)
    w2 = build(ops.RESHAPE, [w], {"shape": [f, cg, 1, k]}, loc=loc)
    p0, p1 = attrs["pads"]
    y = build(CONV, [x2, w2, *op.operands[2:]],
              {"strides": [1, *attrs["strides"]], "dilations": [1, *attrs["dilations"]],
               "pads": [0, p0, 0, p1], "group": attrs["group"]}, loc=loc)
    return [build(ops.RESHAPE, [y], {"shape": list(op.results[0].type.shape)}, loc=loc)]


@register
@dataclass(frozen=True)
class Conv1dAs2d(ModulePass):
    """1-D f32 convs as 2-D convs of height 1 (the conv schedules; see the module doc)."""

    name = "dlc-conv1d-as-2d"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, {CONV: [conv1d_as_2d]})
