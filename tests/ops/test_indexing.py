"""Gather/scatter and indexing ops against onnx.reference: Gather, GatherElements, GatherND,
ScatterElements, Scatter, ScatterND, OneHot, TopK and NonZero."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, node_model, random_array, reference, run_both

DTYPES = [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8, np.bool_]


def dtype_id(dtype) -> str:
    return np.dtype(dtype).name


def indices_array(shape, size: int, dtype=np.int64, seed: int = 3) -> np.ndarray:
    """Indices into an axis of `size`, negative ones included."""
    return np.random.default_rng(seed).integers(-size, size, size=shape).astype(dtype)


# ----------------------------------------------------------------------------- Gather

GATHERS = {
    "axis 0, 1-D indices": ([5, 4], [3], 0),
    "axis 1, 2-D indices": ([3, 5, 4], [2, 2], 1),
    "last axis, rank-0 indices": ([3, 4], [], 1),
    "negative axis": ([2, 3, 4], [5], -1),
    "1-D data": ([7], [2, 3], 0),
}


@pytest.mark.parametrize("data_shape, indices_shape, axis", list(GATHERS.values()),
                         ids=list(GATHERS))
def test_gather(data_shape, indices_shape, axis):
    data = random_array(data_shape, np.float32)
    indices = indices_array(indices_shape, data_shape[axis])
    run_both(node_model("Gather", [data, indices], axis=axis), [data, indices])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_gather_dtypes(dtype):
    data = random_array([4, 3], dtype)
    indices = indices_array([2, 2], 3, np.int32)
    run_both(node_model("Gather", [data, indices], axis=1), [data, indices])


def test_gather_opset_11():
    data, indices = random_array([4, 3], np.float32), np.array([-1, 0], np.int64)
    run_both(node_model("Gather", [data, indices], opset=11), [data, indices])


# ----------------------------------------------------------------------------- runtime checks

F32, I64 = np.float32, np.int64
# op, attributes, data, good indices (negative in-range ones included), bad indices, the
# offending value the error names, and the updates of the scatters
RUNTIME_CHECKS = {
    "Gather": ("Gather", {"axis": 0}, np.arange(12, dtype=F32).reshape(3, 4),
               np.array([0, -3, 2], I64), np.array([0, 1000, 1], I64), 1000, None),
    "Gather negative": ("Gather", {"axis": 1}, np.arange(12, dtype=F32).reshape(3, 4),
                        np.array([[-4, 3]], I64), np.array([[1, -5]], I64), -5, None),
    "Gather int32 huge": ("Gather", {"axis": 0}, np.arange(5, dtype=F32),
                          np.array([4, -5], np.int32), np.array([2**31 - 1, 0], np.int32),
                          2**31 - 1, None),
    "GatherElements": ("GatherElements", {"axis": 1}, np.arange(6, dtype=F32).reshape(2, 3),
                       np.array([[2, -3], [0, 1]], I64), np.array([[0, 1], [3, 0]], I64), 3,
                       None),
    "GatherND": ("GatherND", {}, np.arange(6, dtype=F32).reshape(2, 3),
                 np.array([[1, -1], [0, 2]], I64), np.array([[1, 2], [0, 5]], I64), 5, None),
    "GatherND first component": ("GatherND", {}, np.arange(6, dtype=F32).reshape(2, 3),
                                 np.array([[1, 2]], I64), np.array([[2, 0]], I64), 2, None),
    "ScatterElements": ("ScatterElements", {"axis": 1}, np.zeros((2, 3), F32),
                        np.array([[2], [-1]], I64), np.array([[0], [-50]], I64), -50,
                        np.ones((2, 1), F32)),
    "ScatterND": ("ScatterND", {}, np.zeros(8, F32), np.array([[3], [-8]], I64),
                  np.array([[1000000], [0]], I64), 1000000, np.ones(2, F32)),
}


@pytest.mark.parametrize("case", list(RUNTIME_CHECKS.values()), ids=list(RUNTIME_CHECKS))
def test_out_of_range_runtime_indices_raise(case):
    # onnxruntime raises for each of these; dlc clamped them silently (a wrong answer)
    op_type, attributes, data, good, bad, value, updates = case
    inputs = [data, good] + ([updates] if updates is not None else [])
    model = node_model(op_type, inputs, **attributes)
    compiled = dlc.compile(model)
    with pytest.raises(dlc.IndexOutOfRangeError) as raised:
        compiled(*([data, bad] + inputs[2:]))
    message = str(raised.value)
    assert f"'{op_type.lower()}_node'" in message and f"index {value} " in message, message
    assert isinstance(raised.value, IndexError) and isinstance(raised.value, dlc.DlcError)
    # the status is reset per call: good indices still give the reference's answer
    got = compiled(*inputs)
    for mine, want in zip(got, reference(model, {f"x{i}": v for i, v in enumerate(inputs)})):
        np.testing.assert_array_equal(mine, want)


def test_out_of_range_runtime_index_from_the_disk_cache(tmp_path, monkeypatch):
    # the check's status and its description also work in a model loaded from the disk cache
    monkeypatch.setenv("DLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DLC_CACHE_MIN_SECONDS", "0")
    data, indices = np.arange(12, dtype=F32).reshape(3, 4), np.array([1, 2], I64)
    model = node_model("Gather", [data, indices])
    dlc.compile(model)
    from dlc.runtime import cache

    cache.forget_all()
    loaded = dlc.compile(model)
    assert type(loaded._function).__name__ == "SharedObjectFunction"
    with pytest.raises(dlc.IndexOutOfRangeError, match=r"'gather_node'.*index 3 "):
        loaded(data, np.array([1, 3], I64))
    np.testing.assert_array_equal(loaded(data, indices)[0], data[[1, 2]])


def test_runtime_check_inside_a_loop_body():
    # a gather in a Loop body (a nested region) is checked too
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Gather", ["data", "index"], ["row"], name="gather_in_loop"),
         helper.make_node("Add", ["acc_in", "row"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", 7, []), helper.make_tensor_value_info("cond_in", 9, []),
         helper.make_tensor_value_info("acc_in", 1, [4])],
        [helper.make_tensor_value_info("cond_out", 9, []),
         helper.make_tensor_value_info("acc_out", 1, [4])])
    loop = helper.make_node("Loop", ["trips", "", "acc"], ["total"], body=body)
    data = np.arange(12, dtype=F32).reshape(3, 4)
    model = make_model([loop], {"data": (F32, [3, 4]), "index": (I64, []),
                                "acc": (F32, [4])}, {"total": (F32, [4])},
                       initializers={"trips": np.array(2, I64)})
    compiled = dlc.compile(model)
    np.testing.assert_array_equal(compiled(data, np.array(-1, I64), np.zeros(4, F32))[0],
                                  2 * data[-1])
    with pytest.raises(dlc.IndexOutOfRangeError, match="gather_in_loop"):
        compiled(data, np.array(3, I64), np.zeros(4, F32))


@pytest.mark.parametrize("op_type, data, indices, attributes", [
    ("Gather", np.zeros((3, 4), F32), np.array([7], I64), {"axis": 0}),
    ("GatherElements", np.zeros((2, 3), F32), np.array([[0, -4]], I64), {"axis": 1}),
    ("GatherND", np.zeros((2, 3), F32), np.array([[1, 3]], I64), {}),
], ids=["Gather", "GatherElements", "GatherND"])
def test_constant_out_of_range_index_is_a_compile_error(op_type, data, indices, attributes):
    node = helper.make_node(op_type, ["data", "indices"], ["y"], name="const_index", **attributes)
    model = make_model([node], {"data": (F32, list(data.shape))}, ["y"],
                       initializers={"indices": indices})
    with pytest.raises(dlc.CompileError, match=r"const_index.*constant index -?\d+ is out of range"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- GatherElements


@pytest.mark.parametrize("shape, indices_shape, axis", [
    ([3, 4], [2, 4], 0), ([3, 4], [3, 6], 1), ([2, 3, 4], [2, 2, 4], -2)])
def test_gather_elements(shape, indices_shape, axis):
    data = random_array(shape, np.float32)
    indices = indices_array(indices_shape, shape[axis])
    run_both(node_model("GatherElements", [data, indices], axis=axis), [data, indices])


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.float16], ids=dtype_id)
def test_gather_elements_dtypes(dtype):
    data = random_array([3, 3], dtype)
    indices = indices_array([3, 3], 3, np.int32)
    run_both(node_model("GatherElements", [data, indices], axis=1, opset=11), [data, indices])


# ----------------------------------------------------------------------------- GatherND


@pytest.mark.parametrize("data_shape, indices_shape, batch_dims", [
    ([2, 3, 4], [5, 3], 0),        # full index tuples: scalars
    ([2, 3, 4], [2, 2, 1], 0),     # partial tuples: slices
    ([2, 3, 4], [2, 2], 1),        # batch_dims 1
    ([2, 3, 4, 2], [2, 3, 1, 1], 2),
])
def test_gather_nd(data_shape, indices_shape, batch_dims):
    data = random_array(data_shape, np.float32)
    k = indices_shape[-1]
    columns = [indices_array([*indices_shape[:-1], 1], data_shape[batch_dims + c], seed=c)
               for c in range(k)]
    indices = np.concatenate(columns, axis=-1)
    run_both(node_model("GatherND", [data, indices], batch_dims=batch_dims), [data, indices])


def test_gather_nd_int32_opset_11():
    data = random_array([3, 3], np.int32)
    indices = np.array([[0, 1], [2, -1]], np.int64)
    run_both(node_model("GatherND", [data, indices], opset=11), [data, indices])


# ----------------------------------------------------------------------------- scatters

REDUCTIONS = ["none", "add", "mul", "max", "min"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=dtype_id)
def test_scatter_elements(reduction, dtype):
    data = random_array([4, 3], dtype)
    updates = random_array([3, 3], dtype, seed=5)
    indices = np.array([[1, 0, 2], [3, 1, -1], [1, 2, 0]], np.int64)  # repeated positions
    model = node_model("ScatterElements", [data, indices, updates], axis=0, reduction=reduction,
                       opset=18)
    run_both(model, [data, indices, updates])


@pytest.mark.parametrize("axis, dtype", [(1, np.float64), (-1, np.bool_), (2, np.uint8)],
                         ids=["axis 1", "negative axis, bool", "axis 2, uint8"])
def test_scatter_elements_axes(axis, dtype):
    data = random_array([2, 3, 4], dtype)
    shape = [2, 2, 2]
    updates = random_array(shape, dtype, seed=6)
    indices = np.stack([np.random.default_rng(i).permutation(4)[:2] for i in range(4)]) \
        .reshape(shape) % [2, 3, 4][axis]
    model = node_model("ScatterElements", [data, indices, updates], axis=axis, opset=13)
    run_both(model, [data, indices, updates])


@pytest.mark.parametrize("opset", [9, 10])
def test_scatter_deprecated(opset):
    data = np.zeros([3, 3], np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], np.int32)
    updates = random_array([2, 3], np.float32)
    # onnx.reference has no Scatter: ScatterElements (same semantics) gives the expected values
    compiled = dlc.compile(node_model("Scatter", [data, indices, updates], axis=0, opset=opset))
    (out,) = compiled(data, indices, updates)
    (expected,) = reference(node_model("ScatterElements", [data, indices, updates], axis=0,
                                       opset=11), feeds_of_three(data, indices, updates))
    np.testing.assert_array_equal(out, expected)


def feeds_of_three(*arrays: np.ndarray) -> dict[str, np.ndarray]:
    return {f"x{i}": a for i, a in enumerate(arrays)}


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_nd_slices(reduction):
    data = random_array([4, 4, 3], np.float32)
    indices = np.array([[0], [2], [-4]], np.int64)  # -4 and 0: the same slice twice
    updates = random_array([3, 4, 3], np.float32, seed=7)
    model = node_model("ScatterND", [data, indices, updates], reduction=reduction, opset=18)
    run_both(model, [data, indices, updates])


@pytest.mark.parametrize("dtype", [np.int64, np.float16], ids=dtype_id)
def test_scatter_nd_elements(dtype):
    data = random_array([3, 4], dtype)
    indices = np.array([[[0, 1], [2, 3]], [[1, -1], [0, 0]]], np.int64)
    updates = random_array([2, 2], dtype, seed=8)
    model = node_model("ScatterND", [data, indices, updates], opset=11)
    run_both(model, [data, indices, updates])


def test_scatter_leaves_its_input_unchanged():
    data = np.ones([3], np.float32)
    indices, updates = np.array([[1]], np.int64), np.array([5], np.float32)
    compiled = dlc.compile(node_model("ScatterND", [data, indices, updates]))
    (out,) = compiled(data, indices, updates)
    np.testing.assert_array_equal(out, [1, 5, 1])
    np.testing.assert_array_equal(data, [1, 1, 1])


# ----------------------------------------------------------------------------- OneHot


@pytest.mark.parametrize("indices_dtype, values_dtype, axis, opset", [
    (np.int64, np.float32, -1, 11),
    (np.int32, np.int64, 0, 11),
    (np.float32, np.float32, 1, 11),
    (np.int64, np.int32, -2, 11),
    (np.uint8, np.float64, 1, 9),
])
def test_one_hot(indices_dtype, values_dtype, axis, opset):
    raw = np.array([[1, 9, -3], [0, 12, -11]])  # out of range: all off
    indices = raw if np.dtype(indices_dtype).kind != "u" else np.abs(raw)
    indices = indices.astype(indices_dtype)
    values = np.array([2, 7], values_dtype)
    node = helper.make_node("OneHot", ["indices", "depth", "values"], ["y"], axis=axis)
    model = make_model([node], {"indices": (indices_dtype, [2, 3]), "values": (values_dtype, [2])},
                       ["y"], initializers={"depth": np.array(10, np.int64)}, opset=opset)
    run_both(model, {"indices": indices, "values": values})


# ----------------------------------------------------------------------------- TopK


def topk_model(shape, k: int, dtype=np.float32, opset: int = 11, **attributes):
    if opset < 10:
        node = helper.make_node("TopK", ["x"], ["values", "indices"], k=k, **attributes)
        return make_model([node], {"x": (dtype, shape)}, ["values", "indices"], opset=opset)
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], **attributes)
    return make_model([node], {"x": (dtype, shape)}, ["values", "indices"], opset=opset,
                      initializers={"k": np.array([k], np.int64)})


@pytest.mark.parametrize("shape, k, attributes", [
    ([3, 5], 2, {}),
    ([3, 5], 3, {"largest": 0}),
    ([4, 3, 2], 3, {"axis": 1}),
    ([4, 3, 2], 1, {"axis": -3, "largest": 0}),
    ([6], 6, {"sorted": 0}),
    ([2, 4], 0, {}),
])
def test_topk(shape, k, attributes):
    x = random_array(shape, np.float32)
    run_both(topk_model(shape, k, **attributes), [x])


@pytest.mark.parametrize("dtype, largest", [(np.int32, 1), (np.int64, 0), (np.uint8, 1),
                                            (np.float64, 0), (np.float16, 1)])
def test_topk_dtypes_and_ties(dtype, largest):
    x = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 0, 4]], dtype)  # ties: lower index first
    run_both(topk_model([2, 6], 4, dtype, largest=largest), [x])


@pytest.mark.parametrize("opset", [7, 10])
def test_topk_old_opsets(opset):
    x = random_array([2, 5], np.float32)
    run_both(topk_model([2, 5], 3, opset=opset), [x])


def test_topk_computed_k_feeding_a_node_is_a_clear_error():
    # (a computed k as a graph output: tests/ops/test_selection.py)
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top"),
             helper.make_node("Neg", ["v"], ["y"], name="neg")]
    model = make_model(nodes, {"x": (np.float32, [5]), "k": (np.int64, [1])}, ["y", "i"])
    with pytest.raises(dlc.FrontendError, match=r"'top' \(TopK\): its output size depends on "
                                                r"run-time values and feeds node 'neg'"):
        dlc.compile(model)


def test_topk_k_too_large_is_a_clear_error():
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top")
    model = make_model([node], {"x": (np.float32, [5])},
                       {"v": (np.float32, [6]), "i": (np.int64, [6])},
                       initializers={"k": np.array([6], np.int64)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"k 6 is out of range \[0, 5\]"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- NonZero


@pytest.mark.parametrize("value", [np.array([[1, 0], [3, 0]], np.int32),
                                   np.array([0.0, 2.5, 0.0], np.float32),
                                   np.zeros([2, 2], np.bool_)], ids=["int32", "float", "none"])
def test_nonzero_of_a_constant(value):
    node = helper.make_node("NonZero", ["c"], ["y"])
    model = make_model([node], {}, ["y"], initializers={"c": value})
    run_both(model, {})


def test_nonzero_of_an_input_is_computed_at_run_time():
    # (its bounded output: tests/ops/test_selection.py)
    x = np.array([0.0, 3.0, 0.0], np.float32)
    run_both(node_model("NonZero", [x]), [x])


# ----------------------------------------------------------------------------- shape errors


def test_gather_elements_rank_mismatch_is_a_clear_error():
    node = helper.make_node("GatherElements", ["d", "i"], ["y"], name="ge")
    model = make_model([node], {"d": (np.float32, [3, 4]), "i": (np.int64, [3])},
                       {"y": (np.float32, [3])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"'ge'.*indices \[3\] must have the data's "
                                                "rank 2"):
        dlc.compile(model)


def test_scatter_updates_shape_mismatch_is_a_clear_error():
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"], name="snd")
    model = make_model([node], {"d": (np.float32, [4, 3]), "i": (np.int64, [2, 1]),
                                "u": (np.float32, [2, 4])}, {"y": (np.float32, [4, 3])},
                       check=False)
    with pytest.raises(dlc.FrontendError, match=r"'snd'.*updates of shape \[2x4\] must have "
                                                r"shape \[2x3\]"):
        dlc.compile(model)


@pytest.mark.parametrize(("axis", "index"), [(0, 2), (0, -1), (1, 0), (2, -3)])
def test_gather_constant_scalar_index_is_a_slice(axis: int, index: int) -> None:
    # a constant scalar index (nn.MultiheadAttention's q/k/v split, ViT's class token) lowers
    # to tensor.extract_slice, not a loop extracting element by element
    x = np.random.default_rng(0).standard_normal([3, 5, 64]).astype(np.float32)
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    model = make_model([node], {"x": (np.float32, list(x.shape))}, ["y"],
                       initializers={"i": np.array(index, np.int64)})
    compiled = dlc.compile(model)
    text = compiled.ir("linalg")
    assert "tensor.extract_slice" in text and "tensor.extract " not in text
    np.testing.assert_array_equal(compiled(x)[0], np.take(x, index, axis=axis))
