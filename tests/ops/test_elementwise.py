"""Elementwise ops (Add, Sub, Mul, Div, Relu) against onnx.reference: dtypes and broadcasting."""

from __future__ import annotations

import numpy as np
import pytest

import dlc
from tests.conftest import ARITHMETIC_DTYPES, node_model, random_array, run_both

BINARY_OPS = ["Add", "Sub", "Mul", "Div"]


def binary_inputs(op: str, shapes, dtype) -> list[np.ndarray]:
    lhs = random_array(shapes[0], dtype, seed=1)
    rhs = random_array(shapes[1], dtype, seed=2)
    if op == "Div":  # no division by zero; negative divisors check truncation toward zero
        rhs = np.where(rhs == 0, np.ones_like(rhs) * 3, rhs).astype(dtype)
    return [lhs, rhs]


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_same_shape(op, dtype):
    inputs = binary_inputs(op, ([2, 3], [2, 3]), dtype)
    run_both(node_model(op, inputs), inputs)


BROADCASTS = {
    "scalar-like [1]": ([2, 3], [1]),
    "rank-0 rhs": ([2, 3], []),
    "rank-0 lhs": ([], [4]),
    "both rank-0": ([], []),
    "[3] vs [2,3]": ([3], [2, 3]),
    "[2,3] vs [3]": ([2, 3], [3]),
    "[2,1,4] vs [3,1]": ([2, 1, 4], [3, 1]),
    "both sides [2,1] vs [1,3]": ([2, 1], [1, 3]),
    "both sides [4,1,3] vs [1,5,1]": ([4, 1, 3], [1, 5, 1]),
    "size-1 result axis [1,3] vs [1,1]": ([1, 3], [1, 1]),
}


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("shapes", list(BROADCASTS.values()), ids=list(BROADCASTS))
def test_binary_broadcast(op, dtype, shapes):
    inputs = binary_inputs(op, shapes, dtype)
    outputs = run_both(node_model(op, inputs), inputs)
    assert outputs[0].shape == np.broadcast_shapes(*shapes)


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_integer_div_truncates_toward_zero(dtype):
    lhs = np.array([7, -7, 7, -7, 0, 1], dtype)
    rhs = np.array([2, 2, -2, -2, 5, 3], dtype)
    outputs = run_both(node_model("Div", [lhs, rhs]), [lhs, rhs])
    np.testing.assert_array_equal(outputs[0], np.array([3, -3, -3, 3, 0, 0], dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("broadcast", [False, True], ids=["same-shape", "broadcast"])
def test_integer_div_by_zero_does_not_crash(dtype, broadcast):
    # undefined in ONNX; native code must not trap (SIGFPE): dlc gives 0, as numpy's // does
    lhs = np.array([7, -7, 5, np.iinfo(dtype).min], dtype)
    rhs = np.array([0], dtype) if broadcast else np.array([0, 0, 0, 0], dtype)
    compiled = dlc.compile(node_model("Div", [lhs, rhs]))
    np.testing.assert_array_equal(compiled(lhs, rhs)[0], np.zeros(4, dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_integer_div_overflow_does_not_crash(dtype):
    # INT_MIN / -1 overflows (a trap on x86); dlc wraps around, as numpy does
    smallest = np.iinfo(dtype).min
    lhs = np.array([smallest, smallest, 6], dtype)
    rhs = np.array([-1, 1, -1], dtype)
    compiled = dlc.compile(node_model("Div", [lhs, rhs]))
    np.testing.assert_array_equal(compiled(lhs, rhs)[0], np.array([smallest, smallest, -6], dtype))


@pytest.mark.filterwarnings("ignore:.*encountered in divide:RuntimeWarning")
def test_float_div_by_zero_gives_ieee_results():
    lhs = np.array([1.0, -1.0, 0.0], np.float32)
    rhs = np.zeros(3, np.float32)
    outputs = run_both(node_model("Div", [lhs, rhs]), [lhs, rhs])
    assert np.isposinf(outputs[0][0]) and np.isneginf(outputs[0][1]) and np.isnan(outputs[0][2])


@pytest.mark.parametrize("dtype", [np.int8, np.int16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_narrow_integers(op, dtype):
    inputs = binary_inputs(op, ([2, 3], [3]), dtype)
    run_both(node_model(op, inputs), inputs)


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES + [np.int8, np.int16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [[2, 3], [7], [], [2, 1, 3, 2]], ids=str)
def test_relu(dtype, shape):
    x = random_array(shape, dtype)
    outputs = run_both(node_model("Relu", [x]), [x])
    np.testing.assert_array_equal(outputs[0], np.maximum(x, 0))


def test_relu_keeps_nan_and_infinities():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1.5], np.float32)
    outputs = run_both(node_model("Relu", [x]), [x])
    np.testing.assert_array_equal(outputs[0], np.maximum(x, 0))


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_matches_numpy(op):
    lhs, rhs = random_array([4, 1, 3], np.float64, seed=3), random_array([5, 1], np.float64, seed=4)
    expected = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
    outputs = run_both(node_model(op, [lhs, rhs]), [lhs, rhs])
    np.testing.assert_allclose(outputs[0], expected(lhs, rhs), rtol=1e-12)


def test_same_input_on_both_sides():
    x = random_array([3, 4], np.float32)
    model = node_model("Mul", [x, x])
    model.graph.node[0].input[1] = "x0"
    del model.graph.input[1]
    run_both(model, [x])
