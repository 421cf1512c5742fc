"""Importers of the data-movement and shape ONNX ops.

Concat, Slice, Expand, Pad and Trilu map to their dlc ops (`dialects/movement.py`) with every
attribute normalized here (negative axes, clamped slice bounds, ONNX defaults). Split, Squeeze,
Unsqueeze, Tile, DepthToSpace and SpaceToDepth decompose into slice, reshape, broadcast and
transpose. Shapes are static, so Shape, Size, EyeLike, ConstantOfShape and Range are
compile-time constants: they become `dlc.constant`, recorded in the importer's constants (the
mapping `NodeContext.constant_input` reads), so a later node can use them as its shape input;
small constant subgraphs of shape arithmetic are folded by `frontends/onnx_folding.py`.
Shape-like inputs (starts, axes, pads, repeats...) must be constants; attributes that became
inputs across opsets are read from where `n.opset` puts them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, MutableMapping
from typing import cast

import numpy as np
from mlir import ir
from onnx import helper, numpy_helper

from dlc.dialects import movement, ops
from dlc.element_types import numpy_dtype
from dlc.frontends.onnx_node import NodeContext, dense

Values = list[ir.Value]


# ----------------------------------------------------------------------------- helpers


def _constant(n: NodeContext, output: int | None, array: np.ndarray) -> ir.Value:
    """A dlc.constant of `array`, recorded as the value of the node's output #`output`."""
    name = n.node.output[output] if output is not None and output < len(n.node.output) else ""
    if name:  # the importer hands every node the same (mutable) table of constants
        cast(MutableMapping, n.constants)[name] = array
    return n.build(ops.CONSTANT, [], {"value": dense(array, n)})




def _axis(n: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _axes(n: NodeContext, axes, rank: int) -> list[int]:
    normalized = [_axis(n, int(a), rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise n.error(f"axes {list(axes)} repeat an axis")
    return normalized


def _optional_ints(n: NodeContext, index: int, what: str) -> list[int] | None:
    """The values of optional constant input `index`, or None when it is absent."""
    if index >= len(n.inputs) or n.inputs[index] is None:
        return None
    return [int(v) for v in n.constant_input(index, what).reshape(-1)]


def _ints_input_or_attr(n: NodeContext, index: int, name: str, since: int) -> list[int] | None:
    """An int list that is attribute `name` before opset `since` and input `index` after."""
    if n.opset < since:
        value = n.attr(name)
        return None if value is None else [int(v) for v in value]
    return _optional_ints(n, index, name)


def _slice(n: NodeContext, x: ir.Value, starts, sizes, steps) -> ir.Value:
    return n.build(movement.SLICE, [x], {"starts": starts, "sizes": sizes, "steps": steps})


def _reshape(n: NodeContext, x: ir.Value, shape: list[int]) -> ir.Value:
    if list(x.type.shape) == list(shape):
        return x
    return n.build(ops.RESHAPE, [x], {"shape": list(shape)})


# ----------------------------------------------------------------------------- ops


def import_concat(n: NodeContext) -> Values:
    # Concat(a, b, c) -> dlc.concat(dlc.concat(a, b), c)
    inputs = [v for v in n.inputs if v is not None]
    if not inputs:
        raise n.error("needs at least one input")
    if n.attr("axis") is None and n.opset >= 4:
        raise n.error("needs its axis attribute")
    axis = _axis(n, n.attr("axis", 1), inputs[0].type.rank)
    value = inputs[0]
    for other in inputs[1:]:
        value = n.build(movement.CONCAT, [value, other], {"axis": axis})
    return [value]


def import_slice(n: NodeContext) -> Values:
    # Slice(x, starts, ends, axes, steps) -> dlc.slice {first index, size, step per axis}
    x = n.inputs[0]
    shape = list(x.type.shape)
    if n.opset < 10:
        starts, ends = n.attr("starts"), n.attr("ends")
        axes, steps = n.attr("axes"), None
        if starts is None or ends is None:
            raise n.error("needs its starts and ends attributes")
    else:
        starts = [int(v) for v in n.constant_input(1, "starts").reshape(-1)]
        ends = [int(v) for v in n.constant_input(2, "ends").reshape(-1)]
        axes, steps = _optional_ints(n, 3, "axes"), _optional_ints(n, 4, "steps")
    axes = _axes(n, axes if axes is not None else range(len(starts)), len(shape))
    steps = steps if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise n.error(f"starts {list(starts)}, ends {list(ends)}, axes {axes} and steps "
                      f"{steps} must have the same length")
    first, sizes, strides = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if step == 0:
            raise n.error(f"step 0 on axis {axis}")
        if ir.ShapedType.is_dynamic_size(shape[axis]):
            raise n.error(f"slices axis {axis}, of a dynamic size (?), which dlc does not "
                          "take yet")
        # numpy's (and onnx.reference's) clamping of out-of-range and INT_MAX bounds
        picked = range(*slice(int(start), int(end), int(step)).indices(shape[axis]))
        first[axis] = picked.start if len(picked) else 0
        sizes[axis], strides[axis] = len(picked), int(step)
    return [_slice(n, x, first, sizes, strides)]


def _split_sizes(n: NodeContext, size: int) -> list[int]:
    outputs = len(n.node.output)
    split = _ints_input_or_attr(n, 1, "split", 13)
    if split is not None:
        if sum(split) != size or any(s < 0 for s in split):
            raise n.error(f"split {split} does not add up to the axis size {size}")
        if len(split) != outputs:  # (the parts past the outputs were dropped)
            raise n.error(f"split {split} gives {len(split)} parts but the node has {outputs} "
                          "outputs")
        return split
    parts = n.attr("num_outputs", outputs) if n.opset >= 18 else outputs
    if n.opset >= 18 and n.attr("num_outputs") is None:
        raise n.error("needs a split input or the num_outputs attribute")
    if parts != outputs:
        raise n.error(f"num_outputs is {parts} but the node has {outputs} outputs")
    chunk = math.ceil(size / parts) if parts else 0
    if n.opset < 18 and size % parts:
        raise n.error(f"axis size {size} does not split into {parts} equal parts")
    sizes = [min(chunk, max(0, size - i * chunk)) for i in range(parts)]  # last one smaller
    return sizes


def import_split(n: NodeContext) -> Values:
    # Split(x) -> one dlc.slice per output
    x = n.inputs[0]
    shape = list(x.type.shape)
    axis = _axis(n, n.attr("axis", 0), len(shape))
    results, offset = [], 0
    for size in _split_sizes(n, shape[axis]):
        starts, sizes = [0] * len(shape), list(shape)
        starts[axis], sizes[axis] = offset if size else 0, size
        results.append(_slice(n, x, starts, sizes, [1] * len(shape)))
        offset += size
    return results


def import_squeeze(n: NodeContext) -> Values:
    # Squeeze(x) -> dlc.reshape without the size-1 axes
    x = n.inputs[0]
    shape = list(x.type.shape)
    axes = _ints_input_or_attr(n, 1, "axes", 13)
    if axes is None:
        axes = [a for a, d in enumerate(shape) if d == 1]
    axes = _axes(n, axes, len(shape))
    if any(shape[a] != 1 for a in axes):
        raise n.error(f"cannot squeeze axes {axes} of shape {shape}: their sizes must be 1")
    return [_reshape(n, x, [d for a, d in enumerate(shape) if a not in axes])]


def import_unsqueeze(n: NodeContext) -> Values:
    # Unsqueeze(x) -> dlc.reshape with size-1 axes inserted
    x = n.inputs[0]
    axes = _ints_input_or_attr(n, 1, "axes", 13)
    if axes is None:
        raise n.error("needs its axes")
    rank = x.type.rank + len(axes)
    axes = _axes(n, axes, rank)
    sizes = iter(x.type.shape)
    return [_reshape(n, x, [1 if a in axes else next(sizes) for a in range(rank)])]


def import_expand(n: NodeContext) -> Values:
    # Expand(x, shape) -> dlc.broadcast {broadcast of x's shape and shape}
    x = n.inputs[0]
    shape = [int(d) for d in n.constant_input(1, "shape").reshape(-1)]
    try:
        target = ops.broadcast_shapes(list(x.type.shape), shape)
    except ops.ShapeError as error:
        raise n.error(str(error)) from None
    return [n.build(movement.BROADCAST, [x], {"shape": target})]


def import_tile(n: NodeContext) -> Values:
    # Tile(x [d0, d1], repeats [r0, r1]) -> reshape [1, d0, 1, d1], broadcast [r0, d0, r1, d1],
    #                                       reshape [r0 * d0, r1 * d1]
    x = n.inputs[0]
    shape = list(x.type.shape)
    repeats = [int(r) for r in n.constant_input(1, "repeats").reshape(-1)]
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise n.error(f"repeats {repeats} must be one count >= 0 per axis of shape {shape}")
    if all(r == 1 for r in repeats):
        return [x]
    interleaved = [v for d in shape for v in (1, d)]
    tiled = [v for r, d in zip(repeats, shape) for v in (r, d)]
    value = n.build(movement.BROADCAST, [_reshape(n, x, interleaved)], {"shape": tiled})
    return [_reshape(n, value, [r * d for r, d in zip(repeats, shape)])]


def _pad_value(n: NodeContext, x: ir.Value) -> ir.Value | None:
    element = x.type.element_type
    if n.opset < 11:
        value = n.attr("value", 0.0)
        if value == 0:
            return None
        return _constant(n, None, np.array(value, numpy_dtype(element)))
    if len(n.inputs) < 3 or n.inputs[2] is None:
        return None
    value = n.inputs[2]
    if value.type.rank == 0:
        return value
    if math.prod(value.type.shape) != 1:
        raise n.error(f"constant_value must hold one value, got shape {value.type.shape}")
    return _reshape(n, value, [])


def _check_crop(n: NodeContext, pads: list[int], axis: int, size: int, before: int,
                after: int) -> None:
    # negative pads crop: at most the axis' size on each side, and never below size 0
    # (onnxruntime fails on a negative result size; the ONNX reference on any over-crop)
    for side, pad in (("begin", before), ("end", after)):
        if -pad > size:
            raise n.error(f"pads {pads}: the {side} pad {pad} of axis {axis} removes {-pad} "
                          f"elements, but the axis has {size}")
    if size + before + after < 0:
        raise n.error(f"pads {pads} leave axis {axis} (size {size}) with {size + before + after} "
                      "elements; a result size must be >= 0")


def import_pad(n: NodeContext) -> Values:
    # Pad(x, pads, value) -> dlc.slice (negative pads crop) then dlc.pad {mode, pads >= 0}
    x = n.inputs[0]
    shape = list(x.type.shape)
    rank = len(shape)
    mode = n.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if n.opset < 11:
        pads = n.attr("pads" if n.opset >= 2 else "paddings")
        if pads is None:
            raise n.error("needs its pads attribute")
        pads, axes = [int(p) for p in pads], list(range(rank))
    else:
        pads = [int(p) for p in n.constant_input(1, "pads").reshape(-1)]
        axes = _optional_ints(n, 3, "axes") if n.opset >= 18 else None
        axes = _axes(n, axes if axes is not None else range(rank), rank)
    if len(pads) != 2 * len(axes):
        raise n.error(f"pads {pads} must hold 2 values per padded axis ({len(axes)} axes)")
    before, after = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        before[axis], after[axis] = pads[i], pads[len(axes) + i]
    for axis, (size, b, a) in enumerate(zip(shape, before, after)):
        _check_crop(n, pads, axis, size, b, a)
    if any(p < 0 for p in before + after):  # negative pads remove elements
        starts = [max(0, -b) for b in before]
        sizes = [max(0, d - max(0, -b) - max(0, -a)) for d, b, a in zip(shape, before, after)]
        x = _slice(n, x, starts, sizes, [1] * rank)
        before, after = [max(0, b) for b in before], [max(0, a) for a in after]
    if not any(before + after):
        return [x]
    value = _pad_value(n, x) if mode == "constant" else None
    operands = [x] if value is None else [x, value]
    return [n.build(movement.PAD, operands, {"mode": mode, "pads": before + after})]


def import_depth_to_space(n: NodeContext) -> Values:
    # DepthToSpace(x) -> reshape [N, b, b, C', H, W] (DCR) | [N, C', b, b, H, W] (CRD),
    #                    transpose, reshape [N, C', H * b, W * b]
    x = n.inputs[0]
    b = n.attr("blocksize")
    mode = n.attr("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if x.type.rank != 4 or not b or x.type.shape[1] % (b * b):
        raise n.error(f"needs a 4-D input whose channels divide by blocksize² (blocksize {b})")
    batch, channels, height, width = x.type.shape
    depth = channels // (b * b)
    if mode == "DCR":
        split, perm = [batch, b, b, depth, height, width], [0, 3, 4, 1, 5, 2]
    elif mode == "CRD":
        split, perm = [batch, depth, b, b, height, width], [0, 1, 4, 2, 5, 3]
    else:
        raise n.error(f"mode '{mode}' is neither DCR nor CRD")
    moved = n.build(ops.TRANSPOSE, [_reshape(n, x, split)], {"perm": perm})
    return [_reshape(n, moved, [batch, depth, height * b, width * b])]


def import_space_to_depth(n: NodeContext) -> Values:
    # SpaceToDepth(x) -> reshape [N, C, H/b, b, W/b, b], transpose (DCR: b, b, C; CRD: C, b, b),
    #                    reshape [N, C*b*b, H/b, W/b]
    x = n.inputs[0]
    b = n.attr("blocksize")
    mode = n.attr("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if x.type.rank != 4 or not b or x.type.shape[2] % b or x.type.shape[3] % b:
        raise n.error(f"needs a 4-D input whose height and width divide by blocksize {b}")
    perms = {"DCR": [0, 3, 5, 1, 2, 4], "CRD": [0, 1, 3, 5, 2, 4]}
    if mode not in perms:
        raise n.error(f"mode '{mode}' is neither DCR nor CRD")
    batch, channels, height, width = x.type.shape
    split = [batch, channels, height // b, b, width // b, b]
    moved = n.build(ops.TRANSPOSE, [_reshape(n, x, split)], {"perm": perms[mode]})
    return [_reshape(n, moved, [batch, channels * b * b, height // b, width // b])]


def import_trilu(n: NodeContext) -> Values:
    # Trilu(x, k) {upper} -> dlc.trilu {upper, k}
    k = _optional_ints(n, 1, "k")
    attrs = {"upper": int(n.attr("upper", 1)), "k": k[0] if k else 0}
    return [n.build(movement.TRILU, [n.inputs[0]], attrs)]


# ----------------------------------------------------------------------------- constants


def import_shape(n: NodeContext) -> Values:
    # Shape(x) {start, end} -> dlc.constant x.shape[start:end]
    shape = list(n.inputs[0].type.shape)
    start, end = n.attr("start", 0), n.attr("end", len(shape))
    return [_constant(n, 0, np.array(shape[start:end], np.int64))]


def import_size(n: NodeContext) -> Values:
    # Size(x) -> dlc.constant (number of elements)
    return [_constant(n, 0, np.array(math.prod(n.inputs[0].type.shape), np.int64))]


def import_constant_of_shape(n: NodeContext) -> Values:
    # ConstantOfShape(shape) {value} -> dlc.constant
    shape = [int(d) for d in n.constant_input(0, "shape").reshape(-1)]
    value = n.attr("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else \
        np.zeros(1, np.float32)
    if fill.size != 1:
        raise n.error(f"value must hold one element, got {fill.size}")
    n.check_shape(shape, fill.dtype)  # (before numpy allocates it)
    return [_constant(n, 0, np.full(shape, fill[0], fill.dtype))]


def range_size(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> int:
    """The number of elements of Range(start, limit, delta) (delta != 0), as ONNX defines it."""
    return max(math.ceil((float(limit) - float(start)) / float(delta)), 0)


def import_range(n: NodeContext) -> Values:
    # Range(start, limit, delta) -> dlc.constant
    start, limit, delta = (n.constant_input(i, what).reshape(()) for i, what in
                           enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise n.error("delta is 0")
    n.check_shape([range_size(start, limit, delta)], start.dtype)  # (before numpy allocates it)
    return [_constant(n, 0, np.arange(start, limit, delta).astype(start.dtype))]


def import_eye_like(n: NodeContext) -> Values:
    # EyeLike(x) {k, dtype} -> dlc.constant
    x = n.inputs[0]
    if x.type.rank != 2:
        raise n.error(f"needs a 2-D input, got shape {list(x.type.shape)}")
    dtype = n.attr("dtype")
    dtype = helper.tensor_dtype_to_np_dtype(dtype) if dtype is not None else \
        numpy_dtype(x.type.element_type)
    rows, columns = x.type.shape
    return [_constant(n, 0, np.eye(rows, columns, k=n.attr("k", 0), dtype=dtype))]


IMPORTERS: dict[str, Callable[[NodeContext], Values]] = {
    "Concat": import_concat,
    "Split": import_split,
    "Slice": import_slice,
    "Squeeze": import_squeeze,
    "Unsqueeze": import_unsqueeze,
    "Expand": import_expand,
    "Tile": import_tile,
    "Pad": import_pad,
    "DepthToSpace": import_depth_to_space,
    "SpaceToDepth": import_space_to_depth,
    "Trilu": import_trilu,
    "Shape": import_shape,
    "Size": import_size,
    "ConstantOfShape": import_constant_of_shape,
    "Range": import_range,
    "EyeLike": import_eye_like,
}
