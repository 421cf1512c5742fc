"""A model compiles to the same IR and the same object code every time (issue 19).

The model holds a convolution that takes the packed path (codegen/packed_conv.py, which names
its buffers) and a scheduled matmul. It is compiled twice in this process and once in another:
the IR after every stage (`CompiledModel.ir`) and after every element of every stage's
pipeline (the packed conv's names show after dlc-schedule and are gone by the end of the
stage) are identical, and so is the object code the JIT writes for the disk cache.
A process-wide counter numbered the packed conv's buffers: the second compile in one process
differed from the first after dlc-schedule.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

import dlc
from dlc.dialects import make_context
from dlc.frontends.onnx_importer import import_model
from dlc.passes import STAGES, build_pass_manager, parse_pipeline, stage_pipelines
from dlc.runtime import cache
from tests.conftest import make_model

RNG = np.random.default_rng(19)
ROOT = Path(__file__).resolve().parents[1]


def conv_and_matmul() -> onnx.ModelProto:
    """A 3x3 conv 16 -> 32 channels on 14x14 (packed: a constant filter, F a multiple of 32,
    2.9 M multiply-adds) with bias and ReLU, and a 16x64 @ 64x64 matmul (65 Ki MACs)."""
    weights = (RNG.standard_normal((32, 16, 3, 3)) / 12).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["z"]),
        helper.make_node("MatMul", ["a", "m"], ["y"]),
    ]
    return make_model(nodes, {"x": (np.float32, [1, 16, 14, 14]), "a": (np.float32, [16, 64])},
                      ["z", "y"], initializers={
                          "w": weights, "b": RNG.standard_normal(32).astype(np.float32),
                          "m": RNG.standard_normal((64, 64)).astype(np.float32)})


MODEL = conv_and_matmul()


def ir_after_each_pass(model: onnx.ModelProto) -> list[str]:
    """The IR after each module-level element of each stage's pipeline at -O2 (1 thread)."""
    context = make_context()
    module = import_model(model, context).module
    texts = []
    with context:
        for text in stage_pipelines(2, num_threads=1).values():
            for element in parse_pipeline(text):
                build_pass_manager(element.text()).run(module.operation)
                texts.append(f"// after {element.name}\n{module}")
    return texts


def digests(model: onnx.ModelProto, object_path: Path) -> dict[str, str]:
    """sha256 of the IR of each stage, of the IR after each pass, and of the object code."""
    with cache.disabled():
        compiled = dlc.compile(model, num_threads=1)
    found = {stage: compiled.ir(stage) for stage in STAGES}
    found["passes"] = "\n".join(ir_after_each_pass(model))
    compiled._function.dump_object(str(object_path))
    found["object"] = object_path.read_bytes().hex()
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in found.items()}


def test_packed_path_is_taken(monkeypatch) -> None:
    """(The test is about the packed conv's names: the model must take that path, not
    Winograd's.)"""
    monkeypatch.setenv("DLC_WINOGRAD", "0")
    after_schedule = next(t for t in ir_after_each_pass(MODEL) if "after dlc-schedule" in t)
    assert "dlc.distinct" in after_schedule


def test_two_compiles_in_one_process_agree(tmp_path: Path) -> None:
    first, second = ir_after_each_pass(MODEL), ir_after_each_pass(MODEL)
    for before, again in zip(first, second, strict=True):
        assert before == again, f"the IR differs {before.splitlines()[0]}"
    with cache.disabled():
        one, two = dlc.compile(MODEL, num_threads=1), dlc.compile(MODEL, num_threads=1)
    for stage in STAGES:
        assert one.ir(stage) == two.ir(stage), f"the IR after stage {stage} differs"
    one._function.dump_object(str(tmp_path / "one.o"))
    two._function.dump_object(str(tmp_path / "two.o"))
    assert (tmp_path / "one.o").read_bytes() == (tmp_path / "two.o").read_bytes()


CHILD = """
import json, sys
from pathlib import Path
import onnx
from tests.test_determinism import digests
print(json.dumps(digests(onnx.load(sys.argv[1]), Path(sys.argv[2]))))
"""


def test_another_process_agrees(tmp_path: Path) -> None:
    here = digests(MODEL, tmp_path / "here.o")
    onnx.save(MODEL, tmp_path / "model.onnx")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "model.onnx"), str(tmp_path / "there.o")],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "DLC_CACHE": "0", "DLC_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
    )
    assert child.returncode == 0, child.stderr[-2000:]
    there = json.loads(child.stdout.splitlines()[-1])
    assert here == there
