"""The disk memo of model files' digests (`cache.file_digest`, issue 20): a model compiled from
a path in a new process finds its cache entry without reading and hashing the file again, and
a memo is never trusted beyond what its MAC and the file's identity and state prove: a changed
file is hashed again (a miss if its bytes changed), and a forged, copied, damaged or exposed
memo is ignored, never a wrong answer or a crash."""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import os
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc.runtime import cache
from tests.conftest import make_model

RNG = np.random.default_rng(7)
X = RNG.standard_normal((32, 48)).astype(np.float32)


def mlp(seed: int) -> onnx.ModelProto:
    weight = np.random.default_rng(seed).standard_normal((48, 64)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    return make_model(nodes, {"x": (np.float32, [32, 48])}, ["y"], initializers={"w": weight})


def expected(seed: int) -> np.ndarray:
    weight = np.random.default_rng(seed).standard_normal((48, 64)).astype(np.float32)
    return np.maximum(X @ weight, 0)


def new_process() -> None:
    """What a new process starts without: the memory level and the in-process digests."""
    cache.forget_all()
    cache._FILE_DIGESTS.clear()


def kind(compiled) -> str:
    return type(compiled._function).__name__


def memo_of(cache_dir: Path, path: Path) -> Path:
    return cache._memo_path(cache_dir / cache.DIGESTS, str(path.resolve()))


@pytest.fixture
def settled(monkeypatch) -> None:
    """Files written by a test are memoized at once (not left alone as racily changed)."""
    monkeypatch.setattr(cache, "RACY_SECONDS", 0.0)


def reads_of(monkeypatch, path: Path) -> list[str]:
    """The opens of `path` from now on (by `open` or `os.open`)."""
    seen: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file, *args, **kwargs):
        if str(file) == str(path):
            seen.append("open")
        return real_open(file, *args, **kwargs)

    def spy_os_open(file, *args, **kwargs):
        if str(file) == str(path):
            seen.append("os.open")
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    return seen


def test_a_new_process_finds_the_entry_without_hashing_the_file(cache_dir, tmp_path, settled,
                                                                  monkeypatch) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(mlp(1), path)
    first = dlc.compile(str(path))
    np.testing.assert_allclose(first(X)[0], expected(1), rtol=1e-5, atol=1e-5)
    memo = memo_of(cache_dir, path)
    assert memo.is_file() and memo.stat().st_mode & 0o777 == 0o600
    assert json.loads(memo.read_text())["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    new_process()
    reads = reads_of(monkeypatch, path)
    loaded = dlc.compile(str(path))
    assert reads == []  # (the key from the memo; the entry loaded: no import)
    assert kind(loaded) == "SharedObjectFunction"
    np.testing.assert_array_equal(loaded(X)[0], first(X)[0])


def test_a_changed_file_is_hashed_again(cache_dir, tmp_path, settled) -> None:
    """The same path, the same size, even the same modification time: new bytes are a new key
    (the change time moved), never the entry of the old bytes."""
    path = tmp_path / "m.onnx"
    onnx.save(mlp(1), path)
    dlc.compile(str(path))
    before = path.stat()
    onnx.save(mlp(2), path)
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    new_process()
    again = dlc.compile(str(path))
    assert kind(again) == "JitFunction"  # a miss: compiled
    np.testing.assert_allclose(again(X)[0], expected(2), rtol=1e-5, atol=1e-5)
    memo = json.loads(memo_of(cache_dir, path).read_text())
    assert memo["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()  # (rewritten)


def forge_digest(memo: dict, other: dict, secret: bytes) -> dict:
    return {**memo, "sha256": other["sha256"]}


def forge_with_another_secret(memo: dict, other: dict, secret: bytes) -> dict:
    identity = tuple(memo["identity"])
    return {**memo, "sha256": other["sha256"],
            "mac": cache._digest_mac(b"\0" * 32, identity, other["sha256"])}


def forge_identity(memo: dict, other: dict, secret: bytes) -> dict:
    return other  # (the other file's memo, whole: its identity is not this file's)


DAMAGES = {
    "the other model's digest": forge_digest,
    "a MAC under another secret": forge_with_another_secret,
    "the other file's memo": forge_identity,
    "not JSON": lambda memo, other, secret: b"\xff{",
    "deep nesting": lambda memo, other, secret: "[" * 200_000 + "]" * 200_000,
    "a list": lambda memo, other, secret: [memo],
    "a digest of the wrong type": lambda memo, other, secret: {**memo, "sha256": 5},
    "a huge number": lambda memo, other, secret: json.dumps(memo).replace(
        str(memo["identity"][3]), "9" * 5000),
    "an extra field": lambda memo, other, secret: {**memo, "note": 1},
    "too large": lambda memo, other, secret: {**memo, "pad": "x" * 10_000},
}


def write_memo(path: Path, content) -> None:
    if not isinstance(content, bytes | str):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    path.unlink()
    path.write_bytes(content)
    path.chmod(0o600)


def two_models(cache_dir: Path, tmp_path: Path) -> tuple[Path, Path, dict, dict, bytes]:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(mlp(1), a)
    onnx.save(mlp(2), b)
    dlc.compile(str(a)), dlc.compile(str(b))
    memo_a = json.loads(memo_of(cache_dir, a).read_text())
    memo_b = json.loads(memo_of(cache_dir, b).read_text())
    return a, b, memo_a, memo_b, (cache_dir / cache.SECRET).read_bytes()


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_forged_or_damaged_memo_is_ignored(cache_dir, tmp_path, settled, damage) -> None:
    """B's memo made to claim A's digest (whose entry is on disk: a wrong answer if it were
    believed), or damaged in any shape: B is hashed and B's own entry is loaded."""
    a, b, memo_a, memo_b, secret = two_models(cache_dir, tmp_path)
    write_memo(memo_of(cache_dir, b), DAMAGES[damage](memo_b, memo_a, secret))
    new_process()
    loaded = dlc.compile(str(b))
    assert kind(loaded) == "SharedObjectFunction"  # (B's entry, found by B's true digest)
    np.testing.assert_allclose(loaded(X)[0], expected(2), rtol=1e-5, atol=1e-5)
    assert cache.file_digest(b) == hashlib.sha256(b.read_bytes()).digest()


def test_a_memo_with_a_valid_mac_but_exposed_or_linked_is_ignored(cache_dir, tmp_path,
                                                                    settled) -> None:
    """Only a regular file of this user that no one else may write is read: a memo that others
    could write (here: a valid MAC for A's digest on B's identity) or a link is not."""
    a, b, memo_a, memo_b, secret = two_models(cache_dir, tmp_path)
    identity = tuple(memo_b["identity"])
    forged = {**memo_b, "sha256": memo_a["sha256"],
              "mac": cache._digest_mac(secret, identity, memo_a["sha256"])}
    memo = memo_of(cache_dir, b)
    write_memo(memo, forged)
    memo.chmod(0o622)
    new_process()
    np.testing.assert_allclose(dlc.compile(str(b))(X)[0], expected(2), rtol=1e-5, atol=1e-5)
    memo.unlink(missing_ok=True)
    forged_file = tmp_path / "forged.json"
    forged_file.write_text(json.dumps(forged))
    forged_file.chmod(0o600)
    memo.symlink_to(forged_file)
    new_process()
    np.testing.assert_allclose(dlc.compile(str(b))(X)[0], expected(2), rtol=1e-5, atol=1e-5)
    # (and the MAC is what the check rests on: the same memo, private, is believed)
    memo.unlink()
    write_memo_new = memo
    write_memo_new.write_text(json.dumps(forged))
    write_memo_new.chmod(0o600)
    new_process()
    assert cache.file_digest(b) == bytes.fromhex(memo_a["sha256"])
    assert hmac.compare_digest(forged["mac"], cache._digest_mac(secret, identity,
                                                                memo_a["sha256"]))


def test_a_memo_copied_from_another_cache_directory_is_ignored(cache_dir, tmp_path, settled,
                                                               monkeypatch) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(mlp(1), path)
    dlc.compile(str(path))
    other = tmp_path / "other-cache"
    monkeypatch.setenv("DLC_CACHE_DIR", str(other))
    new_process()
    dlc.compile(str(path))  # (its own secret and memo)
    memo = json.loads(memo_of(other, path).read_text())
    write_memo(memo_of(other, path), {**memo, "sha256": "0" * 64,
                                      "mac": json.loads(memo_of(cache_dir, path).read_text())[
                                          "mac"]})
    new_process()
    assert cache.file_digest(path) == hashlib.sha256(path.read_bytes()).digest()


def test_a_file_changed_just_now_is_not_memoized_on_disk(cache_dir, tmp_path) -> None:
    """A file written in the last RACY_SECONDS may change again within the same tick of the
    file system's clock, its times unchanged: it is hashed, not memoized on disk."""
    path = tmp_path / "m.onnx"
    onnx.save(mlp(1), path)
    compiled = dlc.compile(str(path))
    assert not memo_of(cache_dir, path).exists()
    old = time.time() - 60
    os.utime(path, (old, old))  # (its change time is still now)
    new_process()
    assert kind(dlc.compile(str(path))) == "SharedObjectFunction"
    assert not memo_of(cache_dir, path).exists()
    np.testing.assert_allclose(compiled(X)[0], expected(1), rtol=1e-5, atol=1e-5)


def test_no_memo_without_a_usable_disk_cache(cache_dir, tmp_path, settled, monkeypatch) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(mlp(1), path)
    monkeypatch.setenv("DLC_CACHE", "0")
    dlc.compile(str(path))
    assert not (cache_dir / cache.DIGESTS).exists()
    monkeypatch.setenv("DLC_CACHE", "1")
    cache_dir.mkdir(mode=0o700)
    cache_dir.chmod(0o777)  # (refused by the compile, with its warning; no memo either)
    new_process()
    with pytest.warns(cache.CacheWarning, match="writable by"):
        compiled = dlc.compile(str(path))
    assert not (cache_dir / cache.DIGESTS).exists()
    np.testing.assert_allclose(compiled(X)[0], expected(1), rtol=1e-5, atol=1e-5)


def test_memos_are_bounded(cache_dir, tmp_path, settled, monkeypatch) -> None:
    monkeypatch.setattr(cache, "DIGEST_MEMOS", 4)
    for i in range(7):
        path = tmp_path / f"m{i}.bin"
        path.write_bytes(bytes([i]) * 100)
        assert cache.file_digest(path) == hashlib.sha256(bytes([i]) * 100).digest()
    memos = [p for p in (cache_dir / cache.DIGESTS).iterdir() if not p.name.startswith(".")]
    assert 1 <= len(memos) <= 4


def test_a_hit_in_a_new_process_imports_no_onnx_and_no_later_stage(cache_dir, tmp_path, settled) -> None:
    """A new process that compiles a cached model file loads its entry without importing onnx
    (onnx and its ml_dtypes: most of a new process's hit) or reading the file."""
    import subprocess
    import sys

    path = tmp_path / "m.onnx"
    onnx.save(mlp(1), path)
    expected_y = dlc.compile(str(path))(X)[0]
    np.save(tmp_path / "x.npy", X)
    script = f"""
import builtins, sys
import numpy as np
real_open = builtins.open
def spy(file, *args, **kwargs):
    assert str(file) != {str(path)!r}, "the model file was read"
    return real_open(file, *args, **kwargs)
builtins.open = spy
import dlc
compiled = dlc.compile({str(path)!r})
assert "onnx" not in sys.modules, "onnx was imported"
# (nor the compiler's later stages: the schedules' codegen through the tuning records, the
# llvm dialect of the weights' pass, the index checks' lowering: 0.17 s of a hit together)
late = [m for m in ("dlc.tuning.families", "dlc.passes.codegen.matmul", "mlir.dialects.llvm",
                    "dlc.passes.lowering.checks") if m in sys.modules]
assert not late, f"a hit imported {{late}}"
print(type(compiled._function).__name__)
np.save({str(tmp_path / 'y.npy')!r}, compiled(np.load({str(tmp_path / 'x.npy')!r}))[0])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "DLC_CACHE_DIR": str(cache_dir)}, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["SharedObjectFunction"]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), expected_y)
