"""dlc-qdq-conv's matmul rule: a static-QDQ MatMul (onnxruntime's quantize_static QDQ form of a
transformer's Linear layers) multiplies the integers, the scales applied per output column,
against onnxruntime's integer kernels on the same file."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc


def qdq_matmul_model(shape: list[int], n: int, per_column: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    k = shape[-1]
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    ws = (rng.random(n) * 0.002 + 0.001).astype(np.float32) if per_column else np.float32(0.002)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.asarray(ws), "ws"),
             numpy_helper.from_array(np.zeros(n if per_column else (), np.int8), "wz"),
             numpy_helper.from_array(np.float32(4 / 255), "xs"),
             numpy_helper.from_array(np.uint8(128), "xz"),
             numpy_helper.from_array(np.float32(0.05), "ys"),
             numpy_helper.from_array(np.uint8(128), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["mq"]),
             helper.make_node("DequantizeLinear", ["mq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, shape)], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                         shape[:-1] + [n])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal(shape).astype(np.float32)}


@pytest.mark.parametrize("shape, n, per_column", [
    ([64, 96], 80, True), ([2, 40, 64], 48, False), ([1, 256], 128, True)])
def test_qdq_matmul_multiplies_integers(shape, n, per_column) -> None:
    ort = pytest.importorskip("onnxruntime")
    model, feeds = qdq_matmul_model(shape, n, per_column)
    compiled = dlc.compile(model, num_threads=1)
    text = compiled.ir("dlc")
    assert "to = i32" in text  # the product's integer sums, scaled once per output
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    (got,) = compiled(feeds)
    # (the output is requantized with step 0.05: the same integers give the same values;
    # a sum at a rounding boundary may land one step apart)
    assert np.abs(got - expected).max() <= 0.05 + 1e-6
    assert np.mean(got != expected) < 0.01


def test_qdq_gemm_transposed_weights_then_heads_reshape() -> None:
    # DeiT's qkv: Gemm(dq(x), dq(W [N, K]) per output channel, transB=1) -> Q/DQ -> Reshape to
    # heads. The reshape stays opaque through the six ops of the integer epilogue (at four, its
    # expand_shape was folded into the matmul: a naive 6-loop generic)
    import warnings

    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(1)
    k, n = 64, 96
    inits = [numpy_helper.from_array(rng.integers(-127, 128, (n, k)).astype(np.int8), "w"),
             numpy_helper.from_array((rng.random(n) * 0.002 + 0.001).astype(np.float32), "ws"),
             numpy_helper.from_array(np.zeros(n, np.int8), "wz"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b"),
             numpy_helper.from_array(np.float32(4 / 255), "xs"),
             numpy_helper.from_array(np.uint8(123), "xz"),
             numpy_helper.from_array(np.float32(0.05), "ys"),
             numpy_helper.from_array(np.uint8(128), "yz"),
             numpy_helper.from_array(np.array([1, 50, 3, 2, 16], np.int64), "heads")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Gemm", ["xd", "wd", "b"], ["m"], transB=1),
             helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["mq"]),
             helper.make_node("DequantizeLinear", ["mq", "ys", "yz"], ["md"]),
             helper.make_node("Reshape", ["md", "heads"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [50, k])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [1, 50, 3, 2, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": rng.standard_normal((50, k)).astype(np.float32)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [w for w in caught if issubclass(w.category, dlc.NaivePathWarning)]
    assert "to = i32" in compiled.ir("dlc")
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    (got,) = compiled(feeds)
    assert np.abs(got - expected).max() <= 0.05 + 1e-6
