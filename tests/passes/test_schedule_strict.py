"""dlc-schedule's `strict` option (issue 19: strictness a pass option, not only the
environment): a schedule that fails to apply is the transform interpreter's error instead of
the naive path."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.options import CompileOptions
from dlc.passes import stage_pipelines
from dlc.passes.codegen import matmul, script
from tests.conftest import make_model


def matmul_model():
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    return make_model([node], {"a": (np.float32, [64, 64]), "b": (np.float32, [64, 64])}, ["y"])


def test_strict_option_raises_where_the_default_falls_back(monkeypatch):
    def failing_lines(handle: str, problem, prefix: str) -> script.Lines:
        ops, _, _ = script.split(handle, 0, 100_000, prefix)  # (beyond the dimension)
        return script.Lines(ops)

    monkeypatch.setattr(matmul, "lines", failing_lines)
    monkeypatch.setenv("DLC_STRICT_SCHEDULE", "0")  # (the suite's is 1)
    pipelines = stage_pipelines(2, 1)
    assert "dlc-schedule," in pipelines["linalg"]
    lowered = dlc.lower(matmul_model(), "linalg", options=CompileOptions(
        num_threads=1, pipelines=pipelines))
    assert "linalg.matmul" in lowered.ir("linalg")  # (the naive path)
    strict = {**pipelines, "linalg": pipelines["linalg"].replace(
        "dlc-schedule,", "dlc-schedule{strict=true},")}
    with pytest.raises(dlc.CompileError, match="expected to contain 2 payloads"):
        dlc.lower(matmul_model(), "linalg", options=CompileOptions(num_threads=1,
                                                                   pipelines=strict))
