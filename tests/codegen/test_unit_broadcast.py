"""Elementwise ops reading an operand broadcast on unit dims (indexing maps with constant-0
results, (d0, 0, 0, d3) or (d0, d1, 0, 0): a squeeze-and-excitation block's per-channel scale,
channels last or first) are vectorized by the elementwise family (`elementwise.prepare` reads
the operand through a rank-reducing slice), in f32, i32 and the 8-bit QDQ chains; they ran as
naive scalar loops, which dlc-schedule's naive-path check names (`NaivePathWarning`)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import elementwise
from tests.conftest import make_model

ort = pytest.importorskip("onnxruntime")

# (activation, scale): unit dims at several positions; inner sizes that divide the vector
# widths, that are small (one vector of the whole size) and that must be split (100: 96 + 4)
SHAPES = [
    ([1, 28, 28, 120], [1, 1, 1, 120]),  # SE, channels last: (d0, 0, 0, d3)
    ([1, 24, 20, 20], [1, 24, 1, 1]),  # SE, channels first: (d0, d1, 0, 0)
    ([1, 9, 13, 37], [1, 1, 1, 37]),  # 37 channels
    ([2, 7, 50, 100], [2, 1, 50, 1]),  # the middle and the last position, 100 = 96 + 4
    ([1, 7, 7, 1152], [1, 1, 1, 1152]),  # EfficientNet-B0's last blocks
    ([1, 8, 128, 64], [1, 1, 128, 64]),  # shared by the heads (Llama's rotary, T5's bias)
]
IDS = [f"{'x'.join(map(str, a))}*{'x'.join(map(str, b))}" for a, b in SHAPES]


def _type(shape: list[int], element: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


def _naive_warnings(model) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dlc.lower(model, stage="linalg", num_threads=1)
    return [str(w.message) for w in caught if issubclass(w.category, dlc.NaivePathWarning)]


def _scheduled(model, result: str) -> bool:
    """No linalg.generic writing a tensor of type `result` is left at the linalg stage, and
    vectors were made."""
    text = dlc.lower(model, stage="linalg", num_threads=1).ir()
    left = re.findall(r"linalg\.generic .*? outs\(%\w+ : (tensor<[^>]*>)\)", text)
    return "vector.transfer_write" in text and result not in left


@pytest.mark.parametrize("a_shape, s_shape", SHAPES, ids=IDS)
def test_f32_product_and_hardswish_is_vectorized(a_shape, s_shape) -> None:
    # x * s, then a hard-swish (MobileNetV3's SE block and activation): one fused generic
    nodes = [helper.make_node("Mul", ["x", "s"], ["m"]),
             helper.make_node("HardSwish", ["m"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, a_shape), "s": (np.float32, s_shape)}, ["y"])
    assert _scheduled(model, _type(a_shape, "f32"))
    assert _naive_warnings(model) == []
    rng = np.random.default_rng(1)
    x = rng.standard_normal(a_shape).astype(np.float32) * 4
    s = rng.uniform(0, 1, s_shape).astype(np.float32)
    m = x * s
    expected = m * np.clip(m / 6 + 0.5, 0, 1)
    (result,) = dlc.compile(model, num_threads=1)(x, s)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("a_shape, s_shape", SHAPES[:4], ids=IDS[:4])
def test_i32_product_is_vectorized(a_shape, s_shape) -> None:
    nodes = [helper.make_node("Mul", ["x", "s"], ["m"]), helper.make_node("Add", ["m", "x"], ["y"])]
    model = make_model(nodes, {"x": (np.int32, a_shape), "s": (np.int32, s_shape)}, ["y"])
    assert _scheduled(model, _type(a_shape, "i32"))
    rng = np.random.default_rng(2)
    x = rng.integers(-1000, 1000, a_shape, dtype=np.int32)
    s = rng.integers(-50, 50, s_shape, dtype=np.int32)
    (result,) = dlc.compile(model, num_threads=1)(x, s)
    np.testing.assert_array_equal(result, x * s + x)


@pytest.mark.parametrize("a_shape, s_shape", SHAPES[:4], ids=IDS[:4])
@pytest.mark.parametrize("out", ["u8", "f32"])
def test_quantized_product_is_vectorized(a_shape, s_shape, out) -> None:
    # a static QDQ model's SE product: dequantized activation times the scale, quantized (u8
    # out), or quantized and dequantized again (the f32 chain RegNetY int8 has)
    graph_nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
                   helper.make_node("Mul", ["xf", "s"], ["m"]),
                   helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["q"])]
    output = "q"
    if out == "f32":
        graph_nodes.append(helper.make_node("DequantizeLinear", ["q", "ys", "yz"], ["y"]))
        output = "y"
    inits = {"xs": np.array(0.05, np.float32), "xz": np.array(128, np.uint8),
             "ys": np.array(0.03, np.float32), "yz": np.array(10, np.uint8)}
    model = make_model(graph_nodes, {"x": (np.uint8, a_shape), "s": (np.float32, s_shape)},
                       [output], initializers=inits)
    assert _scheduled(model, _type(a_shape, "ui8" if out == "u8" else "f32"))
    rng = np.random.default_rng(3)
    feeds = {"x": rng.integers(0, 256, a_shape, dtype=np.uint8),
             "s": rng.uniform(0, 1, s_shape).astype(np.float32)}
    (result,) = dlc.compile(model, num_threads=1)(feeds)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (expected,) = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"]).run(None, feeds)
    assert result.dtype == expected.dtype
    # (a product on the tie of a rounding step may round the other way: one step at most)
    step = 1 if out == "u8" else 0.03
    assert np.abs(result.astype(np.float64) - expected).max() <= step * 1.0001


def test_naive_check_names_a_large_elementwise_op(monkeypatch) -> None:
    # the same SE product with the elementwise family matching nothing: the naive-path check
    # names it (elementwise ops of at least min-volume elements, 32,768; it named only ops
    # with a reduction, so that 1x28x28x120 products of MobileNetV3 ran naive unnamed)
    nodes = [helper.make_node("Mul", ["x", "s"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [1, 28, 28, 120]),
                               "s": (np.float32, [1, 1, 1, 120])}, ["y"])
    assert _naive_warnings(model) == []
    monkeypatch.setattr(elementwise, "match", lambda op: None)
    (message,) = _naive_warnings(model)
    assert "linalg.generic" in message and "1x28x28x120" in message and "94,080" in message
    small = make_model(nodes, {"x": (np.float32, [1, 8, 8, 120]),
                               "s": (np.float32, [1, 1, 1, 120])}, ["y"])
    assert _naive_warnings(small) == []  # 7,680 elements: under the threshold


def test_gathers_are_not_named() -> None:
    # an embedding lookup (tensor.extract in the body) is no elementwise op of the family's
    table = np.arange(1000 * 64, dtype=np.float32).reshape(1000, 64)
    nodes = [helper.make_node("Gather", ["t", "i"], ["y"])]
    model = make_model(nodes, {"i": (np.int64, [1, 1024])}, ["y"], initializers={"t": table})
    assert _naive_warnings(model) == []

