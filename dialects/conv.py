"""The convolution and pooling ops: dlc.conv, dlc.conv_transpose and dlc.pool.

Layouts are ONNX's: X is [N, C, D1, ..., Dk] (any k >= 1), Conv's W is [M, C/group, K1, ..., Kk],
ConvTranspose's W is [C, M/group, K1, ..., Kk], the optional bias B is [M]. Every attribute is
explicit (the importer turns ONNX's auto_pad, output_shape and defaults into them): `pads` are
[begin_1, ..., begin_k, end_1, ..., end_k] as in ONNX. Output sizes follow ONNX:
  conv            (D + pb + pe - dilation * (K - 1) - 1) // stride + 1
  conv_transpose  stride * (D - 1) + output_padding + dilation * (K - 1) + 1 - pb - pe
  pool            as conv, rounded up with ceil_mode=1 (a last window that would start in the
                  end padding is dropped, as PyTorch and onnxruntime do)
dlc.conv_nhwc and dlc.pool_nhwc are the channels-last forms the layout pass (dlc-convert-layout)
makes: X is [N, D1, ..., Dk, C] (NHWC for k = 2) and the result [N, O1, ..., Ok, M]; conv_nhwc's
W is [K1, ..., Kk, C/group, M] (HWCF); attributes and output sizes are those of dlc.conv and
dlc.pool. dlc.pool's `kind` is "max", "avg" or "lp" (p-norm with the integer `p`); `count_include_pad`
(avg only) divides by the window size clipped to the padded input instead of the number of
input elements the window covers.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import TensorTypes, is_bool, is_float, same_element_type, shape_str, tensor

POOL_KINDS = ("max", "avg", "lp")


def _check_window(x: ir.RankedTensorType, attrs: dict[str, Any], names: tuple[str, ...]) -> int:
    """The number of spatial axes k; checks x's rank and the lengths/signs of the attributes."""
    if x.rank < 3:
        raise ShapeError(f"input must be [N, C, D1, ...] (rank >= 3), got [{shape_str(x.shape)}]")
    k = x.rank - 2
    for name in names:
        want = 2 * k if name == "pads" else k
        if len(attrs[name]) != want:
            raise ShapeError(f"{name} {list(attrs[name])} must have {want} values "
                             f"for {k} spatial axes")
    for name in ("strides", "dilations", "kernel"):
        if name in names and any(v < 1 for v in attrs[name]):
            raise ShapeError(f"{name} {list(attrs[name])} must be positive")
    return k


def _check_bias(types: TensorTypes, channels: int) -> None:
    if len(types) == 3 and list(types[2].shape) != [channels]:
        raise ShapeError(f"bias of shape [{shape_str(types[2].shape)}] must be [{channels}]")


def _float_element(types: TensorTypes) -> ir.Type:
    element = same_element_type(types)
    if not is_float(element):
        raise ShapeError(f"expects a floating-point element type, got {element}")
    return element


def window_output_size(size: int, kernel: int, stride: int, dilation: int, begin: int,
                       end: int, ceil_mode: bool = False) -> int:
    """The number of windows along one axis (ONNX's formula; ceil_mode as onnxruntime)."""
    span = size + begin + end - dilation * (kernel - 1) - 1
    if span < 0:
        raise ShapeError(f"the window (kernel {kernel}, dilation {dilation}) is larger than the "
                         f"padded input ({size} + {begin} + {end})")
    if not ceil_mode:
        return span // stride + 1
    count = -(-span // stride) + 1
    if (count - 1) * stride >= size + begin:  # the last window would start in the end padding
        count -= 1
    return count


def infer_conv(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, w = types[0], types[1]
    element = _float_element(types)
    k = _check_window(x, attrs, ("strides", "dilations", "pads"))
    group, pads = attrs["group"], attrs["pads"]
    if w.rank != x.rank:
        raise ShapeError(f"weight [{shape_str(w.shape)}] must have the input's rank {x.rank}")
    if group < 1 or x.shape[1] % group or w.shape[0] % group:
        raise ShapeError(f"group {group} must divide the input channels ({x.shape[1]}) and "
                         f"the output channels ({w.shape[0]})")
    if w.shape[1] * group != x.shape[1]:
        raise ShapeError(f"weight [{shape_str(w.shape)}] needs {w.shape[1] * group} input "
                         f"channels (C/group = {w.shape[1]}, group {group}), got {x.shape[1]}")
    if any(p < 0 for p in pads):
        raise ShapeError(f"pads {list(pads)} must be non-negative")
    _check_bias(types, w.shape[0])
    spatial = [window_output_size(x.shape[2 + i], w.shape[2 + i], attrs["strides"][i],
                                  attrs["dilations"][i], pads[i], pads[k + i])
               for i in range(k)]
    return [tensor([x.shape[0], w.shape[0], *spatial], element)]


def infer_conv_transpose(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, w = types[0], types[1]
    element = _float_element(types)
    k = _check_window(x, attrs, ("strides", "dilations", "pads", "output_padding"))
    group, pads = attrs["group"], attrs["pads"]
    if w.rank != x.rank:
        raise ShapeError(f"weight [{shape_str(w.shape)}] must have the input's rank {x.rank}")
    if group < 1 or x.shape[1] % group:
        raise ShapeError(f"group {group} must divide the input channels ({x.shape[1]})")
    if w.shape[0] != x.shape[1]:
        raise ShapeError(f"weight [{shape_str(w.shape)}] must have {x.shape[1]} input channels "
                         f"(the input's), got {w.shape[0]}")
    if any(p < 0 for p in attrs["output_padding"]):
        raise ShapeError(f"output_padding {list(attrs['output_padding'])} must be non-negative")
    channels = w.shape[1] * group
    _check_bias(types, channels)
    spatial = []
    for i in range(k):
        stride, dilation = attrs["strides"][i], attrs["dilations"][i]
        size = (stride * (x.shape[2 + i] - 1) + attrs["output_padding"][i]
                + dilation * (w.shape[2 + i] - 1) + 1 - pads[i] - pads[k + i])
        if size < 1:
            raise ShapeError(f"pads {list(pads)} leave no output along spatial axis {i}")
        spatial.append(size)
    return [tensor([x.shape[0], channels, *spatial], element)]


def infer_pool(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    kind, element = attrs["kind"], x.element_type
    if kind not in POOL_KINDS:
        raise ShapeError(f"kind {kind!r} must be one of {', '.join(POOL_KINDS)}")
    if kind != "max" and not is_float(element):
        raise ShapeError(f"{kind} pooling expects a floating-point element type, got {element}")
    if is_bool(element):
        raise ShapeError(f"max pooling expects a numeric element type, got {element}")
    k = _check_window(x, attrs, ("kernel", "strides", "dilations", "pads"))
    pads = attrs["pads"]
    if any(p < 0 for p in pads):
        raise ShapeError(f"pads {list(pads)} must be non-negative")
    if kind == "lp" and attrs["p"] < 1:
        raise ShapeError(f"p {attrs['p']} must be positive")
    spatial = [window_output_size(x.shape[2 + i], attrs["kernel"][i], attrs["strides"][i],
                                  attrs["dilations"][i], pads[i], pads[k + i],
                                  bool(attrs["ceil_mode"]))
               for i in range(k)]
    return [tensor([*x.shape[:2], *spatial], element)]


def _channels_first(t: ir.RankedTensorType) -> ir.RankedTensorType:
    """[N, D..., C] read as [N, C, D...]."""
    shape = list(t.shape)
    return tensor([shape[0], shape[-1], *shape[1:-1]], t.element_type)


def _channels_last(t: ir.Type) -> ir.RankedTensorType:
    """[N, C, D...] read as [N, D..., C]."""
    shape = list(t.shape)
    return tensor([shape[0], *shape[2:], shape[1]], t.element_type)


def _spatial_rank(x: ir.RankedTensorType) -> None:
    if x.rank < 3:
        raise ShapeError(f"input must be [N, D1, ..., C] (rank >= 3), got [{shape_str(x.shape)}]")


def infer_conv_nhwc(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    # the channels-first inference on x [N,D...,C] -> [N,C,D...], w [K...,C/G,M] -> [M,C/G,K...]
    x, w = types[0], types[1]
    _spatial_rank(x)
    if w.rank != x.rank:
        raise ShapeError(f"weight [{shape_str(w.shape)}] must have the input's rank {x.rank}")
    wf = tensor([w.shape[-1], w.shape[-2], *w.shape[:-2]], w.element_type)
    (y,) = infer_conv([_channels_first(x), wf, *types[2:]], attrs)
    return [_channels_last(y)]


def infer_pool_nhwc(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    _spatial_rank(types[0])
    (y,) = infer_pool([_channels_first(types[0])], attrs)
    return [_channels_last(y)]


CONV = define(OpDef(
    "conv", ("x", "w", "b?"), infer_conv,
    {"strides": "ints", "dilations": "ints", "pads": "ints", "group": "int"},
    "grouped N-D convolution (cross-correlation) as ONNX Conv, explicit pads",
))
CONV_TRANSPOSE = define(OpDef(
    "conv_transpose", ("x", "w", "b?"), infer_conv_transpose,
    {"strides": "ints", "dilations": "ints", "pads": "ints", "output_padding": "ints",
     "group": "int"},
    "grouped N-D transposed convolution as ONNX ConvTranspose, explicit pads",
))
POOL = define(OpDef(
    "pool", ("x",), infer_pool,
    {"kind": "str", "kernel": "ints", "strides": "ints", "dilations": "ints", "pads": "ints",
     "ceil_mode": "int", "count_include_pad": "int", "p": "int"},
    "N-D max / average / Lp pooling as ONNX MaxPool, AveragePool, LpPool",
))
CONV_NHWC = define(OpDef(
    "conv_nhwc", ("x", "w", "b?"), infer_conv_nhwc, CONV.attributes,
    "dlc.conv in channels-last layout: x [N, D..., C], w [K..., C/group, M] (HWCF)",
))
POOL_NHWC = define(OpDef(
    "pool_nhwc", ("x",), infer_pool_nhwc, POOL.attributes,
    "dlc.pool in channels-last layout: x [N, D..., C]",
))
