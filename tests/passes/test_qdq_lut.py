"""dlc-qdq-lut (`passes/graph/qdq_lut.py`) and its byte permutes (`passes/codegen/byte_table.py`):
an 8-bit -> 8-bit elementwise QDQ chain, QuantizeLinear(f(DequantizeLinear(q))), becomes a
lookup in a 256-entry table, vectorized as `vpermi2b` on AVX-512 VBMI. The outputs must match
onnxruntime running the model as written (each Q/DQ and the float op between them) within one
output quantization step (a last-bit difference of the activation before a QuantizeLinear),
at shapes whose sizes fill no vector (remainders), at several scales and zero points, u8 and
s8 on either side; every one of the 256 input bytes is exercised.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.passes.codegen import byte_table
from dlc.passes.codegen import target as cpu_target

ort = pytest.importorskip("onnxruntime")

TYPES = {"u8": (TensorProto.UINT8, np.uint8), "s8": (TensorProto.INT8, np.int8)}


def _chain(kind: str, s: str) -> list:
    """Nodes from the dequantized input `d` to the float `f` (`s`: the inner Q/DQ params)."""
    if kind == "silu":  # EfficientNet's: d * DQ(Q(sigmoid(d)))
        return [helper.make_node("Sigmoid", ["d"], ["g"]),
                helper.make_node("QuantizeLinear", ["g", "gs", "gz"], ["gq"]),
                helper.make_node("DequantizeLinear", ["gq", "gs", "gz"], ["gd"]),
                helper.make_node("Mul", ["d", "gd"], ["f"])]
    if kind == "hardswish":  # MobileNetV3's: d * hardsigmoid(d)
        return [helper.make_node("HardSigmoid", ["d"], ["g"], alpha=1 / 6, beta=0.5),
                helper.make_node("Mul", ["d", "g"], ["f"])]
    if kind == "tanh_affine":  # constants on both sides
        return [helper.make_node("Tanh", ["d"], ["t"]),
                helper.make_node("Mul", ["t", "c"], ["m"]),
                helper.make_node("Add", ["m", "c"], ["f"])]
    if kind == "relu":
        return [helper.make_node("Relu", ["d"], ["f"])]
    raise ValueError(kind)


def _model(shape, kind, in_type, out_type, xs, xz, ys, yz):
    """x -> Q(in_type) -> DQ -> chain -> Q(out_type) -> DQ -> out."""
    tin, din = TYPES[in_type]
    tout, dout = TYPES[out_type]
    init = [numpy_helper.from_array(np.array(xs, np.float32), "xs"),
            numpy_helper.from_array(np.array(xz, din), "xz"),
            numpy_helper.from_array(np.array(ys, np.float32), "ys"),
            numpy_helper.from_array(np.array(yz, dout), "yz"),
            numpy_helper.from_array(np.array(1 / 255, np.float32), "gs"),
            numpy_helper.from_array(np.array(0, np.uint8), "gz"),
            numpy_helper.from_array(np.array(0.75, np.float32), "c")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["d"]),
             *_chain(kind, "g"),
             helper.make_node("QuantizeLinear", ["f", "ys", "yz"], ["fq"]),
             helper.make_node("DequantizeLinear", ["fq", "ys", "yz"], ["out"])]
    graph = helper.make_graph(
        nodes, "qdq_lut", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _inputs(shape, in_type, xs, xz, seed):
    """Values whose quantized bytes cover all 256 (then random ones)."""
    low, high = (0, 255) if in_type == "u8" else (-128, 127)
    rng = np.random.default_rng(seed)
    q = rng.integers(low, high + 1, size=int(np.prod(shape))).astype(np.float64)
    q[:256] = np.arange(low, high + 1)[: min(256, q.size)]
    return ((q - xz) * xs).astype(np.float32).reshape(shape)


def _as_written(model, feeds) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


CASES = [
    # shape, chain, in, out, x scale, x zero point, y scale, y zero point (4096 elements and
    # more are vectorized, dlc-schedule's min-elements; the small ones run as loops)
    ([1, 96, 7, 9], "silu", "u8", "u8", 0.05, 127, 0.02, 20),  # EfficientNet-like, 96 = 3 x 32
    ([1, 3, 37, 41], "silu", "u8", "u8", 0.001, 135, 0.0005, 119),  # near identity, 4551
    ([2, 3001], "hardswish", "u8", "u8", 0.04, 100, 0.03, 10),  # 6002: 16-lane part + 2
    ([1, 16, 20, 21], "hardswish", "s8", "s8", 0.05, -3, 0.04, -100),
    ([5171], "tanh_affine", "s8", "u8", 0.02, 5, 0.006, 7),
    ([1, 40, 11, 13], "relu", "u8", "s8", 0.1, 128, 0.05, -128),  # 5720: 16-lane part + 8
    ([64, 65], "silu", "s8", "u8", 0.08, 0, 0.03, 30),
    ([1, 3, 5, 7], "silu", "u8", "u8", 0.05, 127, 0.02, 20),  # 105 elements: loops
    ([517], "hardswish", "s8", "u8", 0.03, 9, 0.02, 3),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{c[2]}{c[3]}-{'x'.join(map(str, c[0]))}"
                                            for c in CASES])
def test_lookup_matches_onnxruntime_as_written(case):
    shape, kind, in_type, out_type, xs, xz, ys, yz = case
    model = _model(shape, kind, in_type, out_type, xs, xz, ys, yz)
    feeds = {"x": _inputs(shape, in_type, xs, xz, seed=len(kind) + shape[-1])}
    lowered = dlc.lower(model, stage="dlc", num_threads=1).ir()
    assert '"dlc.gather"' in lowered and "tensor<256x" in lowered  # (the pass fired)
    (result,) = dlc.compile(model, num_threads=1)(feeds)
    expected = _as_written(model, feeds)
    difference = np.abs(result - expected)
    assert difference.max() <= ys * 1.0001, difference.max()
    assert (difference > 0).mean() <= 0.01
    if byte_table.enabled() and np.prod(shape) >= 4096:
        assert byte_table.INTRINSIC in dlc.lower(model, stage="llvm", num_threads=1).ir()


def test_table_is_the_exact_chain_and_the_gather_fallback_agrees():
    # the u8 SiLU on every byte, through the permutes (AVX-512) and through LLVM's gather
    # (the AVX2 target: no byte permutes): the same bytes
    shape = [16, 256]
    model = _model(shape, "silu", "u8", "u8", 0.05, 127, 0.02, 20)
    feeds = {"x": _inputs(shape, "u8", 0.05, 127, seed=1)}
    with cpu_target.use("avx2"):
        assert byte_table.INTRINSIC not in dlc.lower(model, stage="llvm", num_threads=1).ir()
        (fallback,) = dlc.compile(model, num_threads=1)(feeds)
    (result,) = dlc.compile(model, num_threads=1)(feeds)
    np.testing.assert_array_equal(result, fallback)
    assert np.abs(result - _as_written(model, feeds)).max() <= 0.02 * 1.0001


def test_two_inputs_are_not_a_table():
    # Q(DQ(a) * DQ(b)): a function of two bytes, left alone
    init = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
            numpy_helper.from_array(np.array(128, np.uint8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["a", "s", "z"], ["aq"]),
             helper.make_node("DequantizeLinear", ["aq", "s", "z"], ["ad"]),
             helper.make_node("QuantizeLinear", ["b", "s", "z"], ["bq"]),
             helper.make_node("DequantizeLinear", ["bq", "s", "z"], ["bd"]),
             helper.make_node("Mul", ["ad", "bd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "s", "z"], ["mq"]),
             helper.make_node("DequantizeLinear", ["mq", "s", "z"], ["out"])]
    spec = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 33]) for n in "ab"]
    graph = helper.make_graph(nodes, "two", spec,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert '"dlc.gather"' not in dlc.lower(model, stage="dlc", num_threads=1).ir()
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal([4, 33]).astype(np.float32) for n in "ab"}
    (result,) = dlc.compile(model, num_threads=1)(feeds)
    assert np.abs(result - _as_written(model, feeds)).max() <= 0.05 * 1.0001


def test_lookup_beside_a_unit_broadcast_is_vectorized():
    # the SiLU table, then a product by a [1, 1, 1, C] scale (a squeeze-and-excitation block's,
    # channels last) and a quantize: one fused generic whose scale operand's map has constant
    # 0s on its unit dims, (d0, 0, 0, d3); the elementwise family reads it through a
    # rank-reducing slice and vectorizes the whole chain (it ran as naive loops)
    shape, c = [1, 16, 16, 32], 32
    model = _model(shape, "silu", "u8", "u8", 0.05, 127, 0.02, 20)
    graph = model.graph
    graph.output[0].name = "se"
    graph.input.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1, 1, 1, c]))
    graph.initializer.append(numpy_helper.from_array(np.array(0.01, np.float32), "ss"))
    graph.initializer.append(numpy_helper.from_array(np.array(0, np.uint8), "sz"))
    graph.node.extend([helper.make_node("Mul", ["out", "scale"], ["m"]),
                       helper.make_node("QuantizeLinear", ["m", "ss", "sz"], ["mq"]),
                       helper.make_node("DequantizeLinear", ["mq", "ss", "sz"], ["se"])])
    feeds = {"x": _inputs(shape, "u8", 0.05, 127, seed=5),
             "scale": np.linspace(0.1, 1.0, c).astype(np.float32).reshape(1, 1, 1, c)}
    (result,) = dlc.compile(model, num_threads=1)(feeds)
    assert np.abs(result - _as_written(model, feeds)).max() <= 0.01 * 1.0001
    linalg = dlc.lower(model, stage="linalg", num_threads=1).ir()
    assert "vector.gather" in linalg and "tensor.extract %" not in linalg
    if byte_table.enabled():
        assert byte_table.INTRINSIC in dlc.lower(model, stage="llvm", num_threads=1).ir()
