"""dlc-simplify: algebraic simplification of dlc ops (block level).

    x * 1 -> x     x + 0 -> x     x - 0 -> x     x / 1 -> x     -(-x) -> x
    transpose(transpose(x, p), q) -> transpose(x, p[q])      (identity: x)
    reshape(reshape(x)) -> reshape(x)                        (to x's shape: x)
    reshape(broadcast(x)) -> broadcast(reshape(x))           (the reshape only drops unit dims)
    transpose(x, p) -> reshape(x) when p moves no data (it only moves axes of size 1)
    matmul(transpose(A), transpose(B)) -> transpose(matmul(B, A))   (Aᵀ·Bᵀ = (B·A)ᵀ)

An identity rewrite applies only when the result has x's type (a constant 0 or 1 that
broadcasts x to a larger shape stays). `x + 0 -> x` turns -0.0 + 0.0 (= +0.0) into -0.0, as
every DL compiler's simplifier does. The no-op rules of dlc-eliminate-nops run here too, so
that chains collapse to nothing in one pass. A broadcast whose result loses unit dims by a
reshape (ONNX Tile or Expand of a higher-rank view: DeBERTa's relative-position keys, Tile
[12, 1, 1] of [1, 512, 64] imported as reshape to [1, 1, 1, 512, 1, 64], broadcast, reshape)
broadcasts at the lower rank: the reshape of the broadcast had linalg fuse the chain into the
matmul that read it, a generic on naive loops (87x onnxruntime for that product). (The same
move for a transpose's reshape, tried for DeBERTa-v2's keys, put a reshape of a function
argument before the transpose, which linalg then folded into the matmul: a generic again for
the usual attention forms; not done.)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.movement import BROADCAST
from dlc.dialects.unary import UNARY
from dlc.passes.graph import eliminate_nops
from dlc.passes.graph.match import RuleTable, apply_rules, attributes, is_splat_of, merge, producer
from dlc.passes.registry import ModulePass, register


def _identity(operand: int, number: float):
    """The rule `op(x, number) -> x` with the constant as operand `operand` (0 or 1)."""

    def rule(op: ir.OpView) -> list[ir.Value] | None:
        x, c = op.operands[1 - operand], op.operands[operand]
        if x.type != op.results[0].type or not is_splat_of(c, number):
            return None
        return [x]

    rule.__name__ = f"drop_{number:g}_operand_{operand}"
    return rule


def drop_double_negation(op: ir.OpView) -> list[ir.Value] | None:
    # -(-x) -> x
    if attributes(op)["fn"] != "neg":
        return None
    inner = producer(op.operands[0], UNARY)
    if inner is None or attributes(inner)["fn"] != "neg":
        return None
    return [inner.operands[0]]


def merge_transposes(op: ir.OpView) -> list[ir.Value] | None:
    # transpose(transpose(x, p), q) -> transpose(x, p[q])
    inner = producer(op.operands[0], ops.TRANSPOSE)
    if inner is None:
        return None
    p, q = attributes(inner)["perm"], attributes(op)["perm"]
    perm = [p[i] for i in q]
    x = inner.operands[0]
    if perm == list(range(len(perm))):
        return [x]
    return [build(ops.TRANSPOSE, [x], {"perm": perm}, loc=op.location)]


def merge_reshapes(op: ir.OpView) -> list[ir.Value] | None:
    # reshape(reshape(x)) -> reshape(x)
    inner = producer(op.operands[0], ops.RESHAPE)
    if inner is None:
        return None
    x, shape = inner.operands[0], list(op.results[0].type.shape)
    if x.type == op.results[0].type:
        return [x]
    return [build(ops.RESHAPE, [x], {"shape": shape}, loc=op.location)]


def transpose_to_reshape(op: ir.OpView) -> list[ir.Value] | None:
    # transpose(x, p) -> reshape(x) when p keeps the order of the axes of size > 1
    x, perm = op.operands[0], attributes(op)["perm"]
    if sorted(perm) != list(range(x.type.rank)):
        return None  # not a permutation (unverified IR): the verifier reports it
    moved = [axis for axis in perm if x.type.shape[axis] != 1]
    if moved != sorted(moved):
        return None
    return [build(ops.RESHAPE, [x], {"shape": list(op.results[0].type.shape)},
                  loc=op.location)]


def _swaps_last_two(perm: list[int]) -> bool:
    rank = len(perm)
    return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]


def transpose_product(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(transpose(A), transpose(B)) -> transpose(matmul(B, A))
    a, b = (producer(v, ops.TRANSPOSE) for v in op.operands)
    if a is None or b is None:
        return None
    perm = attributes(a)["perm"]
    if not _swaps_last_two(perm) or attributes(b)["perm"] != perm:
        return None
    if op.results[0].type.rank != len(perm):
        return None
    product = build(ops.MATMUL, [b.operands[0], a.operands[0]], loc=op.location)
    return [build(ops.TRANSPOSE, [product], {"perm": perm}, loc=op.location)]


def broadcast_lower_rank(op: ir.OpView) -> list[ir.Value] | None:
    # reshape(broadcast(x) [.., 1, ..]) -> broadcast(reshape(x)) when the reshape drops 1s
    inner = producer(op.operands[0], BROADCAST)
    if inner is None:
        return None
    x = inner.operands[0]
    wide, shape = list(inner.results[0].type.shape), list(op.results[0].type.shape)
    if x.type.rank != len(wide) or [d for d in wide if d != 1] != shape or len(shape) == len(wide):
        return None
    kept = [size for size, out in zip(x.type.shape, wide, strict=True) if out != 1]
    narrow = build(ops.RESHAPE, [x], {"shape": kept}, loc=op.location)
    return [build(BROADCAST, [narrow], {"shape": shape}, loc=op.location)]


ALGEBRA: RuleTable = {
    ops.ADD: [_identity(1, 0), _identity(0, 0)],
    ops.SUB: [_identity(1, 0)],
    ops.MUL: [_identity(1, 1), _identity(0, 1)],
    ops.DIV: [_identity(1, 1)],
    UNARY: [drop_double_negation],
    ops.TRANSPOSE: [merge_transposes, transpose_to_reshape],
    ops.RESHAPE: [merge_reshapes, broadcast_lower_rank],
    ops.MATMUL: [transpose_product],
}
RULES = merge(eliminate_nops.RULES, ALGEBRA)


@register
@dataclass(frozen=True)
class Simplify(ModulePass):
    """Algebraic simplification: x*1, x+0, -(-x), transpose/reshape chains, Aᵀ·Bᵀ."""

    name = "dlc-simplify"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
