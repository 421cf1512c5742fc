"""Importers of the gather/scatter and indexing ONNX ops.

Gather, GatherElements, GatherND, ScatterElements (and its opset-9 name Scatter), ScatterND,
OneHot and TopK map to their dlc ops (`dialects/indexing.py`) with axes normalized to
non-negative values and ONNX defaults materialized. Shape-determining inputs must be
constants: OneHot's depth. NonZero's output shape depends on its data: it is folded to a
`dlc.constant` when its input is a constant, and is a bounded output otherwise
(`selection.py`), as TopK is when its k (an attribute before opset 10, an input since) is not
a constant.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import cast

import numpy as np
from mlir import ir

from dlc.dialects import indexing, ops
from dlc.frontends.onnx_node import Importer, NodeContext, dense
from dlc.frontends.onnx_ops.selection import import_runtime_nonzero, import_runtime_topk

Values = list[ir.Value]


def _axis(n: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range [{-rank}, {rank}) for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def _scalar_input(n: NodeContext, index: int, what: str) -> int:
    value = np.asarray(n.constant_input(index, what)).reshape(-1)
    if value.size != 1:
        raise n.error(f"its {what} input must hold one value, got {value.size}")
    return int(value[0])


def import_gather(n: NodeContext) -> Values:
    data, indices = n.inputs[:2]
    axis = _axis(n, n.attr("axis", 0), data.type.rank)
    return [n.build(indexing.GATHER, [data, indices], {"axis": axis})]


def import_gather_elements(n: NodeContext) -> Values:
    data, indices = n.inputs[:2]
    axis = _axis(n, n.attr("axis", 0), data.type.rank)
    return [n.build(indexing.GATHER_ELEMENTS, [data, indices], {"axis": axis})]


def import_gather_nd(n: NodeContext) -> Values:
    data, indices = n.inputs[:2]
    batch_dims = n.attr("batch_dims", 0)  # (opset 12; 0 before)
    return [n.build(indexing.GATHER_ND, [data, indices], {"batch_dims": batch_dims})]


def _reduction(n: NodeContext) -> str:
    reduction = n.attr("reduction", "none")  # (opset 16: none, add, mul; 18: max, min)
    return reduction.decode() if isinstance(reduction, bytes) else reduction


def import_scatter_elements(n: NodeContext) -> Values:
    data, indices, updates = n.inputs[:3]
    attrs = {"axis": _axis(n, n.attr("axis", 0), data.type.rank), "reduction": _reduction(n)}
    return [n.build(indexing.SCATTER_ELEMENTS, [data, indices, updates], attrs)]


def import_scatter_nd(n: NodeContext) -> Values:
    data, indices, updates = n.inputs[:3]
    attrs = {"reduction": _reduction(n)}
    return [n.build(indexing.SCATTER_ND, [data, indices, updates], attrs)]


def import_one_hot(n: NodeContext) -> Values:
    indices, _, values = n.inputs[:3]
    rank = indices.type.rank
    axis = n.attr("axis", -1)  # counts the new axis: [-rank - 1, rank]
    if not -rank - 1 <= axis <= rank:
        raise n.error(f"axis {axis} is out of range [{-rank - 1}, {rank}] for rank-{rank} "
                      "indices")
    axis = axis + rank + 1 if axis < 0 else axis
    depth = _scalar_input(n, 1, "depth")
    return [n.build(indexing.ONE_HOT, [indices, values], {"depth": depth, "axis": axis})]


def import_topk(n: NodeContext) -> Values:
    x = n.inputs[0]
    if n.opset >= 10 and len(n.node.input) > 1 and n.node.input[1] not in n.constants:
        return import_runtime_topk(n)
    k = n.attr("k") if n.opset < 10 else _scalar_input(n, 1, "k")
    if k is None:
        raise n.error("needs its k attribute (opset < 10)")
    attrs = {"k": k, "axis": _axis(n, n.attr("axis", -1), x.type.rank),
             "largest": n.attr("largest", 1)}  # sorted: the result is always sorted
    values = n.build(indexing.TOPK, [x], attrs)
    return list(values.owner.results)


def import_nonzero(n: NodeContext) -> Values:
    # NonZero(constant x) -> dlc.constant of the [rank, count] int64 positions
    if n.node.input[0] not in n.constants:
        return import_runtime_nonzero(n)
    x = n.constants[n.node.input[0]]
    positions = np.array(np.nonzero(x) if x.ndim else np.nonzero(np.atleast_1d(x))[:0],
                         dtype=np.int64)
    if x.ndim == 0:
        positions = positions.reshape(0, int(bool(x)))
    name = n.node.output[0] if n.node.output else ""
    if name:  # a later node may read it as its shape input
        cast(MutableMapping, n.constants)[name] = positions
    return [n.build(ops.CONSTANT, [], {"value": dense(positions, n)})]


# The dispatch table: ONNX op type -> importer.
IMPORTERS: dict[str, Importer] = {
    "Gather": import_gather,
    "GatherElements": import_gather_elements,
    "GatherND": import_gather_nd,
    "Scatter": import_scatter_elements,
    "ScatterElements": import_scatter_elements,
    "ScatterND": import_scatter_nd,
    "OneHot": import_one_hot,
    "TopK": import_topk,
    "NonZero": import_nonzero,
}
