"""The graph-level passes on whole models: same numbers before and after, and the IR changed.

Each case is a small ONNX model that gives one pass (or one group of rules) something to do.
It is compiled at -O0 (no graph pass) and at -O3 (all of them); both must match
onnx.reference, and the -O3 dlc graph must show the rewrite (ops gone, ops fused). The
FileCheck tests of each pass, with the cases where it must not fire, are in
`lit_tests/passes/<pass>.mlir`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from tests.conftest import MATMUL_TOLERANCES, make_mlp, make_model, random_array, run_both

F32 = np.float32
LOOP_NESTS = re.compile(r"linalg\.(?!fill\b|yield\b|index\b)\w+")  # ops that loop over data


@dataclass
class Case:
    model: Callable[[], onnx.ModelProto]
    inputs: Callable[[], list[np.ndarray]]
    gone: tuple[str, ...] = ()  # dlc ops absent at -O3
    present: tuple[str, ...] = ()  # dlc ops present at -O3


def _const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name],
                            value=onnx.numpy_helper.from_array(np.asarray(value), name))


def nops_model() -> onnx.ModelProto:
    nodes = [
        _const("shape", np.array([2, 3], np.int64)),
        _const("pads", np.zeros(4, np.int64)),
        helper.make_node("Reshape", ["x", "shape"], ["a"]),
        helper.make_node("Cast", ["a"], ["b"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Transpose", ["b"], ["c"], perm=[0, 1]),
        helper.make_node("Pad", ["c", "pads"], ["d"]),
        helper.make_node("Expand", ["d", "shape"], ["e"]),
        helper.make_node("Relu", ["e"], ["y"]),
    ]
    return make_model(nodes, {"x": (F32, [2, 3])}, ["y"])


def zero_size_model() -> onnx.ModelProto:
    nodes = [
        _const("starts", np.array([1], np.int64)),
        _const("ends", np.array([1], np.int64)),
        _const("axes", np.array([1], np.int64)),
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["empty"]),
        helper.make_node("Concat", ["x", "empty"], ["c"], axis=1),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    return make_model(nodes, {"x": (F32, [2, 3])}, ["y"])


def folding_model() -> onnx.ModelProto:
    # y = x * (1 / sqrt(var + eps)) reshaped per channel: all but the mul folds
    nodes = [
        _const("var", np.array([1.0, 4.0, 9.0], F32)),
        _const("eps", np.array(1e-5, F32)),
        _const("shape", np.array([3, 1], np.int64)),
        helper.make_node("Add", ["var", "eps"], ["v"]),
        helper.make_node("Sqrt", ["v"], ["s"]),
        helper.make_node("Reciprocal", ["s"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["k"]),
        helper.make_node("Mul", ["x", "k"], ["y"]),
    ]
    return make_model(nodes, {"x": (F32, [3, 4])}, ["y"])


def algebra_model() -> onnx.ModelProto:
    nodes = [
        _const("one", np.array(1.0, F32)),
        _const("zero", np.zeros(4, F32)),
        helper.make_node("Mul", ["x", "one"], ["a"]),
        helper.make_node("Add", ["a", "zero"], ["b"]),
        helper.make_node("Neg", ["b"], ["c"]),
        helper.make_node("Neg", ["c"], ["d"]),
        helper.make_node("Transpose", ["d"], ["dt"], perm=[1, 0]),
        helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        helper.make_node("MatMul", ["dt", "wt"], ["y"]),  # xᵀ·wᵀ -> (w·x)ᵀ
    ]
    return make_model(nodes, {"x": (F32, [3, 4]), "w": (F32, [5, 3])}, ["y"])


def strength_model() -> onnx.ModelProto:
    nodes = [
        _const("two", np.array(2.0, F32)),
        _const("half", np.array(0.5, F32)),
        _const("four", np.array([4.0, 0.5, 8.0], F32)),
        helper.make_node("Pow", ["x", "two"], ["a"]),
        helper.make_node("Pow", ["a", "half"], ["b"]),
        helper.make_node("Div", ["b", "four"], ["y"]),
    ]
    return make_model(nodes, {"x": (F32, [2, 3])}, ["y"])


def sinking_model() -> onnx.ModelProto:
    nodes = [
        _const("bias", np.array([[1.0], [2.0], [3.0]], F32)),
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        helper.make_node("Relu", ["t"], ["r"]),
        helper.make_node("Add", ["r", "bias"], ["a"]),
        helper.make_node("Transpose", ["a"], ["y"], perm=[1, 0]),
    ]
    return make_model(nodes, {"x": (F32, [4, 3])}, ["y"])


def conv_bn_model() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    channels = 4
    weights = {"w": rng.standard_normal((channels, 3, 3, 3)).astype(F32),
               "cb": rng.standard_normal(channels).astype(F32),
               "s": rng.standard_normal(channels).astype(F32),
               "b": rng.standard_normal(channels).astype(F32),
               "m": rng.standard_normal(channels).astype(F32),
               "v": (rng.random(channels) + 0.5).astype(F32)}
    nodes = [helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["y"])]
    return make_model(nodes, {"x": (F32, [1, 3, 6, 6])}, ["y"], weights)


def small_cnn_model() -> onnx.ModelProto:
    # conv -> relu -> depthwise conv -> + residual -> maxpool -> two convs concatenated -> avgpool
    rng = np.random.default_rng(3)
    weights = {"w1": rng.standard_normal((8, 3, 3, 3)).astype(F32),
               "b1": rng.standard_normal(8).astype(F32),
               "wd": rng.standard_normal((8, 1, 3, 3)).astype(F32),
               "wa": rng.standard_normal((4, 8, 1, 1)).astype(F32),
               "wb": rng.standard_normal((4, 8, 3, 3)).astype(F32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["d"], pads=[1, 1, 1, 1], group=8),
             helper.make_node("Add", ["d", "r1"], ["a"]),
             helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "wa"], ["ca"]),
             helper.make_node("Conv", ["p", "wb"], ["cb"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["ca", "cb"], ["cat"], axis=1),
             helper.make_node("AveragePool", ["cat"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    return make_model(nodes, {"x": (F32, [1, 3, 10, 10])}, ["y"], weights)


def silu_se_model() -> onnx.ModelProto:
    # EfficientNet's block: conv -> SiLU -> depthwise -> SiLU -> squeeze-and-excitation (global
    # average pool, 1x1 conv, SiLU, 1x1 conv, sigmoid, broadcast multiply) -> 1x1 conv
    rng = np.random.default_rng(4)
    weights = {"w1": (rng.standard_normal((16, 3, 3, 3)) / 4).astype(F32),
               "wd": (rng.standard_normal((16, 1, 3, 3)) / 4).astype(F32),
               "ws": (rng.standard_normal((4, 16, 1, 1)) / 4).astype(F32),
               "we": (rng.standard_normal((16, 4, 1, 1)) / 4).astype(F32),
               "wp": (rng.standard_normal((8, 16, 1, 1)) / 4).astype(F32)}

    def silu(x: str, y: str) -> list[onnx.NodeProto]:
        return [helper.make_node("Sigmoid", [x], [f"{y}_s"]),
                helper.make_node("Mul", [x, f"{y}_s"], [y])]

    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             *silu("c1", "a1"),
             helper.make_node("Conv", ["a1", "wd"], ["d"], pads=[1, 1, 1, 1], group=16),
             *silu("d", "a2"),
             helper.make_node("GlobalAveragePool", ["a2"], ["g"]),
             helper.make_node("Conv", ["g", "ws"], ["s1"]),
             *silu("s1", "a3"),
             helper.make_node("Conv", ["a3", "we"], ["s2"]),
             helper.make_node("Sigmoid", ["s2"], ["scale"]),
             helper.make_node("Mul", ["a2", "scale"], ["se"]),
             helper.make_node("Conv", ["se", "wp"], ["y"])]
    return make_model(nodes, {"x": (F32, [1, 3, 8, 8])}, ["y"], weights)


def dense_block_model() -> onnx.ModelProto:
    # DenseNet's block: each layer's input (a concat of all before it) feeds both its batch
    # norm (pre-activation: BN, ReLU, 1x1 conv, BN, ReLU, 3x3 conv) and the next concat
    # after a stem conv (the block's input is the stem's NHWC result, transposed back)
    rng = np.random.default_rng(5)
    weights = {"stem": (rng.standard_normal((4, 2, 3, 3)) / 4).astype(F32)}
    nodes, x, channels = [helper.make_node("Conv", ["x", "stem"], ["s"], pads=[1, 1, 1, 1])], "s", 4
    for i in range(3):
        weights |= {f"s{i}": (rng.random(channels) + 0.5).astype(F32),
                    f"b{i}": rng.standard_normal(channels).astype(F32),
                    f"m{i}": rng.standard_normal(channels).astype(F32),
                    f"v{i}": (rng.random(channels) + 0.5).astype(F32),
                    f"w{i}": (rng.standard_normal((3, channels, 3, 3)) / 4).astype(F32)}
        nodes += [helper.make_node("BatchNormalization", [x, f"s{i}", f"b{i}", f"m{i}", f"v{i}"],
                                   [f"n{i}"]),
                  helper.make_node("Relu", [f"n{i}"], [f"r{i}"]),
                  helper.make_node("Conv", [f"r{i}", f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Concat", [x, f"c{i}"], [f"x{i}"], axis=1)]
        x, channels = f"x{i}", channels + 3
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    return make_model(nodes, {"x": (F32, [1, 2, 6, 6])}, ["y"], weights)


def gemm_bn_model() -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    weights = {"w": rng.standard_normal((5, 4)).astype(F32),
               "c": rng.standard_normal(4).astype(F32),
               "s": rng.standard_normal(4).astype(F32),
               "b": rng.standard_normal(4).astype(F32),
               "m": rng.standard_normal(4).astype(F32),
               "v": (rng.random(4) + 0.5).astype(F32)}
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["g"]),
             helper.make_node("BatchNormalization", ["g", "s", "b", "m", "v"], ["y"])]
    return make_model(nodes, {"x": (F32, [3, 5])}, ["y"], weights)


CASES = {
    "nops": Case(nops_model, lambda: [random_array([2, 3], F32)],
                 gone=("dlc.reshape", "dlc.cast", "dlc.transpose", "dlc.pad", "dlc.broadcast")),
    "zero-size": Case(zero_size_model, lambda: [random_array([2, 3], F32)],
                      gone=("dlc.slice", "dlc.concat")),
    "fold-constants": Case(folding_model, lambda: [random_array([3, 4], F32)],
                           gone=("dlc.unary", "dlc.reshape", "dlc.add"), present=("dlc.mul",)),
    "simplify": Case(algebra_model,
                     lambda: [random_array([3, 4], F32), random_array([5, 3], F32, seed=1)],
                     gone=("dlc.unary", "dlc.add", "dlc.mul"), present=("dlc.transpose",)),
    "strength-reduce": Case(strength_model, lambda: [random_array([2, 3], F32)],
                            gone=("dlc.binary", "dlc.div"), present=("dlc.mul",)),
    "sink-transpose": Case(sinking_model, lambda: [random_array([4, 3], F32)],
                           gone=("dlc.transpose",)),
    "fuse-batchnorm-conv": Case(conv_bn_model, lambda: [random_array([1, 3, 6, 6], F32)],
                                gone=("dlc.mul", "dlc.add", "dlc.sub", "dlc.unary"),
                                present=("dlc.conv_nhwc",)),
    "convert-layout": Case(small_cnn_model, lambda: [random_array([1, 3, 10, 10], F32)],
                           gone=("dlc.conv", "dlc.pool"), present=("dlc.conv_nhwc",
                                                                   "dlc.pool_nhwc")),
    # x * sigmoid(x) and the SE scale's broadcast multiply do not stop the transposes sinking
    "convert-layout-silu-se": Case(silu_se_model, lambda: [random_array([1, 3, 8, 8], F32)],
                                   gone=("dlc.conv", "dlc.pool"), present=("dlc.conv_nhwc",
                                                                           "dlc.pool_nhwc")),
    # each layer's input feeds its batch norm and the next concat: the concats run NHWC too
    "convert-layout-dense-block": Case(dense_block_model,
                                       lambda: [random_array([1, 2, 6, 6], F32)],
                                       gone=("dlc.conv", "dlc.pool"), present=("dlc.conv_nhwc",
                                                                               "dlc.pool_nhwc")),
    "fuse-batchnorm-gemm": Case(gemm_bn_model, lambda: [random_array([3, 5], F32)],
                                gone=("dlc.mul", "dlc.add", "dlc.sub", "dlc.reshape"),
                                present=("dlc.gemm",)),
    "fuse-matmul-add": Case(lambda: make_mlp(batch=4, sizes=(32, 16, 8), seed=0),
                            lambda: [random_array([4, 32], F32)],
                            gone=("dlc.matmul", "dlc.add"), present=("dlc.gemm",)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_results_before_and_after(name: str) -> None:
    case = CASES[name]
    model, inputs = case.model(), case.inputs()
    before = run_both(model, inputs, opt_level=0, tolerances=MATMUL_TOLERANCES)
    compiled = dlc.compile(model, opt_level=3)
    after = compiled(*inputs)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    graph = compiled.ir("dlc")
    for op in case.gone:
        assert f'"{op}"' not in graph, f"{op} left at -O3:\n{graph}"
    for op in case.present:
        assert f'"{op}"' in graph, f"no {op} at -O3:\n{graph}"
    if name.startswith("convert-layout"):  # NHWC from the first conv to the head: 2 transposes added
        # (the dense block's head is a global pool: its [1, 1, 1, C] back to NCHW a reshape)
        assert graph.count('"dlc.transpose"') == (1 if name.endswith("dense-block") else 2), graph
        return
    assert len(graph.splitlines()) < len(dlc.compile(model, opt_level=0).ir("dlc").splitlines())


def transformer_block() -> onnx.ModelProto:
    """LayerNormalization, MatMul + bias, Gelu, MatMul, residual Add, Softmax (opset 20)."""
    rng = np.random.default_rng(3)
    weights = {"gamma": rng.standard_normal(16).astype(F32),
               "beta": rng.standard_normal(16).astype(F32),
               "w1": (rng.standard_normal((16, 32)) / 4).astype(F32),
               "b1": rng.standard_normal(32).astype(F32),
               "w2": (rng.standard_normal((32, 16)) / 4).astype(F32)}
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1),
             helper.make_node("MatMul", ["ln", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Gelu", ["hb"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["o"]),
             helper.make_node("Add", ["o", "x"], ["r"]),
             helper.make_node("Softmax", ["r"], ["y"], axis=-1)]
    return make_model(nodes, {"x": (F32, [8, 16])}, ["y"], weights, opset=20)


def test_transformer_block_elementwise_chains_fused_in_linalg() -> None:
    model = transformer_block()
    x = random_array([8, 16], F32)
    run_both(model, [x], opt_level=3, tolerances=MATMUL_TOLERANCES)
    unfused, fused = (len(LOOP_NESTS.findall(dlc.compile(model, opt_level=level).ir("linalg")))
                      for level in (0, 3))
    # 22 loop nests (generic, named elementwise ops, matmuls) become 12 when this was written
    assert 3 * fused < 2 * unfused, f"{fused} linalg loop nests at -O3, {unfused} at -O0"


def test_broadcast_producer_not_fused_into_its_consumer() -> None:
    # the SE scale's sigmoid ([1, 1, 1, 16]) stays its own loop: fused into the broadcast
    # multiply ([1, 8, 8, 16]) it would be computed 64 times per channel (dlc-fuse-elementwise)
    model = silu_se_model()
    run_both(model, [random_array([1, 3, 8, 8], F32)], opt_level=2, tolerances=MATMUL_TOLERANCES)
    linalg = dlc.compile(model, opt_level=2).ir("linalg")
    bodies = re.findall(r"linalg\.generic \{[^\n]*ins\(([^)]*)\)[^\n]*\{\n(.*?)\n\s*\} ->", linalg,
                        re.DOTALL)
    scaled = [body for ins, body in bodies
              if "tensor<1x1x1x16xf32>" in ins and "tensor<1x8x8x16xf32>" in ins]
    assert scaled, linalg
    assert all("math.floor" not in body for body in scaled), scaled  # (no exp polynomial)
