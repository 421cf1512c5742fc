"""The grouped convolution schedule (passes/codegen/grouped_conv.py): a grouped conv (not
depthwise) with a constant filter runs NHWC as one `linalg.conv_2d_nhwgc_gfhwc`, rewritten into
a generic of FMAs over (n, oh, ow, g, f, c) with its kernel taps unrolled, the filter packed at
compile time, vectorized over the output channels of a group.

Numbers against onnx.reference across group counts and widths (8 and 16 channels per group as
RegNet and EfficientViT have, 4 and 5: narrower than a vector, 32), kernel sizes, strides,
dilations, output widths the register tile does not divide, batches, bias / no bias / ReLU,
threads; and no NaivePathWarning for any of them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from dlc.passes.codegen import grouped_conv, target
from dlc.runtime import cache
from tests.conftest import MATMUL_TOLERANCES, assert_same, make_model, reference

RNG = np.random.default_rng(5)


def grouped_model(groups: int, c: int, f: int, h: int, kernel: int = 3, stride: int = 1,
                  pad: int = 1, dilation: int = 1, bias: bool = True, relu: bool = True,
                  n: int = 1, w: int | None = None):
    """Conv (C = groups * c input and groups * f output channels) [+ Relu]."""
    weight = RNG.standard_normal((groups * f, c, kernel, kernel)) / np.sqrt(c * kernel**2)
    inits = {"w": weight.astype(np.float32)}
    if bias:
        inits["b"] = RNG.standard_normal(groups * f).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"],
                              kernel_shape=[kernel, kernel], strides=[stride, stride],
                              pads=[pad] * 4, dilations=[dilation] * 2, group=groups)]
    if relu:
        nodes.append(helper.make_node("Relu", ["y"], ["z"]))
    shape = [n, groups * c, h, w or h]
    return make_model(nodes, {"x": (np.float32, shape)}, ["z" if relu else "y"],
                      initializers=inits)


def compile_checked(model, threads: int = 1) -> dlc.CompiledModel:
    """Compile (no cache), with no NaivePathWarning and the grouped conv scheduled."""
    with warnings.catch_warnings(), cache.disabled():
        warnings.simplefilter("error", NaivePathWarning)
        compiled = dlc.compile(model, num_threads=threads)
    linalg_ir = compiled.ir("linalg")
    assert "linalg.conv_2d" not in linalg_ir and "math.fma" in linalg_ir
    return compiled


def check(model, threads: int = 1) -> None:
    compiled = compile_checked(model, threads)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = RNG.standard_normal(shape).astype(np.float32)
    (actual,), (expected,) = compiled(x), reference(model, {"x": x})
    assert_same(actual, expected, MATMUL_TOLERANCES, what="output")


# (groups, c, f, h, kernel, stride, pad)
CASES = [
    (26, 8, 8, 14, 3, 1, 1),  # RegNetY-400MF's stage 3
    (26, 8, 8, 28, 3, 2, 1),  # ... its strided first block
    (55, 8, 8, 7, 3, 1, 1),  # ... stage 4: OW 7
    (24, 16, 16, 7, 1, 1, 0),  # EfficientViT-B0's 1x1 grouped conv (OW 7 = 5 + 2 on AVX2)
    (13, 8, 8, 13, 3, 1, 1),  # OW 13: no divisor in [4, 12], its last tile peeled
    (20, 4, 4, 10, 3, 1, 1),  # 4 channels per group: less than a vector
    (17, 3, 5, 11, 3, 1, 1),  # odd widths
    (4, 32, 32, 9, 3, 1, 1),  # 32 per group, 4 groups (ResNeXt-like; no split per group)
    (18, 8, 16, 12, 5, 1, 2),  # 5x5, more filters than channels per group
    (20, 8, 8, 15, 3, 2, 0),  # strided, unpadded, odd input
    (18, 8, 56, 9, 3, 1, 1),  # 56 per group: F tiled by 8 on AVX2 (7 vectors: too many)
]


@pytest.mark.parametrize("groups, c, f, h, kernel, stride, pad", CASES, ids=str)
def test_grouped_conv_matches_the_reference(groups, c, f, h, kernel, stride, pad) -> None:
    check(grouped_model(groups, c, f, h, kernel, stride, pad))


@pytest.mark.parametrize("bias, relu", [(False, False), (False, True), (True, False)])
def test_grouped_conv_with_and_without_bias_and_activation(bias: bool, relu: bool) -> None:
    check(grouped_model(26, 8, 8, 14, bias=bias, relu=relu))


def test_dilated_batched_rectangular_grouped_conv() -> None:
    check(grouped_model(24, 8, 8, 12, pad=2, dilation=2, n=2, w=17))


def test_peeled_register_tile_writes_in_place() -> None:
    # OW 7 with 16 channels per group (AVX2: at most 6 positions): 5 + 2, the last tile peeled
    # off with the bias init and the ReLU fused, written in place (no buffer, no copy)
    model = grouped_model(24, 16, 16, 7, 1, 1, 0)
    with target.use("avx2"):
        compiled = compile_checked(model)
        bufferized = compiled.ir("bufferized")
    assert "memref.alloc()" not in bufferized.split("scf.forall", 1)[1]
    x = RNG.standard_normal((1, 24 * 16, 7, 7)).astype(np.float32)
    (actual,), (expected,) = compiled(x), reference(model, {"x": x})
    assert_same(actual, expected, MATMUL_TOLERANCES, what="output")


@pytest.mark.parametrize("target_name", ["avx2", "avx512"])
def test_grouped_conv_on_each_target(target_name: str) -> None:
    # (the target sets the register tiles; the machine code is the host's either way)
    model = grouped_model(24, 16, 16, 14)
    with target.use(target_name):
        compiled = compile_checked(model)
        x = RNG.standard_normal((1, 24 * 16, 14, 14)).astype(np.float32)
        (actual,), (expected,) = compiled(x), reference(model, {"x": x})
    assert_same(actual, expected, MATMUL_TOLERANCES, what="output")


def test_grouped_conv_on_threads() -> None:
    check(grouped_model(26, 8, 8, 14), threads=2)


def test_regnet_block_schedules_every_conv() -> None:
    # 1x1 -> ReLU -> grouped 3x3 -> ReLU -> 1x1 + residual -> ReLU: the grouped conv's init and
    # ReLU are fused into its register tiles (no separate pass over its output)
    groups, width, h = 13, 8, 14
    channels = groups * width

    def w(f, c, k):
        return (RNG.standard_normal((f, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)

    inits = {"w1": w(channels, channels, 1), "w2": w(channels, width, 3),
             "w3": w(channels, channels, 1), "b2": RNG.standard_normal(channels).astype(
                 np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["y1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["y1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y2"], kernel_shape=[3, 3],
                              pads=[1] * 4, group=groups),
             helper.make_node("Relu", ["y2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["y3"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["y3", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["z"])]
    model = make_model(nodes, {"x": (np.float32, [1, channels, h, h])}, ["z"],
                       initializers=inits)
    compiled = compile_checked(model)
    assert compiled.ir("dlc").count('"dlc.transpose"') == 2  # (NHWC from end to end)
    x = RNG.standard_normal((1, channels, h, h)).astype(np.float32)
    (actual,), (expected,) = compiled(x), reference(model, {"x": x})
    assert_same(actual, expected, MATMUL_TOLERANCES, what="output")


def test_register_tiles() -> None:
    def problem(ow: int, f: int) -> grouped_conv.Grouped:
        return grouped_conv.Grouped(1, 7, ow, 26, f, 8, 3, 3)

    with target.use("avx2"):  # (12 accumulators of 8 lanes)
        assert grouped_conv.ow_register(problem(14, 8)) == (7, False)
        assert grouped_conv.ow_register(problem(56, 8)) == (7, False)  # (not 8: F is 8)
        assert grouped_conv.ow_register(problem(12, 16)) == (6, False)
        assert grouped_conv.ow_register(problem(13, 8)) == (11, True)  # (no last tile of 1)
        assert grouped_conv.ow_register(problem(7, 16)) == (5, True)
        assert grouped_conv.ow_register(problem(3, 8)) == (3, False)
    with target.use("avx512"):
        # (F = 16 fills a vector: at most 4 wide, the taps' broadcasts spilled at 14)
        assert grouped_conv.ow_register(problem(14, 16)) == (4, True)
        assert grouped_conv.ow_register(problem(28, 32)) == (4, False)
        assert grouped_conv.ow_register(problem(14, 8)) == (14, False)  # (half a vector)


def test_other_grouped_convs_stay_correct() -> None:
    # 2 groups of 64 filters: one conv per group (conv.py); 17 groups of 50 (no register width
    # divides 50) and a filter that is an input: the naive path, with its warning
    def run(model, feeds: dict[str, np.ndarray], naive: bool) -> str:
        # (the AVX2 target's register widths, whatever the host: AVX-512's differ)
        with warnings.catch_warnings(record=True) as caught, cache.disabled(), \
                target.use("avx2"):
            warnings.simplefilter("always")
            compiled = dlc.compile(model)
        assert any(w.category is NaivePathWarning for w in caught) == naive
        actual, expected = compiled(feeds)[0], reference(model, feeds)[0]
        assert_same(actual, expected, MATMUL_TOLERANCES, what="output")
        return compiled.ir("dlc")

    split = run(grouped_model(2, 64, 64, 6),
                {"x": RNG.standard_normal((1, 128, 6, 6)).astype(np.float32)}, False)
    assert split.count('"dlc.conv_nhwc"') == 2
    run(grouped_model(17, 4, 50, 8),
        {"x": RNG.standard_normal((1, 68, 8, 8)).astype(np.float32)}, True)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1] * 4,
                            group=20)
    model = make_model([node], {"x": (np.float32, [1, 160, 9, 9]),
                                "w": (np.float32, [160, 8, 3, 3])}, ["y"])
    run(model, {"x": RNG.standard_normal((1, 160, 9, 9)).astype(np.float32),
                "w": RNG.standard_normal((160, 8, 3, 3)).astype(np.float32)}, True)


@pytest.mark.parametrize("bias, relu, h", [(True, True, 13), (False, False, 14),
                                           (True, False, 7)])
def test_grouped_conv_without_greedy_fusion(bias: bool, relu: bool, h: int,
                                            monkeypatch) -> None:
    # where one greedy fuse cannot build the forall (another tileable producer would be
    # fused), the init and the epilogue are fused into it with fuse_into_containing_op and
    # tiled on their own (`_forall_lines`; OW 13: its last register tile split off)
    from dlc.passes.codegen import fusion_plan

    monkeypatch.setattr(fusion_plan, "fuses_exactly", lambda op, scheduled: False)
    calls = []
    forall = grouped_conv._forall_lines
    monkeypatch.setattr(grouped_conv, "_forall_lines",
                        lambda *args: calls.append(args) or forall(*args))
    check(grouped_model(26, 8, 8, h, bias=bias, relu=relu))
    assert len(calls) == 1
