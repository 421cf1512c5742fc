"""dlc-conv1d-as-2d: 1-D f32 convs (Whisper, wav2vec2, SqueezeBERT) run as 2-D convs of height
1 with the conv schedules (no NaivePathWarning), with numpy's numbers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import make_model


def _reference(x, w, b, stride, pad, dilation, group):
    n = x.shape[0]
    f, cg, k = w.shape
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pad[0], pad[1])])
    out = (xp.shape[2] - dilation * (k - 1) - 1) // stride + 1
    y = np.zeros((n, f, out))
    per = f // group
    for g in range(group):
        for t in range(k):
            end = t * dilation + stride * (out - 1) + 1
            window = xp[:, g * cg:(g + 1) * cg, t * dilation:end:stride]
            y[:, g * per:(g + 1) * per] += np.einsum("ncl,fc->nfl", window,
                                                     w[g * per:(g + 1) * per, :, t])
    return y + (b[None, :, None] if b is not None else 0)


@pytest.mark.parametrize("c, length, f, k, stride, pad, dilation, group", [
    (80, 300, 96, 3, 1, (1, 1), 1, 1),      # Whisper's first conv (shorter)
    (96, 300, 96, 3, 2, (1, 1), 1, 1),      # ... its second, stride 2
    (64, 199, 64, 3, 2, (0, 0), 1, 1),      # wav2vec2's feature extractor
    (64, 49, 64, 16, 1, (8, 8), 1, 16),     # wav2vec2's positional conv (grouped)
    (128, 128, 128, 1, 1, (0, 0), 1, 4),    # SqueezeBERT's grouped 1x1
    (32, 100, 48, 5, 1, (4, 4), 2, 1),      # dilated
])
def test_a_1d_conv_is_a_2d_conv(c, length, f, k, stride, pad, dilation, group):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((f, c // group, k)) / np.sqrt(c * k)).astype(np.float32)
    b = rng.standard_normal(f).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[stride],
                            pads=list(pad), dilations=[dilation], group=group)
    model = make_model([node], {"x": (np.float32, [1, c, length])}, ["y"], {"w": w, "b": b})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [w_ for w_ in caught if issubclass(w_.category, NaivePathWarning)]
    text = compiled.ir("dlc")
    assert "tensor<1x" in text and '"dlc.conv_nhwc"' in text
    x = rng.standard_normal((1, c, length)).astype(np.float32)
    (y,) = compiled(x)
    expected = _reference(x, w, b, stride, pad, dilation, group)
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
