"""Converters of the ATen data-movement and indexing ops.

Reshaping ops (view, unsqueeze, squeeze, flatten...) all become one `dlc.reshape` to the
node's known output shape; permutes become `dlc.transpose`, slicing `dlc.slice`, expand
`dlc.broadcast`, cat a chain of binary `dlc.concat`s, indexing `dlc.gather*`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.indexing import GATHER, GATHER_ELEMENTS
from dlc.dialects.movement import BROADCAST, CONCAT, IOTA, PAD, SLICE
from dlc.frontends.common import FrontendError
from dlc.frontends.torch.aten_node import (
    DYNAMIC,
    AtenNode,
    Converter,
    Rows,
    axis,
    dynamic_symbol,
)

Value = ir.Value
Scalar = float | int | bool

# ----------------------------------------------------------------------------- data movement


def reshape_to_out(n: AtenNode, x: Value | Rows, *_args, **_kwargs) -> Value | Rows:
    """view, _unsafe_view, reshape, squeeze, unsqueeze, flatten: a reshape to the out shape.
    In a dynamic import, a view of [.., ?, .., K] as [rows, K] whose rows dlc has no size for
    (2 * ?) keeps x whole (`Rows`), and a view of those rows is a reshape of x."""
    if isinstance(x, Rows):
        return n.reshape(x.value, n.out_shape)
    try:
        return n.reshape(x, n.out_shape)
    except FrontendError:
        out = list(n.out.shape)
        if dynamic_symbol() is None or len(out) != 2 or x.type.rank < 3 or \
                out[1] != x.type.shape[-1] or DYNAMIC not in x.type.shape[:-1]:
            raise
        return Rows(x)


def permute(n: AtenNode, x: Value, dims: Sequence[int]) -> Value:
    rank = x.type.rank
    perm = [axis(n, d, rank) for d in dims]
    if perm == list(range(rank)):
        return x
    return n.build(ops.TRANSPOSE, [x], {"perm": perm})


def transpose(n: AtenNode, x: Value, dim0: int, dim1: int) -> Value:
    rank = x.type.rank
    perm = list(range(rank))
    a, b = axis(n, dim0, rank), axis(n, dim1, rank)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(n, x, perm)


def t(n: AtenNode, x: Value) -> Value:
    return x if x.type.rank < 2 else transpose(n, x, 0, 1)


def expand(n: AtenNode, x: Value, size: Sequence[int], implicit: bool = False) -> Value:
    if list(x.type.shape) == n.out_shape:
        return x
    return n.build(BROADCAST, [x], {"shape": n.out_shape})


def cat(n: AtenNode, tensors: Sequence[Value], dim: int = 0) -> Value:
    # cat([a, b, c]) = concat(concat(a, b), c); empty 1-D tensors are skipped, as torch does
    # (and parts empty along dim, as a dynamic cache's first step: [1, 12, 0, 64])
    dtype = n.out_dtype
    rank = max(v.type.rank for v in tensors)
    dim = axis(n, dim, rank)
    parts = [n.cast(v, dtype) for v in tensors if list(v.type.shape) != [0]
             and not (v.type.rank == rank and v.type.shape[dim] == 0)]
    if not parts:
        return tensors[0]
    result = parts[0]
    for part in parts[1:]:
        result = n.build(CONCAT, [result, part], {"axis": dim})
    return result


def slice_along(n: AtenNode, x: Value, dim: int, start: int, size: int, step: int = 1
                ) -> Value:
    shape = list(x.type.shape)
    if start == 0 and step == 1 and size == shape[dim]:
        return x
    starts, sizes, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], sizes[dim], steps[dim] = start, size, step
    return n.build(SLICE, [x], {"starts": starts, "sizes": sizes, "steps": steps})


def slice_tensor(n: AtenNode, x: Value, dim: int = 0, start: int | None = None,
                 end: int | None = None, step: int = 1) -> Value:
    dim = axis(n, dim, x.type.rank)
    if DYNAMIC in (x.type.shape[dim], n.out_shape[dim]):
        return _dynamic_slice(n, x, dim, start or 0, step)
    first, _, _ = slice(start, end, step).indices(x.type.shape[dim])
    return slice_along(n, x, dim, first, n.out_shape[dim], step)


def _dynamic_slice(n: AtenNode, x: Value, dim: int, start: int, step: int) -> Value:
    """A slice whose axis or result has the dynamic size (torch computed the result's
    size): the whole dynamic axis, or the first `size` elements from `start` of a static
    one (a position table's rows [0, s): a gather of an iota, its indices checked at run
    time against the table's size); any other is refused."""
    dynamic_in, dynamic_out = x.type.shape[dim] == DYNAMIC, n.out_shape[dim] == DYNAMIC
    if dynamic_in and dynamic_out and start == 0 and step == 1:
        return x
    if not dynamic_in and start >= 0 and step >= 1:
        index = n.build(IOTA, [], {"shape": [DYNAMIC], "axis": 0, "start": start,
                                   "step": step, "dtype": ir.IntegerType.get_signless(64)})
        return n.build(GATHER, [x, index], {"axis": dim})
    raise n.error(f"a slice of axis {dim} from {start} by {step} with the dynamic size "
                  f"(of [{', '.join('?' if d == DYNAMIC else str(d) for d in x.type.shape)}]"
                  ") is not supported yet")


def select(n: AtenNode, x: Value, dim: int, index: int) -> Value:
    dim = axis(n, dim, x.type.rank)
    size = x.type.shape[dim]
    if size == DYNAMIC:  # (a gather of one index, checked at run time against the size)
        if index < 0:
            raise n.error(f"selecting element {index} (from the end) of axis {dim}, of the "
                          "dynamic size, is not supported yet")
        return n.build(GATHER, [x, n.constant(index, torch.int64)], {"axis": dim})
    if not -size <= index < size:
        raise n.error(f"index {index} is out of range for size {size}")
    return n.reshape(slice_along(n, x, dim, index % size, 1), n.out_shape)


def flip(n: AtenNode, x: Value, dims: Sequence[int]) -> Value:
    # one dlc.slice with step -1 along each flipped axis (torch.export writes it for the
    # reverse direction of nn.LSTM / GRU / RNN)
    shape = list(x.type.shape)
    flipped = {axis(n, d, len(shape)) for d in dims}
    flipped = {d for d in flipped if shape[d] > 1}
    if not flipped:
        return x
    starts = [shape[d] - 1 if d in flipped else 0 for d in range(len(shape))]
    steps = [-1 if d in flipped else 1 for d in range(len(shape))]
    return n.build(SLICE, [x], {"starts": starts, "sizes": shape, "steps": steps})


def split_with_sizes(n: AtenNode, x: Value, split_sizes: Sequence[int], dim: int = 0
                     ) -> tuple[Value, ...]:
    dim = axis(n, dim, x.type.rank)
    if DYNAMIC in (x.type.shape[dim], *split_sizes):
        raise n.error("splitting the axis of the dynamic size is not supported yet")
    starts = [sum(split_sizes[:i]) for i in range(len(split_sizes))]
    return tuple(slice_along(n, x, dim, s, size) for s, size in zip(starts, split_sizes))


def split(n: AtenNode, x: Value, split_size: int, dim: int = 0) -> tuple[Value, ...]:
    sizes = [o.shape[axis(n, dim, x.type.rank)] for o in n.out]
    if not all(isinstance(s, int) for s in sizes):
        raise n.error("splitting the axis of the dynamic size is not supported yet")
    return split_with_sizes(n, x, sizes, dim)


def unbind(n: AtenNode, x: Value, dim: int = 0) -> tuple[Value, ...]:
    dim = axis(n, dim, x.type.rank)
    shape = [d for i, d in enumerate(x.type.shape) if i != dim]
    return tuple(n.reshape(slice_along(n, x, dim, i, 1), shape)
                 for i in range(x.type.shape[dim]))


def constant_pad_nd(n: AtenNode, x: Value, pad: Sequence[int], value: Scalar = 0) -> Value:
    # torch's pad lists (before, after) pairs from the last axis backwards
    rank = x.type.rank
    if len(pad) % 2 or len(pad) > 2 * rank or any(p < 0 for p in pad):
        raise n.error(f"pad {list(pad)} is not supported (pairs per axis, non-negative)")
    before, after = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        before[rank - 1 - i], after[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    fill = n.constant(value, n.out_dtype)
    return n.build(PAD, [x, fill], {"mode": "constant", "pads": before + after})


def index_select(n: AtenNode, x: Value, dim: int, index: Value) -> Value:
    return n.build(GATHER, [x, index], {"axis": axis(n, dim, x.type.rank)})


def gather(n: AtenNode, x: Value, dim: int, index: Value, sparse_grad: bool = False) -> Value:
    return n.build(GATHER_ELEMENTS, [x, index], {"axis": axis(n, dim, x.type.rank)})


def embedding(n: AtenNode, weight: Value, indices: Value, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Value:
    return n.build(GATHER, [weight, indices], {"axis": 0})


ATEN: dict[str, Converter] = {
    # data movement
    **{f"aten.{name}": reshape_to_out for name in (
        "view.default", "_unsafe_view.default", "reshape.default", "unsqueeze.default",
        "squeeze.default", "squeeze.dim", "squeeze.dims", "flatten.using_ints")},
    "aten.permute.default": permute,
    "aten.transpose.int": transpose,
    "aten.t.default": t,
    "aten.expand.default": expand,
    "aten.cat.default": cat,
    "aten.slice.Tensor": slice_tensor,
    "aten.select.int": select,
    "aten.flip.default": flip,
    "aten.split.Tensor": split,
    "aten.split_with_sizes.default": split_with_sizes,
    "aten.split.sizes": split_with_sizes,
    "aten.unbind.int": unbind,
    "aten.constant_pad_nd.default": constant_pad_nd,
    "aten.index_select.default": index_select,
    "aten.gather.default": gather,
    "aten.embedding.default": embedding,
}
