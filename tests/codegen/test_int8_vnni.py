"""The VNNI integer matmul kernel (`passes/codegen/int8_vnni.py`, issue 18): on the AVX-512
target of a CPU with avx512_vnni, an f32 matmul of small integers whose B is s8 and whose A's
rows span at most 255 (MatMulInteger / QLinearMatMul as imported) runs as vpdpbusd. Its
results must be bit-exact at every shape (8-row tiles, 32-column panels, K quads dividing or
not), with zero points per tensor, per row, computed at run time, and signed A.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import dlc
from dlc.passes.codegen import int8_vnni
from dlc.passes.codegen import target as cpu_target

VPDPBUSD = int8_vnni.INTRINSIC

pytestmark = pytest.mark.skipif(not cpu_target.vnni(),
                                reason="the kernel's vpdpbusd needs a CPU with AVX-512 VNNI")


def _model(m: int, k: int, n: int, seed: int, a_type=np.uint8, a_zero_shape=(),
           b_zero: int = 0, b_low: int = -128, b_high: int = 128):
    """MatMulInteger(a [m, k] input, a_zero input of `a_zero_shape`, b [k, n] constant int8,
    b_zero constant) and its feeds."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(a_type)
    a = rng.integers(info.min, info.max + 1, size=[m, k]).astype(a_type)
    b = rng.integers(b_low, b_high, size=[k, n]).astype(np.int8)
    a_zero = rng.integers(info.min, info.max + 1, size=a_zero_shape).astype(a_type)
    tensor = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["y"], name="mmi")],
        "mmi",
        [helper.make_tensor_value_info("a", tensor(a.dtype), [m, k]),
         helper.make_tensor_value_info("a_zero", tensor(a.dtype), list(a_zero_shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(np.array(b_zero, np.int8), "b_zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"a": a, "a_zero": a_zero}


def _run(model, feeds, threads: int = 1) -> tuple[list[np.ndarray], str]:
    """dlc's outputs (AVX-512 target) and its llvm IR."""
    with cpu_target.use("avx512"):
        compiled = dlc.compile(model, num_threads=threads)
        llvm = dlc.lower(model, stage="llvm", num_threads=threads).ir()
    return compiled(feeds), llvm


@pytest.mark.parametrize("m,k,n", [
    (64, 64, 64),  # two panels, 8 row blocks
    (37, 129, 45),  # nothing divides: K past a quad and 16 lanes, N past a panel
    (1, 768, 768),  # one row (7 of the 8 padded)
    (300, 1, 120),  # K = 1: one quad, 3 of its rows zeros
    (100, 3, 130),  # K under one quad, N past 4 panels
    (128, 768, 768),  # a BERT-base projection
])
def test_matmul_integer_is_exact(m, k, n):
    model, feeds = _model(m, k, n, seed=m + k + n)
    (result,), llvm = _run(model, feeds)
    np.testing.assert_array_equal(result, ReferenceEvaluator(model).run(None, feeds)[0])
    assert VPDPBUSD in llvm


def test_signed_a_per_row_zero_points_two_threads():
    # int8 A minus a zero point per row: values in [-255, 255], each row within 255
    model, feeds = _model(50, 200, 70, seed=3, a_type=np.int8, a_zero_shape=(50,))
    (result,), llvm = _run(model, feeds, threads=2)
    b = numpy_helper.to_array(model.graph.initializer[0]).astype(np.int64)
    a = feeds["a"].astype(np.int64) - feeds["a_zero"].astype(np.int64)[:, None]
    np.testing.assert_array_equal(result, a @ b)  # (the reference evaluator: no per-row zp)
    assert VPDPBUSD in llvm


def test_extreme_values():
    # every a = 255 with zero point 0 against b = -128 (one -127, so that B is no splat): the
    # largest sums of the u8 x s8 form
    model, feeds = _model(16, 1000, 32, seed=4, b_low=-128, b_high=-127)
    b = numpy_helper.to_array(model.graph.initializer[0]).copy()
    b[0, 0] = -127
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(b, "b"))
    feeds["a"][:] = 255
    feeds["a_zero"] = np.array(0, np.uint8)
    (result,), llvm = _run(model, feeds)
    expected = np.full([16, 32], 255 * -128 * 1000)
    expected[:, 0] += 255
    np.testing.assert_array_equal(result, expected)
    assert VPDPBUSD in llvm


def test_dynamic_quantize_then_matmul_integer():
    # BERT's form: the zero point of A is computed at run time, the product scaled to float
    rng = np.random.default_rng(7)
    m, k, n = 40, 96, 48
    b = rng.integers(-127, 128, size=[k, n]).astype(np.int8)
    graph = helper.make_graph([
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
        helper.make_node("MatMulInteger", ["q", "b", "z", "bz"], ["y"]),
        helper.make_node("Cast", ["y"], ["yf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["yf", "s"], ["out"])], "dq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(0, np.int8), "bz")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = {"x": (rng.standard_normal([m, k]) + 0.7).astype(np.float32)}
    (result,), llvm = _run(model, feeds)
    np.testing.assert_array_equal(result, ReferenceEvaluator(model).run(None, feeds)[0])
    assert VPDPBUSD in llvm


def test_weights_past_int8_keep_the_f32_path():
    # b - zb in [-123, 132]: not s8, so not this kernel; the f32 path is exact too
    model, feeds = _model(20, 64, 40, seed=5, b_zero=-5)
    (result,), llvm = _run(model, feeds)
    np.testing.assert_array_equal(result, ReferenceEvaluator(model).run(None, feeds)[0])
    assert VPDPBUSD not in llvm


def test_avx2_target_keeps_vpmaddwd():
    model, _ = _model(20, 64, 40, seed=6)
    with cpu_target.use("avx2"):
        llvm = dlc.lower(model, stage="llvm", num_threads=1).ir()
    assert VPDPBUSD not in llvm and "llvm.x86.avx2.pmadd.wd" in llvm


def test_packed_b_layout():
    # panel p, quad q: byte 4c + i = b[4q + i][32p + c]; zeros past K and N; column sums
    b = (np.arange(6 * 40).reshape(6, 40) % 251 - 125).astype(np.int8)
    packed, sums = int8_vnni.packed_b(b)
    assert packed.shape == (2, 2, 128) and sums.shape == (2, 32)
    assert list(packed[0, 0, :8]) == [b[0, 0], b[1, 0], b[2, 0], b[3, 0],
                                      b[0, 1], b[1, 1], b[2, 1], b[3, 1]]
    assert list(packed[1, 1, :4]) == [b[4, 32], b[5, 32], 0, 0]  # (K = 6: two zero rows)
    assert not packed[1, :, 4 * 8:].any()  # (N = 40: columns 40..63 are zeros)
    assert sums[1, 3] == b[:, 35].astype(np.int32).sum() and sums[1, 8] == 0


@pytest.mark.parametrize("values,a_bound,k,fits", [
    ((-128, 127), 255, 768, True),
    ((-128, 128), 255, 768, False),  # 128 is no s8
    ((-129, 0), 255, 768, False),
    ((-128, 127), 255, 65792, True),  # K * 255 * 128 < 2^31
    ((-128, 127), 255, 65794, False),
])
def test_fits(values, a_bound, k, fits):
    assert int8_vnni.fits(np.array(values), a_bound, k) == fits
