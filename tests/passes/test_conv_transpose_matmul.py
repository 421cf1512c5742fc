"""dlc-conv-transpose-matmul: 2-D transposed convs run as a matmul and a depth-to-space (kernel
= stride) or as the conv of the zero-stuffed input (otherwise), on the schedules (no
NaivePathWarning), with onnxruntime's numbers (an oracle only)."""

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
    (64, 32, 12, 3, 2, 1, 1, 1, 1, True, "conv"),        # 3x3 stride 2, output padding
    (64, 32, 12, 4, 2, 1, 0, 1, 1, True, "conv"),        # a GAN's 4x4 stride 2
    (32, 32, 10, 3, 1, 1, 0, 1, 1, False, "conv"),       # stride 1
    (32, 64, 9, 3, 2, 0, 0, 2, 1, True, "conv"),         # dilated
    (32, 48, 8, 4, 2, 1, 0, 1, 4, True, "conv"),         # grouped
    (16, 16, 9, 2, 2, 0, 0, 1, 2, False, "conv"),        # grouped, kernel = stride
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
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert y.shape == expected.shape
    assert np.abs(y - expected).max() <= 2e-5 * np.abs(expected).max()


def test_pads_past_the_kernel_keep_the_generic():
    # pads 3 > d (k - 1) = 2: the equivalent conv would need negative pads
    w = np.random.default_rng(0).standard_normal((8, 8, 3, 3)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 3],
                            strides=[2, 2], pads=[3, 3, 3, 3])
    model = make_model([node], {"x": (np.float32, [1, 8, 10, 10])}, ["y"], {"w": w})
    compiled = dlc.compile(model, num_threads=1)
    assert '"dlc.conv_transpose"' in compiled.ir("dlc")
    x = np.random.default_rng(1).standard_normal((1, 8, 10, 10)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-4, atol=1e-5)
