"""The disk cache (runtime/cache.py) against hostile or broken surroundings.

What a cache directory holds is never trusted: an entry proves itself with an HMAC under the
directory's own secret, so an entry copied from another model, an edited entry.json or a
planted shared object is a miss (recompiled), never loaded. A directory that another user owns
or could write is refused with a warning. Failed writes (a full disk, a file size limit, a
failing linker) leave the compile working, without the disk cache. A fork while another thread
is inside a call leaves the child's models callable.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc.errors import IndexOutOfRangeError
from dlc.runtime import cache
from tests.conftest import make_model

RNG = np.random.default_rng(1)
X = RNG.standard_normal((32, 48)).astype(np.float32)


def mlp(seed: int = 0) -> onnx.ModelProto:
    weight = np.random.default_rng(seed).standard_normal((48, 64)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    return make_model(nodes, {"x": (np.float32, [32, 48])}, ["y"], initializers={"w": weight})


def entries(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if not p.name.startswith(".")] if root.exists() else []


def kind(compiled: dlc.CompiledModel) -> str:
    return type(compiled._function).__name__


def recompile(model: onnx.ModelProto) -> dlc.CompiledModel:
    cache.forget_all()  # as in a new process
    return dlc.compile(model)


# ----------------------------------------------------------------------------- forged entries


def test_entry_copied_from_another_model_is_a_miss(cache_dir: Path) -> None:
    a, b = mlp(1), mlp(2)
    expected_a, expected_b = dlc.compile(a)(X)[0], dlc.compile(b)(X)[0]
    entry_a = next(e for e in entries(cache_dir) if e.name == cache_key(a))
    entry_b = next(e for e in entries(cache_dir) if e.name == cache_key(b))
    shutil.rmtree(entry_a)
    shutil.copytree(entry_b, entry_a)  # B's entry under A's key
    again = recompile(a)
    assert kind(again) == "JitFunction"
    np.testing.assert_array_equal(again(X)[0], expected_a)
    assert not np.array_equal(expected_a, expected_b)
    assert kind(recompile(a)) == "SharedObjectFunction"  # rewritten, and then a hit


def cache_key(model: onnx.ModelProto) -> str:
    return cache.model_key(model.SerializeToString(), 2, None, None,
                           options=f"threads={dlc.compiler.default_threads()}")


PLANTED = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
    FILE *marker = fopen(getenv("DLC_PLANTED_MARKER"), "w");
    if (marker) { fputs("the planted constructor ran", marker); fclose(marker); }
}
void _mlir_ciface_main(void *x, void *y) {}
"""


def test_planted_library_with_matching_digest_is_never_loaded(cache_dir: Path, tmp_path: Path,
                                                              monkeypatch) -> None:
    model = mlp()
    expected = dlc.compile(model)(X)[0]
    (entry,) = entries(cache_dir)
    marker = tmp_path / "marker"
    monkeypatch.setenv("DLC_PLANTED_MARKER", str(marker))
    (tmp_path / "planted.c").write_text(PLANTED)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(entry / "model.so"),
                    str(tmp_path / "planted.c")], check=True)
    meta = json.loads((entry / "entry.json").read_text())
    meta["sha256"] = cache._sha256(entry / "model.so")  # the digest matches the planted file
    (entry / "entry.json").write_text(json.dumps(meta))
    again = recompile(model)
    assert not marker.exists(), "dlc dlopen'ed a planted shared object"
    assert kind(again) == "JitFunction"
    np.testing.assert_array_equal(again(X)[0], expected)


def test_entry_edited_to_a_smaller_input_is_a_miss(cache_dir: Path) -> None:
    model = mlp()
    dlc.compile(model)
    (entry,) = entries(cache_dir)
    meta = json.loads((entry / "entry.json").read_text())
    meta["inputs"][0]["shape"] = [1, 48]  # the code still reads 32 rows
    (entry / "entry.json").write_text(json.dumps(meta))
    again = recompile(model)
    assert kind(again) == "JitFunction"
    assert again.signature.inputs[0].shape == (32, 48)
    with pytest.raises(ValueError, match=r"input 'x' has shape \[1, 48\], expected \[32, 48\]"):
        again(X[:1])


def test_runtime_checks_survive_the_disk_cache(cache_dir: Path) -> None:
    data = np.arange(20, dtype=np.float32).reshape(5, 4)
    model = make_model([helper.make_node("Gather", ["d", "i"], ["y"])], {"i": (np.int64, [3])},
                       ["y"], initializers={"d": data})
    compiled = dlc.compile(model)
    loaded = recompile(model)
    assert kind(loaded) == "SharedObjectFunction"
    assert loaded._function.checks == compiled._function.checks != ()
    with pytest.raises(IndexOutOfRangeError, match="Gather_0"):
        loaded(np.array([0, 7, 1], np.int64))
    np.testing.assert_array_equal(loaded(np.array([4, 0, 1]))[0], data[[4, 0, 1]])


def deep(meta: dict) -> str:
    return "[" * 200_000 + "]" * 200_000


DAMAGES = {
    "deep nesting": deep,
    "a list": lambda meta: json.dumps([meta]),
    "a number": lambda meta: "5",
    "null": lambda meta: "null",
    "not utf-8": lambda meta: b"\xff\xfe{",
    "inputs a string": lambda meta: json.dumps({**meta, "inputs": "x"}),
    "shape of strings": lambda meta: json.dumps(
        {**meta, "inputs": [{**meta["inputs"][0], "shape": ["32", "48"]}]}),
    "shape of booleans": lambda meta: json.dumps(
        {**meta, "inputs": [{**meta["inputs"][0], "shape": [True, 48]}]}),
    "huge float": lambda meta: json.dumps(
        {**meta, "inputs": [{**meta["inputs"][0], "shape": [32, 48]}]}).replace("[32, 48]",
                                                                                 "[1e400, 48]"),
    "huge integer": lambda meta: json.dumps(
        {**meta, "inputs": [{**meta["inputs"][0], "shape": [32, 10**40]}]}),
    "many digits": lambda meta: json.dumps(meta).replace("[32, 48]", "[32, " + "9" * 5000 + "]"),
    "unknown dtype": lambda meta: json.dumps(
        {**meta, "inputs": [{**meta["inputs"][0], "dtype": "O"}]}),
    "checks a string": lambda meta: json.dumps({**meta, "checks": "abc"}),
    "mac of a number": lambda meta: json.dumps({**meta, "mac": 1}),
    "no mac": lambda meta: json.dumps({k: v for k, v in meta.items() if k != "mac"}),
    "format a string": lambda meta: json.dumps({**meta, "format": "2"}),
}


@pytest.mark.parametrize("damage", [*DAMAGES, "no entry.json", "no model.so", "entry is a file",
                                    "entry is a link", "library is a link", "empty secret"])
def test_damaged_entry_of_any_shape_is_recompiled(cache_dir: Path, damage: str) -> None:
    model = mlp()
    expected = dlc.compile(model)(X)[0]
    (entry,) = entries(cache_dir)
    meta_path = entry / "entry.json"
    if damage in DAMAGES:
        damaged = DAMAGES[damage](json.loads(meta_path.read_text()))
        meta_path.write_bytes(damaged if isinstance(damaged, bytes) else damaged.encode())
    elif damage == "no entry.json":
        meta_path.unlink()
    elif damage == "no model.so":
        (entry / "model.so").unlink()
    elif damage == "entry is a file":
        shutil.rmtree(entry)
        entry.write_text("{}")
    elif damage == "entry is a link":
        moved = entry.rename(entry.with_name("moved"))
        entry.symlink_to(moved)
    elif damage == "library is a link":
        (entry / "model.so").rename(entry / "real.so")
        (entry / "model.so").symlink_to(entry / "real.so")
    else:
        (cache_dir / ".secret").write_bytes(b"")
    again = recompile(model)
    assert kind(again) == "JitFunction"  # compiled again, never loaded
    np.testing.assert_array_equal(again(X)[0], expected)
    assert kind(recompile(model)) == "SharedObjectFunction"  # the entry was written again


# ----------------------------------------------------------------------------- permissions


def test_files_are_private(cache_dir: Path) -> None:
    dlc.compile(mlp())
    (entry,) = entries(cache_dir)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) == 0o700
    for path in (cache_dir / ".secret", entry / "entry.json", entry / "model.so"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert sorted(p.name for p in entry.iterdir()) == ["entry.json", "model.so"]


def test_cache_directory_writable_by_others_is_refused(cache_dir: Path) -> None:
    model = mlp()
    cache_dir.mkdir(mode=0o700)
    cache_dir.chmod(0o777)
    with pytest.warns(cache.CacheWarning, match=rf"{cache_dir}.*writable by group and others"
                                                r".*chmod go-w.*DLC_CACHE_DIR"):
        compiled = dlc.compile(model)
    assert not entries(cache_dir)  # nothing written to it
    cache_dir.chmod(0o700)
    recompile(model)
    assert len(entries(cache_dir)) == 1
    cache_dir.chmod(0o770)
    with pytest.warns(cache.CacheWarning, match="writable by group"):
        again = recompile(model)
    assert kind(again) == "JitFunction"  # nothing read from it either
    np.testing.assert_array_equal(again(X)[0], compiled(X)[0])


def test_entry_writable_by_others_is_refused(cache_dir: Path) -> None:
    model = mlp()
    compiled = dlc.compile(model)
    (entry,) = entries(cache_dir)
    entry.chmod(0o757)
    with pytest.warns(cache.CacheWarning, match=rf"{entry}.*writable by others"):
        again = recompile(model)
    assert kind(again) == "JitFunction"
    np.testing.assert_array_equal(again(X)[0], compiled(X)[0])


def test_secret_readable_by_others_is_refused(cache_dir: Path) -> None:
    model = mlp()
    compiled = dlc.compile(model)
    (cache_dir / ".secret").chmod(0o644)  # others could forge entries with it
    with pytest.warns(cache.CacheWarning, match=r"secret .*readable or writable by group and "
                                                r"others.*chmod go-rwx"):
        again = recompile(model)
    assert kind(again) == "JitFunction"
    np.testing.assert_array_equal(again(X)[0], compiled(X)[0])


def test_cache_directory_of_another_user_is_refused(cache_dir: Path, monkeypatch) -> None:
    model = mlp()
    cache_dir.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(cache_dir, 65534, -1)  # (nobody)
    else:  # (only root can give a folder away: this user is then someone else)
        monkeypatch.setattr(cache, "_user", lambda: os.geteuid() + 1)
    with pytest.warns(cache.CacheWarning, match=rf"{cache_dir}.*owned by uid \d+, not by this"
                                                r" user.*DLC_CACHE_DIR"):
        compiled = dlc.compile(model)
    assert not entries(cache_dir)
    np.testing.assert_array_equal(compiled(X)[0], dlc.compile(model)(X)[0])


# ----------------------------------------------------------------------------- failed writes

FULL_DISK = """
import resource, sys
import numpy as np
import onnx
import dlc
model = onnx.load(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))  # the disk is full
compiled = dlc.compile(model)
np.save(sys.stdout.buffer, compiled(np.load(sys.argv[2]))[0])
"""


def test_full_disk_compiles_without_caching(cache_dir: Path, tmp_path: Path) -> None:
    # LLVM reports a failed write with a fatal error that exits the process: the object file
    # is written by a forked child
    model = mlp()
    onnx.save(model, tmp_path / "model.onnx")
    np.save(tmp_path / "x.npy", X)
    env = {**os.environ, "DLC_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path / "model.onnx"),
                          str(tmp_path / "x.npy")], check=False, capture_output=True, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    assert b"CacheWarning" in run.stderr and b"File too large" in run.stderr
    out = tmp_path / "y.npy"
    out.write_bytes(run.stdout)
    np.testing.assert_allclose(np.load(out), np.maximum(X @ model_weight(model), 0), rtol=1e-4,
                               atol=1e-5)
    assert not entries(cache_dir)
    assert [p.name for p in cache_dir.iterdir()] == [".secret"]  # no half-written folder left


def model_weight(model: onnx.ModelProto) -> np.ndarray:
    return onnx.numpy_helper.to_array(model.graph.initializer[0])


def test_failing_linker_compiles_without_caching(cache_dir: Path, tmp_path: Path,
                                                 monkeypatch) -> None:
    linker = tmp_path / "cc"
    linker.write_text("#!/bin/sh\necho 'ld: no space left on device' >&2\nexit 1\n")
    linker.chmod(0o755)
    monkeypatch.setattr(cache, "_linker", lambda: str(linker))
    with pytest.warns(cache.CacheWarning, match="no space left on device"):
        compiled = dlc.compile(mlp())
    assert not entries(cache_dir)
    assert np.isfinite(compiled(X)[0]).all()


# ----------------------------------------------------------------------------- fork

FORK = """
import os, sys, threading, time
import numpy as np
import onnx
import dlc
from dlc.runtime import cache
model = onnx.load(sys.argv[1])
compiled = dlc.compile(model)
if sys.argv[2] == "disk":
    cache.forget_all()
    compiled = dlc.compile(model)
assert type(compiled._function).__name__ == sys.argv[3], type(compiled._function)
x = np.ones((32, 48), np.float32)
expected = compiled(x)[0]
inside, leave = threading.Event(), threading.Event()


def call_in_flight():
    with compiled._function._lock:  # what a call holds until its native code returns
        inside.set()
        leave.wait()


thread = threading.Thread(target=call_in_flight)
thread.start()
inside.wait()
pid = os.fork()
if pid == 0:
    code = 3
    try:
        code = 0 if np.array_equal(compiled(x)[0], expected) else 4
    finally:
        os._exit(code)
deadline = time.monotonic() + 60
while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
if status[0] == 0:  # the child hangs: never hang the suite
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("the forked child hung in a call")
    code = 2
else:
    code = os.waitstatus_to_exitcode(status[1])
leave.set()
thread.join()
sys.exit(code)
"""


@pytest.mark.parametrize("where,function", [("jit", "JitFunction"),
                                            ("disk", "SharedObjectFunction")])
def test_fork_while_another_thread_is_in_a_call(cache_dir: Path, tmp_path: Path, where: str,
                                                function: str) -> None:
    onnx.save(mlp(), tmp_path / "model.onnx")
    env = {**os.environ, "DLC_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", FORK, str(tmp_path / "model.onnx"), where,
                          function], check=False, capture_output=True, env=env, timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr).decode()
