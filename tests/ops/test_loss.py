"""Losses against onnx.reference: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
(reductions, class weights, ignore_index inside and outside the classes, N C d1..dk shapes,
element and target dtypes, the log_prob output, opsets) and their import errors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, random_array, run_both

TOLERANCES = {np.dtype(np.float16): (5e-3, 5e-3), np.dtype(np.float32): (1e-5, 1e-5),
              np.dtype(np.float64): (1e-12, 1e-12)}


def loss_model(op: str, x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None,
               opset: int = 13, n_outputs: int = 1, **attrs):
    inputs = {"x": (x.dtype, list(x.shape)), "t": (target.dtype, list(target.shape))}
    names = ["x", "t"]
    if weight is not None:
        inputs["w"] = (weight.dtype, list(weight.shape))
        names.append("w")
    outputs = ["loss", "log_prob"][:n_outputs]
    node = helper.make_node(op, names, outputs, **attrs)
    return make_model([node], inputs, outputs, opset=opset)


def case(shape: list[int], dtype=np.float32, target_dtype=np.int64, ignore: int | None = None,
         seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores [N, C, d..], targets [N, d..] in [0, C) (some set to `ignore`), weights [C]."""
    x = random_array(shape, dtype, seed=seed)
    classes = shape[1]
    target = random_array([shape[0], *shape[2:]], target_dtype, seed=seed + 1, low=0,
                          high=classes)
    if ignore is not None:
        target.reshape(-1)[::3] = ignore
    weight = (np.abs(random_array([classes], dtype, seed=seed + 2)) + 0.5).astype(dtype)
    return x, target, weight


SHAPES = [[3, 5], [2, 4, 3], [2, 3, 2, 2, 2]]


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_nll_loss(shape, reduction):
    x, target, _ = case(shape)
    run_both(loss_model("NegativeLogLikelihoodLoss", x, target, reduction=reduction),
             [x, target], tolerances=TOLERANCES)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_weight(reduction):
    x, target, weight = case([3, 4, 2])
    run_both(loss_model("NegativeLogLikelihoodLoss", x, target, weight, reduction=reduction),
             [x, target, weight], tolerances=TOLERANCES)


# ignore_index inside the classes, negative, and beyond them (never a valid index); not -1:
# without a weight, onnx.reference's NLL then averages over the ignored targets too, against
# the spec (dlc follows the spec; SoftmaxCrossEntropyLoss's reference has no such quirk)
@pytest.mark.parametrize("ignore", [1, -2, 7])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_nll_loss_ignore_index(ignore, weighted, reduction):
    x, target, weight = case([2, 4, 3], ignore=ignore, seed=3)
    inputs = [x, target, weight] if weighted else [x, target]
    model = loss_model("NegativeLogLikelihoodLoss", x, target, weight if weighted else None,
                       reduction=reduction, ignore_index=ignore)
    run_both(model, inputs, tolerances=TOLERANCES)


@pytest.mark.parametrize("opset", [12, 22])
@pytest.mark.parametrize("dtype, target_dtype", [(np.float64, np.int32),
                                                 (np.float16, np.int64)], ids=str)
def test_nll_loss_dtypes(dtype, target_dtype, opset):
    x, target, weight = case([4, 3, 2], dtype, target_dtype, ignore=0, seed=5)
    model = loss_model("NegativeLogLikelihoodLoss", x, target, weight, opset=opset,
                       reduction="sum", ignore_index=0)
    run_both(model, [x, target, weight], tolerances=TOLERANCES)


def test_nll_loss_all_ignored_mean_is_nan():
    x, target, _ = case([2, 3])
    target[:] = 2
    model = loss_model("NegativeLogLikelihoodLoss", x, target, ignore_index=2)
    (loss,) = dlc.compile(model)(x, target)
    assert loss.shape == () and np.isnan(loss)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_cross_entropy(shape, reduction):
    x, target, _ = case(shape, seed=7)
    run_both(loss_model("SoftmaxCrossEntropyLoss", x, target, reduction=reduction),
             [x, target], tolerances=TOLERANCES)


@pytest.mark.parametrize("ignore", [None, 2, -5])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_softmax_cross_entropy_log_prob_weight(ignore, reduction):
    x, target, weight = case([3, 4, 2], ignore=ignore, seed=9)
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    model = loss_model("SoftmaxCrossEntropyLoss", x, target, weight, n_outputs=2, **attrs)
    run_both(model, [x, target, weight], tolerances=TOLERANCES)


@pytest.mark.parametrize("opset", [12, 13])
@pytest.mark.parametrize("dtype, target_dtype", [(np.float64, np.int64),
                                                 (np.float16, np.int32)], ids=str)
def test_softmax_cross_entropy_dtypes(dtype, target_dtype, opset):
    x, target, _ = case([3, 5, 2], dtype, target_dtype, ignore=4, seed=11)
    model = loss_model("SoftmaxCrossEntropyLoss", x, target, opset=opset, n_outputs=2,
                       ignore_index=4)
    run_both(model, [x, target], tolerances=TOLERANCES)


def test_loss_errors():
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"])
    model = make_model([node], {"x": (np.float32, [2, 3, 4]), "t": (np.int64, [2, 5])},
                       {"loss": (np.float32, [])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"target \[2, 5\] must have the input's shape"):
        dlc.compile(model)
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss"], reduction="max")
    model = make_model([node], {"x": (np.float32, [2, 3, 4]), "t": (np.int64, [2, 4])},
                       {"loss": (np.float32, [])}, check=False)
    with pytest.raises(dlc.FrontendError, match="reduction 'max' is not one of none, sum, mean"):
        dlc.compile(model)
