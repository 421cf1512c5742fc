"""AOT export (issue 23): `dlc.export` / `dlc export` write libNAME.so, NAME.h and NAME.json;
the C program of examples/c and `dlc.runtime.load` (no mlir, no onnx) reproduce dlc's outputs
exactly; two exports are byte-identical; a library for CPU features this CPU lacks is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import dlc
from dlc.runtime import loader
from dlc.tools.dlc_cli import main as dlc_main
from tests.conftest import make_mlp

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "c" / "run_model.c"
CC = shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> tuple[Path, Path, dict]:
    """(model path, export folder, manifest) of the bundled MLP."""
    folder = tmp_path_factory.mktemp("export")
    model = folder / "mlp.onnx"
    onnx.save(make_mlp(), model)
    manifest = dlc.export(model, folder / "out")
    return model, folder / "out", manifest


def _input(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 784)).astype(np.float32)


def _expected(model: Path, x: np.ndarray) -> np.ndarray:
    (y,) = dlc.compile(model, num_threads=1)(x)
    return y


def test_export_writes_library_header_manifest(mlp):
    _, out, manifest = mlp
    assert sorted(p.name for p in out.iterdir()) == ["libmlp.so", "mlp.h", "mlp.json"]
    assert json.loads((out / "mlp.json").read_text()) == manifest
    assert manifest["inputs"] == [{"name": "input", "dtype": "float32", "shape": [1, 784],
                                   "declared_shape": [1, 784]}]
    assert manifest["outputs"] == [{"name": "logits", "dtype": "float32", "shape": [1, 10]}]
    assert manifest["target"]["name"] == "native"
    assert set(manifest["sha256"]) == {"libmlp.so", "mlp.h"}
    assert "mlp_session_create" in (out / "mlp.h").read_text()


def test_two_exports_are_byte_identical(mlp, tmp_path):
    model, out, _ = mlp
    assert dlc_main(["export", str(model), "-o", str(tmp_path)]) == 0
    for name in ("libmlp.so", "mlp.h", "mlp.json"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm (binutils) on PATH")
def test_only_prefixed_symbols_are_exported(mlp):
    _, out, _ = mlp
    listed = subprocess.run(["nm", "-D", "--defined-only", str(out / "libmlp.so")],
                            capture_output=True, text=True, check=True).stdout
    symbols = [line.split()[-1] for line in listed.splitlines() if line.strip()]
    assert symbols and all(s.startswith("mlp_") for s in symbols), symbols


@needs_cc
def test_c_program_reproduces_python_outputs(mlp, tmp_path):
    model, out, _ = mlp
    program = tmp_path / "run_mlp"
    subprocess.run([CC, "-O2", "-Wall", "-Werror", "-DMODEL=mlp", "-include", str(out / "mlp.h"),
                    str(EXAMPLE), f"-L{out}", "-lmlp", f"-Wl,-rpath,{out}", "-o", str(program)],
                   check=True)
    x = _input()
    np.save(tmp_path / "x.npy", x)
    x.tofile(tmp_path / "x.raw")
    expected = _expected(model, x)
    for given in ("x.npy", "x.raw"):
        run = subprocess.run([str(program), "-o", str(tmp_path), str(tmp_path / given)],
                             capture_output=True, text=True, check=True)
        assert run.stdout.startswith("logits: f4[1, 10] checksum ")
        got = np.fromfile(tmp_path / "logits.bin", np.float32).reshape(expected.shape)
        assert np.array_equal(got, expected)
    wrong = np.zeros((1, 783), np.float32)
    np.save(tmp_path / "wrong.npy", wrong)
    run = subprocess.run([str(program), str(tmp_path / "wrong.npy")], check=False,
                         capture_output=True,
                         text=True)
    assert run.returncode == 2 and "not an array of the input's rank 2 and fixed" in run.stderr


def test_load_imports_neither_mlir_nor_onnx(mlp, tmp_path):
    model, out, _ = mlp
    x = _input(1)
    np.save(tmp_path / "x.npy", x)
    script = f"""
import sys
import numpy as np
import dlc.runtime
model = dlc.runtime.load({str(out)!r})
(y,) = model(np.load({str(tmp_path / 'x.npy')!r}))
np.save({str(tmp_path / 'y.npy')!r}, y)
loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mlir', 'onnx', 'onnxruntime'))
print(loaded)
"""
    env = {**os.environ, "PYTHONPATH": str(REPO.parent)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env, cwd=tmp_path)
    assert run.stdout.strip() == "[]"
    assert np.array_equal(np.load(tmp_path / "y.npy"), _expected(model, x))


def test_loaded_model_checks_inputs_as_compiled_model(mlp):
    _, out, _ = mlp
    model = loader.load(out / "libmlp.so")
    assert str(model.signature) == "(input: float32[1, 784]) -> (logits: float32[1, 10])"
    (by_name,) = model({"input": _input()})
    assert np.array_equal(by_name, model(_input())[0])
    with pytest.raises(dlc.InputError, match=r"has shape \[2, 784\], expected \[1, 784\]"):
        model(np.zeros((2, 784), np.float32))
    with pytest.raises(dlc.InputError, match="has dtype float64, expected float32"):
        model(np.zeros((1, 784)))
    with pytest.raises(dlc.InputError, match="expected 1 inputs, got 2"):
        model(_input(), _input())


def test_c_api_reports_wrong_shape_dtype_and_count(mlp):
    _, out, _ = mlp
    model = loader.load(out / "mlp.json")
    x, y = _input(), np.empty((1, 10), np.float32)
    ((_, ((tensors, _), (session, inputs, _, outputs, _))),) = model._calls.values()
    tensors[0].data, tensors[1].data = x.ctypes.data, y.ctypes.data
    run = model._run
    assert run(session, inputs, 1, outputs, 1) == 0
    assert run(session, inputs, 2, outputs, 1) == loader.E_COUNT
    assert b"expected 1 inputs and 1 outputs" in model._message(session)
    tensors[0].dtype = 3
    assert run(session, inputs, 1, outputs, 1) == loader.E_DTYPE
    assert model._message(session) == b"input 'input' has dtype float64, expected float32"
    tensors[0].dtype, tensors[1].rank = 2, 1
    assert run(session, inputs, 1, outputs, 1) == loader.E_SHAPE
    assert model._message(session) == b"output 'logits' has shape [1], expected [1, 10]"
    tensors[1].rank = 2


def test_index_out_of_range_is_an_error_code_and_message(tmp_path):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gather", ["data", "indices"], ["y"], axis=0, name="gather0")], "g",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "gather.onnx"
    onnx.save(model, path)
    manifest = dlc.export(path, tmp_path / "out")
    assert manifest["runtime_checks"]
    exported = loader.load(tmp_path / "out")
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    (y,) = exported(data, np.array([3, -1]))
    assert np.array_equal(y, data[[3, -1]])
    with pytest.raises(dlc.IndexOutOfRangeError, match=r"gather0.*index 7 is out of range"):
        exported(data, np.array([0, 7]))


@pytest.mark.skipif("avx512f" in _cpu_flags(), reason="this CPU has AVX-512: no x86-64-v4 "
                    "feature is missing here")
def test_library_for_missing_cpu_features_is_refused(mlp, tmp_path):
    model, _, _ = mlp
    manifest = dlc.export(model, tmp_path, target="x86-64-v4")
    assert "avx512f" in manifest["target"]["cpu_features"]
    with pytest.raises(loader.LoadError, match=r"compiled for a CPU with avx512\w*, which this "
                       "CPU lacks"):
        loader.load(tmp_path)


def test_x86_64_v2_export_runs(mlp, tmp_path):
    model, _, _ = mlp
    if not {"sse4_2", "popcnt"} <= _cpu_flags():
        pytest.skip("this CPU is below x86-64-v2")
    dlc.export(model, tmp_path, target="x86-64-v2")
    x = _input()
    (y,) = loader.load(tmp_path)(x)
    np.testing.assert_allclose(y, _expected(model, x), rtol=1e-5, atol=1e-6)


def test_unknown_target_is_an_error(mlp, tmp_path):
    model, _, _ = mlp
    with pytest.raises(dlc.DlcError, match="unknown target 'riscv'; targets are native"):
        dlc.export(model, tmp_path, target="riscv")


CROSS_CC, QEMU = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")


@pytest.mark.skipif(CROSS_CC is None or QEMU is None, reason="needs aarch64-linux-gnu-gcc and "
                    "qemu-aarch64 (apt-get install gcc-aarch64-linux-gnu qemu-user)")
def test_aarch64_export_runs_under_qemu(mlp, tmp_path):
    model, _, _ = mlp
    out = tmp_path / "out"
    manifest = dlc.export(model, out, target="aarch64")
    assert manifest["target"]["triple"] == "aarch64-unknown-linux-gnu"
    program = tmp_path / "run_mlp"
    subprocess.run([CROSS_CC, "-O2", "-DMODEL=mlp", "-include", str(out / "mlp.h"), str(EXAMPLE),
                    f"-L{out}", "-lmlp", f"-Wl,-rpath,{out}", "-o", str(program)], check=True)
    x = _input()
    np.save(tmp_path / "x.npy", x)
    subprocess.run([QEMU, "-L", "/usr/aarch64-linux-gnu", str(program), "-o", str(tmp_path),
                    str(tmp_path / "x.npy")], check=True, capture_output=True)
    got = np.fromfile(tmp_path / "logits.bin", np.float32).reshape(1, 10)
    np.testing.assert_allclose(got, _expected(model, x), rtol=1e-5, atol=1e-6)


@needs_cc
@pytest.mark.skipif(os.environ.get("DLC_SLOW_TESTS") != "1",
                    reason="ResNet-50 export (~1 min: export, JIT, C build): DLC_SLOW_TESTS=1")
def test_c_program_reproduces_resnet50(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from light_models import light_model

    model = light_model("resnet50", tmp_path)
    out = tmp_path / "out"
    dlc.export(model, out, name="resnet50")
    program = tmp_path / "run_resnet50"
    subprocess.run([CC, "-O2", "-DMODEL=resnet50", "-include", str(out / "resnet50.h"),
                    str(EXAMPLE), f"-L{out}", "-lresnet50", f"-Wl,-rpath,{out}", "-o",
                    str(program)], check=True)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([str(program), "-o", str(tmp_path), str(tmp_path / "x.npy")], check=True,
                   capture_output=True)
    (expected,) = dlc.compile(model, num_threads=1)(x)
    got = np.fromfile(tmp_path / "gpu_0_softmax_1.bin", np.float32)
    assert np.array_equal(got.reshape(expected.shape), expected)


@pytest.mark.skipif(CROSS_CC is None or QEMU is None, reason="needs aarch64-linux-gnu-gcc and "
                    "qemu-aarch64 (apt-get install gcc-aarch64-linux-gnu qemu-user)")
@pytest.mark.skipif(os.environ.get("DLC_SLOW_TESTS") != "1",
                    reason="ResNet-50 under qemu-aarch64 (~2 min): DLC_SLOW_TESTS=1")
def test_aarch64_resnet50_runs_under_qemu(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from light_models import light_model

    model = light_model("resnet50", tmp_path)
    out = tmp_path / "out"
    dlc.export(model, out, name="resnet50", target="aarch64")
    program = tmp_path / "run_resnet50"
    subprocess.run([CROSS_CC, "-O2", "-DMODEL=resnet50", "-include", str(out / "resnet50.h"),
                    str(EXAMPLE), f"-L{out}", "-lresnet50", f"-Wl,-rpath,{out}", "-o",
                    str(program)], check=True)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([QEMU, "-L", "/usr/aarch64-linux-gnu", str(program), "-o", str(tmp_path),
                    str(tmp_path / "x.npy")], check=True, capture_output=True)
    (expected,) = dlc.compile(model, num_threads=1)(x)
    got = np.fromfile(tmp_path / "gpu_0_softmax_1.bin", np.float32).reshape(expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_sessions_run_in_parallel_threads(mlp):
    from concurrent.futures import ThreadPoolExecutor

    model, out, _ = mlp
    inputs = [_input(seed) for seed in range(4)]
    expected = [_expected(model, x) for x in inputs]

    def work(index: int) -> bool:
        session = loader.load(out)  # (one session per thread; the arena is thread-local)
        return all(np.array_equal(session(inputs[index])[0], expected[index])
                   for _ in range(200))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))


def test_dynamic_model_exports_one_library_for_several_shapes(tmp_path):
    """A model with dynamic sizes (batch, seq), exported for two sets of input shapes: one
    library, weights stored once, the run picks the specialization (issue 23's dynamic line)."""
    from tests.test_dynamic import encoder_like, inputs

    path = tmp_path / "enc.onnx"
    onnx.save(encoder_like(), path)
    shapes = [{"x": [1, 4, 8], "mask": [1, 4, 1]}, {"x": [2, 7, 8], "mask": [2, 7, 1]}]
    manifest = dlc.export(path, tmp_path / "out", input_shapes=shapes)
    assert [s["inputs"][0]["shape"] for s in manifest["specializations"]] == [[1, 4, 8],
                                                                              [2, 7, 8]]
    assert manifest["inputs"][0]["declared_shape"] == ["batch", "seq", 8]
    exported = loader.load(tmp_path / "out")
    assert str(exported.signature).startswith("(x: float32[?, ?, 8], mask: float32[?, ?, 1])")
    compiled = dlc.compile(path)
    for batch, seq in [(1, 4), (2, 7)]:
        x, mask = inputs(batch, seq)
        (y,) = exported(x, mask)
        assert np.array_equal(y, compiled(x, mask)[0])
    with pytest.raises(dlc.InputError, match=r"no specialization of enc takes inputs of shapes "
                                             r"\[\[3, 4, 8\], \[3, 4, 1\]\]"):
        exported(*inputs(3, 4))
    program = tmp_path / "run_enc"
    out = tmp_path / "out"
    subprocess.run([CC, "-O2", "-Wall", "-Werror", "-DMODEL=enc", "-include", str(out / "enc.h"),
                    str(EXAMPLE), f"-L{out}", "-lenc", f"-Wl,-rpath,{out}", "-o", str(program)],
                   check=True)
    x, mask = inputs(2, 7)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "mask.npy", mask)
    run = subprocess.run([str(program), "-o", str(tmp_path), str(tmp_path / "x.npy"),
                          str(tmp_path / "mask.npy")], capture_output=True, text=True, check=True)
    assert run.stdout.startswith("y: f4[2, 7, 4] checksum ")
    got = np.fromfile(tmp_path / "y.bin", np.float32).reshape(2, 7, 4)
    assert np.array_equal(got, compiled(x, mask)[0])
    x, mask = inputs(5, 5)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "mask.npy", mask)
    run = subprocess.run([str(program), str(tmp_path / "x.npy"), str(tmp_path / "mask.npy")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "no specialization of this library takes inputs of shapes " \
        "'x' [5, 5, 8], 'mask' [5, 5, 1]" in run.stderr


def test_cli_exports_specializations(tmp_path, capsys):
    from tests.test_dynamic import encoder_like, inputs

    path = tmp_path / "enc.onnx"
    onnx.save(encoder_like(), path)
    assert dlc_main(["export", str(path), "-o", str(tmp_path / "out"),
                     "--specialize", "x=1,3,8;mask=1,3,1",
                     "--specialize", "x=2,2,8;mask=2,2,1"]) == 0
    exported = loader.load(tmp_path / "out")
    assert [s.inputs[0].shape for s in exported.specializations] == [(1, 3, 8), (2, 2, 8)]
    x, mask = inputs(2, 2)
    assert np.array_equal(exported(x, mask)[0], dlc.compile(path)(x, mask)[0])
