"""`dlc bisect` (issue 24) finds a planted numerical bug: a plugin pass that turns the Add named
'bad' into a Sub. By node it names that node and writes a one-node reproducer that fails on its
own (and passes without the plugin); by pass (--opt-levels 0,2, the plugin added at -O2 only) it
names the plugin's pass. A correct model is reported as matching, with exit status 0.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

CORRUPT = textwrap.dedent('''
    from dataclasses import dataclass

    from mlir import ir

    from dlc.dialects import build, ops
    from dlc.passes import ModulePass, register
    from dlc.passes.graph.match import apply_rules


    def corrupt(op):
        if str(op.location) != 'loc("bad")':
            return None
        return [build(ops.SUB, list(op.operands), loc=ir.Location.name("corrupted"))]


    @register
    @dataclass(frozen=True)
    class Corrupt(ModulePass):
        """Turn the add named 'bad' into a sub (a planted bug)."""

        name = "test-corrupt-add"

        def run(self, module):
            apply_rules(module, {ops.ADD: [corrupt]})
''')


def dlc(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", *argv], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=300)


@pytest.fixture
def planted(tmp_path) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"),
             helper.make_node("Mul", ["a", "x"], ["b"], name="m1"),
             helper.make_node("Add", ["b", "a"], ["c"], name="bad"),
             helper.make_node("Tanh", ["c"], ["d"], name="t1"),
             helper.make_node("Add", ["d", "x"], ["y"], name="good")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              tmp_path / "model.onnx")
    (tmp_path / "corrupt.py").write_text(CORRUPT)
    return tmp_path


def test_bisect_by_node_finds_the_planted_bug(planted):
    plugin = ["--load-pass-plugin", "corrupt.py", "--add-passes", "dlc=test-corrupt-add"]
    done = dlc("bisect", "model.onnx", "-o", "repro", *plugin, cwd=planted)
    assert done.returncode == 1, done.stderr
    assert "first divergence: node 'bad' (Add, #2), output 'c'" in done.stdout
    repro = onnx.load(planted / "repro" / "reproducer.onnx")
    assert [n.name for n in repro.graph.node] == ["bad"]
    assert sorted(i.name for i in repro.graph.input) == ["a", "b"]
    command = done.stdout.strip().splitlines()[-1].split()
    assert command[:3] == ["dlc", "bisect", "repro/reproducer.onnx"]
    alone = dlc(*command[1:], cwd=planted)  # the reproducer fails on its own ...
    assert alone.returncode == 1 and "node 'bad' (Add, #0)" in alone.stdout, alone.stdout
    without = [a for a in command[1:] if a not in plugin]  # ... and passes without the bug
    fixed = dlc(*without, cwd=planted)
    assert fixed.returncode == 0 and "every value of the 1 nodes matches" in fixed.stdout


def test_bisect_by_pass_finds_the_planted_pass(planted):
    done = dlc("bisect", "model.onnx", "--opt-levels", "0,2", "--load-pass-plugin", "corrupt.py",
               "--add-passes", "dlc@2=test-corrupt-add", cwd=planted)
    assert done.returncode == 1, done.stderr
    assert "  -O0: matches" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith(
        "pass test-corrupt-add (stage dlc) makes the results differ")


@pytest.mark.parametrize("against", ["onnxruntime", "reference"])
def test_a_correct_model_matches(planted, against):
    done = dlc("bisect", "model.onnx", "--against", against, cwd=planted)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"every value of the 5 nodes matches {against} at -O2" in done.stdout
    done = dlc("bisect", "model.onnx", "--opt-levels", "1,3", "--against", against, cwd=planted)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"every pipeline from -O1 to -O3 matches {against}" in done.stdout


@pytest.mark.parametrize("levels", ["2,0", "x", "1,2,3"])
def test_bad_opt_levels(planted, levels):
    done = dlc("bisect", "model.onnx", "--opt-levels", levels, cwd=planted)
    assert done.returncode == 1 and "dlc: error: --opt-levels" in done.stderr, done.stderr


def test_a_pass_with_other_options_is_swapped_in_when_added():
    """-O0 runs dlc-split-functions{min-ops=0}, -O2 without options: the bisect's baseline
    runs -O0's, and adding the step swaps in -O2's (rather than refusing to bisect)."""
    from dlc.tools.bisect import pipeline_steps

    steps = pipeline_steps(0, 2)
    swapped = [s for s in steps if s.replaces is not None]
    assert swapped and all(s.extra for s in swapped)
    split = next(s for s in swapped if s.text.startswith("dlc-split-functions"))
    assert split.chosen(False) == split.replaces != split.text == split.chosen(True)
