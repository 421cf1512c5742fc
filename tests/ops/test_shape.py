"""Data-movement ops against onnx.reference: Reshape, Flatten, Transpose, Constant, Identity."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import dlc
from tests.conftest import (
    ARITHMETIC_DTYPES,
    make_model,
    node_model,
    random_array,
    reference,
    run_both,
)


def reshape_model(in_shape, target, dtype=np.float32, opset: int = 17, **attributes):
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape", **attributes)
    return make_model([node], {"x": (dtype, in_shape)}, ["y"], opset=opset,
                      initializers={"shape": np.array(target, np.int64)})


RESHAPES = {
    "flatten to 1-D": ([2, 3, 4], [24]),
    "split axis": ([6, 4], [2, 3, 4]),
    "-1 inferred": ([2, 3, 4], [4, -1]),
    "-1 first": ([2, 3, 4], [-1, 12]),
    "0 copies axis": ([2, 3, 4], [0, -1]),
    "0 and -1": ([2, 3, 4], [0, 3, -1]),
    "two 0s": ([2, 3, 4], [0, 0, 2, 2]),
    "same shape": ([2, 3], [2, 3]),
    "to rank-0": ([1, 1], []),
    "from rank-0": ([], [1, 1, 1]),
    "1-D to 1-D": ([5], [5]),
    "unit axes": ([3, 4], [1, 3, 1, 4, 1]),
}


@pytest.mark.parametrize("in_shape, target", list(RESHAPES.values()), ids=list(RESHAPES))
def test_reshape(in_shape, target):
    x = random_array(in_shape, np.float32)
    outputs = run_both(reshape_model(in_shape, target), [x])
    expected_shape = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    np.testing.assert_array_equal(outputs[0], x.reshape(expected_shape))


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_reshape_dtypes(dtype):
    x = random_array([2, 6], dtype)
    run_both(reshape_model([2, 6], [3, -1], dtype), [x])


def test_reshape_allowzero_without_zeros():
    x = random_array([2, 3, 4], np.float32)
    run_both(reshape_model([2, 3, 4], [4, 0 + 6], opset=14, allowzero=1), [x])


def test_reshape_allowzero_keeps_zero_as_a_size():
    # allowzero=1: a 0 in the shape is a size-0 axis, not "copy the input's axis"
    x = np.zeros([0, 3], np.float32)
    outputs = run_both(reshape_model([0, 3], [3, 0], opset=14, allowzero=1), [x])
    assert outputs[0].shape == (3, 0)


def test_reshape_allowzero_zero_with_nonempty_input_is_an_error():
    with pytest.raises(dlc.FrontendError, match="reshape"):
        dlc.compile(reshape_model([2, 3], [0, 6], opset=14, allowzero=1))


def test_reshape_shape_from_constant_node():
    shape = helper.make_node("Constant", [], ["shape"], value_ints=[3, -1])
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    model = make_model([shape, node], {"x": (np.float32, [2, 3, 2])}, ["y"])
    run_both(model, [random_array([2, 3, 2], np.float32)])


def test_reshape_opset_1_shape_attribute():
    node = helper.make_node("Reshape", ["x"], ["y"], shape=[3, 2])
    model = make_model([node], {"x": (np.float32, [2, 3])}, {"y": (np.float32, [3, 2])}, opset=1)
    x = random_array([2, 3], np.float32)
    np.testing.assert_array_equal(dlc.compile(model)(x)[0], x.reshape(3, 2))


def test_reshape_computed_shape_is_an_error():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="dyn_reshape")
    model = make_model([node], {"x": (np.float32, [2, 3]), "shape": (np.int64, [2])},
                       {"y": (np.float32, [3, 2])})
    with pytest.raises(dlc.FrontendError, match=r"dyn_reshape.*'shape'.*constant"):
        dlc.compile(model)


@pytest.mark.parametrize("target", [[5, -1], [-1, -1], [7]], ids=str)
def test_reshape_to_an_impossible_shape_is_an_error(target):
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")
    model = make_model([node], {"x": (np.float32, [2, 3])}, {"y": (np.float32, [6])},
                       initializers={"shape": np.array(target, np.int64)}, check=False)
    with pytest.raises(dlc.FrontendError, match="bad_reshape"):
        dlc.compile(model)


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3], ids=lambda a: f"axis={a}")
def test_flatten(axis):
    x = random_array([2, 3, 4], np.float32)
    outputs = run_both(node_model("Flatten", [x], axis=axis), [x])
    split = axis % 4 if axis >= 0 else axis + 3
    assert outputs[0].shape == (int(np.prod(x.shape[:split])), int(np.prod(x.shape[split:])))


def test_flatten_default_axis():
    x = random_array([2, 3, 4], np.int64)
    assert run_both(node_model("Flatten", [x]), [x])[0].shape == (2, 12)


@pytest.mark.parametrize("shape, perm", [
    ([2, 3], None),
    ([2, 3, 4], None),
    ([2, 3, 4], [1, 0, 2]),
    ([2, 3, 4], [2, 0, 1]),
    ([2, 3, 4, 5], [0, 2, 3, 1]),
    ([2, 3], [0, 1]),
    ([7], None),
], ids=str)
def test_transpose(shape, perm):
    x = random_array(shape, np.float32)
    attributes = {} if perm is None else {"perm": perm}
    outputs = run_both(node_model("Transpose", [x], **attributes), [x])
    np.testing.assert_array_equal(outputs[0], np.transpose(x, perm))


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_transpose_dtypes(dtype):
    x = random_array([3, 2], dtype)
    run_both(node_model("Transpose", [x]), [x])


def test_transpose_of_transpose():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 2, 0]),
             helper.make_node("Transpose", ["t"], ["y"], perm=[2, 0, 1])]
    x = random_array([2, 3, 4], np.float32)
    for opt_level in (0, 2):
        run_both(make_model(nodes, {"x": (np.float32, [2, 3, 4])}, ["y"]), [x], opt_level)


def test_transpose_bad_perm_is_an_error():
    node = helper.make_node("Transpose", ["x"], ["y"], name="transpose_node", perm=[0, 0])
    model = make_model([node], {"x": (np.float32, [2, 3])}, {"y": (np.float32, [2, 2])},
                       check=False)
    with pytest.raises(dlc.FrontendError, match="transpose_node.*perm"):
        dlc.compile(model)


CONSTANTS = {
    "value float tensor": {"value": numpy_helper.from_array(np.arange(6, dtype=np.float32)
                                                            .reshape(2, 3))},
    "value int64 tensor": {"value": numpy_helper.from_array(np.array([[1, -2, 3]], np.int64))},
    "value rank-0": {"value": numpy_helper.from_array(np.array(2.5, np.float32))},
    "value_float": {"value_float": 1.5},
    "value_floats": {"value_floats": [1.0, 2.0, -3.0]},
    "value_int": {"value_int": 7},
    "value_ints": {"value_ints": [4, -5, 6]},
}


@pytest.mark.parametrize("attribute", list(CONSTANTS.values()), ids=list(CONSTANTS))
def test_constant_forms(attribute):
    # the constant is both an output and an operand of Add
    constant = helper.make_node("Constant", [], ["c"], name="const", **attribute)
    expected = reference(make_model([constant], {}, ["c"]), {})[0]
    add = helper.make_node("Add", ["x", "c"], ["y"])
    model = make_model([constant, add], {"x": (expected.dtype, list(expected.shape))}, ["y", "c"])
    outputs = run_both(model, [random_array(expected.shape, expected.dtype)])
    np.testing.assert_array_equal(outputs[1], expected)


def test_constant_only_model_has_no_inputs():
    constant = helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0])
    compiled = dlc.compile(make_model([constant], {}, ["c"]))
    assert compiled.input_names == []
    np.testing.assert_array_equal(compiled()[0], np.array([1.0, 2.0], np.float32))


def test_constant_sparse_value_is_an_error():
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], np.float32)),
                                       numpy_helper.from_array(np.array([1], np.int64)), [3])
    constant = helper.make_node("Constant", [], ["c"], name="sparse_const", sparse_value=sparse)
    model = make_model([constant], {}, {"c": (np.float32, [3])})
    with pytest.raises(dlc.FrontendError, match="sparse_const.*value"):
        dlc.compile(model)


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_identity(dtype):
    x = random_array([2, 3], dtype)
    outputs = run_both(node_model("Identity", [x]), [x])
    np.testing.assert_array_equal(outputs[0], x)
    assert not np.shares_memory(outputs[0], x)


def test_identity_chain_inside_a_graph():
    nodes = [helper.make_node("Identity", ["x"], ["a"]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Identity", ["b"], ["c"]),
             helper.make_node("Identity", ["c"], ["y"])]
    run_both(make_model(nodes, {"x": (np.float32, [4])}, ["y"]), [random_array([4], np.float32)])
