"""The JIT runtime: binding inputs to the compiled signature, strides, and output ownership."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.runtime.jit import Signature, TensorSpec, numpy_dtype
from tests.conftest import make_model, node_model, random_array

SIGNATURE = Signature(
    inputs=(TensorSpec("a", (2, 3), np.dtype(np.float32)),
            TensorSpec("b", (3,), np.dtype(np.int64))),
    outputs=(TensorSpec("y", (2, 3), np.dtype(np.float32)),),
)


def test_signature_text():
    assert str(SIGNATURE) == "(a: float32[2, 3], b: int64[3]) -> (y: float32[2, 3])"


def test_bind_positional_dict_and_keywords_agree():
    a, b = np.ones((2, 3), np.float32), np.arange(3)
    for bound in (SIGNATURE.bind([a, b]), SIGNATURE.bind([{"b": b, "a": a}]),
                  SIGNATURE.bind([], {"b": b, "a": a})):
        assert [x.shape for x in bound] == [(2, 3), (3,)]
        assert all(x.flags.c_contiguous for x in bound)


@pytest.mark.parametrize("element, dtype", [
    (ir.F16Type.get, np.float16), (ir.F32Type.get, np.float32), (ir.F64Type.get, np.float64),
    (lambda: ir.IntegerType.get_signless(8), np.int8),
    (lambda: ir.IntegerType.get_signless(32), np.int32),
    (lambda: ir.IntegerType.get_signless(64), np.int64),
], ids=lambda x: getattr(x, "__name__", ""))
def test_numpy_dtype_of_element_types(element, dtype):
    with ir.Context():
        assert numpy_dtype(element()) == np.dtype(dtype)


def test_numpy_dtype_of_an_unknown_type_is_a_type_error():
    with ir.Context(), pytest.raises(TypeError, match="bf16"):
        numpy_dtype(ir.BF16Type.get())


@pytest.fixture(scope="module")
def add_model() -> dlc.CompiledModel:
    """y = a + b, a: float32[2, 3], b: float32[3]."""
    node = helper.make_node("Add", ["a", "b"], ["y"])
    return dlc.compile(make_model([node], {"a": (np.float32, [2, 3]), "b": (np.float32, [3])},
                                  ["y"]))


def test_call_forms(add_model):
    a, b = random_array([2, 3], np.float32), random_array([3], np.float32, seed=1)
    expected = a + b
    for outputs in (add_model(a, b), add_model({"a": a, "b": b}), add_model(b=b, a=a)):
        assert len(outputs) == 1
        np.testing.assert_array_equal(outputs[0], expected)


NON_CONTIGUOUS = {
    "transposed view": lambda x: np.ascontiguousarray(x.T).T,
    "strided slice": lambda x: np.repeat(x, 2, axis=1)[:, ::2],
    "negative strides": lambda x: np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1],
    "fortran order": np.asfortranarray,
    "misaligned": lambda x: _misaligned(x),
    "read-only": lambda x: _read_only(x),
}


def _misaligned(x: np.ndarray) -> np.ndarray:
    buffer = np.zeros(x.nbytes + 1, np.uint8)[1:]
    view = buffer.view(x.dtype).reshape(x.shape)
    view[...] = x
    return view


def _read_only(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y.flags.writeable = False
    return y


@pytest.mark.parametrize("make", list(NON_CONTIGUOUS.values()), ids=list(NON_CONTIGUOUS))
def test_inputs_of_any_layout_are_accepted(add_model, make):
    a, b = random_array([2, 3], np.float32), random_array([3], np.float32, seed=1)
    strided = make(a)
    np.testing.assert_array_equal(strided, a)  # the same values, another layout
    np.testing.assert_array_equal(add_model(strided, b)[0], a + b)
    np.testing.assert_array_equal(add_model(a, make(np.tile(b, (2, 1)))[0])[0], a + b)


def test_broadcast_views_with_zero_strides_are_accepted(add_model):
    row = random_array([3], np.float32)
    a = np.broadcast_to(row, (2, 3))  # strides (0, 4), read-only
    b = np.broadcast_to(np.float32(2.0), (3,))  # strides (0,)
    np.testing.assert_array_equal(add_model(a, b)[0], np.tile(row + 2, (2, 1)))


def test_strided_input_to_a_transpose_and_a_matmul():
    x = random_array([6, 8], np.float32)
    view = x[::2, 1::2]  # [3, 4], strides in both axes
    compiled = dlc.compile(node_model("Transpose", [view]))
    np.testing.assert_array_equal(compiled(view)[0], view.T)
    w = random_array([4, 5], np.float32, seed=1)
    compiled = dlc.compile(node_model("MatMul", [view, w]))
    np.testing.assert_allclose(compiled(view, w.T.copy().T)[0], view @ w, rtol=1e-5, atol=1e-6)


def test_inputs_are_not_written(add_model):
    a, b = random_array([2, 3], np.float32), random_array([3], np.float32, seed=1)
    a_before, b_before = a.copy(), b.copy()
    add_model(a, b)
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)


def assert_owned(output: np.ndarray) -> None:
    assert output.flags.owndata and output.base is None
    assert output.flags.c_contiguous and output.flags.writeable


def test_outputs_are_owned_by_numpy(add_model):
    a, b = random_array([2, 3], np.float32), random_array([3], np.float32, seed=1)
    first = add_model(a, b)[0]
    second = add_model(a, b)[0]
    assert_owned(first)
    assert_owned(second)
    assert not np.shares_memory(first, second)
    first[...] = 42  # the next call is not affected by writes into an earlier result
    np.testing.assert_array_equal(add_model(a, b)[0], a + b)
    np.testing.assert_array_equal(second, a + b)


def test_outputs_survive_the_compiled_model():
    x = random_array([3], np.float32)
    compiled = dlc.compile(node_model("Relu", [x]))
    output = compiled(x)[0]
    del compiled
    gc.collect()
    np.testing.assert_array_equal(output, np.maximum(x, 0))


def test_outputs_that_alias_an_input_or_a_constant_are_copies():
    nodes = [helper.make_node("Identity", ["x"], ["same"]),
             helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0, 3.0])]
    compiled = dlc.compile(make_model(nodes, {"x": (np.float32, [3])}, ["same", "c", "x"]))
    x = random_array([3], np.float32)
    same, constant, direct = compiled(x)
    for output in (same, constant, direct):
        assert_owned(output)
        assert not np.shares_memory(output, x)
    constant[0] = -1  # the compiled constant is not written through an earlier result
    np.testing.assert_array_equal(compiled(x)[1], [1.0, 2.0, 3.0])


def test_rank_0_inputs_accept_numpy_scalars():
    scalar = np.zeros([], np.float32)
    compiled = dlc.compile(node_model("Mul", [scalar, scalar]))
    assert compiled.signature.inputs[0].shape == ()
    for x in (np.float32(3.0), np.array(3.0, np.float32)):
        (output,) = compiled(x, np.float32(-2.0))
        assert output.shape == () and output == np.float32(-6.0)


def test_zero_size_tensors():
    x = np.zeros([0, 3], np.float32)
    compiled = dlc.compile(node_model("Add", [x, np.zeros([3], np.float32)]))
    (output,) = compiled(x, np.ones(3, np.float32))
    assert output.shape == (0, 3) and output.dtype == np.float32


def test_large_input():
    x = random_array([512, 1024], np.float32)
    compiled = dlc.compile(node_model("Relu", [x]))
    np.testing.assert_array_equal(compiled(x)[0], np.maximum(x, 0))
