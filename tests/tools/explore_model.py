"""A small CNN with PyTorch-style node names (`/block1/conv/Conv`) for the `dlc explore` tests:
conv + batchnorm + relu, a residual add, a pool and a gemm head."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def small_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        values = rng.standard_normal(shape).astype(np.float32) * 0.1
        return numpy_helper.from_array(np.abs(values) + 0.5 if len(shape) == 1 else values, name)

    inits = [init("w1", 16, 3, 3, 3), init("w2", 16, 16, 3, 3), init("fc", 16, 10), init("fb", 10)]
    inits += [init(f"bn_{k}", 16) for k in ("scale", "bias", "mean", "var")]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1"], ["c1"], name="/stem/conv/Conv", pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["b1"],
             name="/stem/bn/BatchNormalization"),
        node("Relu", ["b1"], ["r1"], name="/stem/relu/Relu"),
        node("Conv", ["r1", "w2"], ["c2"], name="/block1/conv/Conv", pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"], name="/block1/relu/Relu"),
        node("Add", ["r1", "r2"], ["a"], name="/block1/add/Add"),
        node("GlobalAveragePool", ["a"], ["p"], name="/head/pool/GlobalAveragePool"),
        node("Flatten", ["p"], ["f"], name="/head/flatten/Flatten"),
        node("Gemm", ["f", "fc", "fb"], ["y"], name="/head/fc/Gemm"),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
