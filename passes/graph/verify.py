"""dlc-verify: check the shape and type rules of every dlc op (IRDL checks only counts)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import verify
from dlc.passes.registry import ModulePass, PassFailure, register


@register
@dataclass(frozen=True)
class Verify(ModulePass):
    """Verify dlc ops: inferred result types must match the declared ones."""

    name = "dlc-verify"

    def run(self, module: ir.Operation) -> None:
        problems = verify(module)
        if not problems:
            return
        raise PassFailure.many(problems)
