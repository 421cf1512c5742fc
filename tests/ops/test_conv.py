"""Convolution and pooling against onnx.reference: Conv, ConvTranspose, MaxPool, AveragePool,
LpPool and the Global*Pool ops, over 1-D to 3-D images, groups and every padding attribute."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import (
    MATMUL_TOLERANCES,
    make_model,
    node_model,
    random_array,
    reference,
    run_both,
)

F16 = {np.dtype(np.float16): (2e-2, 2e-2)} | {
    k: v for k, v in MATMUL_TOLERANCES.items() if k != np.dtype(np.float16)}


def conv_inputs(x_shape, w_shape, bias: bool, dtype=np.float32) -> list[np.ndarray]:
    arrays = [random_array(x_shape, dtype, seed=1), random_array(w_shape, dtype, seed=2)]
    if bias:
        arrays.append(random_array([w_shape[0]], dtype, seed=3))
    return arrays


# name -> (x shape, w shape, bias, attributes)
CONVS = {
    "1-D": ([1, 2, 7], [3, 2, 3], False, {}),
    "1-D strides pads dilations": ([2, 2, 9], [3, 2, 3], True,
                                   {"strides": [2], "pads": [2, 1], "dilations": [2]}),
    "1-D groups (generic)": ([1, 4, 7], [6, 2, 3], True, {"group": 2}),
    "2-D": ([1, 3, 6, 6], [4, 3, 3, 3], False, {}),
    "2-D bias": ([2, 3, 5, 5], [4, 3, 3, 3], True, {"kernel_shape": [3, 3]}),
    "2-D strides asymmetric pads": ([1, 2, 7, 6], [3, 2, 3, 2], True,
                                    {"strides": [2, 3], "pads": [1, 0, 2, 1]}),
    "2-D dilations": ([1, 2, 8, 8], [2, 2, 3, 3], False, {"dilations": [2, 3]}),
    "2-D groups": ([1, 4, 6, 6], [6, 2, 3, 3], True, {"group": 2, "pads": [1, 1, 1, 1]}),
    "2-D depthwise": ([2, 3, 6, 5], [3, 1, 3, 3], True, {"group": 3, "strides": [2, 1]}),
    "2-D depthwise multiplier 2": ([1, 3, 5, 5], [6, 1, 3, 3], False, {"group": 3}),
    "2-D 1x1": ([1, 4, 5, 5], [2, 4, 1, 1], False, {}),
    "2-D SAME_UPPER": ([1, 2, 7, 6], [2, 2, 4, 3], False,
                       {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "2-D SAME_LOWER": ([1, 2, 7, 6], [2, 2, 4, 3], False,
                       {"auto_pad": "SAME_LOWER", "strides": [2, 1]}),
    "2-D VALID": ([1, 2, 6, 6], [2, 2, 3, 3], False, {"auto_pad": "VALID", "strides": [2, 2]}),
    "3-D": ([1, 2, 4, 5, 5], [3, 2, 2, 3, 3], True, {"pads": [1, 0, 1, 0, 1, 1]}),
    "3-D groups (generic)": ([1, 4, 4, 4, 4], [4, 2, 2, 2, 2], False,
                             {"group": 2, "strides": [1, 2, 1], "dilations": [1, 1, 2]}),
}


@pytest.mark.parametrize("case", list(CONVS.values()), ids=list(CONVS))
def test_conv(case):
    x_shape, w_shape, bias, attributes = case
    inputs = conv_inputs(x_shape, w_shape, bias)
    run_both(node_model("Conv", inputs, **attributes), inputs, tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=lambda d: np.dtype(d).name)
def test_conv_dtypes(dtype):
    inputs = conv_inputs([1, 2, 5, 5], [3, 2, 3, 3], True, dtype)
    run_both(node_model("Conv", inputs, pads=[1, 1, 1, 1]), inputs, tolerances=F16)


def test_conv_opset7_with_constant_weight():
    x = random_array([1, 2, 5, 5], np.float32)
    w, b = random_array([3, 2, 3, 3], np.float32, seed=2), random_array([3], np.float32, seed=3)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2, 2])
    model = make_model([node], {"x": (np.float32, [1, 2, 5, 5])}, ["y"], opset=7,
                       initializers={"w": w, "b": b})
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


def numpy_conv_transpose(x, w, b, strides, pads, group):
    """ConvTranspose by scattering (the reference's group > 1 path is not trusted)."""
    n, c = x.shape[:2]
    k = x.ndim - 2
    cg, mg = c // group, w.shape[1]
    kernel = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * strides[i] + kernel[i] for i in range(k)]
    y = np.zeros([n, mg * group, *full], x.dtype)
    for index in np.ndindex(*x.shape[2:]):
        window = tuple(slice(index[i] * strides[i], index[i] * strides[i] + kernel[i])
                       for i in range(k))
        for g in range(group):
            xs = x[(slice(None), slice(g * cg, (g + 1) * cg), *index)]  # [n, cg]
            contribution = np.einsum("nc,cm...->nm...", xs, w[g * cg:(g + 1) * cg])
            y[(slice(None), slice(g * mg, (g + 1) * mg), *window)] += contribution
    crop = tuple(slice(pads[i], full[i] - pads[k + i]) for i in range(k))
    y = y[(slice(None), slice(None), *crop)]
    return y if b is None else y + b.reshape([-1] + [1] * k)


CONV_TRANSPOSES = {
    "1-D": ([1, 2, 4], [2, 3, 3], False, {}),
    "1-D strides pads": ([2, 2, 5], [2, 2, 3], True, {"strides": [2], "pads": [1, 2]}),
    "2-D": ([1, 2, 3, 3], [2, 3, 3, 3], True, {}),
    "2-D strides output_padding": ([1, 1, 3, 4], [1, 2, 3, 3], False,
                                   {"strides": [3, 2], "output_padding": [1, 1]}),
    "2-D pads dilations": ([1, 2, 4, 4], [2, 2, 3, 2], True,
                           {"pads": [1, 2, 2, 0], "dilations": [2, 2], "strides": [2, 1]}),
    "2-D output_shape": ([1, 1, 3, 3], [1, 2, 3, 3], False,
                         {"strides": [3, 2], "output_shape": [10, 8]}),
    "2-D SAME_UPPER": ([1, 1, 3, 3], [1, 2, 3, 3], False,
                       {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "2-D SAME_LOWER": ([1, 1, 3, 3], [1, 2, 4, 3], False,
                       {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "3-D": ([1, 1, 2, 3, 3], [1, 2, 2, 2, 3], True, {"strides": [1, 2, 1]}),
}


@pytest.mark.parametrize("case", list(CONV_TRANSPOSES.values()), ids=list(CONV_TRANSPOSES))
def test_conv_transpose(case):
    x_shape, w_shape, bias, attributes = case
    inputs = conv_inputs(x_shape, w_shape, False)
    if bias:
        inputs.append(random_array([w_shape[1]], np.float32, seed=3))
    run_both(node_model("ConvTranspose", inputs, **attributes), inputs,
             tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("shapes", [([1, 4, 3, 3], [4, 3, 3, 3]), ([2, 6, 5], [6, 1, 2])],
                         ids=["2-D group 2", "1-D depthwise group 6"])
def test_conv_transpose_groups(shapes):
    x, w = random_array(shapes[0], np.float32, seed=1), random_array(shapes[1], np.float32, 2)
    k = x.ndim - 2
    group = 2 if k == 2 else 6
    b = random_array([w.shape[1] * group], np.float32, seed=3)
    strides, pads = [2] * k, [1] * k + [0] * k
    model = node_model("ConvTranspose", [x, w, b], group=group, strides=strides, pads=pads)
    (y,) = dlc.compile(model)(x, w, b)
    expected = numpy_conv_transpose(x, w, b, strides, pads, group)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


# name -> (op type, x shape, attributes, opset)
POOLS = {
    "max 1-D": ("MaxPool", [1, 2, 9], {"kernel_shape": [3], "strides": [2]}, 17),
    "max 2-D pads": ("MaxPool", [2, 3, 6, 6], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
                     17),
    "max 2-D strides dilations": ("MaxPool", [1, 2, 8, 7],
                                  {"kernel_shape": [2, 3], "strides": [2, 1],
                                   "dilations": [2, 2]}, 17),
    "max 2-D ceil_mode": ("MaxPool", [1, 1, 6, 7],
                          {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, 17),
    "max 2-D SAME_UPPER": ("MaxPool", [1, 2, 5, 6],
                           {"kernel_shape": [3, 2], "strides": [2, 2],
                            "auto_pad": "SAME_UPPER"}, 17),
    "max 2-D SAME_LOWER": ("MaxPool", [1, 2, 5, 5],
                           {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}, 17),
    "max 3-D (generic)": ("MaxPool", [1, 2, 4, 5, 5],
                          {"kernel_shape": [2, 3, 2], "strides": [1, 2, 1]}, 17),
    "max opset 7": ("MaxPool", [1, 2, 5, 5], {"kernel_shape": [2, 2], "pads": [1, 0, 0, 1]}, 7),
    "max opset 8 storage_order": ("MaxPool", [1, 2, 5, 5],
                                  {"kernel_shape": [2, 2], "storage_order": 1}, 8),
    "avg 2-D": ("AveragePool", [1, 2, 6, 6], {"kernel_shape": [2, 2], "strides": [2, 2]}, 17),
    "avg 2-D pads exclude": ("AveragePool", [1, 2, 5, 5],
                             {"kernel_shape": [3, 3], "pads": [1, 1, 2, 0]}, 17),
    "avg 2-D pads include": ("AveragePool", [1, 2, 5, 5],
                             {"kernel_shape": [3, 3], "pads": [1, 1, 2, 0],
                              "count_include_pad": 1}, 17),
    "avg 2-D ceil_mode": ("AveragePool", [1, 1, 6, 7],
                          {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, 17),
    "avg 2-D ceil include pad": ("AveragePool", [1, 1, 6, 6],
                                 {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1,
                                  "pads": [1, 1, 1, 1], "count_include_pad": 1}, 17),
    "avg 2-D SAME_UPPER": ("AveragePool", [1, 2, 5, 5],
                           {"kernel_shape": [3, 3], "strides": [2, 2],
                            "auto_pad": "SAME_UPPER"}, 17),
    "avg 2-D dilations (opset 19)": ("AveragePool", [1, 2, 7, 7],
                                     {"kernel_shape": [2, 2], "dilations": [2, 2],
                                      "pads": [1, 1, 1, 1]}, 19),
    "avg 1-D": ("AveragePool", [2, 2, 7], {"kernel_shape": [3], "pads": [1, 1]}, 17),
    "avg 3-D (generic)": ("AveragePool", [1, 1, 4, 4, 4],
                          {"kernel_shape": [2, 2, 2], "pads": [1, 0, 0, 0, 1, 1]}, 17),
    "avg opset 7": ("AveragePool", [1, 2, 5, 5], {"kernel_shape": [2, 2]}, 7),
    "lp p=2": ("LpPool", [1, 2, 5, 5], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, 17),
    "lp p=1 strides": ("LpPool", [1, 2, 6, 6], {"kernel_shape": [2, 2], "strides": [2, 2],
                                                "p": 1}, 17),
    "lp p=3 1-D": ("LpPool", [1, 2, 7], {"kernel_shape": [3], "p": 3}, 11),
    "lp dilations ceil (opset 18)": ("LpPool", [1, 1, 7, 7],
                                     {"kernel_shape": [2, 2], "dilations": [2, 2],
                                      "strides": [2, 2], "ceil_mode": 1}, 18),
}


@pytest.mark.parametrize("case", list(POOLS.values()), ids=list(POOLS))
def test_pool(case):
    op_type, x_shape, attributes, opset = case
    x = random_array(x_shape, np.float32)
    run_both(node_model(op_type, [x], opset=opset, **attributes), [x],
             tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int8, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_max_pool_dtypes(dtype):
    x = random_array([1, 2, 5, 5], dtype, low=-100 if dtype == np.int8 else 0, high=100)
    model = node_model("MaxPool", [x], kernel_shape=[2, 2], pads=[1, 1, 1, 1], strides=[2, 2])
    run_both(model, [x])


@pytest.mark.parametrize("op_type", ["AveragePool", "LpPool"])
@pytest.mark.parametrize("dtype", [np.float16, np.float64], ids=lambda d: np.dtype(d).name)
def test_average_lp_pool_dtypes(op_type, dtype):
    x = random_array([1, 2, 5, 5], dtype)
    model = node_model(op_type, [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    run_both(model, [x], tolerances=F16)


def test_conv_transpose_output_shape_smaller_is_pads():
    # output_shape 2 and 1 short of the natural 7x7: pads begin with the larger half
    x, w = random_array([1, 1, 3, 3], np.float32, 1), random_array([1, 2, 3, 3], np.float32, 2)
    model = node_model("ConvTranspose", [x, w], strides=[2, 2], output_shape=[5, 6])
    (y,) = dlc.compile(model)(x, w)
    expected = numpy_conv_transpose(x, w, None, [2, 2], [1, 1, 1, 0], 1)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_max_pool_3d_pads():
    # (onnx.reference fails on padded 3-D MaxPool) -inf padding, then a sliding-window max
    x = random_array([1, 2, 4, 5, 5], np.float32)
    model = node_model("MaxPool", [x], kernel_shape=[2, 3, 2], pads=[0, 1, 1, 1, 1, 0])
    (y,) = dlc.compile(model)(x)
    padded = np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 1), (1, 0)], constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (2, 3, 2), axis=(2, 3, 4))
    np.testing.assert_array_equal(y, windows.max(axis=(-3, -2, -1)))


GLOBAL_POOLS = {  # numpy, as onnx.reference's GlobalMaxPool is right for 2-D only and it
    # has no GlobalLpPool
    "GlobalMaxPool": lambda x, axes: x.max(axis=axes, keepdims=True),
    "GlobalAveragePool": lambda x, axes: x.mean(axis=axes, keepdims=True),
    "GlobalLpPool": lambda x, axes: np.sqrt((x * x).sum(axis=axes, keepdims=True)),
}


@pytest.mark.parametrize("op_type", list(GLOBAL_POOLS))
@pytest.mark.parametrize("shape", [[2, 3, 5], [1, 2, 4, 5], [1, 2, 2, 3, 3]],
                         ids=["1-D", "2-D", "3-D"])
def test_global_pool(op_type, shape):
    x = random_array(shape, np.float32)
    (y,) = dlc.compile(node_model(op_type, [x]))(x)
    expected = GLOBAL_POOLS[op_type](x, tuple(range(2, x.ndim)))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_global_pool_2d_reference():
    x = random_array([2, 3, 4, 5], np.float32)
    for op_type in ("GlobalMaxPool", "GlobalAveragePool"):
        run_both(node_model(op_type, [x]), [x], tolerances=MATMUL_TOLERANCES)


def test_global_lp_pool_p3():
    x = random_array([1, 2, 4, 4], np.float32)
    (y,) = dlc.compile(node_model("GlobalLpPool", [x], p=3))(x)
    expected = (np.abs(x) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- errors


def test_max_pool_indices_is_a_clear_error():
    x = random_array([1, 1, 4, 4], np.float32)
    model = node_model("MaxPool", [x], n_outputs=2, kernel_shape=[2, 2])
    with pytest.raises(dlc.FrontendError, match=r"maxpool_node.*Indices output"):
        dlc.compile(model)


def test_conv_channel_mismatch_names_the_node():
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="bad_conv")
    model = make_model([node], {"x": (np.float32, [1, 3, 5, 5]), "w": (np.float32, [2, 2, 3, 3])},
                       {"y": (np.float32, [1, 2, 3, 3])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"bad_conv.*needs 2 input channels.*got 3"):
        dlc.compile(model)


def test_conv_kernel_shape_must_match_weight():
    x, w = random_array([1, 2, 5, 5], np.float32), random_array([2, 2, 3, 3], np.float32)
    model = node_model("Conv", [x, w], kernel_shape=[2, 2])
    with pytest.raises(dlc.FrontendError, match=r"kernel_shape \[2, 2\] differs"):
        dlc.compile(model)


def test_pool_window_larger_than_input():
    node = helper.make_node("MaxPool", ["x"], ["y"], name="big_pool", kernel_shape=[4, 4])
    model = make_model([node], {"x": (np.float32, [1, 1, 3, 3])}, {"y": (np.float32, [1, 1, 1, 1])},
                       check=False)
    with pytest.raises(dlc.FrontendError, match=r"big_pool.*larger than the padded input"):
        dlc.compile(model)


def test_average_pool_rejects_integers():
    node = helper.make_node("AveragePool", ["x"], ["y"], name="int_avg", kernel_shape=[2, 2])
    model = make_model([node], {"x": (np.int32, [1, 1, 3, 3])}, {"y": (np.int32, [1, 1, 2, 2])},
                       check=False)
    with pytest.raises(dlc.FrontendError, match=r"int_avg.*is int32, but AveragePool of opset "
                                                r"\d+ takes .*float"):
        dlc.compile(model)


def test_reference_agrees_with_scatter_conv_transpose():
    # the numpy scatter above is itself checked against onnx.reference (group 1)
    x, w = random_array([1, 2, 3, 4], np.float32, 1), random_array([2, 3, 2, 3], np.float32, 2)
    b = random_array([3], np.float32, 3)
    model = node_model("ConvTranspose", [x, w, b], strides=[2, 3], pads=[1, 0, 0, 2])
    (expected,) = reference(model, {"x0": x, "x1": w, "x2": b})
    actual = numpy_conv_transpose(x, w, b, [2, 3], [1, 0, 0, 2], 1)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
