"""Concats that grow a prefix (DenseNet's blocks: each layer reads the concat of every feature
before it, the next concat adds the layer's output) are one buffer written once: the lowering
inserts each layer's output into the block's tensor and each prefix is a slice of it, read in
place by its elementwise users (not flattened: a strided slice flattened is a copy). Results
against onnxruntime (an oracle only), and no prefix copied in the bufferized IR."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper as oh
from onnx import numpy_helper as nh

import dlc
from dlc.passes.codegen.predicates import strided_slice

ort = pytest.importorskip("onnxruntime")


def _dense_block(c0: int, growth: int, layers: int, hw: int, seed: int = 0) -> onnx.ModelProto:
    """stem conv -> `layers` x (concat of all features, scale, shift, relu, 3x3 conv) ->
    concat -> 1x1 conv: NHWC inside (convert-layout), the concats on the channels."""
    rng = np.random.default_rng(seed)
    stem = (rng.standard_normal((c0, 8, 3, 3)) / np.sqrt(72)).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "stem"], ["x0"], pads=[1, 1, 1, 1])]
    inits, features, c = [nh.from_array(stem, "stem")], ["x0"], c0
    for k in range(layers):
        scale = (rng.random((1, c, 1, 1)) + 0.5).astype(np.float32)
        shift = rng.standard_normal((1, c, 1, 1)).astype(np.float32)
        w = (rng.standard_normal((growth, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        inits += [nh.from_array(scale, f"s{k}"), nh.from_array(shift, f"b{k}"),
                  nh.from_array(w, f"w{k}")]
        nodes += [oh.make_node("Concat", list(features), [f"cat{k}"], axis=1),
                  oh.make_node("Mul", [f"cat{k}", f"s{k}"], [f"m{k}"]),
                  oh.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"]),
                  oh.make_node("Relu", [f"a{k}"], [f"r{k}"]),
                  oh.make_node("Conv", [f"r{k}", f"w{k}"], [f"y{k}"], pads=[1, 1, 1, 1])]
        features.append(f"y{k}")
        c += growth
    head = (rng.standard_normal((16, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
    inits.append(nh.from_array(head, "head"))
    nodes += [oh.make_node("Concat", list(features), ["block"], axis=1),
              oh.make_node("Conv", ["block", "head"], ["out"])]
    f = onnx.TensorProto.FLOAT
    graph = oh.make_graph(nodes, "dense_block",
                          [oh.make_tensor_value_info("x", f, [1, 8, hw, hw])],
                          [oh.make_tensor_value_info("out", f, [1, 16, hw, hw])], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])


@pytest.mark.parametrize("c0, growth, layers, hw", [(64, 32, 4, 16), (24, 8, 5, 9)])
def test_a_dense_block_is_one_buffer(c0, growth, layers, hw):
    model = _dense_block(c0, growth, layers, hw)
    compiled = dlc.compile(model, num_threads=1)
    assert re.search(r'"dlc.concat".*axis = 3', compiled.ir("dlc"))  # (channels last)
    x = np.random.default_rng(1).standard_normal((1, 8, hw, hw)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert np.abs(y - expected).max() <= 1e-5 * np.abs(expected).max()
    # no prefix (c0 + k growth channels, 0 < k < layers) is copied: each is a slice of the
    # block's buffer (before, each concat copied the one before it into its own buffer)
    prefixes = {c0 + k * growth for k in range(1, layers)}
    copied = [int(m) for m in re.findall(r"memref.copy %\S+, %\S+ : memref<(?:\d+x)*(\d+)xf32",
                                         compiled.ir("bufferized"))]
    assert not prefixes & set(copied), copied


def _slice_of(source: list[int], offsets: list[int], sizes: list[int]) -> ir.Value:
    text = (f"func.func @f(%t: tensor<{'x'.join(map(str, source))}xf32>) {{\n"
            f"  %s = tensor.extract_slice %t{offsets} {sizes} [{', '.join(['1'] * len(sizes))}]"
            f" : tensor<{'x'.join(map(str, source))}xf32> to "
            f"tensor<{'x'.join(map(str, sizes))}xf32>\n  return\n}}")
    module = ir.Module.parse(text)
    function = module.body.operations[0]
    return function.regions[0].blocks[0].operations[0].results[0], module


@pytest.mark.parametrize("source, offsets, sizes, strided", [
    ([1, 56, 56, 256], [0, 0, 0, 0], [1, 56, 56, 224], True),   # a channel prefix, NHWC
    ([1, 256, 56, 56], [0, 0, 0, 0], [1, 224, 56, 56], False),  # ... NCHW: contiguous
    ([4, 10], [1, 0], [2, 10], False),                          # whole rows
    ([4, 10], [0, 0], [4, 5], True),                            # half of every row
    ([1, 1, 10], [0, 0, 3], [1, 1, 5], False),                  # a run inside one row
    ([4, 10], [0, 0], [4, 10], False),                          # all of it
])
def test_strided_slice(source, offsets, sizes, strided):
    with ir.Context() as context, ir.Location.unknown():
        context.allow_unregistered_dialects = True
        value, _module = _slice_of(source, offsets, sizes)
        assert strided_slice(value) == strided


def test_a_prefix_grown_by_two_features_at_once():
    # cat1 = Concat(a, b, c, d) is imported as concat(concat(concat(a, b), c), d) and CSE
    # makes its concat(a, b) cat0: cat0 is the first leaf of the chain concat(concat(cat0, c),
    # d), a prefix of it (it was a tensor of its own, copied into cat1's)
    from tests.conftest import make_model

    nodes = [oh.make_node("Concat", ["a", "b"], ["cat0"], axis=3),
             oh.make_node("Relu", ["cat0"], ["r0"]),
             oh.make_node("Concat", ["a", "b", "c", "d"], ["cat1"], axis=3),
             oh.make_node("Sigmoid", ["cat1"], ["s1"])]
    shapes = {"a": (np.float32, [1, 5, 5, 8]), "b": (np.float32, [1, 5, 5, 4]),
              "c": (np.float32, [1, 5, 5, 4]), "d": (np.float32, [1, 5, 5, 4])}
    compiled = dlc.compile(make_model(nodes, shapes, ["r0", "s1"]), num_threads=1)
    assert "tensor.extract_slice" in compiled.ir("linalg")
    rng = np.random.default_rng(2)
    a, b, c, d = (rng.standard_normal(s).astype(np.float32) for _, s in shapes.values())
    r0, s1 = compiled(a, b, c, d)
    np.testing.assert_array_equal(r0, np.maximum(np.concatenate([a, b], 3), 0))
    np.testing.assert_allclose(s1, 1 / (1 + np.exp(-np.concatenate([a, b, c, d], 3))),
                               rtol=1e-5, atol=1e-6)
