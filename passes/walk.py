"""Walking and moving IR: `ops_where`, the ops of an IR tree that a predicate keeps, collected
before any is rewritten (rewriting while MLIR walks would invalidate the walk); `move_body`,
a region's one block moved into a new op (a linalg.generic rebuilt on other operands, maps or
iterators keeps its body); `constant_index` and `trip_counts`, the static bounds of loops."""

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


def constant_index(value: ir.Value) -> int | None:
    """The value of an integer `arith.constant` (an index bound), or None."""
    owner = value.owner
    if isinstance(owner, ir.OpView):
        owner = owner.operation
    if not isinstance(owner, ir.Operation) or owner.name != "arith.constant":
        return None
    attribute = owner.attributes["value"]
    return ir.IntegerAttr(attribute).value if isinstance(attribute, ir.IntegerAttr) else None


def trip_counts(loop: ir.Operation) -> list[int] | None:
    """The trip count of each dimension of `loop` (an scf.parallel, or an scf.for: one), or
    None when a bound is not static."""
    rank = (len(loop.operands) - len(loop.results)) // 3
    bounds = [constant_index(v) for v in list(loop.operands)[: 3 * rank]]
    if any(b is None for b in bounds) or any(s <= 0 for s in bounds[2 * rank:]):
        return None
    lows, highs, steps = bounds[:rank], bounds[rank:2 * rank], bounds[2 * rank:]
    return [max(0, -(-(h - lo) // s)) for lo, h, s in zip(lows, highs, steps, strict=True)]


def untag(root: ir.Operation, name: str) -> None:
    """Remove the attribute `name` from every op under `root` (a pass's marks for its
    transform script)."""
    def visit(op: ir.Operation) -> ir.WalkResult:
        if name in op.attributes:
            del op.attributes[name]
        return ir.WalkResult.ADVANCE

    root.walk(visit)
