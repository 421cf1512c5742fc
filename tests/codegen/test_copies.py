"""dlc-lower-copies (passes/buffer/lower_copies.py): the strided copies of padded inputs and concats
become loops of contiguous row copies, with no call of the runtime's element-by-element
`memrefCopy` left; results against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [[1, 40, 40, 32], [1, 33, 35, 24], [2, 30, 17, 5]],
                         ids=str)
def test_pad_and_concat_copies_match_numpy(shape: list[int]) -> None:
    pads = [0, 1, 2, 0, 0, 2, 1, 0]
    nodes = [helper.make_node("Pad", ["x", "p"], ["padded"]),
             helper.make_node("Relu", ["padded"], ["r"]),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=2),
             helper.make_node("Sigmoid", ["c"], ["s"])]
    model = dlc.compile(make_model(nodes, {"x": (np.float32, shape)}, ["r", "s"],
                                   {"p": np.array(pads, np.int64)}), num_threads=1)
    x = RNG.standard_normal(shape).astype(np.float32)
    padded, concat = model(x)
    width = [(pads[i], pads[i + 4]) for i in range(4)]
    np.testing.assert_array_equal(padded, np.maximum(np.pad(x, width), 0))
    np.testing.assert_allclose(concat, 1 / (1 + np.exp(-np.concatenate([x, x], 2))),
                               rtol=1e-5, atol=1e-6)
    llvm = model.ir("llvm")
    assert "memrefCopy" not in llvm  # (the runtime's element-by-element strided copy)


def test_rows_too_short_or_strided_stay_runtime_copies() -> None:
    # concat on the innermost axis: rows of 3 elements (< min-row 8) are left to the runtime
    nodes = [helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
             helper.make_node("Relu", ["c"], ["r"])]
    model = dlc.compile(make_model(nodes, {"x": (np.float32, [50, 3])}, ["r"]), num_threads=1)
    x = RNG.standard_normal([50, 3]).astype(np.float32)
    np.testing.assert_array_equal(model(x)[0], np.maximum(np.concatenate([x, x], 1), 0))
    assert "memrefCopy" in model.ir("llvm")
