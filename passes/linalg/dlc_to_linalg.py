"""dlc-to-linalg: lower every dlc op to linalg, tensor, arith and math on tensors.

Bool and unsigned tensors get their storage types first (`lowering/storage.py`); each op is
then rewritten by its family's pattern (`lowering/<family>.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.rewrite import RewritePatternSet, apply_patterns_and_fold_greedily

from dlc.dialects import op_def
from dlc.passes.lowering import all_limits, all_patterns, checks
from dlc.passes.lowering.storage import retype_to_storage
from dlc.passes.registry import ModulePass, PassFailure, register


def unsupported_reason(op: ir.Operation) -> str | None:
    """Why `op` cannot be lowered (checked before any rewrite), or None."""
    definition = op_def(op)
    if definition not in all_patterns():
        return "has no lowering to linalg"
    types = [v.type for v in list(op.operands) + list(op.results)]
    if any(not t.has_static_shape for t in types):
        return "has dynamic shapes, which the lowering does not support yet"
    limit = all_limits().get(definition)
    return limit(op) if limit is not None else None


@register
@dataclass(frozen=True)
class DlcToLinalg(ModulePass):
    """Lower dlc ops to linalg/tensor/arith/math (named linalg ops where they exist)."""

    name = "dlc-to-linalg"

    def run(self, module: ir.Operation) -> None:
        problems: list[tuple[ir.Location, str]] = []

        def check(op: ir.Operation) -> ir.WalkResult:
            if op_def(op) is not None:
                reason = unsupported_reason(op)
                if reason:
                    problems.append((op.location, f"'{op.name}' op {reason}"))
            return ir.WalkResult.ADVANCE

        module.walk(check)
        problems += checks.prepare(module)
        if problems:
            raise PassFailure.many(problems)
        retype_to_storage(module)
        patterns = RewritePatternSet()
        for definition, pattern in all_patterns().items():
            patterns.add(definition.name, pattern)
        apply_patterns_and_fold_greedily(module, patterns.freeze())
