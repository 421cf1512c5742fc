"""Importers of the image resampling and geometry ONNX ops.

- Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9) are separable: for each resized axis
  this module computes, with numpy at compile time, the source indices and weights of every
  output position (a small table, as onnx.reference's `_interpolate_1d_along_axis` does:
  every mode, nearest_mode, coordinate_transformation_mode, cubic_coeff_a, exclude_outside,
  antialias, roi and extrapolation_value, scales or sizes, axes, keep_aspect_ratio_policy),
  and chains one `dlc.resample` per axis. Intermediate results are f64 unless x is f32/f64
  (onnx.reference computes in f64 and rounds once at the end). Opsets below 11 (Resize-10,
  Upsample) resize with the asymmetric transformation and, for nearest, floor when upsampling
  and ceil when downsampling an axis (onnxruntime's rule).
- GridSample (16, 20, 22) maps to `dlc.grid_sample` (bilinear/bicubic are linear/cubic).
- AffineGrid (20) is `theta @ base grid`: a constant base grid (numpy) times theta
  (`dlc.transpose`, `dlc.matmul`, `dlc.reshape`).
- CenterCropPad (18) is a `dlc.slice` (crop) then a `dlc.pad` with zeros.
- Col2Im (18) sums the columns that land on each image position: a `dlc.resample` whose
  table (weights 1) lists them, between two `dlc.reshape`s.

Scales, sizes, roi, shape and size inputs must be compile-time constants (`n.constant_input`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import image, movement, ops
from dlc.dialects.ops import is_float
from dlc.element_types import numpy_dtype
from dlc.frontends.onnx_node import Importer, NodeContext, dense

Values = list[ir.Value]
Coeffs = Callable[[float, float], np.ndarray]


def _str(n: NodeContext, name: str, default: str) -> str:
    value = n.attr(name, default)
    return value.decode() if isinstance(value, bytes) else value


def _optional_input(n: NodeContext, index: int, what: str) -> np.ndarray | None:
    """A constant input's value; None when absent or empty (ONNX's "not given")."""
    if index >= len(n.node.input) or not n.node.input[index]:
        return None
    value = n.constant_input(index, what)
    return None if value.size == 0 else value


# ----------------------------------------------------------------------------- coefficients


# ONNX's nearest_mode values, and Upsample's (legacy) rounding
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")


def nearest_coeffs(mode: str) -> Coeffs:
    # weights of the two neighbours (left, right) of a position at `ratio` in (0, 1]
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        right = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                 "floor": False, "ceil": True, "simple": scale < 1}[mode]
        return np.array([0.0, 1.0]) if right else np.array([1.0, 0.0])

    return coeffs


def linear_coeffs(ratio: float, scale: float) -> np.ndarray:
    return np.array([1 - ratio, ratio])


def linear_coeffs_antialias(ratio: float, scale: float) -> np.ndarray:
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    args = (np.arange(start, 2 - start) - ratio) * scale
    coeffs = np.clip(1 - np.abs(args), 0, 1)
    return coeffs / coeffs.sum()


def cubic_coeffs(a: np.float32) -> Coeffs:
    def coeffs(ratio: float, scale: float) -> np.ndarray:
        r = ratio
        return np.array([
            ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
            ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a,
        ])

    return coeffs


def cubic_coeffs_antialias(a: np.float32) -> Coeffs:
    def kernel(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        if x < 2:
            return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
        return 0.0

    def coeffs(ratio: float, scale: float) -> np.ndarray:
        scale = min(scale, 1.0)
        start = int(np.floor(-2 / scale) + 1)
        values = np.array([kernel(scale * (i - ratio)) for i in range(start, 2 - start)])
        return values / values.sum()

    return coeffs


# ----------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Options:
    """The attributes of a Resize that shape its per-axis tables."""

    coeffs: Coeffs
    transform: str
    exclude_outside: bool
    extrapolation_value: float


def source_coordinates(transform: str, out: int, scale: float, size: int,
                       roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The input coordinate of each output position, and which ones are extrapolated."""
    y = np.arange(out, dtype=np.float64)
    width = scale * size
    if transform == "align_corners":
        return (np.zeros(out) if width == 1 else y * (size - 1) / (width - 1)), None
    if transform == "asymmetric":
        return y / scale, None
    if transform == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale, None
    if transform == "tf_crop_and_resize":
        begin, end = roi if roi is not None else (0.0, 1.0)
        x = np.full(out, (end - begin) * (size - 1) / 2) if width == 1 else \
            y * (end - begin) * (size - 1) / (width - 1)
        x = x + begin * (size - 1)
        return x, (x < 0) | (x > size - 1)
    if transform == "pytorch_half_pixel":
        return (np.full(out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if transform == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if transform == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    raise ValueError(f"unknown coordinate_transformation_mode '{transform}'")


def axis_table(size: int, out: int, scale: float, options: Options,
               roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indices [out, taps], weights [out, taps], bias [out]) resizing one axis.

    onnx.reference's `_interpolate_1d_along_axis`, on indices instead of data.
    """
    x, extrapolated = source_coordinates(options.transform, out, scale, size, roi)
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)
    coeffs = np.array([options.coeffs(float(r), scale) for r in ratios]).reshape(out, -1)
    taps = coeffs.shape[1]
    pad = int(np.ceil(taps / 2))
    padded = x + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if taps % 2 == 0:
        offset = np.where(frac == 0, -(taps // 2), -(taps // 2) + 1)
    else:
        base = -((taps - 1) // 2)
        offset = np.where(frac <= 0.5, base, base + 1)
    neighbours = (p + offset)[:, None] + np.arange(taps)[None, :] - pad
    if options.exclude_outside:
        coeffs = np.where((neighbours < 0) | (neighbours >= size), 0.0, coeffs)
        total = coeffs.sum(axis=-1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    indices = np.clip(neighbours, 0, size - 1)
    bias = np.zeros(out)
    if extrapolated is not None:
        coeffs = np.where(extrapolated[:, None], 0.0, coeffs)
        bias = np.where(extrapolated, options.extrapolation_value, 0.0)
    return compact(indices, coeffs) + (bias,)


def compact(indices: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table without its zero-weight taps (rows padded with index 0, weight 0)."""
    keep = weights != 0
    taps = max(1, int(keep.sum(axis=1).max(initial=0)))
    out_indices = np.zeros((len(indices), taps), np.int64)
    out_weights = np.zeros((len(indices), taps))
    for row in range(len(indices)):
        picked = np.flatnonzero(keep[row])
        out_indices[row, :len(picked)] = indices[row, picked]
        out_weights[row, :len(picked)] = weights[row, picked]
    return out_indices, out_weights


# ----------------------------------------------------------------------------- Resize


@dataclass
class Plan:
    """Per axis of x: the output size, the scale and the roi (begin, end) of a Resize."""

    sizes: list[int]
    scales: list[float]
    roi: list[tuple[float, float]] | None
    axes: list[int]


def resize_plan(n: NodeContext, shape: list[int], scales: np.ndarray | None,
                sizes: np.ndarray | None, roi: np.ndarray | None, axes: list[int],
                policy: str) -> Plan:
    """onnx.reference's `_interpolate_nd` bookkeeping: scales or sizes (and policy) -> plan."""
    rank = len(shape)
    given = scales if scales is not None else sizes
    if given is None:
        raise n.error("needs its scales or its sizes input")
    if len(given) != len(axes):
        raise n.error(f"{'scales' if scales is not None else 'sizes'} {given.tolist()} must "
                      f"have one value per resized axis ({len(axes)})")
    full_roi = None
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise n.error(f"roi {roi.tolist()} must have 2 values per resized axis")
        full_roi = [(0.0, 1.0)] * rank
        for i, axis in enumerate(axes):
            full_roi[axis] = (float(roi[i]), float(roi[len(axes) + i]))
    if scales is not None:
        factors = [1.0] * rank
        for axis, s in zip(axes, scales):
            factors[axis] = float(s)
        if not all(math.isfinite(f) and f > 0 for f in factors):
            raise n.error(f"scales {scales.tolist()} must be finite and > 0")
        out = [int(f * d) for f, d in zip(factors, shape)]
        empty = [a for a in axes if out[a] == 0 and shape[a] > 0]
        if empty:
            raise n.error(f"scales {scales.tolist()} resize axis {empty[0]} of size "
                          f"{shape[empty[0]]} to 0 (its size times its scale, rounded down)")
        return Plan(out, factors, full_roi, axes)
    out = list(shape)
    for axis, s in zip(axes, sizes):
        out[axis] = int(s)
    if any(s <= 0 for s in out) or any(d == 0 for d in shape):
        raise n.error(f"sizes {sizes.tolist()} and the input shape {shape} must be > 0")
    factors = [o / d for o, d in zip(out, shape)]
    if policy != "stretch":
        if policy not in ("not_larger", "not_smaller"):
            raise n.error(f"keep_aspect_ratio_policy '{policy}' is not one of stretch, "
                          "not_larger, not_smaller")
        pick = min if policy == "not_larger" else max
        scale = pick(factors[a] for a in axes)
        factors = [scale if i in axes else 1.0 for i in range(rank)]
        out = [int(scale * shape[i] + 0.5) if i in axes else shape[i] for i in range(rank)]
    return Plan(out, factors, full_roi, axes)


def resize_options(n: NodeContext, mode: str) -> Options:
    legacy = n.opset < 11 or n.node.op_type == "Upsample"
    if mode in ("bilinear", "trilinear"):  # Upsample-7's names
        mode = "linear"
    antialias = bool(n.attr("antialias", 0))
    # an f32 attribute: onnx.reference (numpy 2 promotion) and onnxruntime evaluate the cubic
    # kernel in float32, and so does this table
    a = np.float32(n.attr("cubic_coeff_a", -0.75))
    if mode == "nearest":
        if antialias:
            raise n.error("antialias is not supported with mode nearest")
        nearest_mode = "simple" if legacy else _str(n, "nearest_mode", "round_prefer_floor")
        if not legacy and nearest_mode not in NEAREST_MODES[:-1]:
            raise n.error(f"nearest_mode '{nearest_mode}' is not one of "
                          f"{', '.join(NEAREST_MODES[:-1])}")
        coeffs = nearest_coeffs(nearest_mode)
    elif mode == "linear":
        coeffs = linear_coeffs_antialias if antialias else linear_coeffs
    elif mode == "cubic" and not legacy:
        coeffs = cubic_coeffs_antialias(a) if antialias else cubic_coeffs(a)
    else:
        raise n.error(f"mode '{mode}' is not one of nearest, linear, cubic")
    transform = "asymmetric" if legacy else _str(n, "coordinate_transformation_mode",
                                                 "half_pixel")
    if transform not in TRANSFORMS:
        raise n.error(f"coordinate_transformation_mode '{transform}' is not one of "
                      f"{', '.join(TRANSFORMS)}")
    return Options(coeffs, transform, bool(n.attr("exclude_outside", 0)),
                   float(n.attr("extrapolation_value", 0.0)))


def skips(plan: Plan, axis: int, size: int) -> bool:
    """Whether onnx.reference leaves `axis` untouched (scale 1, same size, trivial roi)."""
    roi = plan.roi[axis] if plan.roi is not None else (0.0, 1.0)
    return math.isclose(plan.scales[axis], 1.0) and plan.sizes[axis] == size and \
        math.isclose(roi[0], 0.0) and math.isclose(roi[1], 1.0)


def resample_chain(n: NodeContext, x: ir.Value, plan: Plan, options: Options) -> ir.Value:
    """One dlc.resample per resized axis, in `plan.axes` order."""
    shape = list(x.type.shape)
    element = x.type.element_type
    # before the tables (numpy arrays of the output's length): the result must fit in memory
    dtype = numpy_dtype(element)
    n.check_shape(plan.sizes, dtype)
    for axis in plan.axes:
        if shape[axis] == 0 and plan.sizes[axis]:
            raise n.error(f"cannot resize the empty axis {axis}")
    if 0 in plan.sizes:  # an empty result (an empty axis resized, or kept): nothing to compute
        return n.build(ops.CONSTANT, [], {"value": dense(np.zeros(plan.sizes, dtype), n)})
    tables = []
    for axis in plan.axes:
        if skips(plan, axis, shape[axis]):
            continue
        roi = plan.roi[axis] if plan.roi is not None else None
        tables.append((axis, axis_table(shape[axis], plan.sizes[axis], plan.scales[axis],
                                        options, roi)))
    gathers = all(t.shape[1] == 1 and (w == 1).all() and not b.any()
                  for _, (t, w, b) in tables)
    work = element if gathers or element in (ir.F32Type.get(), ir.F64Type.get()) else \
        ir.F64Type.get()
    for i, (axis, (indices, weights, bias)) in enumerate(tables):
        to = element if i == len(tables) - 1 else work
        x = n.build(image.RESAMPLE, [x], {
            "axis": axis, "taps": indices.shape[1], "indices": indices.reshape(-1).tolist(),
            "weights": weights.reshape(-1).tolist(), "bias": bias.tolist(), "to": to})
    return x


def _axes_attr(n: NodeContext, rank: int) -> list[int]:
    axes = n.attr("axes")
    if axes is None:
        return list(range(rank))
    normalized = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in normalized) or len(set(normalized)) != len(axes):
        raise n.error(f"axes {list(axes)} must be distinct axes of a rank-{rank} input")
    return normalized


def import_resize(n: NodeContext) -> Values:
    # Resize(x, roi, scales, sizes) -> one dlc.resample per resized axis
    x = n.inputs[0]
    shape = list(x.type.shape)
    mode = _str(n, "mode", "nearest")
    options = resize_options(n, mode)
    if n.opset < 11:
        scales, sizes, roi = n.constant_input(1, "scales"), None, None
    else:
        scales = _optional_input(n, 2, "scales")
        sizes = None if scales is not None else _optional_input(n, 3, "sizes")
        roi = _optional_input(n, 1, "roi") if options.transform == "tf_crop_and_resize" \
            else None
    axes = _axes_attr(n, len(shape))
    policy = _str(n, "keep_aspect_ratio_policy", "stretch")
    plan = resize_plan(n, shape, scales, sizes, roi, axes, policy)
    return [resample_chain(n, x, plan, options)]


def import_upsample(n: NodeContext) -> Values:
    # Upsample(x, scales) -> Resize-10 (asymmetric): one dlc.resample per resized axis
    x = n.inputs[0]
    shape = list(x.type.shape)
    options = resize_options(n, _str(n, "mode", "nearest"))
    if n.opset < 9:
        scales = n.attr("scales")
        if scales is None:
            raise n.error("needs its scales attribute")
        scales = np.asarray(scales, np.float32)
    else:
        scales = n.constant_input(1, "scales")
    plan = resize_plan(n, shape, scales.reshape(-1), None, None, list(range(len(shape))),
                       "stretch")
    return [resample_chain(n, x, plan, options)]


# ----------------------------------------------------------------------------- GridSample


GRID_MODE_NAMES = {"bilinear": "linear", "bicubic": "cubic"}


def import_grid_sample(n: NodeContext) -> Values:
    # GridSample(x, grid) -> dlc.grid_sample {mode, padding_mode, align_corners}
    mode = _str(n, "mode", "linear" if n.opset >= 20 else "bilinear")
    attrs = {"mode": GRID_MODE_NAMES.get(mode, mode),
             "padding_mode": _str(n, "padding_mode", "zeros"),
             "align_corners": int(n.attr("align_corners", 0))}
    return [n.build(image.GRID_SAMPLE, n.inputs[:2], attrs)]


# ----------------------------------------------------------------------------- AffineGrid


def base_grid(sizes: list[int], align_corners: bool) -> np.ndarray:
    """[prod(sizes), r + 1]: each position's normalized (x, y[, z], 1), x the last axis."""
    axes = []
    for d in sizes:
        if d == 0:  # an empty grid
            axes.append(np.zeros(0))
        elif align_corners:
            axes.append(-1 + np.arange(d) * (2.0 / (d - 1)) if d > 1 else np.array([-1.0]))
        else:
            step = 2.0 / d
            axes.append(-1 + step / 2 + np.arange(d) * step)
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(sizes))]
    return np.stack(columns, axis=1)


def import_affine_grid(n: NodeContext) -> Values:
    # AffineGrid(theta, size) -> dlc.matmul(base grid [HW, r+1], theta^T) -> reshape
    theta = n.inputs[0]
    size = [int(v) for v in n.constant_input(1, "size").reshape(-1)]
    if len(size) not in (4, 5):
        raise n.error(f"size {size} must be [N, C, H, W] or [N, C, D, H, W]")
    if any(d < 0 for d in size):
        raise n.error(f"size {size} must hold sizes >= 0")
    spatial = size[2:]
    r = len(spatial)
    element = theta.type.element_type
    if not is_float(element) or list(theta.type.shape) != [size[0], r, r + 1]:
        raise n.error(f"theta must be a float [{size[0]}, {r}, {r + 1}] tensor for size {size}, "
                      f"got {theta.type}")
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[element.width]
    n.check_shape([size[0], *spatial, r], dtype)  # (before numpy builds the base grid)
    grid = base_grid(spatial, bool(n.attr("align_corners", 0))).astype(dtype)
    base = n.build(ops.CONSTANT, [], {"value": dense(grid, n)})
    theta_t = n.build(ops.TRANSPOSE, [theta], {"perm": [0, 2, 1]})
    points = n.build(ops.MATMUL, [base, theta_t])
    return [n.build(ops.RESHAPE, [points], {"shape": [size[0], *spatial, r]})]


# ----------------------------------------------------------------------------- CenterCropPad


def import_center_crop_pad(n: NodeContext) -> Values:
    # CenterCropPad(x, shape) -> dlc.slice (centered crop) then dlc.pad (centered, zeros)
    x = n.inputs[0]
    shape = list(x.type.shape)
    rank = len(shape)
    target = [int(v) for v in n.constant_input(1, "shape").reshape(-1)]
    axes = _axes_attr(n, rank)
    if len(target) != len(axes) or any(t < 0 for t in target):
        raise n.error(f"shape {target} must hold one size >= 0 per axis of {axes}")
    starts, sizes = [0] * rank, list(shape)
    before, after = [0] * rank, [0] * rank
    for axis, want in zip(axes, target):
        dim = shape[axis]
        if want < dim:
            starts[axis], sizes[axis] = (dim - want) // 2, want
        elif want > dim:
            before[axis] = (want - dim) // 2
            after[axis] = want - dim - before[axis]
    if sizes != shape:
        x = n.build(movement.SLICE, [x], {"starts": starts, "sizes": sizes,
                                          "steps": [1] * rank})
    if any(before + after):
        x = n.build(movement.PAD, [x], {"mode": "constant", "pads": before + after})
    return [x]


# ----------------------------------------------------------------------------- Col2Im


def col2im_table(image: list[int], block: list[int], dilations: list[int], pads: list[int],
                 strides: list[int]) -> tuple[np.ndarray, int]:
    """For each image position, the columns (k * L + l) summed into it, padded with -1; L."""
    rank = len(image)
    blocks = [(image[d] + pads[d] + pads[rank + d] - dilations[d] * (block[d] - 1) - 1)
              // strides[d] + 1 for d in range(rank)]
    count = math.prod(blocks)
    sources: list[list[int]] = [[] for _ in range(math.prod(image))]
    for k, offset in enumerate(np.ndindex(*block)):  # ascending k, then l: onnx's sum order
        for l, where in enumerate(np.ndindex(*blocks)):
            position = [where[d] * strides[d] - pads[d] + offset[d] * dilations[d]
                        for d in range(rank)]
            if all(0 <= p < size for p, size in zip(position, image)):
                sources[int(np.ravel_multi_index(position, image))].append(k * count + l)
    taps = max(1, max(len(s) for s in sources))
    table = np.full((len(sources), taps), -1, np.int64)
    for row, columns in enumerate(sources):
        table[row, :len(columns)] = columns
    return table, count


def import_col2im(n: NodeContext) -> Values:
    # Col2Im(x [N, C*K, L]) -> reshape [N, C, K*L], dlc.resample summing the columns of each
    # image position (weights 1), reshape [N, C, *image]
    x = n.inputs[0]
    image_shape = [int(v) for v in n.constant_input(1, "image_shape").reshape(-1)]
    block = [int(v) for v in n.constant_input(2, "block_shape").reshape(-1)]
    rank = len(image_shape)
    dilations = list(n.attr("dilations", [1] * rank))
    pads = list(n.attr("pads", [0] * 2 * rank))
    strides = list(n.attr("strides", [1] * rank))
    if len(block) != rank or len(dilations) != rank or len(strides) != rank or \
            len(pads) != 2 * rank:
        raise n.error(f"image_shape {image_shape}, block_shape {block}, dilations, strides "
                      "and pads (2 per axis) must agree in rank")
    table, count = col2im_table(image_shape, block, dilations, pads, strides)
    kernel = math.prod(block)
    shape = list(x.type.shape)
    if x.type.rank != 3 or shape[1] % kernel or shape[2] != count or count < 1:
        raise n.error(f"input [{', '.join(map(str, shape))}] must be [N, C * {kernel}, "
                      f"{count}] for image_shape {image_shape} and block_shape {block}")
    batch, channels = shape[0], shape[1] // kernel
    flat = n.build(ops.RESHAPE, [x], {"shape": [batch, channels, kernel * count]})
    weights = (table >= 0).astype(np.float64)
    summed = n.build(image.RESAMPLE, [flat], {
        "axis": 2, "taps": table.shape[1], "indices": np.maximum(table, 0).reshape(-1).tolist(),
        "weights": weights.reshape(-1).tolist(), "bias": [0.0] * len(table),
        "to": x.type.element_type})
    return [n.build(ops.RESHAPE, [summed], {"shape": [batch, channels, *image_shape]})]


IMPORTERS: dict[str, Importer] = {
    "Resize": import_resize,
    "Upsample": import_upsample,
    "GridSample": import_grid_sample,
    "AffineGrid": import_affine_grid,
    "CenterCropPad": import_center_crop_pad,
    "Col2Im": import_col2im,
}
