"""num_threads=2 on the row schedule (passes/codegen/reduction.py): softmax, layernorm and
reductions along the last axis whose row tiles are an scf.forall (at least THREAD_MIN
elements) compute what one thread and onnx.reference compute, for rows and row lengths that
do not divide the 8 x 16 tile, rows of one element, and ops below the threshold (serial)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import reduction
from tests.conftest import MATMUL_TOLERANCES, assert_same, make_model, reference

RNG = np.random.default_rng(5)

# 8-row tiles with 3 spare rows and a row of 62 * 16 + 8; a 3-D op (rows: the middle loop) of
# 197 rows of 12 * 16 + 5; rows of one element; one row; below THREAD_MIN (serial)
SHAPES = [[67, 1000], [4, 197, 197], [40000, 1], [1, 40000], [16, 300]]


def one_node(node, shape: list[int], initializers=None):
    return make_model([node], {"x": (np.float32, shape)}, ["y"], initializers=initializers)


def check_threads(model, x: np.ndarray, tolerances=MATMUL_TOLERANCES) -> str:
    """dlc at 2 threads == dlc at 1 thread (exactly) ~ onnx.reference; the 2-thread llvm IR."""
    serial = dlc.compile(model, num_threads=1)(x)[0]
    threaded = dlc.compile(model, num_threads=2)
    for _ in range(3):  # (a race would show as differing results)
        np.testing.assert_array_equal(threaded(x)[0], serial)
    assert_same(serial, reference(model, {"x": x})[0], tolerances)
    return threaded.ir("llvm")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_rows_on_two_threads(shape: list[int]) -> None:
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=-1), shape)
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    llvm = check_threads(model, x)
    # (rows of one element are no reduction: Softmax of them is 1; one row is one forall
    # iteration, folded)
    if shape[-1] > 1 and np.prod(shape[:-1]) > 1:
        assert ("omp.parallel" in llvm) == (np.prod(shape) >= reduction.THREAD_MIN)


@pytest.mark.parametrize("shape", [[67, 1000], [4, 197, 197], [16, 300]], ids=str)
def test_layernorm_rows_on_two_threads(shape: list[int]) -> None:
    width = shape[-1]
    inits = {"g": RNG.standard_normal(width).astype(np.float32),
             "b": RNG.standard_normal(width).astype(np.float32)}
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    check_threads(one_node(node, shape, inits), x)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceSum"])
def test_reductions_on_two_threads(op: str) -> None:
    shape = [203, 333]
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)  # (opset 18: axes input)
    model = make_model([node], {"x": (np.float32, shape)}, ["y"],
                       initializers={"axes": np.array([1], np.int64)}, opset=18)
    llvm = check_threads(model, RNG.standard_normal(shape).astype(np.float32))
    assert "omp.parallel" in llvm
