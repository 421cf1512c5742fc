"""Ops whose output size depends on run-time values (bounded outputs), against onnx.reference
and numpy: NonZero, Compress (run-time condition), TopK (run-time k), Unique and
NonMaxSuppression; the runtime's trimming, the signature, the disk cache and exported
libraries; and the error when such a value feeds another node."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc import backend
from dlc.frontends.onnx_node import NeedsConstantError
from dlc.runtime import cache, loader
from dlc.runtime.signature import Signature, TensorSpec, count_of
from tests.conftest import make_model, node_model, random_array, run_both

RNG = np.random.default_rng(7)


def sparse(shape, dtype, seed: int = 0, density: float = 0.4) -> np.ndarray:
    """Values of `dtype` with about `density` of them non-zero."""
    rng = np.random.default_rng(seed)
    keep = np.asarray(rng.random(shape) < density)
    if np.dtype(dtype) == np.bool_:
        return keep
    values = np.asarray(random_array(shape, dtype, seed, low=1, high=9))
    return np.asarray(np.where(keep, values, 0).astype(dtype))


# ----------------------------------------------------------------------------- NonZero


@pytest.mark.parametrize("shape", [[7], [3, 4], [2, 3, 4], [], [0], [3, 0, 2]], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.bool_, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_nonzero(shape, dtype):
    x = sparse(shape, dtype, seed=len(shape))
    run_both(node_model("NonZero", [x]), [x])


@pytest.mark.parametrize("fill", [0, 1], ids=["none", "all"])
def test_nonzero_empty_and_full(fill):
    x = np.full([2, 3], fill, np.float32)
    (y,) = run_both(node_model("NonZero", [x]), [x])
    assert y.shape == (2, 6 * fill)


def test_nonzero_one_compile_many_counts():
    # one compiled function: each call's result has its own size
    model = node_model("NonZero", [np.zeros([4, 5], np.int32)])
    compiled = dlc.compile(model)
    for seed in range(4):
        x = sparse([4, 5], np.int32, seed, density=0.25 * seed)
        (y,) = compiled(x)
        np.testing.assert_array_equal(y, np.array(np.nonzero(x), np.int64))
        assert y.flags.c_contiguous


def test_nonzero_nan_is_nonzero():
    x = np.array([0.0, np.nan, -0.0, 2.0], np.float32)
    (y,) = dlc.compile(node_model("NonZero", [x]))(x)
    np.testing.assert_array_equal(y, [[1, 3]])


# ----------------------------------------------------------------------------- Compress


@pytest.mark.parametrize("axis, length", [(0, 3), (1, 4), (-1, 5), (None, 60), (1, 2),
                                          (None, 7)], ids=str)
def test_compress_runtime_condition(axis, length):
    x = random_array([3, 4, 5], np.float32, seed=3)
    attrs = {} if axis is None else {"axis": axis}
    model = node_model("Compress", [x, np.zeros([length], np.bool_)], **attrs)
    compiled = dlc.compile(model)
    for seed in range(3):
        condition = sparse([length], np.bool_, seed, density=0.5 * seed)
        flat = x.reshape(-1) if axis is None else x
        expected = np.compress(condition, flat, axis=0 if axis is None else axis)
        (y,) = compiled(x, condition)
        np.testing.assert_array_equal(y, expected)


def test_compress_against_reference():
    x = random_array([4, 3], np.int64, seed=5)
    condition = np.array([True, False, False, True])
    run_both(node_model("Compress", [x, condition], axis=0), [x, condition])


def test_compress_size_0():
    x = np.zeros([0, 3], np.float32)
    condition = np.zeros([0], np.bool_)
    (y,) = run_both(node_model("Compress", [x, condition], axis=0), [x, condition])
    assert y.shape == (0, 3)


# ----------------------------------------------------------------------------- TopK


def runtime_topk_model(shape, dtype=np.float32, **attributes):
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], **attributes)
    return make_model([node], {"x": (dtype, shape), "k": (np.int64, [1])},
                      ["values", "indices"])


@pytest.mark.parametrize("shape, attributes", [([3, 6], {}), ([4, 3, 2], {"axis": 1}),
                                               ([5], {"largest": 0}),
                                               ([2, 5, 3], {"axis": -3, "largest": 0})],
                         ids=str)
def test_topk_runtime_k(shape, attributes):
    x = random_array(shape, np.float32, seed=11)
    compiled = dlc.compile(runtime_topk_model(shape, **attributes))
    axis = attributes.get("axis", -1)
    for k in range(shape[axis] + 1):
        feeds = {"x": x, "k": np.array([k], np.int64)}
        run_both(runtime_topk_model(shape, **attributes), feeds)
        values, indices = compiled(feeds)
        assert values.shape[axis] == k and indices.shape[axis] == k


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float64], ids=lambda d: np.dtype(d).name)
def test_topk_runtime_k_ties_and_dtypes(dtype):
    x = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 0, 4]], dtype)  # ties: lower index first
    run_both(runtime_topk_model([2, 6], dtype), {"x": x, "k": np.array([4], np.int64)})


def test_topk_k_out_of_range_is_clamped():
    # ONNX leaves k outside [0, n] undefined (onnxruntime raises): dlc clamps it, no crash
    x = random_array([2, 4], np.float32, seed=12)
    compiled = dlc.compile(runtime_topk_model([2, 4]))
    values, _ = compiled(x, np.array([100], np.int64))
    np.testing.assert_array_equal(values, -np.sort(-x, axis=1))
    values, indices = compiled(x, np.array([-5], np.int64))
    assert values.shape == (2, 0) and indices.shape == (2, 0)


# ----------------------------------------------------------------------------- Unique


def unique_model(x: np.ndarray, **attributes):
    return node_model("Unique", [x], n_outputs=4, **attributes)


UNIQUE_CASES = {
    "1-D": (np.array([2, 1, 1, 3, 4, 3, 2], np.float32), {}),
    "2-D flattened": (np.array([[1, 3], [3, 2], [2, 1]], np.int64), {}),
    "rows": (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 5, 1]], np.int32), {"axis": 0}),
    "columns": (np.array([[1, 1, 0, 1], [2, 2, 5, 2]], np.int64), {"axis": 1}),
    "negative axis 3-D": (np.array([[[1, 1], [0, 1]], [[1, 1], [0, 1]]], np.float32),
                          {"axis": -2}),
    "one element": (np.array([5], np.int64), {}),
    "all equal": (np.full([6], 3, np.uint8), {}),
    "all distinct": (np.arange(6, 0, -1).astype(np.float64), {}),
}


def unique_oracle(x: np.ndarray, axis: int | None, sorted_: int) -> list[np.ndarray]:
    """numpy's unique, in first-occurrence order when not sorted (onnx.reference's Unique
    takes the not-sorted slices along axis 0 whatever the axis: no oracle there)."""
    flat, axis = (x.reshape(-1), 0) if axis is None else (x, axis)
    y, indices, inverse, counts = np.unique(flat, True, True, True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(indices, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        indices, counts, inverse = indices[order], counts[order], rank[inverse]
        y = np.take(flat, indices, axis=axis)
    return [y, indices.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


def check_unique(x: np.ndarray, sorted_: int, axis: int | None = None) -> None:
    attributes = {} if axis is None else {"axis": axis}
    got = dlc.compile(unique_model(x, sorted=sorted_, **attributes))(x)
    for name, a, e in zip(("y", "indices", "inverse_indices", "counts"), got,
                          unique_oracle(x, axis, sorted_)):
        assert a.dtype == e.dtype and a.shape == e.shape, name
        np.testing.assert_array_equal(a, e, err_msg=name)


@pytest.mark.parametrize("sorted_", [1, 0], ids=["sorted", "not sorted"])
@pytest.mark.parametrize("case", list(UNIQUE_CASES.values()), ids=list(UNIQUE_CASES))
def test_unique(case, sorted_):
    x, attributes = case
    check_unique(x, sorted_, attributes.get("axis"))


def test_unique_against_reference():
    x = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.float32)
    run_both(unique_model(x, sorted=1, axis=0), [x])
    run_both(unique_model(x.reshape(-1), sorted=0), [x.reshape(-1)])


@pytest.mark.parametrize("seed", range(3))
def test_unique_random(seed):
    x = random_array([5, 4], np.int64, seed=seed, low=0, high=3)
    for axis in (None, 0, 1, -1):
        for sorted_ in (0, 1):
            check_unique(x, sorted_, axis)


def test_unique_floats_with_nan_and_bool():
    # NaNs are one value, after every number (numpy's equal_nan)
    check_unique(np.array([np.nan, 1.0, np.nan, -2.0, 1.0], np.float32), 1)
    check_unique(np.array([True, False, True, True]), 1)
    check_unique(np.array([True, False, True, True]), 0)


def test_unique_size_0():
    x = np.zeros([0], np.float32)
    y, indices, inverse, counts = dlc.compile(unique_model(x))(x)
    assert y.shape == indices.shape == inverse.shape == counts.shape == (0,)


def test_unique_y_only():
    x = np.array([3, 1, 3], np.int64)
    run_both(node_model("Unique", [x]), [x])


# ----------------------------------------------------------------------------- NMS


def nms_model(batches: int, classes: int, boxes: int, constants: bool = True,
              score_threshold: bool = True, **attributes):
    names = ["boxes", "scores", "max", "iou"] + (["score"] if score_threshold else [])
    node = helper.make_node("NonMaxSuppression", names, ["selected"], **attributes)
    inputs = {"boxes": (np.float32, [batches, boxes, 4]),
              "scores": (np.float32, [batches, classes, boxes])}
    thresholds = {"max": np.array([3], np.int64), "iou": np.array([0.5], np.float32),
                  "score": np.array([0.2], np.float32)}
    if not score_threshold:
        del thresholds["score"]
    if constants:
        return make_model([node], inputs, ["selected"], initializers=thresholds)
    inputs |= {n: (a.dtype, list(a.shape)) for n, a in thresholds.items()}
    return make_model([node], inputs, ["selected"])


def random_boxes(batches: int, boxes: int, center: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 4, [batches, boxes, 2]).astype(np.float32)
    size = rng.uniform(0.5, 3, [batches, boxes, 2]).astype(np.float32)
    if center:
        return np.concatenate([corner, size], axis=2)
    return np.concatenate([corner, corner + size], axis=2)[..., [0, 1, 2, 3]]


@pytest.mark.parametrize("batches, classes, boxes", [(1, 1, 6), (2, 3, 8), (1, 2, 1),
                                                     (2, 1, 0)], ids=str)
@pytest.mark.parametrize("center", [0, 1], ids=["corners", "centers"])
def test_nms(batches, classes, boxes, center):
    model = nms_model(batches, classes, boxes, center_point_box=center)
    for seed in range(2):
        feeds = {"boxes": random_boxes(batches, boxes, center, seed),
                 "scores": np.random.default_rng(seed).random([batches, classes, boxes])
                 .astype(np.float32)}
        run_both(model, feeds)


def test_nms_runtime_thresholds_and_no_score_threshold():
    model = nms_model(2, 2, 7, constants=False)
    compiled = dlc.compile(model)
    assert not compiled.signature.inputs[2].shape or compiled.input_names[2] == "max"
    for max_output, iou, score in [(3, 0.5, 0.2), (0, 0.5, 0.2), (100, 0.1, 0.0),
                                   (-1, 0.5, 0.2), (7, 1.0, 0.9)]:
        feeds = {"boxes": random_boxes(2, 7, 0, max_output + 2),
                 "scores": RNG.random([2, 2, 7]).astype(np.float32),
                 "max": np.array([max_output], np.int64), "iou": np.array([iou], np.float32),
                 "score": np.array([score], np.float32)}
        if max_output >= 0:
            run_both(model, feeds)
        else:  # (the reference takes max(max_output, 0) too)
            (selected,) = compiled(feeds)
            assert selected.shape == (0, 3)
    model = nms_model(1, 2, 5, score_threshold=False)
    feeds = {"boxes": random_boxes(1, 5, 0, 3), "scores": RNG.random([1, 2, 5])
             .astype(np.float32)}
    run_both(model, feeds)


def test_nms_ties_keep_the_lower_index():
    boxes = np.array([[[0, 0, 1, 1], [5, 5, 6, 6], [0, 0, 1, 1.05], [9, 9, 10, 10]]],
                     np.float32)
    scores = np.array([[[0.5, 0.5, 0.5, 0.5]]], np.float32)
    run_both(nms_model(1, 1, 4), {"boxes": boxes, "scores": scores})


# ----------------------------------------------------------------------------- the plumbing


def test_signature_shows_the_bound_and_hides_the_count():
    x = np.zeros([3, 4], np.float32)
    compiled = dlc.compile(node_model("NonZero", [x]))
    assert str(compiled.signature) == "(x0: float32[3, 4]) -> (y0: int64[2, <=12])"
    assert compiled.output_names == ["y0"]
    assert [s.name for s in compiled.signature.outputs] == ["y0", "y0#count@1"]
    assert count_of("y0#count@1") == ("y0", 1) and count_of("y0") is None


def test_signature_trim_clamps_a_bad_count():
    signature = Signature((), (TensorSpec("y", (2, 3), np.dtype(np.int64)),
                               TensorSpec("y#count@1", (), np.dtype(np.int64))))
    y = np.arange(6).reshape(2, 3)
    for count, size in ((7, 3), (-2, 0), (2, 2)):
        (trimmed,) = signature.trim([y, np.array(count)])
        assert trimmed.shape == (2, size)


def test_unique_outputs_share_one_count():
    x = np.array([4, 4, 1], np.int64)
    compiled = dlc.compile(unique_model(x))
    assert compiled.output_names == ["y0", "y1", "y2", "y3"]
    assert str(compiled.signature).endswith(
        "(y0: int64[<=3], y1: int64[<=3], y2: int64[3], y3: int64[<=3])")


def test_identity_passes_a_bounded_value_on():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Identity", ["nz"], ["y"])]
    model = make_model(nodes, {"x": (np.int32, [4])}, ["y"])
    x = np.array([0, 3, 0, 1], np.int32)
    run_both(model, [x])


def test_bounded_value_feeding_a_node_is_a_clear_error():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="find"),
             helper.make_node("Transpose", ["nz"], ["y"], name="flip")]
    model = make_model(nodes, {"x": (np.float32, [4])}, ["y"])
    with pytest.raises(dlc.FrontendError, match=r"node 'find' \(NonZero\): its output size "
                       r"depends on run-time values and feeds node 'flip' \(Transpose\); dlc "
                       r"compiles such ops only as graph outputs for now"):
        dlc.compile(model)


def test_bounded_value_as_output_and_input_of_a_node_is_an_error():
    nodes = [helper.make_node("Unique", ["x"], ["u"], name="uniq"),
             helper.make_node("Neg", ["u"], ["y"], name="neg")]
    model = make_model(nodes, {"x": (np.float32, [4])}, ["u", "y"])
    with pytest.raises(dlc.FrontendError, match=r"'uniq' \(Unique\).*feeds node 'neg' \(Neg\)"):
        dlc.compile(model)


def test_nonzero_of_a_constant_still_folds_and_feeds_nodes():
    nodes = [helper.make_node("NonZero", ["c"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["y"])]
    model = make_model(nodes, {}, ["y"], initializers={"c": np.array([0, 2, 0, 5], np.int64)})
    (y,) = run_both(model, {})
    assert y.shape == (2, 1)


def test_declared_output_size_within_the_bound_is_accepted():
    model = make_model([helper.make_node("NonZero", ["x"], ["y"])], {"x": (np.float32, [5])},
                       {"y": (np.int64, [1, 2])})
    x = np.array([0, 1, 0, 2, 0], np.float32)
    (y,) = dlc.compile(model)(x)
    np.testing.assert_array_equal(y, [[1, 3]])


def test_disk_cache_round_trips_bounded_outputs(cache_dir: Path):
    x = np.zeros([3, 4], np.float32)
    model = node_model("NonZero", [x])
    compiled = dlc.compile(model)
    cache.forget_all()  # as in a new process: loaded from the disk entry
    reloaded = dlc.compile(model)
    assert reloaded is not compiled and reloaded.signature == compiled.signature
    assert reloaded.output_names == ["y0"]
    x = sparse([3, 4], np.float32, seed=4)
    np.testing.assert_array_equal(reloaded(x)[0], np.array(np.nonzero(x), np.int64))


def test_exported_library_trims_bounded_outputs(tmp_path: Path):
    x = np.zeros([6], np.int64)
    path = tmp_path / "unique.onnx"
    onnx.save(unique_model(x), path)
    dlc.export(path, tmp_path / "out")
    exported = loader.load(tmp_path / "out")
    assert str(exported.signature).endswith("y3: int64[<=6])")
    x = np.array([3, 1, 3, 3, 2, 1], np.int64)
    y, indices, inverse, counts = exported(x)
    expected = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for got, want in zip((y, indices, inverse, counts), expected):
        np.testing.assert_array_equal(got, want)


def test_unique_of_a_constant_folds_and_feeds_nodes():
    nodes = [helper.make_node("Unique", ["c"], ["u", "i", "inv", "n"], sorted=0),
             helper.make_node("Neg", ["u"], ["y"])]
    model = make_model(nodes, {}, ["y", "inv"],
                       initializers={"c": np.array([[3, 1], [3, 2]], np.int64)})
    y, inverse = dlc.compile(model)()
    np.testing.assert_array_equal(y, [-3, -1, -2])
    np.testing.assert_array_equal(inverse, [0, 1, 0, 2])


@functools.cache
def node_cases() -> dict:
    from onnx.backend.test.case.node import collect_testcases

    return {c.name: c for c in collect_testcases("") if c.name in NODE_CASES}


NODE_CASES = ["test_nonzero_example", "test_compress_default_axis", "test_top_k_smallest",
              "test_unique_sorted_with_axis_3d", "test_nonmaxsuppression_two_batches"]


@pytest.mark.parametrize("name", NODE_CASES)
def test_node_cases_need_no_value_specialization(name):
    # dlc.backend compiles an input whose value the compiler needs as a constant, per value:
    # these ops compute on run-time values, so nothing is specialized
    case = node_cases()[name]
    (inputs, outputs), *_ = case.data_sets
    rep = backend.prepare(case.model)
    got = rep.run(inputs)
    assert rep.specialized == []
    for a, e in zip(got, outputs):
        np.testing.assert_allclose(a, e, rtol=1e-6)
        assert a.shape == np.asarray(e).shape


def test_bounded_value_feeding_a_node_names_the_input_that_would_make_it_static():
    nodes = [helper.make_node("Compress", ["x", "c"], ["kept"], axis=0, name="keep"),
             helper.make_node("Neg", ["kept"], ["y"], name="neg")]
    model = make_model(nodes, {"x": (np.float32, [4]), "c": (np.bool_, [4])}, ["y"])
    with pytest.raises(NeedsConstantError, match=r"'keep' \(Compress\).*feeds node 'neg' "
                       r"\(Neg\).*its input 'c' a constant"):
        dlc.compile(model)
    # ... which dlc.backend compiles per value of that input, as before
    rep = backend.prepare(model)
    x, c = np.arange(4, dtype=np.float32), np.array([True, False, True, True])
    (y,) = rep.run([x, c])
    assert rep.specialized == ["c"]
    np.testing.assert_array_equal(y, -x[c])


def test_bad_runtime_data_is_no_crash():
    # a condition longer than the axis: its extra entries are ignored (numpy raises)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    compiled = dlc.compile(node_model("Compress", [x, np.zeros([5], np.bool_)], axis=1))
    (y,) = compiled(x, np.array([True, False, True, True, True]))
    np.testing.assert_array_equal(y, x[:, [0, 2]])
    # NaN and infinite boxes and scores: some valid selection, in bounds
    compiled = dlc.compile(nms_model(1, 2, 5, constants=False))
    boxes = random_boxes(1, 5, 0, 1)
    boxes[0, 1] = np.nan
    boxes[0, 2, 0] = np.inf
    scores = np.array([[[np.nan, 0.9, np.inf, -np.inf, 0.5], [np.nan] * 5]], np.float32)
    (selected,) = compiled(boxes, scores, np.array([2**62], np.int64), np.array([np.nan],
                           np.float32), np.array([-np.inf], np.float32))
    assert selected.shape[1] == 3 and selected.shape[0] <= 10
    assert ((selected >= 0) & (selected < [1, 2, 5])).all()
