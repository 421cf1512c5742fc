"""dlc-split-deallocs: a `bufferization.dealloc` of distinct allocations becomes one per buffer.

`ownership-based-buffer-deallocation` frees a function's buffers in one
`bufferization.dealloc` at the end of its block, N memrefs in one op. Upstream's
`buffer-deallocation-simplification` then splits it, but only after asking alias analysis
whether each memref may alias each other one: N² queries (a 4k-node chain at -O0: 7 s of
that pass, issue 20). Results of distinct `memref.alloc` ops never alias, so such a dealloc
(every memref a different `memref.alloc` result, nothing retained) is split here, in the
same order and with the same conditions: the simplification then sees N one-memref deallocs
(linear) and produces what it produced before. Any other dealloc is left to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import bufferization

from dlc.passes.registry import ModulePass, register


def splittable(dealloc: ir.Operation) -> bool:
    """Whether `dealloc` frees more than one buffer, each a distinct `memref.alloc` result,
    and retains nothing."""
    memrefs = list(dealloc.opview.memrefs)
    if len(memrefs) < 2 or len(dealloc.opview.retained) != 0:
        return False
    owners = set()
    for value in memrefs:
        if not isinstance(value, ir.OpResult) or value.owner.operation.name != "memref.alloc":
            return False
        owners.add(value.owner.operation)
    return len(owners) == len(memrefs)


@register
@dataclass(frozen=True)
class SplitDeallocs(ModulePass):
    """Split each bufferization.dealloc of distinct memref.alloc buffers (nothing retained)
    into one dealloc per buffer."""

    name = "dlc-split-deallocs"

    def run(self, module: ir.Operation) -> None:
        found: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "bufferization.dealloc" and splittable(op):
                found.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for dealloc in found:
            view = dealloc.opview
            with ir.InsertionPoint(dealloc), dealloc.location:
                for memref, condition in zip(view.memrefs, view.conditions, strict=True):
                    bufferization.DeallocOp([memref], [condition], [])
            dealloc.erase()
