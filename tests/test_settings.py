"""dlc's environment variables are declared and read in `dlc/settings.py` only (issue 19): each
has a default, a bad value is a SettingError naming the variable wherever it is read, and
`override` changes a value for a context without touching os.environ."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc import settings
from dlc.errors import ArgumentError, DlcError
from tests.conftest import make_model

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"tests", "benchmarks", "examples", "build", "docs", "lit_tests", ".venv", ".git"}

# a bad value for each kind of setting, and a good one with what it reads as
BAD_AND_GOOD = {
    settings.NUM_THREADS: ("0", "3", 3),
    settings.PARALLEL_CODEGEN: ("-1", "2", 2),
    settings.VERIFY_EACH: ("maybe", "yes", True),
    settings.STRICT_SCHEDULE: ("2", "off", False),
    settings.CACHE: ("disabled", "0", False),
    settings.CACHE_MAX_MB: ("lots", "1.5", 1.5),
    settings.CACHE_MIN_SECONDS: ("nan", "0", 0.0),
    settings.CACHE_MEMORY_MB: ("-3", "10", 10.0),
    settings.MAX_SPECIALIZATIONS: ("many", "2", 2),
    settings.BATCH_ROWS: ("rows", "no", False),
    settings.WINOGRAD: ("direct", "0", False),
    settings.NO_PROGRESS: ("sometimes", "1", True),
}


def test_every_setting_is_tested_here():
    assert set(BAD_AND_GOOD) | {settings.CACHE_DIR, settings.TUNING_DB} == set(settings.ALL)


@pytest.mark.parametrize("setting", list(BAD_AND_GOOD), ids=lambda s: s.name)
def test_a_value_reads_as_its_type_and_a_bad_one_is_an_error_naming_the_variable(
        monkeypatch, setting):
    bad, good, value = BAD_AND_GOOD[setting]
    monkeypatch.delenv(setting.name, raising=False)
    default = setting.get()
    monkeypatch.setenv(setting.name, "  ")
    assert setting.get() == default  # blank is unset
    monkeypatch.setenv(setting.name, good)
    assert setting.get() == value
    monkeypatch.setenv(setting.name, bad)
    with pytest.raises(settings.SettingError, match=rf"\${setting.name}='{bad}' is not") as error:
        setting.get()
    assert isinstance(error.value, ArgumentError) and isinstance(error.value, DlcError)


def test_paths_and_the_tuning_database_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("DLC_CACHE_DIR", raising=False)
    monkeypatch.delenv("DLC_TUNING_DB", raising=False)
    assert settings.CACHE_DIR.get() == tmp_path / "dlc"
    assert settings.TUNING_DB.get() == tmp_path / "dlc" / "tuning.db"
    for off in ("", "0", "off", "None"):
        monkeypatch.setenv("DLC_TUNING_DB", off)
        assert settings.TUNING_DB.get() is None
    monkeypatch.setenv("DLC_TUNING_DB", str(tmp_path / "t.db"))
    assert settings.TUNING_DB.get() == tmp_path / "t.db"


def test_a_bad_value_fails_the_compile_that_reads_it_with_a_clear_error(monkeypatch):
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], {"x": (np.float32, [2, 3])}, ["y"])
    monkeypatch.setenv("DLC_NUM_THREADS", "two")
    with pytest.raises(settings.SettingError, match=r"\$DLC_NUM_THREADS='two' is not an integer"):
        dlc.compile(model)


def test_override_is_scoped_and_leaves_the_environment_alone(monkeypatch):
    monkeypatch.delenv("DLC_STRICT_SCHEDULE", raising=False)
    with settings.override(STRICT_SCHEDULE=True):
        assert settings.STRICT_SCHEDULE.get() is True
        assert "DLC_STRICT_SCHEDULE" not in os.environ
        with settings.override(STRICT_SCHEDULE=False):
            assert settings.STRICT_SCHEDULE.get() is False
        assert settings.STRICT_SCHEDULE.get() is True
    assert settings.STRICT_SCHEDULE.get() is False
    with pytest.raises(ArgumentError, match="no dlc setting named STRICT"), \
            settings.override(STRICT=True):
        pass


def test_describe_lists_every_variable_and_flags_a_bad_value(monkeypatch):
    monkeypatch.setenv("DLC_CACHE_MAX_MB", "lots")
    text = settings.describe()
    assert all(s.name in text for s in settings.ALL)
    assert "DLC_CACHE_MAX_MB=invalid" in text


def _package_files():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if not SKIPPED.intersection(parts) and not any(p.startswith(".") for p in parts):
            yield path


def test_no_module_but_settings_reads_a_dlc_variable():
    """os.environ.get(NAME), os.environ[NAME], os.getenv(NAME), NAME a "DLC_..." literal or a
    module-level constant holding one: only settings.py (and tests, benchmarks) read them (a
    harness may set one for its own worker process)."""
    readers = []
    for path in _package_files():
        if path.name == "settings.py" and path.parent == ROOT:
            continue
        tree = ast.parse(path.read_text(), str(path))
        constants = {target.id: node.value.value for node in tree.body
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     for target in node.targets if isinstance(target, ast.Name)}

        def literal_of(expression: ast.expr, constants=constants) -> object:
            if isinstance(expression, ast.Constant):
                return expression.value
            return constants.get(expression.id) if isinstance(expression, ast.Name) else None

        for node in ast.walk(tree):
            literal = None
            if isinstance(node, ast.Call) and node.args and ast.unparse(node.func) in (
                    "os.environ.get", "os.getenv", "environ.get"):
                literal = literal_of(node.args[0])
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" \
                    and isinstance(node.ctx, ast.Load):
                literal = literal_of(node.slice)
            if isinstance(literal, str) and literal.startswith("DLC_"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno} {literal}")
    assert readers == []


def test_dlc_env_prints_them(monkeypatch, capsys):
    from dlc.tools import dlc_cli

    monkeypatch.setenv("DLC_NUM_THREADS", "5")
    assert dlc_cli.main(["env"]) == 0
    out = capsys.readouterr().out
    assert "DLC_NUM_THREADS=5  (set)" in out and "DLC_CACHE=True  (default)" in out


def test_openmp_is_configured_when_it_is_asked_for_not_when_it_is_looked_up(monkeypatch):
    from dlc.runtime import jit

    try:
        jit.openmp_library()
    except jit.ThreadsUnavailable:
        pytest.skip("no libiomp5 here")
    monkeypatch.delenv("KMP_BLOCKTIME", raising=False)
    jit.openmp_library()  # (a lookup: the environment untouched)
    assert "KMP_BLOCKTIME" not in os.environ
    jit.runtime_libraries(threads=True)
    assert os.environ["KMP_BLOCKTIME"] == "1"
    monkeypatch.setenv("KMP_BLOCKTIME", "200")  # (the user's own value stays)
    jit.runtime_libraries(threads=True)
    assert os.environ["KMP_BLOCKTIME"] == "200"


@pytest.mark.parametrize("text, tile", [("1", 4), ("on", 4), ("4", 4), ("2", 2), ("0", 0),
                                        ("off", 0)])
def test_winograd_reads_the_largest_tile(text, tile, monkeypatch):
    monkeypatch.setenv("DLC_WINOGRAD", text)
    assert settings.WINOGRAD.get() == tile
