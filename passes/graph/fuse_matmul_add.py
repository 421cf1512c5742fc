"""dlc-fuse-matmul-add: a 2-D matmul followed by an add becomes one gemm with a bias.

    matmul(A, B) + C -> gemm(A, B, C) {alpha = 1, beta = 1}

C may be any value that broadcasts to the product's [M, N] shape without enlarging it: a bias
vector, or a residual tensor of the same shape, so the add becomes the gemm's epilogue. The
matmul must have no other use, and the element type must be a float (gemm's alpha and beta).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.ops import is_float
from dlc.passes.graph.match import RuleTable, apply_rules, producer, single_use
from dlc.passes.registry import ModulePass, register

GEMM_ATTRIBUTES = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}


def fuse_matmul_add(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(A, B) + C -> gemm(A, B, C)
    for index in (0, 1):
        product, c = op.operands[index], op.operands[1 - index]
        matmul = producer(product, ops.MATMUL)
        if matmul is None or not single_use(product) or op.results[0].type != product.type:
            continue
        a, b = matmul.operands
        if a.type.rank != 2 or b.type.rank != 2 or c.type.rank > 2:
            continue
        if not is_float(product.type.element_type):
            continue
        return [build(ops.GEMM, [a, b, c], GEMM_ATTRIBUTES, loc=op.location)]
    return None


RULES: RuleTable = {ops.ADD: [fuse_matmul_add]}


@register
@dataclass(frozen=True)
class FuseMatmulAdd(ModulePass):
    """Fuse a 2-D matmul and the add after it into one gemm with a bias (C) operand."""

    name = "dlc-fuse-matmul-add"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
