"""The conv schedule (passes/codegen/conv.py): NCHW convs with constant filters computed in NHWC,
against onnx.reference, for tiles that do and do not divide the output width and filters: F and
OW remainders are split off (F = 1000, 40, 24; OW = 13, 111, 7) and deep C is blocked."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import dlc
from dlc.passes.codegen import conv, conv_common, target
from dlc.passes.codegen.conv import Conv
from dlc.runtime import cache
from tests.conftest import MATMUL_TOLERANCES, fma_position, make_model, run_both


@pytest.fixture(autouse=True)
def _direct_convs(monkeypatch):
    """The direct conv schedules are what these tests check: no Winograd (dlc-winograd)."""
    monkeypatch.setenv("DLC_WINOGRAD", "0")


RNG = np.random.default_rng(0)

# (C, H, F, kernel, stride, pad): 3x3, OW 14 (ow tile 7), F 48 (tile 16), F 24 (16 + 8),
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
    assert 0 <= fma_position(dlc.compile(model).ir("linalg"))
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


# (C, H, F, kernel, stride, pad) of NHWC convs with a bias and a ReLU (a CNN's layers once the
# layout pass has cancelled the transposes): strided ones are not packed; their init and ReLU
# are fused into the register tiles (conv._register_fused_lines): ResNet's 7x7/2 stem, a
# MobileNetV2-like 3x3/2 stem, a strided 3x3 with F 48 (register tile 16); OWs the register
# tile does not divide, the remainder peeled off the register tile loop: SqueezeNet's stem
# (OW 111 = 13 x 8 + 7), OW 22 = 2 x 8 + 6
STEM_CASES = [(3, 32, 64, 7, 2, 3), (3, 32, 32, 3, 2, 1), (16, 16, 48, 3, 2, 1),
              (3, 224, 16, 3, 2, 0), (4, 45, 32, 3, 2, 0)]


@pytest.mark.parametrize("c, h, f, kernel, stride, pad", STEM_CASES, ids=lambda v: str(v))
def test_strided_nhwc_conv_fuses_init_and_relu_into_register_tiles(
        c, h, f, kernel, stride, pad, monkeypatch) -> None:
    model = conv_model(c, h, f, kernel, stride, pad)
    graph = model.graph
    graph.node[0].input[0] = "xt"
    graph.node.insert(0, helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]))
    graph.node.append(helper.make_node("Relu", ["y"], ["r"]))
    graph.node.append(helper.make_node("Transpose", ["r"], ["z"], perm=[0, 2, 3, 1]))
    oh = (h + 2 * pad - kernel) // stride + 1
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, oh, oh, f]))
    graph.input[0].type.tensor_type.shape.dim[1].dim_value = h
    graph.input[0].type.tensor_type.shape.dim[3].dim_value = c
    calls = []
    fused = conv._register_fused_lines
    monkeypatch.setattr(conv, "_register_fused_lines",
                        lambda *args: calls.append(args) or fused(*args))
    with cache.disabled():
        dlc.compile(model)
    assert len(calls) == 1
    x = RNG.standard_normal((1, h, h, c)).astype(np.float32)
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
    assert "linalg.conv_2d_nchw_fchw" not in linalg_ir and 0 <= fma_position(linalg_ir)
    x = RNG.standard_normal((1, 16, 12, 12)).astype(np.float32)
    w = RNG.standard_normal((32, 16, 3, 3)).astype(np.float32)
    run_both(model, [x, w], tolerances=MATMUL_TOLERANCES)


# (C, H, F, kernel, stride, pad) whose F or OW the register tiles do not divide: split parts
SPLIT_CASES = [
    (8, 13, 1000, 1, 1, 0),  # F 1000: forall 200 = 192 + 8; OW 13 = 8 + 5 (and 7 + 6 at f 8)
    (16, 13, 40, 3, 1, 1),  # F 40 = 32 + 8, OW 13
    (4, 111, 24, 1, 1, 0),  # F 24 = 16 + 8; OW 111 = 104 + 7 at f 16, 105 + 6 at f 8
    (3, 224, 16, 3, 2, 0),  # SqueezeNet's first conv: OW 111, strided
    (8, 9, 40, 3, 1, 1),  # OW 9 = 8 + 1
    (256, 7, 32, 3, 1, 1),  # OW 7, C blocked (kc 64: 128 channels read 144 KiB of filter)
]


@pytest.mark.parametrize("c, h, f, kernel, stride, pad", SPLIT_CASES, ids=lambda v: str(v))
def test_split_conv_matches_the_reference(c, h, f, kernel, stride, pad) -> None:
    model = conv_model(c, h, f, kernel, stride, pad)
    model.graph.node.append(helper.make_node("Relu", ["y"], ["z"]))  # (a fused epilogue)
    model.graph.output[0].name = "z"
    linalg_ir = dlc.compile(model).ir("linalg")
    assert "linalg.conv_2d_nhwc_hwcf" not in linalg_ir and 0 <= fma_position(linalg_ir)
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def test_remainders_are_split_into_full_register_tiles() -> None:
    with target.use("avx512"):  # (AVX-512's tiles; AVX2's: test_cpu_target.py)
        _remainders_are_split_into_full_register_tiles()


def _remainders_are_split_into_full_register_tiles() -> None:
    assert conv_common.forall_filter_tile(1000) == 200 and conv.filter_parts(200) == [192, 8]
    assert conv.filter_parts(64) == [64] and conv.filter_parts(24) == [16, 8]
    assert conv.filter_parts(12) == [12] and conv.filter_parts(16) == [16]
    # (RegNetY's 440 channels: forall tiles of 88, no 24-wide register tile left)
    assert conv_common.forall_filter_tile(440) == 88 and conv.filter_parts(88) == [64, 16, 8]
    assert conv.filter_parts(440) == [416, 16, 8]
    assert conv_common.forall_filter_tile(48) == 16 and conv_common.forall_filter_tile(40) == 40
    # an OW up to 14 without a divisor in [4, 8] is one register tile, a wider one is split
    assert conv.ow_parts(13, 16) == [13] and conv.part_ow_tile(13, 16) == 13
    assert conv.ow_parts(13, 32) == [8, 5]  # (26 accumulators would not fit the registers)
    assert conv.ow_parts(11, 32) == [11] and conv.part_ow_tile(11, 32) == 11
    assert conv.ow_parts(13, 13) == [8, 5]  # (a 13-wide ow tile would equal the f tile)
    assert conv.ow_parts(111, 32) == [104, 7] and conv.ow_parts(17, 32) == [16, 1]
    assert conv.ow_parts(23, 8) == [21, 2]  # (an 8-wide ow tile would equal the f tile)
    assert conv.ow_parts(29, 5) == [28, 1]  # (a remainder 5 would equal the f tile)
    assert conv.ow_parts(14, 32) == [14] and conv.part_ow_tile(14, 32) == 7
    assert conv.ow_parts(7, 32) == [7] and conv.part_ow_tile(5, 8) == 5


def test_deep_convs_block_the_channel_reduction() -> None:
    with target.use(target.AVX2):  # (128 KiB of filter per block)
        _blocks_of_128_kib()
    with target.use(target.AVX512):  # (512 KiB)
        assert conv.channel_block(Conv(1, 7, 7, 512, 512, 3, 3), 32) == 256  # (288 KiB)
        assert conv.channel_block(Conv(1, 7, 7, 512, 2048, 1, 1), 32) == 2048  # (256 KiB)
        # F = 2048: each channel's filter row is its own page; 128 pages at most (the TLB)
        assert conv.channel_block(Conv(1, 7, 7, 32, 512, 1, 1, f_total=2048), 32) == 128


def _blocks_of_128_kib() -> None:
    assert conv.channel_block(Conv(1, 7, 7, 512, 512, 3, 3), 32) == 64  # (72 KiB)
    assert conv.channel_block(Conv(1, 14, 14, 1024, 1024, 1, 1), 32) == 1024  # (128 KiB)
    assert conv.channel_block(Conv(1, 14, 14, 1024, 2048, 1, 1), 32) == 1024
    assert conv.channel_block(Conv(1, 56, 56, 64, 64, 3, 3), 32) == 64  # (72 KiB: whole)
    assert conv.channel_block(Conv(1, 28, 28, 32, 48, 3, 3), 32) == 48  # (54 KiB: whole)
    # F = 2048: each channel's filter row is its own page; 128 pages at most (the TLB)
    assert conv.channel_block(Conv(1, 7, 7, 32, 512, 1, 1, f_total=2048), 32) == 128
    assert conv.channel_block(Conv(1, 7, 7, 32, 512, 1, 1, f_total=256), 32) == 512


# (C, H, F, kernel, stride, groups): AlexNet-like group 2 of 64 filters (each group's filter
# packed); a ShuffleNet-like 1x1 with 3 groups of 16, a strided 3x3 with 4 groups of 8 filters
# (at most convert_layout.GROUPED_WIDTH filters per group) and 32 groups (more than
# MAX_GROUPS): one grouped conv (codegen/grouped_conv.py)
GROUPED = [(128, 13, 128, 3, 1, 2), (48, 14, 48, 1, 1, 3), (32, 15, 32, 3, 2, 4),
           (64, 6, 64, 3, 1, 32)]


@pytest.mark.parametrize("c, h, f, kernel, stride, groups", GROUPED, ids=str)
def test_grouped_conv_is_one_scheduled_conv_per_group(c, h, f, kernel, stride, groups) -> None:
    from dlc.passes.graph import convert_layout

    weight = RNG.standard_normal((f, c // groups, kernel, kernel)) / np.sqrt(c // groups * 9)
    inits = {"w": weight.astype(np.float32), "b": RNG.standard_normal(f).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[kernel, kernel],
                              strides=[stride, stride], pads=[kernel // 2] * 4, group=groups),
             helper.make_node("Relu", ["y"], ["z"])]
    model = make_model(nodes, {"x": (np.float32, [1, c, h, h])}, ["z"], initializers=inits)
    compiled = dlc.compile(model)
    split = groups <= convert_layout.MAX_GROUPS and f // groups > convert_layout.GROUPED_WIDTH
    assert compiled.ir("dlc").count('"dlc.conv_nhwc"') == (groups if split else 1)
    linalg = compiled.ir("linalg")
    assert "linalg.conv_2d_ngchw" not in linalg and "linalg.conv_2d_nhwgc" not in linalg
    assert (fma_position(linalg) >= 0) == split and ("math.fma" in linalg) != split
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def test_packed_outer_tiles_leave_work_for_the_threads() -> None:
    """A packed conv of one filter block (MobileNetV2's 28 x 28 x 32) takes fewer rows per
    forall tile, so that the threads have MIN_TILES tiles (was: one tile of all 28 rows)."""
    from dlc.passes.codegen import packed_conv

    with target.use(target.AVX512):
        problem = Conv(1, 28, 28, 32, 144, 1, 1, packed=True)
        assert packed_conv.outer_tile(problem) == (7, 32)
        wide = Conv(1, 14, 14, 256, 256, 3, 3, packed=True)  # (enough filter tiles: all rows)
        oh, f = packed_conv.outer_tile(wide)
        assert (14 // oh) * (256 // f) >= 4 and oh == 14


def test_threads_get_balanced_conv_tiles() -> None:
    """For threads, a conv's forall has a tile count the threads share evenly: SqueezeNet's
    3x3 16 -> 64 on 55 x 55 took 5 tiles of 11 rows (3 rounds on one of 2 threads), now 10 of
    11 rows and 32 channels; MobileNetV2's stem (unpacked, 112 rows) 7 tiles of 16 rows, now
    8 of 14. Single-threaded the heuristic's tiles stay."""
    from dlc.passes.codegen import packed_conv

    assert target.balance(5, 2) == 5 / 6 and target.balance(8, 2) == 1.0
    assert target.balance(7) == 1.0  # (one thread)
    squeeze = Conv(1, 55, 55, 64, 16, 3, 3, packed=True)
    stem = Conv(1, 112, 112, 32, 3, 3, 3)
    with target.use(target.AVX512):
        assert packed_conv.outer_tile(squeeze) == (11, 64)
        assert conv_common.outer(stem).tile_shape[1] == 16
        with target.use_threads(2):
            oh, f = packed_conv.outer_tile(squeeze)
            assert (55 // oh) * (64 // f) % 2 == 0 and oh * f == 11 * 32
            assert conv_common.outer(stem).tile_shape[1] == 14
