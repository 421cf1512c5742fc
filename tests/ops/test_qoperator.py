"""onnxruntime's QOperator contrib ops (com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearGlobalAveragePool, QGemm, QLinearConcat: what
quantize_static(QuantFormat.QOperator) writes beside QLinearConv) against onnxruntime, which
implements them: the same integers, or one quantization step apart where a float rounding
lands on the other side of a half."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(7)
U8 = TensorProto.UINT8


def _check(nodes, inputs: dict[str, np.ndarray], inits: dict[str, np.ndarray], out_type=U8):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, U8 if v.dtype == np.uint8 else TensorProto.FLOAT,
                                       list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    (got,) = dlc.compile(model)(inputs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if got.dtype == np.uint8:
        diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
        assert diff.max() <= 1 and np.mean(diff != 0) < 0.02
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


SCALES = {"sa": np.float32(0.0213), "za": np.uint8(120), "sb": np.float32(0.0297),
          "zb": np.uint8(130), "sy": np.float32(0.0411), "zy": np.uint8(125)}  # (no ties)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary(op):
    node = helper.make_node(op, ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"],
                            domain="com.microsoft")
    _check([node], {"a": _u8(2, 8, 5, 5), "b": _u8(2, 8, 5, 5)}, SCALES)


@pytest.mark.parametrize("op, attrs", [("QLinearSigmoid", {}),
                                       ("QLinearLeakyRelu", {"alpha": 0.2})])
def test_unary(op, attrs):
    node = helper.make_node(op, ["a", "sa", "za", "sy", "zy"], ["y"], domain="com.microsoft",
                            **attrs)
    _check([node], {"a": _u8(3, 40)}, SCALES)


@pytest.mark.parametrize("channels_last", [0, 1])
def test_global_average_pool(channels_last):
    node = helper.make_node("QLinearGlobalAveragePool", ["a", "sa", "za", "sy", "zy"], ["y"],
                            domain="com.microsoft", channels_last=channels_last)
    _check([node], {"a": _u8(2, 6, 7, 16)}, SCALES)


@pytest.mark.parametrize("quantized_output", [True, False])
def test_qgemm_per_channel_transposed_with_bias(quantized_output):
    n, k = 24, 40
    inits = dict(SCALES)
    inits.update({"w": RNG.integers(-127, 128, (n, k)).astype(np.int8),
                  "sw": (RNG.random(n) * 0.002 + 0.001).astype(np.float32),
                  "zw": np.zeros(n, np.int8),
                  "c": RNG.integers(-2000, 2000, n).astype(np.int32)})
    names = ["a", "sa", "za", "w", "sw", "zw", "c"] + (["sy", "zy"] if quantized_output else [])
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transB=1)
    if not quantized_output:
        inits["sy"] = np.float32(1.0)  # (unused)
    _check([node], {"a": _u8(5, k)}, inits, U8 if quantized_output else TensorProto.FLOAT)


def test_concat():
    node = helper.make_node("QLinearConcat", ["sy", "zy", "a", "sa", "za", "b", "sb", "zb"],
                            ["y"], domain="com.microsoft", axis=1)
    _check([node], {"a": _u8(2, 3, 4), "b": _u8(2, 5, 4)}, SCALES)


def test_uint8_max_pool_is_scheduled_and_exact():
    # a QOperator model's MaxPool on uint8 runs as the f32 pool (exact), scheduled
    import warnings

    node = helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "a", U8, [1, 64, 56, 56])], [helper.make_tensor_value_info("y", U8, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    a = _u8(1, 64, 56, 56)
    expected = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [w for w in caught if issubclass(w.category, dlc.NaivePathWarning)]
    np.testing.assert_array_equal(compiled({"a": a})[0], expected)
