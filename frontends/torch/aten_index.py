"""Converters of ATen's advanced indexing (`index.Tensor`) and strided views (`as_strided`).

- `aten.index.Tensor(x, indices)`: `indices` holds one entry per leading axis of x, None for an
  axis left whole, an integer tensor, or a boolean mask covering as many axes as it has. The
  index tensors broadcast together to a shape B; the result holds B in place of the indexed
  axes when they are adjacent, and first otherwise (numpy's rule). One index tensor is one
  `dlc.gather`; several are stacked into [B..., k] and read by one `dlc.gather_nd` on x with
  the indexed axes moved first, then moved back where they were. Negative indices count from
  the end (the gathers' semantics). A boolean mask gives a data-dependent shape: it is
  supported when its value is a compile-time constant (its `nonzero` becomes index
  tensors), and a runtime mask is an error naming the node.
- `aten.as_strided(x, size, stride, offset)`: reads x's storage (x dense: contiguous or a
  permutation of it, the node's example value says which) at offset + sum_k i_k * stride_k.
  Decided from sizes, strides and offset at compile time: stride-0 axes are a
  `dlc.broadcast`; what is left is a `dlc.slice` of the flattened storage (a run with one
  step) and a `dlc.reshape`, or otherwise (overlapping windows, interleavings) one
  `dlc.gather` of a constant index table. Reading outside x is an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from mlir import ir

from dlc.dialects.indexing import GATHER, GATHER_ND, SCATTER_ND
from dlc.dialects.movement import BROADCAST, CONCAT, SLICE
from dlc.frontends.torch.aten_movement import permute
from dlc.frontends.torch.aten_node import DYNAMIC, AtenNode, Converter, value_dtype
from dlc.passes.graph.match import constant_array

Value = ir.Value

# ----------------------------------------------------------------------------- index.Tensor


def _integer_indices(n: AtenNode, indices: Sequence[Value | None]) -> list[Value | None]:
    """`indices` with each boolean mask replaced by the int64 coordinates of its true
    elements, one index tensor per axis it covers (a constant mask only)."""
    result: list[Value | None] = []
    for position, index in enumerate(indices):
        if index is None or value_dtype(index) != torch.bool:
            result.append(index)
            continue
        mask = constant_array(index)
        if mask is None:
            raise n.error(f"index {position} is a boolean mask computed at run time: the "
                          "result's shape depends on the data, and dlc compiles static "
                          "shapes (select with torch.where(mask, x, 0) instead, or make "
                          "the mask a constant)")
        result.extend(n.constant(coords, torch.int64) for coords in np.nonzero(mask))
    return result


def _broadcast_shape(n: AtenNode, shapes: list[list[int]]) -> list[int]:
    if any(DYNAMIC in s for s in shapes):  # (a dynamic import: `?`, one size, takes 1s)
        rank = max(len(s) for s in shapes)
        padded = [[1] * (rank - len(s)) + list(s) for s in shapes]
        result = []
        for dims in zip(*padded):
            sizes = set(dims) - {1}
            if len(sizes) > 1:
                raise n.error(f"index tensors of shapes {shapes} do not broadcast together "
                              "(? is the dynamic size)")
            result.append(sizes.pop() if sizes else 1)
        return result
    try:
        return list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise n.error(f"index tensors of shapes {shapes} do not broadcast together") from None


def _stacked_indices(n: AtenNode, indices: list[Value], axes: list[int]) -> tuple[Value, list[int]]:
    """The index tensors of `axes` broadcast together to B and stacked into [B..., k]."""
    batch = _broadcast_shape(n, [list(indices[a].type.shape) for a in axes])
    stacked = None
    for a in axes:
        part = n.cast(indices[a], torch.int64)
        if list(part.type.shape) != batch:
            part = n.build(BROADCAST, [part], {"shape": batch})
        part = n.reshape(part, [*batch, 1])
        stacked = part if stacked is None else \
            n.build(CONCAT, [stacked, part], {"axis": len(batch)})
    return stacked, batch


def index(n: AtenNode, x: Value, indices: Sequence[Value | None]) -> Value:
    indices = _integer_indices(n, indices)
    rank = x.type.rank
    if len(indices) > rank:
        raise n.error(f"{len(indices)} indices for a rank-{rank} tensor")
    axes = [a for a, index in enumerate(indices) if index is not None]
    if not axes:
        return x
    if len(axes) == 1:  # x[..., i, ...]: B in place of the axis
        index_ = n.cast(indices[axes[0]], torch.int64)
        return n.build(GATHER, [x, index_], {"axis": axes[0]})
    stacked, batch = _stacked_indices(n, indices, axes)
    rest = [a for a in range(rank) if a not in axes]
    # x with the indexed axes first: gather_nd gives [B..., rest...]
    gathered = n.build(GATHER_ND, [permute(n, x, axes + rest), stacked], {"batch_dims": 0})
    adjacent = axes == list(range(axes[0], axes[-1] + 1))
    if not adjacent:  # numpy's rule: B first
        return gathered
    # B back in place of the indexed axes: [rest before, B..., rest after]
    k, before = len(batch), axes[0]
    perm = [*range(k, k + before), *range(k), *range(k + before, k + len(rest))]
    return permute(n, gathered, perm)


def index_put(n: AtenNode, x: Value, indices: Sequence[Value | None], values: Value,
              accumulate: bool = False) -> Value:
    """x with x[indices] = values (`+=` with `accumulate`), numpy's indexing rules as in
    `index`: one `dlc.scatter_nd` on x with the indexed axes moved first, its updates `values`
    broadcast to the indexed shape and moved likewise; then the axes moved back. (A static KV
    cache's update, `cache[:, :, positions] = new`, is one.) Indices out of range are the
    scatter's runtime error; with repeated indices and no `accumulate` the last write wins."""
    indices = _integer_indices(n, indices)
    rank = x.type.rank
    if len(indices) > rank:
        raise n.error(f"{len(indices)} indices for a rank-{rank} tensor")
    axes = [a for a, index in enumerate(indices) if index is not None]
    if not axes:
        raise n.error("index_put without an index tensor (x[...] = v) is not supported")
    stacked, batch = _stacked_indices(n, indices, axes)
    rest = [a for a in range(rank) if a not in axes]
    adjacent = axes == list(range(axes[0], axes[-1] + 1))
    shape = list(x.type.shape)
    if adjacent:  # values index like [rest before, B..., rest after]
        before = [shape[a] for a in rest if a < axes[0]]
        after = [shape[a] for a in rest if a > axes[-1]]
        target = [*before, *batch, *after]
        k = len(batch)
        moved = [*range(len(before), len(before) + k), *range(len(before)),
                 *range(len(before) + k, len(target))]
    else:  # B first
        target = [*batch, *[shape[a] for a in rest]]
        moved = list(range(len(target)))
    values = n.cast(values, n.out_dtype)
    if list(values.type.shape) != target:
        try:
            np.broadcast_shapes(tuple(values.type.shape), tuple(target))
        except ValueError:
            raise n.error(f"values of shape {list(values.type.shape)} do not broadcast to the "
                          f"indexed shape {target}") from None
        values = n.build(BROADCAST, [values], {"shape": target})
    updates = permute(n, values, moved)
    scattered = n.build(SCATTER_ND, [permute(n, x, axes + rest), stacked, updates],
                        {"reduction": "add" if accumulate else "none"})
    order = axes + rest
    return permute(n, scattered, [order.index(a) for a in range(rank)])


# ----------------------------------------------------------------------------- as_strided


def _storage_order(n: AtenNode, example: torch.Tensor) -> list[int]:
    """The axes of x from the outermost in its storage, when x is dense (no gaps, no
    overlaps): x permuted this way and flattened is its storage."""
    shape, strides = list(example.shape), list(example.stride())
    order = sorted(range(len(shape)), key=lambda a: (-strides[a], -shape[a]))
    expected = 1
    for a in reversed(order):
        if shape[a] != 1 and strides[a] != expected:
            raise n.error(f"the input (shape {shape}, strides {strides}) is not dense in "
                          "memory: dlc cannot tell which element as_strided reads")
        expected *= shape[a]
    return order


def as_strided(n: AtenNode, x: Value, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Value:
    example = n.node.args[0].meta.get("val")
    if not isinstance(example, torch.Tensor):
        raise n.error("the input has no example value: its memory layout is unknown")
    size, stride = list(size), list(stride)
    if len(size) != len(stride) or any(s < 0 for s in stride):
        raise n.error(f"sizes {size} and strides {stride} must pair up, strides >= 0")
    offset = (example.storage_offset() if storage_offset is None else storage_offset) - \
        example.storage_offset()
    total = math.prod(x.type.shape)
    if math.prod(size) == 0:
        return n.build(BROADCAST, [n.constant(0, value_dtype(x))], {"shape": size})
    last = offset + sum((d - 1) * s for d, s in zip(size, stride))
    if offset < 0 or last >= total:
        raise n.error(f"as_strided(size={size}, stride={stride}, storage_offset="
                      f"{storage_offset}) reads elements {offset} to {last} of an input "
                      f"with {total} elements")
    flat = n.reshape(permute(n, x, _storage_order(n, example)), [total])
    # stride-0 axes repeat what the others read: drop them, broadcast at the end
    kept = [a for a, (d, s) in enumerate(zip(size, stride)) if s != 0 or d == 1]
    read = _strided_read(n, flat, offset, [size[a] for a in kept], [stride[a] for a in kept])
    if len(kept) == len(size):
        return read
    keep_shape = [size[a] if a in kept else 1 for a in range(len(size))]
    return n.build(BROADCAST, [n.reshape(read, keep_shape)], {"shape": size})


def _strided_read(n: AtenNode, flat: Value, offset: int, size: list[int],
                  stride: list[int]) -> Value:
    """flat[offset + sum i_k * stride_k] over `size`: a slice when the positions in row-major
    order form one arithmetic run, else a gather of the positions."""
    positions = np.full(size, offset, dtype=np.int64)
    for a, (d, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[a] = d
        positions = positions + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    run = positions.reshape(-1)
    step = int(run[1] - run[0]) if run.size > 1 else 1
    if step > 0 and np.array_equal(run, run[0] + step * np.arange(run.size)):
        attrs = {"starts": [int(run[0])], "sizes": [run.size], "steps": [step]}
        total = flat.type.shape[0]
        picked = flat if attrs == {"starts": [0], "sizes": [total], "steps": [1]} else \
            n.build(SLICE, [flat], attrs)
        return n.reshape(picked, size)
    return n.build(GATHER, [flat, n.constant(positions, torch.int64)], {"axis": 0})


def sym_size(n: AtenNode, x: Value, dim: int) -> int:
    """A dimension of x as a Python int (static shapes: the converted value knows it)."""
    return int(x.type.shape[dim])


ATEN: dict[str, Converter] = {
    "aten.index.Tensor": index,
    "aten._unsafe_index.Tensor": index,
    "aten.index_put.default": index_put,
    "aten.index_put_.default": index_put,
    "aten.as_strided.default": as_strided,
    "aten.sym_size.int": sym_size,
}
