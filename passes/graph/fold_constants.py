"""dlc-fold-constants: evaluate, at compile time, the dlc ops whose operands are all constants.

Every DL compiler does it (TVM's FoldConstant, onnx-mlir's ConstProp): a subgraph that only
depends on weights (BatchNormalization's 1 / sqrt(var + eps), the per-channel reshapes of its
parameters, shape arithmetic) is computed once with numpy and becomes one `dlc.constant`.
Only the ops of `graph.evaluate.EVALUATORS` fold, each where numpy computes exactly what the
compiled code would. A result with more than `max-elements` elements is never folded, nor one
that would store more than its operands do (a broadcast of a small constant), unless it is
uniform: uniform results are stored as splats, whatever their size. The dequantization of
quantized weights (`WEIGHTS`) folds whatever its size: the schedules of the convolutions and
matmuls reading them need constant filters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import check_op, op_def, ops, quant
from dlc.passes.graph.evaluate import EVALUATORS, evaluate
from dlc.passes.graph.match import (
    Rule,
    apply_rules,
    attributes,
    constant,
    constant_array,
    dtype_of,
    producer,
    size,
)
from dlc.passes.registry import ModulePass, register

SMALL = 1024  # results up to this size may be larger than their operands
# ops folded whatever their size: the DequantizeLinear of a quantized model's weights (a static
# QDQ model, ResNet-50's 2M-element layer4 filters), whose convolutions and matmuls need a
# constant filter for their schedules (unfolded: naive loops or runtime packing, 12x onnxruntime)
WEIGHTS = (quant.DEQUANTIZE,)
UNBOUNDED = 1 << 31


def _grows(result: np.ndarray, operands: list[np.ndarray]) -> bool:
    flat = result.reshape(-1)
    uniform = flat.size == 0 or bool(np.all(flat == flat[0]))
    return not uniform and result.size > max(SMALL, sum(a.size for a in operands))


def fold_rule(max_elements: int) -> Rule:
    def fold(op: ir.OpView) -> list[ir.Value] | None:
        # op(constant, ...) -> constant
        if len(op.results) != 1 or op.name == ops.CONSTANT.name:
            return None
        result_type = op.results[0].type
        dtype = dtype_of(result_type.element_type)
        limit = UNBOUNDED if op_def(op) in WEIGHTS else max_elements
        if dtype is None or size(result_type) > limit:
            return None
        if any(producer(v, ops.CONSTANT) is None or size(v.type) > limit for v in op.operands):
            return None
        arrays = [constant_array(v) for v in op.operands]
        if any(a is None for a in arrays):
            return None
        if check_op(op.operation) is not None:
            return None  # attributes the verifier rejects (a perm [0, 0]): it reports them
        result = evaluate(op_def(op), arrays, attributes(op), list(result_type.shape), dtype)
        if result is None or _grows(result, arrays):
            return None
        return [constant(result, result_type.element_type, op.location)]

    return fold


@register
@dataclass(frozen=True)
class FoldConstants(ModulePass):
    """Evaluate dlc ops whose operands are all constants (numpy), within a size limit."""

    name = "dlc-fold-constants"
    max_elements: int = 1 << 20

    def run(self, module: ir.Operation) -> None:
        rule = fold_rule(self.max_elements)
        apply_rules(module, {definition: [rule] for definition in EVALUATORS})
