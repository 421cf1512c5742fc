"""Importers of the ONNX reductions: Reduce*, ArgMax/ArgMin, Softmax, LogSoftmax, Hardmax,
CumSum, CumProd and Det.

Reduce* become one `dlc.reduce {fn}` (axes normalized: non-negative, sorted; an absent or empty
axes list reduces every axis, or none with noop_with_empty_axes); axes moved from an attribute
to an input at opset 13 for ReduceSum and 18 for the others (`n.constant_input`). Softmax and
LogSoftmax decompose into reduce max, sub, exp (`dlc.unary`), reduce sum and div (LogSoftmax:
reduce logsumexp of the shifted input); before opset 13 they, and Hardmax, work on the input
coerced to 2-D at `axis`, which for a reduction is reducing every axis from `axis` on.
CumSum and CumProd are one `dlc.cumulative {fn}` (axis: a constant input). Det reshapes its
batch of matrices to [B, n, n] for `dlc.det` and the determinants back to the batch shape.
Compress (constant condition: a gather; a condition known at run time only is a bounded output,
`selection.py`), ReverseSequence (constant lengths) and MaxUnpool (indices as
MaxPool computes them, flat over the unpooled shape, which an output_shape input only pads at
the end of each axis, as ONNX's reference does) are gathers and scatters.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.indexing import GATHER, GATHER_ELEMENTS, SCATTER_ELEMENTS
from dlc.dialects.movement import BROADCAST, PAD
from dlc.dialects.reduction import ARGREDUCE, CUMULATIVE, DET, HARDMAX, REDUCE
from dlc.element_types import numpy_dtype
from dlc.frontends import decompose
from dlc.frontends.onnx_node import Importer, NodeContext, dense
from dlc.frontends.onnx_ops.selection import import_runtime_compress

# ONNX op -> (dlc.reduce fn, the opset from which axes is an input rather than an attribute)
REDUCE_OPS: dict[str, tuple[str, int]] = {
    "ReduceSum": ("sum", 13),
    "ReduceMean": ("mean", 18),
    "ReduceMax": ("max", 18),
    "ReduceMin": ("min", 18),
    "ReduceProd": ("prod", 18),
    "ReduceL1": ("l1", 18),
    "ReduceL2": ("l2", 18),
    "ReduceLogSum": ("logsum", 18),
    "ReduceLogSumExp": ("logsumexp", 18),
    "ReduceSumSquare": ("sumsquare", 18),
}


def normalize_axis(n: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range [{-rank}, {rank}) for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def normalize_axes(n: NodeContext, axes: list[int], rank: int) -> list[int]:
    normalized = [normalize_axis(n, int(a), rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise n.error(f"axes {list(axes)} name an axis twice")
    return sorted(normalized)


def reduce_axes(n: NodeContext, since: int) -> list[int] | None:
    """The axes of a Reduce* node as given (None: not given), from its attribute or input."""
    if n.opset < since:
        axes = n.attr("axes")
        return None if axes is None else list(axes)
    if len(n.inputs) < 2 or n.inputs[1] is None:
        return None
    return [int(a) for a in n.constant_input(1, "axes").reshape(-1)]


def _reduce(fn: str, since: int) -> Importer:
    def import_reduce(n: NodeContext) -> list[ir.Value]:
        x = n.inputs[0]
        rank = x.type.rank
        axes = reduce_axes(n, since)
        if not axes:  # absent or empty: every axis, or none with noop_with_empty_axes
            axes = [] if n.attr("noop_with_empty_axes", 0) else list(range(rank))
        attrs = {"fn": fn, "axes": normalize_axes(n, axes, rank),
                 "keepdims": int(bool(n.attr("keepdims", 1)))}
        return [n.build(REDUCE, [x], attrs)]

    return import_reduce


def _argreduce(fn: str) -> Importer:
    def import_argreduce(n: NodeContext) -> list[ir.Value]:
        x = n.inputs[0]
        attrs = {"fn": fn, "axis": normalize_axis(n, n.attr("axis", 0), x.type.rank),
                 "keepdims": int(bool(n.attr("keepdims", 1))),
                 "select_last_index": int(bool(n.attr("select_last_index", 0)))}
        return [n.build(ARGREDUCE, [x], attrs)]

    return import_argreduce


def softmax_axes(n: NodeContext) -> list[int]:
    """The axes Softmax-like ops normalize over: [axis] (opset >= 13), else [axis, rank)."""
    rank = n.inputs[0].type.rank
    if n.opset >= 13:
        return [normalize_axis(n, n.attr("axis", -1), rank)]
    axis = n.attr("axis", 1)
    if rank == 0 or not -rank <= axis <= rank:
        raise n.error(f"axis {axis} is out of range for a rank-{rank} input")
    axis = axis + rank if axis < 0 else axis
    return list(range(axis, rank))


def import_softmax(n: NodeContext) -> list[ir.Value]:
    return [decompose.softmax(n, n.inputs[0], softmax_axes(n))]


def import_log_softmax(n: NodeContext) -> list[ir.Value]:
    return [decompose.log_softmax(n, n.inputs[0], softmax_axes(n))]


def import_hardmax(n: NodeContext) -> list[ir.Value]:
    x = n.inputs[0]
    axes = softmax_axes(n)
    if len(axes) == 1:  # (opset >= 13, or the last axis)
        return [n.build(HARDMAX, [x], {"axis": axes[0]})]
    # opset < 13: hardmax over the input coerced to 2-D at axis
    shape = list(x.type.shape)
    flat = [math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:])]
    y = n.build(HARDMAX, [n.build(ops.RESHAPE, [x], {"shape": flat})], {"axis": 1})
    return [n.build(ops.RESHAPE, [y], {"shape": shape})]


def _cumulative(fn: str) -> Importer:
    def import_cumulative(n: NodeContext) -> list[ir.Value]:
        # CumSum/CumProd(x, axis) -> dlc.cumulative{fn}(x)
        x = n.inputs[0]
        axis = np.asarray(n.constant_input(1, "axis")).reshape(-1)
        if axis.size != 1:
            raise n.error(f"axis must be a scalar, got {axis.size} values")
        attrs = {"fn": fn, "axis": normalize_axis(n, int(axis[0]), x.type.rank),
                 "exclusive": int(bool(n.attr("exclusive", 0))),
                 "reverse": int(bool(n.attr("reverse", 0)))}
        return [n.build(CUMULATIVE, [x], attrs)]

    return import_cumulative


def import_det(n: NodeContext) -> list[ir.Value]:
    # Det(x [.., n, n]) -> reshape [B, n, n] -> dlc.det -> reshape [..]
    x = n.inputs[0]
    shape = list(x.type.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise n.error(f"input must be square matrices [.., n, n], got {shape}")
    batch = shape[:-2]
    matrices = n.build(ops.RESHAPE, [x], {"shape": [math.prod(batch), *shape[-2:]]})
    det = n.build(DET, [matrices])
    return [n.build(ops.RESHAPE, [det], {"shape": batch})]


# ----------------------------------------------------------------------------- by constant data
# Compress, ReverseSequence and MaxUnpool select or place elements by a constant (Compress's
# condition, ReverseSequence's lengths) or by indices: gathers and scatters of dlc's indexing
# family.


def _index_constant(n: NodeContext, array: np.ndarray) -> ir.Value:
    return n.build(ops.CONSTANT, [], {"value": dense(np.asarray(array, np.int64), n)})


def import_compress(n: NodeContext) -> list[ir.Value]:
    # Compress(x, condition) -> dlc.gather(x, nonzero(condition), axis) (x flattened: no axis)
    x = n.inputs[0]
    if len(n.node.input) > 1 and n.node.input[1] and n.node.input[1] not in n.constants:
        return import_runtime_compress(n)  # (a condition known at run time only)
    condition = np.asarray(n.constant_input(1, "condition")).reshape(-1).astype(bool)
    axis = n.attr("axis")
    if axis is None:
        x = n.build(ops.RESHAPE, [x], {"shape": [math.prod(x.type.shape)]})
        axis = 0
    axis = normalize_axis(n, axis, x.type.rank)
    (selected,) = np.nonzero(condition)
    if selected.size and selected[-1] >= x.type.shape[axis]:
        raise n.error(f"condition selects index {selected[-1]} of axis {axis}, which has "
                      f"{x.type.shape[axis]} elements")
    return [n.build(GATHER, [x, _index_constant(n, selected)], {"axis": axis})]


def import_reverse_sequence(n: NodeContext) -> list[ir.Value]:
    # ReverseSequence(x, lens) -> dlc.gather_elements(x, broadcast(source time), time axis),
    #   source time of (b, t) = lens[b] - 1 - t for t < lens[b], else t
    x = n.inputs[0]
    shape = list(x.type.shape)
    rank = len(shape)
    if rank < 2:
        raise n.error(f"input must have rank >= 2, got {rank}")
    batch_axis = normalize_axis(n, n.attr("batch_axis", 1), rank)
    time_axis = normalize_axis(n, n.attr("time_axis", 0), rank)
    if batch_axis == time_axis:
        raise n.error(f"batch_axis and time_axis must differ, both are {batch_axis}")
    lengths = np.asarray(n.constant_input(1, "sequence_lens")).reshape(-1).astype(np.int64)
    batch, time = shape[batch_axis], shape[time_axis]
    if lengths.size != batch or np.any(lengths < 0) or np.any(lengths > time):
        raise n.error(f"sequence_lens {lengths.tolist()} must hold {batch} lengths in "
                      f"[0, {time}]")
    t = np.arange(time)[None, :]
    source = np.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)  # [batch, time]
    if batch_axis > time_axis:
        source = source.T
    index_shape = [size if axis in (batch_axis, time_axis) else 1
                   for axis, size in enumerate(shape)]
    index = _index_constant(n, source.reshape(index_shape))
    index = n.build(BROADCAST, [index], {"shape": shape})
    return [n.build(GATHER_ELEMENTS, [x, index], {"axis": time_axis})]


def import_max_unpool(n: NodeContext) -> list[ir.Value]:
    # MaxUnpool(x, i) -> reshape(dlc.scatter_elements(zeros, flat i, flat x)) [-> pad to shape]
    x, indices = n.inputs[0], n.inputs[1]
    shape = list(x.type.shape)
    kernel = list(n.attr("kernel_shape", []))
    spatial = len(shape) - 2
    if len(kernel) != spatial:
        raise n.error(f"kernel_shape {kernel} must have one entry per spatial axis ({spatial})")
    strides = list(n.attr("strides", [1] * spatial))
    pads = list(n.attr("pads", [0] * 2 * spatial))
    unpooled = shape[:2] + [(shape[2 + d] - 1) * strides[d] - pads[d] - pads[spatial + d]
                            + kernel[d] for d in range(spatial)]
    target = unpooled
    if len(n.inputs) > 2 and n.inputs[2] is not None:
        target = [int(d) for d in n.constant_input(2, "output_shape").reshape(-1)]
    if len(target) != len(shape) or any(t < u for t, u in zip(target, unpooled)):
        raise n.error(f"output_shape {target} must have rank {len(shape)} and hold the "
                      f"unpooled shape {unpooled}")
    if list(indices.type.shape) != shape:
        raise n.error(f"indices {list(indices.type.shape)} must have the input's shape {shape}")
    total = math.prod(shape)
    zeros = dense(np.zeros([math.prod(unpooled)], _numpy_dtype(n, x)), n)
    flat = [n.build(ops.RESHAPE, [v], {"shape": [total]}) for v in (indices, x)]
    placed = n.build(SCATTER_ELEMENTS, [n.build(ops.CONSTANT, [], {"value": zeros}), *flat],
                     {"axis": 0, "reduction": "none"})
    y = n.build(ops.RESHAPE, [placed], {"shape": unpooled})
    if target == unpooled:
        return [y]
    after = [t - u for t, u in zip(target, unpooled)]
    return [n.build(PAD, [y], {"mode": "constant", "pads": [0] * len(shape) + after})]


def _numpy_dtype(n: NodeContext, x: ir.Value) -> np.dtype:
    element = x.type.element_type
    try:
        return numpy_dtype(element)
    except TypeError:
        raise n.error(f"element type {element} is not supported") from None


IMPORTERS: dict[str, Importer] = {
    **{onnx_op: _reduce(fn, since) for onnx_op, (fn, since) in REDUCE_OPS.items()},
    "ArgMax": _argreduce("max"),
    "ArgMin": _argreduce("min"),
    "Softmax": import_softmax,
    "LogSoftmax": import_log_softmax,
    "Hardmax": import_hardmax,
    "CumSum": _cumulative("sum"),
    "CumProd": _cumulative("prod"),
    "Det": import_det,
    "Compress": import_compress,
    "ReverseSequence": import_reverse_sequence,
    "MaxUnpool": import_max_unpool,
}
