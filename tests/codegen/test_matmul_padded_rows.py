"""Matmuls whose M is not a multiple of the packed register tile's 8 rows (4 on AVX2, the
host's tile: `codegen/target.py`; "8" below) (issue 18): ViT-B/16's
sequence of 197 tokens took the plain schedule, 1.6x slower than M = 192 or 200. From
PACK_PAD_M rows on, A and the accumulator are padded with zero rows to the next multiple of 8
and the packed kernel runs on all of them (its first 192 rows of 197 as for M = 192), the
result's first M rows kept; fewer rows (decode's M = 1, small M) keep the plain schedule.
Numbers against numpy: a plain MatMul, a Gemm with a constant B^T and a bias (its accumulator
a broadcast, copied into the padded one) and an elementwise epilogue, and small M.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import target
from dlc.passes.codegen.matmul import (
    PACK_PAD_M,
    pack_tile,
    packed_row_tile,
    packed_rows_tile,
)
from tests.codegen.test_matmul_packed import check, matmul_model, packed, random
from tests.conftest import make_model

N, K = 704, 128  # 197 x 704 x 128 >= PACK_VOLUME


def packed_rows(model: dlc.CompiledModel, m: int, k: int) -> bool:
    """A packed into [ceil(M/mr)][K][mr] panels (mr: 8, or a narrower tile dividing M where
    padding to 8 would waste 5 %): every row of M on the packed kernel."""
    mr = packed_row_tile(m)
    return packed(model) and f"tensor<{-(-m // mr)}x{k}x{mr}xf32>" in model.ir("linalg")


def test_a_row_tile_dividing_m_where_padding_wastes() -> None:
    # (ConvNeXt's last stage: 49 tokens, padded to 56 it spent 12.5 % on zero rows)
    with target.use("avx512"):
        assert pack_tile()[0] == 8
        assert packed_row_tile(49) == 7 and packed_row_tile(65) == 5  # (72: 9.7 % padding)
        assert packed_row_tile(197) == 8 and packed_row_tile(77) == 8  # (1.5 %, 3.75 %)
        assert packed_row_tile(128) == 8 and packed_row_tile(67) == 8  # (no tile from 7 to 5)
        weight = random(512, 768)  # (a constant B: packed from 4 rows on)
        model = dlc.compile(make_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                                       {"x": (np.float32, [49, 512])}, ["y"],
                                       initializers={"w": weight}))
        assert packed_rows(model, 49, 512) and "tensor<7x512x7xf32>" in model.ir("linalg")
    x = random(49, 512)
    check(model, [x], x @ weight)


@pytest.mark.parametrize("m, k", [(197, K), (77, 384), (PACK_PAD_M + 1, 384)], ids=str)
def test_ragged_m_takes_the_packed_path(m: int, k: int) -> None:
    model = dlc.compile(matmul_model(m, N, k))
    assert packed_rows(model, m, k)
    a, b = random(m, k), random(k, N)
    check(model, [a, b], a @ b)


def test_gemm_with_bias_and_epilogue_at_vit_sequence() -> None:
    m = 197
    weight, bias = random(N, K), random(N)
    nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["g"], transB=1),
             helper.make_node("Relu", ["g"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [m, K])}, ["y"],
                       initializers={"w": weight, "bias": bias})
    compiled = dlc.compile(model)
    assert packed_rows(compiled, m, K)
    x = random(m, K)
    check(compiled, [x], np.maximum(x @ weight.T + bias, 0))


@pytest.mark.parametrize("m", [1, 7, 9])
def test_small_m_keeps_the_plain_schedule(m: int) -> None:
    n, k = 2048, 1024  # (large enough to pack were M a multiple of 8)
    model = dlc.compile(matmul_model(m, n, k))
    assert not packed(model) and "vector.fma" in model.ir("linalg")
    a, b = random(m, k), random(k, n)
    check(model, [a, b], a @ b)


def test_padded_rows_are_one_forall_tile() -> None:
    # (M, mr, limit) -> the packed product's forall rows: ViT's 200 padded rows (8 x 25) were
    # tiles of 40, each streaming all of B again; all 200 now (at most twice the limit) ...
    assert packed_rows_tile(200, 8, 128) == 200 and packed_rows_tile(136, 8, 128) == 136
    # ... where a divisor of at least half the limit exists, or M is large, it stays
    assert packed_rows_tile(192, 8, 128) == 96 and packed_rows_tile(264, 8, 128) == 88
    assert packed_rows_tile(128, 8, 128) == 128 and packed_rows_tile(1024, 8, 128) == 128
    assert packed_rows_tile(200, 4, 128) == 100 and packed_rows_tile(56, 8, 128) == 56
    assert packed_rows_tile(280, 8, 128) == 56  # (more than twice the limit)


def test_vit_rows_run_in_one_forall_tile() -> None:
    with target.use("avx512"):
        model = dlc.compile(matmul_model(197, N, K))
    text = model.ir("linalg")
    # 352-column tiles (11 panels of 32) of all 200 rows: 2 tiles, not (5, 2)
    assert "scf.forall (%arg2) = (0) to (22) step (11)" in text
    a, b = random(197, K), random(K, N)
    check(model, [a, b], a @ b)
