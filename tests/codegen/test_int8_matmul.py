"""The integer matmul kernel (`passes/codegen/int8_matmul.py`, issue 18): an f32 matmul of
provably small integers (MatMulInteger / QLinearMatMul as imported) runs as vpmaddwd pairs
on the AVX2 target. Its results must be bit-exact at every shape, the tiles (6 rows, 16
columns, pairs of K) dividing or not, and only such matmuls may take it.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import dlc
from dlc.passes.codegen import int8_matmul
from dlc.passes.codegen import target as cpu_target

PMADDWD = "llvm.x86.avx2.pmadd.wd"


def _has_avx2() -> bool:
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not _has_avx2(),
    reason="the kernel's vpmaddwd needs an x86 CPU with AVX2")


def _matmul_integer(m: int, k: int, n: int, seed: int, batch: tuple[int, ...] = (),
                    a_type=np.uint8, per_column: bool = False):
    """MatMulInteger(a [batch..., m, k] input, a_zero input, b [k, n] constant int8, b_zero
    constant: scalar or per column) and its feeds."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(a_type)
    a = rng.integers(info.min, info.max + 1, size=[*batch, m, k]).astype(a_type)
    b = rng.integers(-128, 128, size=[k, n]).astype(np.int8)
    a_zero = np.array(rng.integers(info.min, info.max + 1), a_type)
    b_zero = (rng.integers(-5, 6, size=[n]) if per_column else np.array(-3)).astype(np.int8)
    tensor = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["y"], name="mmi")],
        "mmi",
        [helper.make_tensor_value_info("a", tensor(a.dtype), list(a.shape)),
         helper.make_tensor_value_info("a_zero", tensor(a.dtype), [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(b_zero, "b_zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"a": a, "a_zero": a_zero}


def _run(model, feeds) -> tuple[np.ndarray, str]:
    """dlc's output (AVX2 tiles, one thread) and its llvm IR."""
    with cpu_target.use("avx2"):
        compiled = dlc.compile(model, num_threads=1)
        llvm = dlc.lower(model, stage="llvm", num_threads=1).ir()
    (result,) = compiled(feeds)
    return result, llvm


@pytest.mark.parametrize("m,k,n", [
    (64, 64, 64),  # 64 rows: not a multiple of 6
    (132, 96, 48),  # every tile divides
    (37, 129, 45),  # nothing divides: odd K, N past a 16-column panel
    (6, 1000, 16),  # one row block, one panel
    (1, 768, 768),  # one row (5 of the 6 padded): still faster than the f32 vector-matrix
    (300, 1, 120),  # K = 1: one pair, its second row zeros
    (128, 768, 768),  # a BERT-base projection
])
def test_matmul_integer_is_exact(m, k, n):
    model, feeds = _matmul_integer(m, k, n, seed=m + k + n)
    result, llvm = _run(model, feeds)
    np.testing.assert_array_equal(result, ReferenceEvaluator(model).run(None, feeds)[0])
    assert PMADDWD in llvm


def test_batched_signed_per_column():
    # int8 A with its batch flattened into rows, a zero point per column of B
    model, feeds = _matmul_integer(50, 96, 40, seed=3, batch=(2,), a_type=np.int8,
                                   per_column=True)
    result, llvm = _run(model, feeds)
    np.testing.assert_array_equal(result, ReferenceEvaluator(model).run(None, feeds)[0])
    assert PMADDWD in llvm


def test_threads_split_the_panels():
    model, feeds = _matmul_integer(40, 200, 70, seed=5)
    with cpu_target.use("avx2"):
        (result,) = dlc.compile(model, num_threads=2)(feeds)
    np.testing.assert_array_equal(result, ReferenceEvaluator(model).run(None, feeds)[0])


def test_float_matmul_keeps_the_fma_kernel():
    # a float A (values of no known range) or non-integer weights: not the integer kernel
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.integers(-3, 4, size=[64, 64]).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with cpu_target.use("avx2"):
        llvm = dlc.lower(model, stage="llvm", num_threads=1).ir()
    assert PMADDWD not in llvm


def test_packed_b_layout():
    # panel j, pair p: (b[2p][16j + c], b[2p + 1][16j + c]) at 2c, 2c + 1; zeros past K, N
    b = np.arange(5 * 20, dtype=np.int16).reshape(5, 20)
    packed = int8_matmul.packed_b(b)
    assert packed.shape == (2, 3, 32)
    assert list(packed[0, 0, :4]) == [b[0, 0], b[1, 0], b[0, 1], b[1, 1]]
    assert list(packed[1, 1, :4]) == [b[2, 16], b[3, 16], b[2, 17], b[3, 17]]
    assert list(packed[0, 2, :2]) == [b[4, 0], 0]  # (K = 5: a zero row)
    assert not packed[1, :, 8:].any()  # (N = 20: columns 20..31 are zeros)


@pytest.mark.parametrize("bounds,fits", [
    ((255, 255, 768), True),
    ((32767, 1, 768), True),
    ((32768, 1, 16), False),  # not 16-bit
    ((32767, 32767, 2), True),  # (a pair of 16-bit products fits i32 but for -32768^2)
    ((32767, 32767, 3), False),  # K products past i32
    ((255, 255, 40000), False),  # K products past i32
])
def test_exactness_bounds(bounds, fits):
    a_bound, b_bound, k = bounds
    assert int8_matmul.exact(a_bound, b_bound, k) == fits
