"""The depthwise schedule (passes/codegen/depthwise.py): NHWC depthwise convolutions against
numpy, for shapes whose OW and C do and do not divide the tiles, strides and dilations.

dlc lowers ONNX models to NCHW ops, so these tests compile small linalg modules directly
through the -O2 pipeline (`compile_linalg`, also used by test_pool.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from dlc.compiler import CompiledModel, LoweredModel, run_stage
from dlc.dialects.core import make_context
from dlc.options import merge
from dlc.passes.codegen.depthwise import ow_tile
from dlc.passes.pipelines import stage_pipelines
from dlc.runtime.jit import JitFunction, Signature, TensorSpec
from dlc.timings import Timings

RNG = np.random.default_rng(0)


def compile_linalg(text: str) -> CompiledModel:
    """Compile a linalg-on-tensors module (one f32 function @main) with the -O2 pipeline."""
    context = make_context()
    with context:
        module = ir.Module.parse(text)
        main = module.body.operations[0]
        main.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        kind = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        signature = Signature(
            tuple(TensorSpec(f"x{i}", tuple(t.shape), np.float32) for i, t in
                  enumerate(kind.inputs)),
            tuple(TensorSpec(f"y{i}", tuple(t.shape), np.float32) for i, t in
                  enumerate(kind.results)))
        snapshots = {}
        for stage, pipeline in stage_pipelines(2).items():
            if stage != "dlc":
                run_stage(module, stage, pipeline)
                snapshots[stage] = module.operation.clone()
        lowered = LoweredModel(context, snapshots, 2, Timings())
        return CompiledModel(JitFunction(module, signature), merge(None, opt_level=2), 0.0,
                             lowered=lowered)


def depthwise_text(x: tuple[int, ...], k: int, stride: int, dilation: int) -> tuple[str, list]:
    n, h, w, c = x
    reach = dilation * (k - 1)
    y = [n, (h - reach - 1) // stride + 1, (w - reach - 1) // stride + 1, c]
    xt, wt = f"tensor<{'x'.join(map(str, x))}xf32>", f"tensor<{k}x{k}x{c}xf32>"
    yt = f"tensor<{'x'.join(map(str, y))}xf32>"
    return f"""
func.func @main(%x: {xt}, %w: {wt}, %b: {yt}) -> {yt} {{
  %0 = linalg.depthwise_conv_2d_nhwc_hwc {{dilations = dense<{dilation}> : tensor<2xi64>,
      strides = dense<{stride}> : tensor<2xi64>}} ins(%x, %w : {xt}, {wt}) outs(%b : {yt}) -> {yt}
  return %0 : {yt}
}}""", y


def depthwise_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int,
                        dilation: int) -> np.ndarray:
    out = b.astype(np.float64)
    oh, ow = b.shape[1:3]
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            rows = slice(i * dilation, i * dilation + (oh - 1) * stride + 1, stride)
            cols = slice(j * dilation, j * dilation + (ow - 1) * stride + 1, stride)
            out += x[:, rows, cols, :].astype(np.float64) * w[i, j]
    return out.astype(np.float32)


# (input NHWC, kernel, stride, dilation): OW 16 / C 32 (tiles 8 x 32); OW 19 (split 16 + 3)
# with C 48 (tile 16); strided, C 40 (split 32 + 8, ow tile 4 != c tile 8) with N 2;
# 5x5 with OW 9 (split 8 + 1); C 8 with OW 24 (ow tile 6, not 8 = c); dilation 2; 1x1 (a
# one-iteration kh loop: nothing to hoist)
CASES = [
    ((1, 18, 18, 32), 3, 1, 1),
    ((1, 12, 21, 48), 3, 1, 1),
    ((2, 17, 17, 40), 3, 2, 1),
    ((1, 14, 13, 16), 5, 1, 1),
    ((1, 26, 26, 8), 3, 1, 1),
    ((1, 16, 16, 32), 3, 1, 2),
    ((1, 32, 32, 32), 1, 1, 1),
]


@pytest.mark.parametrize("x_shape, k, stride, dilation", CASES, ids=lambda v: str(v))
def test_depthwise_matches_numpy(x_shape, k, stride, dilation) -> None:
    text, y_shape = depthwise_text(x_shape, k, stride, dilation)
    model = compile_linalg(text)
    linalg_ir = model.ir("linalg")
    assert "linalg.depthwise_conv_2d" not in linalg_ir and "vector.fma" in linalg_ir
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal((k, k, x_shape[3])).astype(np.float32)
    b = RNG.standard_normal(y_shape).astype(np.float32)
    expected = depthwise_reference(x, w, b, stride, dilation)
    np.testing.assert_allclose(model(x, w, b)[0], expected, rtol=1e-5, atol=1e-5)


def test_small_depthwise_keeps_the_naive_path() -> None:
    text, _ = depthwise_text((1, 6, 6, 16), 3, 1, 1)  # 4*4*16*9 taps < 32^3
    assert "linalg.depthwise_conv_2d_nhwc_hwc" in compile_linalg(text).ir("linalg")


@pytest.mark.parametrize("ow, c, tile", [(112, 32, 8), (14, 32, 7), (24, 8, 6), (8, 8, 4),
                                         (3, 16, 3), (16, 16, 8)])
def test_ow_tile_avoids_equal_inner_tiles(ow: int, c: int, tile: int) -> None:
    assert ow_tile(ow, c) == tile


@pytest.mark.parametrize("x_shape, stride, registers", [
    ((1, 56, 30, 48), 1, True),  # OW 30: register tiles of 6
    ((1, 13, 13, 32), 1, True),  # OW 13: tiles of 8, the last (5) peeled
    ((1, 34, 34, 64), 2, True),  # strided, OW 17: tiles of 8, the last (1) peeled
    ((1, 111, 111, 40), 2, False),  # C 40 (split 32 + 8): the init fused into the forall only
], ids=str)
def test_bias_and_relu6_fused_into_the_row_blocks(x_shape, stride, registers,
                                                   monkeypatch) -> None:
    # a MobileNet layer (depthwise 3x3 + bias + ReLU6, NHWC in and out: the layout pass
    # cancels the transposes): one forall of row blocks holds the bias init, the FMAs and the
    # clip, so that the output is written once (2 blocks of 28 rows here); where C is a
    # multiple of 16, inside each [ow, c] register tile (depthwise.register_fused)
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import dlc
    from dlc.passes.codegen import depthwise

    taken = []
    fused = depthwise.register_fused
    monkeypatch.setattr(depthwise, "register_fused",
                        lambda *args: taken.append(fused(*args)) or taken[-1])

    c = x_shape[3]
    w = RNG.standard_normal((c, 1, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(c).astype(np.float32)
    oh, ow = ((s + 2 - 3) // stride + 1 for s in x_shape[1:3])
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xt", "w", "b"], ["y"], kernel_shape=[3, 3],
                              strides=[stride] * 2, pads=[1] * 4, group=c),
             helper.make_node("Clip", ["y", "lo", "hi"], ["r"]),
             helper.make_node("Transpose", ["r"], ["o"], perm=[0, 2, 3, 1])]
    graph = helper.make_graph(
        nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, [1, oh, ow, c])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(np.array(0, np.float32), "lo"),
         numpy_helper.from_array(np.array(6, np.float32), "hi")])
    model = dlc.compile(helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]),
                        num_threads=1)
    text = model.ir("linalg")
    forall = text[text.index("scf.forall"):text.index("scf.forall.in_parallel")]
    assert "vector.fma" in forall and "arith.minimumf" in forall
    if c % depthwise.c_widths()[-1] == 0:  # (AVX2's channel tiles of 8 divide C 40: fused)
        registers = True
    assert taken and all((lines is not None) == registers for lines in taken)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    bias = np.broadcast_to(b, (1, oh, ow, c))
    expected = depthwise_reference(padded, w[:, 0].transpose(1, 2, 0), bias, stride, 1)
    np.testing.assert_allclose(model(x)[0], np.clip(expected, 0, 6), rtol=1e-5, atol=1e-5)
