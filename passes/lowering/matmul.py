"""Lowering of contractions: dlc.matmul (numpy semantics) and dlc.gemm (ONNX Gemm).

2-D matmul becomes `linalg.matmul`, equal-batch 3-D `linalg.batch_matmul`; every other case
(1-D operands, broadcast batch dimensions) a `linalg.generic` contraction whose indexing maps
encode the broadcasting. Accumulators start from a `linalg.fill` of zero. float16 and
bfloat16 accumulate in float32 (as numpy does), truncated to the result type after the
contraction: `linalg.matmul` with f16 inputs and an f32 init extends each operand itself.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg

from dlc.dialects import ops
from dlc.dialects.ops import is_float
from dlc.passes.lowering.builders import (
    PARALLEL,
    REDUCTION,
    as_value,
    dims_map,
    elementwise,
    filled,
    generic,
    scalar,
)


def accumulator_type(element: ir.Type) -> ir.Type:
    """The element type a contraction accumulates in: float32 for float16/bfloat16."""
    return ir.F32Type.get() if isinstance(element, (ir.F16Type, ir.BF16Type)) else element


def accumulator(result_type: ir.RankedTensorType) -> ir.Value:
    """A zero-filled tensor of result_type's shape, of the accumulator element type."""
    acc_type = ir.RankedTensorType.get(list(result_type.shape),
                                       accumulator_type(result_type.element_type))
    return filled(acc_type, 0)


def narrowed(value: ir.Value, result_type: ir.RankedTensorType) -> ir.Value:
    # acc (f32) -> arith.truncf to the result's f16/bf16; other types are returned as they are
    if value.type == result_type:
        return value
    return elementwise([value], result_type,
                       lambda x: arith.truncf(result_type.element_type, x))


def multiply_add(element: ir.Type, acc_element: ir.Type | None = None):
    acc_element = acc_element or element
    if is_float(element):
        if acc_element != element:  # f16 operands: extend each to the f32 accumulator
            return lambda a, b, acc: arith.addf(
                acc, arith.mulf(arith.extf(acc_element, a), arith.extf(acc_element, b)))
        return lambda a, b, acc: arith.addf(acc, arith.mulf(a, b))
    return lambda a, b, acc: arith.addi(acc, arith.muli(a, b))


def lower_matmul(op: ir.OpView, rewriter) -> None:
    # dlc.matmul(a, b) -> linalg.matmul | linalg.batch_matmul | linalg.generic (contraction)
    # (f16/bf16: into an f32 accumulator, then arith.truncf)
    a, b = op.operands
    result_type = op.results[0].type
    with rewriter.ip, op.location:
        acc = accumulator(result_type)
        if a.type.rank == 2 and b.type.rank == 2:
            value = linalg.matmul(a, b, outs=[acc])
        elif a.type.rank == b.type.rank == 3 and a.type.shape[0] == b.type.shape[0]:
            value = linalg.batch_matmul(a, b, outs=[acc])
        else:
            value = _generic_matmul(a, b, acc, result_type)
        rewriter.replace_op(op, [narrowed(as_value(value), result_type)])


def _generic_matmul(a: ir.Value, b: ir.Value, acc: ir.Value, result_type) -> ir.Value:
    out_rank = result_type.rank
    k = out_rank  # the reduction loop comes after the output's loops
    batch = out_rank - (a.type.rank > 1) - (b.type.rank > 1)
    out_shape = list(result_type.shape)

    def batch_dims(operand_shape: list[int]) -> list[int | None]:
        dims = []
        for i, size in enumerate(operand_shape[:-2]):
            axis = batch - (len(operand_shape) - 2) + i
            dims.append(None if size == 1 and out_shape[axis] != 1 else axis)
        return dims

    a_shape, b_shape = list(a.type.shape), list(b.type.shape)
    a_dims = [k] if len(a_shape) == 1 else [*batch_dims(a_shape), batch, k]
    n = batch + (len(a_shape) > 1)
    b_dims = [k] if len(b_shape) == 1 else [*batch_dims(b_shape), k, n]
    maps = [
        dims_map(out_rank + 1, a_dims),
        dims_map(out_rank + 1, b_dims),
        dims_map(out_rank + 1, list(range(out_rank))),
    ]
    iterators = [PARALLEL] * out_rank + [REDUCTION]
    body = multiply_add(result_type.element_type, acc.type.element_type)
    return generic([a, b], acc, maps, iterators, body)


def lower_gemm(op: ir.OpView, rewriter) -> None:
    # dlc.gemm(a, b, c) -> linalg.matmul (transposes in its maps), then alpha*acc + beta*c
    # (f16/bf16: the matmul accumulates in f32, truncated before the epilogue)
    a, b = op.operands[0], op.operands[1]
    c = op.operands[2] if len(op.operands) == 3 else None
    alpha = ir.FloatAttr(op.attributes["alpha"]).value
    beta = ir.FloatAttr(op.attributes["beta"]).value
    trans_a = ir.IntegerAttr(op.attributes["transA"]).value
    trans_b = ir.IntegerAttr(op.attributes["transB"]).value
    result_type = op.results[0].type
    element = result_type.element_type
    with rewriter.ip, op.location:
        acc = accumulator(result_type)
        if not trans_a and not trans_b:
            value = linalg.matmul(a, b, outs=[acc])
        else:
            maps = [
                dims_map(3, [2, 0] if trans_a else [0, 2]),
                dims_map(3, [1, 2] if trans_b else [2, 1]),
                dims_map(3, [0, 1]),
            ]
            value = linalg.matmul(a, b, outs=[acc], indexing_maps=maps)
        value = narrowed(as_value(value), result_type)
        value = _gemm_epilogue(value, c, alpha, beta, result_type, element)
        rewriter.replace_op(op, [as_value(value)])


def _gemm_epilogue(acc, c, alpha: float, beta: float, result_type, element) -> ir.Value:
    floating = is_float(element)
    mul = arith.mulf if floating else arith.muli
    add = arith.addf if floating else arith.addi
    if c is None or beta == 0:
        if alpha == 1:
            return acc
        factor = scalar(element, alpha)
        return elementwise([acc], result_type, lambda x: mul(x, factor))
    alpha_v, beta_v = scalar(element, alpha), scalar(element, beta)

    def body(x, y):
        x = x if alpha == 1 else mul(x, alpha_v)
        y = y if beta == 1 else mul(y, beta_v)
        return add(x, y)

    return elementwise([acc, c], result_type, body)


PATTERNS = {ops.MATMUL: lower_matmul, ops.GEMM: lower_gemm}
