"""dlc-sink-transpose: move transposes below elementwise ops, where they meet and cancel.

    f(transpose(x, p))                    -> transpose(f(x), p)          (f unary, relu, cast)
    g(transpose(x, p), transpose(y, p))   -> transpose(g(x, y), p)       (g binary elementwise)
    g(transpose(x, p), c)                 -> transpose(g(x, cᵀ), p)      (c a constant, cᵀ its
                                                                          inverse transpose)
    g(transpose(x, p), y)                 -> transpose(g(x, transpose(y, p⁻¹)), p)
                                             (when y has a transpose by p⁻¹ already: one CSE
                                              merges; a residual beside a converted conv)
    g(transpose(x, p), s)                 -> transpose(g(x, transpose(s, p⁻¹)), p)
                                             (s smaller, broadcast: the scale of a
                                              squeeze-and-excitation block)
    concat(transpose(x, p), transpose(y, p), axis)
                                          -> transpose(concat(x, y, p[axis]), p)

An elementwise op commutes with any permutation of its operands' axes, so the transpose can be
moved past it; sunk transposes then merge with the next one (and vanish when they are inverse,
as dlc-simplify does it here too). A transpose moves only if this was its only use (nothing is
computed twice), or if all its uses are elementwise ops closed over it: each operand is the
transpose, a constant, or a chain of unary ops (and binary ops with a constant) from it, as in
x * sigmoid(x) (SiLU), x * hardsigmoid(x), x * x; each use then moves it and it dies. For binary
ops the transposed operand has the result's shape; the other one may broadcast (a constant, or a
smaller tensor transposed back: cheaper than the transpose it lets move).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, op_def, ops, quant
from dlc.dialects.binary import BINARY, CAST, COMPARE
from dlc.dialects.movement import CONCAT
from dlc.dialects.unary import UNARY
from dlc.passes.graph import simplify
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant,
    constant_array,
    defining_op,
    producer,
    single_use,
    size,
    uses,
)
from dlc.passes.registry import ModulePass, register

# (per-tensor quantize / dequantize are elementwise too: their scale and zero point are
# scalars, `sink_through_unary` checks)
UNARY_OPS = (UNARY, ops.RELU, CAST, quant.QUANTIZE, quant.DEQUANTIZE)
BINARY_OPS = (ops.ADD, ops.SUB, ops.MUL, ops.DIV, BINARY, COMPARE)


def _moving_transpose(value: ir.Value) -> ir.Operation | None:
    inner = producer(value, ops.TRANSPOSE)
    if inner is None:
        return None
    if single_use(value) or all(_closed_over(use.owner, value) for use in value.uses):
        return inner
    return None


def _is(op: ir.Operation, definitions: tuple) -> bool:
    return op.name in {d.name for d in definitions}


def _from(value: ir.Value, root: ir.Value, depth: int = 8) -> bool:
    """Whether `value` is `root`, a constant, or computed from `root` alone by single-use unary
    ops and binary ops with a constant (sigmoid(x), relu6(x + 3) / 6)."""
    if value == root or constant_array(value) is not None:
        return True
    owner = defining_op(value)
    if depth == 0 or owner is None or not single_use(value):
        return False
    if _is(owner, UNARY_OPS):
        return _from(owner.operands[0], root, depth - 1)
    if not _is(owner, BINARY_OPS) or not any(constant_array(v) is not None for v in owner.operands):
        return False
    return all(_from(v, root, depth - 1) for v in owner.operands)


def _closed_over(user: ir.Operation, root: ir.Value) -> bool:
    """Whether elementwise op `user` of `root` reads nothing but `root` (and what `_from`
    accepts) and has its shape, or is a concat of `root` and transposes by the same
    permutation used by it alone (`_concat_of_transposes`): sinking `root`'s transpose into
    it computes nothing twice."""
    if _is(user, (CONCAT,)):
        return _concat_of_transposes(user, root)
    if not _is(user, UNARY_OPS + BINARY_OPS):
        return False
    if list(user.results[0].type.shape) != list(root.type.shape):
        return False
    return all(_from(v, root) for v in user.operands)


def _concat_of_transposes(user: ir.Operation, root: ir.Value) -> bool:
    """Whether concat `user` joins `root` (a transpose's result) with transposes by the same
    permutation that only it uses: a DenseNet block, whose every layer's input is both the
    next concat's operand and its batch norm's (mul, add, relu), kept NCHW between its NHWC
    convs: two transposes of the growing block per layer (DenseNet-121: 116 of them)."""
    perm = attributes(root.owner)["perm"]
    for value in user.operands:
        if value == root:
            continue
        other = producer(value, ops.TRANSPOSE)
        if other is None or attributes(other)["perm"] != perm or not single_use(value):
            return False
    return True


def _rebuild(op: ir.OpView, operands: list[ir.Value], perm: list[int]) -> list[ir.Value]:
    definition = op_def(op)
    inner = build(definition, operands, attributes(op) if definition.attributes else None,
                  loc=op.location)
    return [build(ops.TRANSPOSE, [inner], {"perm": perm}, loc=op.location)]


def sink_through_unary(op: ir.OpView) -> list[ir.Value] | None:
    # f(transpose(x, p)) -> transpose(f(x), p); quantize(transpose(x, p), s, zp) too
    transpose = _moving_transpose(op.operands[0])
    scalars = list(op.operands[1:])
    if transpose is None or any(v.type.rank != 0 for v in scalars):
        return None
    return _rebuild(op, [transpose.operands[0], *scalars], attributes(transpose)["perm"])


def _inverse_transposed(value: ir.Value, perm: list[int]) -> ir.Value | None:
    """A constant operand transposed by the inverse of `perm` (built before the op); one of
    lower rank first gets the leading unit dims that broadcasting gives it (a batch norm's
    [C, 1, 1] scale of NCHW becomes [1, 1, 1, C])."""
    c = constant_array(value)
    if c is None or c.ndim > len(perm):
        return None
    if c.ndim == 0:  # a scalar is its own transpose
        return value
    c = c.reshape((1,) * (len(perm) - c.ndim) + c.shape)
    return constant(np.transpose(c, np.argsort(perm)), value.type.element_type,
                    value.owner.location)


def sink_through_binary(op: ir.OpView) -> list[ir.Value] | None:
    # g(transpose(x, p), transpose(y, p)) -> transpose(g(x, y), p); g(transpose(x, p), c) too
    lhs, rhs = op.operands
    left, right = _moving_transpose(lhs), _moving_transpose(rhs)
    result_shape = list(op.results[0].type.shape)
    if left is not None and right is not None:
        perm = attributes(left)["perm"]
        same = attributes(right)["perm"] == perm and lhs.type.shape == rhs.type.shape
        if not same or list(lhs.type.shape) != result_shape:
            return None
        return _rebuild(op, [left.operands[0], right.operands[0]], perm)
    moving, index = (left, 0) if left is not None else (right, 1)
    if moving is None or list(op.operands[index].type.shape) != result_shape:
        return None
    perm = attributes(moving)["perm"]
    other = op.operands[1 - index]
    if constant_array(other) is None and _broadcasts(other, op.results[0]):
        return _with_transposed_broadcast(op, moving, index, perm)
    if constant_array(other) is None or other.type.rank > len(perm):
        return _with_transposed_partner(op, moving, index, perm)
    c = _inverse_transposed(other, perm)
    operands = [moving.operands[0], c] if index == 0 else [c, moving.operands[0]]
    return _rebuild(op, operands, perm)


def _with_transposed_partner(op: ir.OpView, moving: ir.Operation, index: int,
                             perm: list[int]) -> list[ir.Value] | None:
    # g(transpose(x, p), y) -> transpose(g(x, transpose(y, p⁻¹)), p) when y already has a
    # transpose by p⁻¹ elsewhere (CSE merges the two): a residual whose other use was converted
    other = op.operands[1 - index]
    inverse = [int(i) for i in np.argsort(perm)]
    if list(other.type.shape) != list(op.results[0].type.shape):
        return None
    partner = any(use.owner.name == ops.TRANSPOSE.name and attributes(use.owner)["perm"] == inverse
                  and uses(use.owner.results[0]) > 0  # (not one left dead by a rewrite)
                  and use.owner.operation != moving.operation  # (x - xᵀ: its own partner,
                  for use in other.uses)  # the rewrite would recreate itself forever)
    if not partner:
        return None
    moved = build(ops.TRANSPOSE, [other], {"perm": inverse}, loc=op.location)
    operands = [moving.operands[0], moved] if index == 0 else [moved, moving.operands[0]]
    return _rebuild(op, operands, perm)


def _broadcasts(value: ir.Value, result: ir.Value) -> bool:
    """Whether `value` (same rank) is broadcast to `result`'s larger shape."""
    shape = list(value.type.shape)
    return len(shape) == result.type.rank and size(value.type) < size(result.type)


def _with_transposed_broadcast(op: ir.OpView, moving: ir.Operation, index: int,
                               perm: list[int]) -> list[ir.Value]:
    # g(transpose(x, p), s) -> transpose(g(x, transpose(s, p⁻¹)), p), s broadcast: the small
    # transpose costs less than the large one, which moves on (and cancels: NHWC SE blocks)
    inverse = [int(i) for i in np.argsort(perm)]
    moved = build(ops.TRANSPOSE, [op.operands[1 - index]], {"perm": inverse}, loc=op.location)
    operands = [moving.operands[0], moved] if index == 0 else [moved, moving.operands[0]]
    return _rebuild(op, operands, perm)


def sink_through_concat(op: ir.OpView) -> list[ir.Value] | None:
    # concat(transpose(x, p), transpose(y, p), axis) -> transpose(concat(x, y, p[axis]), p)
    left, right = (_moving_transpose(v) for v in op.operands)
    if left is None or right is None:
        return None
    perm = attributes(left)["perm"]
    if attributes(right)["perm"] != perm:
        return None
    axis = attributes(op)["axis"] % len(perm)
    inner = build(CONCAT, [left.operands[0], right.operands[0]], {"axis": perm[axis]},
                  loc=op.location)
    return [build(ops.TRANSPOSE, [inner], {"perm": perm}, loc=op.location)]


SINKING: RuleTable = {
    **{d: [sink_through_unary] for d in UNARY_OPS},
    **{d: [sink_through_binary] for d in BINARY_OPS},
    CONCAT: [sink_through_concat],
}
RULES: RuleTable = {**SINKING, ops.TRANSPOSE: simplify.ALGEBRA[ops.TRANSPOSE]}


@register
@dataclass(frozen=True)
class SinkTranspose(ModulePass):
    """Move transposes below elementwise ops so that they meet and cancel."""

    name = "dlc-sink-transpose"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
