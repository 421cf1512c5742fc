"""Data-movement and shape ops against onnx.reference.

Concat, Split, Slice, Squeeze, Unsqueeze, Expand, Tile, Pad, DepthToSpace, SpaceToDepth,
Trilu; and Shape, Size, ConstantOfShape, Range, EyeLike, which fold to constants (as does any
op of the family whose inputs are all constants).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import dlc
from tests.conftest import make_model, random_array, run_both

INT_MAX = np.iinfo(np.int64).max


def one_node(op_type: str, data: list[np.ndarray], constants: list[np.ndarray | None] = (),
             opset: int = 17, n_outputs: int = 1, **attributes):
    """A model of one node: `data` are graph inputs x0.., then `constants` are initializers
    c0.. (None: an absent optional input)."""
    names = [f"x{i}" for i in range(len(data))]
    initializers = {}
    for i, value in enumerate(constants):
        names.append("" if value is None else f"c{i}")
        if value is not None:
            initializers[f"c{i}"] = value
    outputs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outputs, name=f"{op_type.lower()}_node", **attributes)
    inputs = {f"x{i}": (a.dtype, list(a.shape)) for i, a in enumerate(data)}
    return make_model([node], inputs, outputs, initializers, opset=opset)


def check(op_type: str, data: list[np.ndarray], constants=(), opset: int = 17,
          n_outputs: int = 1, **attributes) -> list[np.ndarray]:
    model = one_node(op_type, data, list(constants), opset, n_outputs, **attributes)
    return run_both(model, data)


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


# ----------------------------------------------------------------------------- Concat


@pytest.mark.parametrize("shapes, axis, dtype", [
    ([[2, 3], [2, 1], [2, 4]], 1, np.float32),
    ([[2, 3], [1, 3]], 0, np.int64),
    ([[2, 3, 2], [2, 3, 1]], -1, np.float16),
    ([[4], [3]], -1, np.bool_),
    ([[2, 2]], 0, np.int32),
    ([[2, 0], [2, 3]], 1, np.float64),
], ids=str)
def test_concat(shapes, axis, dtype):
    data = [random_array(s, dtype, seed=i) for i, s in enumerate(shapes)]
    check("Concat", data, axis=axis)


# ----------------------------------------------------------------------------- Split


def test_split_equal_parts_opset_11():
    check("Split", [random_array([6, 2], np.float32)], opset=11, n_outputs=3)


def test_split_attribute_opset_11():
    check("Split", [random_array([2, 7], np.int32)], opset=11, n_outputs=2, axis=1,
          split=[3, 4])


def test_split_input_opset_13_negative_axis():
    check("Split", [random_array([2, 7], np.float32)], [ints(1, 0, 6)], opset=13,
          n_outputs=3, axis=-1)


@pytest.mark.parametrize("size, parts", [(7, 4), (6, 3), (5, 2)], ids=str)
def test_split_num_outputs_opset_18(size, parts):
    outputs = check("Split", [random_array([size, 2], np.float32)], opset=18, n_outputs=parts,
                    num_outputs=parts)
    assert sum(o.shape[0] for o in outputs) == size


# ----------------------------------------------------------------------------- Slice

SLICES = {  # name: (shape, starts, ends, axes, steps)
    "basic": ([5, 6], [1, 0], [3, 4], None, None),
    "steps": ([5, 6], [0, 1], [5, 6], [0, 1], [2, 3]),
    "negative steps": ([5, 6], [4, -1], [0, 0], [0, 1], [-1, -2]),
    "reverse all": ([4, 3], [-1], [-INT_MAX], [1], [-1]),
    "INT_MAX end": ([5, 6], [2], [INT_MAX], [1], None),
    "clamped": ([5, 6], [-100, 3], [100, 1000], None, None),
    "negative axes": ([2, 3, 4], [1], [-1], [-1], None),
    "empty": ([5, 6], [3], [1], [0], None),
    "start past end": ([5], [10], [20], None, None),
    "negative step clamped": ([5], [100], [-100], None, [-2]),
}


@pytest.mark.parametrize("shape, starts, ends, axes, steps", list(SLICES.values()),
                         ids=list(SLICES))
def test_slice(shape, starts, ends, axes, steps):
    constants = [ints(*starts), ints(*ends), None if axes is None else ints(*axes),
                 None if steps is None else ints(*steps)]
    while constants[-1] is None:
        constants.pop()
    check("Slice", [random_array(shape, np.float32)], constants, opset=13)


def test_slice_int_dtype_and_step_with_axes_omitted():
    check("Slice", [random_array([6, 4], np.int64)], [ints(5, 0), ints(0, 4), None,
                                                      ints(-2, 2)], opset=13)


def test_slice_attributes_opset_9():
    check("Slice", [random_array([3, 4, 5], np.float32)], opset=9, starts=[1, -3],
          ends=[2, INT_MAX], axes=[0, 2])


# ----------------------------------------------------------------------------- Squeeze, Unsqueeze


def test_squeeze_all_unit_axes():
    assert check("Squeeze", [random_array([1, 3, 1, 2], np.float32)])[0].shape == (3, 2)


def test_squeeze_axes_attribute_opset_11():
    check("Squeeze", [random_array([1, 3, 1], np.int32)], opset=11, axes=[-1])


def test_squeeze_axes_input_opset_13():
    check("Squeeze", [random_array([1, 3, 1], np.float32)], [ints(0)], opset=13)


def test_unsqueeze_axes_attribute_opset_11():
    x = random_array([3, 4], np.float32)
    assert check("Unsqueeze", [x], opset=11, axes=[0, 3])[0].shape == (1, 3, 4, 1)


def test_unsqueeze_axes_input_unsorted_negative():
    x = random_array([3, 4], np.bool_)
    assert check("Unsqueeze", [x], [ints(-1, 1)], opset=13)[0].shape == (3, 1, 4, 1)


# ----------------------------------------------------------------------------- Expand, Tile


@pytest.mark.parametrize("shape, target, dtype", [
    ([3, 1], [2, 3, 4], np.float32),
    ([3, 1], [3, 1], np.int64),
    ([1, 4], [3, 1], np.float16),  # bidirectional: the result is [3, 4]
    ([2, 1, 3], [2, 1, 1], np.int32),
    ([], [2, 2], np.float32),
], ids=str)
def test_expand(shape, target, dtype):
    check("Expand", [random_array(shape, dtype)], [ints(*target)])


@pytest.mark.parametrize("shape, repeats, dtype", [
    ([2, 3], [2, 3], np.float32),
    ([2, 3, 2], [1, 2, 1], np.int64),
    ([3], [1], np.float32),
    ([2, 2], [0, 2], np.int32),
], ids=str)
def test_tile(shape, repeats, dtype):
    check("Tile", [random_array(shape, dtype)], [ints(*repeats)])


# ----------------------------------------------------------------------------- Pad

PADS = {  # name: (shape, pads, mode)
    "constant": ([3, 4], [1, 2, 0, 1], "constant"),
    "reflect": ([3, 4], [2, 3, 2, 1], "reflect"),
    "edge": ([3, 4], [0, 2, 3, 1], "edge"),
    "wrap": ([3, 4], [2, 5, 4, 1], "wrap"),
    "wide wrap": ([2, 3], [5, 0, 0, 7], "wrap"),
    "wide reflect": ([3], [6, 7], "reflect"),
}


@pytest.mark.parametrize("shape, pads, mode", list(PADS.values()), ids=list(PADS))
def test_pad(shape, pads, mode):
    check("Pad", [random_array(shape, np.float32)], [ints(*pads)], opset=19, mode=mode)


@pytest.mark.parametrize("pads, mode", [([-1, 2, 1, -2], "constant"), ([-1, 2, 1, -3], "edge")],
                         ids=str)
def test_pad_negative_pads_crop(pads, mode):
    # (onnx.reference's np.pad rejects negative pads: compare with crop-then-pad)
    x = random_array([4, 5], np.float32)
    model = one_node("Pad", [x], [ints(*pads)], opset=13, mode=mode)
    rows, columns = slice(-pads[0], None), slice(None, 5 + pads[3])
    expected = np.pad(x[rows, columns], [(0, pads[2]), (pads[1], 0)], mode=mode)
    np.testing.assert_array_equal(dlc.compile(model)(x)[0], expected)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16], ids=str)
def test_pad_constant_value_input(dtype):
    x, value = random_array([2, 3], dtype), np.array(7, dtype)
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"])
    model = make_model([node], {"x": (dtype, [2, 3]), "value": (dtype, [])}, ["y"],
                       {"pads": ints(1, 0, 1, 2)}, opset=13)
    run_both(model, [x, value])


def test_pad_constant_value_as_initializer_and_axes_opset_18():
    x = random_array([2, 3, 4], np.float32)
    check("Pad", [x], [ints(1, 2, 3, 0), np.array(-1.5, np.float32), ints(-1, 0)], opset=18)


def test_pad_edge_bool():
    check("Pad", [random_array([3, 3], np.bool_)], [ints(1, 1, 1, 1)], opset=13, mode="edge")


def test_pad_attributes_opset_2():
    check("Pad", [random_array([2, 3], np.float32)], opset=2, pads=[0, 1, 2, 0], value=2.5)


# ----------------------------------------------------------------------------- Depth/Space


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    check("DepthToSpace", [random_array([2, 8, 2, 3], np.float32)], opset=13, blocksize=2,
          mode=mode)


@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=str)
def test_space_to_depth(dtype):
    check("SpaceToDepth", [random_array([1, 2, 4, 6], dtype)], blocksize=2)


# ----------------------------------------------------------------------------- Trilu


@pytest.mark.parametrize("shape, upper, k, dtype", [
    ([4, 5], 1, None, np.float32),
    ([4, 5], 0, None, np.int64),
    ([2, 3, 4], 1, -1, np.float32),
    ([3, 4], 0, 2, np.int32),
    ([3, 4], 1, 9, np.float32),
], ids=str)
def test_trilu(shape, upper, k, dtype):
    constants = [] if k is None else [ints(k)]
    check("Trilu", [random_array(shape, dtype)], constants, opset=14, upper=upper)


# ----------------------------------------------------------------------------- constants


@pytest.mark.parametrize("attributes", [{}, {"start": 1}, {"end": -1}, {"start": -9, "end": 9}],
                         ids=str)
def test_shape(attributes):
    check("Shape", [random_array([2, 3, 4], np.float32)], opset=15, **attributes)


def test_size():
    check("Size", [random_array([2, 3, 4], np.int32)])


def test_constant_of_shape():
    value = numpy_helper.from_array(np.array([3], np.int32))
    check("ConstantOfShape", [], [ints(2, 3)], value=value)
    check("ConstantOfShape", [], [ints(4)])


def test_range():
    check("Range", [], [np.array(1.0, np.float32), np.array(3.0, np.float32),
                        np.array(0.4, np.float32)], opset=11)
    check("Range", [], [np.array(10, np.int32), np.array(1, np.int32),
                        np.array(-3, np.int32)], opset=11)


@pytest.mark.parametrize("attributes", [{}, {"k": 1, "dtype": 6}, {"k": -2}], ids=str)
def test_eye_like(attributes):
    check("EyeLike", [random_array([3, 4], np.float32)], **attributes)


def test_shape_chain_folds_into_a_reshape():
    # Shape -> Slice -> Concat -> Reshape: the shape computation is done at compile time
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "one"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    model = make_model(nodes, {"x": (np.float32, [2, 3, 4])}, ["y"],
                       {"zero": ints(0), "one": ints(1), "minus_one": ints(-1)})
    assert run_both(model, [random_array([2, 3, 4], np.float32)])[0].shape == (2, 12)
    assert "dlc.slice" not in dlc.compile(model).ir("dlc")


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("op_type, data, constants, attributes, message", [
    ("Squeeze", [2, 3], [ints(0)], {}, "sizes must be 1"),
    ("Slice", [4], [ints(0), ints(4), ints(0), ints(0)], {}, "step 0"),
    ("Expand", [2, 3], [ints(4, 3)], {}, "not broadcast-compatible"),
    ("Tile", [2, 3], [ints(2)], {}, "one count >= 0 per axis"),
    ("Concat", [2, 3], [], {"axis": 2}, "out of range"),
    ("Pad", [0, 2], [ints(1, 0, 0, 0)], {"mode": "edge"}, "empty"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_errors_name_the_node(op_type, data, constants, attributes, message):
    x = np.zeros(data, np.float32)
    node_inputs = ["x"] + [f"c{i}" for i in range(len(constants))]
    node = helper.make_node(op_type, node_inputs, ["y"], name="bad_node", **attributes)
    model = make_model([node], {"x": (np.float32, data)}, {"y": (np.float32, [1])},
                       {f"c{i}": c for i, c in enumerate(constants)}, check=False)
    with pytest.raises(dlc.FrontendError, match=f"bad_node.*{message}"):
        dlc.compile(model)(x)

