"""dlc-distinct-results: give every returned value its own buffer before bufferization.

`buffer-results-to-out-params{hoist-static-allocs}` crashes the process when one buffer is
returned twice (two graph outputs of one value: Identity, or values merged by CSE and folds),
so each repeated result becomes a copy (`bufferization.alloc_tensor ... copy(...)`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import bufferization, func

from dlc.passes.registry import ModulePass, register


def copy_repeated_results(function: ir.Operation) -> None:
    # return %a, %a -> return %a, alloc_tensor() copy(%a)
    for block in function.regions[0].blocks:
        terminator = block.operations[len(block.operations) - 1]
        if terminator.operation.name != "func.return":
            continue
        returned: set[ir.Value] = set()
        for index, value in enumerate(terminator.operands):
            if value in returned:
                with ir.InsertionPoint(terminator), terminator.location:
                    copy = bufferization.AllocTensorOp(value.type, [], copy=value)
                terminator.operands[index] = copy.result
            returned.add(value)


@register
@dataclass(frozen=True)
class DistinctResults(ModulePass):
    """Copy values a function returns more than once, so that each result has its own buffer."""

    name = "dlc-distinct-results"

    def run(self, module: ir.Operation) -> None:
        for op in module.regions[0].blocks[0].operations:
            if isinstance(op, func.FuncOp) and op.regions[0].blocks:
                copy_repeated_results(op.operation)
