"""Static QDQ convs on integers (`passes/graph/qdq_conv.py` + the VNNI conv kernel of
`passes/codegen/int8_vnni.py`, issue 18): DequantizeLinear(x: u8) and DequantizeLinear(W: s8
per channel) into a Conv become an integer conv, on vpdpbusd where the CPU has AVX-512 VNNI,
with the scales applied once per output. The result must match onnxruntime running the model
as written (the float conv of the dequantized values) up to a quantization step for a float
rounding difference, at strides, paddings, channel counts that fill no vector and filter counts
that fill no panel; and the kernel must be bit-exact against the integer sums.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.passes.codegen import int8_vnni
from dlc.passes.codegen import target as cpu_target

ort = pytest.importorskip("onnxruntime")


def _model(c: int, f: int, h: int, w: int, k: int, stride: int, pad: int, seed: int,
           x_zero: int = 128, group: int = 1, w_zero: int = 0):
    """x (float input) -> QuantizeLinear -> DequantizeLinear -> Conv(W: DequantizeLinear of
    per-channel s8, bias: DequantizeLinear of i32) -> QuantizeLinear -> DequantizeLinear."""
    rng = np.random.default_rng(seed)
    wq = rng.integers(-127, 128, size=[f, c // group, k, k]).astype(np.int8)
    ws = (rng.random(f) * 0.02 + 0.001).astype(np.float32)
    bq = rng.integers(-5000, 5000, size=[f]).astype(np.int32)
    init = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(ws, "ws"),
            numpy_helper.from_array(np.full(f, w_zero, np.int8), "wz"),
            numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
            numpy_helper.from_array(np.array(x_zero, np.uint8), "xz"),
            numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
            numpy_helper.from_array(np.array(3, np.uint8), "yz"),
            numpy_helper.from_array(bq, "bq"),
            numpy_helper.from_array((0.05 * ws).astype(np.float32), "bs"),
            numpy_helper.from_array(np.zeros(f, np.int32), "bz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["y"], pads=[pad] * 4,
                              strides=[stride] * 2, group=group),
             helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["out"])]
    graph = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"x": (rng.standard_normal([1, c, h, w]) * 2).astype(np.float32)}


def _as_written(model, feeds) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _check(model, feeds, threads: int = 1) -> str:
    """dlc (AVX-512 target) against onnxruntime as written: at most one quantization step
    (0.1) apart, in at most 0.1 % of the outputs; returns dlc's llvm IR."""
    with cpu_target.use("avx512"):
        (result,) = dlc.compile(model, num_threads=threads)(feeds)
        llvm = dlc.lower(model, stage="llvm", num_threads=threads).ir()
    difference = np.abs(result - _as_written(model, feeds))
    assert difference.max() <= 0.1 + 1e-5
    assert (difference > 1e-5).mean() <= 1e-3
    return llvm


CASES = [
    (16, 32, 14, 14, 3, 1, 1),  # a 3x3 conv, padded
    (3, 20, 17, 15, 3, 2, 1),  # stride 2, 3 channels (no quad), 20 filters (no panel)
    (24, 40, 9, 11, 1, 1, 0),  # 1x1, 24 channels (no 16-lane vector)
    (64, 64, 28, 28, 1, 2, 0),  # a downsample: 1x1 stride 2
    (40, 48, 12, 12, 5, 1, 2),  # 5x5
]


@pytest.mark.parametrize("case", CASES)
def test_qdq_conv_matches_onnxruntime(case):
    model, feeds = _model(*case, seed=sum(case))
    llvm = _check(model, feeds)
    if cpu_target.vnni():
        assert int8_vnni.INTRINSIC in llvm


def test_two_threads_and_zero_points():
    # an activation zero point of 0 (post-ReLU) and weight zero points of 2: s8 still
    model, feeds = _model(32, 48, 10, 10, 3, 1, 1, seed=9, x_zero=0, w_zero=2)
    _check(model, feeds, threads=2)


def test_grouped_conv_keeps_the_float_path():
    model, feeds = _model(16, 16, 8, 8, 3, 1, 1, seed=4, group=16)
    llvm = _check(model, feeds)
    assert int8_vnni.INTRINSIC not in llvm


@pytest.mark.parametrize("stride,pad", [(1, 1), (2, 0)])
def test_integer_sums_are_exact(stride, pad):
    # scales of 1 and no bias: the output is the integer conv itself, exact in f32 here
    # (19 channels x 9 taps x 255 x 128 < 2^24), bit for bit
    rng = np.random.default_rng(3 + stride)
    c, f, h, k, zero = 19, 35, 9, 3, 77
    x = rng.integers(0, 256, size=[1, c, h, h]).astype(np.uint8)
    w = rng.integers(-128, 128, size=[f, c, k, k]).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "one", "xz"], ["xd"]),
         helper.make_node("DequantizeLinear", ["w", "ones"], ["wd"], axis=0),
         helper.make_node("Conv", ["xd", "wd"], ["y"], pads=[pad] * 4, strides=[stride] * 2)],
        "sums", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, h, h])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.ones(f, np.float32), "ones"),
         numpy_helper.from_array(np.array(1.0, np.float32), "one"),
         numpy_helper.from_array(np.array(zero, np.uint8), "xz")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with cpu_target.use("avx512"):
        (result,) = dlc.compile(model, num_threads=1)({"x": x})
        llvm = dlc.lower(model, stage="llvm", num_threads=1).ir()
    centered = np.pad(x[0].astype(np.int64) - zero, [(0, 0), (pad, pad), (pad, pad)])
    out = (centered.shape[1] - k) // stride + 1
    expected = np.zeros([f, out, out], np.int64)
    for i in range(k):
        for j in range(k):
            window = centered[:, i:i + stride * out:stride, j:j + stride * out:stride]
            expected += np.einsum("chw,fc->fhw", window, w[:, :, i, j].astype(np.int64))
    np.testing.assert_array_equal(result[0], expected.astype(np.float32))
    if cpu_target.vnni():
        assert int8_vnni.INTRINSIC in llvm
