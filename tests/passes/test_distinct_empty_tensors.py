"""dlc-distinct-empty-tensors (issue 20): an empty or zero fill that CSE shared between layers
gets one copy per use before one-shot-bufferize. The bufferized IR then copies no fill and
needs no larger arena, and a compiled model computes the same bits."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.dialects import make_context
from dlc.passes import pipelines
from dlc.passes.pipeline import build_pass_manager
from dlc.runtime import cache
from tests.conftest import arena_bytes

PASS = "dlc-distinct-empty-tensors,"

# three row sums into one shared zero fill (what CSE leaves of a transformer's layernorms)
ROW_SUMS = """
func.func @f(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>, %c: tensor<8x64xf32>)
    -> (tensor<8x1xf32>, tensor<8x1xf32>, tensor<8x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x1xf32>) -> tensor<8x1xf32>
  %s1 = linalg.generic {SUM} ins(%a : tensor<8x64xf32>) outs(%f : tensor<8x1xf32>) {BODY}
  %s2 = linalg.generic {SUM} ins(%b : tensor<8x64xf32>) outs(%f : tensor<8x1xf32>) {BODY}
  %s3 = linalg.generic {SUM} ins(%c : tensor<8x64xf32>) outs(%f : tensor<8x1xf32>) {BODY}
  return %s1, %s2, %s3 : tensor<8x1xf32>, tensor<8x1xf32>, tensor<8x1xf32>
}
""".replace("{SUM}", '{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> '
            '(i, 0)>], iterator_types = ["parallel", "reduction"]}').replace(
    "{BODY}", "{\n  ^bb0(%x: f32, %acc: f32):\n    %y = arith.addf %acc, %x : f32\n"
              "    linalg.yield %y : f32\n  } -> tensor<8x1xf32>")


def _bufferize(text: str, stage: str) -> str:
    with make_context():
        module = ir.Module.parse(text)
        build_pass_manager(f"builtin.module({stage})").run(module.operation)
        return str(module)


def test_in_the_o2_pipeline_before_one_shot_bufferize():
    # (first of the stage: before dlc-eliminate-empty-tensors too, whose upstream analysis
    # checked every write to CSE's shared empties against all their aliases)
    stage = pipelines.stage_pipelines(2)["bufferized"]
    assert stage.startswith(PASS + "dlc-eliminate-empty-tensors,dlc-distinct-results,"
                            "one-shot-bufferize")
    assert PASS not in pipelines.stage_pipelines(1)["bufferized"]


def test_a_shared_fill_is_not_copied():
    stage = pipelines.stage_pipelines(2)["bufferized"]
    shared = _bufferize(ROW_SUMS, stage.replace(PASS, ""))
    distinct = _bufferize(ROW_SUMS, stage)
    # one-shot-bufferize copies the shared zeros into a buffer per sum it cannot run in place
    assert "memref.copy" in shared
    assert "memref.copy" not in distinct
    assert distinct.count("linalg.fill") == 3
    assert arena_bytes(distinct) <= arena_bytes(shared)


def _layers_model(layers: int = 3, rows: int = 16, width: int = 32) -> onnx.ModelProto:
    """`layers` residual blocks x + softmax(x @ W_i) of identical shapes: CSE merges their
    empties and the softmax sums' zero fills."""
    rng = np.random.default_rng(0)
    nodes, weights, x = [], [], "x"
    for i in range(layers):
        w = rng.standard_normal((width, width)).astype(np.float32) / width
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Softmax", [f"m{i}"], [f"s{i}"], axis=-1),
                  helper.make_node("Add", [x, f"s{i}"], [f"y{i}"])]
        x = f"y{i}"
    graph = helper.make_graph(
        nodes, "layers", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [rows, width])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _compile(model: onnx.ModelProto, bufferize_o2: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(pipelines, "_BUFFERIZE_O2", bufferize_o2)
    with cache.disabled():
        return dlc.compile(model, opt_level=2, num_threads=1)


def test_same_bits_and_no_larger_arena(monkeypatch: pytest.MonkeyPatch):
    model = _layers_model()
    x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
    stage = pipelines._BUFFERIZE_O2
    shared = _compile(model, stage.replace(PASS, ""), monkeypatch)
    distinct = _compile(model, stage, monkeypatch)
    (want,), (got,) = shared(x), distinct(x)
    assert got.tobytes() == want.tobytes()
    # (the three matmuls' zero inits and the six softmax sums' fills: copied before)
    assert shared.ir("bufferized").count("memref.copy") > 0
    assert "memref.copy" not in distinct.ir("bufferized")
    assert arena_bytes(distinct.ir("bufferized")) <= arena_bytes(shared.ir("bufferized"))
