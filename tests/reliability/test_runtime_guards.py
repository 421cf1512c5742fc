"""Calling a compiled model: odd arrays, threads, and NaN/Inf as onnxruntime treats them.

(Wrong input counts, shapes, dtypes and ranks are in tests/test_errors.py.)
"""

from __future__ import annotations

import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, node_model, random_array

F32 = np.float32


@pytest.fixture(scope="module")
def mul_add() -> dlc.CompiledModel:
    """y = a * b + a; a, b: float32[4, 5]."""
    nodes = [helper.make_node("Mul", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "a"], ["y"])]
    return dlc.compile(make_model(nodes, {"a": (F32, [4, 5]), "b": (F32, [4, 5])}, ["y"]),
                       opt_level=3)


def expected(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * b + a


# ----------------------------------------------------------------------------- odd arrays


def test_read_only_inputs_are_read_and_left_alone(mul_add):
    a, b = random_array([4, 5], F32), random_array([4, 5], F32, seed=1)
    frozen_a = np.frombuffer(a.tobytes(), F32).reshape(4, 5)  # memory Python forbids writing
    frozen_b = b.copy()
    frozen_b.flags.writeable = False
    (y,) = mul_add(frozen_a, frozen_b)
    np.testing.assert_allclose(y, expected(a, b), rtol=1e-6)
    np.testing.assert_array_equal(frozen_a, a)
    assert y.flags.writeable and y.flags.owndata


@pytest.mark.parametrize("view", [
    lambda x: x[::-1],                          # negative strides
    lambda x: np.asfortranarray(x),             # column-major
    lambda x: np.repeat(x, 2, axis=1)[:, ::2],  # every other column
    lambda x: np.broadcast_to(x[:1], (4, 5)),   # zero stride, read-only
], ids=["reversed", "fortran", "strided", "broadcast"])
def test_non_contiguous_inputs(mul_add, view):
    a, b = view(random_array([4, 5], F32)), random_array([4, 5], F32, seed=1)
    np.testing.assert_allclose(mul_add(a, b)[0], expected(np.array(a), b), rtol=1e-6)


def test_one_array_as_two_inputs(mul_add):
    a = random_array([4, 5], F32)
    before = a.copy()
    np.testing.assert_allclose(mul_add(a, a)[0], expected(before, before), rtol=1e-6)
    np.testing.assert_array_equal(a, before)  # inputs are never written


def test_overlapping_views_as_inputs(mul_add):
    base = random_array([5, 5], F32)
    a, b = base[:4], base[1:]  # the same memory, shifted by one row
    np.testing.assert_allclose(mul_add(a, b)[0], expected(base[:4], base[1:]), rtol=1e-6)


def test_outputs_are_fresh_arrays(mul_add):
    a, b = random_array([4, 5], F32), random_array([4, 5], F32, seed=1)
    first, second = mul_add(a, b)[0], mul_add(a, b)[0]
    assert not np.shares_memory(first, second)
    assert not np.shares_memory(first, a) and not np.shares_memory(first, b)


def test_inputs_are_not_written_by_any_op():
    """At -O3 a chain of elementwise ops may update buffers in place: never an input's."""
    nodes = [helper.make_node(op, ["x", "x"] if op != "Relu" else ["x"], ["x" + op])
             for op in ("Add", "Mul", "Relu")]
    nodes.append(helper.make_node("Sum", ["xAdd", "xMul", "xRelu"], ["y"]))
    compiled = dlc.compile(make_model(nodes, {"x": (F32, [3, 4])}, ["y"]), opt_level=3)
    x = random_array([3, 4], F32)
    before = x.copy()
    compiled(x)
    np.testing.assert_array_equal(x, before)


# ----------------------------------------------------------------------------- threads


def test_concurrent_calls_on_one_model_are_safe(mul_add):
    """8 threads x 50 calls, each on its own inputs: every result is that input's result."""
    failures: list[str] = []
    start = threading.Barrier(8)

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        start.wait()
        for call in range(50):
            a = rng.standard_normal((4, 5)).astype(F32)
            b = rng.standard_normal((4, 5)).astype(F32)
            (y,) = mul_add(a, b)
            if not np.allclose(y, expected(a, b), rtol=1e-6):
                failures.append(f"thread {seed}, call {call}")

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a call hung"
    assert failures == []


def test_concurrent_bad_calls_do_not_disturb_good_ones(mul_add):
    errors: list[BaseException] = []
    a = random_array([4, 5], F32)

    def bad() -> None:
        for _ in range(50):
            try:
                mul_add(a, np.ones((5, 4), F32))
            except ValueError:
                continue
            errors.append(AssertionError("a bad call succeeded"))

    thread = threading.Thread(target=bad)
    thread.start()
    for _ in range(50):
        np.testing.assert_allclose(mul_add(a, a)[0], expected(a, a), rtol=1e-6)
    thread.join(timeout=60)
    assert errors == []


# ----------------------------------------------------------------------------- NaN and Inf

SPECIAL = np.array([[np.nan, 1.0, -np.inf, 0.0],
                    [np.inf, -2.0, np.nan, 3.0],
                    [-0.0, np.inf, -np.inf, 5.0]], F32)
NAN_CASES = {
    "Relu": ([SPECIAL], {}),
    "Max": ([SPECIAL, SPECIAL[::-1].copy()], {}),
    "Min": ([SPECIAL, SPECIAL[::-1].copy()], {}),
    "Add": ([SPECIAL, SPECIAL[::-1].copy()], {}),
    "Mul": ([SPECIAL, np.zeros_like(SPECIAL)], {}),
    "Softmax": ([SPECIAL], {"axis": 1}),
    "ReduceSum": ([SPECIAL], {"axes": [0], "keepdims": 1}),
    "ReduceMean": ([SPECIAL], {"axes": [1], "keepdims": 1}),
    "Sigmoid": ([SPECIAL], {}),
    "Clip": ([SPECIAL, np.array(-1, F32), np.array(1, F32)], {}),
    "Sqrt": ([SPECIAL], {}),
    "Exp": ([SPECIAL], {}),
    "IsNaN": ([SPECIAL], {}),
    "IsInf": ([SPECIAL], {}),
    "AveragePool": ([SPECIAL[None, None]], {"kernel_shape": [2, 2]}),
}


def onnxruntime_run(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


@pytest.mark.parametrize("op", list(NAN_CASES))
def test_nan_and_inf_as_onnxruntime(op):
    inputs, attributes = NAN_CASES[op]
    opset = 11 if op.startswith("Reduce") else 17  # (axes as an attribute)
    model = node_model(op, inputs, opset=opset, **attributes)
    want = onnxruntime_run(model, inputs)
    got = dlc.compile(model, opt_level=3)(*inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{op}: NaN positions")
        np.testing.assert_allclose(g, w, rtol=1e-6, equal_nan=True, err_msg=op)


# onnxruntime's max/min reductions and MaxPool drop a NaN unless it comes first in its window,
# and onnx.reference's MaxPool drops every NaN: no oracle agrees. dlc propagates NaN as IEEE
# maximum, numpy and PyTorch do; where no NaN is involved it agrees with onnxruntime.
WINDOWS = np.lib.stride_tricks.sliding_window_view(SPECIAL, (2, 2))
MAX_LIKE = {
    "ReduceMax": ({"axes": [1], "keepdims": 0}, np.max(SPECIAL, axis=1)),
    "ReduceMin": ({"axes": [1], "keepdims": 0}, np.min(SPECIAL, axis=1)),
    "MaxPool": ({"kernel_shape": [2, 2]}, WINDOWS.max(axis=(-2, -1))[None, None]),
}


@pytest.mark.parametrize("op", list(MAX_LIKE))
def test_nan_propagates_through_max_and_min(op):
    attributes, want = MAX_LIKE[op]
    x = SPECIAL if op.startswith("Reduce") else SPECIAL[None, None]
    model = node_model(op, [x], opset=11, **attributes)
    (got,) = dlc.compile(model, opt_level=3)(x)
    np.testing.assert_array_equal(got, want)  # (NaN equals NaN here)
    (peer,) = onnxruntime_run(model, [x])
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite], peer[finite])


def test_indices_whose_type_bounds_them_need_no_check() -> None:
    """An index type all of whose values are in range skips the run-time check (dlc-qdq-lut's
    i8 indices into 256 entries); an unsigned byte into fewer entries than 256 does not."""
    from mlir import ir

    from dlc.passes.lowering.checks import _always_in_range

    with ir.Context():
        assert _always_in_range(ir.IntegerType.get_signless(8), [256])
        assert not _always_in_range(ir.IntegerType.get_signless(8), [100])
        assert _always_in_range(ir.IntegerType.get_unsigned(8), [256])
        assert not _always_in_range(ir.IntegerType.get_unsigned(8), [200])
        assert not _always_in_range(ir.IntegerType.get_signless(64), [1 << 40])
