"""dlc-simplify: a reshape that only drops unit dims of a broadcast (Tile, Expand of a
higher-rank view) moves before it, so that the matmul reading the chain keeps the matmul
schedule (the chain fused into the product left it on naive loops); and the lowering keeps a
reshape that reaches a matmul through a transpose a `tensor.reshape` (DeBERTa's relative keys);
numpy's numbers."""

from __future__ import annotations

import warnings

import numpy as np
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import make_model


def _compile(nodes, inputs, inits):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(make_model(nodes, inputs, ["y"], inits), num_threads=1)
    assert not [w for w in caught if issubclass(w.category, NaivePathWarning)]
    return compiled


def test_a_tiled_transposed_key_keeps_the_matmul_schedule():
    nodes = [helper.make_node("Tile", ["p", "reps"], ["t"]),
             helper.make_node("Transpose", ["t"], ["tt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "tt"], ["y"])]
    compiled = _compile(nodes, {"q": (np.float32, [12, 128, 64]), "p": (np.float32, [1, 256, 64])},
                        {"reps": np.array([12, 1, 1], np.int64)})
    rng = np.random.default_rng(0)
    q, p = rng.standard_normal((12, 128, 64)).astype(np.float32), \
        rng.standard_normal((1, 256, 64)).astype(np.float32)
    expected = q.astype(np.float64) @ np.tile(p, (12, 1, 1)).transpose(0, 2, 1)
    np.testing.assert_allclose(compiled(q, p)[0], expected, rtol=1e-4, atol=1e-4)


def test_a_reshaped_then_transposed_key_keeps_the_matmul_schedule():
    # DeBERTa-v2's relative-position keys: [1, S, H*D] -> [1, S, H, D] -> [1, H, S, D] ->
    # [H, S, D] -> transposed into the batch matmul with the queries (was a 4-D naive
    # generic, 12x onnxruntime)
    heads, s, d = 4, 48, 16
    nodes = [helper.make_node("MatMul", ["rel", "w"], ["k"]),
             helper.make_node("Reshape", ["k", "s1"], ["k1"]),
             helper.make_node("Transpose", ["k1"], ["k2"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["k2", "s2"], ["k3"]),
             helper.make_node("Transpose", ["k3"], ["k4"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "k4"], ["y"])]
    rng = np.random.default_rng(1)
    w = rng.standard_normal((heads * d, heads * d)).astype(np.float32)
    compiled = _compile(nodes, {"q": (np.float32, [heads, 32, d]),
                                "rel": (np.float32, [1, s, heads * d])},
                        {"w": w, "s1": np.array([1, s, heads, -1], np.int64),
                         "s2": np.array([-1, s, d], np.int64)})
    q = rng.standard_normal((heads, 32, d)).astype(np.float32)
    rel = rng.standard_normal((1, s, heads * d)).astype(np.float32)
    k = (rel.astype(np.float64) @ w).reshape(1, s, heads, d).transpose(0, 2, 1, 3)
    expected = q @ k.reshape(heads, s, d).transpose(0, 2, 1)
    np.testing.assert_allclose(compiled(q, rel)[0], expected, rtol=1e-4, atol=1e-3)
