"""Epilogue fusion (passes/codegen/fusion.py): the elementwise consumer of a matmul/conv and the
init of its accumulator run inside the contraction's outer tile loop (an scf.forall), checked
in the IR and against onnx.reference, for shapes that do and do not divide the tiles."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import MATMUL_TOLERANCES, fma_position, make_model, run_both


@pytest.fixture(autouse=True)
def _direct_convs(monkeypatch):
    """The direct conv schedules are what these tests check: no Winograd (dlc-winograd)."""
    monkeypatch.setenv("DLC_WINOGRAD", "0")


RNG = np.random.default_rng(0)


def _forall_body(ir_text: str) -> str:
    """The text of the first scf.forall (empty when there is none)."""
    start = ir_text.find("scf.forall")
    end = ir_text.find("scf.forall.in_parallel", start)
    return ir_text[start:end] if start >= 0 and end > start else ""


def _conv(inits: dict, name: str, x: str, y: str, c: int, f: int, stride: int = 1):
    inits[f"w{name}"] = (RNG.standard_normal((f, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    inits[f"b{name}"] = RNG.standard_normal(f).astype(np.float32)
    return helper.make_node("Conv", [x, f"w{name}", f"b{name}"], [y], kernel_shape=[3, 3],
                            pads=[1] * 4, strides=[stride] * 2)


def conv_model(c: int, h: int, f: int, epilogue: str, stride: int = 1):
    """conv+bias+relu, or a residual block: relu(conv(y1) + y1), y1 = relu(conv(x))."""
    inits: dict = {}
    nodes = [_conv(inits, "1", "x", "y", c, f, stride), helper.make_node("Relu", ["y"], ["z"])]
    if epilogue == "residual":
        nodes[-1].output[0] = "y1"
        nodes += [_conv(inits, "2", "y1", "y2", f, f), helper.make_node("Add", ["y2", "y1"], ["s"]),
                  helper.make_node("Relu", ["s"], ["z"])]
    model = make_model(nodes, {"x": (np.float32, [1, c, h, h])}, ["z"], initializers=inits)
    return model, (h + 2 - 3) // stride + 1


# (C, H, F, stride): one f tile / two f tiles (forall of 2), ow tile 7 (OW 14), F 48 (tile 16)
# and a strided conv whose OW 9 has no divisor near 8
CONV_CASES = [(16, 14, 32, 1), (16, 20, 64, 1), (8, 14, 48, 1), (8, 18, 32, 2)]


@pytest.mark.parametrize("c, h, f, stride", CONV_CASES, ids=str)
@pytest.mark.parametrize("epilogue", ["relu", "residual"])
def test_conv_epilogue_is_fused_and_correct(c, h, f, stride, epilogue) -> None:
    model, _ = conv_model(c, h, f, epilogue, stride)
    compiled = dlc.compile(model)
    linalg = compiled.ir("linalg")
    body = _forall_body(linalg) or linalg  # (a forall of one iteration is folded away)
    assert fma_position(body) >= 0 and "arith.maximumf" in body
    assert fma_position(body) < body.index("arith.maximumf")  # epilogue after the conv
    if f > 32:
        assert "scf.forall" in linalg
    # (the residual add is a named linalg.add, which linalg-fuse-elementwise-ops does not
    # fuse with the relu: only the first conv's relu is fused in that model today)
    run_both(model, [RNG.standard_normal((1, c, h, h)).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)


def matmul_model(m: int, k: int, n: int):
    inits = {"w": (RNG.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32),
             "b": RNG.standard_normal(n).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]),
             helper.make_node("Add", ["y", "b"], ["s"]),
             helper.make_node("Tanh", ["s"], ["t"]),  # gelu-ish: one generic after fusion
             helper.make_node("Mul", ["t", "half"], ["z"])]
    inits["half"] = np.full(1, 0.5, np.float32)
    return make_model(nodes, {"x": (np.float32, [m, k])}, ["z"], initializers=inits)


# (M, K, N): 2x2 outer tiles of 128x512; M and N with remainders (132 = 128 + 4, N 40)
MATMUL_CASES = [(256, 64, 1024), (132, 48, 40), (64, 96, 96)]


@pytest.mark.parametrize("m, k, n", MATMUL_CASES, ids=str)
def test_matmul_bias_gelu_is_fused_and_correct(m, k, n) -> None:
    model = matmul_model(m, k, n)
    linalg = dlc.compile(model).ir("linalg")
    body = _forall_body(linalg) or linalg
    assert "vector.fma" in body and "math.copysign" in body  # (tanh's polynomial)
    assert body.index("vector.fma") < body.index("math.copysign")
    if (m, n) == (256, 1024):
        assert re.search(r"scf\.forall \(%\w+, %\w+\) = \(0, 0\) to \(256, 1024\) "
                         r"step \(128, 512\)", linalg)
    run_both(model, [RNG.standard_normal((m, k)).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)


def test_conv_result_used_twice_keeps_the_epilogue_separate() -> None:
    model, _ = conv_model(16, 20, 64, "relu")
    model.graph.output.append(model.graph.value_info[0])  # y used twice
    assert model.graph.output[1].name == "y"
    linalg = dlc.compile(model).ir("linalg")
    body = _forall_body(linalg)
    assert fma_position(body) >= 0 and "arith.maximumf" not in body
    assert "arith.maximumf" in linalg  # (scheduled on its own, after the forall)
    x = RNG.standard_normal((1, 16, 20, 20)).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def test_init_shared_by_two_convs_is_fused_into_both() -> None:
    # two 1x1 convs with the same (splat) bias into a residual add: CSE makes their bias
    # broadcast one op, which each conv fuses a clone of; the elementwise family must not
    # schedule it as well (it flattened it to 1-D and both conv schedules failed)
    inits = {"w1": np.full((64, 32, 1, 1), 0.02, np.float32),
             "w2": np.full((64, 32, 1, 1), 0.03, np.float32),
             "b": np.full(64, 0.5, np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b"], ["y1"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["x2", "w2", "b"], ["y2"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["y1", "y2"], ["s"]),
             helper.make_node("Relu", ["s"], ["z"])]
    model = make_model(nodes, {"x": (np.float32, [1, 32, 28, 28]),
                               "x2": (np.float32, [1, 32, 28, 28])}, ["z"], initializers=inits)
    linalg = dlc.compile(model).ir("linalg")  # (the suite's DLC_STRICT_SCHEDULE: no fallback)
    assert "linalg.conv_2d" not in linalg and fma_position(linalg) >= 0
    run_both(model, [RNG.standard_normal((1, 32, 28, 28)).astype(np.float32) for _ in range(2)],
             tolerances=MATMUL_TOLERANCES)



@pytest.mark.parametrize("first", ["zero 1x1", "3x3/2"])
def test_residual_add_of_two_convs_is_fused_into_one(first: str) -> None:
    # ResNet-D's first block of a stage: relu(conv3(y) + downsample(x)), two convs into one
    # add. The first conv fuses the add in place (fusion.write_in_place); the second, seeing
    # the rewritten add read it first, claimed it too, its packing rewrote the add in 5-D and
    # the first conv's schedule, when not packed, failed ("only TilingInterface ops"): naive
    # loops, timm's ResNet-26-D 4.2x onnxruntime. timm zero-initialises the last conv of a
    # block (a splat filter once the BN is folded): it is packed, as a splat.
    stride = 1 if first == "zero 1x1" else 2
    if first == "zero 1x1":
        w3, kernel = np.zeros((128, 32, 1, 1), np.float32), 1
    else:
        w3, kernel = (RNG.standard_normal((128, 32, 3, 3)) / 17).astype(np.float32), 3
    inits = {"w1": (RNG.standard_normal((32, 32, 1, 1)) / 6).astype(np.float32),
             "w3": w3, "wd": (RNG.standard_normal((128, 32, 1, 1)) / 6).astype(np.float32),
             "b3": RNG.standard_normal(128).astype(np.float32),
             "bd": RNG.standard_normal(128).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["y0"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["y0"], ["y"]),
             helper.make_node("Conv", ["y", "w3", "b3"], ["c3"], kernel_shape=[kernel] * 2,
                              pads=[kernel // 2] * 4, strides=[stride] * 2),
             helper.make_node("Conv", ["x", "wd", "bd"], ["d"], kernel_shape=[1, 1],
                              strides=[stride] * 2),
             helper.make_node("Add", ["c3", "d"], ["s"]),
             helper.make_node("Relu", ["s"], ["z"])]
    model = make_model(nodes, {"x": (np.float32, [1, 32, 28, 28])}, ["z"], initializers=inits)
    linalg = dlc.compile(model).ir("linalg")  # (the suite's DLC_STRICT_SCHEDULE: no fallback)
    assert "linalg.conv_2d" not in linalg and fma_position(linalg) >= 0
    if first == "zero 1x1":
        assert "vector.fma" not in linalg  # (all packed, the zero filter too: no conv.py kernel)
    run_both(model, [RNG.standard_normal((1, 32, 28, 28)).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)


def test_residual_add_of_a_shared_conv_result_and_a_conv() -> None:
    # MobileNetV2's residual: a = conv1(x) (1x1, packed) read by conv2 and by the add, then
    # a + conv2(a). The add is no conv's epilogue when dlc-schedule matches (conv2's reads a
    # contraction's result first, and conv1's result has two users): the elementwise family
    # takes it. Once conv1 was packed, a reached the add through a collapse_shape, conv2 took
    # the add as its epilogue and its packing erased it: the elementwise family's prepare then
    # read the erased op (a segmentation fault compiling MobileNetV2)
    inits = {"w1": (RNG.standard_normal((32, 144, 1, 1)) / 12).astype(np.float32),
             "b1": RNG.standard_normal(32).astype(np.float32),
             "w2": (RNG.standard_normal((32, 32, 1, 1)) / 6).astype(np.float32),
             "b2": RNG.standard_normal(32).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["a", "w2", "b2"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["a", "c"], ["z"])]
    model = make_model(nodes, {"x": (np.float32, [1, 144, 28, 28])}, ["z"], initializers=inits)
    run_both(model, [RNG.standard_normal((1, 144, 28, 28)).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)


def test_consumer_of_an_epilogue_with_an_unscheduled_input_keeps_its_schedule() -> None:
    # MobileOne's depthwise block: a small 1x1 stride-2 depthwise conv (below min-volume:
    # unscheduled) plus a scheduled 3x3 one, Add, Relu (the 3x3's epilogue), then a 1x1 conv.
    # The 1x1 conv's greedy fuse pulled the small conv through the epilogue into its tiles,
    # failed to vectorize it, and the 1x1 conv fell back to naive loops (38x onnxruntime)
    import warnings

    rng = np.random.default_rng(0)
    c, f = 128, 256
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["d0"], group=c, kernel_shape=[1, 1],
                         strides=[2, 2]),
        helper.make_node("Conv", ["x", "w3"], ["d1"], group=c, kernel_shape=[3, 3],
                         pads=[1] * 4, strides=[2, 2]),
        helper.make_node("Add", ["d0", "d1"], ["d2"]), helper.make_node("Relu", ["d2"], ["d"]),
        helper.make_node("Conv", ["d", "w"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["y"])]
    inits = {"w1": rng.standard_normal((c, 1, 1, 1)).astype(np.float32),
             "w3": rng.standard_normal((c, 1, 3, 3)).astype(np.float32),
             "w": (rng.standard_normal((f, c, 1, 1)) * 0.1).astype(np.float32)}
    model = make_model(nodes, {"x": (np.float32, [1, c, 28, 28])}, ["y"], initializers=inits)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dlc.compile(model, num_threads=1)
    assert not [w for w in caught if issubclass(w.category, dlc.NaivePathWarning)]
    run_both(model, {"x": rng.standard_normal((1, c, 28, 28)).astype(np.float32)},
             tolerances={np.dtype(np.float32): (1e-4, 1e-4)})
