"""MatMul of more than 2 dimensions: lowered to linalg.matmul / batch_matmul between reshapes,
scheduled like the 2-D ones, numbers against numpy.

Shapes: 3-D x 2-D (a transformer's Linear), 4-D x 4-D (attention), broadcast batch axes, sizes
that do and do not divide the register tiles (the host's: `codegen/target.py`); f32 (scheduled), int32 and float16 (the
naive path, same lowering). The Linear -> GELU -> Linear case guards the regression where the
4-loop contraction generic absorbed the GELU (erf recomputed for every output column).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen.matmul import pack_tile
from tests.conftest import make_model

RNG = np.random.default_rng(0)


def random(shape: list[int], dtype=np.float32) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-8, 8, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def matmul_model(a_shape: list[int], b_shape: list[int], dtype=np.float32):
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    return make_model([node], {"a": (dtype, a_shape), "b": (dtype, b_shape)}, ["y"])


def scheduled(model: dlc.CompiledModel) -> bool:
    """Every contraction was tiled and vectorized: FMAs (or the packed kernel's contracting
    multiply-adds), no named contraction, no loop nest with a reduction iterator (an
    unscheduled generic contraction) left."""
    text = model.ir("linalg")
    mr, nr = pack_tile()
    fma = "vector.fma" in text or f"fastmath<contract> : vector<{mr}x{nr}xf32>" in text
    return (fma and "linalg.matmul" not in text
            and "linalg.batch_matmul" not in text and '"reduction"' not in text)


def check(result: np.ndarray, expected: np.ndarray, rtol: float = 1e-4) -> None:
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(result, expected, rtol=rtol, atol=rtol * 0.1 * scale)


ND_SHAPES = {
    "3-D x 2-D, divides the tiles": ([2, 64, 96], [96, 64]),
    "3-D x 2-D, remainders": ([3, 37, 61], [61, 53]),
    "BERT Linear [1,128,256] x [256,1024]": ([1, 128, 256], [256, 1024]),
    "4-D x 2-D": ([2, 3, 16, 40], [40, 72]),
    "4-D x 4-D, attention scores": ([1, 4, 128, 64], [1, 4, 64, 128]),
    "4-D x 4-D, attention context": ([1, 4, 128, 128], [1, 4, 128, 64]),
    "4-D x 4-D, remainders": ([2, 3, 19, 33], [2, 3, 33, 45]),
    "broadcast batch [2,1,40,48] x [3,48,64]": ([2, 1, 40, 48], [3, 48, 64]),
    "2-D x 3-D": ([40, 48], [3, 48, 64]),
    "2-D x 4-D with unit batch": ([40, 48], [1, 1, 48, 64]),
}


@pytest.mark.parametrize("shapes", list(ND_SHAPES.values()), ids=list(ND_SHAPES))
def test_nd_matmul_is_scheduled_and_matches_numpy(shapes) -> None:
    a_shape, b_shape = shapes
    model = dlc.compile(matmul_model(a_shape, b_shape))
    assert scheduled(model)
    a, b = random(a_shape), random(b_shape)
    check(model(a, b)[0], np.matmul(a, b))


def test_batch_matmul_3d_attention_shapes() -> None:
    model = dlc.compile(matmul_model([4, 128, 64], [4, 64, 128]))
    assert scheduled(model)
    a, b = random([4, 128, 64]), random([4, 64, 128])
    check(model(a, b)[0], a @ b)


@pytest.mark.parametrize("dtype, rtol", [(np.int32, 0.0), (np.float16, 2e-2)],
                         ids=["int32", "float16"])
def test_nd_matmul_other_types(dtype, rtol: float) -> None:
    a_shape, b_shape = [2, 3, 40, 48], [48, 36]
    model = dlc.compile(matmul_model(a_shape, b_shape, dtype))
    a, b = random(a_shape, dtype), random(b_shape, dtype)
    result = model(a, b)[0]
    assert result.dtype == dtype
    expected = np.matmul(a.astype(np.float32), b.astype(np.float32))  # (f16: f32 accumulator)
    if rtol == 0.0:
        np.testing.assert_array_equal(result, expected.astype(dtype))
    else:
        check(result.astype(np.float32), expected, rtol)
    broadcast = dlc.compile(matmul_model([1, 40, 48], [3, 48, 36], dtype))
    a, b = random([1, 40, 48], dtype), random([3, 48, 36], dtype)
    expected = np.matmul(a.astype(np.float32), b.astype(np.float32))
    result = broadcast(a, b)[0]
    assert result.shape == (3, 40, 36)
    if rtol == 0.0:
        np.testing.assert_array_equal(result, expected.astype(dtype))
    else:
        check(result.astype(np.float32), expected, rtol)


def test_linear_gelu_linear_keeps_two_scheduled_matmuls() -> None:
    # [1,S,D] x W1 + b1 -> GELU (erf) -> x W2 + b2: the GELU must stay an elementwise op of
    # its own, the two contractions scheduled, the biases applied
    s, d, f = 64, 96, 128
    w1, b1 = random([d, f]) * 0.1, random([f])
    w2, b2 = random([f, d]) * 0.1, random([d])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Div", ["hb", "sqrt2"], ["z"]),
        helper.make_node("Erf", ["z"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["hb", "e1"], ["p"]),
        helper.make_node("Mul", ["p", "half"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["o"]),
        helper.make_node("Add", ["o", "b2"], ["y"]),
    ]
    constants = {"w1": w1, "b1": b1, "w2": w2, "b2": b2,
                 "sqrt2": np.array(np.sqrt(2.0), np.float32),
                 "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32)}
    model = dlc.compile(make_model(nodes, {"x": (np.float32, [1, s, d])}, ["y"],
                                   initializers=constants))
    assert scheduled(model)
    x = random([1, s, d])
    h = x @ w1 + b1
    erf = np.vectorize(math.erf)
    expected = (0.5 * h * (1 + erf(h / np.sqrt(2.0)))) @ w2 + b2
    check(model(x)[0], expected.astype(np.float32), 1e-3)


@pytest.mark.parametrize("epilogue", ["bias", "bias+tanh+residual"])
def test_gemm_between_reshapes_stays_scheduled(epilogue: str) -> None:
    # GPT-2's Conv1D as exported: Reshape [1,S,D] -> [S,D], Gemm with a bias, (elementwise
    # ops,) Reshape [S,N] -> [1,S,N]. The expand_shape of the last reshape was propagated up
    # through the epilogue into the matmul by the fusion pass: a naive 4-loop generic
    # contraction (GPT-2 small 130x slower than onnxruntime).
    s, d, n = 64, 96, 128
    w, b = random([d, n]) * 0.1, random([n])
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["x2"]),
             helper.make_node("Gemm", ["x2", "w", "b"], ["h"])]
    last = "h"
    if epilogue != "bias":
        nodes += [helper.make_node("Tanh", ["h"], ["t"]),
                  helper.make_node("Add", ["t", "r"], ["tr"])]
        last = "tr"
    nodes.append(helper.make_node("Reshape", [last, "back"], ["y"]))
    constants = {"w": w, "b": b, "r": random([s, n]),
                 "flat": np.array([s, d], np.int64), "back": np.array([1, s, n], np.int64)}
    model = dlc.compile(make_model(nodes, {"x": (np.float32, [1, s, d])}, ["y"],
                                   initializers=constants))
    assert scheduled(model)
    x = random([1, s, d])
    expected = x.reshape(s, d) @ w + b
    if epilogue != "bias":
        expected = np.tanh(expected) + constants["r"]
    check(model(x)[0], expected.reshape(1, s, n).astype(np.float32), 1e-3)
