"""The elementwise schedule (passes/codegen/elementwise.py): vectorized fused chains against
numpy, for sizes that do and do not divide the vector widths, with and without broadcasting."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen.elementwise import vector_width
from tests.conftest import make_model

RNG = np.random.default_rng(0)

# (shape of a, shape of b): flattened identity cases (divisible by 64, by 16 only, not at all:
# split), broadcast rows whose inner size divides, is small, or must be split
SHAPES = [
    ([64, 128], [64, 128]),
    ([4097], [4097]),
    ([3, 1000, 7], [3, 1000, 7]),
    ([64, 96], [96]),
    ([300, 50], [50]),
    ([5, 1000], [1000]),
    ([4, 1, 3000], [4, 7, 1]),  # size-1 broadcasts (constant maps): naive path, same numbers
]


@pytest.mark.parametrize("a_shape, b_shape", SHAPES, ids=lambda v: str(v))
def test_fused_chain_matches_numpy(a_shape: list[int], b_shape: list[int]) -> None:
    # tanh((a - b) * a) + sigmoid(b): one generic, vectorized
    nodes = [helper.make_node("Sub", ["a", "b"], ["d"]), helper.make_node("Mul", ["d", "a"], ["m"]),
             helper.make_node("Tanh", ["m"], ["t"]), helper.make_node("Sigmoid", ["b"], ["s"]),
             helper.make_node("Add", ["t", "s"], ["y"])]
    model = dlc.compile(make_model(nodes, {"a": (np.float32, a_shape),
                                           "b": (np.float32, b_shape)}, ["y"]))
    text = model.ir("linalg")
    scheduled = "vector.transfer_write" in text and "linalg.generic" not in text
    assert scheduled == (1 not in a_shape + b_shape)
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    expected = np.tanh((a - b) * a) + 1 / (1 + np.exp(-b))
    np.testing.assert_allclose(model(a, b)[0], expected, rtol=1e-5, atol=1e-6)


def test_small_ops_keep_the_naive_path() -> None:
    node = helper.make_node("Relu", ["a"], ["y"])
    model = dlc.compile(make_model([node], {"a": (np.float32, [8, 16])}, ["y"]))
    assert "linalg.generic" in model.ir("linalg") and "vector." not in model.ir("linalg")


@pytest.mark.parametrize("size, width", [(128, 64), (96, 32), (48, 16), (50, 50), (1000, None)])
def test_vector_width(size: int, width: int | None) -> None:
    assert vector_width(size) == width
