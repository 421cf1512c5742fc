"""Kernels written as MLIR text: `inline_kernel` parses one and moves it in place of an op.

The int8 matmul (`int8_matmul.py`) and the weight-only matmul (`matmul_nbits.py`) write their
kernels as text of one function on tensors; its ops go into the payload before the op they
replace, each located at the op (so the profiler and `dlc explore` name the op's node).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir


def inline_kernel(op: ir.Operation, text: str, values: Sequence[ir.Value]) -> ir.Value:
    """Parse `text` (a module of one function), bind its arguments to `values`, move its ops
    before `op` with `op`'s location; the value its return returns (the caller replaces
    `op`'s result by it)."""
    parsed = ir.Module.parse(text, context=op.context)
    block = parsed.body.operations[0].regions[0].blocks[0]
    for argument, value in zip(block.arguments, values):
        argument.replace_all_uses_with(value)
    operations = list(block.operations)
    result = operations[-1].operands[0]
    location = op.location

    def locate(inner: ir.Operation) -> ir.WalkResult:
        inner.location = location
        return ir.WalkResult.ADVANCE

    for inner in operations[:-1]:
        inner.move_before(op)
        inner.walk(locate)
    return result  # (the parsed function, holding only its return now, goes with `parsed`)
