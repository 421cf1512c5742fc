"""Machine code generated in parallel processes (`dlc.runtime.native`, issue 20): a module whose
`main` was split is cut into modules (`dlc.runtime.split_module`), translated, optimized and
compiled by the pinned LLVM tools in processes, linked and loaded; the results are the
in-process JIT's, bit for bit."""

from __future__ import annotations

import hashlib
import shutil
import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.runtime import cache, native
from tests.conftest import make_model

NODES = 300  # at -O1, main (~4 ops a node) is split into parts of 500 ops
WEIGHT = (np.arange(64 * 64, dtype=np.float32).reshape(64, 64) - 2000) / 100  # (external: 16 KiB)


def chain(n: int = NODES):
    """(x + w), then relu, neg, relu, ... n times."""
    nodes = [helper.make_node("Add", ["x", "w"], ["t0"])]
    nodes += [helper.make_node("Relu" if i % 2 == 0 else "Neg", [f"t{i}"], [f"t{i + 1}"])
              for i in range(n)]
    return make_model(nodes, {"x": (np.float32, [64, 64])}, [f"t{n}"], initializers={"w": WEIGHT})


def expected(x: np.ndarray, n: int = NODES) -> np.ndarray:
    y = x + WEIGHT
    for i in range(n):
        y = np.maximum(y, 0) if i % 2 == 0 else -y
    return y


X = np.random.default_rng(20).standard_normal((64, 64)).astype(np.float32)

needs_tools = pytest.mark.skipif(native._linker() is None, reason="no C compiler to link with")


def compile_with(monkeypatch, processes: str, model=None, opt_level: int = 1):
    monkeypatch.setenv(native.ENV, processes)
    with cache.disabled():
        return dlc.compile(chain() if model is None else model, opt_level=opt_level,
                           num_threads=1)


def test_processes_follow_the_environment(monkeypatch):
    monkeypatch.setenv(native.ENV, "3")
    assert native.processes() == 3
    for off in ("0", "1", "no"):
        monkeypatch.setenv(native.ENV, off)
        assert native.processes() <= 1
    monkeypatch.delenv(native.ENV)
    assert native.processes() >= 1


@needs_tools
def test_a_split_module_is_generated_in_processes(monkeypatch):
    parallel = compile_with(monkeypatch, "2")
    assert type(parallel._function).__name__ == "SplitObjectFunction"
    names = [r.name for r in parallel.timings.records]
    assert "(split; translate, opt, llc: 2 processes)" in names and "(link)" in names, names
    jit = compile_with(monkeypatch, "0")
    assert type(jit._function).__name__ == "JitFunction"
    got, reference = parallel(X)[0], jit(X)[0]
    np.testing.assert_array_equal(got, reference)
    np.testing.assert_allclose(got, expected(X), rtol=1e-6)


@needs_tools
def test_a_small_module_stays_in_process(monkeypatch):
    small = compile_with(monkeypatch, "2", chain(10))
    assert type(small._function).__name__ == "JitFunction"
    np.testing.assert_allclose(small(X)[0], expected(X, 10), rtol=1e-6)


@needs_tools
def test_the_objects_are_deterministic(monkeypatch, tmp_path):
    digests = []
    for k in range(2):
        compiled = compile_with(monkeypatch, "2")
        path = tmp_path / f"model{k}.o"
        compiled._function.dump_object(str(path))
        digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
    assert digests[0] == digests[1]


@needs_tools
def test_the_disk_cache_saves_and_loads_it(monkeypatch, cache_dir):
    monkeypatch.setenv(native.ENV, "2")
    first = dlc.compile(chain(), opt_level=1, num_threads=1)
    assert type(first._function).__name__ == "SplitObjectFunction"
    cache.forget_all()  # (the memory level: the next compile reads the disk)
    again = dlc.compile(chain(), opt_level=1, num_threads=1)
    assert type(again._function).__name__ == "SharedObjectFunction"
    np.testing.assert_array_equal(again(X)[0], first(X)[0])


@needs_tools
def test_a_failing_tool_falls_back_to_the_jit(monkeypatch):
    def missing(name: str) -> str:
        raise native._Failed(f"{name} not found")

    monkeypatch.setattr(native, "_tool", missing)
    with pytest.warns(native.CodegenWarning, match="mlir-translate not found"):
        compiled = compile_with(monkeypatch, "2")
    assert type(compiled._function).__name__ == "JitFunction"
    np.testing.assert_allclose(compiled(X)[0], expected(X), rtol=1e-6)


@needs_tools
def test_the_work_folder_goes_with_the_function(monkeypatch):
    import gc

    compiled = compile_with(monkeypatch, "2")
    work = compiled._function._work
    assert (work / "model.so").is_file()
    del compiled
    with warnings.catch_warnings():
        gc.collect()
    assert not work.exists()
    shutil.rmtree(work, ignore_errors=True)


@needs_tools
@pytest.mark.parametrize("processes", ["3", "5"])
def test_parts_call_each_other_and_share_one_copy_of_each_global(monkeypatch, processes):
    """The parts' functions call the others' (main's parts, split at -O1) and read and write one
    arena and one set of weight pointers, defined in part 0; the shared object exports the
    entry points, not the parts' functions (hidden)."""
    import subprocess

    compiled = compile_with(monkeypatch, processes)
    function = compiled._function
    assert type(function).__name__ == "SplitObjectFunction"
    assert len(function._objects) == min(int(processes), 4)  # (main, its 2 parts, C interface)
    for _ in range(2):  # (the arena is reused)
        np.testing.assert_allclose(compiled(X)[0], expected(X), rtol=1e-6)
    nm = shutil.which("nm")
    if nm is not None:
        exported = subprocess.run([nm, "-D", "--defined-only", str(function._work / "model.so")],
                                  capture_output=True, text=True, check=True).stdout
        names = {line.split()[-1] for line in exported.splitlines() if line.strip()}
        assert "_mlir_ciface_main" in names and "_mlir_dlc_weights" in names
        assert not any("__part" in name or "__kernel" in name for name in names), names
