"""dlc-einsum-matmul: a two-operand f32 einsum that is a (batched) matrix product becomes
transposes, reshapes and one `dlc.matmul`, which the matmul schedule takes.

The lowering of `dlc.einsum` is one linalg.generic, which no schedule family matches: every
einsum ran as naive loops (a NaivePathWarning; MaxViT-T's attention einsums, 1x64x2x49x32,
were half its time, 1.5x onnxruntime; `ik,kj->ij` 30x, `bhid,bhjd->bhij` 7x). With the
equation's loops (`einsum.plan`) sorted into

    batch: in both operands and the output      M: in the first operand and the output
    K:     in both operands, not the output     N: in the second operand and the output

the einsum is out = transpose(reshape(matmul(reshape(transpose(a) to [batch.., M.., K..]) as
[B, M, K], reshape(transpose(b) to [batch.., K.., N..]) as [B, K, N]))) (no batch: a 2-D
matmul; identity transposes and reshapes are not built). Left as they are (the generic):
einsums of one operand, a letter repeated in one term (a diagonal), a letter summed in one
operand only, a broadcast `...` axis of size 1, no summed letter (an outer product: an
elementwise op), and element types other than f32.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.einsum import EINSUM, plan
from dlc.passes.graph.match import apply_rules, attributes
from dlc.passes.registry import ModulePass, register


def _operand(value: ir.Value, loops: list[int], order: list[int], shape: list[int],
             loc: ir.Location) -> ir.Value:
    """`value` (its axes the loops `loops`) transposed to the loops' `order`, reshaped to
    `shape`."""
    perm = [loops.index(loop) for loop in order]
    if perm != list(range(len(perm))):
        value = build(ops.TRANSPOSE, [value], {"perm": perm}, loc=loc)
    if list(value.type.shape) != shape:
        value = build(ops.RESHAPE, [value], {"shape": shape}, loc=loc)
    return value


def einsum_matmul(op: ir.OpView) -> list[ir.Value] | None:
    if len(op.operands) != 2 or not all(
            isinstance(v.type, ir.RankedTensorType) and v.type.has_static_shape
            and isinstance(v.type.element_type, ir.F32Type) for v in (*op.operands, op.result)):
        return None
    a, b = op.operands
    p = plan(attributes(op)["equation"], [list(a.type.shape), list(b.type.shape)])
    la, lb = p.inputs
    if None in la or None in lb or len(set(la)) < len(la) or len(set(lb)) < len(lb):
        return None  # (a broadcast size-1 axis; a diagonal)
    out = set(p.output)
    batch = [i for i in p.output if i in la and i in lb]
    m = [i for i in p.output if i in la and i not in lb]
    n = [i for i in p.output if i in lb and i not in la]
    k = [i for i in la if i in lb and i not in out]
    if set(la) - out - set(lb) or set(lb) - out - set(la) or not k:
        return None  # (a letter summed in one operand only; an outer product)
    size = p.sizes
    bt, mt, nt, kt = (prod(size[i] for i in group) for group in (batch, m, n, k))
    lead = [bt] if batch else []
    loc = op.location
    lhs = _operand(a, la, batch + m + k, lead + [mt, kt], loc)
    rhs = _operand(b, lb, batch + k + n, lead + [kt, nt], loc)
    product = build(ops.MATMUL, [lhs, rhs], loc=loc)
    # [B, M, N] -> the output's loops
    loops = batch + m + n
    grouped = [size[i] for i in loops]
    if list(product.type.shape) != grouped:
        product = build(ops.RESHAPE, [product], {"shape": grouped}, loc=loc)
    perm = [loops.index(i) for i in p.output]
    if perm != list(range(len(perm))):
        product = build(ops.TRANSPOSE, [product], {"perm": perm}, loc=loc)
    return [product]


@register
@dataclass(frozen=True)
class EinsumMatmul(ModulePass):
    """Two-operand f32 einsums that are matrix products as transposes, reshapes and one
    dlc.matmul (see the module doc)."""

    name = "dlc-einsum-matmul"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, {EINSUM: [einsum_matmul]})
