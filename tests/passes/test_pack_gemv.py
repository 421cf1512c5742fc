"""dlc-pack-gemv: vector-matrix products with weights beyond the L2 cache, read from contiguous
panels: numbers against numpy (N a multiple of the panel or not, a Gemm with transposed weights
and a bias, on both targets' panel widths), scheduled (no naive loops)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import target
from tests.conftest import make_model

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _any_model_size(monkeypatch):
    # (the pass packs in models whose constants exceed 64 MiB: these are small)
    from dlc.passes.graph import pack_gemv

    monkeypatch.setattr(pack_gemv, "MODEL_BYTES", 0)


def _compile(model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    assert not [w for w in caught if issubclass(w.category, dlc.NaivePathWarning)]
    text = compiled.ir("dlc")
    assert "x256xf32>" in text or "x64xf32>" in text  # (the panels)
    return compiled


@pytest.mark.parametrize("cpu", ["avx512", "avx2"])
@pytest.mark.parametrize("k, n", [(1024, 1000), (768, 2304), (600, 1024)])
def test_matmul_matches_numpy(cpu: str, k: int, n: int) -> None:
    b = RNG.standard_normal((k, n)).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                       {"a": (np.float32, [1, 1, k])}, ["y"], initializers={"b": b})
    a = RNG.standard_normal((1, 1, k)).astype(np.float32)
    with target.use(cpu):
        compiled = _compile(model)
    (y,) = compiled(a)
    np.testing.assert_allclose(y, a @ b, rtol=1e-4, atol=1e-3)


def test_gemm_transposed_with_bias() -> None:
    k, n = 768, 1000
    w = RNG.standard_normal((n, k)).astype(np.float32)
    c = RNG.standard_normal(n).astype(np.float32)
    model = make_model([helper.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1)],
                       {"a": (np.float32, [1, k])}, ["y"], initializers={"w": w, "c": c})
    a = RNG.standard_normal((1, k)).astype(np.float32)
    (y,) = _compile(model)(a)
    np.testing.assert_allclose(y, a @ w.T + c, rtol=1e-4, atol=1e-3)
