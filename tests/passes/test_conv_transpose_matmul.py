"""dlc-conv-transpose-matmul: 2-D transposed convs run as a matmul and a depth-to-space (kernel
= stride), as s_h s_w sub-pixel convs interleaved (strided, undilated), or as the conv of the
zero-stuffed input (otherwise), on the schedules (no NaivePathWarning), with onnxruntime's
numbers (an oracle only)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import make_model

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("c, f, hw, k, s, p, op, d, g, bias, form", [
    (64, 32, 16, 2, 2, 0, 0, 1, 1, True, "matmul"),      # a UNet decoder
    (32, 48, 7, 3, 3, 0, 0, 1, 1, False, "matmul"),      # kernel = stride 3
    (64, 32, 12, 3, 2, 1, 1, 1, 1, True, "subpixel"),    # 3x3 stride 2, output padding
    (64, 32, 12, 4, 2, 1, 0, 1, 1, True, "subpixel"),    # a GAN's 4x4 stride 2
    (32, 48, 7, 3, 2, 0, 0, 1, 1, False, "subpixel"),    # odd output (15): the last row cut
    (32, 32, 6, 5, 3, 1, 2, 1, 1, True, "subpixel"),     # stride 3: 9 phases of 2x2 to 1x1
    (16, 16, 8, 3, 2, 3, 0, 1, 1, False, "subpixel"),    # pads past the kernel (input cropped)
    (32, 32, 10, 3, 1, 1, 0, 1, 1, False, "conv"),       # stride 1
    (32, 64, 9, 3, 2, 0, 0, 2, 1, True, "conv"),         # dilated
    (32, 48, 8, 4, 2, 1, 0, 1, 4, True, "subpixel"),     # grouped
    (16, 16, 9, 2, 2, 0, 0, 1, 2, False, "subpixel"),    # grouped, kernel = stride
    (16, 16, 9, 1, 2, 0, 1, 1, 1, False, "conv"),        # 1x1 stride 2: a phase without taps
])
def test_a_transposed_conv_runs_on_the_schedules(c, f, hw, k, s, p, op, d, g, bias, form):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c, f // g, k, k)) / np.sqrt(c * k)).astype(np.float32)
    inits = {"w": w}
    inputs = ["x", "w"]
    if bias:
        inits["b"] = rng.standard_normal(f).astype(np.float32)
        inputs.append("b")
    node = helper.make_node("ConvTranspose", inputs, ["y"], kernel_shape=[k, k], strides=[s, s],
                            pads=[p] * 4, output_padding=[op, op], dilations=[d, d], group=g)
    model = make_model([node], {"x": (np.float32, [1, c, hw, hw])}, ["y"], inits)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [x for x in caught if issubclass(x.category, NaivePathWarning)]
    text = compiled.ir("dlc")
    assert '"dlc.conv_transpose"' not in text
    assert ('"dlc.matmul"' in text) == (form == "matmul")
    # the sub-pixel form: a conv per output phase, none over stuffed zeros
    assert (s > 1 and text.count('"dlc.conv_nhwc"') == s * s) == (form == "subpixel")
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert y.shape == expected.shape
    assert np.abs(y - expected).max() <= 2e-5 * np.abs(expected).max()


def test_pads_past_the_kernel_without_sub_pixel_keep_the_generic():
    # dilated (no sub-pixel form) with pads 5 > d (k - 1) = 4: the equivalent conv would need
    # negative pads
    w = np.random.default_rng(0).standard_normal((8, 8, 3, 3)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 3],
                            strides=[2, 2], pads=[5, 5, 5, 5], dilations=[2, 2])
    model = make_model([node], {"x": (np.float32, [1, 8, 10, 10])}, ["y"], {"w": w})
    compiled = dlc.compile(model, num_threads=1)
    assert '"dlc.conv_transpose"' in compiled.ir("dlc")
    x = np.random.default_rng(1).standard_normal((1, 8, 10, 10)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-4, atol=1e-5)


def test_a_large_constant_filter_is_flipped_at_compile_time():
    # a DCGAN's 512 -> 256 4x4 stride 2: the flipped filter (2M elements, above
    # dlc-fold-constants' limit) was computed at run time on naive loops
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((512, 256, 4, 4)) / 90).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[4, 4],
                            strides=[2, 2], pads=[1, 1, 1, 1])
    model = make_model([node], {"x": (np.float32, [1, 512, 4, 4])}, ["y"], {"w": w})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [x for x in caught if issubclass(x.category, NaivePathWarning)]
    x = rng.standard_normal((1, 512, 4, 4)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert np.abs(compiled(x)[0] - expected).max() <= 2e-5 * np.abs(expected).max()
