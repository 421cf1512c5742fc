"""Auto-tuning (`dlc.tuning`, `dlc tune`): the matmul family's parameter record and space, the
tuning database (keys, corrupt files, merge), records applied by `dlc.compile` (IR changed,
results still right, misses reported, heuristics-only IR unchanged), and tuning the MLP
through the local process pool and through a local Ray with 2 workers."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import matmul, matmul_params, target
from dlc.tuning import Database, TuningWarning, database, families, merge
from dlc.tuning.extract import tasks
from dlc.tuning.tune import problem_of
from tests.conftest import make_mlp, make_model, run_both

# 512-term sums of unit normals (values ~30): rounding differs with the summation order
MATMUL_TOLERANCES = {np.dtype(np.float32): (1e-4, 1e-4)}


def mlp() -> onnx.ModelProto:
    """Packed (64 x 784 x 256, 64 x 256 x 256) and plain (64 x 256 x 10) matmuls."""
    return make_mlp(batch=64, sizes=(784, 256, 256, 10), seed=0)


def models() -> dict[str, onnx.ModelProto]:
    rng = np.random.default_rng(0)
    relu = [helper.make_node("MatMul", ["a", "b"], ["c"]), helper.make_node("Relu", ["c"], ["y"])]
    weight = rng.standard_normal((512, 200)).astype(np.float32)
    return {
        "mlp": mlp(),
        "gemv": make_mlp(batch=1, sizes=(784, 256, 256, 10), seed=1),
        "batch": make_model(relu, {"a": (np.float32, [4, 64, 48]),
                                   "b": (np.float32, [4, 48, 96])}, ["y"]),
        "odd": make_model([helper.make_node("MatMul", ["a", "w"], ["y"])],
                          {"a": (np.float32, [37, 512])}, ["y"], {"w": weight}),
    }


def inputs_of(compiled: dlc.CompiledModel) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s.shape).astype(s.dtype) for s in compiled.signature.inputs]


def put(path: Path, key: str, params: dict | str, seconds: float = 1e-3) -> None:
    text = params if isinstance(params, str) else json.dumps(params)
    Database(path).put(database.Record(key, database.cpu_id(), database.version(), "matmul",
                                       "op", text, seconds, 2e-3, 1))


# ----------------------------------------------------------------------------- the space


def test_record_round_trips_and_its_space_holds_the_default():
    default = matmul.default_params()
    assert matmul_params.MatmulParams.from_dict(json.loads(json.dumps(default.as_dict()))) \
        == default
    for problem in (matmul.Contraction(None, 64, 256, 784), matmul.Contraction(None, 1, 256, 784),
                    matmul.Contraction(None, 64, 256, 784, packed=True)):
        space = families.MATMUL.space(problem)
        point = matmul_params.to_point(default)
        assert matmul_params.from_point(point) == default
        assert all(point[knob] in values for knob, values in space.items())
        matmul_params.check(default, space)
    assert len(families.MATMUL.space(matmul.Contraction(None, 64, 256, 784))["register"]) > 4


GOOD = {"register": [4, 16], "cache": [64, 512, 256], "outer": [128, 512], "gemv_kc": 16,
        "pack_kc": 512, "pack": True}


@pytest.mark.parametrize("change", [
    {"cache": None}, {"register": [4, "16"]}, {"register": [4, 16, 1]}, {"gemv_kc": 16.5},
    {"pack": 1}, {"pack_kc": True}, {"extra": 1},
])
def test_malformed_records_are_rejected(change):
    assert matmul_params.MatmulParams.from_dict(GOOD).as_dict() == GOOD
    older = {k: v for k, v in GOOD.items() if k != "pack"}  # (a record from before `pack`)
    assert matmul_params.MatmulParams.from_dict(older).pack is True
    data = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(ValueError):
        matmul_params.MatmulParams.from_dict(data)
    with pytest.raises(ValueError):
        matmul_params.MatmulParams.from_dict([1, 2, 3])


def test_default_record_gives_the_heuristic_schedule():
    problem = matmul.Contraction(None, 64, 200, 512)
    heuristic = matmul.lines("%op", problem, "s").ops
    assert families.MATMUL.signature(problem, matmul.default_params()).splitlines() == heuristic


# ----------------------------------------------------------------------------- keys


def test_keys_are_stable_across_processes():
    keys = [t.key for t in tasks(mlp())]
    assert len(keys) == 3 and len(set(keys)) == 3
    code = ("import sys; sys.path.insert(0, 'tests'); from conftest import make_mlp; "
            "from dlc.tuning.extract import tasks; "
            "print(' '.join(t.key for t in tasks(make_mlp(64, (784, 256, 256, 10), 0))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], check=True,
                         env={**os.environ, "DLC_TUNING_DB": "off", "PYTHONHASHSEED": "123"})
    assert out.stdout.split() == keys


def test_extracted_ops_carry_the_models_keys(db):
    compiled = dlc.compile(mlp())
    assert {c.key for c in compiled.tuning.choices} == {t.key for t in tasks(mlp())}
    assert len(compiled.tuning.heuristic) == 3 and not compiled.tuning.used


# ----------------------------------------------------------------------------- records


def test_heuristics_only_ir_is_unchanged_by_default_records(db, monkeypatch):
    for name, model in models().items():
        monkeypatch.setenv("DLC_TUNING_DB", "off")
        plain = dlc.compile(model)
        assert plain.tuning.database is None and not plain.tuning.used
        monkeypatch.setenv("DLC_TUNING_DB", str(db))
        for task in tasks(model):
            put(db, task.key, matmul.default_params().as_dict())
        tuned = dlc.compile(model)
        assert tuned.tuning.used and not tuned.tuning.heuristic, name
        for stage in ("linalg", "llvm"):
            assert tuned.ir(stage) == plain.ir(stage), (name, stage)


def _small_tile() -> list[int]:
    """A register tile other than the heuristic's, legal on the host: 2 rows, one vector."""
    return [2, target.current().lanes]


def test_a_record_changes_the_schedule_and_the_result_stays_right(db):
    model = models()["odd"]  # 37 x 512 x 200: the plain schedule, an M and an N remainder
    before = dlc.compile(model, opt_level=2)
    (task,) = tasks(model)
    params = dict(matmul.default_params().as_dict(), register=_small_tile(), cache=[16, 64, 128],
                  outer=[32, 128])
    put(db, task.key, params)
    inputs = inputs_of(before)
    after = run_both(model, inputs, tolerances=MATMUL_TOLERANCES)
    compiled = dlc.compile(model)
    assert [c.source for c in compiled.tuning.choices] == ["record"]
    assert compiled.ir("linalg") != before.ir("linalg")
    np.testing.assert_allclose(after[0], before(*inputs)[0], rtol=1e-4, atol=1e-4)


def test_a_record_can_unpack_a_packed_matmul(db):
    model = mlp()  # (its two large layers are packed by the heuristic)
    before = dlc.compile(model)
    assert "dlc.unpacked" not in before.ir("linalg")
    first = tasks(model)[0]
    assert families.MATMUL.space(problem_of(first))["pack"] == [False, True]
    put(db, first.key, dict(matmul.default_params().as_dict(), pack=False, register=[2, 16]))
    inputs = inputs_of(before)
    run_both(model, inputs, tolerances=MATMUL_TOLERANCES)
    after = dlc.compile(model)
    assert [c.source for c in after.tuning.choices] == ["record", "heuristic", "heuristic"]
    assert after.ir("linalg") != before.ir("linalg") and "dlc.unpacked" not in after.ir("linalg")


def test_a_record_that_no_longer_applies_is_a_visible_miss(db):
    model = models()["odd"]
    (task,) = tasks(model)
    put(db, task.key, dict(matmul.default_params().as_dict(), register=[3, 7]))
    with pytest.warns(TuningWarning, match=r"register=\[3, 7\] is not in this op's space"):
        compiled = dlc.compile(model)
    assert [c.source for c in compiled.tuning.choices] == ["miss"]
    assert "1 missed" in compiled.tuning.summary()
    run_both(model, inputs_of(compiled), tolerances=MATMUL_TOLERANCES)


def test_garbage_params_are_a_miss_not_a_crash(db):
    model = models()["odd"]
    (task,) = tasks(model)
    put(db, task.key, "{not json")
    with pytest.warns(TuningWarning, match="no longer applies"):
        compiled = dlc.compile(model)
    assert compiled.tuning.missed


@pytest.mark.parametrize("content", [b"this is not a database", b"SQLite format 3\0garbage"])
def test_a_corrupt_database_is_a_warning(db, content):
    db.write_bytes(content * 100)
    model = models()["odd"]
    with pytest.warns(TuningWarning, match="unreadable"):
        compiled = dlc.compile(model)
    assert not compiled.tuning.used
    run_both(model, inputs_of(compiled), tolerances=MATMUL_TOLERANCES)


def test_a_database_of_another_shape_is_a_warning(db):
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE records (key TEXT)")
        connection.execute("INSERT INTO records VALUES ('x')")
    with pytest.warns(TuningWarning, match="unreadable"):
        dlc.compile(models()["odd"])


def test_no_database_file_is_silent(db):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = dlc.compile(models()["odd"])
    assert [c.source for c in compiled.tuning.choices] == ["heuristic"]


def test_merge_keeps_the_faster_record(tmp_path):
    params = json.dumps(matmul.default_params().as_dict())
    put(tmp_path / "a.db", "k1", params, seconds=3e-3)
    put(tmp_path / "a.db", "k2", params, seconds=1e-3)
    put(tmp_path / "b.db", "k1", params, seconds=2e-3)
    put(tmp_path / "b.db", "k2", params, seconds=5e-3)
    assert merge(tmp_path / "a.db", tmp_path / "b.db") == 1
    seconds = {r.key: r.seconds for r in Database(tmp_path / "a.db").records()}
    assert seconds == {"k1": 2e-3, "k2": 1e-3}


def test_the_compile_cache_keys_on_the_database(db, cache_dir, monkeypatch):
    monkeypatch.setenv("DLC_TUNING_DB", str(db))
    model = models()["odd"]
    first = dlc.compile(model)
    assert first.tuning is not None  # (compiled, not a cache hit)
    (task,) = tasks(model)
    put(db, task.key, dict(matmul.default_params().as_dict(), register=_small_tile()))
    again = dlc.compile(model)
    assert again.tuning is not None and again.tuning.used  # (a new key: compiled again)


# ----------------------------------------------------------------------------- dlc tune


def test_tune_the_mlp_with_the_process_pool(tmp_path, db, capsys):
    from dlc.tools.dlc_cli import main

    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    assert main(["tune", str(path), "--trials", "3", "--budget", "2", "--db", str(db)]) == 0
    records = Database(db).records()
    assert len(records) == 3 and all(r.trials >= 1 and r.seconds > 0 for r in records)
    compiled = dlc.compile(mlp())
    assert len(compiled.tuning.used) == 3
    run_both(mlp(), inputs_of(compiled), tolerances=MATMUL_TOLERANCES)
    assert main(["tune", str(path), "--db", str(db)]) == 0  # (all known: nothing measured)
    assert "nothing to tune" in capsys.readouterr().out


def test_tune_the_mlp_on_a_local_ray_with_2_workers(tmp_path, db, capsys):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'dlc[tune]')")
    from dlc.tools.dlc_cli import main

    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    argv = ["tune", str(path), "--trials", "3", "--budget", "2", "--ray-address", "local",
            "--workers", "2", "--db", str(db)]
    assert main(argv) == 0
    assert "tuned 3 ops" in capsys.readouterr().out
    assert len(Database(db).records()) == 3
    compiled = dlc.compile(mlp())
    assert len(compiled.tuning.used) == 3
    run_both(mlp(), inputs_of(compiled), tolerances=MATMUL_TOLERANCES)


def test_merge_from_the_command_line(tmp_path, capsys):
    from dlc.tools.dlc_cli import main

    put(tmp_path / "other.db", "k", json.dumps(matmul.default_params().as_dict()))
    target = tmp_path / "main.db"
    assert main(["tune", "--merge", str(tmp_path / "other.db"), "--db", str(target)]) == 0
    assert [r.key for r in Database(target).records()] == ["k"]
    assert main(["tune", "--db", str(target)]) == 1  # (nothing to do: an error)
    (tmp_path / "bad.db").write_bytes(b"garbage" * 100)
    assert main(["tune", "--merge", str(tmp_path / "bad.db"), "--db", str(target)]) == 1
    assert "bad.db is unreadable (file is not a database)" in capsys.readouterr().err


def test_compile_timings_say_which_ops_used_a_record(tmp_path, db, capsys):
    from dlc.tools.dlc_cli import main

    model = models()["odd"]
    path = tmp_path / "odd.onnx"
    onnx.save(model, path)
    (task,) = tasks(model)
    put(db, task.key, dict(matmul.default_params().as_dict(), register=_small_tile()))
    assert main(["compile", str(path), "--timings"]) == 0
    out = capsys.readouterr().out
    assert "tuning records: 1 ops used a record, 0 the heuristic, 0 missed" in out
    assert "record    linalg.matmul 37x512 * 512x200" in out and task.key in out


def test_dlc_export_lowers_with_the_records(db, monkeypatch):
    from dlc.runtime.export import _lower

    model = models()["odd"]
    (task,) = tasks(model)
    heuristic = str(_lower(model, 2, None, None)[0])
    put(db, task.key, dict(matmul.default_params().as_dict(), register=_small_tile(),
                           cache=[16, 64, 128], outer=[32, 128]))
    assert str(_lower(model, 2, None, None)[0]) != heuristic
    monkeypatch.setenv("DLC_TUNING_DB", "off")
    assert str(_lower(model, 2, None, None)[0]) == heuristic


def test_list_with_a_model_lists_its_records_and_tunes_nothing(tmp_path, capsys):
    from dlc.tools.dlc_cli import main

    model = models()["odd"]
    onnx.save(model, tmp_path / "odd.onnx")
    (task,) = tasks(model)
    target = tmp_path / "list.db"
    put(target, task.key, json.dumps(matmul.default_params().as_dict()))
    put(target, "another-op", json.dumps(matmul.default_params().as_dict()))
    assert main(["tune", str(tmp_path / "odd.onnx"), "--list", "--db", str(target)]) == 0
    out = capsys.readouterr().out
    assert task.key in out and "another-op" not in out
    assert len(Database(target).records()) == 2  # (nothing tuned, nothing written)


@pytest.mark.parametrize("faster, stored", [(0.99, "heuristic"), (0.9, "other")])
def test_a_record_must_beat_the_heuristic_by_more_than_noise(tmp_path, faster, stored):
    """Confirmed 1 % faster: the record holds the heuristic's point; 10 %: the other's."""
    from dlc.tuning import tune as tuning_tune
    from dlc.tuning.measure import Measurement
    from dlc.tuning.search import History

    (task,) = tasks(models()["odd"])
    tunable = families.TUNABLES[task.family]
    heuristic = tunable.to_point(tunable.default(problem_of(task)))
    other = dict(heuristic, register=_small_tile())
    seconds = {json.dumps(tunable.from_point(heuristic).as_dict(), sort_keys=True): 1e-3,
               json.dumps(tunable.from_point(other).as_dict(), sort_keys=True): faster * 1e-3}

    class Pool:
        def map(self, jobs):
            return [Measurement(seconds[json.dumps(p, sort_keys=True)], database.cpu_id())
                    for _, p in jobs]

    history = History([(heuristic, 1e-3), (other, faster * 1e-3)])
    result = tuning_tune._record(task, Pool(), history, [], Database(tmp_path / "t.db"))
    expected = heuristic if stored == "heuristic" else other
    assert result.params == tunable.from_point(expected).as_dict()
