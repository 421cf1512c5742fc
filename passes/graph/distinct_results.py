"""dlc-distinct-results: give every returned value its own buffer before bufferization.

`buffer-results-to-out-params{hoist-static-allocs}` crashes the process when one buffer is
returned twice (two graph outputs of one value: Identity, or values merged by CSE and folds),
so each repeated result becomes a copy (`bufferization.alloc_tensor ... copy(...)`).
It also marks every function argument `bufferization.writable = false`: the arguments are the
caller's numpy inputs, which no lowering may overwrite (one-shot-bufferize then copies an
argument before any in-place write to it).
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


def protect_arguments(function: ir.Operation) -> None:
    # func.func @f(%x) -> func.func @f(%x {bufferization.writable = false})
    count = len(function.regions[0].blocks[0].arguments)
    old = function.attributes["arg_attrs"] if "arg_attrs" in function.attributes else None
    attrs = []
    for i in range(count):
        entries = {} if old is None else {a.name: a.attr for a in ir.DictAttr(old[i])}
        entries["bufferization.writable"] = ir.BoolAttr.get(False)
        attrs.append(ir.DictAttr.get(entries))
    function.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


@register
@dataclass(frozen=True)
class DistinctResults(ModulePass):
    """Copy values returned more than once (one buffer each); make arguments read-only."""

    name = "dlc-distinct-results"

    def run(self, module: ir.Operation) -> None:
        for op in module.regions[0].blocks[0].operations:
            if isinstance(op, func.FuncOp) and op.regions[0].blocks:
                copy_repeated_results(op.operation)
                protect_arguments(op.operation)
