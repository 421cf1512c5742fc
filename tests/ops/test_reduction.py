"""Reductions against onnx.reference: Reduce*, ArgMax/ArgMin, Softmax, LogSoftmax, Hardmax,
CumSum, CumProd, Det (axes as attribute and as input, keepdims, noop_with_empty_axes, dtypes,
opsets)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, node_model, random_array, reference, run_both

# LU elimination rounds differently from numpy's LAPACK
DET_TOLERANCES = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-5),
                  np.dtype(np.float64): (1e-10, 1e-10)}
F16_TOLERANCES = {np.dtype(np.float16): (3e-3, 3e-3), np.dtype(np.float32): (1e-5, 1e-5),
                  np.dtype(np.float64): (1e-12, 1e-12)}


def reduce_model(op: str, x: np.ndarray, axes, opset: int, **attrs):
    """A Reduce* node with axes as an attribute (before the input opset) or an initializer."""
    since = 13 if op == "ReduceSum" else 18
    inputs = ["x"]
    initializers = {}
    if axes is not None and opset >= since:
        inputs.append("axes")
        initializers["axes"] = np.array(axes, np.int64)
    elif axes is not None:
        attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], **attrs)
    return make_model([node], {"x": (x.dtype, list(x.shape))}, ["y"], initializers, opset)


REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


@pytest.mark.parametrize("opset", [11, 18])
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_float(op, opset):
    x = random_array([2, 3, 4], np.float32, seed=1)
    if op == "ReduceLogSum":
        x = np.abs(x) + 0.1
    run_both(reduce_model(op, x, [0, -1], opset, keepdims=0), [x], tolerances=F16_TOLERANCES)


@pytest.mark.parametrize("case", [
    ([1], 1), ([1], 0), ([0, 2], 1), ([-2, 0], 0), (None, 1), (None, 0), ([2], 0)], ids=str)
def test_reduce_sum_axes_keepdims(case):
    axes, keepdims = case
    x = random_array([2, 3, 4], np.float32, seed=2)
    run_both(reduce_model("ReduceSum", x, axes, 13, keepdims=keepdims), [x])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.float16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                "ReduceProd", "ReduceL1", "ReduceSumSquare"])
def test_reduce_dtypes(op, dtype):
    x = random_array([3, 5], dtype, seed=3, low=-4, high=5)
    model = reduce_model(op, x, [1], 18)
    if op == "ReduceSumSquare" and dtype == np.int32:  # onnx.reference answers int64 here
        (y,) = dlc.compile(model)(x)
        np.testing.assert_array_equal(y, np.sum(x * x, axis=1, keepdims=True, dtype=dtype))
        return
    run_both(model, [x], tolerances=F16_TOLERANCES)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"])
def test_reduce_narrow_integers(op, dtype):
    x = np.array([[200, 3, 100], [7, 0, 255]], np.uint8).astype(dtype)
    run_both(reduce_model(op, x, [1], 18), [x])


def test_reduce_l2_integers_truncate():
    x = np.array([[3, 4, 1], [1, 1, 1]], np.int32)
    (y,) = run_both(reduce_model("ReduceL2", x, [1], 18, keepdims=0), [x])
    np.testing.assert_array_equal(y, [5, 1])


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_bool(op):
    x = np.array([[True, False], [False, False]])
    run_both(reduce_model(op, x, [1], 18), [x])


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_noop_with_empty_axes(op):
    x = np.abs(random_array([2, 3], np.float32, seed=4)) + 0.5
    run_both(reduce_model(op, x, [], 18, noop_with_empty_axes=1), [x])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin",
                                "ReduceLogSum", "ReduceLogSumExp", "ReduceL2"])
def test_reduce_empty_axis_gives_identity(op):
    x = np.zeros([2, 0, 3], np.float32)
    run_both(reduce_model(op, x, [1], 18), [x])


def test_reduce_log_sum_exp_is_stable():
    x = np.array([[1000.0, 1000.0, -np.inf], [-1000.0, -999.0, -998.0]], np.float32)
    (y,) = run_both(reduce_model("ReduceLogSumExp", x, [1], 18, keepdims=0), [x])
    assert np.isfinite(y).all()


def test_reduce_scalar_result():
    x = random_array([4], np.float64, seed=5)
    (y,) = run_both(reduce_model("ReduceMean", x, None, 18, keepdims=0), [x])
    assert y.shape == ()


def test_reduce_axes_must_be_constant():
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"])
    model = make_model([node], {"x": (np.float32, [2, 3]), "axes": (np.int64, [1])},
                       {"y": (np.float32, [2, 1])}, opset=13)
    with pytest.raises(dlc.DlcError, match="axes"):
        dlc.compile(model)


def test_reduce_duplicate_axes_are_rejected():
    x = random_array([2, 3], np.float32)
    model = reduce_model("ReduceMax", x, [1, -1], 13)
    with pytest.raises(dlc.DlcError, match="twice"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- ArgMax/ArgMin


@pytest.mark.parametrize("select_last_index", [0, 1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_argreduce(op, keepdims, select_last_index):
    x = random_array([3, 4, 5], np.int32, seed=6, low=-2, high=3)  # many ties
    model = node_model(op, [x], axis=-2, keepdims=keepdims, select_last_index=select_last_index)
    run_both(model, [x])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.int8],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_argreduce_dtypes(op, dtype):
    x = random_array([4, 3], dtype, seed=7, low=0, high=100)
    run_both(node_model(op, [x], opset=11), [x])


def test_argmax_nan_wins():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [np.inf, 2.0, -np.inf, 0.0]], np.float32)
    compiled = dlc.compile(node_model("ArgMax", [x], axis=1, keepdims=0))
    np.testing.assert_array_equal(compiled(x)[0], np.argmax(x, axis=1))


# ----------------------------------------------------------------------------- softmax family


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(op, axis):
    x = random_array([2, 3, 4], np.float32, seed=8) * 5
    run_both(node_model(op, [x], opset=13, axis=axis), [x])


@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_dtypes(op, dtype):
    x = random_array([3, 5], dtype, seed=9)
    run_both(node_model(op, [x], opset=13), [x], tolerances=F16_TOLERANCES)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_large_numbers(op):
    x = np.array([[0, 1, 2, 3], [10000, 10001, 10002, 10003]], np.float32)
    run_both(node_model(op, [x], opset=13), [x])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_opset11_coerces_to_2d(op):
    # before opset 13 the input is flattened to [prod(:axis), prod(axis:)] (the reference
    # evaluator does not implement this: compare with numpy)
    x = random_array([2, 3, 4], np.float32, seed=10)
    (y,) = dlc.compile(node_model(op, [x], opset=11, axis=1))(x)
    flat = x.reshape(2, 12)
    shifted = flat - flat.max(axis=1, keepdims=True)
    if op == "Softmax":
        expected = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    elif op == "LogSoftmax":
        expected = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    else:
        expected = np.eye(12, dtype=np.float32)[flat.argmax(axis=1)]
    np.testing.assert_allclose(y, expected.reshape(x.shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_hardmax_first_maximum_wins(axis):
    x = random_array([3, 4, 3], np.int32, seed=11, low=0, high=3).astype(np.float32)
    run_both(node_model("Hardmax", [x], opset=13, axis=axis), [x])


# ----------------------------------------------------------------------------- CumSum


def cumsum_model(x: np.ndarray, axis: int, **attrs):
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], **attrs)
    return make_model([node], {"x": (x.dtype, list(x.shape))}, ["y"],
                      {"axis": np.array(axis, np.int32)}, opset=14)


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumsum(axis, exclusive, reverse):
    x = random_array([3, 4], np.float32, seed=12)
    run_both(cumsum_model(x, axis, exclusive=exclusive, reverse=reverse), [x])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.float16, np.uint32],
                         ids=lambda d: np.dtype(d).name)
def test_cumsum_dtypes(dtype):
    x = random_array([2, 3, 5], dtype, seed=13, low=0, high=9)
    run_both(cumsum_model(x, 2), [x], tolerances=F16_TOLERANCES)


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_scan(axis, exclusive, reverse):
    # axes of 16 or more are a scan (a loop over the axis), not the quadratic generic
    x = random_array([17, 40, 3], np.float32, seed=17)
    run_both(cumsum_model(x, axis, exclusive=exclusive, reverse=reverse), [x])


@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_cumsum_scan_dtypes(dtype):
    # (position ids from an attention mask: mask.cumsum(-1) over a long sequence; 0/1 values,
    # whose float16 sums are exact: the reference accumulates in float16, dlc in float32)
    x = random_array([2, 300], np.int64, seed=18, low=0, high=2).astype(dtype)
    run_both(cumsum_model(x, 1), [x], tolerances=F16_TOLERANCES)


def test_cumsum_scan_is_linear():
    # the scan's IR is one loop over the axis: no generic with an extra reduction loop over it
    x = random_array([1, 1024, 64], np.float32, seed=19)
    text = dlc.lower(cumsum_model(x, 1), stage="linalg").ir()
    assert "scf.for" in text and '"reduction"' not in text
    run_both(cumsum_model(x, 1), [x], tolerances=F16_TOLERANCES)


# ----------------------------------------------------------------------------- CumProd


def cumprod_model(x: np.ndarray, axis: int, **attrs):
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], **attrs)
    return make_model([node], {"x": (x.dtype, list(x.shape))}, ["y"],
                      {"axis": np.array(axis, np.int64)}, opset=26)


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("axis", [1, -3])
def test_cumprod(axis, exclusive, reverse):
    x = random_array([3, 4, 2], np.float32, seed=14)
    run_both(cumprod_model(x, axis, exclusive=exclusive, reverse=reverse), [x])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.float16, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_cumprod_dtypes(dtype):
    x = random_array([2, 5], dtype, seed=15, low=1, high=4)
    run_both(cumprod_model(x, 1, exclusive=1), [x], tolerances=F16_TOLERANCES)


@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 1)])
def test_cumprod_scan(exclusive, reverse):
    x = random_array([3, 20], np.float32, seed=20, low=1, high=2)
    run_both(cumprod_model(x, 1, exclusive=exclusive, reverse=reverse), [x])


def test_cumprod_axis_as_graph_input():
    # an axis given as a graph input is compiled in as a constant by dlc.backend
    import dlc.backend

    x = random_array([3, 4], np.float32, seed=16)
    node = helper.make_node("CumProd", ["x", "axis"], ["y"])
    model = make_model([node], {"x": (np.float32, [3, 4]), "axis": (np.int32, [])}, ["y"],
                       opset=26)
    (y,) = dlc.backend.run_model(model, [x, np.array(0, np.int32)])
    np.testing.assert_allclose(y, np.cumprod(x, axis=0), rtol=1e-6)


# ----------------------------------------------------------------------------- Det


@pytest.mark.parametrize("shape", [[1, 1], [2, 2], [4, 4], [5, 5], [2, 3, 3], [2, 1, 3, 3]],
                         ids=str)
def test_det(shape):
    x = random_array(shape, np.float32, seed=17)
    run_both(node_model("Det", [x], opset=22), [x], tolerances=DET_TOLERANCES)


def test_det_float64():
    x = random_array([3, 3, 3], np.float64, seed=18)
    run_both(node_model("Det", [x], opset=11), [x], tolerances=DET_TOLERANCES)


def test_det_float16():
    # (onnx.reference's numpy det has no float16: compare with float32's, float16 rounding)
    x = random_array([3, 3, 3], np.float16, seed=18)
    (y,) = dlc.compile(node_model("Det", [x], opset=22))(x)
    assert y.dtype == np.float16 and y.shape == (3,)
    np.testing.assert_allclose(y, np.linalg.det(x.astype(np.float32)), rtol=1e-2, atol=1e-2)


def test_det_needs_pivoting_and_singular():
    # a zero leading pivot (row swaps), a singular matrix, a zero column, a permutation
    x = np.array([[[0, 2, 1], [1, 1, 0], [3, 0, 1]],
                  [[1, 2, 3], [2, 4, 6], [1, 0, 1]],
                  [[0, 1, 2], [0, 3, 4], [0, 5, 6]],
                  [[0, 0, 1], [1, 0, 0], [0, 1, 0]]], np.float32)
    (y,) = run_both(node_model("Det", [x], opset=22), [x], tolerances=DET_TOLERANCES)
    np.testing.assert_allclose(y, [-5, 0, 0, 1], atol=1e-5)


def test_det_rejects_non_square():
    with pytest.raises(dlc.FrontendError, match=r"must be square matrices"):
        node = helper.make_node("Det", ["x"], ["y"])
        dlc.compile(make_model([node], {"x": (np.float32, [2, 3, 4])}, {"y": (np.float32, [2])},
                               opset=22, check=False))


# ----------------------------------------------------------------------------- Compress,
# ReverseSequence, MaxUnpool


def compress_model(x: np.ndarray, condition: list[bool], opset: int = 11, **attrs):
    node = helper.make_node("Compress", ["x", "condition"], ["y"], **attrs)
    return make_model([node], {"x": (x.dtype, list(x.shape))}, ["y"],
                      {"condition": np.array(condition, bool)}, opset=opset)


@pytest.mark.parametrize("case", [
    (0, [True, False, True]), (1, [False, True]), (-1, [True, False, True, True]),
    (None, [False, True, True, False, False, True]), (2, [True])], ids=str)
def test_compress(case):
    axis, condition = case
    x = random_array([3, 2, 4], np.int64, seed=19)
    attrs = {} if axis is None else {"axis": axis}
    run_both(compress_model(x, condition, **attrs), [x])


def test_compress_float_opset9():
    x = random_array([4, 3], np.float32, seed=20)
    node = helper.make_node("Compress", ["x", "condition"], ["y"], axis=0)
    model = make_model([node], {"x": (np.float32, [4, 3])}, {"y": (np.float32, [3, 3])},
                       {"condition": np.array([True, True, False, True])}, opset=9)
    run_both(model, [x])


def test_compress_out_of_range_condition():
    x = random_array([2, 2], np.float32, seed=21)
    with pytest.raises(dlc.FrontendError, match="selects index 2 of axis 0"):
        dlc.compile(compress_model(x, [False, False, True], axis=0))


def reverse_sequence_model(x: np.ndarray, lengths: list[int], **attrs):
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], **attrs)
    return make_model([node], {"x": (x.dtype, list(x.shape))}, ["y"],
                      {"lens": np.array(lengths, np.int64)}, opset=10)


@pytest.mark.parametrize("case", [
    ({}, [4, 5, 3], [4, 1, 0, 2, 3]),  # time axis 0, batch axis 1 (the defaults)
    ({"batch_axis": 0, "time_axis": 1}, [3, 4, 2], [1, 4, 3]),
    ({"batch_axis": 2, "time_axis": 0}, [3, 2, 2], [3, 2]),
], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=lambda d: np.dtype(d).name)
def test_reverse_sequence(case, dtype):
    attrs, shape, lengths = case
    x = random_array(shape, dtype, seed=22)
    run_both(reverse_sequence_model(x, lengths, **attrs), [x])


def test_reverse_sequence_bad_lengths():
    x = random_array([3, 2], np.float32, seed=23)
    with pytest.raises(dlc.FrontendError, match=r"must hold 2 lengths in \[0, 3\]"):
        dlc.compile(reverse_sequence_model(x, [1, 4]))


def pooled(x: np.ndarray, **attrs) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool's values and indices, from onnx.reference."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    model = make_model([node], {"x": (x.dtype, list(x.shape))}, ["y", "i"], opset=12)
    return tuple(reference(model, {"x": x}))


@pytest.mark.parametrize("case", [
    ({"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 2, 4, 6], None),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [2, 1, 5, 5], None),
    ({"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 1, 4, 4], [1, 1, 5, 6]),
    ({"kernel_shape": [2]}, [2, 3, 5], None),
], ids=str)
def test_max_unpool(case):
    attrs, shape, output_shape = case
    values, indices = pooled(random_array(shape, np.float32, seed=24), **attrs)
    names = ["x", "i"] + (["shape"] if output_shape else [])
    initializers = {"shape": np.array(output_shape, np.int64)} if output_shape else {}
    node = helper.make_node("MaxUnpool", names, ["y"], **attrs)
    outputs = {"y": (np.float32, output_shape)} if output_shape else ["y"]
    model = make_model([node], {"x": (np.float32, list(values.shape)),
                                "i": (np.int64, list(indices.shape))}, outputs, initializers,
                       opset=11)
    run_both(model, [values, indices])
