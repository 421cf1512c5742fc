"""dlc-to-linalg: lower every dlc op to linalg, tensor, arith and math on tensors."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.rewrite import RewritePatternSet, apply_patterns_and_fold_greedily

from dlc.dialects import op_def
from dlc.passes.lowering import elementwise, matmul, shape
from dlc.passes.registry import ModulePass, PassFailure, register

PATTERNS = elementwise.PATTERNS | matmul.PATTERNS | shape.PATTERNS


def unsupported_reason(op: ir.Operation) -> str | None:
    """Why `op` cannot be lowered (checked before any rewrite), or None."""
    definition = op_def(op)
    if definition not in PATTERNS:
        return "has no lowering to linalg"
    types = [v.type for v in list(op.operands) + list(op.results)]
    if any(not t.has_static_shape for t in types):
        return "has dynamic shapes, which the lowering does not support yet"
    return None


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
        if problems:
            raise PassFailure.many(problems)
        patterns = RewritePatternSet()
        for definition, pattern in PATTERNS.items():
            patterns.add(definition.name, pattern)
        apply_patterns_and_fold_greedily(module, patterns.freeze())
