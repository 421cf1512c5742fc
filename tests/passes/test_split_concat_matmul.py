"""dlc-split-concat-matmul: a decode step's attention computes the same numbers without
concatenating the past keys and values."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh

import dlc


def _attention(past: int) -> onnx.ModelProto:
    f = onnx.TensorProto.FLOAT
    shapes = {"q": [1, 4, 1, 16], "pk": [1, 4, past, 16], "nk": [1, 4, 1, 16],
              "pv": [1, 4, past, 16], "nv": [1, 4, 1, 16]}
    nodes = [
        oh.make_node("Constant", [], ["c"], value=oh.make_tensor("c", f, [], [0.35])),
        oh.make_node("Concat", ["pk", "nk"], ["k"], axis=2),
        oh.make_node("Mul", ["k", "c"], ["ks"]),
        oh.make_node("Transpose", ["ks"], ["kt"], perm=[0, 1, 3, 2]),
        oh.make_node("MatMul", ["q", "kt"], ["s"]),
        oh.make_node("Softmax", ["s"], ["p"], axis=-1),
        oh.make_node("Concat", ["pv", "nv"], ["v"], axis=2),
        oh.make_node("MatMul", ["p", "v"], ["o"]),
    ]
    return oh.make_model(oh.make_graph(
        nodes, "g", [oh.make_tensor_value_info(n, f, s) for n, s in shapes.items()],
        [oh.make_tensor_value_info("o", f, [1, 4, 1, 16])]),
        opset_imports=[oh.make_opsetid("", 17)])


def test_decode_attention_is_split_and_exact():
    rng = np.random.default_rng(0)
    inputs = {n: rng.standard_normal(s).astype(np.float32) for n, s in
              {"q": [1, 4, 1, 16], "pk": [1, 4, 96, 16], "nk": [1, 4, 1, 16],
               "pv": [1, 4, 96, 16], "nv": [1, 4, 1, 16]}.items()}
    compiled = dlc.compile(_attention(96), num_threads=1)
    ir = compiled.ir("dlc")
    assert "-> tensor<1x4x97x16xf32>" not in ir  # neither cache is concatenated
    k = np.concatenate([inputs["pk"], inputs["nk"]], 2) * np.float32(0.35)
    s = inputs["q"] @ k.transpose(0, 1, 3, 2)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    expected = p @ np.concatenate([inputs["pv"], inputs["nv"]], 2)
    np.testing.assert_allclose(compiled(inputs)[0], expected, rtol=1e-5, atol=1e-6)
