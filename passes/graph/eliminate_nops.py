"""dlc-eliminate-nops: remove the dlc ops that return their operand unchanged.

A reshape or cast to the operand's own type, a transpose by the identity permutation, a pad
of zero everywhere, a broadcast (ONNX Expand) to the operand's own shape, a slice of the whole
tensor and a reduction over no axis (of sum, mean, max, min or prod) are the identity. The
other no-ops the issue lists never reach the dlc dialect: the importer resolves Identity,
inference Dropout and single-input Sum/Concat/Mean to their input.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import CAST
from dlc.dialects.movement import BROADCAST, PAD, SLICE
from dlc.dialects.reduction import REDUCE
from dlc.passes.graph.match import RuleTable, apply_rules, attributes
from dlc.passes.registry import ModulePass, register

IDENTITY_REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def _same_type(op: ir.OpView) -> list[ir.Value] | None:
    # op(x) -> x when the result has x's type (reshape, cast, broadcast)
    x = op.operands[0]
    return [x] if x.type == op.results[0].type else None


def drop_identity_transpose(op: ir.OpView) -> list[ir.Value] | None:
    # transpose(x, [0, 1, ..., n-1]) -> x
    perm = attributes(op)["perm"]
    return [op.operands[0]] if perm == list(range(len(perm))) else None


def drop_zero_pad(op: ir.OpView) -> list[ir.Value] | None:
    # pad(x, pads = 0...) -> x
    return [op.operands[0]] if not any(attributes(op)["pads"]) else None


def drop_whole_slice(op: ir.OpView) -> list[ir.Value] | None:
    # slice(x, starts = 0, steps = 1, sizes = shape) -> x
    x, attrs = op.operands[0], attributes(op)
    whole = (not any(attrs["starts"]) and all(s == 1 for s in attrs["steps"])
             and list(attrs["sizes"]) == list(x.type.shape))
    return [x] if whole else None


def drop_empty_reduce(op: ir.OpView) -> list[ir.Value] | None:
    # reduce{sum|mean|max|min|prod}(x, axes = []) -> x
    attrs = attributes(op)
    if attrs["axes"] or attrs["fn"] not in IDENTITY_REDUCTIONS:
        return None
    return _same_type(op)


RULES: RuleTable = {
    ops.RESHAPE: [_same_type],
    CAST: [_same_type],
    BROADCAST: [_same_type],
    ops.TRANSPOSE: [drop_identity_transpose],
    PAD: [drop_zero_pad],
    SLICE: [drop_whole_slice],
    REDUCE: [drop_empty_reduce],
}


@register
@dataclass(frozen=True)
class EliminateNops(ModulePass):
    """Remove dlc ops that are the identity (same-type reshape/cast, zero pad, ...)."""

    name = "dlc-eliminate-nops"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
