"""The kernel cases of the benchmark: one-op (or one-chain) ONNX models and their peers.

Each `KernelCase` holds a model builder, its inputs and its peer: numpy (matmul: OpenBLAS
sgemm; conv: im2col, a copied strided view, then one sgemm; elementwise: numpy's ufuncs) or,
where numpy has no equivalent kernel (depthwise conv, softmax, layernorm), an onnxruntime
session of the same one-node model (`numpy_peer` None). Constant weights are initializers, as
in a real model. Shapes: the conv layers of ResNet-50 (stem 7x7/2, the 3x3 layers of each
stage, the strided 3x3 and 1x1 layers), SqueezeNet's classifier 1x1 conv (13x13), BERT's Linear
(a 3-D activation times a constant weight) and attention's batched matmul, MobileNetV2's
depthwise 3x3 layers, and softmax/layernorm over the rows of BERT-base-like (128x768) and
square (1024x1024) activations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

RNG = np.random.default_rng(0)


@dataclass
class KernelCase:
    name: str
    build: Callable[[], tuple[onnx.ModelProto, list[np.ndarray]]]  # (model, inputs), lazily
    numpy_peer: Callable[[list[np.ndarray]], np.ndarray] | None  # None: onnxruntime
    flops: float | None


def graph_model(nodes, inputs: dict[str, list[int]], outputs: dict[str, list[int]],
                name: str, constants: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        [onnx.numpy_helper.from_array(v, n) for n, v in (constants or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# ----------------------------------------------------------------------------- matmul


def matmul_case(n: int) -> KernelCase:
    def build():
        model = graph_model([helper.make_node("MatMul", ["a", "b"], ["c"])],
                            {"a": [n, n], "b": [n, n]}, {"c": [n, n]}, f"matmul{n}")
        return model, [normal(n, n), normal(n, n)]

    return KernelCase(f"matmul {n}^3 f32", build, lambda args: args[0] @ args[1], 2.0 * n**3)


def linear_case(rows: int, inner: int, cols: int) -> KernelCase:
    """A 3-D activation times a constant 2-D weight, as exporters write a transformer's Linear."""
    weight = normal(inner, cols, scale=inner**-0.5)

    def build():
        model = graph_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                            {"x": [1, rows, inner]}, {"y": [1, rows, cols]}, "linear",
                            {"w": weight})
        return model, [normal(1, rows, inner)]

    return KernelCase(f"matmul 1x{rows}x{inner} @ const {inner}x{cols} (BERT FFN)", build,
                      lambda args: args[0] @ weight, 2.0 * rows * inner * cols)


def batch_matmul_case(heads: int, seq: int, depth: int) -> KernelCase:
    def build():
        model = graph_model([helper.make_node("MatMul", ["q", "k"], ["s"])],
                            {"q": [1, heads, seq, depth], "k": [1, heads, depth, seq]},
                            {"s": [1, heads, seq, seq]}, "batch_matmul")
        return model, [normal(1, heads, seq, depth), normal(1, heads, depth, seq)]

    return KernelCase(f"batch matmul 1x{heads}x{seq}x{depth} @ 1x{heads}x{depth}x{seq} "
                      "(BERT attention)", build, lambda args: args[0] @ args[1],
                      2.0 * heads * seq * seq * depth)


# ----------------------------------------------------------------------------- conv


def im2col_conv(x: np.ndarray, weight: np.ndarray, stride: int) -> np.ndarray:
    """numpy's convolution ('same' padding): im2col (a strided view, copied), one sgemm."""
    cout, cin, kh, kw = weight.shape
    pad = kh // 2
    padded = np.pad(x[0], ((0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]
    oh, ow = windows.shape[1:3]
    columns = windows.transpose(0, 3, 4, 1, 2).reshape(cin * kh * kw, oh * ow)  # (copies)
    return (weight.reshape(cout, -1) @ columns).reshape(1, cout, oh, ow)


def conv_case(cin: int, cout: int, size: int, kernel: int, stride: int = 1,
              model: str = "ResNet-50") -> KernelCase:
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    weight = normal(cout, cin, kernel, kernel, scale=1 / (kernel * cin**0.5))
    pad = kernel // 2

    def build():
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[kernel, kernel],
                                pads=[pad] * 4, strides=[stride, stride])
        model = graph_model([node], {"x": [1, cin, size, size]}, {"y": [1, cout, out, out]},
                            "conv", {"w": weight})
        return model, [normal(1, cin, size, size)]

    shape = f"{cin}x{size}x{size}" + (f"->{cout}" if cout != cin else "")
    suffix = f"/{stride}" if stride != 1 else ""
    return KernelCase(f"conv {kernel}x{kernel}{suffix} {shape} ({model})", build,
                      lambda args: im2col_conv(args[0], weight, stride),
                      2.0 * cout * cin * kernel * kernel * out * out)


# (cin, cout, size, kernel, stride) of the ResNet-50 conv layers measured
RESNET50_CONVS = (
    (3, 64, 224, 7, 2),  # the stem
    (64, 64, 56, 3, 1), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1), (512, 512, 7, 3, 1),
    (128, 128, 56, 3, 2),  # the strided 3x3 of stage 2 (ResNet-50 v1.5)
    (64, 256, 56, 1, 1), (1024, 256, 14, 1, 1),  # 1x1 expand / reduce
    (256, 512, 56, 1, 2),  # the strided 1x1 projection shortcut
)
# (cin, cout, size, kernel, stride) of SqueezeNet's classifier conv (13 = a prime spatial size)
SQUEEZENET_CONVS = ((512, 1000, 13, 1, 1),)


def depthwise_case(channels: int, size: int) -> KernelCase:
    weight = normal(channels, 1, 3, 3, scale=1 / 3)

    def build():
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                pads=[1, 1, 1, 1], group=channels)
        shape = [1, channels, size, size]
        model = graph_model([node], {"x": shape}, {"y": shape}, "depthwise", {"w": weight})
        return model, [normal(*shape)]

    return KernelCase(f"depthwise 3x3 {channels}x{size}x{size} (MobileNetV2)", build, None,
                      2.0 * channels * 9 * size * size)


# ----------------------------------------------------------------------------- rows


def softmax_case(rows: int, cols: int) -> KernelCase:
    def build():
        model = graph_model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                            {"x": [rows, cols]}, {"y": [rows, cols]}, "softmax")
        return model, [normal(rows, cols, scale=3.0)]

    return KernelCase(f"softmax rows {rows}x{cols}", build, None, None)


def layernorm_case(rows: int, cols: int) -> KernelCase:
    constants = {"scale": normal(cols) + 1, "bias": normal(cols, scale=0.1)}

    def build():
        node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1,
                                epsilon=1e-5)
        model = graph_model([node], {"x": [rows, cols]}, {"y": [rows, cols]}, "layernorm",
                            constants)
        return model, [normal(rows, cols)]

    return KernelCase(f"layernorm rows {rows}x{cols}", build, None, None)


def elementwise_case(size: int) -> KernelCase:
    def build():
        # exp(relu((a + b) * c)): one fused, vectorized loop with a polynomial exp
        nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
                 helper.make_node("Mul", ["s", "c"], ["m"]),
                 helper.make_node("Relu", ["m"], ["r"]), helper.make_node("Exp", ["r"], ["y"])]
        model = graph_model(nodes, {"a": [size], "b": [size], "c": [size]}, {"y": [size]},
                            "elementwise")
        return model, [normal(size), normal(size), normal(size)]

    return KernelCase("exp(relu((a+b)*c)) 4M f32", build,
                      lambda args: np.exp(np.maximum((args[0] + args[1]) * args[2], 0)), None)


def kernel_cases(large: bool) -> Iterator[KernelCase]:
    for n in (256, 512, 1024) + ((2048,) if large else ()):
        yield matmul_case(n)
    for cin, cout, size, kernel, stride in RESNET50_CONVS:
        yield conv_case(cin, cout, size, kernel, stride)
    for cin, cout, size, kernel, stride in SQUEEZENET_CONVS:
        yield conv_case(cin, cout, size, kernel, stride, "SqueezeNet")
    yield linear_case(128, 256, 1024)
    yield batch_matmul_case(4, 128, 64)
    for channels, size in ((32, 112), (144, 56)):
        yield depthwise_case(channels, size)
    for rows, cols in ((128, 768), (1024, 1024)):
        yield softmax_case(rows, cols)
        yield layernorm_case(rows, cols)
    yield elementwise_case(1 << 22)
