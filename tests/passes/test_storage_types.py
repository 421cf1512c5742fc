"""Bool and unsigned tensors through dlc-to-linalg's storage types (i1 -> i8, uiN -> iN)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.conftest import make_model, node_model, run_both

UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]


def unsigned_values(dtype, shape, seed=0, low=0):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(low, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_unsigned_arithmetic_wraps_and_divides_unsigned(op, dtype):
    a = unsigned_values(dtype, [3, 4], seed=1)
    b = unsigned_values(dtype, [4], seed=2, low=1)  # broadcast; no division by zero here
    run_both(node_model(op, [a, b]), [a, b])


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unsigned_relu_is_identity(dtype):
    x = unsigned_values(dtype, [8])  # values above the signed maximum must stay
    run_both(node_model("Relu", [x]), [x])


def test_unsigned_division_by_zero_gives_zero():
    a = np.array([7, 255, 0], np.uint8)
    b = np.array([0, 0, 0], np.uint8)
    import dlc

    (out,) = dlc.compile(node_model("Div", [a, b]))(a, b)
    np.testing.assert_array_equal(out, [0, 0, 0])


def test_unsigned_matmul():
    a = unsigned_values(np.uint32, [2, 3]) % 1000
    b = unsigned_values(np.uint32, [3, 4], seed=3) % 1000
    run_both(node_model("MatMul", [a, b]), [a, b])


def test_bool_inputs_outputs_and_constants():
    nodes = [helper.make_node("Identity", ["x"], ["same"]),
             helper.make_node("Identity", ["mask"], ["constant"])]
    mask = np.array([[True, False, True]])
    model = make_model(nodes, {"x": (np.bool_, [2, 3])}, ["same", "constant"],
                       initializers={"mask": mask})
    x = np.array([[True, False, False], [False, True, True]])
    run_both(model, {"x": x})


def test_bool_transpose_and_reshape():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Flatten", ["t"], ["y"], axis=0)]
    model = make_model(nodes, {"x": (np.bool_, [2, 3])}, ["y"])
    run_both(model, {"x": np.array([[True, False, False], [False, True, True]])})


def test_unsigned_constant_above_signed_range():
    nodes = [helper.make_node("Add", ["x", "c"], ["y"])]
    c = np.array([250, 5], np.uint8)
    model = make_model(nodes, {"x": (np.uint8, [2])}, ["y"], initializers={"c": c})
    run_both(model, {"x": np.array([3, 251], np.uint8)})
