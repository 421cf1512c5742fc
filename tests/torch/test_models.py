"""The acceptance models through dlc.compile, torch.compile(backend="dlc") and ONNX export:
each matches eager PyTorch within 1e-4 relative error, and the ONNX path matches the torch
path."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import dlc

torch = pytest.importorskip("torch")

from tests.torch.models import MODEL_NAMES, make_case, relative_error

TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=MODEL_NAMES)
def case(request):
    return request.param, *make_case(request.param)


@pytest.fixture(scope="module")
def torch_path(case):
    _name, model, x, _expected = case
    return dlc.compile(model, example_inputs=(x,))


def test_dlc_compile_matches_eager(case, torch_path):
    name, _model, x, expected = case
    (y,) = torch_path(x)
    assert isinstance(y, torch.Tensor)  # torch in, torch out
    assert y.shape == expected.shape and y.dtype == expected.dtype
    assert relative_error(y, expected) < TOLERANCE, name
    (y_numpy,) = torch_path(x.numpy())  # numpy in, numpy out
    assert isinstance(y_numpy, np.ndarray)
    np.testing.assert_array_equal(y_numpy, y.numpy())


def test_torch_compile_backend_matches_eager(case):
    name, model, x, expected = case
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="dlc")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a fallback to eager would warn
        warnings.filterwarnings("ignore", category=FutureWarning)
        with torch.no_grad():
            y = compiled(x)
    assert relative_error(y, expected) < TOLERANCE, name


def test_onnx_export_matches_torch_path(case, torch_path):
    name, model, x, expected = case
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buffer, dynamo=False, input_names=["x"])
    (y,) = dlc.compile(buffer.getvalue())(x.numpy())
    (y_torch,) = torch_path(x)
    assert relative_error(y, y_torch) < TOLERANCE, name
    assert relative_error(y, expected) < TOLERANCE, name
