"""Binary/variadic elementwise ops, comparisons, logic, Where, Cast, Clip and PRelu against
onnx.reference: dtypes (signed, unsigned, bool, float16), broadcasting, attributes, opsets and
the edge cases that must not trap (remainder by 0, shifts past the bit width)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, node_model, random_array, run_both

OPSET = 18  # BitwiseAnd/Or/Xor need 18
NUMERIC_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8,
                  np.uint64]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
ALL_DTYPES = [np.float32, np.float64, np.float16, *INT_DTYPES, np.bool_]


def name(dtype) -> str:
    return np.dtype(dtype).name


def numbers(shape, dtype, seed: int = 0) -> np.ndarray:
    """Random values of `dtype`; non-negative for unsigned types."""
    low = 0 if np.issubdtype(dtype, np.unsignedinteger) else -9
    return random_array(shape, dtype, seed=seed, low=low, high=10)


def bools(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, size=shape).astype(np.bool_)


# ----------------------------------------------------------------------------- Max, Min


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=name)
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_broadcast(op, dtype):
    inputs = [numbers([2, 3], dtype, seed=1), numbers([3], dtype, seed=2)]
    run_both(node_model(op, inputs, opset=OPSET), inputs)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_variadic(op):
    inputs = [numbers([2, 1, 4], np.float32, s) for s in range(3)]
    inputs[1] = numbers([3, 1], np.float32, seed=5)
    outputs = run_both(node_model(op, inputs, opset=OPSET), inputs)
    assert outputs[0].shape == (2, 3, 4)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_one_input(op):
    x = numbers([2, 3], np.float32)
    run_both(node_model(op, [x], opset=OPSET), [x])


@pytest.mark.parametrize("op, fn", [("Max", np.maximum), ("Min", np.minimum)])
def test_max_min_propagate_nan(op, fn):
    lhs = np.array([np.nan, 1.0, 2.0, np.nan, -np.inf], np.float32)
    rhs = np.array([1.0, np.nan, 3.0, np.nan, 0.0], np.float32)
    outputs = run_both(node_model(op, [lhs, rhs], opset=OPSET), [lhs, rhs])
    np.testing.assert_array_equal(outputs[0], fn(lhs, rhs))


# ----------------------------------------------------------------------------- Sum, Mean


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=name)
@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_sum_mean_broadcast(op, dtype):
    inputs = [numbers([2, 3], dtype, 0), numbers([3], dtype, 1), numbers([2, 1], dtype, 2)]
    run_both(node_model(op, inputs, opset=OPSET), inputs)


@pytest.mark.parametrize("opset", [7, 13])
def test_sum_mean_opsets(opset):
    inputs = [numbers([3], np.float32, s) for s in range(2)]
    run_both(node_model("Mean", inputs, opset=opset), inputs)
    run_both(node_model("Sum", inputs, opset=opset), inputs)


# ----------------------------------------------------------------------------- Pow


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=name)
@pytest.mark.parametrize("shapes", [([2, 3], [2, 3]), ([2, 3], [3]), ([2, 3], [])], ids=str)
def test_pow_float(dtype, shapes):
    base = np.asarray(np.abs(numbers(shapes[0], dtype, 1)) + dtype(0.5), dtype)
    exponent = np.asarray(numbers(shapes[1], dtype, 2) / dtype(3), dtype)
    run_both(node_model("Pow", [base, exponent], opset=OPSET), [base, exponent])


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=name)
def test_pow_integers(dtype):
    base = np.array([-3, -2, 0, 0, 1, 2, 3, 7, -1, 5], dtype)
    exponent = np.array([3, 2, 0, 4, 9, 10, 5, 1, 7, 0], dtype)
    run_both(node_model("Pow", [base, exponent], opset=OPSET), [base, exponent])


def test_pow_integer_wraps_around():
    base, exponent = np.array([3, -7], np.int32), np.array([40, 31], np.int32)
    outputs = run_both(node_model("Pow", [base, exponent], opset=OPSET), [base, exponent])
    np.testing.assert_array_equal(outputs[0], np.power(base, exponent))


def test_pow_negative_integer_exponent_does_not_crash():
    # numpy raises; dlc gives 1 / base ** n truncated: 0 except for bases 1 and -1
    base = np.array([2, 1, -1, -1, 0, -3], np.int64)
    exponent = np.array([-1, -5, -3, -2, -1, -2], np.int64)
    (result,) = dlc.compile(node_model("Pow", [base, exponent], opset=OPSET))(base, exponent)
    np.testing.assert_array_equal(result, [0, 1, -1, 1, 0, 0])


MIXED_POW = [(np.float32, np.int64), (np.float32, np.int32), (np.float32, np.uint32),
             (np.float64, np.int8), (np.int64, np.float32), (np.int32, np.float32),
             (np.int32, np.int64), (np.float16, np.float32)]


@pytest.mark.parametrize("types", MIXED_POW, ids=lambda t: f"{name(t[0])}-{name(t[1])}")
def test_pow_mixed_types(types):
    base_type, exponent_type = types
    base = np.array([[-2, 1.5, 3], [4, 0.5, -1]]).astype(base_type)
    exponent = np.array([3, 2, 4]).astype(exponent_type)
    run_both(node_model("Pow", [base, exponent], opset=OPSET), [base, exponent])


def test_pow_opset7():
    base, exponent = np.array([1.5, 2.0], np.float32), np.array([2.0, -1.0], np.float32)
    run_both(node_model("Pow", [base, exponent], opset=7), [base, exponent])


# ----------------------------------------------------------------------------- Mod


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=name)
def test_mod(dtype, fmod):
    if np.issubdtype(dtype, np.unsignedinteger):
        lhs, rhs = np.array([7, 0, 13, 200, 9, 255], dtype), np.array([3, 5, 13, 7, 10, 2], dtype)
    else:
        lhs = np.array([[7, -7, 7, -7, 0, 5], [6, -6, 4, 9, -3, 3]], dtype)
        rhs = np.array([3, 3, -3, -3, 2, -5], dtype)
    if dtype in (np.float32, np.float64, np.float16):
        lhs = lhs + dtype(0.25)
    run_both(node_model("Mod", [lhs, rhs], opset=OPSET, fmod=fmod), [lhs, rhs])


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_float_edge_cases(fmod):
    lhs = np.array([0.0, -0.0, -3.0, 3.0, np.inf, 1.0, np.nan, -4.0, 4.0], np.float32)
    rhs = np.array([-2.0, 2.0, np.inf, -np.inf, 2.0, 0.0, 2.0, 2.0, -2.0], np.float32)
    model = node_model("Mod", [lhs, rhs], opset=OPSET, fmod=fmod)
    (result,) = dlc.compile(model)(lhs, rhs)
    with np.errstate(all="ignore"):
        expected = np.fmod(lhs, rhs) if fmod else np.mod(lhs, rhs)
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint32], ids=name)
def test_integer_mod_by_zero_and_overflow_do_not_crash(dtype, fmod):
    # x % 0 -> 0 as numpy; MIN % -1 (a trap on x86) -> 0
    info = np.iinfo(dtype)
    lhs = np.array([7, 0, info.min, info.max, info.min], dtype)
    rhs = np.array([0, 0, 0, 0, -1 if info.min else 1], dtype)
    (result,) = dlc.compile(node_model("Mod", [lhs, rhs], opset=OPSET, fmod=fmod))(lhs, rhs)
    np.testing.assert_array_equal(result, np.zeros(5, dtype))


# ----------------------------------------------------------------------------- BitShift


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64, np.int8, np.int32, np.int64],
                         ids=name)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(direction, dtype):
    bits = np.iinfo(dtype).bits
    lhs = np.array([[1, 16, 200 % 128, 3, 5, 9], [7, 1, 2, 0, 127, 64]], dtype)
    if np.issubdtype(dtype, np.signedinteger):
        lhs[1] = -lhs[1]
    rhs = np.array([0, 1, 3, bits - 1, bits, bits + 3], dtype)  # past the width too
    run_both(node_model("BitShift", [lhs, rhs], opset=OPSET, direction=direction), [lhs, rhs])


def test_bitshift_negative_amount():
    lhs, rhs = np.array([-8, 8, 8], np.int32), np.array([-1, -1, -32], np.int32)
    for direction in ("LEFT", "RIGHT"):
        model = node_model("BitShift", [lhs, rhs], opset=OPSET, direction=direction)
        run_both(model, [lhs, rhs])


def test_bitshift_bad_direction():
    x = np.array([1], np.uint8)
    with pytest.raises(dlc.FrontendError, match="direction must be LEFT or RIGHT"):
        dlc.compile(node_model("BitShift", [x, x], direction="UP"))


# ----------------------------------------------------------------------------- bitwise, logic


@pytest.mark.parametrize("dtype", [np.int16, np.int64, np.uint8, np.uint64], ids=name)
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise(op, dtype):
    lhs = random_array([2, 3, 4], dtype, seed=1, low=0, high=120)
    rhs = random_array([3, 1], dtype, seed=2, low=0, high=120)
    run_both(node_model(op, [lhs, rhs], opset=OPSET), [lhs, rhs])


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op):
    lhs, rhs = bools([3, 4, 5], seed=1), bools([4, 1], seed=2)
    run_both(node_model(op, [lhs, rhs], opset=OPSET), [lhs, rhs])


def test_logic_opset7():
    lhs, rhs = bools([2, 3], seed=1), bools([3], seed=2)
    run_both(node_model("Xor", [lhs, rhs], opset=7), [lhs, rhs])


# ----------------------------------------------------------------------------- comparisons

COMPARISONS = ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float16], ids=name)
@pytest.mark.parametrize("op", COMPARISONS)
def test_compare(op, dtype):
    lhs = numbers([2, 3, 4], dtype, seed=1)
    rhs = numbers([3, 1], dtype, seed=2)
    lhs[0, 0] = rhs[0, 0]  # some equal elements
    run_both(node_model(op, [lhs, rhs], opset=OPSET), [lhs, rhs])


@pytest.mark.parametrize("op", COMPARISONS)
def test_compare_nan_is_unordered(op):
    lhs = np.array([np.nan, 1.0, np.nan, np.inf, -0.0], np.float64)
    rhs = np.array([1.0, np.nan, np.nan, np.inf, 0.0], np.float64)
    run_both(node_model(op, [lhs, rhs], opset=OPSET), [lhs, rhs])


def test_compare_unsigned_above_signed_range():
    lhs = np.array([2**63 + 5, 1, 2**64 - 1], np.uint64)
    rhs = np.array([3, 2**63, 2**64 - 1], np.uint64)
    for op in COMPARISONS:
        run_both(node_model(op, [lhs, rhs], opset=OPSET), [lhs, rhs])


def test_equal_bool_and_int64():
    lhs, rhs = bools([4, 3], seed=1), bools([3], seed=2)
    run_both(node_model("Equal", [lhs, rhs], opset=OPSET), [lhs, rhs])
    ints = [numbers([5], np.int64, 1), numbers([5], np.int64, 1)]
    run_both(node_model("Equal", ints, opset=7), ints)


# ----------------------------------------------------------------------------- Where


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint16, np.bool_], ids=name)
def test_where_broadcasts_all_three(dtype):
    cond = bools([3, 1, 4], seed=1)
    lhs = bools([2, 1], seed=2) if dtype == np.bool_ else numbers([2, 1], dtype, seed=2)
    rhs = bools([4], seed=3) if dtype == np.bool_ else numbers([4], dtype, seed=3)
    outputs = run_both(node_model("Where", [cond, lhs, rhs], opset=OPSET), [cond, lhs, rhs])
    assert outputs[0].shape == (3, 2, 4)


# ----------------------------------------------------------------------------- Cast


def cast_all_model(source, opset: int = OPSET) -> onnx.ModelProto:
    """One Cast node from `source` to each dtype of ALL_DTYPES (one compile for all pairs)."""
    nodes = [helper.make_node("Cast", ["x"], [f"to_{name(t)}"], to=helper.np_dtype_to_tensor_dtype(
        np.dtype(t))) for t in ALL_DTYPES]
    return make_model(nodes, {"x": (source, [8])}, [f"to_{name(t)}" for t in ALL_DTYPES],
                      opset=opset)


CAST_SOURCES = {  # values every target type represents (no negatives, all below 127)
    "float": [0.0, 1.5, 2.7, 100.9, 0.2, 3.0, 126.0, 7.99],
    "int": [0, 1, 2, 100, 0, 3, 126, 7],
}


@pytest.mark.parametrize("source", ALL_DTYPES, ids=name)
def test_cast_to_every_type(source):
    values = CAST_SOURCES["float" if np.dtype(source).kind == "f" else "int"]
    x = np.array(values).astype(source)
    run_both(cast_all_model(source), [x])


@pytest.mark.parametrize("source", [np.float32, np.float64, np.float16], ids=name)
def test_cast_float_truncates_toward_zero(source):
    x = np.array([-2.7, -0.5, 0.5, 2.7, -100.2, 100.9, -0.0, 3.0], source)
    nodes = [helper.make_node("Cast", ["x"], [f"y{i}"], to=helper.np_dtype_to_tensor_dtype(
        np.dtype(t))) for i, t in enumerate([np.int8, np.int32, np.int64, np.bool_])]
    model = make_model(nodes, {"x": (source, [8])}, [f"y{i}" for i in range(4)], opset=OPSET)
    run_both(model, [x])


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_cast_float_nan_and_infinities_to_bool_and_float():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 70000.0, 1.0], np.float32)
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=onnx.TensorProto.BOOL),
             helper.make_node("Cast", ["x"], ["h"], to=onnx.TensorProto.FLOAT16),
             helper.make_node("Cast", ["x"], ["d"], to=onnx.TensorProto.DOUBLE)]
    model = make_model(nodes, {"x": (np.float32, [8])}, ["b", "h", "d"], opset=OPSET)
    run_both(model, [x])


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("source", [np.int8, np.int32, np.int64, np.uint8, np.uint64], ids=name)
def test_cast_integers_sign_and_wrap(source):
    # sign extension for signed, zero extension for unsigned, wrap-around when narrowing
    info = np.iinfo(source)
    x = np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 3, 5, info.max - 1],
                 source)
    run_both(cast_all_model(source), [x])


@pytest.mark.parametrize("opset", [6, 9, 13, 19, 21])
def test_cast_opsets(opset):
    x = numbers([2, 3], np.float32)
    run_both(node_model("Cast", [x], opset=opset, to=onnx.TensorProto.INT32), [x])


def test_cast_like():
    x, like = numbers([2, 3], np.float32), np.zeros([1], np.int16)
    outputs = run_both(node_model("CastLike", [x, like], opset=OPSET), [x, like])
    assert outputs[0].dtype == np.int16


def test_cast_to_string_is_a_clear_error():
    x = numbers([2], np.float32)
    model = node_model("Cast", [x], opset=OPSET, to=onnx.TensorProto.STRING)
    with pytest.raises(dlc.FrontendError, match=r"cannot cast: .*STRING"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- Clip


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (-0.5, None), (None, 0.5), (None, None),
                                    (0.5, -0.5)], ids=str)
def test_clip_inputs(bounds):
    x = numbers([3, 4], np.float32)
    x[0, 0] = np.nan
    inputs = [x] + [None if b is None else np.array(b, np.float32) for b in bounds]
    while inputs[-1] is None:
        inputs.pop()
    given = [v for v in inputs if v is not None]
    run_both(node_model("Clip", inputs, opset=13), given)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8], ids=name)
def test_clip_integers(dtype):
    x = numbers([2, 5], dtype)
    lo, hi = np.array(2, dtype), np.array(7, dtype)
    run_both(node_model("Clip", [x, lo, hi], opset=13), [x, lo, hi])


@pytest.mark.parametrize("attrs", [{"min": -0.5, "max": 0.5}, {"min": 0.0}, {}], ids=str)
def test_clip_attributes_opset6(attrs):
    x = np.array([-np.inf, -1.0, 0.25, 1.0, np.inf, 3.4e38], np.float32)
    run_both(node_model("Clip", [x], opset=6, **attrs), [x])


# ----------------------------------------------------------------------------- PRelu


@pytest.mark.parametrize("slope_shape", [[3, 4, 5], [5], [4, 1], [1]], ids=str)
def test_prelu(slope_shape):
    x, slope = numbers([3, 4, 5], np.float32, 1), numbers(slope_shape, np.float32, 2)
    run_both(node_model("PRelu", [x, slope], opset=OPSET), [x, slope])


@pytest.mark.parametrize("dtype", [np.int32, np.float16], ids=name)
def test_prelu_types(dtype):
    x, slope = numbers([2, 3], dtype, 1), numbers([3], dtype, 2)
    run_both(node_model("PRelu", [x, slope], opset=OPSET), [x, slope])


def test_prelu_opset7():
    x, slope = numbers([2, 3], np.float32, 1), numbers([3], np.float32, 2)
    run_both(node_model("PRelu", [x, slope], opset=7), [x, slope])


def test_prelu_slope_must_broadcast_to_x():
    model = make_model([helper.make_node("PRelu", ["x", "s"], ["y"])],
                       {"x": (np.float32, [3]), "s": (np.float32, [2, 3])},
                       {"y": (np.float32, [3])}, opset=OPSET, check=False)
    with pytest.raises(dlc.FrontendError, match=r"slope of shape \[2x3\] does not broadcast"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- errors


def test_mismatched_element_types_name_the_node():
    model = make_model([helper.make_node("Max", ["a", "b"], ["y"], name="m")],
                       {"a": (np.float32, [2]), "b": (np.int32, [2])},
                       {"y": (np.float32, [2])}, opset=OPSET, check=False)
    with pytest.raises(dlc.FrontendError, match="node 'm' .*same element type"):
        dlc.compile(model)
