"""num_threads: the scheduled tile loops (scf.forall) run on OpenMP threads; one thread compiles
serial code with no OpenMP; the thread count is part of the compile cache's key."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dlc
from dlc.passes import pipeline
from tests.codegen.test_fusion import conv_model, matmul_model
from tests.conftest import MATMUL_TOLERANCES, run_both

RNG = np.random.default_rng(1)


def test_one_thread_has_no_openmp_and_two_threads_do() -> None:
    assert "openmp" not in pipeline(2, num_threads=1)
    assert "convert-scf-to-openmp{num-threads=2}" in pipeline(2, num_threads=2)
    assert "dlc-schedule," in pipeline(2, num_threads=1)
    assert "dlc-schedule{threads=2}" in pipeline(2, num_threads=2)
    model = matmul_model(256, 64, 1024)
    assert "omp." not in dlc.compile(model, num_threads=1).ir("llvm")
    assert "omp.parallel" in dlc.compile(model, num_threads=2).ir("llvm")


# (the MLP's 64 x 784 x 256 fits one outer tile: matmul.thread_tiles splits its N into 4
# forall tiles; 1 x 784 x 256 is too small to split)
@pytest.mark.parametrize("build", [lambda: matmul_model(256, 64, 1024),
                                   lambda: matmul_model(64, 784, 256),
                                   lambda: matmul_model(1, 784, 256),
                                   lambda: conv_model(16, 20, 64, "relu")[0],
                                   lambda: conv_model(16, 55, 64, "relu")[0]],
                         ids=["matmul", "mlp-b64", "mlp-b1", "conv", "conv-balanced"])
def test_two_threads_compute_what_one_does(build) -> None:
    model = build()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = RNG.standard_normal(shape).astype(np.float32)
    serial = dlc.compile(model, num_threads=1)(x)[0]
    threaded = dlc.compile(model, num_threads=2)
    for _ in range(3):  # (a race would show as differing results)
        np.testing.assert_array_equal(threaded(x)[0], serial)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def test_threads_split_a_product_by_rows() -> None:
    # 64 x 784 x 256 fits one outer tile: one thread splits its columns (4 tiles of 64), two
    # split its rows (4 tiles of 16 rows, whole rows per thread: the next op's rows)
    model = matmul_model(64, 784, 256)
    one = dlc.lower(model, "linalg", num_threads=1).ir("linalg")
    two = dlc.lower(model, "linalg", num_threads=2).ir("linalg")
    assert "scf.forall" in one and "scf.forall" in two
    # (the packed product's output tiles, [M/8, 8, N/32, 32] with its epilogue fused)
    assert "tensor<8x8x2x32xf32>" in one and "tensor<2x8x8x32xf32>" not in one
    assert "tensor<2x8x8x32xf32>" in two


def test_thread_count_is_part_of_the_cache_key(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("DLC_CACHE", "1")
    monkeypatch.setenv("DLC_CACHE_DIR", str(tmp_path))
    model = matmul_model(64, 32, 64)
    one, two = dlc.compile(model, num_threads=1), dlc.compile(model, num_threads=2)
    assert one is not two and (one.num_threads, two.num_threads) == (1, 2)
    assert dlc.compile(model, num_threads=2) is two


def test_num_threads_must_be_positive() -> None:
    with pytest.raises(ValueError, match="num_threads"):
        dlc.compile(matmul_model(8, 8, 8), num_threads=0)


def test_dlc_num_threads_sets_the_default(monkeypatch) -> None:
    from dlc.compiler import default_threads

    monkeypatch.setenv("DLC_NUM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.delenv("DLC_NUM_THREADS")
    assert default_threads() == len(os.sched_getaffinity(0))
