"""Image resampling and geometry ops against onnx.reference.

Resize (every mode, nearest_mode, coordinate transformation, cubic options, antialias, axes,
keep_aspect_ratio_policy, tf_crop_and_resize), Upsample, GridSample, AffineGrid,
CenterCropPad and Col2Im; Resize-10 and Upsample with fractional scales (which onnx.reference does not
run) against numpy; the ops' shape errors; folding of shape subgraphs into constants.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.dialects import ShapeError, build, image, make_context, ops
from dlc.dialects.ops import tensor
from tests.conftest import make_model, random_array, run_both

LOOSE = {np.dtype(np.float16): (2e-3, 2e-3), np.dtype(np.float32): (1e-4, 1e-5),
         np.dtype(np.float64): (1e-6, 1e-6)}  # GridSample: the reference has f32 coordinates


def one_node(op_type: str, data: list[np.ndarray], constants=(), opset: int = 19,
             check: bool = True, **attributes):
    """One node: `data` are graph inputs x0.., `constants` initializers c0.. (None: absent)."""
    names = [f"x{i}" for i in range(len(data))]
    initializers = {}
    for i, value in enumerate(constants):
        names.append("" if value is None else f"c{i}")
        if value is not None:
            initializers[f"c{i}"] = value
    node = helper.make_node(op_type, names, ["y"], name=f"{op_type.lower()}_node", **attributes)
    inputs = {f"x{i}": (a.dtype, list(a.shape)) for i, a in enumerate(data)}
    outputs = ["y"] if check else {"y": (data[0].dtype, list(data[0].shape))}
    return make_model([node], inputs, outputs, initializers, opset=opset, check=check)


def check(op_type: str, data: list[np.ndarray], constants=(), opset: int = 19,
          tolerances=None, **attributes) -> list[np.ndarray]:
    model = one_node(op_type, data, constants, opset, **attributes)
    if tolerances is None:
        return run_both(model, data)
    return run_both(model, data, tolerances=tolerances)


def floats(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


# ----------------------------------------------------------------------------- Resize


@pytest.mark.parametrize("mode, transform", [
    ("nearest", "half_pixel"), ("nearest", "asymmetric"), ("nearest", "align_corners"),
    ("linear", "half_pixel"), ("linear", "align_corners"), ("linear", "asymmetric"),
    ("linear", "pytorch_half_pixel"), ("linear", "half_pixel_symmetric"),
    ("cubic", "half_pixel"), ("cubic", "align_corners"), ("cubic", "asymmetric"),
], ids=str)
@pytest.mark.parametrize("scales", [(1, 1, 1.7, 0.6), (1, 1, 0.5, 2.5)], ids=str)
def test_resize_modes(mode, transform, scales):
    x = random_array([1, 2, 5, 4], np.float32)
    check("Resize", [x], [floats(), floats(*scales)], mode=mode,
          coordinate_transformation_mode=transform)


def test_resize_tf_half_pixel_for_nn():
    # opset 11 only (onnx.reference does not run it): source = (y + 0.5) / scale, rounded
    x = random_array([1, 1, 4, 4], np.float32)
    model = one_node("Resize", [x], [floats(), floats(1, 1, 1.5, 0.6)], opset=11,
                     mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn")
    (actual,) = dlc.compile(model)(x)
    rows = np.clip(np.ceil((np.arange(6) + 0.5) / 1.5 - 0.5), 0, 3).astype(int)
    cols = np.clip(np.ceil((np.arange(2) + 0.5) / np.float32(0.6) - 0.5), 0, 3).astype(int)
    np.testing.assert_array_equal(actual, x[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"])
def test_resize_nearest_modes(nearest_mode):
    x = random_array([1, 1, 4, 6], np.float32)
    check("Resize", [x], [None, None, ints(1, 1, 7, 5)], mode="nearest",
          nearest_mode=nearest_mode, coordinate_transformation_mode="half_pixel")


@pytest.mark.parametrize("a, exclude", [(-0.5, 1), (-0.75, 0), (-0.6, 1)], ids=str)
def test_resize_cubic_options(a, exclude):
    x = random_array([1, 1, 6, 6], np.float32)
    check("Resize", [x], [None, floats(1, 1, 0.6, 1.5)], mode="cubic", cubic_coeff_a=a,
          exclude_outside=exclude)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("sizes", [(1, 1, 3, 2), (1, 1, 2, 9)], ids=str)
def test_resize_antialias(mode, sizes):
    x = random_array([1, 1, 8, 7], np.float32)
    check("Resize", [x], [None, None, ints(*sizes)], mode=mode, antialias=1)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller", "stretch"])
@pytest.mark.parametrize("axes", [None, [2, 3], [3, 2], [3]], ids=str)
def test_resize_sizes_axes_policy(policy, axes):
    x = random_array([1, 2, 4, 6], np.float32)
    count = 4 if axes is None else len(axes)
    sizes = ints(1, 2, 7, 3)[-count:]
    extra = {} if axes is None else {"axes": axes}
    check("Resize", [x], [None, None, sizes], mode="linear", keep_aspect_ratio_policy=policy,
          **extra)


@pytest.mark.parametrize("roi, extrapolation", [
    ((0, 0, 0.2, 0.4, 1, 1, 0.6, 0.8), 0.0),
    ((0, 0, -0.3, 0.1, 1, 1, 1.2, 0.9), 10.0),
], ids=str)
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_resize_tf_crop_and_resize(roi, extrapolation, mode):
    x = random_array([1, 1, 5, 5], np.float32)
    check("Resize", [x], [floats(*roi), None, ints(1, 1, 4, 6)], mode=mode,
          coordinate_transformation_mode="tf_crop_and_resize",
          extrapolation_value=extrapolation)


def test_resize_roi_as_graph_input_is_specialized():
    # the backend compiles a roi given as a graph input in as a constant
    import dlc.backend

    x = random_array([1, 1, 4, 4], np.float32)
    roi, sizes = floats(0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9), ints(1, 1, 3, 3)
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear",
                            coordinate_transformation_mode="tf_crop_and_resize")
    model = make_model([node], {"x": (np.float32, [1, 1, 4, 4]), "roi": (np.float32, [8]),
                                "sizes": (np.int64, [4])}, ["y"], opset=19)
    (actual,) = dlc.backend.prepare(model).run([x, roi, sizes])
    from tests.conftest import assert_same, reference
    (expected,) = reference(model, {"x": x, "roi": roi, "sizes": sizes})
    assert_same(actual, expected)


@pytest.mark.parametrize("dtype, mode", [
    (np.float16, "linear"), (np.float64, "cubic"), (np.uint8, "linear"), (np.int32, "cubic"),
    (np.int8, "nearest"), (np.int64, "nearest"), (np.uint8, "cubic"),
], ids=str)
def test_resize_dtypes(dtype, mode):
    low, high = (0, 255) if dtype == np.uint8 else (-100, 100)
    x = random_array([1, 2, 4, 5], dtype, low=low, high=high)
    check("Resize", [x], [None, floats(1, 1, 1.5, 0.7)], mode=mode)


def test_resize_integer_rounding_saturates():
    # cubic overshoot beyond 255 saturates; halves round to even
    x = np.array([[[[0, 255, 255, 0], [255, 0, 0, 255]]]], np.uint8)
    check("Resize", [x], [None, floats(1, 1, 2, 2)], mode="cubic")


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_resize_opsets(opset):
    x = random_array([2, 3, 4], np.float32)
    check("Resize", [x], [floats(), floats(1, 2, 0.5)], opset=opset, mode="linear")


def test_resize_identity_axes():
    x = random_array([2, 3], np.float32)
    check("Resize", [x], [None, floats(1, 1)], mode="linear")


def test_resize_1d_and_5d():
    check("Resize", [random_array([7], np.float32)], [None, floats(1.6)], mode="cubic")
    check("Resize", [random_array([1, 1, 2, 3, 4], np.float32)],
          [None, floats(1, 1, 2, 1.5, 0.5)], mode="linear")


# ----------------------------------------------------------------------------- Resize-10, Upsample


def asymmetric(x: np.ndarray, scales, mode: str) -> np.ndarray:
    """Resize-10/Upsample by hand: asymmetric coordinates, nearest floors (ceil downsampling)."""
    result = x.astype(np.float64)
    for axis, scale in enumerate(scales):
        size = result.shape[axis]
        out = int(size * float(np.float32(scale)))
        coord = np.arange(out) / float(np.float32(scale))
        if mode == "nearest":
            index = np.ceil(coord) if scale < 1 else np.floor(coord)
            result = np.take(result, np.clip(index.astype(int), 0, size - 1), axis=axis)
            continue
        low = np.clip(np.floor(coord).astype(int), 0, size - 1)
        high = np.clip(low + 1, 0, size - 1)
        frac = (coord - np.floor(coord)).reshape([-1 if a == axis else 1
                                                  for a in range(x.ndim)])
        result = np.take(result, low, axis=axis) * (1 - frac) + \
            np.take(result, high, axis=axis) * frac
    return result.astype(x.dtype)


@pytest.mark.parametrize("op_type, opset", [("Resize", 10), ("Upsample", 9), ("Upsample", 7)])
@pytest.mark.parametrize("mode, scales", [
    ("nearest", (1, 1, 2.5, 0.5)), ("linear", (1, 1, 1.5, 2)), ("nearest", (1, 1, 0.6, 3)),
], ids=str)
def test_legacy_resize(op_type, opset, mode, scales):
    x = random_array([1, 2, 4, 5], np.float32)
    if opset == 7:
        model = one_node(op_type, [x], opset=opset, mode=mode, scales=list(scales))
    else:
        model = one_node(op_type, [x], [floats(*scales)], opset=opset, mode=mode)
    (actual,) = dlc.compile(model)(x)
    np.testing.assert_allclose(actual, asymmetric(x, scales, mode), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_upsample_nearest_integer_scales(dtype):
    x = random_array([1, 2, 2, 3], dtype) if dtype != np.bool_ else \
        random_array([1, 2, 2, 3], np.int32) > 0
    check("Upsample", [x], [floats(1, 1, 2, 3)], opset=9, mode="nearest")


# ----------------------------------------------------------------------------- GridSample


def grid(shape, seed=1, spread=1.3) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(-spread, spread, shape)).astype(np.float32)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d(mode, padding, align):
    x = random_array([2, 2, 4, 5], np.float32)
    check("GridSample", [x, grid([2, 3, 6, 2])], opset=20, tolerances=LOOSE, mode=mode,
          padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("padding", ["zeros", "reflection"])
def test_grid_sample_3d(mode, padding):
    x = random_array([1, 2, 3, 4, 2], np.float32)
    check("GridSample", [x, grid([1, 2, 3, 2, 3], spread=2.5)], opset=20, tolerances=LOOSE,
          mode=mode, padding_mode=padding, align_corners=0)


@pytest.mark.parametrize("old, new", [("bilinear", "linear"), ("bicubic", "cubic")])
def test_grid_sample_opset16_names(old, new):
    # opset 16's names (which onnx.reference does not run) mean opset 20's modes
    x, g = random_array([1, 1, 3, 4], np.float64), grid([1, 2, 3, 2]).astype(np.float64)
    (actual,) = dlc.compile(one_node("GridSample", [x, g], opset=16, mode=old))(x, g)
    (expected,) = check("GridSample", [x, g], opset=20, tolerances=LOOSE, mode=new)
    np.testing.assert_array_equal(actual, expected)


def test_grid_sample_far_and_nan_coordinates_stay_in_bounds():
    x = random_array([1, 1, 3, 3], np.float32)
    g = np.array([[[[1e30, -1e30], [np.nan, 0.2], [-7.5, 9.25], [0.1, np.inf]]]], np.float32)
    for padding in ("zeros", "border", "reflection"):
        model = one_node("GridSample", [x, g], opset=20, mode="linear", padding_mode=padding)
        (y,) = dlc.compile(model)(x, g)
        assert y.shape == (1, 1, 1, 4)
        assert np.isfinite(y[0, 0, 0, 0]) and np.isfinite(y[0, 0, 0, 2])


def test_grid_sample_nearest_integers():
    x = random_array([1, 2, 3, 4], np.int32)
    check("GridSample", [x, grid([1, 2, 5, 2])], opset=20, mode="nearest",
          padding_mode="border")


# ----------------------------------------------------------------------------- AffineGrid


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 3, 2, 4), (2, 1, 1, 3)], ids=str)
@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid(size, align):
    r = len(size) - 2
    theta = random_array([size[0], r, r + 1], np.float32)
    check("AffineGrid", [theta], [ints(*size)], opset=20, tolerances=LOOSE,
          align_corners=align)


# ----------------------------------------------------------------------------- CenterCropPad


@pytest.mark.parametrize("shape, target, axes", [
    ((6, 5, 3), (4, 3, 3), None), ((3, 4), (6, 7), None), ((5, 4, 2), (8, 3), [0, 1]),
    ((2, 5, 6), (3, 5), [-2, -1]), ((3, 3), (3, 3), None),
], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_center_crop_pad(shape, target, axes, dtype):
    x = random_array(shape, dtype)
    extra = {} if axes is None else {"axes": axes}
    check("CenterCropPad", [x], [ints(*target)], opset=18, **extra)


def test_center_crop_pad_shape_subgraph_folds():
    # CenterCropPad's function body: pads computed from Shape, Max, Sub, Div, Concat fold
    x = random_array([3, 20, 8], np.float32)
    nodes = [
        helper.make_node("Constant", [], ["k2"], value_ints=[2]),
        helper.make_node("Constant", [], ["axes"], value_ints=[1, 2]),
        helper.make_node("Shape", ["x"], ["full"]),
        helper.make_node("Gather", ["full", "axes"], ["dims"]),
        helper.make_node("Max", ["dims", "target"], ["padded"]),
        helper.make_node("Sub", ["padded", "dims"], ["amount"]),
        helper.make_node("Div", ["amount", "k2"], ["left"]),
        helper.make_node("Sub", ["amount", "left"], ["right"]),
        helper.make_node("Concat", ["left", "right"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"]),
    ]
    model = make_model(nodes, {"x": (np.float32, [3, 20, 8])}, ["y"],
                       {"target": ints(22, 9)}, opset=18)
    run_both(model, [x])


def test_split_and_cast_like_fold():
    nodes = [
        helper.make_node("Split", ["s"], ["a", "b"], axis=0, num_outputs=2),
        helper.make_node("CastLike", ["b", "x"], ["bf"]),
        helper.make_node("Transpose", ["bf"], ["t"], perm=[0]),
        helper.make_node("Add", ["x", "t"], ["y"]),
    ]
    model = make_model(nodes, {"x": (np.float32, [2])}, ["y"], {"s": ints(1, 2, 3, 4)},
                       opset=18)
    run_both(model, [floats(0.5, 1.5)])
    text = dlc.compile(model).ir("dlc")
    assert "Split" not in text and text.count("dlc.constant") >= 1


# ----------------------------------------------------------------------------- Col2Im


@pytest.mark.parametrize("image, block, attrs", [
    ((4, 5), (2, 2), {}),
    ((5, 5), (2, 3), {"strides": [2, 1], "pads": [1, 0, 1, 1], "dilations": [1, 2]}),
    ((3, 4, 3), (2, 1, 2), {"strides": [1, 2, 1]}),
], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_col2im(image, block, attrs, dtype):
    rank = len(image)
    strides, dilations = attrs.get("strides", [1] * rank), attrs.get("dilations", [1] * rank)
    pads = attrs.get("pads", [0] * 2 * rank)
    blocks = [(image[d] + pads[d] + pads[rank + d] - dilations[d] * (block[d] - 1) - 1)
              // strides[d] + 1 for d in range(rank)]
    x = random_array([2, 3 * int(np.prod(block)), int(np.prod(blocks))], dtype)
    check("Col2Im", [x], [ints(*image), ints(*block)], opset=18, **attrs)


# ----------------------------------------------------------------------------- errors


def test_resample_errors():
    with make_context(), ir.Location.unknown():
        f32 = ir.F32Type.get()
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            value = ir.DenseElementsAttr.get(np.zeros((2, 3), np.float32))
            x = build(ops.CONSTANT, [], {"value": value})
            good = {"axis": 1, "taps": 1, "indices": [0, 2], "weights": [1.0, 1.0],
                    "bias": [0.0, 0.0], "to": f32}
            assert build(image.RESAMPLE, [x], good).type == tensor([2, 2], f32)
            for change, message in [({"axis": 2}, "out of range"),
                                    ({"indices": [0, 3]}, "index 3 is out of range"),
                                    ({"weights": [1.0]}, "weights has 1 entries"),
                                    ({"taps": 0}, "taps must be")]:
                with pytest.raises(ShapeError, match=message):
                    build(image.RESAMPLE, [x], good | change)


def test_grid_sample_errors():
    x = random_array([1, 1, 3, 3], np.float32)
    model = one_node("GridSample", [x, grid([1, 2, 2, 3])], opset=20, check=False)
    with pytest.raises(dlc.FrontendError, match="must be"):
        dlc.compile(model)
    model = one_node("GridSample", [x, grid([1, 2, 2, 2])], opset=20, check=False,
                     mode="area")
    with pytest.raises(dlc.FrontendError, match="mode 'area'"):
        dlc.compile(model)


def test_resize_errors():
    x = random_array([1, 1, 2, 2], np.float32)
    with pytest.raises(dlc.FrontendError, match="one value per resized axis"):
        dlc.compile(one_node("Resize", [x], [None, floats(1, 2)], check=False))
    with pytest.raises(dlc.FrontendError, match="antialias"):
        dlc.compile(one_node("Resize", [x], [None, floats(1, 1, 2, 2)], antialias=1))
