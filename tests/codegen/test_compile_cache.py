"""The compile cache (runtime/cache.py): in memory, on disk, keys, and damaged entries."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.runtime import cache
from tests.conftest import make_model

RNG = np.random.default_rng(0)


def mlp(hidden: int = 64):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    weight = RNG.standard_normal((48, hidden)).astype(np.float32)
    return make_model(nodes, {"x": (np.float32, [32, 48])}, ["y"], initializers={"w": weight})


def entries(root: Path) -> list[Path]:
    if not root.exists():  # (nothing was ever written)
        return []
    return [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]


def test_same_model_in_one_process_is_the_same_compiled_model(cache_dir: Path) -> None:
    model = mlp()
    first = dlc.compile(model)
    start = time.perf_counter()
    assert dlc.compile(model) is first
    assert time.perf_counter() - start < 1.0
    assert dlc.compile(model, opt_level=1) is not first  # the opt level is part of the key


def test_disk_entry_is_reloaded_with_identical_results(cache_dir: Path) -> None:
    model = mlp()
    compiled = dlc.compile(model)
    (entry,) = entries(cache_dir)
    assert (entry / "model.so").exists() and (entry / "entry.json").exists()
    cache.forget_all()  # as in a new process
    start = time.perf_counter()
    reloaded = dlc.compile(model)
    assert time.perf_counter() - start < 1.0
    assert reloaded is not compiled and reloaded.signature == compiled.signature
    x = RNG.standard_normal((32, 48)).astype(np.float32)
    np.testing.assert_array_equal(reloaded(x)[0], compiled(x)[0])
    assert "linalg.generic" in reloaded.ir("linalg") or "vector." in reloaded.ir("linalg")


def test_instances_of_one_library_share_its_arena_and_its_lock(cache_dir: Path) -> None:
    # dlc-plan-buffers puts the intermediates in a static arena: two models loaded from the
    # same cached library (dlopen: one copy) share it, so their calls must not overlap
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"]),
                        helper.make_node("Relu", ["h"], ["r"]),
                        helper.make_node("MatMul", ["r", "w2"], ["y"])],
                       {"x": (np.float32, [32, 48])}, ["y"],
                       initializers={"w": RNG.standard_normal((48, 64)).astype(np.float32),
                                     "w2": RNG.standard_normal((64, 16)).astype(np.float32)})
    compiled = dlc.compile(model)
    assert "__dlc_arena" in compiled.ir("bufferized")
    cache.forget_all()
    first = dlc.compile(model)
    cache.forget_all()
    second = dlc.compile(model)
    assert first is not second and first._function._lock is second._function._lock
    x = RNG.standard_normal((32, 48)).astype(np.float32)
    np.testing.assert_array_equal(first(x)[0], second(x)[0])


def test_entry_records_its_key_signature_and_checks(cache_dir: Path) -> None:
    data = np.arange(20, dtype=np.float32).reshape(5, 4)
    model = make_model([helper.make_node("Gather", ["d", "i"], ["y"])], {"i": (np.int64, [3])},
                       ["y"], initializers={"d": data})
    compiled = dlc.compile(model)
    (entry,) = entries(cache_dir)
    meta = json.loads((entry / "entry.json").read_text())
    assert meta["key"] == entry.name and len(meta["mac"]) == 64
    assert meta["checks"] == list(compiled._function.checks) != []
    assert meta["inputs"] == [{"name": "i", "shape": [3], "dtype": "<i8"}]
    cache.forget_all()
    loaded = dlc.compile(model)._function
    assert type(loaded).__name__ == "SharedObjectFunction"
    assert loaded.signature == compiled.signature and loaded.checks == compiled._function.checks


@pytest.mark.parametrize("damage", ["truncate", "garbage json", "wrong digest", "no library"])
def test_damaged_entry_is_recompiled_never_a_crash(cache_dir: Path, damage: str) -> None:
    model = mlp()
    x = RNG.standard_normal((32, 48)).astype(np.float32)
    expected = dlc.compile(model)(x)[0]
    (entry,) = entries(cache_dir)
    library, meta = entry / "model.so", entry / "entry.json"
    if damage == "truncate":
        library.write_bytes(library.read_bytes()[:1000])
    elif damage == "garbage json":
        meta.write_text("{not json")
    elif damage == "wrong digest":
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "sha256": "0" * 64}))
    else:
        library.unlink()
    cache.forget_all()
    recompiled = dlc.compile(model)
    assert type(recompiled._function).__name__ == "JitFunction"  # compiled again, not loaded
    np.testing.assert_array_equal(recompiled(x)[0], expected)
    cache.forget_all()
    assert type(dlc.compile(model)._function).__name__ == "SharedObjectFunction"  # rewritten


def test_cache_can_be_disabled(cache_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("DLC_CACHE", "0")
    model = mlp()
    assert dlc.compile(model) is not dlc.compile(model)
    assert not entries(cache_dir)


def test_key_depends_on_model_options_and_constants() -> None:
    base = cache.model_key(b"model", 2, None, None)
    assert base == cache.model_key(b"model", 2, None, None)
    assert base != cache.model_key(b"other", 2, None, None)
    assert base != cache.model_key(b"model", 3, None, None)
    assert base != cache.model_key(b"model", 2, {"x": [1, 2]}, None)
    assert base != cache.model_key(b"model", 2, None, {"s": np.array([1, 2])})
    assert (cache.model_key(b"model", 2, None, {"s": np.array([1, 2])})
            != cache.model_key(b"model", 2, None, {"s": np.array([1, 3])}))


def test_disk_level_keeps_the_recently_used_entries_within_its_bound(cache_dir: Path) -> None:
    models = [mlp(hidden) for hidden in (16, 32, 64)]
    for model in models:
        dlc.compile(model)
    first, second, third = sorted(entries(cache_dir), key=lambda e: e.stat().st_mtime)
    size = sum(f.stat().st_size for f in first.iterdir())
    old = time.time() - 60
    for age, entry in enumerate((first, second, third)):
        os.utime(entry / "entry.json", (old + age, old + age))
    cache.forget_all()
    dlc.compile(models[0])  # loaded from disk: now the most recently used
    cache.prune(cache_dir, 2 * size + size // 2)  # room for two entries (3/4 of it: one)
    assert entries(cache_dir) == [first]


def test_cache_bound_applies_when_writing(cache_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("DLC_CACHE_MAX_MB", "0")  # nothing stays on disk...
    model = mlp(24)
    compiled = dlc.compile(model)
    assert not entries(cache_dir)
    x = RNG.standard_normal((32, 48)).astype(np.float32)
    assert np.isfinite(compiled(x)[0]).all()  # ...and the compiled model still runs


def test_memory_level_is_bounded_by_weight_bytes(monkeypatch) -> None:
    class Function:
        def __init__(self, megabytes: int):
            self.weights = [np.zeros(megabytes * 2**18, np.float32)]  # (MB of float32)

    class Model:
        def __init__(self, megabytes: int):
            self._function = Function(megabytes)

    monkeypatch.setenv("DLC_CACHE_MEMORY_MB", "10")
    cache.forget_all()
    try:
        for i in range(4):
            cache.remember(f"k{i}", Model(4))  # 4 MB each: two fit in 10 MB
        assert [cache.recall(f"k{i}") is not None for i in range(4)] == [False, False, True,
                                                                          True]
        cache.remember("big", Model(32))  # over the bound alone: kept, the others dropped
        assert cache.recall("big") is not None and cache.recall("k3") is None
    finally:
        cache.forget_all()


def test_a_model_file_is_hashed_once_while_it_does_not_change(tmp_path, monkeypatch, cache_dir):
    """The cache key of a model file comes from its sha256, remembered by the file's identity
    and state: compiling it again (a DynamicModel's next shape, a recompile) does not read and
    hash the file again; a changed file (same size, new bytes) gets a new key."""
    import hashlib
    import os

    from dlc import compiler

    path = tmp_path / "m.onnx"
    path.write_bytes(b"x" * 1000)
    first = compiler._cache_key(str(path), 2, None, None, 1)
    assert cache.file_digest(path) == hashlib.sha256(b"x" * 1000).digest()
    reads = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, *a, **k: reads.append(p) or real_open(p, *a, **k))
    assert compiler._cache_key(str(path), 2, None, None, 1) == first
    assert reads == []  # (remembered: not read again)
    monkeypatch.undo()
    path.write_bytes(b"y" * 1000)
    os.utime(path, ns=(1, 1))  # (even a file whose time went back: its ctime moved)
    assert compiler._cache_key(str(path), 2, None, None, 1) != first
    assert compiler._cache_key(str(tmp_path / "missing.onnx"), 2, None, None, 1) is None
    assert compiler._cache_key(str(tmp_path), 2, None, None, 1) is None  # (a folder)
