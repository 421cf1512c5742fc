"""The zoo of real models (benchmarks/zoo.py, issue 18) on tiny configurations, so that it does
not rot between runs: a 1-layer BERT and a 1-layer Llama of hidden 64 (transformers) and
torchvision's ResNet-50 on a 64x64 image are exported, compiled and matched against
onnxruntime (not timed); the BERT and the Llama also go through `dlc.compile(module,
example_inputs=...)` and are matched against eager PyTorch (the zoo's `module` path; its
`dynamo` path, torch.compile, is checked on tiny architectures by tests/torch/test_zoo.py). Each is skipped, with the package it lacks, where transformers or
torchvision is not installed (`make install` installs neither; `make zoo` does: the zoo extra,
and torchvision in build/zoo/site). `dlc bench --zoo --list` and the table's bookkeeping need
only torch. (timm's ResNet-26-D would fail here: under the suite's DLC_STRICT_SCHEDULE, the
1x1 downsample convs of its first blocks fail to schedule, "only TilingInterface ops are
supported"; outside the suite they fall back to naive loops.)
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from dlc.tools import dlc_cli

ZOO_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "zoo.py"


@pytest.fixture(scope="module")
def zoo():
    if "dlc_zoo" not in sys.modules:  # (the name `dlc bench --zoo` loads it under)
        spec = importlib.util.spec_from_file_location("dlc_zoo", ZOO_PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["dlc_zoo"]


@pytest.mark.parametrize("name, needs", [("bert", "transformers"), ("llama", "transformers"),
                                         ("resnet50", "torchvision")])
def test_tiny_model_matches_onnxruntime(zoo, name: str, needs: str, tmp_path: Path) -> None:
    if importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed (the zoo's models need it; `make install` "
                    "does not install it)")
    row = zoo.run_model(name, zoo.Setting(tiny=True), tmp_path, timed=False, paths=("onnx",))
    assert row["status"] == "ok", row.get("traceback", row["status"])
    assert "torch_status" not in row and "dynamo_status" not in row
    assert 0 <= row["rel_error"] <= zoo.RTOL


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_tiny_model_module_matches_eager(zoo, name: str, tmp_path: Path) -> None:
    # the nn.Module itself through dlc.compile(module, example_inputs=...), against eager
    # PyTorch (the ONNX file is not exported: the torch columns only)
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (the zoo's models need it)")
    row = zoo.run_model(name, zoo.Setting(tiny=True), tmp_path, timed=False,
                        paths=("module",))
    assert row["torch_status"] == "ok", row.get("torch_traceback", row["torch_status"])
    assert 0 <= row["torch_rel_error"] <= zoo.RTOL
    assert row["status"] == "not run" and "rel_error" not in row
    assert not list(tmp_path.glob("*.onnx"))


def test_rows_replace_their_model_and_configuration(zoo, tmp_path: Path) -> None:
    zoo.save({"model": "bert", "config": "tiny", "status": "ok"}, tmp_path)
    zoo.save({"model": "bert", "config": "2l", "status": "ok"}, tmp_path)
    zoo.save({"model": "bert", "config": "tiny", "status": "run failed"}, tmp_path)
    rows = json.loads((tmp_path / "zoo.json").read_text())
    assert [(r["config"], r["status"]) for r in rows] == [("2l", "ok"), ("tiny", "run failed")]
    line = zoo.format_row(rows[1])  # (no numbers: dashes)
    assert line.startswith("bert") and line.endswith("run failed") and " - " in line
    torch_failed = {**rows[0], "torch_status": "compile failed: unsupported ATen ops: x"}
    assert zoo.format_row(torch_failed).endswith(
        "onnx: ok; module: compile failed: unsupported ATen ops: x")
    assert zoo.statuses({**rows[0], "torch_status": "ok", "dynamo_status": "ok"}) == "ok"
    assert zoo.statuses({"status": "not run", "dynamo_status": "ok"}) == "ok"


def test_settings_name_the_exported_files(zoo) -> None:
    bert, resnet = zoo.ZOO["bert"], zoo.ZOO["resnet50"]
    assert zoo.Setting().tag(bert) == zoo.Setting().tag(resnet) == "full"
    assert zoo.Setting(layers=2, image=64).tag(bert) == "2l"
    assert zoo.Setting(layers=2, image=64).tag(resnet) == "64px"
    assert zoo.Setting(tiny=True).tag(resnet) == "tiny"


def test_cpu_time_leaves_out_waiting(zoo, monkeypatch) -> None:
    # --cpu-time: a call that waits (a thread descheduled on a shared machine) is not charged
    # for the wait, a wall-clock best is
    import time

    assert zoo.parse_args(["--cpu-time"]).cpu_time and not zoo.parse_args([]).cpu_time
    monkeypatch.setattr(zoo, "CLOCK", time.thread_time)
    waited = zoo.best_times([lambda: time.sleep(0.05)], 2)[0]
    monkeypatch.setattr(zoo, "CLOCK", time.perf_counter)
    assert waited < 0.01 and zoo.best_times([lambda: time.sleep(0.05)], 2)[0] >= 0.05


def test_dlc_bench_zoo_lists_the_models(capsys) -> None:
    assert dlc_cli.main(["bench", "--zoo", "--list"]) == 0
    listed = capsys.readouterr().out
    for name in ("resnet50", "densenet121", "bert", "gpt2", "t5_encoder", "llama", "vit",
                 "mobilevit_xxs", "efficientvit_b0"):
        assert name in listed
    assert dlc_cli.main(["bench", "--zoo", "--models", "nosuchnet"]) == 2
    assert "unknown model" in capsys.readouterr().err
    assert dlc_cli.main(["bench", "--zoo", "--paths", "onnx,tflite"]) == 2
    assert "--paths takes some of onnx,module,dynamo" in capsys.readouterr().err
    assert dlc_cli.main(["bench"]) == dlc_cli.EXIT_ERROR  # (MODEL.onnx or --zoo)
