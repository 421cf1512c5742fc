"""Where a compile's time goes (issue 20): `CompiledModel.timings`, `dlc.lower` (stop after a
stage, no machine code) and `dlc compile --timings / --emit=STAGE`.

Tiny models: a matmul at dlc-schedule's threshold (so the pass has steps) and a ReLU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc import compiler
from dlc.passes import STAGES, parse_pipeline, stage_pipelines
from dlc.runtime import cache, native
from dlc.tools import dlc_cli
from tests.conftest import make_model

RNG = np.random.default_rng(20)


def tiny() -> onnx.ModelProto:
    """relu(a @ m): 32 x 32 x 32 multiply-adds, dlc-schedule's min-volume."""
    nodes = [helper.make_node("MatMul", ["a", "m"], ["p"]), helper.make_node("Relu", ["p"], ["y"])]
    return make_model(nodes, {"a": (np.float32, [32, 32])}, ["y"],
                      initializers={"m": RNG.standard_normal((32, 32)).astype(np.float32)})


MODEL = tiny()


def top_level(timings) -> list[str]:
    return [r.name for r in timings.records if r.depth == 0]


def test_compile_times_every_stage_and_pass() -> None:
    with cache.disabled():
        compiled = dlc.compile(MODEL, num_threads=1, timings=True)
    timings = compiled.timings
    assert top_level(timings) == ["import", *STAGES, compiler.MACHINE_CODE]
    for stage, text in stage_pipelines(2, 1).items():
        passes = [r for r in timings.records if r.depth == 1 and r.path[0] == stage]
        names = [r.name for r in passes if not r.name.startswith("(")]
        expected = [e.text() if e.children is not None else e.name for e in parse_pipeline(text)]
        assert names == expected
        assert sum(r.seconds for r in passes) <= timings.seconds(stage)
    assert timings.seconds("linalg", "dlc-schedule", "transform script") > 0
    assert 0 < timings.total_seconds <= compiled.compile_seconds
    # peak RSS: every span has one (Linux: VmHWM), a parent's at least its children's
    assert timings.memory in ("VmHWM", "ru_maxrss")
    peaks = {r.path: r.peak_rss_mib for r in timings.records}
    assert all(peak and peak > 0 for peak in peaks.values())
    assert all(peaks[path[:-1]] >= peak for path, peak in peaks.items() if len(path) > 1)


def test_timings_as_table_and_json() -> None:
    with cache.disabled():
        timings = dlc.compile(MODEL, num_threads=1, timings=True).timings
    table = timings.table()
    header, *rows = table.splitlines()
    assert header.split()[:5] == ["stage", "pass", "seconds", "share", "peak"]
    assert any(row.split()[0] == "linalg" for row in rows)
    assert any(row.split()[0] == "dlc-schedule" for row in rows)
    assert rows[-1].split()[:3] == ["total", f"{timings.total_seconds:.3f}", "100.0%"]
    data = json.loads(json.dumps(timings.as_json()))
    assert data["total_seconds"] == pytest.approx(timings.total_seconds)
    assert ["linalg", "dlc-schedule"] in [r["path"] for r in data["records"]]


def test_seconds_are_recorded_without_asking() -> None:
    """Always: seconds; peak RSS only when asked (measuring it resets the process's mark)."""
    with cache.disabled():
        timings = dlc.compile(MODEL, num_threads=1).timings
    assert top_level(timings)[-1] == compiler.MACHINE_CODE
    assert timings.memory == "off"
    assert all(r.peak_rss_mib is None for r in timings.records)


def test_the_cache_save_and_load_are_timed(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DLC_CACHE_MIN_SECONDS", "0")
    cache.forget_all()
    first = dlc.compile(MODEL, num_threads=1)
    assert top_level(first.timings)[0] == "cache lookup"
    assert top_level(first.timings)[-1] == "cache save"
    cache.forget_all()  # (the memory level: the next compile loads from disk)
    again = dlc.compile(MODEL, num_threads=1)
    assert again._lowered is None  # (its IR is built again on demand)
    assert top_level(again.timings) == ["cache lookup"]
    cache.forget_all()


def no_machine_code(*args, **kwargs):
    raise AssertionError("machine code was generated")


@pytest.mark.parametrize("stage", STAGES)
def test_lower_runs_only_the_stages_asked(monkeypatch, stage: str) -> None:
    monkeypatch.setattr(native, "compile_module", no_machine_code)
    lowered = dlc.lower(MODEL, stage=stage, num_threads=1)
    run = STAGES[: STAGES.index(stage) + 1]
    assert lowered.stages == run
    assert top_level(lowered.timings) == ["import", *run]
    assert lowered.ir() == lowered.ir(stage)
    if stage == "dlc":
        assert "dlc.matmul" in lowered.ir() and "linalg." not in lowered.ir()
        with pytest.raises(ValueError, match="stage 'linalg' was not run"):
            lowered.ir("linalg")
    if stage == "llvm":
        assert "llvm.func @main" in lowered.ir()


def test_lower_rejects_an_unknown_stage() -> None:
    with pytest.raises(ValueError, match="unknown stage 'asm'; stages are dlc, linalg"):
        dlc.lower(MODEL, stage="asm")


@pytest.fixture
def model_path(tmp_path: Path) -> str:
    path = tmp_path / "tiny.onnx"
    onnx.save(MODEL, path)
    return str(path)


def test_cli_emit_stops_after_the_stage(monkeypatch, capsys, model_path: str) -> None:
    """`dlc compile --emit=dlc` generated machine code first (a whole compile) before."""
    monkeypatch.setattr(native, "compile_module", no_machine_code)
    assert dlc_cli.main(["compile", model_path, "--emit=dlc"]) == 0
    out = capsys.readouterr().out
    assert "dlc.matmul" in out and "linalg." not in out
    assert dlc_cli.main(["compile", model_path]) == 0  # (default: llvm, still no machine code)
    assert "llvm.func @main" in capsys.readouterr().out


def test_cli_timings_json_beside_the_ir(capsys, model_path: str) -> None:
    assert dlc_cli.main(["compile", model_path, "--emit=linalg", "--timings=json"]) == 0
    captured = capsys.readouterr()
    assert "func.func @main" in captured.out and "llvm.func" not in captured.out
    data = json.loads(captured.err)
    assert [r["path"] for r in data["records"] if len(r["path"]) == 1] == [
        ["import"], ["dlc"], ["linalg"]]


def test_cli_timings_table_of_a_whole_compile(capsys, model_path: str) -> None:
    assert dlc_cli.main(["compile", model_path, "--timings", "-O0"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:2] == ["stage", "pass"]
    stages = [line.split()[0] for line in out.splitlines()[1:] if not line.startswith(" ")]
    assert stages == ["import", *STAGES, "machine", "total"]  # ("machine code")


def test_cli_timings_refuse_dot(capsys, model_path: str) -> None:
    with pytest.raises(SystemExit, match="use --emit=dlc --timings"):
        dlc_cli.main(["compile", model_path, "--emit=dot", "--timings"])


def test_compile_bench_fits_the_growth_and_reports_a_timeout(tmp_path: Path) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "compile_bench.py"
    spec = importlib.util.spec_from_file_location("compile_bench", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # (its dataclasses look their module up)
    spec.loader.exec_module(bench)
    assert bench.growth_exponent([(1000, 1.0), (2000, 4.0), (4000, 16.0)]) == pytest.approx(2)
    assert bench.growth_exponent([(1000, 1.0)]) is None
    late = bench.run_case("chain 100", 0, 0.5, tmp_path)  # (a child cannot import dlc in 0.5 s)
    assert late.status == "> 0.5 s" and late.cold_s is None
    assert "| chain 100 | 0 | - | - | - | - | - | - | - | - | > 0.5 s |" in bench.markdown([late])
    assert "not finished: N = 100" in bench.markdown([late])
    # a model's weights (the peak RSS is reported as a multiple of them), --zoo's files
    weights = {"w": np.zeros((64, 32), np.float32), "b": np.zeros(3, np.int64)}
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                       {"x": (np.float32, [1, 64])}, ["y"], initializers=weights)
    assert bench.weight_bytes(model) == 64 * 32 * 4 + 3 * 8
    done = bench.Result("zoo bert", 2, cold_s=5.0, cold_cpu_s=4.0, peak_rss_mib=900.0,
                        weight_mib=300.0)
    assert "| zoo bert | 2 | 5.00 | 4.00 | - | - | 900 | 300 | 3.0 |" in bench.markdown([done])
    done.cached_s, done.cached_new_s = 0.01, 0.2
    assert "| 5.00 | 4.00 | 0.010 | 0.200 | 900 |" in bench.markdown([done])
    assert bench.zoo_path("zoo bert").name == "bert_full.onnx"
