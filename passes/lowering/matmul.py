"""Lowering of contractions: dlc.matmul (numpy semantics) and dlc.gemm (ONNX Gemm).

Every matmul whose operands both have at least 2 dimensions becomes a named op that the
codegen schedules match (`passes/codegen/matmul.py`), never a loop nest of its own:
- A [b..., M, K] x B [K, N] (B 2-D, or its batch dimensions all 1; any batch on A, as every
  Linear of a PyTorch transformer): A reshaped to [b*M, K], `linalg.matmul`, the result
  reshaped back to [b..., M, N];
- equal batch dimensions: both reshaped to [B, M, K] / [B, K, N] (B the product of the batch
  sizes), `linalg.batch_matmul`, reshaped back;
- broadcast batch dimensions (a size-1 or missing batch axis on one side, e.g. [2,1,M,K] x
  [5,K,N]): the broadcast operand is materialized at the result's batch shape (a broadcasting
  copy, `linalg.generic`), then as above. The copy moves batch*M*K (or K*N) elements for
  batch*M*N*K multiply-adds, far cheaper than the unscheduled 4-loop contraction it replaces.
The reshapes are `tensor.reshape` (a view once bufferized), not collapse_shape/expand_shape,
which linalg-fuse-elementwise-ops would fold back into a generic contraction (`builders.reshaped`).
An elementwise consumer (bias add) stays a separate op, vectorized by the elementwise schedule.
1-D operands (vector-matrix, matrix-vector, dot) stay a `linalg.generic` contraction.
Accumulators start from a `linalg.fill` of zero. float16 and bfloat16 accumulate in float32
(as numpy does), truncated to the result type after the contraction: `linalg.matmul` with f16
inputs and an f32 init extends each operand itself.
"""

from __future__ import annotations

import math

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
    reshaped,
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
    # dlc.matmul(a, b) -> [reshape] linalg.matmul | linalg.batch_matmul [reshape]
    #                   | linalg.generic (contraction, 1-D operands)
    # (f16/bf16: into an f32 accumulator, then arith.truncf)
    a, b = op.operands
    result_type = op.results[0].type
    with rewriter.ip, op.location:
        acc_element = accumulator_type(result_type.element_type)
        if a.type.rank < 2 or b.type.rank < 2:
            value = _generic_matmul(a, b, accumulator(result_type), result_type)
        elif _batch_of_ones(b) and _rows_flatten(a):
            value = _flat_matmul(a, b, list(result_type.shape), acc_element)
        else:
            value = _batched_matmul(a, b, list(result_type.shape), acc_element)
        rewriter.replace_op(op, [narrowed(as_value(value), result_type)])


def _batch_of_ones(x: ir.Value) -> bool:
    return all(size == 1 for size in x.type.shape[:-2])


def _rows_flatten(a: ir.Value) -> bool:
    """Whether A's axes before K flatten into one row axis of a size the function has: static,
    or the dynamic size alone ([2, ?, K] would be 2 * ? rows, which one size cannot express:
    a batch matmul with B broadcast instead)."""
    rows = [d for d in a.type.shape[:-1] if d != 1]
    return all(not ir.ShapedType.is_dynamic_size(d) for d in rows) or len(rows) == 1


def _tensor_type(shape: list[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, element)


def _zeros(shape: list[int], element: ir.Type) -> ir.Value:
    return filled(_tensor_type(shape, element), 0)


def _flat_matmul(a: ir.Value, b: ir.Value, out_shape: list[int], acc_element) -> ir.Value:
    # a [b..., M, K] x b [1..., K, N] -> reshape(matmul(reshape(a) [b*M, K], [K, N]))
    k, n = b.type.shape[-2:]
    rows = [d for d in a.type.shape[:-1] if d != 1]  # (a dynamic size: the only one)
    a2 = reshaped(a, [math.prod(rows) if all(d >= 0 for d in rows) else rows[0], k])
    value = linalg.matmul(a2, reshaped(b, [k, n]), outs=[_zeros([a2.type.shape[0], n],
                                                                  acc_element)])
    return reshaped(as_value(value), out_shape)


def _batched_matmul(a: ir.Value, b: ir.Value, out_shape: list[int], acc_element) -> ir.Value:
    # a [b..., M, K] x b [b..., K, N] -> reshape(batch_matmul([B, M, K], [B, K, N]))
    # (a broadcast batch axis is first materialized at the result's batch shape)
    batch = out_shape[:-2]
    a3, b3 = (_batch_flattened(_batch_broadcast(x, batch)) for x in (a, b))
    flat = [math.prod(batch), out_shape[-2], out_shape[-1]]
    value = linalg.batch_matmul(a3, b3, outs=[_zeros(flat, acc_element)])
    return reshaped(as_value(value), out_shape)


def _batch_flattened(x: ir.Value) -> ir.Value:
    # x [b..., R, C] -> [prod(b), R, C]
    shape = list(x.type.shape)
    return reshaped(x, [math.prod(shape[:-2]), *shape[-2:]])


def _batch_broadcast(x: ir.Value, batch: list[int]) -> ir.Value:
    """x [c..., R, C] as [batch..., R, C]: itself when its batch axes already are `batch`, else
    a broadcasting copy (numpy rules)."""
    shape = list(x.type.shape)
    if shape[:-2] == batch:
        return x
    target = _tensor_type([*batch, *shape[-2:]], x.type.element_type)
    return elementwise([x], target, lambda v: v)


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


def _dynamic_limit(op: ir.OpView) -> str | None:
    """Why a matmul with a dynamic size has no lowering yet: a dynamic batch dimension (the
    rows, the contraction and the columns may be dynamic: attention's [S, D] x [D, S] and
    [S, S] x [S, D]), or a 1-D operand."""
    a, b = (v.type for v in op.operands)
    if a.has_static_shape and b.has_static_shape:
        return None
    if a.rank >= 2 and b.rank >= 2 and all(
            not ir.ShapedType.is_dynamic_size(d) for d in [*a.shape[:-2], *b.shape[:-2]]):
        return None
    return "has a dynamic batch dimension (?) or a 1-D operand, which its lowering does " \
        "not take yet"


PATTERNS = {ops.MATMUL: lower_matmul, ops.GEMM: lower_gemm}
LIMITS = {ops.MATMUL: _dynamic_limit}
DYNAMIC_OPS = (ops.MATMUL, ops.GEMM)
