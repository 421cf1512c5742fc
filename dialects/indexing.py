"""Gather/scatter and indexing `dlc` ops: gather, gather_elements, gather_nd,
scatter_elements, scatter_nd, one_hot and topk.

Semantics are ONNX's. Attributes are normalized by the importer (axes non-negative, `depth`
and `k` resolved to integers), so the inference functions only check consistency. Index
operands hold signed integers (i32/i64; one_hot takes any numeric type); a negative index
counts from the end of its axis. An index still out of range after that is clamped into the
axis by the lowering (ONNX leaves that case undefined; clamping keeps memory accesses safe).

`dlc.topk` has two results (values and int64 indices), named by `OpDef.results`. NonZero needs no op:
its output shape depends on the data, so the importer folds it on constant inputs.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import is_bool, is_float, is_int, is_unsigned, shape_str, tensor

TensorTypes = list[ir.RankedTensorType]

REDUCTIONS = ("none", "add", "mul", "max", "min")


# ----------------------------------------------------------------------------- checks


def _check_axis(axis: int, rank: int) -> None:
    if not 0 <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range [0, {rank}) for a rank-{rank} operand")


def _check_indices(t: ir.RankedTensorType, what: str = "indices") -> None:
    element = t.element_type
    if not is_int(element) or is_bool(element) or is_unsigned(element) or \
            ir.IntegerType(element).width > 64:  # (the lowering's i64 index arithmetic)
        raise ShapeError(f"{what} must be signed integers (i32 or i64), got {element}")


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ShapeError(f"reduction '{reduction}' is not one of {', '.join(REDUCTIONS)}")


def _check_updates(data: ir.RankedTensorType, updates: ir.RankedTensorType,
                   shape: list[int]) -> None:
    if updates.element_type != data.element_type:
        raise ShapeError(f"updates must have the data's element type {data.element_type}, "
                         f"got {updates.element_type}")
    if list(updates.shape) != shape:
        raise ShapeError(f"updates of shape [{shape_str(updates.shape)}] must have shape "
                         f"[{shape_str(shape)}]")


def _check_index_extent(data: ir.RankedTensorType, indices: ir.RankedTensorType,
                        axis: int) -> None:
    # an element of indices names the data element at its own position but along `axis`: on
    # the other axes, an indices larger than the data would read or write beyond it
    beyond = [a for a in range(data.rank) if a != axis and indices.shape[a] > data.shape[a]]
    if beyond:
        raise ShapeError(f"indices [{shape_str(indices.shape)}] are larger than the data "
                         f"[{shape_str(data.shape)}] on axis {beyond[0]} (only axis {axis}, "
                         "the indexed one, may differ)")


def _check_not_empty(data: ir.RankedTensorType, axis: int, result_shape: list[int]) -> None:
    if data.shape[axis] == 0 and all(d > 0 for d in result_shape):
        raise ShapeError(f"axis {axis} of [{shape_str(data.shape)}] is empty: there is "
                         "nothing to index")


# ----------------------------------------------------------------------------- inference


def infer_gather(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    data, indices = types
    axis = attrs["axis"]
    _check_axis(axis, data.rank)
    _check_indices(indices)
    shape = [*data.shape[:axis], *indices.shape, *data.shape[axis + 1:]]
    _check_not_empty(data, axis, shape)
    return [tensor(shape, data.element_type)]


def infer_gather_elements(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    data, indices = types
    axis = attrs["axis"]
    _check_axis(axis, data.rank)
    _check_indices(indices)
    if indices.rank != data.rank:
        raise ShapeError(f"indices [{shape_str(indices.shape)}] must have the data's rank "
                         f"{data.rank}")
    _check_index_extent(data, indices, axis)
    _check_not_empty(data, axis, list(indices.shape))
    return [tensor(list(indices.shape), data.element_type)]


def _gather_nd_shape(data: ir.RankedTensorType, indices: ir.RankedTensorType,
                     batch_dims: int) -> list[int]:
    """The result shape of gather_nd; also the shape scatter_nd's updates must have."""
    _check_indices(indices)
    if indices.rank < 1 or not 0 <= batch_dims < min(data.rank, indices.rank):
        raise ShapeError(f"batch_dims {batch_dims} must be below both ranks (data "
                         f"{data.rank}, indices {indices.rank}), indices of rank >= 1")
    k = indices.shape[-1]
    if list(data.shape[:batch_dims]) != list(indices.shape[:batch_dims]):
        raise ShapeError(f"batch axes differ: data [{shape_str(data.shape)}], indices "
                         f"[{shape_str(indices.shape)}] (batch_dims {batch_dims})")
    if not 1 <= k <= data.rank - batch_dims:
        raise ShapeError(f"the last axis of indices ({k}) must be in [1, "
                         f"{data.rank - batch_dims}] for rank-{data.rank} data")
    shape = [*indices.shape[:-1], *data.shape[batch_dims + k:]]
    if any(d == 0 for d in data.shape[batch_dims:batch_dims + k]) and \
            all(d > 0 for d in shape):
        raise ShapeError(f"data [{shape_str(data.shape)}] has an empty indexed axis")
    return shape


def infer_gather_nd(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    data, indices = types
    return [tensor(_gather_nd_shape(data, indices, attrs["batch_dims"]), data.element_type)]


def infer_scatter_elements(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    data, indices, updates = types
    axis = attrs["axis"]
    _check_axis(axis, data.rank)
    _check_indices(indices)
    _check_reduction(attrs["reduction"])
    if indices.rank != data.rank:
        raise ShapeError(f"indices [{shape_str(indices.shape)}] must have the data's rank "
                         f"{data.rank}")
    _check_index_extent(data, indices, axis)
    _check_updates(data, updates, list(indices.shape))
    _check_not_empty(data, axis, list(indices.shape))
    return [data]


def infer_scatter_nd(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    data, indices, updates = types
    _check_reduction(attrs["reduction"])
    _check_updates(data, updates, _gather_nd_shape(data, indices, 0))
    return [data]


def infer_one_hot(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    indices, values = types
    depth, axis = attrs["depth"], attrs["axis"]
    if not (is_int(indices.element_type) or is_float(indices.element_type)) or \
            is_bool(indices.element_type):
        raise ShapeError(f"indices must be numeric, got {indices.element_type}")
    if list(values.shape) != [2]:
        raise ShapeError(f"values must hold two elements [off, on], got "
                         f"[{shape_str(values.shape)}]")
    if depth < 0:
        raise ShapeError(f"depth must be >= 0, got {depth}")
    if not 0 <= axis <= indices.rank:
        raise ShapeError(f"axis {axis} is out of range [0, {indices.rank}] for rank-"
                         f"{indices.rank} indices")
    shape = [*indices.shape[:axis], depth, *indices.shape[axis:]]
    return [tensor(shape, values.element_type)]


def infer_topk(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    k, axis = attrs["k"], attrs["axis"]
    _check_axis(axis, x.rank)
    if not (is_int(x.element_type) or is_float(x.element_type)) or is_bool(x.element_type):
        raise ShapeError(f"expects a numeric element type, got {x.element_type}")
    if not 0 <= k <= x.shape[axis]:
        raise ShapeError(f"k {k} is out of range [0, {x.shape[axis]}] (axis {axis} of "
                         f"[{shape_str(x.shape)}])")
    if attrs["largest"] not in (0, 1):
        raise ShapeError(f"largest must be 0 or 1, got {attrs['largest']}")
    shape = list(x.shape)
    shape[axis] = k
    return [tensor(shape, x.element_type), tensor(shape, ir.IntegerType.get_signless(64))]


# ----------------------------------------------------------------------------- the ops

GATHER = define(OpDef("gather", ("data", "indices"), infer_gather, {"axis": "int"},
                      "data indexed along `axis` by every element of indices"))
GATHER_ELEMENTS = define(OpDef(
    "gather_elements", ("data", "indices"), infer_gather_elements, {"axis": "int"},
    "out[i] = data[i with i[axis] = indices[i]]"))
GATHER_ND = define(OpDef(
    "gather_nd", ("data", "indices"), infer_gather_nd, {"batch_dims": "int"},
    "slices of data at the index tuples of the last axis of indices"))
SCATTER_ELEMENTS = define(OpDef(
    "scatter_elements", ("data", "indices", "updates"), infer_scatter_elements,
    {"axis": "int", "reduction": "str"},
    "data with out[i with i[axis] = indices[i]] (reduced with) updates[i], in order"))
SCATTER_ND = define(OpDef(
    "scatter_nd", ("data", "indices", "updates"), infer_scatter_nd, {"reduction": "str"},
    "data with the slices at the index tuples of indices (reduced with) updates, in order"))
ONE_HOT = define(OpDef(
    "one_hot", ("indices", "values"), infer_one_hot, {"depth": "int", "axis": "int"},
    "values[1] where the new axis equals the index (negative: + depth), values[0] elsewhere"))
TOPK = define(OpDef(
    "topk", ("x",), infer_topk, {"k": "int", "axis": "int", "largest": "int"},
    "the k largest (or smallest) elements along axis, sorted, and their int64 indices",
    results=("values", "indices")))
