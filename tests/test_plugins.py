"""Pass plugins (issue 24): a pass written outside dlc, as the README's tutorial writes it
(examples/plugin/my_passes.py, 20 lines), runs through `dlc-opt --load-pass-plugin`, its own lit
test, `dlc.compile` (by `dlc.passes.extend_stage`) and `dlc run`; installed packages' plugins
load from the `dlc.passes` entry-point group; every failure is a clear error, never a crash.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import dlc
from dlc.passes import (
    PipelineError,
    PluginError,
    clear_extensions,
    extend_stage,
    load_plugin,
    pipeline,
    plugins,
    registered_passes,
    registry,
)

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "examples" / "plugin" / "my_passes.py"
BIN = Path(sys.executable).parent


@pytest.fixture
def clean_registry():
    """Plugins and extensions loaded by a test are forgotten after it."""
    registered_passes()  # (dlc's own, imported once per process, are kept)
    passes, loaded = dict(registry._PASSES), dict(plugins._LOADED)
    yield
    clear_extensions()
    registry._PASSES.clear()
    registry._PASSES.update(passes)
    plugins._LOADED.clear()
    plugins._LOADED.update(loaded)


def double_relu(path: Path | None = None) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["y"], name="second")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    if path is not None:
        onnx.save(model, path)
    return model


def test_the_tutorial_plugin_is_twenty_lines():
    code = [line for line in PLUGIN.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith(("#", '"""', "`dlc."))]
    assert len(code) <= 20, code


def test_its_lit_test_passes_in_its_own_folder(tmp_path):
    done = subprocess.run([str(BIN / "lit"), "-v", str(PLUGIN.parent)], capture_output=True, 
                          text=True, check=False, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and "Passed: 1" in done.stdout, done.stdout + done.stderr


def test_compile_with_the_plugin_in_a_stage(clean_registry):
    assert load_plugin(str(PLUGIN)) == ["my-fold-double-relu"]
    assert load_plugin(PLUGIN) == ["my-fold-double-relu"]  # loaded once, not registered twice
    model = double_relu()
    plain = dlc.compile(model, opt_level=1)
    assert plain.ir("dlc").count('"dlc.relu"') == 2
    extend_stage("dlc", "my-fold-double-relu")
    assert "dlc-canonicalize,my-fold-double-relu,dlc-to-linalg" in pipeline(1)
    folded = dlc.compile(model, opt_level=1)  # (another cache key: not the plain model's)
    assert folded.ir("dlc").count('"dlc.relu"') == 1
    x = np.array([-2.0, -0.5, 0.5, 2.0], np.float32)
    np.testing.assert_array_equal(folded(x)[0], np.maximum(x, 0))
    clear_extensions()
    assert dlc.compile(model, opt_level=1).ir("dlc").count('"dlc.relu"') == 2


def test_plugin_errors(clean_registry, tmp_path):
    with pytest.raises(PluginError, match=r"pass plugin '.*missing.py': no such file"):
        load_plugin(tmp_path / "missing.py")
    broken = tmp_path / "broken.py"
    broken.write_text("import dlc\n\nvalue = 1 / 0\n")
    with pytest.raises(PluginError, match=r"'.*broken.py' failed to load \(line 3 of .*broken.py"
                                          r"\): ZeroDivisionError"):
        load_plugin(broken)
    taken = tmp_path / "taken.py"
    taken.write_text(textwrap.dedent("""
        from dataclasses import dataclass
        from dlc.passes import ModulePass, register

        @register
        @dataclass(frozen=True)
        class Impostor(ModulePass):
            name = "dlc-canonicalize"
    """))
    with pytest.raises(PluginError, match="pass dlc-canonicalize registered twice"):
        load_plugin(taken)
    with pytest.raises(PluginError, match="No module named 'no_such_plugin_module'"):
        load_plugin("no_such_plugin_module")
    with pytest.raises(PipelineError, match="unknown pass 'my-unknown-pass'"):
        extend_stage("dlc", "my-unknown-pass")
    with pytest.raises(ValueError, match="unknown stage 'graph'"):
        extend_stage("graph", "cse")


def test_dlc_opt_and_dlc_run_load_the_plugin(tmp_path):
    mlir = PLUGIN.parent / "fold-double-relu.mlir"
    done = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_opt", str(mlir),
                           f"-load-pass-plugin={PLUGIN}", "-my-fold-double-relu"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('"dlc.relu"') == 1
    double_relu(tmp_path / "model.onnx")
    done = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "compile",
                           str(tmp_path / "model.onnx"), "--emit", "dlc", "--load-pass-plugin",
                           str(PLUGIN), "--add-passes", "dlc=my-fold-double-relu"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('"dlc.relu"') == 1
    done = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "run",
                           str(tmp_path / "model.onnx"), "--repeat", "1", "--load-pass-plugin",
                           str(tmp_path / "absent.py")], capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 1 and "absent.py': no such file" in done.stderr, done.stderr


def test_installed_plugins_load_from_entry_points(tmp_path):
    site = tmp_path / "site"
    (site / "acme_passes").mkdir(parents=True)
    (site / "acme_passes" / "__init__.py").write_text(PLUGIN.read_text().replace(
        "my-fold-double-relu", "acme-fold-double-relu"))
    (site / "broken_passes.py").write_text("raise RuntimeError('not today')\n")
    dist = site / "acme_passes-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-passes\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[dlc.passes]\nacme = acme_passes\nbroken = broken_passes\n")
    code = ("import warnings; warnings.simplefilter('always')\n"
            "from dlc.passes import registered_passes\n"
            "print('acme-fold-double-relu' in registered_passes())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert "PluginWarning: pass plugin 'broken_passes' failed to load" in done.stderr
    assert "RuntimeError: not today (entry point 'broken'" in done.stderr


def test_registry_is_unchanged_by_the_tests_above():
    assert not any(name.startswith(("my-", "acme-")) for name in registered_passes())
