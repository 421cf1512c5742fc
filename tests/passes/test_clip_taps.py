"""dlc-clip-taps: a dilated conv computed as convs of its output regions with the live taps
only (DeepLabV3's ASPP); numpy's numbers (the packed schedule of dilated convs:
tests/codegen/test_conv_packed.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from dlc.passes.graph.clip_taps import bands
from tests.conftest import make_model


def _reference(x, w, b, pads, dilations):
    n = x.shape[0]
    f, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oh = xp.shape[2] - dilations[0] * (kh - 1)
    ow = xp.shape[3] - dilations[1] * (kw - 1)
    y = np.zeros((n, f, oh, ow)) + b[None, :, None, None]
    for i in range(kh):
        for j in range(kw):
            window = xp[:, :, i * dilations[0]:i * dilations[0] + oh,
                        j * dilations[1]:j * dilations[1] + ow]
            y += np.einsum("nchw,fc->nfhw", window, w[:, :, i, j])
    return y


def _conv_model(c, h, wd, f, k, pads, dilations, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((f, c, *k)) / np.sqrt(c * k[0] * k[1])).astype(np.float32)
    b = rng.standard_normal(f).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(k), pads=pads,
                            dilations=dilations)
    relu = helper.make_node("Relu", ["c"], ["y"])
    model = make_model([node, relu], {"x": (np.float32, [1, c, h, wd])}, ["y"],
                       {"w": w, "b": b})
    return model, w, b


@pytest.mark.parametrize("c, h, wd, f, k, pads, dilations", [
    (64, 28, 28, 64, (3, 3), [12, 12, 12, 12], [12, 12]),   # ASPP: three row/column bands
    (64, 28, 28, 64, (3, 3), [36, 36, 36, 36], [36, 36]),   # only the centre tap: a 1x1 conv
    (64, 28, 28, 48, (3, 3), [4, 4, 4, 4], [4, 4]),         # DeepLabV3's layer4, F not a block
    (48, 20, 30, 64, (3, 5), [6, 2, 4, 8], [6, 4]),         # uneven kernel, pads, dilations
    (128, 33, 17, 64, (3, 3), [8, 0, 8, 0], [8, 1]),        # dilated along rows only
])
def test_dilated_conv_regions_match_numpy(c, h, wd, f, k, pads, dilations):
    model, w, b = _conv_model(c, h, wd, f, k, pads, dilations)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [x for x in caught if issubclass(x.category, NaivePathWarning)]
    ir = dlc.lower(model, stage="dlc").ir()
    # the regions: more than one conv (or a 1x1), none of them padded
    assert ir.count("dlc.conv_nhwc") > 1 or "dilations = array<i64: 1, 1>" in ir
    assert "pads = array<i64: 0, 0, 0, 0>" in ir and "dlc.pad" not in ir
    x = np.random.default_rng(1).standard_normal((1, c, h, wd)).astype(np.float32)
    expected = np.maximum(_reference(x, w, b, pads, dilations), 0)
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-4, atol=1e-4)


def test_a_mildly_dilated_conv_stays_one_conv():
    # dilation 2 on 28x28 reads the input with 91 % of its taps: not split (MAX_LIVE)
    model, w, b = _conv_model(64, 28, 28, 64, (3, 3), [2, 2, 2, 2], [2, 2])
    assert dlc.lower(model, stage="dlc").ir().count("dlc.conv_nhwc") == 1
    x = np.random.default_rng(2).standard_normal((1, 64, 28, 28)).astype(np.float32)
    expected = np.maximum(_reference(x, w, b, [2, 2, 2, 2], [2, 2]), 0)
    np.testing.assert_allclose(dlc.compile(model, num_threads=1)(x)[0], expected,
                               rtol=1e-4, atol=1e-4)


def test_bands():
    # 28 outputs, 3 taps of dilation 12, padding 12: tap 0 reads the input from row 12 on,
    # tap 2 up to row 15
    assert bands(28, 28, 3, 12, 12) == [(0, 12, 1, 3), (12, 16, 0, 3), (16, 28, 0, 2)]
    assert bands(28, 28, 3, 36, 36) == [(0, 28, 1, 2)]
    assert bands(5, 5, 3, 1, 1) == [(0, 1, 1, 3), (1, 4, 0, 3), (4, 5, 0, 2)]
    # an output reading padding only: no bands (not rewritten)
    assert bands(10, 4, 1, 1, 3) is None
