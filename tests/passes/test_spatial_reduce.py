"""dlc-strength-reduce: a mean or max over the spatial axes of a 4-D NCHW f32 tensor is a global
pool (computed channels-last by the pool schedule, no naive loops), with numpy's numbers; other
reductions stay reductions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import make_model


def _model(op: str, axes: list[int], keepdims: int, shape: list[int]):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node(op, ["c", "axes"], ["y"], keepdims=keepdims)]
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((shape[1], shape[1], 3, 3)) / 30).astype(np.float32)
    return make_model(nodes, {"x": (np.float32, shape)}, ["y"],
                      {"w": w, "axes": np.array(axes, np.int64)}, opset=18), w


@pytest.mark.parametrize("op, keepdims", [("ReduceMean", 1), ("ReduceMean", 0),
                                          ("ReduceMax", 1), ("ReduceMax", 0)])
def test_a_spatial_mean_or_max_is_a_global_pool(op, keepdims):
    shape = [1, 96, 14, 14]
    model, w = _model(op, [2, 3], keepdims, shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [c for c in caught if issubclass(c.category, NaivePathWarning)]
    text = compiled.ir("dlc")
    assert '"dlc.reduce"' not in text and '"dlc.pool_nhwc"' in text
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (y,) = compiled(x)
    conv = dlc.compile(make_model([helper.make_node("Conv", ["x", "w"], ["c"],
                                                    pads=[1, 1, 1, 1])],
                                  {"x": (np.float32, shape)}, ["c"], {"w": w}),
                       num_threads=1)(x)[0]
    reduce = np.mean if op == "ReduceMean" else np.max
    expected = reduce(conv.astype(np.float64), axis=(2, 3), keepdims=bool(keepdims))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op, axes", [("ReduceSum", [2, 3]), ("ReduceMean", [1]),
                                      ("ReduceMean", [3])])
def test_other_reductions_stay(op, axes):
    model, _ = _model(op, axes, 1, [1, 32, 8, 8])
    assert '"dlc.reduce"' in dlc.compile(model, num_threads=1).ir("dlc")
