"""The benchmark suite (benchmarks/) on tiny cases, so that it does not rot between runs.

The whole suite takes minutes (`make bench`); these tests run its code path on the MLP, check
a failing case stays in the table, and check the pieces that build the benchmark's models: the
light models' random weights and numpy's im2col convolution (the conv peer).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_kernels
import bench_models
import light_models
from bench_report import table

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def positive(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def test_mlp_row_json_and_chart(tmp_path: Path):
    chart = tmp_path / "ratios.png"
    argv = ["-k", "MLP 784-256-256-10, batch 1", "--repeat", "3", "--budget", "0.2",
            "--json", str(tmp_path / "rows.json")] + (["--chart", str(chart)] if HAS_MATPLOTLIB
                                                      else [])
    (row,) = bench_models.run(argv)
    assert row.status == "ok" and row.peer == "onnxruntime", row.status
    for value in (row.dlc_s, row.peer_s, row.ratio, row.compile_s, row.cached_s):
        assert positive(value), row
    saved = json.loads((tmp_path / "rows.json").read_text())
    assert saved["rows"][0]["name"] == row.name and saved["rows"][0]["ratio"] == row.ratio
    assert "cores" in saved["meta"]["machine"]
    if HAS_MATPLOTLIB:
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not bench_models.dlc_has_threads(), reason="dlc.compile has no num_threads")
def test_threads_row_times_both_thread_counts():
    (case,) = bench_models.selected(bench_models.all_cases(False, Path("unused")),
                                    "MLP 784-256-256-10, batch 1")
    row = bench_models.measure_scaling(case, 2, bench_models.Settings(repeat=3, budget_s=0.1))
    assert row.status == "ok", row.status
    for value in (row.dlc_1_s, row.dlc_n_s, row.peer_1_s, row.peer_n_s, row.dlc_speedup):
        assert positive(value), row


def test_dlc_bench_command_reports_compile_time_and_ratio(tmp_path: Path, capsys):
    from make_mlp import make_mlp  # (examples/, on the path through bench_models)

    from dlc.tools.dlc_cli import main

    onnx.save(make_mlp(), tmp_path / "mlp.onnx")
    assert main(["bench", str(tmp_path / "mlp.onnx"), "--repeat", "3", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "dlc compiled in" in out and "cache disabled" in out
    ratio = float(out.split("time ratio: ")[1].split()[0])
    difference = float(out.split("max abs difference ")[1].split()[0])
    assert ratio > 0 and difference < 1e-3


def unknown_domain_model() -> onnx.ModelProto:
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")
    graph = helper.make_graph([node], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_failing_case_stays_in_the_table(tmp_path: Path):
    case = bench_models.Case("bad model", "model", lambda: (unknown_domain_model(), None))
    row = bench_models.measure(case, bench_models.Settings(repeat=3, budget_s=0.1))
    assert row.status.startswith("dlc failed:") and "Frobnicate" in row.status
    assert row.dlc_s is None and row.ratio is None
    assert "bad model" in table([row], markdown=True)
    if HAS_MATPLOTLIB:
        from bench_report import write_chart

        write_chart([row], "failing", tmp_path / "chart.png")
        assert (tmp_path / "chart.png").stat().st_size > 0


def constant_of_shape_model() -> onnx.ModelProto:
    """x @ w + b, with w and b made by ConstantOfShape as in the light models (IR 3 style)."""
    shapes = {"w_shape": np.array([4, 3], np.int64), "b_shape": np.array([3], np.int64)}
    nodes = [helper.make_node("ConstantOfShape", ["w_shape"], ["w"],
                              value=numpy_helper.from_array(np.array([0.02], np.float32))),
             helper.make_node("ConstantOfShape", ["b_shape"], ["b"],
                              value=numpy_helper.from_array(np.array([0.02], np.float32))),
             helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"],
                                                                              ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])]
    inputs += [helper.make_tensor_value_info(n, TensorProto.INT64, list(v.shape))
               for n, v in shapes.items()]
    graph = helper.make_graph(nodes, "light", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                              [numpy_helper.from_array(v, n) for n, v in shapes.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=3)


def test_light_model_weights_become_random_initializers():
    model = light_models.randomize(constant_of_shape_model())
    onnx.checker.check_model(model)
    assert model.ir_version >= 4
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add"]
    assert [i.name for i in model.graph.input] == ["x"]
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert sorted(weights) == ["b", "w"]
    assert weights["w"].shape == (4, 3) and np.unique(weights["w"]).size == 12
    assert (weights["b"] > 0).all()  # (1-D: BatchNorm scales and variances must be positive)


@pytest.mark.parametrize("cin, cout, size, kernel, stride",
                         [(3, 4, 9, 3, 1), (3, 4, 9, 3, 2), (2, 5, 8, 1, 2), (3, 2, 11, 7, 2)])
def test_im2col_conv_matches_onnxruntime(cin, cout, size, kernel, stride):
    case = bench_kernels.conv_case(cin, cout, size, kernel, stride)
    model, (x,) = case.build()
    session = bench_models.onnxruntime_session(model, threads=1)
    (expected,) = session.run(None, {"x": x})
    np.testing.assert_allclose(case.numpy_peer([x]), expected, rtol=1e-4, atol=1e-5)
    assert case.flops == 2 * cout * cin * kernel * kernel * expected.shape[2] * expected.shape[3]


def test_zoo_adds_the_other_light_models() -> None:
    from light_models import LIGHT_DIR, LIGHT_MODELS, ZOO

    plain = bench_models.all_cases(False, Path("unused"))
    zoo = bench_models.selected(bench_models.all_cases(False, Path("unused"), zoo=True), "zoo")
    assert not bench_models.selected(plain, "zoo")
    assert len(zoo) == len(ZOO) == 7 and all(c.group == "zoo" for c in zoo)
    assert all((LIGHT_DIR / LIGHT_MODELS[name]).exists() for name in ZOO)
