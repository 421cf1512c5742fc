"""Lowering of `dlc.matmul_nbits` (dialects/nbits.py): the kernel of
`passes/codegen/matmul_nbits.py`, written as MLIR text on tensors, parsed and moved into the
function in place of the op (with the op's location). The packed weights stay 8-bit constants:
no float copy of them exists at any stage.
"""

from __future__ import annotations

from mlir import ir

from dlc.dialects.nbits import MATMUL_NBITS
from dlc.passes.codegen.matmul_nbits import kernel_text


def _int(op: ir.OpView, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def lower_matmul_nbits(op: ir.OpView, rewriter) -> None:
    # dlc.matmul_nbits(a, b, scales, zero_points) -> the kernel's scf.forall over the panels
    a, zero_points = op.operands[0], op.operands[3]
    m, k = a.type.shape
    n, bits, block = _int(op, "n"), _int(op, "bits"), _int(op, "block_size")
    float_zero = str(zero_points.type.element_type) == "f32"
    parsed = ir.Module.parse(kernel_text(m, k, n, bits, block, float_zero), context=op.context)
    block_ops = parsed.body.operations[0].regions[0].blocks[0]
    for argument, value in zip(block_ops.arguments, op.operands):
        argument.replace_all_uses_with(value)
    operations = list(block_ops.operations)
    result = operations[-1].operands[0]
    location = op.location

    def locate(inner: ir.Operation) -> ir.WalkResult:
        inner.location = location  # (the profiler and `dlc explore` name the op's node)
        return ir.WalkResult.ADVANCE

    for inner in operations[:-1]:
        inner.move_before(op)
        inner.walk(locate)
    rewriter.replace_op(op, [result])
    del parsed  # (its function, now holding only the return, goes with it)


PATTERNS = {MATMUL_NBITS: lower_matmul_nbits}
