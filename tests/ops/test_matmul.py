"""Contractions against onnx.reference and numpy: MatMul (numpy semantics) and Gemm."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc

from tests.conftest import (
    ARITHMETIC_DTYPES,
    MATMUL_TOLERANCES,
    make_model,
    node_model,
    random_array,
    run_both,
)

MATMUL_SHAPES = {
    "2-D": ([3, 4], [4, 5]),
    "3-D batched": ([2, 3, 4], [2, 4, 5]),
    "broadcast batch [2,1,3,4]x[5,4,6]": ([2, 1, 3, 4], [5, 4, 6]),
    "3-D x 2-D": ([2, 3, 4], [4, 5]),
    "2-D x 3-D": ([3, 4], [2, 4, 5]),
    "batch of one x batch": ([1, 3, 4], [2, 4, 5]),
    "1-D x 2-D": ([4], [4, 5]),
    "2-D x 1-D": ([3, 4], [4]),
    "1-D x 1-D": ([4], [4]),
    "1-D x 3-D": ([4], [2, 4, 5]),
    "3-D x 1-D": ([2, 3, 4], [4]),
    "size-1 rows and columns": ([1, 4], [4, 1]),
    "both batches broadcast [2,1,3,4]x[1,5,4,6]": ([2, 1, 3, 4], [1, 5, 4, 6]),
    "rank 5 x rank 4": ([3, 2, 1, 3, 4], [2, 5, 4, 6]),
    "1-D x 4-D": ([4], [2, 3, 4, 5]),
    "empty contraction": ([2, 0], [0, 3]),
    "empty rows": ([0, 4], [4, 3]),
}


@pytest.mark.parametrize("shapes", list(MATMUL_SHAPES.values()), ids=list(MATMUL_SHAPES))
def test_matmul_shapes(shapes):
    a, b = random_array(shapes[0], np.float32, seed=1), random_array(shapes[1], np.float32, seed=2)
    outputs = run_both(node_model("MatMul", [a, b]), [a, b], tolerances=MATMUL_TOLERANCES)
    np.testing.assert_allclose(outputs[0], np.matmul(a, b), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", [([3, 4], [4, 5]), ([2, 3, 4], [2, 4, 5]), ([4], [4, 2])],
                         ids=["2-D", "batched", "1-D x 2-D"])
def test_matmul_dtypes(dtype, shapes):
    a, b = random_array(shapes[0], dtype, seed=1), random_array(shapes[1], dtype, seed=2)
    run_both(node_model("MatMul", [a, b]), [a, b], tolerances=MATMUL_TOLERANCES)


def test_matmul_larger_than_a_tile():
    a, b = random_array([67, 129], np.float32, seed=1), random_array([129, 33], np.float32, seed=2)
    run_both(node_model("MatMul", [a, b]), [a, b], tolerances=MATMUL_TOLERANCES)


def test_matmul_with_constant_weight():
    x = random_array([2, 6], np.float32)
    w = random_array([6, 3], np.float32, seed=5)
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    model = make_model([node], {"x": (np.float32, [2, 6])}, ["y"], initializers={"w": w})
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def gemm_inputs(m, k, n, trans_a, trans_b, c_shape, dtype=np.float32) -> list[np.ndarray]:
    a = random_array([k, m] if trans_a else [m, k], dtype, seed=1)
    b = random_array([n, k] if trans_b else [k, n], dtype, seed=2)
    if c_shape is None:
        return [a, b]
    return [a, b, random_array(c_shape, dtype, seed=3)]


def numpy_gemm(a, b, c=None, alpha=1.0, beta=1.0, trans_a=0, trans_b=0):
    result = alpha * ((a.T if trans_a else a) @ (b.T if trans_b else b))
    return result if c is None else result + beta * c


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (0.5, 2.0), (-1.5, 0.0), (1.0, -0.25)])
def test_gemm_attributes(trans_a, trans_b, alpha, beta):
    inputs = gemm_inputs(3, 5, 4, trans_a, trans_b, [3, 4])
    model = node_model("Gemm", inputs, transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    outputs = run_both(model, inputs, tolerances=MATMUL_TOLERANCES)
    expected = numpy_gemm(*inputs, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("c_shape", [[3, 4], [4], [1, 4], [3, 1], [1, 1], [1], []],
                         ids=["[M,N]", "[N]", "[1,N]", "[M,1]", "[1,1]", "[1]", "scalar"])
def test_gemm_c_broadcast(c_shape):
    inputs = gemm_inputs(3, 5, 4, 0, 0, c_shape)
    outputs = run_both(node_model("Gemm", inputs, alpha=2.0, beta=0.5), inputs,
                       tolerances=MATMUL_TOLERANCES)
    np.testing.assert_allclose(outputs[0], numpy_gemm(*inputs, alpha=2.0, beta=0.5),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("alpha", [1.0, 3.0])
@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 1)])
def test_gemm_without_c(alpha, trans_a, trans_b):
    inputs = gemm_inputs(3, 5, 4, trans_a, trans_b, None)
    run_both(node_model("Gemm", inputs, alpha=alpha, transA=trans_a, transB=trans_b), inputs,
             tolerances=MATMUL_TOLERANCES)


def test_gemm_with_empty_c_name():
    # an absent optional input is the empty name
    inputs = gemm_inputs(3, 5, 4, 0, 0, None)
    run_both(node_model("Gemm", [*inputs, None]), inputs, tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_gemm_dtypes(dtype):
    inputs = gemm_inputs(3, 5, 4, 1, 0, [4], dtype)
    alpha, beta = (2.0, 3.0) if np.issubdtype(dtype, np.integer) else (0.1, 0.3)
    run_both(node_model("Gemm", inputs, transA=1, alpha=alpha, beta=beta), inputs,
             tolerances=MATMUL_TOLERANCES)


def test_integer_gemm_with_fractional_alpha_is_rejected():
    # alpha * A @ B on integers would round alpha (0.5 -> 0) and silently give zeros
    inputs = gemm_inputs(2, 2, 2, 0, 0, [2], np.int32)
    with pytest.raises(dlc.FrontendError, match=r"gemm_node.*alpha"):
        dlc.compile(node_model("Gemm", inputs, alpha=0.5))
