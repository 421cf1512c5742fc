"""dlc-canonicalize: algebraic folds, dead-op elimination and CSE on dlc ops.

Upstream `canonicalize`/`cse` cannot erase or merge IRDL ops (they carry no `Pure` trait),
so this pass does it for the dlc dialect, whose ops are all side-effect free.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import build, op_def, ops
from dlc.passes.graph.match import RuleTable, apply_rules, producer
from dlc.passes.registry import ModulePass, register


def _ints(op: ir.Operation, name: str) -> list[int]:
    return [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]


def fold_transpose(op: ir.OpView) -> list[ir.Value] | None:
    x = op.operands[0]
    perm = _ints(op, "perm")
    # transpose(x, identity) -> x
    if perm == list(range(len(perm))):
        return [x]
    inner = producer(x, ops.TRANSPOSE)
    if inner is None:
        return None
    # transpose(transpose(x, p), q) -> transpose(x, p[q])
    inner_perm = _ints(inner, "perm")
    return [build(ops.TRANSPOSE, [inner.operands[0]], {"perm": [inner_perm[q] for q in perm]})]


def fold_reshape(op: ir.OpView) -> list[ir.Value] | None:
    x = op.operands[0]
    # reshape(x) to x's own shape -> x
    if x.type == op.results[0].type:
        return [x]
    inner = producer(x, ops.RESHAPE)
    if inner is None:
        return None
    # reshape(reshape(x)) -> reshape(x)
    return [build(ops.RESHAPE, [inner.operands[0]], {"shape": list(op.results[0].type.shape)})]


RULES: RuleTable = {ops.TRANSPOSE: [fold_transpose], ops.RESHAPE: [fold_reshape]}


def _key(op: ir.Operation) -> tuple:
    # attributes and types are uniqued: hashing them is hashing a pointer (str() would print
    # every constant's data: 0.8 s per run on ResNet-50's 100 MB of weights)
    attrs = tuple(sorted((name, op.attributes[name]) for name in op.attributes))
    return op.name, tuple(op.operands), attrs, tuple(r.type for r in op.results)


def eliminate_dead_and_duplicate(block: ir.Block) -> None:
    """CSE then DCE of dlc ops in `block` (ops are side-effect free)."""
    seen: dict[tuple, ir.Operation] = {}
    for op in list(block.operations):
        op = op.operation
        if op_def(op) is None:
            continue
        key = _key(op)
        if key in seen:
            for old, new in zip(op.results, seen[key].results):
                old.replace_all_uses_with(new)
            continue
        seen[key] = op
    for op in reversed(list(block.operations)):
        op = op.operation
        if op_def(op) is not None and all(not list(r.uses) for r in op.results):
            op.erase()


@register
@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Fold dlc ops (identity transposes and reshapes, chains of them), then CSE and DCE."""

    name = "dlc-canonicalize"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)  # (the driver checks each replacement against its op)
        for region in module.regions:
            for block in region.blocks:
                for op in block.operations:
                    for inner in op.regions:
                        for inner_block in inner.blocks:
                            eliminate_dead_and_duplicate(inner_block)
