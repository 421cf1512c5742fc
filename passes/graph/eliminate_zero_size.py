"""dlc-eliminate-zero-size: a dlc op producing only empty tensors becomes an empty constant.

A tensor with a zero-size axis holds no data, so the op computing it has nothing to compute
(and its operands may become dead); an empty operand of a concat contributes nothing, so the
concat is its other operand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import ops, registered_ops
from dlc.dialects.movement import CONCAT
from dlc.passes.graph.match import apply_rules, constant, dtype_of, size
from dlc.passes.registry import ModulePass, register


def replace_empty(op: ir.OpView) -> list[ir.Value] | None:
    # op(...) -> constant<empty> when every result has no element
    types = [r.type for r in op.results]
    if any(size(t) for t in types) or any(dtype_of(t.element_type) is None for t in types):
        return None
    return [constant(np.zeros(t.shape, dtype_of(t.element_type)), t.element_type, op.location)
            for t in types]


def drop_empty_concat_operand(op: ir.OpView) -> list[ir.Value] | None:
    # concat(x, empty) -> x, concat(empty, x) -> x
    lhs, rhs = op.operands
    for kept, other in ((lhs, rhs), (rhs, lhs)):
        if size(other.type) == 0 and kept.type == op.results[0].type:
            return [kept]
    return None


@register
@dataclass(frozen=True)
class EliminateZeroSize(ModulePass):
    """Replace dlc ops computing empty tensors by constants; drop empty concat operands."""

    name = "dlc-eliminate-zero-size"

    def run(self, module: ir.Operation) -> None:
        rules = {d: [replace_empty] for d in registered_ops().values() if d is not ops.CONSTANT}
        rules[CONCAT] = [replace_empty, drop_empty_concat_operand]
        apply_rules(module, rules)
