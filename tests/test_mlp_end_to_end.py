"""The bundled example end to end: examples/make_mlp.py's MLP against onnx.reference and
onnxruntime (when installed), within a max abs error of 1e-5."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import dlc
from tests.conftest import make_mlp, reference

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def mlp() -> onnx.ModelProto:
    return make_mlp(batch=8, seed=0)  # 784-256-256-10, the example's sizes


@pytest.fixture(scope="module")
def compiled_mlp(mlp) -> dlc.CompiledModel:
    return dlc.compile(mlp, opt_level=2)


@pytest.fixture(scope="module")
def batch() -> np.ndarray:
    return np.random.default_rng(1).standard_normal([8, 784]).astype(np.float32)


def max_abs_error(actual: np.ndarray, expected: np.ndarray) -> float:
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    return float(np.max(np.abs(actual - expected)))


def test_mlp_matches_the_onnx_reference(mlp, compiled_mlp, batch):
    (logits,) = compiled_mlp(batch)
    (expected,) = reference(mlp, {"input": batch})
    assert logits.shape == (8, 10)
    assert max_abs_error(logits, expected) <= TOLERANCE


def test_mlp_matches_onnxruntime(mlp, compiled_mlp, batch):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(mlp.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"input": batch})
    (logits,) = compiled_mlp(batch)
    assert max_abs_error(logits, expected) <= TOLERANCE


def test_mlp_matches_numpy(mlp, compiled_mlp, batch):
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in mlp.graph.initializer}
    h = batch
    for layer in range(2):
        h = np.maximum(h @ weights[f"fc{layer}.weight"] + weights[f"fc{layer}.bias"], 0)
    expected = h @ weights["fc2.weight"] + weights["fc2.bias"]
    assert max_abs_error(compiled_mlp(batch)[0], expected) <= TOLERANCE


def test_mlp_is_deterministic(compiled_mlp, batch):
    first, second = compiled_mlp(batch)[0], compiled_mlp(batch.copy())[0]
    np.testing.assert_array_equal(first, second)
    assert not np.shares_memory(first, second)


def test_mlp_rows_are_independent(compiled_mlp, batch):
    # each row's logits depend on that row only: permuting the batch permutes the output
    order = np.random.default_rng(2).permutation(8)
    np.testing.assert_allclose(compiled_mlp(batch[order])[0], compiled_mlp(batch)[0][order],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_mlp_at_other_opt_levels(mlp, batch, opt_level):
    (expected,) = reference(mlp, {"input": batch})
    (logits,) = dlc.compile(mlp, opt_level=opt_level)(batch)
    assert max_abs_error(logits, expected) <= TOLERANCE


def test_bundled_model_file_compiles(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(make_mlp(), path)  # what examples/make_mlp.py writes
    compiled = dlc.compile(path)
    assert str(compiled.signature) == "(input: float32[1, 784]) -> (logits: float32[1, 10])"
    x = np.random.default_rng(3).standard_normal([1, 784]).astype(np.float32)
    (expected,) = reference(onnx.load(path), {"input": x})
    assert max_abs_error(compiled(x)[0], expected) <= TOLERANCE


def test_symbolic_batch_with_input_shapes():
    model = make_mlp(batch=1, sizes=(16, 8, 4), seed=5)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(dlc.FrontendError, match="dynamic size 'batch'"):
        dlc.lower(model, "dlc")  # (the IR is built for one specialization)
    compiled = dlc.compile(model, input_shapes={"input": [3, 16]})
    x = np.random.default_rng(4).standard_normal([3, 16]).astype(np.float32)
    (expected,) = reference(model, {"input": x})
    assert max_abs_error(compiled(x)[0], expected) <= TOLERANCE
