"""Shared helpers of dlc's pytest suite: building small ONNX models and checking dlc on them.

`make_model` builds a checked ModelProto from nodes and typed inputs (output types come from
ONNX shape inference unless given); `node_model` is the one-node case; `run_both` compiles a
model with dlc, runs it and compares every output with `onnx.reference.ReferenceEvaluator`
(same dtype, same shape, values within the dtype's tolerance, exact for integers).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import dlc

# the suite runs on 2 cores with 2 xdist workers: models compile single-threaded unless a test
# asks for threads (tests/codegen/test_threads.py passes num_threads explicitly)
os.environ.setdefault("DLC_NUM_THREADS", "1")
# a schedule that fails is an error in the suite, not the silent naive path users get: the
# ONNX suite's light models all took the naive path whole for months (a shared init that the
# elementwise family also scheduled); test_matmul_schedule.py tests the fallback itself
os.environ.setdefault("DLC_STRICT_SCHEDULE", "1")
# the user's tuning records (`dlc tune`) would change the schedules the suite checks
os.environ.setdefault("DLC_TUNING_DB", "off")
# the suite's compile cache is its own, empty at the start and removed at the end: entries
# that earlier runs (or the user) left in ~/.cache/dlc made CI load specializations that a
# clean machine compiled, so a bug of the loaded path failed there only (and the suite left
# 800 MB there); tests of the cache itself take a folder each (`cache_dir`)
_CACHE = tempfile.mkdtemp(prefix="dlc-test-cache-")
os.environ["DLC_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

OPSET = 17
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# (rtol, atol) per dtype; integers are compared exactly
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-12),
}
# contractions accumulate rounding errors in a different order than numpy
MATMUL_TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-10, 1e-10),
}

ARITHMETIC_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16]
FLOAT_DTYPES = [np.float32, np.float64, np.float16]

Spec = tuple[np.dtype | type, Sequence[int | str] | None]


@pytest.fixture
def db(tmp_path: Path, monkeypatch) -> Path:
    """A tuning database of the test's own (dlc.compile reads it); compile cache off."""
    path = tmp_path / "tuning.db"
    monkeypatch.setenv("DLC_TUNING_DB", str(path))
    monkeypatch.setenv("DLC_CACHE", "0")
    return path


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch) -> Path:
    """A compile cache of the test's own (every compile goes to disk), empty in memory."""
    from dlc.runtime import cache

    root = tmp_path / "cache"
    monkeypatch.setenv("DLC_CACHE_DIR", str(root))
    monkeypatch.setenv("DLC_CACHE_MIN_SECONDS", "0")
    monkeypatch.delenv("DLC_CACHE", raising=False)
    cache.forget_all()
    yield root
    cache.forget_all()


def tensor_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def value_info(name: str, dtype, shape: Sequence[int | str] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, tensor_type(dtype), shape)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, Spec],
    outputs: Sequence[str] | Mapping[str, Spec],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = OPSET,
    name: str = "test",
    check: bool = True,
) -> onnx.ModelProto:
    """A model of `nodes`; output types are inferred by ONNX unless given as specs.

    With check=False the model is neither shape-inferred nor checked (to build invalid ones).
    """
    initializers = initializers or {}
    graph_inputs = [value_info(n, dtype, shape) for n, (dtype, shape) in inputs.items()]
    if isinstance(outputs, Mapping):
        graph_outputs = [value_info(n, dtype, shape) for n, (dtype, shape) in outputs.items()]
    else:
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in outputs]
    graph = helper.make_graph(
        list(nodes), name, graph_inputs, graph_outputs,
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="dlc-tests")
    model.ir_version = 8  # what onnxruntime and the reference evaluator both read
    if not check:
        return model
    if not isinstance(outputs, Mapping):
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        known = {t.name: helper.make_tensor_type_proto(t.data_type, t.dims)
                 for t in model.graph.initializer}
        known |= {v.name: v.type for v in [*model.graph.input, *model.graph.value_info]}
        for output in model.graph.output:  # an output that is a graph input is not inferred
            if not output.type.HasField("tensor_type") and output.name in known:
                output.type.CopyFrom(known[output.name])
    onnx.checker.check_model(model)
    return model


def node_model(op_type: str, inputs: Sequence[np.ndarray | Spec | None], opset: int = OPSET,
               n_outputs: int = 1, **attributes) -> onnx.ModelProto:
    """A model of one `op_type` node whose inputs x0, x1, ... have the types of `inputs`.

    An input given as an array is typed by its dtype and shape; one given as None becomes an
    absent optional input (the empty name).
    """
    names, specs = [], {}
    for i, value in enumerate(inputs):
        if value is None:
            names.append("")
            continue
        names.append(f"x{i}")
        specs[f"x{i}"] = (value.dtype, list(value.shape)) if isinstance(value, np.ndarray) \
            else value
    outputs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outputs, name=f"{op_type.lower()}_node", **attributes)
    return make_model([node], specs, outputs, opset=opset)


def random_array(shape: Sequence[int], dtype, seed: int = 0, low: int = -9,
                 high: int = 10) -> np.ndarray:
    """Seeded values of `dtype`: normal floats, integers in [low, high)."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(low, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def reference(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(r) for r in ReferenceEvaluator(model).run(None, dict(feeds))]


def assert_same(actual: np.ndarray, expected: np.ndarray, tolerances=TOLERANCES,
                what: str = "output") -> None:
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"{what} is a {type(actual).__name__}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind in "iub":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    rtol, atol = tolerances[actual.dtype]
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def feeds_of(model: onnx.ModelProto, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray]):
    if isinstance(inputs, Mapping):
        return dict(inputs)
    initializers = {t.name for t in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in initializers]
    assert len(names) == len(inputs), f"model inputs {names}, given {len(inputs)} arrays"
    return dict(zip(names, inputs))


# a contraction tile's multiply-adds: vector.fma (the plain conv/matmul schedules) or the
# data-tiled kernels' contracted mulf/addf pair on a [rows, 32] (or [rows, 16]) register tile
FMA_KERNEL = re.compile(
    r"vector\.fma|arith\.mulf [^\n]* fastmath<contract> : vector<\d+x(?:32|16)xf32>")


def fma_position(ir_text: str) -> int:
    """Where the first FMA of a contraction tile is in `ir_text` (-1: none)."""
    found = FMA_KERNEL.search(ir_text)
    return found.start() if found else -1


def run_both(
    model: onnx.ModelProto,
    inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
    opt_level: int = 2,
    tolerances=TOLERANCES,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> list[np.ndarray]:
    """Compile `model` with dlc, run it on `inputs` and compare with onnx.reference.

    Returns dlc's outputs. Inputs are given positionally (graph input order) or by name.
    """
    feeds = feeds_of(model, inputs)
    compiled = dlc.compile(model, opt_level=opt_level, input_shapes=input_shapes)
    actual = compiled(feeds)
    expected = reference(model, feeds)
    assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
    for name, a, e in zip(compiled.output_names, actual, expected):
        assert_same(a, e, tolerances, what=f"output '{name}'")
    return actual


def make_mlp(batch: int = 1, sizes: tuple[int, ...] = (784, 256, 256, 10),
             seed: int = 0) -> onnx.ModelProto:
    """examples/make_mlp.py's MLP (MatMul/Add/Relu layers, then Gemm); examples/ is no package."""
    path = EXAMPLES / "make_mlp.py"
    spec = importlib.util.spec_from_file_location("make_mlp", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_mlp(batch, sizes, seed)


@pytest.fixture
def mlp_model() -> onnx.ModelProto:
    """A small MLP, quick to compile."""
    return make_mlp(batch=4, sizes=(32, 16, 16, 8), seed=0)


def arena_bytes(text: str) -> int:
    """The bytes of the static arenas (dlc-plan-buffers) in bufferized IR `text`."""
    return sum(int(n) for n in re.findall(r"@__dlc_arena\S* : memref<(\d+)xi8>", text))
