"""Importers of convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool, LpPool and
the Global*Pool ops, onto dlc.conv, dlc.conv_transpose and dlc.pool.

The dlc ops take every attribute explicitly, so the importers resolve ONNX's defaults, auto_pad
(SAME_UPPER / SAME_LOWER / VALID / NOTSET), ConvTranspose's output_shape and the Global* ops'
whole-image window here. Opsets 7+: attributes that appeared later (dilations, ceil_mode) default
to their neutral values. MaxPool's optional Indices output is not supported (a clear error).
"""

from __future__ import annotations

from mlir import ir

from dlc.dialects import conv as conv_ops
from dlc.frontends.onnx_node import Importer, NodeContext


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _spatial(n: NodeContext) -> int:
    x = n.inputs[0]
    if x.type.rank < 3:
        raise n.error(f"input must be [N, C, D1, ...] (rank >= 3), got rank {x.type.rank}")
    return x.type.rank - 2


def _ints(n: NodeContext, name: str, k: int, default: int) -> list[int]:
    values = [int(v) for v in n.attr(name, [default] * k)]
    if len(values) != k:
        raise n.error(f"{name} {values} must have {k} values for {k} spatial axes")
    return values


def auto_pads(n: NodeContext, sizes: list[int], kernel: list[int], strides: list[int],
              dilations: list[int]) -> list[int]:
    """ONNX pads [begins..., ends...] from auto_pad, or the pads attribute for NOTSET."""
    k = len(sizes)
    mode = _text(n.attr("auto_pad", "NOTSET"))
    if mode == "NOTSET":
        pads = [int(p) for p in n.attr("pads", [0] * 2 * k)]
        if len(pads) != 2 * k:
            raise n.error(f"pads {pads} must have {2 * k} values for {k} spatial axes")
        return pads
    if mode == "VALID":
        return [0] * 2 * k
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"auto_pad {mode!r} must be NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    begins, ends = [], []
    for size, window, stride, dilation in zip(sizes, kernel, strides, dilations):
        out = -(-size // stride)  # SAME: ceil(size / stride) outputs
        total = max(0, (out - 1) * stride + dilation * (window - 1) + 1 - size)
        begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def _kernel(n: NodeContext, w: ir.Value, k: int) -> list[int]:
    kernel = list(w.type.shape[2:])
    given = n.attr("kernel_shape")
    if given is not None and [int(v) for v in given] != kernel:
        raise n.error(f"kernel_shape {list(given)} differs from the weight's {kernel}")
    return kernel


def import_conv(n: NodeContext) -> list[ir.Value]:
    x, w = n.inputs[0], n.inputs[1]
    k = _spatial(n)
    kernel = _kernel(n, w, k)
    strides, dilations = _ints(n, "strides", k, 1), _ints(n, "dilations", k, 1)
    pads = auto_pads(n, list(x.type.shape[2:]), kernel, strides, dilations)
    operands = [v for v in n.inputs[:3] if v is not None]
    attrs = {"strides": strides, "dilations": dilations, "pads": pads,
             "group": int(n.attr("group", 1))}
    return [n.build(conv_ops.CONV, operands, attrs)]


def transpose_pads(n: NodeContext, sizes: list[int], kernel: list[int], strides: list[int],
                   dilations: list[int], output_padding: list[int]) -> list[int]:
    """ConvTranspose's pads: from output_shape (or SAME's size * stride), else the attribute."""
    k = len(sizes)
    mode = _text(n.attr("auto_pad", "NOTSET"))
    output_shape = n.attr("output_shape")
    if output_shape is None and mode in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [size * stride for size, stride in zip(sizes, strides)]
    if output_shape is None:
        if mode not in ("NOTSET", "VALID"):
            raise n.error(f"auto_pad {mode!r} must be NOTSET, SAME_UPPER, SAME_LOWER or VALID")
        return auto_pads(n, sizes, kernel, strides, dilations)
    output_shape = [int(v) for v in output_shape][-k:]  # [N, C, ...] is accepted too
    if len(output_shape) != k:
        raise n.error(f"output_shape {output_shape} must have {k} values")
    begins, ends = [], []
    for i in range(k):
        total = (strides[i] * (sizes[i] - 1) + output_padding[i]
                 + dilations[i] * (kernel[i] - 1) + 1 - output_shape[i])
        begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def import_conv_transpose(n: NodeContext) -> list[ir.Value]:
    x, w = n.inputs[0], n.inputs[1]
    k = _spatial(n)
    kernel = _kernel(n, w, k)
    strides, dilations = _ints(n, "strides", k, 1), _ints(n, "dilations", k, 1)
    output_padding = _ints(n, "output_padding", k, 0)
    sizes = list(x.type.shape[2:])
    pads = transpose_pads(n, sizes, kernel, strides, dilations, output_padding)
    operands = [v for v in n.inputs[:3] if v is not None]
    attrs = {"strides": strides, "dilations": dilations, "pads": pads,
             "output_padding": output_padding, "group": int(n.attr("group", 1))}
    return [n.build(conv_ops.CONV_TRANSPOSE, operands, attrs)]


def _pool(kind: str) -> Importer:
    def import_pool(n: NodeContext) -> list[ir.Value]:
        x = n.inputs[0]
        k = _spatial(n)
        if kind == "max" and len(n.node.output) > 1 and n.node.output[1]:
            raise n.error("the Indices output of MaxPool is not supported; use only output 0")
        if n.attr("kernel_shape") is None:
            raise n.error("needs the kernel_shape attribute")
        kernel = _ints(n, "kernel_shape", k, 1)
        strides, dilations = _ints(n, "strides", k, 1), _ints(n, "dilations", k, 1)
        pads = auto_pads(n, list(x.type.shape[2:]), kernel, strides, dilations)
        _check_pool_pads(n, pads, kernel)
        attrs = {"kind": kind, "kernel": kernel, "strides": strides, "dilations": dilations,
                 "pads": pads, "ceil_mode": int(n.attr("ceil_mode", 0)),
                 "count_include_pad": int(n.attr("count_include_pad", 0)),
                 "p": _p(n)}
        return [n.build(conv_ops.POOL, [x], attrs)]

    return import_pool


def _check_pool_pads(n: NodeContext, pads: list[int], kernel: list[int]) -> None:
    # a pad as large as the kernel makes windows of padding only (a max of nothing, an average
    # over no element); onnxruntime refuses such pools too ("Pad should be smaller than kernel")
    k = len(kernel)
    for i, pad in enumerate(pads):
        if pad >= kernel[i % k]:
            side = "begin" if i < k else "end"
            raise n.error(f"pads {pads}: the {side} pad {pad} of spatial axis {i % k} is not "
                          f"smaller than the kernel size {kernel[i % k]} (kernel_shape "
                          f"{kernel}), so a window would cover only padding; use pads smaller "
                          "than the kernel")


def _p(n: NodeContext) -> int:
    p = n.attr("p", 2)
    if float(p) != int(p):  # LpPool-1 had a float p
        raise n.error(f"p {p} must be an integer")
    return int(p)


def _global_pool(kind: str) -> Importer:
    def import_global_pool(n: NodeContext) -> list[ir.Value]:
        # Global*Pool(x) -> dlc.pool with the whole image as the window
        x = n.inputs[0]
        k = _spatial(n)
        attrs = {"kind": kind, "kernel": list(x.type.shape[2:]), "strides": [1] * k,
                 "dilations": [1] * k, "pads": [0] * 2 * k, "ceil_mode": 0,
                 "count_include_pad": 0, "p": _p(n)}
        return [n.build(conv_ops.POOL, [x], attrs)]

    return import_global_pool


IMPORTERS: dict[str, Importer] = {
    "Conv": import_conv,
    "ConvTranspose": import_conv_transpose,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "LpPool": _pool("lp"),
    "GlobalMaxPool": _global_pool("max"),
    "GlobalAveragePool": _global_pool("avg"),
    "GlobalLpPool": _global_pool("lp"),
}
