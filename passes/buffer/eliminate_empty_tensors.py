"""dlc-eliminate-empty-tensors: upstream `eliminate-empty-tensors`, skipped where it has nothing
to eliminate.

Upstream's pass runs the whole one-shot bufferization analysis of the module (more than linear
in a function's size: BERT-base 0.7 s, ViT-B/16 1.0 s, issue 20), then, from the source of each
subset insertion (`tensor.insert_slice`, `tensor.parallel_insert_slice`...), follows the
source's equivalent aliases of the same type back (a linalg op's result to its init, a loop's
result to its init; never through a reshape, an `extract_slice` or a block argument) to the
`tensor.empty` ops it replaces by a slice of the insertion's destination. It changes nothing
when no such chain reaches a `tensor.empty`: the transformers' linalg IR has none (their tiled
results are written into slices of the loops' outputs; a concat's inputs reach their empties
through reshapes).

This pass looks for such a chain first, over-approximating the upstream walk: from the source
(operand 0) of every `tensor.insert_slice` and `tensor.parallel_insert_slice`, and every
tensor operand of any other op named `*insert*`, `*copy*` or `*materialize*`, back through
every tensor operand of each defining op whose type may be cast to the value's (and those of
the terminators of its regions), except an `extract_slice`'s source and the inputs of a linalg
op with inputs and inits (its results are equivalent to its inits only). Only when the walk
reaches a `tensor.empty` (and the insertion's destination and offsets are defined before the
empty's user, or computed by ops upstream may move there: not from that user's results) does it
run the upstream pass, so its output is the upstream pass's output in every case.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.passmanager import PassManager

from dlc.passes.registry import ModulePass, register

# ops whose result never is an equivalent alias of (some of) their tensor operands: the walk
# does not follow those operands (upstream stops there: `followEquivalentOnly`)
_NOT_EQUIVALENT = ("tensor.extract_slice", "vector.transfer_read", "arith.constant",
                   "tensor.empty", "bufferization.to_tensor")


def _is_insertion(op: ir.Operation) -> bool:
    name = op.name
    return "insert" in name or "copy" in name or "materialize" in name


def _followed(op: ir.Operation) -> list[ir.Value]:
    """The tensor values `op`'s results may be equivalent aliases of (a superset)."""
    name = op.name
    if name in _NOT_EQUIVALENT:
        return []
    operands = list(op.operands)
    if name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if len(segments) == 2:  # (ins, outs: a structured op, its results are its outs)
            operands = operands[segments[0]:]
    values = [v for v in operands if _is_tensor(v)]
    for region in op.regions:  # (scf.if, scf.for: their results are what their blocks yield)
        for block in region.blocks:
            terminator = block.operations[len(block.operations) - 1] if len(block.operations) else None
            if terminator is not None:
                values += [v for v in terminator.operands if _is_tensor(v)]
    return values


# the subset insertions of the IR dlc makes: operand 0 is the source, operand 1 the destination,
# the rest the offsets, sizes and strides
_INSERTIONS = ("tensor.insert_slice", "tensor.parallel_insert_slice")


def _is_tensor(value: ir.Value) -> bool:
    return isinstance(value.type, ir.RankedTensorType | ir.UnrankedTensorType)


def _empties(sources: list[ir.Value], user: ir.Operation
             ) -> list[tuple[ir.Operation, ir.Operation]]:
    """The tensor.empty ops `sources` (operands of `user`) may be equivalent aliases of, each
    with the op of the chain that uses it (where upstream would build its replacement)."""
    found: list[tuple[ir.Operation, ir.Operation]] = []
    seen: set[ir.Value] = set()
    stack = [(v, user) for v in sources]
    while stack:
        value, reader = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if not isinstance(value, ir.OpResult):
            continue  # (a block argument: upstream's walk stops there too)
        owner = value.owner
        if owner.name == "tensor.empty":
            found.append((owner.operation, reader))
        else:  # (upstream follows same-type chains only: no reshape, no slice)
            stack.extend((v, owner.operation) for v in _followed(owner)
                         if _castable(v.type, value.type))
    return found


class _Order:
    """Dominance of values over ops in one function's structured IR (block order, regions
    nested): each block's op positions are numbered once, on first need."""

    def __init__(self) -> None:
        self._positions: dict[ir.Block, dict[ir.Operation, int]] = {}

    def _position(self, op: ir.Operation) -> int:
        block = op.block
        if block not in self._positions:
            self._positions[block] = {o.operation: i for i, o in enumerate(block.operations)}
        return self._positions[block][op]

    def properly_dominates(self, value: ir.Value, op: ir.Operation) -> bool:
        """Whether `value` is defined before `op` in the same block or an enclosing one (or
        is an argument of a block enclosing it)."""
        if isinstance(value, ir.BlockArgument):
            block = value.owner
            ancestor = op
            while ancestor is not None:
                if ancestor.block == block:
                    return True
                ancestor = _parent(ancestor)
            return False
        definition = value.owner.operation
        ancestor = op
        while ancestor is not None:
            if ancestor.block == definition.block:
                return ancestor != definition and \
                    self._position(definition) < self._position(ancestor)
            ancestor = _parent(ancestor)
        return False

    def available(self, value: ir.Value, op: ir.Operation) -> bool:
        """Whether `value` dominates `op`, or may be made to: upstream moves the ops computing
        it before `op` (`moveValueDefinitions`) unless they use `op`'s results (a superset:
        the walk follows operands only, not the values used inside their regions)."""
        if self.properly_dominates(value, op) or not isinstance(value, ir.OpResult):
            return True
        block = op.block
        if value.owner.operation.block != block:
            return True  # (upstream's rules there are not modelled: a candidate)
        start = self._position(op)
        stack, seen = [value.owner.operation], set()
        while stack:
            definition = stack.pop()
            if definition == op:
                return False
            if definition in seen:
                continue
            seen.add(definition)
            for operand in definition.operands:
                if isinstance(operand, ir.OpResult) and operand.owner.operation.block == block \
                        and self._position(operand.owner.operation) >= start:
                    stack.append(operand.owner.operation)
        return True


def _parent(op: ir.Operation) -> ir.Operation | None:
    parent = op.parent
    return None if parent is None or parent.name == "builtin.module" else parent.operation


def _castable(a: ir.Type, b: ir.Type) -> bool:
    """Whether tensor types `a` and `b` may be equal or cast to each other (a superset of
    upstream's condition on the empty it replaces)."""
    if not (isinstance(a, ir.RankedTensorType) and isinstance(b, ir.RankedTensorType)):
        return True
    if a.element_type != b.element_type or a.rank != b.rank:
        return False
    return all(x == y or ir.ShapedType.is_dynamic_size(x) or ir.ShapedType.is_dynamic_size(y)
               for x, y in zip(a.shape, b.shape, strict=True))


def has_candidates(module: ir.Operation) -> bool:
    """Whether the source of some subset insertion of `module` may be an equivalent alias of a
    `tensor.empty` that upstream `eliminate-empty-tensors` may replace (where it may change
    something)."""
    insertions: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _is_insertion(op) and any(_is_tensor(v) for v in op.operands):
            insertions.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    order = _Order()
    for insertion in insertions:
        if insertion.name not in _INSERTIONS:  # (another kind: any tensor operand, any empty)
            if _empties([v for v in insertion.operands if _is_tensor(v)], insertion):
                return True
            continue
        # upstream builds the replacement (a slice of the destination) before the chain's
        # user of the empty, or before the empty: only where the destination and the offsets
        # are defined by then or can be moved there (MobileBERT's embedding concat: its
        # destination is built from the empty's own user, so its one candidate cost upstream's
        # 28 s analysis of the whole model for nothing)
        needed = list(insertion.operands)[1:]
        for empty, user in _empties([insertion.operands[0]], insertion):
            if any(all(order.available(v, point) for v in needed) for point in (user, empty)):
                return True
    return False


@register
@dataclass(frozen=True)
class EliminateEmptyTensors(ModulePass):
    """Upstream eliminate-empty-tensors, run only when some insertion's source may alias a
    tensor.empty."""

    name = "dlc-eliminate-empty-tensors"

    def run(self, module: ir.Operation) -> None:
        if has_candidates(module):
            PassManager.parse("builtin.module(eliminate-empty-tensors)").run(module)
