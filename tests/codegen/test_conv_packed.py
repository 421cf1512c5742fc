"""The data-tiled (packed) convolution (passes/codegen/packed_conv.py): the filter packed per
block of 32 output channels at compile time, the conv a generic over a [N, OH, OW, F/32, 32]
view of its NHWC output, its init and epilogue rebuilt in that shape.

Numbers against onnx.reference across kernel sizes, output widths that do and do not divide
the register tile (OW 13 = 8 + 5, 9 = 8 + 1), a blocked channel reduction, strided 1x1 convs,
rectangular images, bias / no bias / ReLU / residual add, threads; the decision (which convs
keep conv.py's schedule); and the buffers: a packed conv writes its output in place into the
padded buffer of the next 3x3 conv, into its slot of a concat and into the function result
(no memref.copy: the 5-D output is a view of the NHWC buffer, dlc-pad-in-place).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import (
    MATMUL_TOLERANCES,
    assert_same,
    fma_position,
    make_model,
    reference,
    run_both,
)


@pytest.fixture(autouse=True)
def _direct_convs(monkeypatch):
    """The direct conv schedules are what these tests check: no Winograd (dlc-winograd)."""
    monkeypatch.setenv("DLC_WINOGRAD", "0")


RNG = np.random.default_rng(11)


def packed(linalg_ir: str) -> bool:
    """The packed kernel: contracted multiply-adds on [ow, 32] (or [ow, 16]) register tiles, no
    conv op and no vector.fma (conv.py's kernel) left."""
    return ("linalg.conv_2d" not in linalg_ir and "vector.fma" not in linalg_ir
            and fma_position(linalg_ir) >= 0)


def conv_node(x: str, w: str, b: str | None, y: str, kernel: int, stride: int = 1,
              pad: int = 0, **attributes) -> helper.NodeProto:
    return helper.make_node("Conv", [x, w] + ([b] if b else []), [y],
                            kernel_shape=[kernel, kernel], strides=[stride, stride],
                            pads=[pad] * 4, **attributes)


def weights(f: int, c: int, kernel: int) -> np.ndarray:
    return (RNG.standard_normal((f, c, kernel, kernel)) / np.sqrt(c * kernel**2)).astype(
        np.float32)


def single_conv(c: int, h: int, w: int, f: int, kernel: int, stride: int, pad: int,
                bias: bool = True, relu: bool = True):
    inits = {"w": weights(f, c, kernel)}
    if bias:
        inits["b"] = RNG.standard_normal(f).astype(np.float32)
    nodes = [conv_node("x", "w", "b" if bias else None, "y", kernel, stride, pad)]
    if relu:
        nodes.append(helper.make_node("Relu", ["y"], ["z"]))
    return make_model(nodes, {"x": (np.float32, [1, c, h, w])}, ["z" if relu else "y"],
                      initializers=inits)


# (C, H, W, F, kernel, stride, pad)
CASES = [
    (16, 14, 14, 32, 3, 1, 1),  # 3x3, OW 14 (register tile 7)
    (32, 14, 14, 64, 1, 1, 0),  # 1x1
    (64, 13, 13, 64, 3, 1, 1),  # OW 13 = 8 + 5
    (8, 9, 9, 32, 3, 1, 1),  # OW 9 = 8 + 1
    (256, 7, 7, 32, 3, 1, 1),  # C blocked (kc 64: 128 channels read 144 KiB of filter)
    (24, 15, 15, 96, 1, 2, 0),  # strided 1x1: a strided view of the input
    (16, 12, 12, 1024, 1, 1, 0),  # wide F: forall tiles of several 32-blocks
    (3, 10, 10, 32, 5, 1, 2),  # 5x5
    (16, 10, 17, 64, 3, 1, 1),  # rectangular: OW 17 = 16 + 1
    (24, 14, 14, 144, 1, 1, 0),  # F 144: 16-wide blocks (MobileNetV2's expand conv)
    (16, 13, 13, 48, 3, 1, 1),  # F 48: 16-wide blocks, OW 13
]


@pytest.mark.parametrize("c, h, f, kernel, pad, dilation", [
    (16, 14, 32, 3, 2, 2),  # the input index oh + 2 kh: still a contiguous row of OW pixels
    (32, 20, 48, 3, 3, 3),  # F 48, OW 20
    (16, 17, 64, 5, 2, 1),  # (dilation 1: the reference's case)
], ids=str)
def test_dilated_stride_1_convs_are_packed(c, h, f, kernel, pad, dilation) -> None:
    node = conv_node("x", "w", None, "y", kernel, 1, pad, dilations=[dilation] * 2)
    model = make_model([node], {"x": (np.float32, [1, c, h, h])}, ["y"],
                       initializers={"w": weights(f, c, kernel)})
    assert packed(dlc.compile(model).ir("linalg"))
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("c, h, w, f, kernel, stride, pad", CASES, ids=str)
def test_packed_conv_matches_the_reference(c, h, w, f, kernel, stride, pad) -> None:
    model = single_conv(c, h, w, f, kernel, stride, pad)
    assert packed(dlc.compile(model).ir("linalg"))
    x = RNG.standard_normal((1, c, h, w)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("bias, relu", [(False, False), (False, True), (True, False)])
def test_packed_conv_with_and_without_bias_and_activation(bias: bool, relu: bool) -> None:
    model = single_conv(32, 12, 12, 64, 3, 1, 1, bias=bias, relu=relu)
    assert packed(dlc.compile(model).ir("linalg"))
    x = RNG.standard_normal((1, 32, 12, 12)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("c, h, f, kernel, stride, pad, dilation", [
    (16, 14, 24, 3, 1, 1, 1),  # F not a multiple of 16
    (16, 15, 32, 3, 2, 1, 1),  # strided 3x3
    (16, 14, 32, 3, 2, 2, 2),  # dilated and strided
], ids=str)
def test_other_convs_keep_the_plain_schedule(c, h, f, kernel, stride, pad, dilation) -> None:
    node = conv_node("x", "w", None, "y", kernel, stride, pad, dilations=[dilation] * 2)
    model = make_model([node], {"x": (np.float32, [1, c, h, h])}, ["y"],
                       initializers={"w": weights(f, c, kernel)})
    linalg_ir = dlc.compile(model).ir("linalg")
    assert not packed(linalg_ir) and "vector.fma" in linalg_ir
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def bottleneck(c: int = 64, h: int = 14, mid: int = 32):
    """A ResNet bottleneck: 1x1 -> 3x3 (padded input) -> 1x1 + residual, ReLUs."""
    inits = {"w1": weights(mid, c, 1), "b1": RNG.standard_normal(mid).astype(np.float32),
             "w2": weights(mid, mid, 3), "b2": RNG.standard_normal(mid).astype(np.float32),
             "w3": weights(c, mid, 1), "b3": RNG.standard_normal(c).astype(np.float32)}
    nodes = [conv_node("x", "w1", "b1", "y1", 1), helper.make_node("Relu", ["y1"], ["r1"]),
             conv_node("r1", "w2", "b2", "y2", 3, pad=1),
             helper.make_node("Relu", ["y2"], ["r2"]),
             conv_node("r2", "w3", "b3", "y3", 1), helper.make_node("Add", ["y3", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["z"])]
    return make_model(nodes, {"x": (np.float32, [1, c, h, h])}, ["z"], initializers=inits)


@pytest.mark.parametrize("threads", [1, 2])
def test_bottleneck_writes_in_place(threads: int) -> None:
    model = bottleneck()
    compiled = dlc.compile(model, num_threads=threads)
    assert packed(compiled.ir("linalg"))
    assert "memref.copy" not in compiled.ir("bufferized")  # (padded interior, residual read)
    x = RNG.standard_normal((1, 64, 14, 14)).astype(np.float32)
    (actual,), (expected,) = compiled(x), reference(model, {"x": x})
    assert_same(actual, expected, MATMUL_TOLERANCES, what="output")


def test_concat_of_packed_convs_writes_in_place() -> None:
    # SqueezeNet's fire module, its squeeze conv doubled (a tensor read by both a padded and an
    # unpadded consumer is copied into the padded buffer, packed or not): two expand convs (1x1,
    # 3x3) concatenated along channels, then a max pool
    inits = {"s1": weights(32, 32, 1), "s2": weights(32, 32, 1), "e1": weights(32, 32, 1),
             "e3": weights(64, 32, 3)}
    nodes = [conv_node("x", "s1", None, "q1", 1), helper.make_node("Relu", ["q1"], ["r1"]),
             conv_node("x", "s2", None, "q2", 1), helper.make_node("Relu", ["q2"], ["r2"]),
             conv_node("r1", "e1", None, "a", 1), conv_node("r2", "e3", None, "b", 3, pad=1),
             helper.make_node("Relu", ["a"], ["ra"]), helper.make_node("Relu", ["b"], ["rb"]),
             helper.make_node("Concat", ["ra", "rb"], ["c"], axis=1),
             helper.make_node("MaxPool", ["c"], ["z"], kernel_shape=[3, 3], strides=[2, 2])]
    model = make_model(nodes, {"x": (np.float32, [1, 32, 15, 15])}, ["z"], initializers=inits)
    compiled = dlc.compile(model)
    assert packed(compiled.ir("linalg"))
    assert "memref.copy" not in compiled.ir("bufferized")
    x = RNG.standard_normal((1, 32, 15, 15)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


# (C, H, F, kernel): OWs the register tile does not divide (27 = 3 x 8 + 3, 9 = 8 + 1, 13 is
# one 13-wide tile): the init and the ReLU are still fused into the register tiles, the
# remainder peeled off the register tile loop
@pytest.mark.parametrize("c, h, f, kernel", [(32, 27, 64, 1), (8, 9, 32, 3), (16, 13, 48, 3)],
                         ids=str)
def test_packed_conv_fuses_init_and_relu_into_register_tiles(c, h, f, kernel,
                                                             monkeypatch) -> None:
    from dlc.passes.codegen import packed_conv
    from dlc.runtime import cache

    model = single_conv(c, h, h, f, kernel, 1, kernel // 2)
    graph = model.graph  # NHWC in and out, as a CNN's inner layers once the layout pass ran
    graph.node[0].input[0] = "xt"
    graph.node.insert(0, helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]))
    graph.node[-1].output[0] = "r"
    graph.node.append(helper.make_node("Transpose", ["r"], ["z"], perm=[0, 2, 3, 1]))
    for value, channels in ((graph.input[0], c), (graph.output[0], f)):
        dims = value.type.tensor_type.shape.dim
        dims[1].dim_value, dims[3].dim_value = h, channels
    calls = []
    fused = packed_conv._register_fused_lines
    monkeypatch.setattr(packed_conv, "_register_fused_lines",
                        lambda *args: calls.append(args) or fused(*args))
    with cache.disabled():
        assert packed(dlc.compile(model).ir("linalg"))
    assert len(calls) == 1
    run_both(model, [RNG.standard_normal((1, h, h, c)).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)
