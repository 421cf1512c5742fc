"""Unary math and activations (`dlc.unary`) against onnx.reference: dtypes, attributes, opsets.

Every ONNX op of the family runs alone in float32; float64, float16 and the integer dtypes run
as one model of many nodes per dtype (one compile each, to keep the suite fast). Special values
(NaN, infinities, ties of Round) and the Dropout variants have their own tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, node_model, random_array, run_both

# ONNX ops on floats only, with the opset each test uses (the newest version they need)
FLOAT_OPS: dict[str, int] = {
    op: 17 for op in (
        "Abs", "Neg", "Sign", "Reciprocal", "Floor", "Ceil", "Round", "Exp", "Log", "Sqrt",
        "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh",
        "Acosh", "Atanh", "Sigmoid", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu",
        "LeakyRelu", "ThresholdedRelu", "Softplus", "Softsign", "Shrink")
} | {"Mish": 18, "Gelu": 20, "Swish": 24}
NEWEST = 24

# inputs inside each op's domain: (low, high) of uniform values; normal values otherwise
DOMAINS: dict[str, tuple[float, float]] = {
    "Log": (0.05, 5.0), "Sqrt": (0.0, 5.0), "Acosh": (1.0, 5.0),
    "Asin": (-0.95, 0.95), "Acos": (-0.95, 0.95), "Atanh": (-0.95, 0.95),
    "Reciprocal": (0.2, 3.0), "Tan": (-1.4, 1.4),
}

FLOAT_DTYPE_IDS = {np.float32: "float32", np.float64: "float64", np.float16: "float16"}


def op_input(op: str, shape, dtype, seed: int = 0) -> np.ndarray:
    if op not in DOMAINS:
        return np.asarray(random_array(shape, np.float64, seed) * 2).astype(dtype)
    low, high = DOMAINS[op]
    return np.asarray(np.random.default_rng(seed).uniform(low, high, size=shape)).astype(dtype)


def many_ops_model(ops: list[str], dtype, shape, opset: int = NEWEST, **attributes):
    """One node per op, each on its own input `x_<op>` with output `y_<op>`."""
    nodes = [helper.make_node(op, [f"x_{op}"], [f"y_{op}"], name=op, **attributes.get(op, {}))
             for op in ops]
    inputs = {f"x_{op}": (dtype, list(shape)) for op in ops}
    return make_model(nodes, inputs, [f"y_{op}" for op in ops], opset=opset)


# ----------------------------------------------------------------------------- floats


@pytest.mark.parametrize("op", list(FLOAT_OPS))
def test_float32(op):
    x = op_input(op, [3, 4], np.float32)
    run_both(node_model(op, [x], opset=FLOAT_OPS[op]), [x])


# onnx.reference computes these in float32 whatever the input's type
FLOAT32_IN_REFERENCE = {"Erf", "Gelu"}


@pytest.mark.parametrize("dtype", [np.float64, np.float16], ids=FLOAT_DTYPE_IDS.get)
def test_all_float_ops_in_one_model(dtype):
    ops = [op for op in FLOAT_OPS if dtype != np.float64 or op not in FLOAT32_IN_REFERENCE]
    if dtype != np.float32:  # the schema of Celu allows float32 only (the validator checks)
        ops.remove("Celu")
    inputs = [op_input(op, [2, 5], dtype, seed=i) for i, op in enumerate(ops)]
    tolerances = {np.dtype(np.float16): (4e-3, 4e-3), np.dtype(np.float64): (1e-10, 1e-12)}
    run_both(many_ops_model(ops, dtype, [2, 5]), inputs, tolerances=tolerances)


def test_erf_and_gelu_float64_match_math_erf():
    x = np.linspace(-4, 4, 33)
    erf = np.array([math.erf(v) for v in x])
    y_erf, y_gelu = dlc.compile(many_ops_model(["Erf", "Gelu"], np.float64, [33]))(x, x)
    np.testing.assert_allclose(y_erf, erf, rtol=1e-14, atol=1e-15)
    gelu = x / 2 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    np.testing.assert_allclose(y_gelu, gelu, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("shape", [[], [1], [7], [2, 1, 3, 2]], ids=str)
@pytest.mark.parametrize("op", ["Tanh", "Sigmoid"])
def test_shapes(op, shape):
    x = op_input(op, shape, np.float32, seed=3)
    run_both(node_model(op, [x]), [x])


# ----------------------------------------------------------------------------- attributes

ATTRIBUTES = {
    "Elu alpha": ("Elu", {"alpha": 0.3}),
    "Selu alpha gamma": ("Selu", {"alpha": 2.0, "gamma": 3.0}),
    "Celu alpha": ("Celu", {"alpha": 2.5}),
    "LeakyRelu alpha": ("LeakyRelu", {"alpha": 0.25}),
    "ThresholdedRelu alpha": ("ThresholdedRelu", {"alpha": 0.4}),
    "ThresholdedRelu negative alpha": ("ThresholdedRelu", {"alpha": -0.5}),
    "HardSigmoid alpha beta": ("HardSigmoid", {"alpha": 0.5, "beta": 0.6}),
    "Shrink bias lambd": ("Shrink", {"bias": 1.5, "lambd": 1.0}),
    "Shrink lambd only": ("Shrink", {"lambd": 0.2}),
    "Gelu approximate tanh": ("Gelu", {"approximate": "tanh"}),
    "Gelu approximate none": ("Gelu", {"approximate": "none"}),
    "Swish alpha": ("Swish", {"alpha": 0.5}),
}


@pytest.mark.parametrize("case", list(ATTRIBUTES.values()), ids=list(ATTRIBUTES))
def test_attributes(case):
    op, attributes = case
    x = op_input(op, [4, 5], np.float32, seed=5)
    run_both(node_model(op, [x], opset=FLOAT_OPS[op], **attributes), [x])


@pytest.mark.parametrize("detect", [(1, 1), (1, 0), (0, 1), (0, 0)], ids=str)
def test_isinf_detect(detect):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -3.5, 1e38], np.float32)
    attributes = {"detect_positive": detect[0], "detect_negative": detect[1]}
    (y,) = run_both(node_model("IsInf", [x], **attributes), [x])
    assert y.dtype == np.bool_


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=FLOAT_DTYPE_IDS.get)
def test_isnan(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, np.nan], dtype)
    (y,) = run_both(node_model("IsNaN", [x]), [x])
    np.testing.assert_array_equal(y, np.isnan(x))


def test_gelu_rejects_unknown_approximation():
    x = np.zeros([2], np.float32)
    model = node_model("Gelu", [x], opset=20, approximate="erf")
    with pytest.raises(dlc.DlcError, match=r"approximate must be 'none' or 'tanh', got 'erf'"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- special values


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 100.0, -100.0, 1e-7], np.float32)
    ops = ["Abs", "Neg", "Sign", "Exp", "Tanh", "Sigmoid", "Softplus", "Softsign", "Elu",
           "LeakyRelu", "HardSigmoid", "Erf", "Floor", "Ceil", "Round", "Mish", "Selu"]
    run_both(many_ops_model(ops, np.float32, [8]), [x] * len(ops))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # in onnx.reference
def test_sigmoid_and_softplus_do_not_overflow():
    x = np.array([-200.0, -90.0, -20.0, 20.0, 90.0, 200.0], np.float32)
    sigmoid, softplus = run_both(many_ops_model(["Sigmoid", "Softplus"], np.float32, [6]),
                                 [x, x])
    assert np.all(np.isfinite(sigmoid)) and np.all(np.isfinite(softplus))
    np.testing.assert_allclose(softplus[3:], x[3:])


def test_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6], np.float32)
    (y,) = run_both(node_model("Round", [x]), [x])
    np.testing.assert_array_equal(y, [0, 2, 2, -0, -2, -2, 2, 3, -3])


# ----------------------------------------------------------------------------- integers and bool

SIGNED = [np.int8, np.int16, np.int32, np.int64]
UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", SIGNED, ids=lambda d: np.dtype(d).name)
def test_signed_integers(dtype):
    ops = ["Abs", "Neg", "Sign", "BitwiseNot"]
    x = random_array([3, 4], dtype, low=-100, high=100)
    x[0, 0] = 0
    run_both(many_ops_model(ops, dtype, [3, 4]), [x] * len(ops))


@pytest.mark.parametrize("dtype", UNSIGNED, ids=lambda d: np.dtype(d).name)
def test_unsigned_integers(dtype):
    ops = ["Abs", "Sign", "BitwiseNot"]
    x = random_array([3, 4], dtype, low=0, high=200)
    x[0, 0] = 0
    x[0, 1] = np.iinfo(dtype).max
    run_both(many_ops_model(ops, dtype, [3, 4]), [x] * len(ops))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_shrink_integers(dtype):
    x = np.arange(-6, 7).astype(dtype) if np.dtype(dtype).kind == "i" else \
        np.arange(0, 13).astype(dtype)
    run_both(node_model("Shrink", [x], bias=1.5, lambd=2.0), [x])


@pytest.mark.parametrize("shape", [[5], [2, 3], []], ids=str)
def test_not(shape):
    x = random_array(shape, np.int8, low=0, high=2).astype(np.bool_)
    (y,) = run_both(node_model("Not", [x]), [x])
    np.testing.assert_array_equal(y, ~x)


def test_predicates_and_not_compose():
    # Not(IsNaN(x)): a bool result of dlc.unary feeds a bool operand (stored as i8 0/1)
    x = np.array([np.nan, 1.0, np.inf, np.nan], np.float32)
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"]), helper.make_node("Not", ["nan"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [4])}, ["y"])
    (y,) = run_both(model, [x])
    np.testing.assert_array_equal(y, [False, True, True, False])


# ----------------------------------------------------------------------------- opsets

OPSETS = {
    "Sigmoid 7": ("Sigmoid", 7), "Elu 7": ("Elu", 7), "HardSigmoid 7": ("HardSigmoid", 7),
    "Sin 7": ("Sin", 7), "Erf 9": ("Erf", 9), "Sign 9": ("Sign", 9), "IsNaN 9": ("IsNaN", 9),
    "Round 11": ("Round", 11), "Celu 12": ("Celu", 12), "HardSwish 14": ("HardSwish", 14),
    "LeakyRelu 16": ("LeakyRelu", 16), "Selu 22": ("Selu", 22), "Tanh newest": ("Tanh", NEWEST),
}


@pytest.mark.parametrize("case", list(OPSETS.values()), ids=list(OPSETS))
def test_opsets(case):
    op, opset = case
    x = op_input(op, [2, 3], np.float32, seed=7)
    run_both(node_model(op, [x], opset=opset), [x])


# ----------------------------------------------------------------------------- Dropout


def dropout_model(opset: int, n_outputs: int, ratio=None, training=None):
    """Dropout on x [3, 4]; ratio and training_mode, when given, are initializers."""
    initializers = {}
    if ratio is not None:
        initializers["ratio"] = np.array(ratio, np.float32)
    if training is not None:
        initializers["training"] = np.array(training, np.bool_)
    names = ["x", "ratio" if ratio is not None else "", "training" if training is not None else ""]
    while not names[-1]:
        names.pop()
    outputs = ["y", "mask"][:n_outputs]
    node = helper.make_node("Dropout", names, outputs)
    return make_model([node], {"x": (np.float32, [3, 4])}, outputs,
                      initializers=initializers, opset=opset)


# name -> (opset, number of outputs, ratio input, training_mode input)
DROPOUTS = {
    "opset 7": (7, 1, None, None),
    "opset 10 bool mask": (10, 2, None, None),
    "opset 13": (13, 1, None, None),
    "opset 13 ratio": (13, 1, 0.2, None),
    "opset 13 training false": (13, 1, 0.2, False),
    "opset 13 training, ratio 0": (13, 1, 0.0, True),
    "opset 22 mask": (22, 2, None, False),
}


@pytest.mark.parametrize("case", list(DROPOUTS.values()), ids=list(DROPOUTS))
def test_dropout_is_identity(case):
    model = dropout_model(*case)
    x = random_array([3, 4], np.float32)
    outputs = run_both(model, [x])
    np.testing.assert_array_equal(outputs[0], x)
    if len(outputs) == 2:
        assert outputs[1].all()


def test_dropout_opset_7_mask_has_the_data_type():
    # Dropout-7's mask is of type T (onnx.reference returns bool there, against the spec)
    node = helper.make_node("Dropout", ["x"], ["y", "mask"], ratio=0.3)
    spec = (np.float32, [3, 4])
    model = make_model([node], {"x": spec}, {"y": spec, "mask": spec}, opset=7)
    x = random_array([3, 4], np.float32)
    y, mask = dlc.compile(model)(x)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(mask, np.ones([3, 4], np.float32))


@pytest.mark.parametrize("ratio", [None, 0.5], ids=["default ratio", "ratio 0.5"])
def test_dropout_training_is_rejected(ratio):
    model = dropout_model(13, 1, ratio=ratio, training=True)
    with pytest.raises(dlc.DlcError, match="training_mode is true"):
        dlc.compile(model)


@pytest.mark.parametrize("op_type, attributes", [
    ("Elu", {"alpha": float("nan")}), ("Elu", {"alpha": float("inf")}),
    ("LeakyRelu", {"alpha": float("nan")}), ("Selu", {"alpha": float("nan")}),
    ("Selu", {"alpha": float("inf"), "gamma": 2.0}), ("Celu", {"alpha": float("inf")}),
], ids=lambda v: str(v))
@pytest.mark.parametrize("opt_level", [0, 3])
def test_activations_at_zero_with_a_non_finite_alpha(op_type, attributes, opt_level):
    # the side a formula takes at x = 0 shows only with alpha nan or inf (found by dlc fuzz
    # --mutate: Elu took alpha's side at 0, giving nan where onnxruntime gives 0)
    import onnxruntime

    x = np.array([-1.0, 0.0, 0.5, -0.0], np.float32)
    node = helper.make_node(op_type, ["x"], ["y"], **attributes)
    model = make_model([node], {"x": (np.float32, [4])}, {"y": (np.float32, [4])}, check=False)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    (got,) = dlc.compile(model, opt_level=opt_level)(x)
    np.testing.assert_array_equal(got, want)
