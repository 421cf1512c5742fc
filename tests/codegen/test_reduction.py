"""The row schedule (passes/codegen/reduction.py): softmax, layernorm and reductions along the
last axis against onnx.reference, for rows and row lengths that do and do not divide the
R x L = 8 x 32 partial tile, rows shorter than L, and the ops broadcasting the row results."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen.reduction import rows_dim
from tests.conftest import MATMUL_TOLERANCES, make_model, run_both

RNG = np.random.default_rng(0)

# rows x row: both divide; 5 spare rows and a row of 31 * 32 + 8; rows shorter than 32; a row
# of exactly 32 (one partial tile: reduced whole); a row of 32 + 1; 3-D (rows: the middle loop)
SHAPES = [[64, 768], [37, 1000], [512, 20], [300, 32], [200, 33], [4, 33, 70]]


def scheduled(model: dlc.CompiledModel) -> bool:
    text = model.ir("linalg")
    return "linalg.generic" not in text and "vector.multi_reduction" in text


def one_node(node, shape: list[int], initializers=None):
    return make_model([node], {"x": (np.float32, shape)}, ["y"], initializers=initializers)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_rows(shape: list[int]) -> None:
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=-1), shape)
    assert scheduled(dlc.compile(model))
    x = RNG.standard_normal(shape).astype(np.float32) * 4
    run_both(model, [x])


@pytest.mark.parametrize("shape", [[16, 768], [50, 300], [4, 33, 70]], ids=str)
def test_layernorm_rows(shape: list[int]) -> None:
    width = shape[-1]
    inits = {"g": RNG.standard_normal(width).astype(np.float32),
             "b": RNG.standard_normal(width).astype(np.float32)}
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)
    model = one_node(node, shape, inits)
    assert scheduled(dlc.compile(model))
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceSum", "ReduceMean", "ReduceMin"])
def test_reductions_along_the_last_axis(op: str) -> None:
    shape = [96, 130]
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)  # (opset 18: axes input)
    model = make_model([node], {"x": (np.float32, shape)}, ["y"],
                       initializers={"axes": np.array([1], np.int64)}, opset=18)
    assert "vector.multi_reduction" in dlc.compile(model).ir("linalg")
    run_both(model, [RNG.standard_normal(shape).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)


def test_small_rows_keep_the_naive_path() -> None:
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=-1), [8, 16])
    assert "vector." not in dlc.compile(model).ir("linalg")


@pytest.mark.parametrize("shape, dim", [((128, 1, 768), 0), ((4, 33, 70), 1), ((1, 1, 9), 1)])
def testrows_dim_is_the_innermost_long_parallel_loop(shape, dim: int) -> None:
    assert rows_dim(shape) == dim
