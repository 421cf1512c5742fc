"""Static QDQ models (onnxruntime's `quantize_static`): the DequantizeLinear of a constant
weight folds at compile time, whatever its size, to exactly what the compiled code computes,
so that the convolution or matmul reading it has a constant filter and takes its schedule; a
Flatten followed by a QuantizeLinear / DequantizeLinear pair before a Gemm leaves the Gemm a
scheduled matmul (not a naive generic with the quantization fused into each product)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import MATMUL_TOLERANCES, make_model, run_both

RNG = np.random.default_rng(5)


def dequantized_weight_model(shape: list[int], axis: int | None, block: int = 0):
    """The output is DequantizeLinear(constant int8 weight): per tensor, per axis or blocked."""
    weight = RNG.integers(-128, 128, shape).astype(np.int8)
    if axis is None:
        scale, zero = np.float32(0.0123), np.int8(-3)
    elif block:
        blocks = list(shape)
        blocks[axis] = -(-shape[axis] // block)
        scale = RNG.uniform(1e-3, 1e-1, blocks).astype(np.float32)
        zero = RNG.integers(-5, 5, blocks).astype(np.int8)
    else:
        scale = RNG.uniform(1e-3, 1e-1, shape[axis]).astype(np.float32)
        zero = RNG.integers(-5, 5, shape[axis]).astype(np.int8)
    attributes = {} if axis is None else {"axis": axis}
    if block:
        attributes["block_size"] = block
    node = helper.make_node("DequantizeLinear", ["w", "s", "z"], ["y"], **attributes)
    inits = {"w": weight, "s": scale, "z": zero}
    return make_model([node], {}, {"y": (np.float32, shape)}, initializers=inits,
                      opset=21)


@pytest.mark.parametrize("shape, axis, block", [([6, 5], None, 0), ([8, 3, 3, 3], 0, 0),
                                                ([4, 10], 1, 4), ([1100, 1000], 0, 0)],
                         ids=["per-tensor", "per-channel", "blocked", "over-1M-elements"])
def test_weight_dequantization_folds_to_what_the_code_computes(shape, axis, block) -> None:
    model = dequantized_weight_model(shape, axis, block)
    folded = dlc.compile(model, opt_level=2)
    assert '"dlc.dequantize"' not in folded.ir("dlc")  # (folded, the 1.1M elements too)
    computed = dlc.compile(model, opt_level=0)  # (no graph pass: the lowering computes it)
    assert '"dlc.dequantize"' in computed.ir("dlc")
    (a,), (b,) = folded(), computed()
    np.testing.assert_array_equal(a, b)  # bit for bit
    run_both(model, [], opt_level=2)


def qdq_head_model(c: int = 256, n: int = 1000):
    """ResNet's quantized head: GlobalAveragePool -> Q/DQ -> Flatten -> Q/DQ -> Gemm(DQ(w))."""
    inits = {"s": np.float32(0.02), "z": np.uint8(7),
             "wq": RNG.integers(-127, 128, (n, c)).astype(np.int8),
             "ws": RNG.uniform(1e-3, 1e-2, n).astype(np.float32), "wz": np.zeros(n, np.int8),
             "b": RNG.standard_normal(n).astype(np.float32)}
    node = helper.make_node
    nodes = [node("GlobalAveragePool", ["x"], ["p"]),
             node("QuantizeLinear", ["p", "s", "z"], ["pq"]),
             node("DequantizeLinear", ["pq", "s", "z"], ["pd"]),
             node("Flatten", ["pd"], ["f"], axis=1),
             node("QuantizeLinear", ["f", "s", "z"], ["fq"]),
             node("DequantizeLinear", ["fq", "s", "z"], ["fd"]),
             node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0),
             node("Gemm", ["fd", "w", "b"], ["y"], transB=1)]
    return make_model(nodes, {"x": (np.float32, [1, c, 4, 4])}, ["y"],
                      initializers={k: np.asarray(v) for k, v in inits.items()}, opset=19)


def test_flatten_between_quantize_pairs_keeps_the_gemm_a_matmul() -> None:
    model = qdq_head_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", NaivePathWarning)
        compiled = dlc.compile(model)
    linalg = compiled.ir("linalg")
    # (the product of the integers, dlc-qdq-conv's Gemm rule: the integer kernel's register
    # tiles, or FMA tiles where the CPU has none; no contraction left as an op)
    assert "to = i32" in compiled.ir("dlc")
    assert "linalg.matmul" not in linalg and "linalg.batch_matmul" not in linalg
    x = RNG.uniform(0, 1, (1, 256, 4, 4)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)
