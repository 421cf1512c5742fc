"""Lowering of dlc.conv, dlc.conv_transpose, dlc.pool and their channels-last forms to linalg.

Padding is explicit: the input is written (`tensor.insert_slice`) into a tensor filled with the
padding value (0 for convolutions, average and Lp pooling; the element type's lowest value for
max pooling), then the window op reads the padded tensor without bounds checks.

- dlc.conv: group 1 -> `linalg.conv_{1d_ncw_fcw,2d_nchw_fchw,3d_ncdhw_fcdhw}`; 2-D depthwise
  (group = C = M) -> `linalg.depthwise_conv_2d_nchw_chw`; other 2-D groups ->
  `linalg.conv_2d_ngchw_gfchw` on the input, weight and output expanded by group; any other case
  (more than 3 spatial axes, groups in 1-D/3-D) -> one grouped `linalg.generic`.
- dlc.conv_transpose: the input is spread out by the strides (zeros between elements) and padded
  by dilation * (K - 1) - pad (negative amounts crop), then convolved with the flipped kernel: a
  grouped `linalg.generic` reading kernel tap K-1-k, so no flipped copy is made.
- The bias, when present, is broadcast into the accumulator before the convolution.
- dlc.pool: 1-D/2-D max and sums -> `linalg.pooling_{ncw,nchw}_{max,sum}`, other ranks and
  unsigned max -> `linalg.generic`; average divides by a compile-time count (a scalar when every
  window counts the same, a constant tensor otherwise); Lp sums |x|^p then takes the p-th root.
- dlc.conv_nhwc / dlc.pool_nhwc (channels last, made by dlc-convert-layout): named ops only,
  `linalg.conv_{1d_nwc_wcf,2d_nhwc_hwcf,3d_ndhwc_dhwcf}`, `linalg.depthwise_conv_2d_nhwc_hwc`,
  `linalg.conv_2d_nhwgc_gfhwc` for other 2-D groups (the input and output viewed as
  [N, H, W, G, C/G], the filter transposed to [G, M/G, KH, KW, C/G], at compile time when
  constant) and `linalg.pooling_{nwc,nhwc}_{max,sum}`; `LIMITS` rejects any other instance before the
  lowering starts (the layout pass never makes one).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from dlc.dialects import conv as conv_ops
from dlc.dialects.core import attr_to_python
from dlc.dialects.ops import is_float, is_unsigned
from dlc.passes.blocked_copy import contiguous
from dlc.passes.lowering.builders import (
    PARALLEL,
    REDUCTION,
    as_value,
    dims_map,
    empty_like,
    filled,
    generic,
    scalar,
)
from dlc.passes.lowering.storage import source_types

NAMED_CONV = {1: linalg.conv_1d_ncw_fcw, 2: linalg.conv_2d_nchw_fchw, 3: linalg.conv_3d_ncdhw_fcdhw}
NAMED_POOL = {("max", 1): linalg.pooling_ncw_max, ("max", 2): linalg.pooling_nchw_max,
              ("sum", 1): linalg.pooling_ncw_sum, ("sum", 2): linalg.pooling_nchw_sum}
NAMED_CONV_NHWC = {1: linalg.conv_1d_nwc_wcf, 2: linalg.conv_2d_nhwc_hwcf,
                   3: linalg.conv_3d_ndhwc_dhwcf}
NAMED_POOL_NHWC = {("max", 1): linalg.pooling_nwc_max, ("max", 2): linalg.pooling_nhwc_max,
                   ("sum", 1): linalg.pooling_nwc_sum, ("sum", 2): linalg.pooling_nhwc_sum}


def _attrs(op: ir.OpView, definition) -> dict:
    return {a: attr_to_python(k, op.attributes[a]) for a, k in definition.attributes.items()}


def _tensor_type(shape: list[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element)


# ----------------------------------------------------------------------------- tensor helpers


def place(x: ir.Value, low: list[int], high: list[int], value: float,
          spread: list[int] | None = None, channels_last: bool = False) -> ir.Value:
    """x's spatial axes (2... or, channels last, 1...-2) spread by `spread` and padded with
    `value` by `low`/`high`.

    A negative amount crops. Returns x itself when there is nothing to do.
    """
    shape, element = list(x.type.shape), x.type.element_type
    k = len(shape) - 2
    first = 1 if channels_last else 2
    spread = spread or [1] * k
    if not any(low) and not any(high) and all(s == 1 for s in spread):
        return x

    def spatial(values: list[int], fill: int) -> list[int]:
        # values of the spatial axes in x's axis order, `fill` on N and C
        return [fill] + list(values) + [fill] if channels_last else [fill, fill] + list(values)

    def keep(sizes: list[int]) -> list[int]:
        # x's own N and C sizes around spatial `sizes`
        return ([shape[0], *sizes, shape[-1]] if channels_last else shape[:2] + list(sizes))

    spread_sizes = [(shape[first + i] - 1) * spread[i] + 1 for i in range(k)]
    grown = [max(v, 0) for v in low], [max(v, 0) for v in high]
    big = keep([grown[0][i] + spread_sizes[i] + grown[1][i] for i in range(k)])
    dest = filled(_tensor_type(big, element), value)
    result = tensor.insert_slice(x, dest, [], [], [], spatial(grown[0], 0), shape,
                                 spatial(spread, 1))
    if all(v >= 0 for v in (*low, *high)):
        return result
    sizes = keep([low[i] + spread_sizes[i] + high[i] for i in range(k)])
    offsets = spatial([max(-v, 0) for v in low], 0)
    return tensor.extract_slice(_tensor_type(sizes, element), result, [], [], [], offsets,
                                sizes, [1] * len(sizes))


def expand(x: ir.Value, axis: int, sizes: list[int]) -> ir.Value:
    """Split `axis` of x into `sizes` (tensor.expand_shape)."""
    shape = list(x.type.shape)
    target = shape[:axis] + sizes + shape[axis + 1:]
    groups, next_dim = [], 0
    for i in range(len(shape)):
        width = len(sizes) if i == axis else 1
        groups.append(list(range(next_dim, next_dim + width)))
        next_dim += width
    return tensor.ExpandShapeOp(_tensor_type(target, x.type.element_type), x,
                                _reassociation(groups), [], target).result


def collapse(x: ir.Value, axis: int, count: int) -> ir.Value:
    """Merge `count` axes of x starting at `axis` into one (tensor.collapse_shape)."""
    shape = list(x.type.shape)
    target = shape[:axis] + [int(np.prod(shape[axis:axis + count]))] + shape[axis + count:]
    groups = [[i] for i in range(axis)] + [list(range(axis, axis + count))]
    groups += [[i] for i in range(axis + count, len(shape))]
    return tensor.CollapseShapeOp(_tensor_type(target, x.type.element_type), x,
                                  _reassociation(groups)).result


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])


def accumulator(result_type: ir.RankedTensorType, bias: ir.Value | None,
                channel_axis: int = 1) -> ir.Value:
    """Zeros, or the bias [M] broadcast along the result's channel axis."""
    if bias is None:
        return filled(result_type, 0)
    rank = result_type.rank
    maps = [dims_map(rank, [channel_axis % rank]), ir.AffineMap.get_identity(rank)]
    return generic([bias], empty_like(result_type), maps, [PARALLEL] * rank, lambda b, _: b)


def multiply_add(a: ir.Value, b: ir.Value, acc: ir.Value) -> ir.Value:
    return arith.addf(acc, arith.mulf(a, b))


# ----------------------------------------------------------------------------- convolution


def grouped_conv(x: ir.Value, w: ir.Value, acc: ir.Value, group: int, strides: list[int],
                 dilations: list[int], transposed: bool = False) -> ir.Value:
    """A grouped convolution as one linalg.generic over (n, g, f, o..., c, k...).

    x is [N, C, P...] (already padded), acc [N, M, O...]. w is [M, C/G, K...], or for
    `transposed` [C, M/G, K...] read at tap K-1-k (the flipped kernel of ConvTranspose).
    """
    k = x.type.rank - 2
    channels, out_channels = x.type.shape[1], acc.type.shape[1]
    xg = expand(x, 1, [group, channels // group])
    wg = expand(w, 0, [group, w.type.shape[0] // group])
    accg = expand(acc, 1, [group, out_channels // group])
    n_dims = 4 + 2 * k
    d = [ir.AffineDimExpr.get(i) for i in range(n_dims)]
    n, g, f, c = d[0], d[1], d[2], d[3 + k]
    out, taps = d[3:3 + k], d[4 + k:]
    kernel = list(w.type.shape[2:])
    if transposed:
        spatial = [out[i] + (kernel[i] - 1 - taps[i]) * dilations[i] for i in range(k)]
        w_exprs = [g, c, f, *taps]
    else:
        spatial = [out[i] * strides[i] + taps[i] * dilations[i] for i in range(k)]
        w_exprs = [g, f, c, *taps]
    maps = [ir.AffineMap.get(n_dims, 0, [n, g, c, *spatial]),
            ir.AffineMap.get(n_dims, 0, w_exprs),
            ir.AffineMap.get(n_dims, 0, [n, g, f, *out])]
    iterators = [PARALLEL] * (3 + k) + [REDUCTION] * (1 + k)
    result = generic([xg, wg], accg, maps, iterators, multiply_add)
    return collapse(as_value(result), 1, 2)


def conv_2d_grouped(x: ir.Value, w: ir.Value, acc: ir.Value, group: int, strides: list[int],
                    dilations: list[int]) -> ir.Value:
    # [N,C,H,W] x [M,C/G,KH,KW] -> linalg.conv_2d_ngchw_gfchw on [N,G,C/G,H,W] x [G,M/G,C/G,..]
    channels, out_channels = x.type.shape[1], acc.type.shape[1]
    xg = expand(x, 1, [group, channels // group])
    wg = expand(w, 0, [group, out_channels // group])
    accg = expand(acc, 1, [group, out_channels // group])
    result = linalg.conv_2d_ngchw_gfchw(xg, wg, outs=[accg], strides=strides, dilations=dilations)
    return collapse(as_value(result), 1, 2)


def lower_conv(op: ir.OpView, rewriter) -> None:
    # dlc.conv(x, w, b) -> insert_slice into zeros (pads), then linalg.conv_* into the bias
    x, w = op.operands[0], op.operands[1]
    bias = op.operands[2] if len(op.operands) == 3 else None
    attrs = _attrs(op, conv_ops.CONV)
    strides, dilations, pads, group = (attrs[a] for a in ("strides", "dilations", "pads", "group"))
    result_type = op.results[0].type
    k = x.type.rank - 2
    channels, out_channels = x.type.shape[1], result_type.shape[1]
    with rewriter.ip, op.location:
        padded = place(x, pads[:k], pads[k:], 0)
        acc = accumulator(result_type, bias)
        if group == 1 and k in NAMED_CONV:
            value = NAMED_CONV[k](padded, w, outs=[acc], strides=strides, dilations=dilations)
        elif k == 2 and group == channels == out_channels:
            flat_w = collapse(w, 0, 2)  # [C,1,KH,KW] -> [C,KH,KW]
            value = linalg.depthwise_conv_2d_nchw_chw(padded, flat_w, outs=[acc],
                                                      strides=strides, dilations=dilations)
        elif k == 2:
            value = conv_2d_grouped(padded, w, acc, group, strides, dilations)
        else:
            value = grouped_conv(padded, w, acc, group, strides, dilations)
        rewriter.replace_op(op, [as_value(value)])


def lower_conv_transpose(op: ir.OpView, rewriter) -> None:
    # dlc.conv_transpose(x, w, b) -> insert_slice (spread by strides, padded by
    # dilation*(K-1)-pad), then linalg.generic convolving with the flipped kernel
    x, w = op.operands[0], op.operands[1]
    bias = op.operands[2] if len(op.operands) == 3 else None
    attrs = _attrs(op, conv_ops.CONV_TRANSPOSE)
    strides, dilations, pads = attrs["strides"], attrs["dilations"], attrs["pads"]
    k = x.type.rank - 2
    kernel = list(w.type.shape[2:])
    reach = [dilations[i] * (kernel[i] - 1) for i in range(k)]
    low = [reach[i] - pads[i] for i in range(k)]
    high = [reach[i] - pads[k + i] + attrs["output_padding"][i] for i in range(k)]
    with rewriter.ip, op.location:
        spread = place(x, low, high, 0, spread=strides)
        acc = accumulator(op.results[0].type, bias)
        value = grouped_conv(spread, w, acc, attrs["group"], [1] * k, dilations, transposed=True)
        rewriter.replace_op(op, [as_value(value)])


# ----------------------------------------------------------------------------- pooling


def lowest(element: ir.Type, source: ir.Type) -> float:
    """The identity of max in `element` (source: the element type as the program wrote it)."""
    if is_float(element):
        return float("-inf")
    if is_unsigned(source):
        return 0
    return -(1 << (element.width - 1))


def window_counts(in_shape: list[int], out_shape: list[int], attrs: dict,
                  include_pad: bool) -> np.ndarray:
    """How many taps of each output's window fall in the input (or in the padded input)."""
    k = len(in_shape)
    per_axis = []
    for i in range(k):
        begin, end = attrs["pads"][i], attrs["pads"][k + i]
        low, high = (-begin, in_shape[i] + end) if include_pad else (0, in_shape[i])
        starts = np.arange(out_shape[i]) * attrs["strides"][i] - begin
        taps = starts[:, None] + np.arange(attrs["kernel"][i])[None, :] * attrs["dilations"][i]
        per_axis.append(((taps >= low) & (taps < high)).sum(axis=1))
    counts = np.ones(out_shape, dtype=np.int64)
    for i, axis_counts in enumerate(per_axis):
        counts = counts * axis_counts.reshape([-1 if j == i else 1 for j in range(k)])
    return counts


def window_reduce(padded: ir.Value, acc: ir.Value, attrs: dict, kind: str,
                  body: Callable[[ir.Value, ir.Value], ir.Value], unsigned: bool,
                  channels_last: bool = False) -> ir.Value:
    """acc[n, c, o...] = body-fold over taps of padded[n, c, o*s + t*d] (named op if any)."""
    k = padded.type.rank - 2
    window = tensor.EmptyOp(attrs["kernel"], padded.type.element_type).result
    if channels_last:  # (the limits admit only the named channels-last ops)
        return NAMED_POOL_NHWC[(kind, k)](padded, window, outs=[acc], strides=attrs["strides"],
                                          dilations=attrs["dilations"])
    named = NAMED_POOL.get((kind, k))
    if named is not None and not unsigned:
        return named(padded, window, outs=[acc], strides=attrs["strides"],
                     dilations=attrs["dilations"])
    n_dims = 2 + 2 * k
    d = [ir.AffineDimExpr.get(i) for i in range(n_dims)]
    out, taps = d[2:2 + k], d[2 + k:]
    spatial = [out[i] * attrs["strides"][i] + taps[i] * attrs["dilations"][i] for i in range(k)]
    maps = [ir.AffineMap.get(n_dims, 0, [d[0], d[1], *spatial]),
            ir.AffineMap.get(n_dims, 0, taps),
            ir.AffineMap.get(n_dims, 0, [d[0], d[1], *out])]
    iterators = [PARALLEL] * (2 + k) + [REDUCTION] * k
    return generic([padded, window], acc, maps, iterators, lambda x, _, a: body(x, a))


def map_elements(x: ir.Value, fn: Callable[[ir.Value], ir.Value]) -> ir.Value:
    rank = x.type.rank
    identity = ir.AffineMap.get_identity(rank)
    return as_value(generic([x], empty_like(x.type), [identity, identity], [PARALLEL] * rank,
                            lambda v, _: fn(v)))


def divide_by_counts(total: ir.Value, counts: np.ndarray, channels_last: bool = False) -> ir.Value:
    # sum / count: one scalar when every window counts the same, else a constant [O...] tensor
    element = total.type.element_type
    rank = total.type.rank
    spatial = list(range(1, rank - 1)) if channels_last else list(range(2, rank))
    if (counts == counts.flat[0]).all():
        divisor = scalar(element, float(counts.flat[0]))
        return map_elements(total, lambda v: arith.divf(v, divisor))
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[element.width]
    attr = ir.DenseElementsAttr.get(np.ascontiguousarray(counts.astype(dtype)))
    table = arith.ConstantOp(attr.type, attr).result
    identity = ir.AffineMap.get_identity(rank)
    maps = [identity, dims_map(rank, spatial), identity]
    return as_value(generic([total, table], empty_like(total.type), maps, [PARALLEL] * rank,
                            lambda v, n, _: arith.divf(v, n)))


def lp_terms(p: int) -> tuple[Callable[[ir.Value], ir.Value], Callable[[ir.Value], ir.Value]]:
    """(x -> |x|^p, s -> s^(1/p))."""
    if p == 1:
        return math.absf, lambda s: s
    if p == 2:
        return lambda x: arith.mulf(x, x), math.sqrt

    def power(x: ir.Value) -> ir.Value:
        return math.powf(math.absf(x), scalar(x.type, float(p)))

    return power, lambda s: math.powf(s, scalar(s.type, 1.0 / p))


def lower_pool(op: ir.OpView, rewriter) -> None:
    # dlc.pool{max|avg|lp}(x) -> insert_slice into the padding value, linalg.pooling_* or
    # linalg.generic (window reduction), then / count (avg) or ^(1/p) (lp)
    _lower_pool(op, rewriter, conv_ops.POOL, channels_last=False)


def lower_pool_nhwc(op: ir.OpView, rewriter) -> None:
    # dlc.pool_nhwc{max|avg}(x) -> insert_slice into the padding value, linalg.pooling_nhwc_*
    _lower_pool(op, rewriter, conv_ops.POOL_NHWC, channels_last=True)


def _lower_pool(op: ir.OpView, rewriter, definition, channels_last: bool) -> None:
    (x,) = op.operands
    attrs = _attrs(op, definition)
    kind, pads = attrs["kind"], attrs["pads"]
    result_type = op.results[0].type
    element = result_type.element_type
    source = source_types(op)[1][0]
    k = x.type.rank - 2
    first = 1 if channels_last else 2
    in_shape = list(x.type.shape[first:first + k])
    out_shape = list(result_type.shape[first:first + k])
    needed = [(out_shape[i] - 1) * attrs["strides"][i]
              + attrs["dilations"][i] * (attrs["kernel"][i] - 1) + 1 for i in range(k)]
    high = [max(pads[k + i], needed[i] - in_shape[i] - pads[i]) for i in range(k)]
    with rewriter.ip, op.location:
        if kind == "max":
            pad_value = lowest(element, source)
            padded = place(x, pads[:k], high, pad_value, channels_last=channels_last)
            acc = filled(result_type, pad_value)
            maximum = arith.maximumf if is_float(element) else \
                arith.maxui if is_unsigned(source) else arith.maxsi
            value = window_reduce(padded, acc, attrs, "max", maximum, is_unsigned(source),
                                  channels_last)
        elif kind == "avg":
            padded = place(x, pads[:k], high, 0, channels_last=channels_last)
            total = window_reduce(padded, filled(result_type, 0), attrs, "sum", arith.addf, False,
                                  channels_last)
            counts = window_counts(in_shape, out_shape, attrs, bool(attrs["count_include_pad"]))
            value = divide_by_counts(as_value(total), counts, channels_last)
        else:
            power, root = lp_terms(attrs["p"])
            padded = place(x, pads[:k], high, 0)
            total = window_reduce(padded, filled(result_type, 0), attrs, "lp",
                                  lambda v, a: arith.addf(a, power(v)), False)
            value = as_value(total) if attrs["p"] == 1 else map_elements(as_value(total), root)
        rewriter.replace_op(op, [as_value(value)])


# ----------------------------------------------------------------------------- channels last


def conv_nhwc_limit(op: ir.Operation) -> str | None:
    """Why a dlc.conv_nhwc cannot be lowered (named linalg ops only), or None."""
    x = op.operands[0].type
    k, group = x.rank - 2, conv_ops.CONV_NHWC.python_attributes(op)["group"]
    if group == 1 and k in NAMED_CONV_NHWC:
        return None
    if k == 2:  # (depthwise, or grouped: linalg.conv_2d_nhwgc_gfhwc)
        return None
    return (f"with {k} spatial axes and group {group} has no channels-last lowering "
            "(1-3 spatial axes with group 1, or 2-D grouped and depthwise)")


def pool_nhwc_limit(op: ir.Operation) -> str | None:
    """Why a dlc.pool_nhwc cannot be lowered (named linalg ops only), or None."""
    x = op.operands[0].type
    kind = conv_ops.POOL_NHWC.python_attributes(op)["kind"]
    named = {"avg": "sum"}.get(kind, kind)
    if (named, x.rank - 2) in NAMED_POOL_NHWC and is_float(x.element_type):
        return None
    return (f"{kind} pooling of {x.element_type} with {x.rank - 2} spatial axes has no "
            "channels-last lowering (float max/avg, 1 or 2 spatial axes)")


def conv_2d_grouped_nhwc(x: ir.Value, w: ir.Value, acc: ir.Value, group: int,
                         strides: list[int], dilations: list[int]) -> ir.Value:
    # [N,H,W,C] x [KH,KW,C/G,M] -> linalg.conv_2d_nhwgc_gfhwc on [N,H,W,G,C/G] x
    # [G,M/G,KH,KW,C/G] (the filter transposed: folded when constant) into [N,OH,OW,G,M/G]
    channels, out_channels = x.type.shape[-1], acc.type.shape[-1]
    kh, kw = w.type.shape[:2]
    shape = [group, out_channels // group, kh, kw, channels // group]
    array = _constant_array(w)
    if array is not None:
        gfhwc = contiguous(array.reshape(kh, kw, shape[4], group, shape[1])
                           .transpose(3, 4, 0, 1, 2))
        wg = arith.ConstantOp(_tensor_type(shape, w.type.element_type),
                              ir.DenseElementsAttr.get(gfhwc, type=w.type.element_type)).result
    else:
        wg = as_value(linalg.transpose(expand(w, 3, [group, shape[1]]),
                                       outs=[empty_like(_tensor_type(shape, w.type.element_type))],
                                       permutation=[3, 4, 0, 1, 2]))
    xg = expand(x, 3, [group, channels // group])
    accg = expand(acc, 3, [group, out_channels // group])
    result = linalg.conv_2d_nhwgc_gfhwc(xg, wg, outs=[accg], strides=strides,
                                        dilations=dilations)
    return collapse(as_value(result), 3, 2)


def _constant_array(value: ir.Value) -> np.ndarray | None:
    """The elements of a dense f32 `arith.constant` `value` (not a splat), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or attr.is_splat \
            or str(value.type.element_type) != "f32":
        return None
    return np.array(attr)


def lower_conv_nhwc(op: ir.OpView, rewriter) -> None:
    # dlc.conv_nhwc(x, w, b) -> insert_slice into zeros (pads), then linalg.conv_*_nhwc_hwcf
    # (or linalg.depthwise_conv_2d_nhwc_hwc) into the bias
    x, w = op.operands[0], op.operands[1]
    bias = op.operands[2] if len(op.operands) == 3 else None
    attrs = _attrs(op, conv_ops.CONV_NHWC)
    strides, dilations, pads, group = (attrs[a] for a in ("strides", "dilations", "pads", "group"))
    k = x.type.rank - 2
    with rewriter.ip, op.location:
        padded = place(x, pads[:k], pads[k:], 0, channels_last=True)
        acc = accumulator(op.results[0].type, bias, channel_axis=-1)
        if group == 1:
            value = NAMED_CONV_NHWC[k](padded, w, outs=[acc], strides=strides,
                                       dilations=dilations)
        elif not group == x.type.shape[-1] == w.type.shape[-1]:
            value = conv_2d_grouped_nhwc(padded, w, acc, group, strides, dilations)
        else:
            flat_w = collapse(w, 2, 2)  # [KH,KW,1,C] -> [KH,KW,C]
            value = linalg.depthwise_conv_2d_nhwc_hwc(padded, flat_w, outs=[acc],
                                                      strides=strides, dilations=dilations)
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {conv_ops.CONV: lower_conv, conv_ops.CONV_TRANSPOSE: lower_conv_transpose,
            conv_ops.POOL: lower_pool, conv_ops.CONV_NHWC: lower_conv_nhwc,
            conv_ops.POOL_NHWC: lower_pool_nhwc}
LIMITS = {conv_ops.CONV_NHWC: conv_nhwc_limit, conv_ops.POOL_NHWC: pool_nhwc_limit}
