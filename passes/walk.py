"""`ops_where`: the ops of an IR tree that a predicate keeps, collected before any is rewritten
(rewriting while MLIR walks would invalidate the walk)."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir


def ops_where(root: ir.Operation, keep: Callable[[ir.Operation], bool]) -> list[ir.Operation]:
    """The ops nested in `root` (itself included) for which `keep` is true, in walk order."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if keep(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found
