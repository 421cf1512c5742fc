"""Lowering of elementwise dlc ops: add, sub, mul, div (numpy broadcasting) and relu.

Operands of the result's shape become the named linalg op (`linalg.add`, ...); broadcasting
becomes a `linalg.generic` whose indexing maps read size-1 and missing axes at index 0.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg

from dlc.dialects import ops
from dlc.dialects.ops import is_float
from dlc.passes.lowering.builders import as_value, elementwise, empty_like, scalar

# op -> (float body, integer body, named linalg op)
BINARY: dict[ops.OpDef, tuple[Callable, Callable, Callable]] = {
    ops.ADD: (arith.addf, arith.addi, linalg.add),
    ops.SUB: (arith.subf, arith.subi, linalg.sub),
    ops.MUL: (arith.mulf, arith.muli, linalg.mul),
    ops.DIV: (arith.divf, arith.divsi, linalg.div),
}


def binary_pattern(float_fn: Callable, int_fn: Callable, named: Callable) -> Callable:
    def lower_binary(op: ir.OpView, rewriter) -> None:
        # dlc.add(a, b) -> linalg.add (same shapes) | linalg.generic {addf} (broadcast)
        lhs, rhs = op.operands
        result_type = op.results[0].type
        with rewriter.ip, op.location:
            if lhs.type == result_type and rhs.type == result_type:
                value = named(lhs, rhs, outs=[empty_like(result_type)])
            else:
                fn = float_fn if is_float(result_type.element_type) else int_fn
                value = elementwise([lhs, rhs], result_type, fn)
            rewriter.replace_op(op, [as_value(value)])

    return lower_binary


def lower_relu(op: ir.OpView, rewriter) -> None:
    # dlc.relu(x) -> linalg.generic {max(x, 0)}
    result_type = op.results[0].type
    element = result_type.element_type
    with rewriter.ip, op.location:
        zero = scalar(element, 0)
        maximum = arith.maximumf if is_float(element) else arith.maxsi
        value = elementwise([op.operands[0]], result_type, lambda x: maximum(x, zero))
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {op: binary_pattern(*fns) for op, fns in BINARY.items()} | {ops.RELU: lower_relu}
