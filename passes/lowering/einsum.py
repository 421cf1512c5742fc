"""Lowering of dlc.einsum: one linalg.generic whose loops are the equation's letters.

The output's axes are parallel loops, every other letter a reduction loop; each operand's
indexing map lists its loop per axis (a repeated letter reads a diagonal, a broadcast size-1
`...` axis reads index 0). The body multiplies the operands' elements into the accumulator,
which starts from a linalg.fill of zero.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from dlc.dialects import einsum as einsum_ops
from dlc.dialects.ops import is_float
from dlc.passes.lowering.builders import PARALLEL, REDUCTION, as_value, dims_map, filled, generic
from dlc.passes.lowering.storage import source_types


def lower_einsum(op: ir.OpView, rewriter) -> None:
    # dlc.einsum{"bij,bjk->bik"}(a, b) -> linalg.generic {acc + a * b} over (b, i, k | j)
    operands = list(op.operands)
    equation = ir.StringAttr(op.attributes["equation"]).value
    p = einsum_ops.plan(equation, [list(v.type.shape) for v in operands])
    result_type = op.results[0].type
    floating = is_float(source_types(op)[1][0])
    mul, add = (arith.mulf, arith.addf) if floating else (arith.muli, arith.addi)
    loops = len(p.sizes)
    maps = [dims_map(loops, dims) for dims in p.inputs] + [dims_map(loops, p.output)]
    iterators = [PARALLEL] * len(p.output) + [REDUCTION] * (loops - len(p.output))

    def body(*args: ir.Value) -> ir.Value:
        product = args[0]
        for element in args[1:-1]:
            product = mul(product, element)
        return add(args[-1], product)

    with rewriter.ip, op.location:
        value = generic(operands, filled(result_type, 0), maps, iterators, body)
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {einsum_ops.EINSUM: lower_einsum}
