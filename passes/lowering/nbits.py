"""Lowering of `dlc.matmul_nbits` (dialects/nbits.py): the kernel of
`passes/codegen/matmul_nbits.py`, written as MLIR text on tensors, parsed and moved into the
function in place of the op (with the op's location). The packed weights stay 8-bit constants:
no float copy of them exists at any stage.
"""

from __future__ import annotations

from mlir import ir

from dlc.dialects.nbits import MATMUL_NBITS
from dlc.passes.codegen.inline import inline_kernel
from dlc.passes.codegen.matmul_nbits import kernel_text


def _int(op: ir.OpView, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def lower_matmul_nbits(op: ir.OpView, rewriter) -> None:
    # dlc.matmul_nbits(a, b, scales, zero_points) -> the kernel's scf.forall over the panels
    a, zero_points = op.operands[0], op.operands[3]
    m, k = a.type.shape
    n, bits, block = _int(op, "n"), _int(op, "bits"), _int(op, "block_size")
    float_zero = str(zero_points.type.element_type) == "f32"
    result = inline_kernel(op, kernel_text(m, k, n, bits, block, float_zero), op.operands)
    rewriter.replace_op(op, [result])


PATTERNS = {MATMUL_NBITS: lower_matmul_nbits}
