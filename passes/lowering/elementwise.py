"""Lowering of elementwise dlc ops: add, sub, mul, div (numpy broadcasting) and relu.

Operands of the result's shape become the named linalg op (`linalg.add`, ...); broadcasting
becomes a `linalg.generic` whose indexing maps read size-1 and missing axes at index 0.
Integer division is always a `linalg.generic` whose body cannot trap (see `divide_integers`).
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg

from dlc.dialects import ops
from dlc.dialects.ops import is_float, is_unsigned
from dlc.passes.lowering.builders import as_value, elementwise, empty_like, scalar
from dlc.passes.lowering.storage import source_types


def divide_integers(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # lhs / rhs truncated toward zero, where x / 0 -> 0 (numpy's //) and MIN / -1 -> MIN
    # (wrapped): a plain arith.divsi traps (SIGFPE) on both and kills the process
    element = lhs.type
    zero, one, minus_one = (scalar(element, v) for v in (0, 1, -1))
    by_zero = arith.cmpi(arith.CmpIPredicate.eq, rhs, zero)
    by_minus_one = arith.cmpi(arith.CmpIPredicate.eq, rhs, minus_one)
    divisor = arith.select(arith.ori(by_zero, by_minus_one), one, rhs)
    quotient = arith.select(by_minus_one, arith.subi(zero, lhs), arith.divsi(lhs, divisor))
    return arith.select(by_zero, zero, quotient)


def divide_unsigned(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # lhs / rhs, where x / 0 -> 0 (arith.divui traps on 0)
    zero, one = scalar(lhs.type, 0), scalar(lhs.type, 1)
    by_zero = arith.cmpi(arith.CmpIPredicate.eq, rhs, zero)
    quotient = arith.divui(lhs, arith.select(by_zero, one, rhs))
    return arith.select(by_zero, zero, quotient)


# op -> (float body, signed integer body, unsigned integer body,
#        named linalg op for floats, for integers)
BINARY: dict[ops.OpDef, tuple[Callable, Callable, Callable, Callable, Callable | None]] = {
    ops.ADD: (arith.addf, arith.addi, arith.addi, linalg.add, linalg.add),
    ops.SUB: (arith.subf, arith.subi, arith.subi, linalg.sub, linalg.sub),
    ops.MUL: (arith.mulf, arith.muli, arith.muli, linalg.mul, linalg.mul),
    ops.DIV: (arith.divf, divide_integers, divide_unsigned, linalg.div, None),
}


def binary_pattern(float_fn: Callable, signed_fn: Callable, unsigned_fn: Callable,
                   named_float: Callable, named_int: Callable | None) -> Callable:
    def lower_binary(op: ir.OpView, rewriter) -> None:
        # dlc.add(a, b) -> linalg.add (same shapes) | linalg.generic {addf} (broadcast)
        lhs, rhs = op.operands
        result_type = op.results[0].type
        source = source_types(op)[1][0]
        floating = is_float(source)
        named = named_float if floating else named_int
        fn = float_fn if floating else unsigned_fn if is_unsigned(source) else signed_fn
        with rewriter.ip, op.location:
            if named and lhs.type == result_type and rhs.type == result_type:
                value = named(lhs, rhs, outs=[empty_like(result_type)])
            else:
                value = elementwise([lhs, rhs], result_type, fn)
            rewriter.replace_op(op, [as_value(value)])

    return lower_binary


def lower_relu(op: ir.OpView, rewriter) -> None:
    # dlc.relu(x) -> linalg.generic {max(x, 0)}
    result_type = op.results[0].type
    element = result_type.element_type
    source = source_types(op)[1][0]
    with rewriter.ip, op.location:
        zero = scalar(element, 0)
        maximum = arith.maximumf if is_float(source) else \
            arith.maxui if is_unsigned(source) else arith.maxsi
        value = elementwise([op.operands[0]], result_type, lambda x: maximum(x, zero))
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {op: binary_pattern(*fns) for op, fns in BINARY.items()} | {ops.RELU: lower_relu}
DYNAMIC_OPS = (*BINARY, ops.RELU)
