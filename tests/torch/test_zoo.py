"""Tiny real architectures (tests/torch/zoo.py) through dlc.compile and through
torch.compile(backend="dlc") with no fallback to eager: each matches eager PyTorch within
1e-4 relative error. The `transformers` models are skipped when transformers is not
installed (`pip install -e '.[zoo]'`)."""

from __future__ import annotations

import warnings

import pytest

import dlc

torch = pytest.importorskip("torch")

from tests.torch.models import relative_error
from tests.torch.zoo import TRANSFORMERS, VISION, make

TOLERANCE = 1e-4
NAMES = [*VISION, *(f"hf_{name}" for name in TRANSFORMERS)]


@pytest.fixture(scope="module", params=NAMES)
def case(request):
    if request.param.startswith("hf_"):
        pytest.importorskip("transformers", reason="the transformers models need the "
                                                   "'zoo' extra (pip install transformers)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (transformers' config notices)
        return request.param, *make(request.param)


def test_dlc_compile_matches_eager(case):
    name, model, inputs, expected = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        (y,) = dlc.compile(model, example_inputs=inputs)(*inputs)
    assert y.shape == expected.shape and y.dtype == expected.dtype
    assert relative_error(y, expected) < TOLERANCE, name


def test_torch_compile_backend_matches_eager(case):
    name, model, inputs, expected = case
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="dlc")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a fallback to eager would warn
        warnings.filterwarnings("ignore", category=FutureWarning)
        with torch.no_grad():
            y = compiled(*inputs)
    assert relative_error(y, expected) < TOLERANCE, name
