"""dlc-winograd: 3x3 stride-1 convs with a constant filter run as Winograd F(4x4, 3x3) where
they have min-tiles 4x4 tiles, else F(2x2, 3x3), with the direct conv's numbers (in f64, to f32
rounding); the convs it must not touch keep `dlc.conv_nhwc`."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest
from mlir import ir

import dlc
from dlc.dialects import make_context
from dlc.errors import DlcError
from dlc.passes.graph import winograd
from dlc.passes.pipeline import build_pass_manager


def _conv_model(shape, filters, pads, *, weights=None, bias=True, strides=(1, 1),
                relu=True, seed=0) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray | None]:
    n, c, h, w = shape
    rng = np.random.default_rng(seed)
    if weights is None:
        weights = (rng.standard_normal((filters, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32) if bias else None
    oh_ = (h + pads[0] + pads[2] - 3) // strides[0] + 1
    ow_ = (w + pads[1] + pads[3] - 3) // strides[1] + 1
    inits = [nh.from_array(weights, "w")] + ([nh.from_array(b, "b")] if bias else [])
    nodes = [oh.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"],
                          pads=list(pads), strides=list(strides))]
    nodes.append(oh.make_node("Relu" if relu else "Identity", ["c"], ["y"]))
    f = onnx.TensorProto.FLOAT
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", f, list(shape))],
                          [oh.make_tensor_value_info("y", f, [n, filters, oh_, ow_])], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), weights, b


def _direct(x, weights, b, pads, relu=True) -> np.ndarray:
    """The conv in f64, NCHW."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oh_, ow_ = xp.shape[2] - 2, xp.shape[3] - 2
    y = np.zeros((x.shape[0], weights.shape[0], oh_, ow_))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + oh_, j:j + ow_],
                           weights[:, :, i, j].astype(np.float64))
    if b is not None:
        y += b[None, :, None, None]
    return np.maximum(y, 0) if relu else y


@pytest.mark.parametrize("shape, filters, pads, bias, tile", [
    ((1, 64, 28, 28), 96, (1, 1, 1, 1), True, 4),     # 49 tiles of 4x4
    ((2, 72, 21, 19), 64, (1, 1, 1, 1), True, 4),     # odd output sizes: the last tiles cut
    ((1, 64, 24, 24), 80, (0, 0, 0, 0), False, 4),    # no padding, no bias
    ((1, 64, 33, 25), 64, (2, 0, 1, 1), True, 4),     # pads of every size, both sides
    ((1, 128, 14, 14), 128, (1, 1, 1, 1), True, 2),   # 16 tiles of 4x4, 49 of 2x2
    ((1, 128, 11, 13), 128, (1, 1, 1, 1), True, 2),   # ... odd sizes
])
def test_winograd_computes_the_conv(shape, filters, pads, bias, tile):
    model, weights, b = _conv_model(shape, filters, pads, bias=bias)
    compiled = dlc.compile(model, num_threads=1)
    ir = compiled.ir("dlc")
    assert "dlc.conv_nhwc" not in ir and "dlc.conv\"" not in ir
    positions = (tile + 2) ** 2  # one batch matmul over the tile positions
    assert re.search(rf'"dlc.matmul".*: \(tensor<{positions}x\d+x\d+xf32>', ir)

    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    expected = _direct(x, weights, b, pads)
    (y,) = compiled(x)
    assert y.shape == expected.shape
    # (F(4x4, 3x3)'s transforms, by up to 8 and 5, round about 10x more than F(2x2)'s)
    assert np.abs(y - expected).max() <= (2e-5 if tile == 4 else 1e-5) * np.abs(expected).max()


def test_max_tile_2_keeps_f2(monkeypatch):
    monkeypatch.setenv("DLC_WINOGRAD", "2")
    model, weights, b = _conv_model((1, 64, 28, 28), 64, (1, 1, 1, 1))
    compiled = dlc.compile(model, num_threads=1)
    assert re.search(r'"dlc.matmul".*: \(tensor<16x196x64xf32>', compiled.ir("dlc"))
    x = np.random.default_rng(1).standard_normal((1, 64, 28, 28)).astype(np.float32)
    expected = _direct(x, weights, b, (1, 1, 1, 1))
    assert np.abs(compiled(x)[0] - expected).max() <= 1e-5 * np.abs(expected).max()


@pytest.mark.parametrize("why, kwargs", [
    ("16 tiles of a 7x7 output: fewer than min_tiles", {"shape": (1, 256, 7, 7)}),
    ("stride 2", {"shape": (1, 64, 56, 56), "strides": (2, 2)}),
    ("a quantized conv's integer filter",
     {"shape": (1, 64, 28, 28),
      "weights": np.random.default_rng(2).integers(-8, 8, (64, 64, 3, 3)).astype(np.float32)}),
    ("32 input channels: fewer than min_channels", {"shape": (1, 32, 28, 28)}),
    ("12 x 12 x 64 -> 64: 5.3 M multiply-adds, fewer than min_macs", {"shape": (1, 64, 12, 12)}),
])
def test_winograd_leaves_other_convs_direct(why, kwargs):
    model, _, _ = _conv_model(kwargs.pop("shape"), 64, (1, 1, 1, 1), **kwargs)
    compiled = dlc.compile(model, num_threads=1)
    assert "dlc.conv_nhwc" in compiled.ir("dlc"), why


@pytest.mark.parametrize("m", [2, 4])
def test_filter_transform_is_g_w_gt(m):
    w = np.random.default_rng(3).standard_normal((3, 3, 2, 5)).astype(np.float32)
    u = winograd.filter_transform(w, m)
    a = m + 2
    assert u.shape == (a * a, 2, 5) and u.dtype == np.float32
    # U[k, l] for the filter of (c, f): (G w Gᵀ)[k, l]
    g = winograd.TRANSFORMS[m][1]
    for c, f in [(0, 0), (1, 4)]:
        expected = g @ w[:, :, c, f].astype(np.float64) @ g.T
        np.testing.assert_allclose(u[:, c, f].reshape(a, a), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("m", [2, 4])
def test_the_transforms_compute_a_1d_correlation(m):
    # Y = Aᵀ [(G g) * (Bᵀ d)]: the m outputs of the 3-tap correlation of d (m + 2 values)
    bt, g, at = winograd.TRANSFORMS[m]
    rng = np.random.default_rng(4)
    d, taps = rng.standard_normal(m + 2), rng.standard_normal(3)
    expected = [d[i:i + 3] @ taps for i in range(m)]
    np.testing.assert_allclose(at @ ((g @ taps) * (bt @ d)), expected, rtol=1e-12)


@pytest.mark.parametrize("options, rewritten", [
    ("", True), ("{min-tiles=197}", False), ("{min-channels=65}", False),
    ("{min-macs=28901377}", False), ("{max-tile=2}", True)])
def test_the_pass_options_bound_it(options, rewritten):
    # 196 tiles of a 28 x 28 output, 64 channels in and out: 28,901,376 multiply-adds
    model, _, _ = _conv_model((1, 64, 28, 28), 64, (1, 1, 1, 1))
    with make_context():
        module = ir.Module.parse(dlc.lower(model, stage="dlc", opt_level=1).ir("dlc"))
        build_pass_manager(f"builtin.module(dlc-convert-layout,dlc-winograd{options})").run(
            module.operation)
        assert ("dlc.conv_nhwc" not in str(module)) == rewritten
        # (49 tiles of 4x4: F(4x4, 3x3) unless max-tile=2 or min-tiles says otherwise)
        assert ("tensor<36x49x64xf32>" in str(module)) == (rewritten and options == "")


def test_max_tile_must_be_2_or_4():
    with make_context(), pytest.raises(DlcError, match="max-tile must be 2 or 4, got 3"):
        build_pass_manager("builtin.module(dlc-winograd{max-tile=3})")
