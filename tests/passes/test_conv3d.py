"""dlc-conv3d-as-2d: 3-D f32 convs (video models: r3d_18, mc3_18, r(2+1)d, X3D) run as one
channels-last 2-D conv per depth tap, on the conv schedules (no NaivePathWarning), and 3-D max
pools as the max of 2-D pools; onnxruntime's numbers (an oracle only)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import make_model

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("c, f, d, hw, k, s, p, dil, g, bias", [
    (16, 32, 6, 14, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, True),   # r3d_18's 3x3x3
    (16, 32, 5, 12, (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1, False),  # mc3's spatial only
    (32, 16, 8, 10, (3, 1, 1), (1, 1, 1), (1, 0, 0), (1, 1, 1), 1, True),   # r(2+1)d's temporal
    (16, 32, 7, 13, (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), 1, True),   # strided everywhere
    (32, 32, 6, 12, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 32, True),  # X3D's depthwise
    (16, 16, 9, 11, (3, 3, 3), (1, 1, 1), (2, 1, 1), (2, 1, 1), 1, False),  # dilated in depth
    (3, 16, 8, 16, (3, 7, 7), (1, 2, 2), (1, 3, 3), (1, 1, 1), 1, False),   # a video stem
])
def test_a_3d_conv_runs_on_the_2d_schedules(c, f, d, hw, k, s, p, dil, g, bias):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((f, c // g, *k)) / np.sqrt(c // g * np.prod(k))).astype(np.float32)
    inits, inputs = {"w": w}, ["x", "w"]
    if bias:
        inits["b"] = rng.standard_normal(f).astype(np.float32)
        inputs.append("b")
    node = helper.make_node("Conv", inputs, ["y"], kernel_shape=list(k), strides=list(s),
                            pads=list(p) * 2, dilations=list(dil), group=g)
    model = make_model([node], {"x": (np.float32, [1, c, d, hw, hw])}, ["y"], inits)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [x for x in caught if issubclass(x.category, NaivePathWarning)]
    text = compiled.ir("dlc")
    assert text.count('"dlc.conv_nhwc"') == k[0] and '"dlc.conv"' not in text
    x = rng.standard_normal((1, c, d, hw, hw)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert y.shape == expected.shape
    assert np.abs(y - expected).max() <= 2e-5 * np.abs(expected).max()


@pytest.mark.parametrize("c, d, hw, k, s, p, dil, ceil", [
    (16, 8, 14, (1, 3, 3), (1, 2, 2), (0, 1, 1), (1, 1, 1), 0),   # S3D/I3D's spatial pools
    (16, 8, 14, (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), 0),   # padded in depth (-inf)
    (8, 9, 11, (2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), 0),    # the last depth unused
    (8, 9, 12, (3, 2, 2), (1, 1, 1), (2, 0, 0), (2, 1, 1), 0),    # dilated in depth
    (8, 9, 11, (2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), 1),    # ceil mode: left 5-D
])
def test_a_3d_max_pool_is_2d_pools(c, d, hw, k, s, p, dil, ceil):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=list(k), strides=list(s),
                            pads=list(p) * 2, dilations=list(dil), ceil_mode=ceil)
    model = make_model([node], {"x": (np.float32, [1, c, d, hw, hw])}, ["y"], {})
    compiled = dlc.compile(model, num_threads=1)
    assert ('"dlc.pool_nhwc"' in compiled.ir("dlc")) == (not ceil)
    x = np.random.default_rng(1).standard_normal((1, c, d, hw, hw)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_array_equal(y, expected)
