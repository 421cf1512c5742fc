"""dlc-schedule on contractions: numbers against numpy across shapes that do and do not divide
the tiles, the tile heuristic itself, and the fallback to the naive path.

Each case checks both that the schedule was applied (vector FMAs in the linalg stage, no
linalg.matmul left) and that the result matches numpy: the pinned LLVM has a known vector
miscompile for some tile configurations (../shared/PERF.md), so every configuration the
heuristic can produce is exercised here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen import target
from dlc.passes.codegen.matmul import gemv_width, matmul_tiles, register_tile, thread_tiles
from dlc.passes.codegen.script import split_point
from tests.conftest import fma_position, make_model

RNG = np.random.default_rng(0)


def scheduled(model: dlc.CompiledModel) -> bool:
    text = model.ir("linalg")
    return "vector.fma" in text and "linalg.matmul" not in text and "batch_matmul" not in text


def check(model: dlc.CompiledModel, inputs: list[np.ndarray], expected: np.ndarray) -> None:
    (result,) = model(*inputs)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5 * scale)


def matmul_model(a_shape: list[int], b_shape: list[int]):
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    return make_model([node], {"a": (np.float32, a_shape), "b": (np.float32, b_shape)}, ["y"])


def random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# (M, N, K): divisible by 8x32 tiles, remainders in M, in N, in both, M < 8, N < 32,
# equal register tiles avoided (8x8; 4x4 on AVX2), prime sizes, a single row (vector-matrix: B
# read row by row, K a multiple of 16 or prime); each on both targets' tiles (AVX-512's 8 x 32,
# AVX2's 4 x 16: `codegen/target.py`)
MATMUL_SHAPES = [
    (64, 64, 64),
    (128, 96, 256),
    (100, 64, 48),
    (64, 70, 40),
    (37, 53, 61),
    (5, 128, 100),
    (96, 20, 64),
    (8, 8, 512),
    (1, 784, 256),
    (1, 1000, 1280),
    (1, 45, 757),
    (1, 2048, 512),  # vector-matrix tiles of 256 columns (AVX2: 64), 16 independent FMA chains
    (1, 768, 96),  # forall parts of 192 columns: 64-column tiles (a power of two)
    (1, 1056, 64),  # 1056 = 33 x 32: 32-column tiles only
    (256, 10, 256),
    (131, 257, 67),
    (64, 4, 256),
]


@pytest.mark.parametrize("cpu", ["avx512", "avx2"])
@pytest.mark.parametrize("m, n, k", MATMUL_SHAPES, ids=lambda v: str(v))
def test_matmul_matches_numpy(m: int, n: int, k: int, cpu: str) -> None:
    with target.use(cpu):
        model = dlc.compile(matmul_model([m, k], [k, n]))
        assert scheduled(model)
    a, b = random(m, k), random(k, n)
    check(model, [a, b], a @ b)


@pytest.mark.parametrize("cpu", ["avx512", "avx2"])
@pytest.mark.parametrize("batch, m, n, k", [(4, 64, 80, 48), (3, 19, 45, 33), (16, 64, 20, 64),
                                            (2, 24, 56, 40), (2, 197, 40, 36)])
def test_batch_matmul_matches_numpy(batch: int, m: int, n: int, k: int, cpu: str) -> None:
    with target.use(cpu):
        model = dlc.compile(matmul_model([batch, m, k], [batch, k, n]))
        assert scheduled(model)
    a, b = random(batch, m, k), random(batch, k, n)
    check(model, [a, b], a @ b)


@pytest.mark.parametrize("trans_a, trans_b", [(0, 1), (1, 0), (1, 1)])
def test_gemm_transposed_operands(trans_a: int, trans_b: int) -> None:
    m, n, k = 48, 72, 40
    a_shape = [k, m] if trans_a else [m, k]
    b_shape = [n, k] if trans_b else [k, n]
    node = helper.make_node("Gemm", ["a", "b"], ["y"], transA=trans_a, transB=trans_b)
    model = dlc.compile(make_model([node], {"a": (np.float32, a_shape),
                                            "b": (np.float32, b_shape)}, ["y"]))
    assert scheduled(model)
    a, b = random(*a_shape), random(*b_shape)
    check(model, [a, b], (a.T if trans_a else a) @ (b.T if trans_b else b))


def test_gemm_with_constant_weight_bias_and_relu_is_scheduled() -> None:
    # Gemm(transB=1) + Relu, as PyTorch's Linear exports it: the bias/activation generic
    # after the matmul must not stop the schedule, the weight is transposed at compile time
    m, n, k = 32, 96, 80
    weight, bias = random(n, k), random(n)
    nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y"])]
    model = dlc.compile(make_model(nodes, {"x": (np.float32, [m, k])}, ["y"],
                                   initializers={"w": weight, "bias": bias}))
    assert scheduled(model)
    assert "vector.transpose" not in model.ir("linalg")  # no strided gather of B
    x = random(m, k)
    check(model, [x], np.maximum(x @ weight.T + bias, 0))


def test_tiny_and_non_f32_matmuls_keep_the_naive_path() -> None:
    tiny = dlc.compile(matmul_model([4, 8], [8, 4]))
    assert "linalg.matmul" in tiny.ir("linalg") and "vector." not in tiny.ir("linalg")
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    f64 = dlc.compile(make_model([node], {"a": (np.float64, [64, 64]),
                                          "b": (np.float64, [64, 64])}, ["y"]))
    assert "linalg.matmul" in f64.ir("linalg")
    a, b = RNG.standard_normal((64, 64)), RNG.standard_normal((64, 64))
    np.testing.assert_allclose(f64(a, b)[0], a @ b, rtol=1e-10, atol=1e-12)


def test_opt_level_1_does_not_schedule() -> None:
    model = dlc.compile(matmul_model([64, 64], [64, 64]), opt_level=1)
    assert "linalg.matmul" in model.ir("linalg")


# ----------------------------------------------------------------------------- heuristic


@pytest.mark.parametrize("cpu", ["avx512", "avx2"])
@pytest.mark.parametrize("m, n", [(64, 64), (8, 8), (16, 16), (4, 4), (7, 7), (3, 100)])
def test_register_tiles_are_never_equal(m: int, n: int, cpu: str) -> None:
    with target.use(cpu):
        mr, nr = register_tile(m, n)
    assert m % mr == 0 and (n % nr == 0 or nr == target.named(cpu).matmul_tile[1])
    assert mr != nr or mr == 1


def test_outer_tiles_leave_work_for_the_threads() -> None:
    # (m, n, k, mt, nt, mr, nr) -> (mt, nt): single-threaded N halved first, down to 4 tiles ...
    assert thread_tiles(64, 256, 784, 64, 256, 8, 32) == (64, 64)
    assert thread_tiles(64, 32, 784, 64, 32, 8, 32) == (16, 32)  # (then M)
    assert thread_tiles(1024, 1024, 1024, 128, 512, 8, 32) == (128, 512)  # (already 16)
    # ... while each tile keeps 32 Ki multiply-adds and a multiple of the register tile
    assert thread_tiles(1, 256, 784, 1, 256, 1, 32) == (1, 64)  # (50 Ki a tile)
    assert thread_tiles(1, 256, 256, 1, 256, 1, 32) == (1, 128)  # (2 of 32 Ki, not 4 of 16)
    assert thread_tiles(8, 64, 64, 8, 64, 8, 32) == (8, 64)  # (16 Ki per half)
    assert thread_tiles(256, 40, 256, 256, 40, 8, 40) == (64, 40)  # (N 40: not halved)
    assert thread_tiles(64, 40, 256, 64, 40, 8, 40) == (16, 40)  # (4 tiles of 160 Ki)
    # for threads, M first: each thread writes whole rows (the next op's rows on its core)
    with target.use_threads(2):
        assert thread_tiles(64, 256, 784, 64, 256, 8, 32) == (16, 256)
        assert thread_tiles(128, 768, 256, 128, 384, 8, 32) == (64, 384)  # (BERT's qkv)
        assert thread_tiles(1, 256, 784, 1, 256, 1, 32) == (1, 64)  # (one row: N)
        assert thread_tiles(8, 256, 784, 8, 256, 8, 32) == (8, 64)  # (one register tile)
    assert target.threads() == 1


@pytest.mark.parametrize("cpu", ["avx512", "avx2"])
def test_a_prime_m_is_one_forall_tile_of_rows(cpu: str) -> None:
    # ViT's attention (197 tokens): forall tiles of all 197 rows, not of 1 row (1 x 32
    # register tiles); `tile_lines` splits them into 192 + 5
    from dlc.passes.codegen.matmul import Contraction, outer

    with target.use(cpu):
        assert outer(Contraction(12, 197, 197, 64)).tile_shape == (1, 197, 197)
        assert outer(Contraction(12, 128, 197, 64)).tile_shape[1] == 128


@pytest.mark.parametrize("cpu, tile", [("avx512", (8, 32)), ("avx2", (4, 16))])
def test_cache_tiles_divide_the_part(cpu: str, tile: tuple[int, int]) -> None:
    with target.use(cpu):
        tiles = matmul_tiles(96, 160, 1000)
    (mc, nc, kc), (mr, nr, kr) = tiles.cache, tiles.register
    assert (mr, nr, kr) == (*tile, 1)
    assert 96 % mc == 0 and mc % mr == 0 and mc <= 64
    assert 160 % nc == 0 and nc % nr == 0
    assert 1000 % kc == 0 and 64 <= kc <= 256


def test_n_remainders_are_whole_vectors() -> None:
    from dlc.passes.codegen import matmul

    with target.use("avx512"):  # (MobileViT-XXS's attention: head size 20)
        assert matmul.n_sizes(20, 32) == [16, 4] and matmul.n_sizes(56, 32) == [32, 16, 8]
        assert matmul.n_sizes(100, 32) == [96, 4] and matmul.n_sizes(64, 32) == [64]
        assert matmul.n_sizes(12, 32) == [12]
    with target.use("avx2"):
        assert matmul.n_sizes(20, 16) == [16, 4] and matmul.n_sizes(12, 16) == [8, 4]
    with target.use("avx512"):
        linalg_ir = dlc.compile(matmul_model([4, 64, 64], [4, 64, 20])).ir("linalg")
    # register tiles [8, 16] and [8, 4], none 20 wide (the init's fill is)
    assert "vector<8x16xf32>" in linalg_ir and "vector<8x4xf32>" in linalg_ir
    assert re.search(r"vector<\d+x20xf32>", linalg_ir) is None


def test_split_point() -> None:
    assert split_point(100, 32) == 96
    assert split_point(96, 32) is None
    assert split_point(20, 32) is None


def test_a_schedule_that_fails_falls_back_to_the_naive_path(monkeypatch) -> None:
    # the transform script fails at run time (split beyond the dimension): the module is
    # restored and compiles through the naive path, with the right numbers
    from dlc.passes.codegen import matmul, script

    def failing_lines(handle: str, problem, prefix: str) -> script.Lines:
        ops, _, _ = script.split(handle, 0, 100_000, prefix)
        return script.Lines(ops)

    monkeypatch.setattr(matmul, "lines", failing_lines)
    monkeypatch.setenv("DLC_CACHE", "0")  # (the same model compiled by another test)
    monkeypatch.setenv("DLC_STRICT_SCHEDULE", "1")  # ... unless asked to raise
    with pytest.raises(dlc.CompileError, match="expected to contain 2 payloads"):
        dlc.compile(matmul_model([64, 64], [64, 64]))
    monkeypatch.delenv("DLC_STRICT_SCHEDULE")
    model = dlc.compile(matmul_model([64, 64], [64, 64]))
    assert "linalg.matmul" in model.ir("linalg")
    assert "dlc.schedule" not in model.ir("linalg")
    a, b = random(64, 64), random(64, 64)
    check(model, [a, b], a @ b)


def test_only_the_op_whose_schedule_fails_takes_the_naive_path(monkeypatch) -> None:
    # two matmuls, the schedule of the 64 x 64 one fails: the other is still scheduled
    from dlc.passes.codegen import matmul, script

    scheduled = matmul.lines

    def lines(handle: str, problem, prefix: str) -> script.Lines:
        if problem.n == 64:
            return script.Lines(script.split(handle, 0, 100_000, prefix)[0])
        return scheduled(handle, problem, prefix)

    monkeypatch.setattr(matmul, "lines", lines)
    monkeypatch.setenv("DLC_CACHE", "0")
    monkeypatch.delenv("DLC_STRICT_SCHEDULE")
    nodes = [helper.make_node("MatMul", ["a", "b"], ["c"]),
             helper.make_node("MatMul", ["c", "d"], ["e"])]
    model = make_model(nodes, {"a": (np.float32, [64, 64]), "b": (np.float32, [64, 96]),
                               "d": (np.float32, [96, 64])}, ["e"])
    linalg_ir = dlc.compile(model).ir("linalg")
    assert linalg_ir.count("linalg.matmul") == 1  # (the failing one)
    assert fma_position(linalg_ir) >= 0  # (the other, scheduled)
    a, b, d = random(64, 64), random(64, 96), random(96, 64)
    check(dlc.compile(model), [a, b, d], (a @ b) @ d)


def test_pooled_features_into_gemm_stay_a_scheduled_matmul() -> None:
    # GlobalAveragePool -> Flatten -> Gemm (a CNN's classifier): the flatten feeds the matmul
    # as a tensor.reshape, so the pool's division is not fused into a generic contraction
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1)]
    w, b = random(100, 512), random(100)
    model = dlc.compile(make_model(nodes, {"x": (np.float32, [1, 512, 7, 7])}, ["y"],
                                   initializers={"w": w, "b": b}))
    text = model.ir("linalg")
    assert "vector.fma" in text and "linalg.matmul" not in text
    x = random(1, 512, 7, 7)
    check(model, [x], x.mean(axis=(2, 3)) @ w.T + b)


@pytest.mark.parametrize("cpu, n, expected", [
    ("avx512", 2048, 256), ("avx512", 512, 256), ("avx512", 192, 64), ("avx512", 96, 32),
    ("avx512", 1056, 32), ("avx2", 2048, 64), ("avx2", 48, 16),
])
def test_vector_matrix_register_tile_width(cpu: str, n: int, expected: int) -> None:
    # the widest power-of-two multiple of nr dividing n within half the vector registers
    # (a [1, 32] tile was one chain of dependent FMAs: [1,512]x[512,2048] 2.4x onnxruntime;
    # a width that is not a power of two is scalarized by LLVM's legalization)
    with target.use(cpu):
        nr = register_tile(1, n, target.current().matmul_tile)[1]
        assert gemv_width(n, nr) == expected
