"""Importers of the ONNX ops whose output size depends on run-time values (bounded outputs).

NonZero, Compress, TopK (k computed at run time), Unique and NonMaxSuppression become the
selection ops of `dialects/selection.py`: a result of the maximum size plus the count of its
valid entries along one axis. NonZero of a constant, Compress with a constant condition and
TopK with a constant k keep their static imports (`indexing.py`, `reduction.py`), which call
the `import_runtime_*` functions here otherwise.

Such a value may only be a graph output for now (the runtime trims it to its count):
`check_not_bounded` rejects, with a FrontendError naming both nodes, any other node that
reads one (Identity excepted: it passes the value on unchanged). Where a constant input would
make the op static (NonZero's data, Compress's condition, TopK's k, Unique's input: folded or
imported statically), the error is a `NeedsConstantError` naming that input, so that
`dlc.backend` can still compile such a model per value of it, as it did before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from mlir import ir

from dlc.dialects import OpDef, op_def, ops, selection
from dlc.frontends.onnx_node import (
    FrontendError,
    Importer,
    NeedsConstantError,
    NodeContext,
    dense,
)

Values = list[ir.Value]

ONNX_OPS = {
    selection.NONZERO: "NonZero",
    selection.COMPRESS: "Compress",
    selection.RUNTIME_TOPK: "TopK",
    selection.NON_MAX_SUPPRESSION: "NonMaxSuppression",
    selection.UNIQUE: "Unique",
}


def producer_text(value: ir.Value) -> str:
    """`node 'name' (OpType)` of the node that computed a bounded value."""
    owner = value.owner
    text = str(owner.location)  # loc("<node name>"), as the importer located it
    name = text[5:-2] if text.startswith('loc("') and text.endswith('")') else text
    return f"node '{name}' ({ONNX_OPS.get(op_def(owner), owner.name)})"


# the operand whose value, known at compile time, makes the op static
STATIC_WITH = {selection.NONZERO: 0, selection.COMPRESS: 1, selection.RUNTIME_TOPK: 1,
               selection.UNIQUE: 0}


def _source_name(owner: ir.Operation, names: Mapping[str, ir.Value]) -> str | None:
    """The ONNX name of the operand of `owner` that STATIC_WITH names (through the reshape
    that flattens Compress's and Unique's input), or None."""
    index = STATIC_WITH.get(op_def(owner))
    if index is None:
        return None
    operand = owner.operands[index]
    for _ in range(2):
        found = next((name for name, value in names.items() if value == operand), None)
        if found is not None or not isinstance(operand, ir.OpResult) or \
                op_def(operand.owner) is not ops.RESHAPE:
            return found
        operand = operand.owner.operands[0]
    return None


def check_not_bounded(value: ir.Value, consumer: str,
                      names: Mapping[str, ir.Value] | None = None) -> None:
    """FrontendError when `value` is a bounded output (its size known at run time only) read
    by `consumer` (`node 'x' (Add)`, a body output...); a NeedsConstantError naming the input
    that would make it static, when one would and `names` (the values by ONNX name) has it."""
    if selection.bound_of(value) is None:
        return
    message = (f"{producer_text(value)}: its output size depends on run-time values and feeds "
               f"{consumer}; dlc compiles such ops only as graph outputs for now")
    source = _source_name(value.owner, names or {})
    if source is None:
        raise FrontendError(message)
    raise NeedsConstantError(source, f"{message} (or with its input '{source}' a constant: for "
                             f"a graph input, dlc.compile(model, constants={{'{source}': ...}}))")


def _axis(n: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range [{-rank}, {rank}) for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def _flattened(n: NodeContext, x: ir.Value) -> ir.Value:
    return n.build(ops.RESHAPE, [x], {"shape": [math.prod(x.type.shape)]})


def _build_all(n: NodeContext, op: OpDef, operands: list[ir.Value],
               attrs: dict | None = None) -> Values:
    """Every result of a built op (`n.build` gives the first)."""
    return list(n.build(op, operands, attrs).owner.results)


def _constant(n: NodeContext, array: np.ndarray) -> ir.Value:
    return n.build(ops.CONSTANT, [], {"value": dense(array, n)})


def import_runtime_nonzero(n: NodeContext) -> Values:
    # NonZero(x) -> dlc.nonzero(x): positions [rank, numel] and their count (axis 1)
    return _build_all(n, selection.NONZERO, [n.inputs[0]])[:1]


def import_runtime_compress(n: NodeContext) -> Values:
    # Compress(x, condition) -> dlc.compress{axis}(x, condition) (x flattened: no axis)
    x, condition = n.inputs[:2]
    axis = n.attr("axis")
    if axis is None:
        x, axis = _flattened(n, x), 0
    axis = _axis(n, axis, x.type.rank)
    return _build_all(n, selection.COMPRESS, [x, condition], {"axis": axis})[:1]


def import_runtime_topk(n: NodeContext) -> Values:
    # TopK(x, k) with k computed at run time -> dlc.runtime_topk: both outputs padded to the
    #   axis size, count min(max(k, 0), size)
    x, k = n.inputs[:2]
    attrs = {"axis": _axis(n, n.attr("axis", -1), x.type.rank), "largest": n.attr("largest", 1)}
    return _build_all(n, selection.RUNTIME_TOPK, [x, k], attrs)[:2]


def import_unique(n: NodeContext) -> Values:
    # Unique(x) -> dlc.unique{axis, sorted}(x) (x flattened: no axis): y, indices,
    #   inverse_indices, counts
    x = n.inputs[0]
    axis = n.attr("axis")
    if axis is None:
        x, axis = _flattened(n, x), 0
    axis = _axis(n, axis, x.type.rank)
    sorted_ = int(n.attr("sorted", 1))
    if sorted_ not in (0, 1):
        raise n.error(f"sorted must be 0 or 1, got {sorted_}")
    return _build_all(n, selection.UNIQUE, [x], {"axis": axis, "sorted": sorted_})[:4]


def _optional(n: NodeContext, index: int) -> bool:
    return index < len(n.node.input) and bool(n.node.input[index])


def import_non_max_suppression(n: NodeContext) -> Values:
    # NonMaxSuppression(boxes, scores, max_output, iou, score_threshold)
    #   -> dlc.non_max_suppression: [batches * classes * per_class, 3] rows and their count,
    #   per_class = min(boxes, max_output) when max_output is a constant, else boxes
    boxes, scores = n.inputs[:2]
    if boxes.type.rank != 3 or scores.type.rank != 3:
        raise n.error(f"boxes and scores must be 3-D, got ranks {boxes.type.rank} and "
                      f"{scores.type.rank}")
    count = boxes.type.shape[1]
    if _optional(n, 2):
        max_output = n.inputs[2]
        name = n.node.input[2]
        constant = n.constants.get(name)
        per_class = count if constant is None else \
            min(count, max(int(np.asarray(constant).reshape(-1)[0]), 0))
    else:  # (ONNX's default: 0 boxes per class)
        max_output, per_class = _constant(n, np.zeros([1], np.int64)), 0
    iou = n.inputs[3] if _optional(n, 3) else _constant(n, np.zeros([1], np.float32))
    use_score = _optional(n, 4)
    score = n.inputs[4] if use_score else _constant(n, np.zeros([1], np.float32))
    center_point_box = int(n.attr("center_point_box", 0))
    if center_point_box not in (0, 1):
        raise n.error(f"center_point_box must be 0 or 1, got {center_point_box}")
    attrs = {"center_point_box": center_point_box, "max_per_class": per_class,
             "use_score_threshold": int(use_score)}
    return _build_all(n, selection.NON_MAX_SUPPRESSION, [boxes, scores, max_output, iou, score],
                       attrs)[:1]


# The dispatch table: ONNX op type -> importer (NonZero, Compress and TopK: in their
# families' tables, which call the import_runtime_* importers above).
IMPORTERS: dict[str, Importer] = {
    "Unique": import_unique,
    "NonMaxSuppression": import_non_max_suppression,
}
