"""Walking and moving IR: `ops_where`, the ops of an IR tree that a predicate keeps, collected
before any is rewritten (rewriting while MLIR walks would invalidate the walk); `move_body`,
a region's one block moved into a new op (a linalg.generic rebuilt on other operands, maps or
iterators keeps its body)."""

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


def move_body(source: ir.Operation, target: ir.Operation) -> None:
    """Move the ops of `source`'s first region's block into a new block of `target`'s first
    region, with arguments of the same types (their uses now `target`'s arguments); `source`
    is left with an empty block, to be erased."""
    old = source.regions[0].blocks[0]
    block = target.regions[0].blocks.append(*[a.type for a in old.arguments])
    for old_arg, new_arg in zip(old.arguments, block.arguments, strict=True):
        old_arg.replace_all_uses_with(new_arg)
    for inner in list(old.operations):
        block.append(inner)
