"""dlc-to-linalg: lower every dlc op to linalg, tensor, arith and math on tensors.

Bool and unsigned tensors get their storage types first (`lowering/storage.py`); each op is
then rewritten by its family's pattern (`lowering/<family>.py`).

Dynamic sizes: a function may take tensors with dynamic sizes (`tensor<?x64xf32>`); every `?`
of a function is then one size (a batch, a sequence length: the runtime checks that a call's
arguments agree), read once at the function's entry (`tensor.dim`) and given to every tensor
its ops build. Only the ops of `lowering.dynamic_ops()` take a dynamic size; any other is
refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, tensor
from mlir.rewrite import RewritePatternSet, apply_patterns_and_fold_greedily

from dlc.dialects import op_def
from dlc.passes.lowering import all_limits, all_patterns, checks, dynamic_ops
from dlc.passes.lowering.builders import dynamic_size
from dlc.passes.lowering.storage import retype_to_storage
from dlc.passes.registry import ModulePass, PassFailure, register


def unsupported_reason(op: ir.Operation) -> str | None:
    """Why `op` cannot be lowered (checked before any rewrite), or None."""
    definition = op_def(op)
    if definition not in all_patterns():
        return "has no lowering to linalg"
    types = [v.type for v in list(op.operands) + list(op.results)]
    if any(not t.has_static_shape for t in types) and definition not in dynamic_ops():
        return "has a dynamic size (?), which its lowering does not take yet"
    limit = all_limits().get(definition)
    return limit(op) if limit is not None else None


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
        problems += checks.prepare(module)
        if problems:
            raise PassFailure.many(problems)
        retype_to_storage(module)
        patterns = RewritePatternSet()
        for definition, pattern in all_patterns().items():
            patterns.add(definition.name, pattern)
        frozen = patterns.freeze()
        for function in _functions(module):
            with dynamic_size(_dynamic_size(function)):
                apply_patterns_and_fold_greedily(function, frozen)


def _functions(module: ir.Operation) -> list[ir.Operation]:
    return [op.operation for region in module.regions for block in region.blocks
            for op in block.operations if isinstance(op.operation.opview, func.FuncOp)]


def _dynamic_size(function: ir.Operation) -> ir.Value | None:
    """The run-time value of `function`'s dynamic size: `tensor.dim` of the first argument
    with a `?`, built at its entry; None when every argument is static."""
    if not function.regions[0].blocks:
        return None
    entry = function.regions[0].blocks[0]
    for argument in entry.arguments:
        if isinstance(argument.type, ir.RankedTensorType):
            for axis, size in enumerate(argument.type.shape):
                if ir.ShapedType.is_dynamic_size(size):
                    with ir.InsertionPoint.at_block_begin(entry), function.location:
                        return tensor.dim(argument, _index(axis))
    return None


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result
