"""dlc-polynomial-math: accuracy of the exp/tanh/erf polynomials against float64 references.

Each function runs through dlc at -O2 on a large input (vectorized by dlc-schedule) and a small
one (scalar loop), over its whole useful range plus special values. Errors are in ulps of the
float32 result; the measured maxima (exp 1.0, tanh 1.1, sigmoid 1.9, erf 5.5; before the FMAs: tanh 1.3,
sigmoid 2.3, erf 6.6) are printed
with `pytest -s`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model

TINY = np.finfo(np.float32).tiny
REFERENCES = {
    "Exp": (np.exp, (-87.0, 88.0), 2.0),
    "Tanh": (np.tanh, (-12.0, 12.0), 2.0),
    "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-80.0, 80.0), 3.0),
    "Erf": (np.vectorize(math.erf), (-5.0, 5.0), 8.0),
}


def compiled(op: str, size: int) -> dlc.CompiledModel:
    node = helper.make_node(op, ["x"], ["y"])
    return dlc.compile(make_model([node], {"x": (np.float32, [size])}, ["y"]))


def ulps(result: np.ndarray, reference: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.maximum(np.abs(reference), TINY).astype(np.float32))
    return np.abs(result.astype(np.float64) - reference) / spacing.astype(np.float64)


@pytest.mark.parametrize("size", [65536, 1000], ids=["vectorized", "scalar"])
@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_max_ulp_error(op: str, size: int) -> None:
    reference, (low, high), bound = REFERENCES[op]
    model = compiled(op, size)
    assert "math." + op.lower() not in model.ir("linalg")  # no libm call left
    x = np.linspace(low, high, size, dtype=np.float32)
    x[:4] = [0.0, -0.0, 1e-30, -1e-7]
    (y,) = model(x)
    error = ulps(y, reference(x.astype(np.float64))).max()
    print(f"{op} ({size}): max error {error:.2f} ulp")
    assert error <= bound


@pytest.mark.parametrize("op, expected", [
    ("Exp", [np.inf, 0.0, np.nan, np.inf, 0.0, 1.0]),
    ("Tanh", [1.0, -1.0, np.nan, 1.0, -1.0, 0.0]),
    ("Erf", [1.0, -1.0, np.nan, 1.0, -1.0, 0.0]),
    ("Sigmoid", [1.0, 0.0, np.nan, 1.0, 0.0, 0.5]),
])
def test_special_values(op: str, expected: list[float]) -> None:
    x = np.zeros(4096, np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, 100.0, -100.0, 0.0]
    (y,) = compiled(op, 4096)(x)
    np.testing.assert_allclose(y[:6], expected, rtol=1e-6, atol=1e-30)
