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


def test_dynamic_copies_are_loops_of_ours_at_sizes_off_the_blocks() -> None:
    # a Softmax over [1, 2, S, S] and an int64 concat of [3, S] rows, S dynamic: the padded
    # column pieces of the [S, S] blocks and the concat's slots are copies of a dynamic size
    # or stride, each a loop of vector rows and single elements, no runtime memrefCopy left
    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=-1),
             helper.make_node("Concat", ["i", "i"], ["c"], axis=0)]
    model = dlc.compile(make_model(nodes, {"x": (np.float32, [1, 2, "s", "s"]),
                                           "i": (np.int64, [3, "s"])}, ["y", "c"]),
                        num_threads=1)
    assert model.function is not None, model.function_reason
    assert "memrefCopy" not in model.ir("llvm")
    for size in (1, 7, 40, 64, 100, 130):
        x = RNG.standard_normal([1, 2, size, size]).astype(np.float32)
        i = RNG.integers(-9, 9, [3, size])
        y, c = model(x, i)
        e = np.exp(x - x.max(-1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(c, np.concatenate([i, i], 0))
