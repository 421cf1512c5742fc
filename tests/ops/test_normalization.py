"""Normalizations against onnx.reference (or numpy where the reference departs from the spec):
BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization,
MeanVarianceNormalization, LpNormalization, LRN."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, node_model, random_array, run_both

TOLERANCES = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-5),
              np.dtype(np.float64): (1e-10, 1e-10)}


def channel_params(c: int, dtype, seed: int = 0) -> list[np.ndarray]:
    return [random_array([c], dtype, seed=seed + i) for i in range(2)]


def batch_norm_inputs(shape: list[int]) -> list[np.ndarray]:
    x = random_array(shape, np.float32, seed=1)
    scale, bias = channel_params(3, np.float32, seed=2)
    mean = random_array([3], np.float32, seed=4)
    var = np.abs(random_array([3], np.float32, seed=5)) + 0.1
    return [x, scale, bias, mean, var]


@pytest.mark.parametrize("shape", [[2, 3], [2, 3, 4], [1, 3, 2, 2]], ids=str)
def test_batch_normalization(shape):
    inputs = batch_norm_inputs(shape)
    run_both(node_model("BatchNormalization", inputs, opset=15, epsilon=1e-3), inputs,
             tolerances=TOLERANCES)


@pytest.mark.parametrize("opset", [7, 9])
def test_batch_normalization_old_opsets(opset):
    # one output is inference mode (the reference evaluator trains: compare with numpy)
    x, scale, bias, mean, var = inputs = batch_norm_inputs([2, 3, 2])
    (y,) = dlc.compile(node_model("BatchNormalization", inputs, opset=opset))(*inputs)
    c = (slice(None), None)
    expected = (x - mean[c]) / np.sqrt(var[c] + 1e-5) * scale[c] + bias[c]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=lambda d: np.dtype(d).name)
def test_batch_normalization_dtypes(dtype):
    x = random_array([2, 3, 4], dtype, seed=1)
    scale, bias = channel_params(3, dtype, seed=2)
    var = (np.abs(random_array([3], dtype, seed=5)) + 0.1).astype(dtype)
    inputs = [x, scale, bias, random_array([3], dtype, seed=4), var]
    run_both(node_model("BatchNormalization", inputs, opset=15), inputs, tolerances=TOLERANCES)


def test_batch_normalization_training_mode_uses_the_batch_statistics():
    # (a value, not an update: timm's NFNets standardize their weights so in an eval-mode
    # export) y from the batch's mean and population variance, the running outputs
    # input * momentum + current * (1 - momentum)
    x = random_array([4, 3, 5], np.float32)
    s, b, m, v = (random_array([3], np.float32, seed=i) for i in range(1, 5))
    v = np.abs(v) + 0.5
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                            training_mode=1, momentum=0.8, epsilon=1e-3)
    specs = {name: (np.float32, list(a.shape)) for name, a in zip("xsbmv", [x, s, b, m, v])}
    compiled = dlc.compile(make_model([node], specs, ["y", "rm", "rv"], opset=15))
    y, rm, rv = compiled(x, s, b, m, v)
    mean = x.astype(np.float64).mean(axis=(0, 2))
    var = x.astype(np.float64).var(axis=(0, 2))
    expected = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) \
        * s[None, :, None] + b[None, :, None]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm, m * 0.8 + mean * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv, v * 0.8 + var * 0.2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [[2, 3, 5], [2, 3, 2, 4]], ids=str)
def test_instance_normalization(shape, dtype):
    x = random_array(shape, dtype, seed=1)
    inputs = [x, *channel_params(3, dtype, seed=2)]
    run_both(node_model("InstanceNormalization", inputs, epsilon=1e-2), inputs,
             tolerances=TOLERANCES)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_normalization(axis, with_bias):
    x = random_array([2, 3, 4], np.float32, seed=1)
    normalized = x.shape[axis % 3:]
    scale = random_array(normalized, np.float32, seed=2)
    bias = random_array(normalized, np.float32, seed=3)
    inputs = [x, scale, bias if with_bias else None]
    model = node_model("LayerNormalization", inputs, n_outputs=3, axis=axis, epsilon=1e-3)
    run_both(model, [a for a in inputs if a is not None], tolerances=TOLERANCES)


def test_layer_normalization_float64_one_output():
    x = random_array([3, 4], np.float64, seed=1)
    inputs = [x, random_array([4], np.float64, seed=2), random_array([4], np.float64, seed=3)]
    run_both(node_model("LayerNormalization", inputs), inputs, tolerances=TOLERANCES)


def test_layer_normalization_float16_is_computed_in_float32():
    x = random_array([3, 8], np.float16, seed=1)
    inputs = [x, random_array([8], np.float16, seed=2), random_array([8], np.float16, seed=3)]
    (y,) = dlc.compile(node_model("LayerNormalization", inputs))(*inputs)
    wide = x.astype(np.float32)
    expected = (wide - wide.mean(1, keepdims=True)) / np.sqrt(wide.var(1, keepdims=True) + 1e-5)
    expected = expected.astype(np.float16) * inputs[1] + inputs[2]
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, expected, rtol=1e-2, atol=1e-2)


def group_norm_model(x: np.ndarray, scale: np.ndarray, opset: int, **attrs):
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], **attrs)
    specs = {"x": (np.float32, list(x.shape)), "scale": (np.float32, list(scale.shape)),
             "bias": (np.float32, list(scale.shape))}
    # (onnx's checker calls the opset-18 op deprecated; it is still valid in opsets 18-20)
    return make_model([node], specs, {"y": (np.float32, list(x.shape))}, opset=opset,
                      check=opset >= 21)


def group_norm_numpy(x, groups, scale, bias, epsilon, per_group: bool):
    g = x.reshape(x.shape[0], groups, -1)
    y = (g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + epsilon)
    if per_group:
        return (y * scale[:, None] + bias[:, None]).reshape(x.shape)
    ones = (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * scale.reshape(-1, *ones) + bias.reshape(-1, *ones)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("shape,groups", [([2, 4, 3], 2), ([1, 6, 2, 2], 3), ([2, 4, 2], 4)],
                         ids=str)
def test_group_normalization(shape, groups, opset, monkeypatch):
    # opset 18: scale/bias per group; 21: per channel (the reference evaluator implements only
    # the latter: compare with numpy)
    if opset < 21:  # onnx's checker (run by dlc's importer) rejects the opset-18 op
        monkeypatch.setattr(onnx.checker, "check_model", lambda *args, **kwargs: None)
    x = random_array(shape, np.float32, seed=1)
    c = groups if opset < 21 else shape[1]
    scale, bias = channel_params(c, np.float32, seed=2)
    model = group_norm_model(x, scale, opset, num_groups=groups, epsilon=1e-3)
    (y,) = dlc.compile(model)(x, scale, bias)
    expected = group_norm_numpy(x, groups, scale, bias, 1e-3, per_group=opset < 21)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_group_normalization_bad_groups():
    x = random_array([2, 4, 3], np.float32)
    scale, _ = channel_params(4, np.float32)
    model = group_norm_model(x, scale, 21, num_groups=3)
    with pytest.raises(dlc.DlcError, match="divisor"):
        dlc.compile(model)


@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3]], ids=str)
def test_mean_variance_normalization(axes):
    x = random_array([2, 3, 2, 2], np.float32, seed=1)
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs)
    spec = (np.float32, list(x.shape))  # (onnx's shape inference fails on the default axes)
    model = make_model([node], {"x": spec}, {"y": spec}, opset=13, check=False)
    run_both(model, [x], tolerances=TOLERANCES)


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, -1])
def test_lp_normalization(p, axis):
    # positive inputs: for p = 1 the reference evaluator sums x, not |x|
    x = np.abs(random_array([3, 4], np.float32, seed=1))
    x[1] = 0  # a zero norm along axis -1 gives 0, not NaN
    run_both(node_model("LpNormalization", [x], axis=axis, p=p), [x], tolerances=TOLERANCES)


def test_lp_normalization_l1_uses_absolute_values():
    x = np.array([[3.0, -4.0], [-1.0, 1.0]], np.float32)
    (y,) = dlc.compile(node_model("LpNormalization", [x], axis=1, p=1))(x)
    np.testing.assert_allclose(y, x / np.abs(x).sum(1, keepdims=True))


def lrn_numpy(x, size, alpha, beta, bias):
    square_sum = np.zeros_like(x)
    low, high = (size - 1) // 2, -(-(size - 1) // 2)
    for c in range(x.shape[1]):
        begin, end = max(0, c - low), min(x.shape[1], c + high + 1)
        square_sum[:, c] = (x[:, begin:end] ** 2).sum(axis=1)
    return x / (bias + alpha / size * square_sum) ** beta


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn(size):
    # the reference evaluator loops over the batch instead of the channels: compare with numpy
    x = random_array([2, 5, 3, 2], np.float32, seed=1)
    attrs = {"size": size, "alpha": 0.01, "beta": 0.5, "bias": 2.0}
    (y,) = dlc.compile(node_model("LRN", [x], **attrs))(x)
    expected = lrn_numpy(x, size, 0.01, 0.5, 2.0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_lrn_defaults_against_reference():
    x = random_array([3, 3, 2, 2], np.float32, seed=2)  # N == C: the reference's loop is right
    run_both(node_model("LRN", [x], size=3), [x], tolerances=TOLERANCES)
