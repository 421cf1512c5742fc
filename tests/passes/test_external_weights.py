"""Weights out of the object code (dlc-external-weights, issue 20): a compiled model's large
constants are zero-initialized globals filled at load time, from the IR's values in the JIT
and from the entry's weights.bin in the disk cache; results are the same, bit for bit, and
`ir("llvm")` still shows the values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc.runtime import cache
from tests.conftest import make_model

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 64)).astype(np.float32)
W = RNG.standard_normal((64, 128)).astype(np.float32)  # 32 KiB: external
B = RNG.standard_normal((128,)).astype(np.float32)  # 512 bytes: stays in the code
T = RNG.integers(-1000, 1000, (64, 128)).astype(np.int32)  # 32 KiB of integers
N = np.arange(4 * 128, dtype=np.int32).reshape(4, 128)
I = np.array([3, 0, 63, 7], np.int64)


def model() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["y"]),
             helper.make_node("Gather", ["t", "i"], ["g"], axis=0),
             helper.make_node("Add", ["g", "n"], ["z"])]
    return make_model(nodes, {"x": (np.float32, [4, 64]), "i": (np.int64, [4])}, ["y", "z"],
                      initializers={"w": W, "b": B, "t": T, "n": N})



def expected() -> list[np.ndarray]:
    return [X @ W + B, T[I] + N]


def check(compiled: dlc.CompiledModel) -> list[np.ndarray]:
    y, z = compiled(X, I)
    want_y, want_z = expected()
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(z, want_z)
    return [y, z]


def test_large_constants_are_bound_at_load(monkeypatch) -> None:
    monkeypatch.setenv("DLC_CACHE", "0")
    compiled = dlc.compile(model())
    check(compiled)
    weights = compiled._function.weights  # the two 32 KiB constants, not the bias
    assert sorted(w.nbytes for w in weights) == [W.nbytes, T.nbytes]
    llvm = compiled.ir("llvm", large_elements_limit=16)
    assert "_mlir_dlc_weights" not in llvm and "dlc.weights" not in llvm  # (the snapshot)
    assert llvm.count("llvm.mlir.global private constant") >= 3


def test_same_results_as_weights_in_the_code(monkeypatch) -> None:
    monkeypatch.setenv("DLC_CACHE", "0")
    bound = dlc.compile(model())(X, I)
    monkeypatch.setattr(dlc.compiler, "EXTERNAL_WEIGHT_BYTES", 1 << 62)
    inline = dlc.compile(model())
    assert inline._function.weights == []
    for a, b in zip(bound, inline(X, I), strict=True):
        np.testing.assert_array_equal(a, b)


def test_disk_cache_restores_the_weights(cache_dir: Path) -> None:
    first = check(dlc.compile(model()))
    (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    assert (entry / "weights.bin").stat().st_size == W.nbytes + T.nbytes
    cache.forget_all()
    loaded = dlc.compile(model())
    assert type(loaded._function).__name__ == "SharedObjectFunction"
    for a, b in zip(first, check(loaded), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "longer", "missing"])
def test_damaged_weights_are_a_miss(cache_dir: Path, damage: str) -> None:
    dlc.compile(model())
    (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    path = entry / "weights.bin"
    data = bytearray(path.read_bytes())
    if damage == "flipped byte":
        data[100] ^= 1
    elif damage == "truncated":
        data = data[:-64]
    elif damage == "longer":
        data += bytes(64)
    path.unlink()
    if damage != "missing":
        path.write_bytes(bytes(data))
        path.chmod(0o600)
    cache.forget_all()
    again = dlc.compile(model())
    assert type(again._function).__name__ == "JitFunction"  # compiled again, never loaded
    check(again)


def test_specializations_share_one_copy_of_each_weight(monkeypatch) -> None:
    """Two compiles of one model, and two specializations of a dynamic one, point at the same
    memory for each weight (the process holds it once); it is freed with the last of them."""
    import gc

    from dlc.passes.llvm import external_weights

    monkeypatch.setenv("DLC_CACHE", "0")
    cache.forget_all()  # (models of the tests before, holding the same weights)
    gc.collect()
    first, second = dlc.compile(model()), dlc.compile(model())
    assert first is not second
    for a, b in zip(first._function.weights, second._function.weights, strict=True):
        # (the first compile's own storage in its context, which it keeps for ir(), where
        # that is aligned to a cache line; else an aligned copy)
        assert a is b and not a.flags.writeable and a.ctypes.data % 64 == 0
    check(first), check(second)

    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["y"])]
    dynamic = dlc.compile(make_model(nodes, {"x": (np.float32, ["batch", 64])}, ["y"],
                                     initializers={"w": W, "b": B}))
    for rows in (1, 3):
        x = RNG.standard_normal((rows, 64)).astype(np.float32)
        np.testing.assert_allclose(dynamic(x)[0], x @ W + B, rtol=1e-5, atol=1e-5)
    one, three = (dynamic.specialize({"x": [n, 64]}) for n in (1, 3))
    assert one is not three
    (w1,), (w3,) = one._function.weights, three._function.weights
    # (a specialization keeps no IR: its weights are dlc's own, aligned copy, shared)
    assert w1 is w3 and w1.ctypes.data % 64 == 0 and not external_weights.pins_context(w1)

    held = external_weights.shared_bytes()
    assert held >= W.nbytes + T.nbytes
    del first, second, dynamic, one, three, w1, w3, a, b  # (a, b: the loop's last weights)
    gc.collect()
    assert external_weights.shared_bytes() <= held - W.nbytes - T.nbytes


def test_a_specialization_from_the_disk_cache_releases_its_ir(cache_dir: Path,
                                                             monkeypatch) -> None:
    """A DynamicModel's specialization that the disk cache already holds is loaded from it
    (its weights are the mapped entry, no MLIR context to release): the same results. Its
    `release_ir` asked a loaded shared object for the weight table's address, which only the
    JIT's functions could give (AttributeError in CI, whose cache held the LLM tests'
    specializations from an earlier run)."""
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")  # (specializations, not one compile)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["y"])]
    proto = make_model(nodes, {"x": (np.float32, ["batch", 64])}, ["y"],
                       initializers={"w": W, "b": B})
    x = RNG.standard_normal((3, 64)).astype(np.float32)
    first = dlc.compile(proto)(x)[0]
    cache.forget_all()  # (a new process: the entry is on disk only)
    dynamic = dlc.compile(proto)
    again = dynamic(x)[0]
    assert type(dynamic.specialize({"x": [3, 64]})._function).__name__ == \
        "SharedObjectFunction"
    np.testing.assert_array_equal(again, first)
    np.testing.assert_allclose(again, x @ W + B, rtol=1e-5, atol=1e-5)


def test_a_model_from_the_disk_shares_the_weights_of_a_compiled_one(cache_dir: Path) -> None:
    compiled = dlc.compile(model())
    cache.forget_all()
    loaded = dlc.compile(model())
    assert type(loaded._function).__name__ == "SharedObjectFunction"
    for a, b in zip(compiled._function.weights, loaded._function.weights, strict=True):
        assert a is b
    check(loaded)


def test_weights_padding_and_each_weights_digest_are_proved(cache_dir: Path) -> None:
    """Each weight of an entry is proved by its own sha256 (hashed once as it is read, the key
    of the shared copy too) and the padding to 64 bytes must be zeros: a changed byte in the
    second weight or in the padding is a miss."""
    odd = RNG.standard_normal(4097).astype(np.float32)  # 16,388 bytes: 60 of padding
    other = RNG.standard_normal(4096).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "odd"], ["y"])]

    def build() -> onnx.ModelProto:
        return make_model(
            [nodes[0], helper.make_node("Slice", ["y", "s", "e"], ["ys"]),
             helper.make_node("Mul", ["ys", "other"], ["z"])],
            {"x": (np.float32, [4097])}, ["z"],
            {"odd": odd, "other": other, "s": np.array([0]), "e": np.array([4096])})

    x = RNG.standard_normal(4097).astype(np.float32)
    expected = ((x + odd)[:4096] * other,)
    dlc.compile(build())
    (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    path = entry / "weights.bin"
    original = path.read_bytes()
    assert len(original) == 16388 + 60 + 16384
    for where in (16388 + 5, len(original) - 1):  # (the padding; the second weight)
        data = bytearray(original)
        data[where] ^= 1
        path.unlink()
        path.write_bytes(bytes(data))
        path.chmod(0o600)
        cache.forget_all()
        again = dlc.compile(build())
        assert type(again._function).__name__ == "JitFunction", where  # a miss: compiled again
        np.testing.assert_allclose(again(x)[0], expected[0], rtol=1e-6)
        (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
        path = entry / "weights.bin"
    cache.forget_all()
    loaded = dlc.compile(build())  # (the entry written again is whole: loaded)
    assert type(loaded._function).__name__ == "SharedObjectFunction"
    np.testing.assert_allclose(loaded(x)[0], expected[0], rtol=1e-6)


def test_a_compile_binds_aligned_weights_and_owns_them_when_it_releases_its_ir(monkeypatch):
    """A compile's code reads the weights from 64-byte-aligned memory: their storage in its
    MLIR context (kept for `ir()`) where that is so aligned, else an aligned copy.
    `release_ir` (a DynamicModel's specializations) moves them to dlc's own aligned copies
    first, so that the context is freed; the results do not change."""
    import gc

    from mlir import ir

    from dlc.passes.llvm import external_weights

    monkeypatch.setenv("DLC_CACHE", "0")
    gc.collect()
    live = ir.Context._get_live_count()
    compiled = dlc.compile(model())
    borrowed = compiled._function.weights
    assert borrowed and all(w.ctypes.data % 64 == 0 for w in borrowed)
    first = check(compiled)
    compiled.release_ir(lambda: pytest.fail("lowered again"))
    owned = compiled._function.weights
    assert [w.nbytes for w in owned] == [w.nbytes for w in borrowed]
    for new, old in zip(owned, borrowed, strict=True):
        assert not external_weights.pins_context(new) and new.ctypes.data % 64 == 0
        assert not new.flags.writeable and np.array_equal(new, old)
    del borrowed, new, old
    gc.collect()
    assert ir.Context._get_live_count() == live  # (the compile's context is gone)
    for a, b in zip(first, check(compiled), strict=True):
        np.testing.assert_array_equal(a, b)


def test_weights_from_the_disk_are_the_mapped_entry(cache_dir: Path) -> None:
    """A disk-cache hit binds the code to weights.bin itself, mapped read-only (no copy: the
    pages are the page cache's), each weight 64-byte-aligned; removing the entry meanwhile
    leaves the mapping whole."""
    import gc
    import mmap
    import shutil

    compiled = dlc.compile(model())
    expected_y, expected_z = check(compiled)
    del compiled
    cache.forget_all()
    gc.collect()  # (no compiled model holds these weights: the loaded one maps its own)
    loaded = dlc.compile(model())
    assert type(loaded._function).__name__ == "SharedObjectFunction"
    for weight in loaded._function.weights:
        base = weight
        while isinstance(base, np.ndarray):
            base = base.base
        base = base.obj if isinstance(base, memoryview) else base
        assert isinstance(base, mmap.mmap), type(base)
        assert weight.ctypes.data % 64 == 0 and not weight.flags.writeable
    for entry in [p for p in cache_dir.iterdir() if not p.name.startswith(".")]:
        shutil.rmtree(entry)
    y, z = check(loaded)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(z, expected_z)


def test_weights_are_hashed_on_threads_in_order() -> None:
    import hashlib

    values = [RNG.integers(0, 255, n, dtype=np.uint8) for n in (3 << 20, 9 << 20, 1, 6 << 20)]
    assert sum(v.nbytes for v in values) >= 1 << 24  # (the threaded path)
    assert cache._digests(values) == [hashlib.sha256(v).digest() for v in values]


def fail_if_hashed(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = cache._digests
    monkeypatch.setattr(cache, "_digests", lambda values: calls.append(len(values)) or real(values))
    return calls


def test_an_unchanged_weights_file_is_not_hashed_again(cache_dir: Path, monkeypatch) -> None:
    """The entry proves weights.bin's identity and state as written (device, inode, size,
    modification and change times): a load that finds them unchanged trusts the proved
    digests; a byte-identical copy (another inode) is hashed, and loaded."""
    first = check(dlc.compile(model()))
    hashed = fail_if_hashed(monkeypatch)
    cache.forget_all()
    loaded = dlc.compile(model())
    assert type(loaded._function).__name__ == "SharedObjectFunction" and hashed == []
    for a, b in zip(first, check(loaded), strict=True):
        np.testing.assert_array_equal(a, b)
    (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    path = entry / "weights.bin"
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    path.chmod(0o600)
    cache.forget_all()
    assert type(dlc.compile(model())._function).__name__ == "SharedObjectFunction"
    assert hashed == [2]


@pytest.mark.parametrize("entry_too", [False, True], ids=["file", "file and entry"])
def test_weights_changed_in_place_with_their_times_put_back_are_a_miss(
        cache_dir: Path, monkeypatch, entry_too: bool) -> None:
    """A byte of weights.bin changed in place (same inode, same size, its modification time
    put back): the change time moved, so the weights are hashed, and the entry is a miss; an
    entry.json edited to the file's new state fails its MAC."""
    import json
    import os

    dlc.compile(model())
    (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    path = entry / "weights.bin"
    before = path.stat()
    with open(path, "r+b") as file:
        file.seek(100)
        byte = file.read(1)
        file.seek(100)
        file.write(bytes([byte[0] ^ 1]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    if entry_too:
        meta = json.loads((entry / "entry.json").read_text())
        meta["weights"]["file"] = cache._file_state(path.stat())
        (entry / "entry.json").write_text(json.dumps(meta))
    cache.forget_all()
    again = dlc.compile(model())
    assert type(again._function).__name__ == "JitFunction"  # compiled again, never loaded
    check(again)


def test_the_digests_a_save_takes_from_the_shared_copies_are_their_bytes(monkeypatch) -> None:
    import hashlib

    from dlc.passes.llvm import external_weights

    monkeypatch.setenv("DLC_CACHE", "0")
    compiled = dlc.compile(model())
    weights = compiled._function.weights
    foreign = np.ones(4096, np.uint8)
    known = external_weights.digests_of([*weights, foreign])
    assert known[:-1] == [hashlib.sha256(w).digest() for w in weights] and known[-1] is None


def test_weights_are_read_where_the_file_cannot_be_mapped(cache_dir: Path, monkeypatch) -> None:
    """A file system that cannot map weights.bin: its weights are read into dlc's own aligned
    memory instead, proved the same way (a flipped byte is still a miss)."""
    import gc
    import mmap

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")

    expected_y, expected_z = check(dlc.compile(model()))
    cache.forget_all()
    gc.collect()
    monkeypatch.setattr(mmap, "mmap", refuse)
    loaded = dlc.compile(model())
    assert type(loaded._function).__name__ == "SharedObjectFunction"
    y, z = check(loaded)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(z, expected_z)
    del loaded
    cache.forget_all()
    gc.collect()
    (entry,) = [p for p in cache_dir.iterdir() if not p.name.startswith(".")]
    path = entry / "weights.bin"
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.unlink()
    path.write_bytes(bytes(data))
    path.chmod(0o600)
    again = dlc.compile(model())
    assert type(again._function).__name__ == "JitFunction"
    check(again)


def test_a_weight_off_a_cache_line_is_copied_to_an_aligned_one() -> None:
    """`share(adopt=True)` borrows a weight's storage only at a cache-line boundary (64
    bytes): at 16 bytes off one (MLIR's storage, often) the code reads an aligned copy (8 %
    of GPT-2's time on an AVX-512 Intel Xeon)."""
    from dlc.passes.llvm import external_weights

    raw = external_weights.aligned_empty(4 * 1000 + 64)
    for offset, borrowed in ((16, False), (64, True)):
        weight = raw[offset:offset + 4000].view(np.float32)
        weight[:] = RNG.standard_normal(1000, dtype=np.float32) + offset
        held = external_weights.share(weight, adopt=True)
        assert held.ctypes.data % 64 == 0
        assert (held.ctypes.data == weight.ctypes.data) == borrowed
        np.testing.assert_array_equal(held.view(np.float32), weight)
