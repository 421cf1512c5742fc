"""The per-op profiler (issue 18): `CompiledModel.profile`, `dlc.profile`, `dlc profile`, and
the NaivePathWarning of a large op left on the naive loop path.

A small conv + MLP model: every one of its compute nodes is in the profile, shares sum to
100 %, the conv and the matmuls are reported with their schedule family. A planted f64 matmul
(no schedule takes f64) is warned about at compile time, by node name, and flagged LARGE in the
profile. Profiling never changes a normal compile's code.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc.tools.dlc_cli import main
from tests.conftest import make_model

RNG = np.random.default_rng(18)


def conv_mlp() -> onnx.ModelProto:
    """conv 3x3 8 -> 32 on 16x16, relu, flatten, gemm 8192 -> 64 (scheduled), relu, matmul
    64 -> 64 (4,096 multiply-adds: under the thresholds, naive loops)."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="conv_relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "g", "gb"], ["h"], name="fc"),
        helper.make_node("Relu", ["h"], ["hr"], name="fc_relu"),
        helper.make_node("MatMul", ["hr", "m"], ["y"], name="head"),
    ]
    return make_model(nodes, {"x": (np.float32, [1, 8, 16, 16])}, ["y"], initializers={
        "w": (RNG.standard_normal((32, 8, 3, 3)) / 8).astype(np.float32),
        "g": (RNG.standard_normal((8192, 64)) / 64).astype(np.float32),
        "gb": RNG.standard_normal(64).astype(np.float32),
        "m": RNG.standard_normal((64, 64)).astype(np.float32)})


def f64_matmul() -> onnx.ModelProto:
    """A 64x64x64 f64 matmul (262,144 multiply-adds, no schedule: naive loops), then a relu."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="big_f64_matmul"),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    return make_model(nodes, {"x": (np.float64, [64, 64])}, ["z"],
                      initializers={"w": RNG.standard_normal((64, 64))})


def naive_warnings(model: onnx.ModelProto) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dlc.lower(model, stage="linalg", num_threads=1)
    return [str(w.message) for w in caught if issubclass(w.category, dlc.NaivePathWarning)]


def test_profile_reports_every_node_with_its_schedule() -> None:
    model = conv_mlp()
    compiled = dlc.compile(model, num_threads=1)
    x = RNG.standard_normal((1, 8, 16, 16)).astype(np.float32)
    result = compiled.profile([x], runs=3)
    nodes = {n for op in result.ops for n in op.nodes}
    assert {"conv", "fc", "head"} <= nodes  # (the relus are fused into their producers' tiles)
    assert nodes <= {n.name for n in model.graph.node}  # ONNX node names, nothing else
    assert sum(op.share for op in result.ops) == pytest.approx(100.0)
    assert result.total_ms > 0
    assert [op.ms for op in result.ops] == sorted((op.ms for op in result.ops), reverse=True)
    family = {n: op.family for op in result.ops for n in op.nodes}
    # (the conv node's NHWC -> NCHW transpose before the Flatten is the transpose family's)
    assert family["conv"] in ("conv", "conv+transpose") and family["fc"] == "matmul"
    head = next(op for op in result.ops if "head" in op.nodes)
    assert head.family == "naive" and head.naive and not head.large_naive  # (small)
    assert not any(op.large_naive for op in result.ops) and not result.warnings
    assert "Conv" in {t for op in result.ops for t in op.op_types}
    by_node = result.seconds_by_node()
    assert sum(by_node.values()) * 1e3 == pytest.approx(result.total_ms)


def test_large_naive_op_is_warned_and_flagged() -> None:
    messages = naive_warnings(f64_matmul())
    assert len(messages) == 1
    assert "'big_f64_matmul'" in messages[0] and "64x64" in messages[0]
    assert "f64" in messages[0] and "naive loops" in messages[0]
    result = dlc.profile(f64_matmul(), runs=2, num_threads=1)
    slowest = result.ops[0]
    assert slowest.nodes == ["big_f64_matmul"] and slowest.op_types == ["MatMul"]
    assert slowest.family == "naive" and slowest.naive and slowest.large_naive
    assert "LARGE" in result.table() and "big_f64_matmul" in result.warnings[0]


def test_small_and_scheduled_ops_are_not_warned() -> None:
    assert naive_warnings(conv_mlp()) == []
    small = make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="small")],
                       {"x": (np.float64, [8, 8])}, ["y"],
                       initializers={"w": RNG.standard_normal((8, 8))})
    assert naive_warnings(small) == []  # 512 multiply-adds: under the threshold


def test_profiling_leaves_the_normal_compile_unchanged() -> None:
    model = conv_mlp()
    before = dlc.lower(model, stage="llvm", num_threads=1).ir("llvm")
    dlc.profile(model, runs=1, num_threads=1)
    after = dlc.lower(model, stage="llvm", num_threads=1).ir("llvm")
    assert before == after
    assert "rtclock" not in after and "dlc_profile" not in after


def test_cli_prints_the_table_and_json(tmp_path, capsys) -> None:
    path = tmp_path / "f64.onnx"
    onnx.save(f64_matmul(), path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dlc.NaivePathWarning)
        assert main(["profile", str(path), "--runs", "2", "--threads", "1"]) == 0
        table = capsys.readouterr().out
        assert main(["profile", str(path), "--runs", "1", "--threads", "1", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
    assert table.splitlines()[0].split() == ["node", "op", "schedule", "naive", "ms", "share"]
    assert "big_f64_matmul" in table and "LARGE" in table and "total" in table
    assert data["ops"][0]["node"] == "big_f64_matmul" and data["ops"][0]["large_naive"]
    assert data["naive_path_warnings"]


@pytest.mark.parametrize("op, shape, axes, warned", [
    ("ReduceMean", [1, 49, 768], [1], False),  # a token mean: rows accumulated, vectorized
    ("ReduceMax", [1, 4, 784, 192], [1], False),
    ("ReduceMean", [1, 16, 16, 384], [1, 2], False),  # an NHWC global pool
    ("ReduceMax", [64, 48, 40], [1, 2], True),  # f64 rows (the innermost loop reduces)
])
def test_outer_axis_reductions_are_not_a_cliff(op, shape, axes, warned) -> None:
    # their naive loops accumulate contiguous rows, which LLVM vectorizes (0.13-0.5x
    # onnxruntime): no NaivePathWarning; an f64 reduction along the rows still is one
    node = helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=0)
    dtype = np.float64 if warned else np.float32
    model = make_model([node], {"x": (dtype, shape)}, ["y"], opset=17)
    assert bool(naive_warnings(model)) == warned
