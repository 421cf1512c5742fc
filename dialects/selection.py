"""Selection `dlc` ops: ops whose output SIZE depends on input VALUES (bounded outputs).

dlc compiles static shapes, so each of these ops computes its data-dependent result into a
tensor of the result's MAXIMUM size and returns, as its last result, the number of valid
entries along one axis (`count`, an i64 scalar tensor): the entries at positions >= count on
that axis are padding (unspecified values). `BOUNDED` says which results are bounded and along
which axis; `bound_of(value)` gives a value's count and axis (None for every other value).
The importer returns the count of a bounded graph output as an extra function result, and the
runtime trims the output to it (`dlc.runtime.signature`).

- nonzero(x) -> positions [rank, numel(x)] i64 (row-major order), count along axis 1
- compress{axis}(x, condition) -> x's slices where condition holds, count along `axis`
  (a condition longer than the axis: its extra entries are ignored)
- runtime_topk{axis, largest}(x, k) -> values, indices of the min(max(k, 0), n) best elements
  (k read at run time, n the axis size), count along `axis`
- non_max_suppression{center_point_box, max_per_class, use_score_threshold}(boxes, scores,
  max_output_boxes_per_class, iou_threshold, score_threshold) -> selected [b*c*max_per_class,
  3] i64 (batch, class, box) rows, count along axis 0 (ONNX semantics; `max_per_class` is the
  static bound of the rows per batch and class: min(boxes, the constant maximum) or boxes)
- unique{axis, sorted}(x) -> y (x's shape), indices, inverse_indices, counts ([n] i64, n the
  axis size), count of the unique slices along `axis` (y) and axis 0 (indices, counts);
  inverse_indices is not bounded
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define, op_def
from dlc.dialects.ops import is_bool, is_float, is_int, shape_str, tensor

TensorTypes = list[ir.RankedTensorType]


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _count_type() -> ir.RankedTensorType:
    return tensor([], _i64())


def _check_axis(axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range [0, {rank}) for a rank-{rank} operand")


def _check_scalar(t: ir.RankedTensorType, what: str, integer: bool) -> None:
    numel = 1
    for d in t.shape:
        numel *= d
    if t.rank > 1 or numel != 1:
        raise ShapeError(f"{what} must hold one value, got [{shape_str(t.shape)}]")
    element = t.element_type
    ok = (is_int(element) and not is_bool(element)) if integer else is_float(element)
    if not ok:
        raise ShapeError(f"{what} must be {'an integer' if integer else 'a float'}, "
                         f"got {element}")


def _check_numeric(element: ir.Type) -> None:
    if not (is_int(element) or is_float(element)) or is_bool(element):
        raise ShapeError(f"expects a numeric element type, got {element}")


# ----------------------------------------------------------------------------- inference


def infer_nonzero(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    numel = 1
    for d in x.shape:
        numel *= d
    return [tensor([x.rank, numel], _i64()), _count_type()]


def infer_compress(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, condition = types
    axis = attrs["axis"]
    _check_axis(axis, x.rank)
    if condition.rank != 1 or not is_bool(condition.element_type):
        raise ShapeError(f"condition must be a 1-D bool tensor, got "
                         f"[{shape_str(condition.shape)}] of {condition.element_type}")
    shape = list(x.shape)
    shape[axis] = min(shape[axis], condition.shape[0])
    return [tensor(shape, x.element_type), _count_type()]


def infer_runtime_topk(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, k = types
    axis = attrs["axis"]
    _check_axis(axis, x.rank)
    _check_numeric(x.element_type)
    _check_scalar(k, "k", integer=True)
    if attrs["largest"] not in (0, 1):
        raise ShapeError(f"largest must be 0 or 1, got {attrs['largest']}")
    return [x, tensor(list(x.shape), _i64()), _count_type()]


def infer_non_max_suppression(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    boxes, scores, max_output, iou, score = types
    if boxes.rank != 3 or boxes.shape[2] != 4:
        raise ShapeError(f"boxes must have shape [batches, boxes, 4], got "
                         f"[{shape_str(boxes.shape)}]")
    if scores.rank != 3 or scores.shape[0] != boxes.shape[0] or \
            scores.shape[2] != boxes.shape[1]:
        raise ShapeError(f"scores must have shape [{boxes.shape[0]}, classes, "
                         f"{boxes.shape[1]}], got [{shape_str(scores.shape)}]")
    if not is_float(boxes.element_type) or scores.element_type != boxes.element_type:
        raise ShapeError(f"boxes and scores must be floats of one type, got "
                         f"{boxes.element_type} and {scores.element_type}")
    _check_scalar(max_output, "max_output_boxes_per_class", integer=True)
    _check_scalar(iou, "iou_threshold", integer=False)
    _check_scalar(score, "score_threshold", integer=False)
    per_class = attrs["max_per_class"]
    if not 0 <= per_class <= boxes.shape[1]:
        raise ShapeError(f"max_per_class {per_class} is out of range [0, {boxes.shape[1]}]")
    if attrs["center_point_box"] not in (0, 1):
        raise ShapeError(f"center_point_box must be 0 or 1, got {attrs['center_point_box']}")
    rows = boxes.shape[0] * scores.shape[1] * per_class
    return [tensor([rows, 3], _i64()), _count_type()]


def infer_unique(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    axis = attrs["axis"]
    _check_axis(axis, x.rank)
    if attrs["sorted"] not in (0, 1):
        raise ShapeError(f"sorted must be 0 or 1, got {attrs['sorted']}")
    n = x.shape[axis]
    return [x, tensor([n], _i64()), tensor([n], _i64()), tensor([n], _i64()), _count_type()]


# ----------------------------------------------------------------------------- the ops

NONZERO = define(OpDef(
    "nonzero", ("x",), infer_nonzero, {},
    "the positions of x's non-zero elements, row-major, padded to numel(x) columns",
    results=("positions", "count")))
COMPRESS = define(OpDef(
    "compress", ("x", "condition"), infer_compress, {"axis": "int"},
    "the slices of x along axis where condition holds, padded to the axis size",
    results=("out", "count")))
RUNTIME_TOPK = define(OpDef(
    "runtime_topk", ("x", "k"), infer_runtime_topk, {"axis": "int", "largest": "int"},
    "topk with k read at run time: sorted values and int64 indices, padded to the axis size",
    results=("values", "indices", "count")))
NON_MAX_SUPPRESSION = define(OpDef(
    "non_max_suppression", ("boxes", "scores", "max_output", "iou_threshold",
                            "score_threshold"),
    infer_non_max_suppression,
    {"center_point_box": "int", "max_per_class": "int", "use_score_threshold": "int"},
    "ONNX NonMaxSuppression: selected (batch, class, box) rows, padded to their maximum",
    results=("selected", "count")))
UNIQUE = define(OpDef(
    "unique", ("x",), infer_unique, {"axis": "int", "sorted": "int"},
    "the unique slices of x along axis, their first indices, the inverse and the counts",
    results=("y", "indices", "inverse_indices", "counts", "count")))

# op -> (result number, the attribute holding its bounded axis or the axis itself), for each
# bounded result; the count is the op's last result
BOUNDED: dict[OpDef, tuple[tuple[int, str | int], ...]] = {
    NONZERO: ((0, 1),),
    COMPRESS: ((0, "axis"),),
    RUNTIME_TOPK: ((0, "axis"), (1, "axis")),
    NON_MAX_SUPPRESSION: ((0, 0),),
    UNIQUE: ((0, "axis"), (1, 0), (3, 0)),
}


def bound_of(value: ir.Value) -> tuple[ir.Value, int] | None:
    """(count, axis) when `value` is a bounded result of a selection op, else None."""
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner
    definition = op_def(owner)
    if definition not in BOUNDED:
        return None
    number = ir.OpResult(value).result_number
    for result, axis in BOUNDED[definition]:
        if result == number:
            if isinstance(axis, str):
                axis = ir.IntegerAttr(owner.attributes[axis]).value
            return owner.results[len(owner.results) - 1], axis
    return None


def count_output_name(output: str, axis: int) -> str:
    """The name of the function result holding the count of the bounded graph output
    `output` along `axis` (`dlc.runtime.signature` reads the same convention back)."""
    return f"{output}#count@{axis}"
