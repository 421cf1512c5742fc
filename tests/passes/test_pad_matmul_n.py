"""dlc-pad-matmul-n: matmuls whose N lacks tile divisors compute the same numbers, padded."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest

import dlc
from dlc.passes.graph.pad_matmul_n import awkward, pad_to


def test_awkward_sizes():
    assert awkward(50257) and awkward(1025) and awkward(32 * 37)  # (37: tiles of 32 only)
    assert not awkward(1000) and not awkward(50240) and not awkward(1536) and not awkward(3072)
    # a multiple of 32 pads to a multiple of 128: a small Llama's 1,376 = 43 x 32 to 1,408
    assert awkward(1376) and pad_to(1376) == 128 and pad_to(50257) == 256


def test_a_multiple_of_32_is_padded_to_a_multiple_of_128():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 1376)).astype(np.float32)
    model = oh.make_model(oh.make_graph(
        [oh.make_node("MatMul", ["a", "w"], ["y"])], "g",
        [oh.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [8, 64])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [8, 1376])],
        [nh.from_array(w, "w")]), opset_imports=[oh.make_opsetid("", 17)])
    compiled = dlc.compile(model, num_threads=1)
    assert "-> tensor<8x1408xf32>" in compiled.ir("dlc")  # (was 1,536: 11.6 % more work)
    a = rng.standard_normal((8, 64)).astype(np.float32)
    np.testing.assert_allclose(compiled(a)[0], a @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["MatMul", "Gemm", "GemmT"])
def test_padded_matmul_matches_numpy(op):
    rng = np.random.default_rng(0)
    k, n = 48, 1041
    a = rng.standard_normal((5, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    inits = [nh.from_array(w.T.copy() if op == "GemmT" else w, "w"), nh.from_array(bias, "b")]
    if op == "MatMul":
        node = oh.make_node("MatMul", ["a", "w"], ["y"])
    else:
        node = oh.make_node("Gemm", ["a", "w", "b"], ["y"], transB=int(op == "GemmT"))
    model = oh.make_model(oh.make_graph(
        [node], "g", [oh.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [5, k])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [5, n])], inits),
        opset_imports=[oh.make_opsetid("", 17)])
    compiled = dlc.compile(model, num_threads=1)
    assert "-> tensor<5x1280xf32>" in compiled.ir("dlc")  # (padded to a multiple of 256)
    expected = a @ w + (0 if op == "MatMul" else bias)
    np.testing.assert_allclose(compiled(a)[0], expected, rtol=1e-4, atol=1e-4)
