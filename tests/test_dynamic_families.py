"""The schedule families through models with dynamic sizes, at runtime shapes that do not
divide the tiles, of size 1 and of size 0 (issue 22): each call shape compiles its
specialization, or runs the encoder's one compile at batch 1 for every sequence (the suite's
DLC_STRICT_SCHEDULE makes a schedule that fails an error) and
matches onnx.reference. At the larger shapes `dlc profile` shows the conv, depthwise,
grouped_conv, matmul, reduction and elementwise families scheduled (the pool and the
transpose stay below their families' thresholds here; tests/codegen covers them)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import MATMUL_TOLERANCES, assert_same, make_model, random_array, reference

RNG = np.random.default_rng(22)


def weights(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def conv_model():
    """conv (3x3) -> relu -> depthwise 3x3 -> grouped 3x3 (2 groups) -> max pool 2x2 ->
    transpose to NHWC -> mean over H, W -> matmul; dynamic n, h, w."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=32),
        helper.make_node("Conv", ["c2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=2),
        helper.make_node("MaxPool", ["c3"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("ReduceMean", ["t"], ["m"], axes=[1, 2], keepdims=0),
        helper.make_node("MatMul", ["m", "w4"], ["y"]),
    ]
    initializers = {"w1": weights(32, 3, 3, 3), "b1": weights(32), "w2": weights(32, 1, 3, 3),
                    "w3": weights(32, 16, 3, 3), "w4": weights(32, 10)}
    return make_model(nodes, {"x": (np.float32, ["n", 3, "h", "w"])},
                      {"y": (np.float32, ["n", 10])}, initializers)


def encoder_model():
    """matmul + bias -> softmax over the last axis -> layer-norm-style mean and variance ->
    tanh; dynamic batch and sequence."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["hb"]),
        helper.make_node("Softmax", ["hb"], ["s"], axis=-1),
        helper.make_node("ReduceMean", ["s"], ["mean"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["s", "mean"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Tanh", ["n"], ["y"]),
    ]
    initializers = {"w": weights(128, 200), "b": weights(200),
                    "eps": np.array(1e-5, np.float32)}
    return make_model(nodes, {"x": (np.float32, ["batch", "seq", 128])},
                      {"y": (np.float32, ["batch", "seq", 200])}, initializers)


# the encoder compiles once at batch 1 for every sequence (its row function), run per row at
# (3, 37); rows of 0 tokens are too little work to run per row: a specialization
@pytest.mark.parametrize("model, shapes, compiles", [
    (conv_model, [(1, 3, 23, 21), (2, 3, 2, 3), (0, 3, 6, 6)], 3),
    (encoder_model, [(1, 1, 128), (3, 37, 128), (2, 0, 128)], 2),
], ids=["conv", "encoder"])
def test_families_at_runtime_shapes(model, shapes, compiles):
    proto = model()
    compiled = dlc.compile(proto)
    assert isinstance(compiled, dlc.DynamicModel)
    for shape in shapes:
        x = random_array(shape, np.float32, seed=len(shape) + sum(shape))
        (y,) = compiled(x)
        (expected,) = reference(proto, {"x": x})
        assert_same(y, expected, MATMUL_TOLERANCES)
    assert compiled.compiles == compiles
