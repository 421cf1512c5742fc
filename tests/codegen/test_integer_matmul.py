"""The integer matmul family (MatMulInteger, QLinearMatMul) on the scheduled path (issue 18).

8-bit operands minus their zero points are multiplied by f32 matmuls over chunks of K small
enough for every partial sum to be exact, summed in i32 (`frontends/onnx_ops/quant.py`): the
results must be bit-exact (against onnx.reference, or numpy in int64 where the reference
broadcasts a per-row zero point differently), the chunks must cover the worst-case
magnitudes, and a BERT-sized product must take a schedule (no `NaivePathWarning`).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import dlc
from dlc.frontends.onnx_ops.quant import F32_EXACT, k_chunks, weight_chunks
from tests.conftest import fma_position, node_model, run_both

RNG_SEED = 7


def _values(shape, dtype, seed) -> np.ndarray:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def _expected(a, b, a_zero=None, b_zero=None) -> np.ndarray:
    """(a - za) @ (b - zb) in int64, as i32: a 1-D za is per row of A, a 1-D zb per column."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if a_zero is not None:
        za = a_zero.astype(np.int64)
        a64 = a64 - (za.reshape(-1, 1) if za.ndim == 1 and za.size > 1 else za.reshape(()))
    if b_zero is not None:
        zb = b_zero.astype(np.int64)
        b64 = b64 - (zb.reshape(()) if zb.size == 1 else zb)
    return np.matmul(a64, b64).astype(np.int32)


def _weight_model(a, b, a_zero, b_zero) -> tuple:
    """MatMulInteger with A and its zero point as inputs, B and its zero point constant (a
    quantized Linear layer); returns (model, feeds)."""
    tensor = helper.np_dtype_to_tensor_dtype
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["y"], name="mmi")
    graph = helper.make_graph(
        [node], "weight",
        [helper.make_tensor_value_info("a", tensor(a.dtype), list(a.shape)),
         helper.make_tensor_value_info("a_zero", tensor(a_zero.dtype), list(a_zero.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(b_zero, "b_zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"a": a, "a_zero": a_zero}


# ----------------------------------------------------------------------------- chunks of K


@pytest.mark.parametrize("k,bound", [(768, 258), (768, 518), (3072, 502), (1000, 258),
                                     (5, 258), (300, 300), (4096, 1040), (97, 64)])
def test_k_chunks_cover_k_within_the_bound(k, bound):
    chunks = k_chunks(k, bound)
    assert chunks[0][0] == 0
    assert all(s + n == t for (s, n), (t, _) in itertools.pairwise(chunks))
    assert chunks[-1][0] + chunks[-1][1] == k
    assert all(0 < n <= bound for _, n in chunks)
    assert len(chunks) == -(-k // bound)  # as few as the bound allows


def test_chunk_bound_of_the_worst_case():
    # u8 x u8 with opposite zero points: |a - za| = |b - zb| = 255, 258 rows per chunk
    assert k_chunks(1000, F32_EXACT // (255 * 255)) == [(0, 256), (256, 256), (512, 256),
                                                         (768, 232)]


def test_weight_chunks_follow_the_weights_values():
    # a constant B: the chunks keep each column's sum of |a - za| * |b - zb| within 2^24
    rng = np.random.default_rng(21)
    k, worst = 3072, k_chunks(3072, F32_EXACT // (255 * 128))
    small = rng.integers(-20, 21, [k, 64])  # (a trained layer's weights are mostly small)
    assert weight_chunks(k, F32_EXACT // (255 * 128), 255, small) == [(0, k)]
    uniform = rng.integers(-128, 128, [k, 64])  # |b| ~ 64 on average: fewer than the worst
    chunks = weight_chunks(k, F32_EXACT // (255 * 128), 255, uniform)
    assert 1 < len(chunks) < len(worst)
    for start, size in chunks:
        assert np.abs(uniform[start:start + size]).sum(axis=0).max() * 255 <= F32_EXACT
    extreme = np.full([k, 8], -128)  # the worst case of the type: its chunks
    assert weight_chunks(k, F32_EXACT // (255 * 128), 255, extreme) == worst


def test_weight_chunks_at_the_limit_are_exact():
    # one column sums |b| to 2^24 // 255 over K = 2000 (one chunk), a the extreme u8 values
    # around a zero point of 0: every partial sum stays an exact f32 integer
    k = 2000
    b = np.zeros([k, 16], np.int8)
    b[:, 3] = 32
    b[: F32_EXACT // 255 - 32 * k, 3] += 1
    b[::3, 5] = -7  # (another column, below the limit)
    assert np.abs(b.astype(np.int64)).sum(axis=0).max() == F32_EXACT // 255
    a = np.where(np.random.default_rng(22).random([7, k]) < 0.9, 255, 0).astype(np.uint8)
    a_zero = np.array(0, np.uint8)
    model, feeds = _weight_model(a, b, a_zero, np.array(0, np.int8))
    (actual,) = dlc.compile(model)(feeds)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero))
    assert '"dlc.slice"' not in dlc.compile(model).ir("dlc")  # (one chunk)


# ----------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("a_type", [np.uint8, np.int8])
@pytest.mark.parametrize("b_type", [np.uint8, np.int8])
def test_type_combinations_scalar_zero_points(a_type, b_type):
    # K = 700: several chunks whatever the types; M, N, K multiples of no tile
    a = _values([37, 700], a_type, 1)
    b = _values([700, 45], b_type, 2)
    a_zero = np.array(np.iinfo(a_type).max // 3, a_type)
    b_zero = np.array(np.iinfo(b_type).min // 5, b_type)
    inputs = [a, b, a_zero, b_zero]
    (actual,) = run_both(node_model("MatMulInteger", inputs, opset=10), inputs)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero, b_zero))


@pytest.mark.parametrize("a_type,b_type", [(np.uint8, np.int8), (np.int8, np.int8),
                                           (np.uint8, np.uint8)])
def test_constant_weight_per_column_zero_point(a_type, b_type):
    a = _values([29, 513], a_type, 3)
    b = _values([513, 70], b_type, 4)
    a_zero = np.array(np.iinfo(a_type).max // 2, a_type)
    b_zero = _values([70], b_type, 5)
    model, feeds = _weight_model(a, b, a_zero, b_zero)
    (actual,) = dlc.compile(model)(feeds)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero, b_zero))


def test_per_column_zero_point_of_a_computed_b():
    a = _values([16, 300], np.uint8, 6)
    b = _values([300, 33], np.int8, 7)
    a_zero = np.array(17, np.uint8)
    b_zero = _values([33], np.int8, 8)
    inputs = [a, b, a_zero, b_zero]
    (actual,) = run_both(node_model("MatMulInteger", inputs, opset=10), inputs)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero, b_zero))


def test_per_row_zero_point_of_a():
    # (onnx.reference broadcasts a 1-D a_zero_point along A's columns: numpy is the oracle)
    a = _values([9, 600], np.int8, 9)
    b = _values([600, 40], np.int8, 10)
    a_zero = _values([9], np.int8, 11)
    (actual,) = dlc.compile(node_model("MatMulInteger", [a, b, a_zero], opset=10))(
        a, b, a_zero)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero))


def test_worst_case_magnitudes_are_exact():
    # every product is -255 * 255 and K = 1000: sums far beyond f32's 2^24, exact only if
    # every chunk stays within it
    a = np.full([8, 1000], 255, np.uint8)
    b = np.zeros([1000, 64], np.uint8)
    a_zero, b_zero = np.array(0, np.uint8), np.array(255, np.uint8)
    a[3, 5] = 254  # (not uniform, so nothing folds)
    inputs = [a, b, a_zero, b_zero]
    (actual,) = run_both(node_model("MatMulInteger", inputs, opset=10), inputs)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero, b_zero))
    assert actual.min() == -255 * 255 * 1000


def test_no_zero_points():
    a = _values([40, 260], np.int8, 12)
    b = _values([260, 24], np.uint8, 13)
    (actual,) = run_both(node_model("MatMulInteger", [a, b], opset=10), [a, b])
    np.testing.assert_array_equal(actual, _expected(a, b))


@pytest.mark.parametrize("a_shape,b_shape", [
    ([2, 3, 19, 300], [300, 40]),  # batched A times a 2-D B (a transformer's Linear)
    ([3, 21, 290], [3, 290, 35]),  # equal batches: batch_matmul
    ([2, 1, 10, 260], [4, 260, 12]),  # broadcast batches
    ([300], [300, 20]),  # 1-D A
    ([17, 300], [300]),  # 1-D B
])
def test_batched_and_vector_shapes(a_shape, b_shape):
    a = _values(a_shape, np.uint8, 14)
    b = _values(b_shape, np.int8, 15)
    a_zero, b_zero = np.array(131, np.uint8), np.array(-3, np.int8)
    inputs = [a, b, a_zero, b_zero]
    (actual,) = run_both(node_model("MatMulInteger", inputs, opset=10), inputs)
    np.testing.assert_array_equal(actual, _expected(a, b, a_zero, b_zero))


@pytest.mark.parametrize("a_shape,b_shape", [([3, 0], [0, 4]), ([0, 5], [5, 4]),
                                           ([3, 5], [5, 0])])
def test_empty_dimensions(a_shape, b_shape):
    # (K = 0: no chunk at all, the i32 matmul gives the zeros)
    a, b = np.ones(a_shape, np.uint8), np.ones(b_shape, np.int8)
    inputs = [a, b, np.array(1, np.uint8)]
    run_both(node_model("MatMulInteger", inputs, opset=10), inputs)


def test_batched_constant_weight():
    a = _values([1, 70, 768], np.uint8, 16)
    b = _values([768, 96], np.int8, 17)
    model, feeds = _weight_model(a, b, np.array(128, np.uint8), np.array(0, np.int8))
    (actual,) = dlc.compile(model)(feeds)
    np.testing.assert_array_equal(actual, _expected(a, b, feeds["a_zero"], np.array(0)))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul_large_k(dtype):
    a = _values([24, 640], dtype, 18)
    b = _values([640, 40], dtype, 19)
    low = int(np.iinfo(dtype).min)
    inputs = [a, np.array([0.0004], np.float32), np.array([low + 100], dtype),
              b, np.array([0.0007], np.float32), np.array([low + 120], dtype),
              np.array([0.9], np.float32), np.array([low + 128], dtype)]
    run_both(node_model("QLinearMatMul", inputs, opset=21), inputs)


# ----------------------------------------------------------------------------- the schedule


def _naive_warnings(model) -> list[str]:
    """The NaivePathWarnings of lowering `model` to linalg (`dlc.lower`: never cached, so
    the schedule pass runs every time)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dlc.lower(model, stage="linalg", num_threads=1)
    return [str(w.message) for w in caught if issubclass(w.category, dlc.NaivePathWarning)]


def test_the_warning_is_caught_for_a_naive_integer_matmul():
    # the machinery below does see the warning: an i32 MatMul has no schedule
    a = np.ones([64, 64], np.int32)
    assert _naive_warnings(node_model("MatMul", [a, a])), "an i32 matmul of 64^3 should warn"


@pytest.mark.parametrize("n", [768, 3072])
def test_bert_sized_product_takes_a_schedule(n):
    a = _values([128, 768], np.uint8, 22)
    b = _values([768, n], np.int8, 23)
    model, feeds = _weight_model(a, b, np.array(121, np.uint8), np.array(0, np.int8))
    assert _naive_warnings(model) == []
    compiled = dlc.compile(model, num_threads=1)
    # the FMA kernel, or an integer kernel: vpmaddwd on AVX2 (`codegen/int8_matmul.py`),
    # vpdpbusd on AVX-512 VNNI (`codegen/int8_vnni.py`)
    llvm = compiled.ir("llvm")
    assert fma_position(compiled.ir("bufferized")) >= 0 \
        or "llvm.x86.avx2.pmadd.wd" in llvm or "llvm.x86.avx512.vpdpbusd.512" in llvm
    (actual,) = compiled(feeds)
    np.testing.assert_array_equal(actual, _expected(a, b, feeds["a_zero"], np.array(0)))


def test_same_model_same_ir():
    a = _values([32, 700], np.uint8, 24)
    b = _values([700, 64], np.int8, 25)
    model, _ = _weight_model(a, b, np.array(3, np.uint8), _values([64], np.int8, 26))
    first = dlc.lower(model, stage="linalg").ir()
    assert dlc.lower(model, stage="linalg").ir() == first


# ----------------------------------------------------------------------------- ConvInteger


def _conv_model(op: str, inputs: list[np.ndarray], constant: dict[int, str], **attributes):
    """A one-node model whose inputs at the indices of `constant` are initializers (named
    there), the others graph inputs; returns (model, feeds)."""
    tensor = helper.np_dtype_to_tensor_dtype
    names, graph_inputs, initializers, feeds = [], [], [], {}
    for i, value in enumerate(inputs):
        name = constant.get(i, f"x{i}")
        names.append(name)
        if i in constant:
            initializers.append(numpy_helper.from_array(value, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, tensor(value.dtype),
                                                              list(value.shape)))
            feeds[name] = value
    node = helper.make_node(op, names, ["y"], name="node", **attributes)
    graph = helper.make_graph([node], "conv", graph_inputs,
                              [helper.make_empty_tensor_value_info("y")], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, feeds


def _check_reference(model, feeds) -> np.ndarray:
    (actual,) = dlc.compile(model)(feeds)
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    return actual


@pytest.mark.parametrize("x_type", [np.uint8, np.int8])
@pytest.mark.parametrize("w_type", [np.uint8, np.int8])
@pytest.mark.parametrize("constant_w", [False, True])
def test_conv_integer_chunks_exact(x_type, w_type, constant_w):
    # 70 channels x 9 taps: several chunks of channels whatever the types; odd sizes, padding
    # (padded taps contribute x_zero_point - x_zero_point = 0)
    x = _values([1, 70, 9, 11], x_type, 30)
    w = _values([13, 70, 3, 3], w_type, 31)
    x_zero = np.array(np.iinfo(x_type).max // 3, x_type)
    w_zero = np.array(np.iinfo(w_type).min // 7, w_type)
    model, feeds = _conv_model("ConvInteger", [x, w, x_zero, w_zero],
                               {1: "w", 3: "w_zero"} if constant_w else {},
                               pads=[1, 2, 1, 0], strides=[1, 2])
    _check_reference(model, feeds)


def test_conv_integer_per_channel_weight_zero_point_worst_case():
    # |x - zx| = 255 and |w - zw| up to 255: 258 / 9 = 28 channels per chunk
    x = np.full([2, 60, 6, 6], 255, np.uint8)
    x[0, 0, 0, 0] = 0
    w = np.zeros([4, 60, 3, 3], np.uint8)
    w_zero = np.array([255, 1, 128, 0], np.uint8)
    model, feeds = _conv_model("ConvInteger", [x, w, np.array(0, np.uint8), w_zero],
                               {1: "w", 3: "w_zero"})
    actual = _check_reference(model, feeds)
    assert actual.min() == -255 * 255 * 60 * 9


@pytest.mark.parametrize("group,channels", [(2, 40), (40, 40)])
def test_conv_integer_grouped(group, channels):
    x = _values([1, channels, 8, 8], np.uint8, 32)
    w = _values([channels, channels // group, 3, 3], np.int8, 33)
    model, feeds = _conv_model("ConvInteger", [x, w, np.array(3, np.uint8)], {1: "w"},
                               group=group, pads=[1, 1, 1, 1])
    _check_reference(model, feeds)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_conv_bias_per_channel(dtype):
    x = _values([1, 64, 7, 7], dtype, 34)
    w = _values([8, 64, 3, 3], np.int8, 35)
    low = int(np.iinfo(dtype).min)
    inputs = [x, np.array(0.02, np.float32), np.array(low + 121, dtype), w,
              np.linspace(0.001, 0.003, 8).astype(np.float32), np.zeros(8, np.int8),
              np.array(1.7, np.float32), np.array(low + 128, dtype),
              _values([8], np.int32, 36) // 1000]
    model, feeds = _conv_model("QLinearConv", inputs, {3: "w", 4: "ws", 5: "wz", 8: "bias"},
                               pads=[1, 1, 1, 1])
    _check_reference(model, feeds)


def test_resnet_sized_conv_integer_takes_a_schedule():
    x = _values([1, 64, 28, 28], np.uint8, 37)
    w = _values([64, 64, 3, 3], np.int8, 38)
    model, feeds = _conv_model("ConvInteger", [x, w, np.array(119, np.uint8)], {1: "w"},
                               pads=[1, 1, 1, 1])
    assert _naive_warnings(model) == []
    _check_reference(model, feeds)


# ----------------------------------------------------------------------------- DynamicQuantize


@pytest.mark.parametrize("shape", [[1, 128, 768], [7, 300], [5000]])
def test_dynamic_quantize_linear_reduces_rows_first(shape):
    # min and max over every axis as a row reduction (scheduled) then a small one: exact,
    # and a BERT-sized activation no longer takes the naive path
    x = (np.random.default_rng(40).standard_normal(shape) * 3).astype(np.float32)
    model = node_model("DynamicQuantizeLinear", [x], opset=11, n_outputs=3)
    run_both(model, [x])
    if len(shape) == 3:
        assert _naive_warnings(model) == []


# ----------------------------------------------------------------------------- the benchmark


def test_int8_bench_runs_a_case():
    # benchmarks/int8_bench.py (dlc beside onnxruntime) on one case, so that it does not rot
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import int8_bench

    result = int8_bench.run("QLinearMatMul 128x768 @ 768x768 u8/i8", repeat=1)
    assert result["exact"] is True and result["naive_path_warning"] is False
    assert result["dlc_ms"] > 0 and result["ort_ms"] > 0
