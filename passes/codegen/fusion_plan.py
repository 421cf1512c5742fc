"""Which ops the contraction families fuse (`fused_elsewhere`) and whether one greedy
`transform.structured.fuse` builds a contraction's forall (`fuses_exactly`, `plan`): see
`fusion.py`'s docstring.

These ask the families' `match` (matmul, conv, depthwise), which import `fusion`, so they sit
above them; the elementwise family (`elementwise.match`) and `dlc-schedule` (`plan`) use them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mlir import ir

from dlc.passes.codegen import conv, depthwise, grouped_conv, int8_matmul, matmul
from dlc.passes.codegen.fusion import _is_op, epilogue, init_producer, is_contraction


def _tileable(op: ir.Operation) -> bool:
    """What `transform.structured.fuse` would fuse (TilingInterface ops of this pipeline)."""
    return op.name.startswith("linalg.") or op.name == "tensor.pad"


def fuses_exactly(op: ir.Operation, scheduled: Callable[[ir.Operation], bool]) -> bool:
    """Greedy tile-and-fuse of contraction `op` (rooted at its epilogue) fuses exactly the
    contraction and its init: no other operand of the three comes from a tileable op that is
    not `scheduled` itself (becoming a loop first) nor fused into a scheduled contraction."""
    fused = [p for p in (op.operation, epilogue(op), init_producer(op)) if p is not None]
    for member in fused:
        for operand in member.operands:
            owner = operand.owner
            if not _is_op(owner) or any(owner.operation == p for p in fused):
                continue
            owner = owner.operation
            if _settled(owner, scheduled):
                continue  # (a fill, shared or not, is cloned into the tile: cheap, no copy)
            if fused_elsewhere(owner) and _inputs_settled(owner, scheduled):
                continue  # (the epilogue of a contraction scheduled before)
            return False
    return True


def _inputs_settled(epilogue_op: ir.Operation, scheduled: Callable[[ir.Operation], bool]) -> bool:
    """The epilogue of a scheduled contraction whose other operands are settled too: each
    scheduled, a fill or not tileable. An operand from an unscheduled linalg op (MobileOne's
    small 1x1 depthwise branch, added to a scheduled 3x3 one) would be pulled by a greedy fuse
    through the epilogue into the consumer's tiles, where it failed to vectorize and took the
    consumer's schedule down with it (its 1x1 conv on naive loops: 38x onnxruntime)."""
    owners = [v.owner.operation for v in epilogue_op.operands if _is_op(v.owner)]
    return any(scheduled(o) for o in owners) and all(_settled(o, scheduled) for o in owners)


def _settled(op: ir.Operation, scheduled: Callable[[ir.Operation], bool]) -> bool:
    """A greedy fuse leaves `op` where it is: not tileable, scheduled itself (a loop first) or
    a fill (cloned into each tile)."""
    return not _tileable(op) or scheduled(op) or op.name == "linalg.fill"


def fused_elsewhere(op: ir.Operation) -> bool:
    """`op` is the epilogue or the init producer of a contraction that fuses it."""
    def problem(contraction: object) -> object | None:
        if _is_op(contraction) and contraction.name == grouped_conv.NAMED:
            return grouped_conv.match(contraction)
        if not is_contraction(contraction) or int8_matmul.match(contraction) is not None:
            return None  # (the integer kernel fuses nothing)
        return (matmul.match(contraction) or conv.match(contraction)
                or depthwise.match(contraction))

    op = op.operation
    for operand in op.operands:  # (the last one: an epilogue updating in place)
        found = problem(operand.owner)
        if found is not None and found.epilogue and epilogue(operand.owner) == op:
            return True
    users = [use.owner for use in op.results[0].uses]
    if not users:
        return False
    # (an init shared by several contractions, each fusing a clone of it: the light models'
    # splat bias fills, CSE'd into one; scheduled on its own as well, it was flattened to 1-D
    # and the contractions' schedules failed to fuse the reshape it became)
    for user in users:
        found = problem(user)
        if found is None or not found.init or init_producer(user) != op:
            return False
    return True


def plan(op: ir.Operation, problem: object, scheduled: Callable[[ir.Operation], bool]) -> object:
    """`problem` (of a family whose problems have a `greedy` field) with `greedy` set for
    contraction `op`; any other problem unchanged."""
    if not hasattr(problem, "greedy"):
        return problem
    return replace(problem, greedy=fuses_exactly(op, scheduled))
