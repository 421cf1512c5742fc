"""dlc-polyphase: strided convs with a large filter run as stride-1 convs on the input's
phases, with the strided conv's numbers (in f64, to f32 rounding); the convs it must not touch
keep their one `dlc.conv_nhwc`."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest
from mlir import ir

import dlc
from dlc.dialects import make_context
from dlc.passes.graph import polyphase
from dlc.passes.pipeline import build_pass_manager


def _conv_model(shape, filters, kernel, strides, pads, *, weights=None, bias=True, seed=0
                ) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray | None]:
    n, c, h, w = shape
    rng = np.random.default_rng(seed)
    if weights is None:
        weights = (rng.standard_normal((filters, c, *kernel)) / np.sqrt(c * np.prod(kernel))
                   ).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32) if bias else None
    out = [(size + pads[i] + pads[i + 2] - kernel[i]) // strides[i] + 1
           for i, size in enumerate((h, w))]
    inits = [nh.from_array(weights, "w")] + ([nh.from_array(b, "b")] if bias else [])
    nodes = [oh.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c"],
                          pads=list(pads), strides=list(strides)),
             oh.make_node("Relu", ["c"], ["y"])]
    f = onnx.TensorProto.FLOAT
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", f, list(shape))],
                          [oh.make_tensor_value_info("y", f, [n, filters, *out])], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), weights, b


def _direct(x, weights, b, strides, pads) -> np.ndarray:
    """The strided conv in f64, NCHW, with its relu."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    kh, kw = weights.shape[2:]
    sh, sw = strides
    oh_, ow_ = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    y = np.zeros((x.shape[0], weights.shape[0], oh_, ow_))
    for i in range(kh):
        for j in range(kw):
            window = xp[:, :, i:i + sh * (oh_ - 1) + 1:sh, j:j + sw * (ow_ - 1) + 1:sw]
            y += np.einsum("nchw,fc->nfhw", window, weights[:, :, i, j].astype(np.float64))
    if b is not None:
        y += b[None, :, None, None]
    return np.maximum(y, 0)


# filters of at least 2 MiB (`min-filter-bytes`): 128 x 512 x 3 x 3 x 4 bytes = 2.25 MiB
@pytest.mark.parametrize("shape, filters, kernel, strides, pads, bias, convs", [
    ((1, 128, 14, 14), 512, (3, 3), (2, 2), (1, 1, 1, 1), True, 4),   # ResNet's downsampling
    ((2, 128, 11, 9), 512, (3, 3), (2, 2), (1, 1, 1, 1), True, 4),    # odd sizes, batch 2
    ((1, 128, 10, 10), 512, (3, 3), (2, 2), (0, 0, 0, 0), False, 4),  # a row never read
    ((1, 128, 13, 12), 512, (3, 3), (2, 2), (2, 0, 1, 1), True, 4),   # pads of every size
    ((1, 128, 12, 12), 512, (3, 3), (2, 1), (1, 1, 1, 1), True, 2),   # stride 2 by 1
    ((1, 256, 14, 14), 512, (2, 2), (2, 2), (0, 0, 0, 0), True, 4),   # ConvNeXt's 2x2
    ((1, 256, 12, 12), 768, (3, 1), (2, 2), (1, 0, 1, 0), True, 2),   # a 3x1 kernel
])
def test_polyphase_computes_the_conv(shape, filters, kernel, strides, pads, bias, convs):
    model, weights, b = _conv_model(shape, filters, kernel, strides, pads, bias=bias)
    compiled = dlc.compile(model, num_threads=1)
    text = compiled.ir("dlc")
    assert text.count('"dlc.conv_nhwc"') == convs
    assert "strides = array<i64: 2" not in text and "strides = array<i64: 1, 2" not in text

    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    expected = _direct(x, weights, b, strides, pads)
    (y,) = compiled(x)
    assert y.shape == expected.shape
    assert np.abs(y - expected).max() <= 1e-5 * np.abs(expected).max()


@pytest.mark.parametrize("why, args, kwargs", [
    ("a 1.1 MiB filter: less than min_filter_bytes", ((1, 128, 14, 14), 256, (3, 3), (2, 2)),
     {}),
    ("stride 1", ((1, 128, 14, 14), 512, (3, 3), (1, 1)), {}),
    ("a strided 1x1 conv (packed as a view)", ((1, 1024, 14, 14), 1024, (1, 1), (2, 2)), {}),
    ("stride 4: 16 thin phases", ((1, 128, 16, 16), 512, (4, 4), (4, 4)), {}),
    ("32 input channels: fewer than min_channels", ((1, 32, 14, 14), 2048, (3, 3), (2, 2)),
     {}),
    ("a quantized conv's integer filter", ((1, 128, 14, 14), 512, (3, 3), (2, 2)),
     {"weights": np.random.default_rng(2).integers(-8, 8, (512, 128, 3, 3))
      .astype(np.float32)}),
])
def test_polyphase_leaves_other_convs_alone(why, args, kwargs, monkeypatch):
    monkeypatch.setenv("DLC_WINOGRAD", "0")  # (the stride-1 conv: dlc-winograd's otherwise)
    shape, filters, kernel, strides = args
    pads = tuple(k // 2 if k % 2 else 0 for k in kernel) * 2
    model, _, _ = _conv_model(shape, filters, kernel, strides, pads, **kwargs)
    compiled = dlc.compile(model, num_threads=1)
    assert compiled.ir("dlc").count('"dlc.conv_nhwc"') == 1, why


def test_phases_of_a_dimension():
    assert polyphase._phases(3, 2) == [(0, 2), (1, 1)]
    assert polyphase._phases(2, 2) == [(0, 1), (1, 1)]
    assert polyphase._phases(1, 2) == [(0, 1)]  # (phase 1 has no tap: not read)
    assert polyphase._phases(3, 1) == [(0, 3)]


@pytest.mark.parametrize("options, rewritten", [
    ("", False), ("{min-filter-bytes=1179648}", True), ("{min-filter-bytes=1179649}", False),
    ("{min-filter-bytes=0 min-channels=129}", False)])
def test_the_pass_options_bound_it(options, rewritten):
    # 3 x 3 x 128 x 256 x 4 bytes = 1,179,648
    model, _, _ = _conv_model((1, 128, 14, 14), 256, (3, 3), (2, 2), (1, 1, 1, 1))
    with make_context():
        module = ir.Module.parse(dlc.lower(model, stage="dlc", opt_level=1).ir("dlc"))
        build_pass_manager(f"builtin.module(dlc-convert-layout,dlc-polyphase{options})").run(
            module.operation)
        assert (str(module).count('"dlc.conv_nhwc"') > 1) == rewritten
