"""The conv schedule (passes/codegen/conv.py): NCHW convs with constant filters computed in NHWC,
against onnx.reference, for tiles that do and do not divide the output width and filters."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc

from tests.conftest import MATMUL_TOLERANCES, make_model, run_both

RNG = np.random.default_rng(0)

# (C, H, F, kernel, stride, pad): 3x3, OW 14 (ow tile 7), F 48 (tile 16), F 24 (whole),
# strided, 1x1, OW 7 with F 32, 5x5 with dilation-free padding 2
CASES = [
    (16, 14, 32, 3, 1, 1),
    (8, 16, 48, 3, 1, 1),
    (8, 12, 24, 3, 1, 0),
    (16, 15, 32, 3, 2, 1),
    (32, 14, 64, 1, 1, 0),
    (64, 7, 32, 3, 1, 1),
    (8, 10, 16, 5, 1, 2),
]


def conv_model(c: int, h: int, f: int, kernel: int, stride: int, pad: int, bias: bool = True):
    weight = (RNG.standard_normal((f, c, kernel, kernel)) / np.sqrt(c * kernel**2))
    inits = {"w": weight.astype(np.float32)}
    if bias:
        inits["b"] = RNG.standard_normal(f).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["y"],
                            kernel_shape=[kernel, kernel], strides=[stride, stride],
                            pads=[pad] * 4)
    return make_model([node], {"x": (np.float32, [1, c, h, h])}, ["y"], initializers=inits)


@pytest.mark.parametrize("c, h, f, kernel, stride, pad", CASES, ids=lambda v: str(v))
def test_conv_matches_the_reference(c, h, f, kernel, stride, pad) -> None:
    model = conv_model(c, h, f, kernel, stride, pad)
    assert "linalg.conv_2d_nhwc_hwcf" not in dlc.compile(model).ir("linalg")  # scheduled away
    assert "vector.fma" in dlc.compile(model).ir("linalg")
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def test_conv_without_bias_and_relu_after() -> None:
    model = conv_model(16, 14, 32, 3, 1, 1, bias=False)
    model.graph.node.append(helper.make_node("Relu", ["y"], ["z"]))
    model.graph.output[0].name = "z"
    x = RNG.standard_normal((1, 16, 14, 14)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def test_conv_with_an_input_filter_is_scheduled_in_nhwc() -> None:
    # dlc-convert-layout transposes a runtime filter to HWCF with a dlc.transpose: the NHWC conv
    # is scheduled like one with a constant filter
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])
    model = make_model([node], {"x": (np.float32, [1, 16, 12, 12]),
                                "w": (np.float32, [32, 16, 3, 3])}, ["y"])
    linalg_ir = dlc.compile(model).ir("linalg")
    assert "linalg.conv_2d_nchw_fchw" not in linalg_ir and "vector.fma" in linalg_ir
    x = RNG.standard_normal((1, 16, 12, 12)).astype(np.float32)
    w = RNG.standard_normal((32, 16, 3, 3)).astype(np.float32)
    run_both(model, [x, w], tolerances=MATMUL_TOLERANCES)
