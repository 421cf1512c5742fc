"""Importer of TensorScatter (opset 24), the KV-cache update, as a gather and a select.

present[b, ..., j, ...] = update[b, ..., k, ...] where k = j - write_indices[b] (mod the cache
length in circular mode) lies in [0, update length), else past[b, ..., j, ...]. Reading the
update at k (clamped into range) is a `dlc.gather_elements` along the sequence axis, so the
write indices stay runtime values and no index can leave the buffers.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.indexing import GATHER_ELEMENTS
from dlc.dialects.movement import BROADCAST
from dlc.frontends.onnx_node import NodeContext, dense


def _int64(n: NodeContext, array) -> ir.Value:
    return n.build(ops.CONSTANT, [], {"value": dense(np.asarray(array, dtype=np.int64), n)})


def import_tensor_scatter(n: NodeContext) -> list[ir.Value]:
    past, update = n.inputs[0], n.inputs[1]
    indices = n.inputs[2] if len(n.inputs) > 2 else None
    rank = past.type.rank
    axis = n.attr("axis", -2)
    axis = axis + rank if axis < 0 else axis
    mode = n.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("linear", "circular"):
        raise n.error(f"unknown mode '{mode}' (linear or circular)")
    if not 1 <= axis < rank:
        raise n.error(f"axis {n.attr('axis', -2)} must name a sequence axis after the batch axis")
    shape, length, size = list(past.type.shape), past.type.shape[axis], update.type.shape[axis]
    if rank != update.type.rank or size > length or any(
            a != b for i, (a, b) in enumerate(zip(shape, update.type.shape)) if i != axis):
        raise n.error(f"update {list(update.type.shape)} does not fit past_cache {shape} "
                      f"along axis {axis}")
    # k = j - write_indices[b], shaped [B, 1, .., L, .., 1]
    position = [1] * rank
    position[axis] = length
    k = _int64(n, np.arange(length).reshape(position))
    if indices is not None:
        batch = [shape[0]] + [1] * (rank - 1)
        start = n.build(ops.RESHAPE, [indices], {"shape": batch})
        if start.type.element_type != k.type.element_type:
            start = n.build(CAST, [start], {"to": k.type.element_type})
        k = n.build(ops.SUB, [k, start])
    if mode == "circular":
        k = n.build(BINARY, [k, _int64(n, length)], {"fn": "mod"})
    valid = n.build(BINARY, [n.build(COMPARE, [k, _int64(n, 0)], {"fn": "ge"}),
                             n.build(COMPARE, [k, _int64(n, size)], {"fn": "lt"})], {"fn": "and"})
    clamped = n.build(BINARY, [n.build(BINARY, [k, _int64(n, 0)], {"fn": "max"}),
                               _int64(n, size - 1)], {"fn": "min"})
    index = n.build(BROADCAST, [clamped], {"shape": shape})
    written = n.build(GATHER_ELEMENTS, [update, index], {"axis": axis})
    return [n.build(SELECT, [valid, written, past])]


IMPORTERS = {"TensorScatter": import_tensor_scatter}
