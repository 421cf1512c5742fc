"""The transpose schedule (passes/codegen/transpose.py): transposes moving the innermost
dimension, in 8 x 8 vector blocks, remainders as smaller blocks; exact against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import transpose
from tests.conftest import make_model

RNG = np.random.default_rng(17)

# (shape, perm): NHWC -> NCHW, NCHW -> NHWC, remainders on one or both block dimensions
# (28 = 24 + 4, 100 = 96 + 4, 76 = 72 + 4, 36 = 32 + 4), attention's [seq, heads, dim] ->
# [heads, dim, seq] with 197 rows (192 + 5), a matrix transposed in a batch
CASES = [([1, 56, 56, 64], [0, 3, 1, 2]), ([1, 64, 28, 28], [0, 2, 3, 1]),
         ([1, 28, 28, 96], [0, 3, 1, 2]), ([197, 12, 64], [1, 2, 0]), ([100, 76], [1, 0]),
         ([2, 3, 40, 36], [0, 1, 3, 2])]


def transpose_model(shape: list[int], perm: list[int], dtype=np.float32):
    node = helper.make_node("Transpose", ["x"], ["y"], perm=perm)
    return make_model([node], {"x": (dtype, shape)}, ["y"])


@pytest.mark.parametrize("shape, perm", CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_transpose_is_blocked_and_exact(shape, perm, dtype) -> None:
    model = transpose_model(shape, perm, dtype)
    compiled = dlc.compile(model)  # (the suite's DLC_STRICT_SCHEDULE: a failing schedule raises)
    linalg = compiled.ir("linalg")
    assert "linalg.transpose" not in linalg and "vector.transpose" in linalg
    x = (RNG.standard_normal(shape) * 1000).astype(dtype)
    (y,) = compiled(x)
    np.testing.assert_array_equal(y, np.transpose(x, perm))


def test_innermost_kept_or_narrow_is_not_matched() -> None:
    # rows copied whole need no blocks; a block dimension under 4 lanes gains nothing
    for shape, perm in (([8, 16, 32], [1, 0, 2]), ([3, 4096], [1, 0])):
        linalg = dlc.compile(transpose_model(shape, perm)).ir("linalg")
        assert "vector.transpose" not in linalg
    assert transpose.BLOCK == 8
