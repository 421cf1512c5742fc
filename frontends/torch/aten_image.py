"""Converters of ATen's upsampling ops (`F.interpolate`): nearest, nearest-exact, linear,
bilinear, trilinear and bicubic, by output size or by scale factor, align_corners either way.

Resampling is separable: for each spatial axis whose size changes (or whose scale is not 1),
a table of source indices and weights is computed with numpy at compile time, following
ATen's CPU kernels (`UpSample.h`: `nearest_idx`, `area_pixel_compute_source_index`,
`compute_source_index_and_lambda`, the cubic convolution with A = -0.75), and becomes one
`dlc.resample` of that axis. A given scale factor s is used as ATen uses it: source
coordinates scale by 1/s (not by in/out) unless align_corners; the output size is the
node's. Nearest indices are computed in float32, as ATen does, so that they floor alike.
Antialiased resampling (`antialias=True`) is not supported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir

from dlc.dialects.image import RESAMPLE
from dlc.frontends.torch.aten_node import AtenNode, Converter

Value = ir.Value
Table = tuple[np.ndarray, np.ndarray]  # (indices [out, taps], weights [out, taps])

CUBIC_A = -0.75


def _inverse_scale(size: int, out: int, scale: float | None, dtype: type = np.float64):
    # compute_scales_value: 1 / scale when a scale factor is given, else in / out
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(size) / dtype(out)


def nearest_table(size: int, out: int, scale: float | None, exact: bool) -> Table:
    """nearest_idx / nearest_exact_idx: floor((o [+ 0.5]) * scale), clamped (float32)."""
    o = np.arange(out, dtype=np.float32)
    if not exact and out == size:
        index = np.arange(out)
    elif not exact and out == 2 * size:
        index = np.arange(out) >> 1
    else:
        ratio = _inverse_scale(size, out, scale, np.float32)
        index = np.floor((o + np.float32(0.5) if exact else o) * ratio).astype(np.int64)
    index = np.minimum(index, size - 1)
    return index.reshape(out, 1), np.ones((out, 1))


def _source(size: int, out: int, scale: float | None, align_corners: bool,
            cubic: bool) -> np.ndarray:
    """area_pixel_compute_source_index for every output position."""
    o = np.arange(out, dtype=np.float64)
    if align_corners:
        return o * ((size - 1) / (out - 1) if out > 1 else 0.0)
    source = _inverse_scale(size, out, scale) * (o + 0.5) - 0.5
    return source if cubic else np.maximum(source, 0.0)


def linear_table(size: int, out: int, scale: float | None, align_corners: bool) -> Table:
    """compute_source_index_and_lambda: the two neighbours and their weights."""
    if out == size:
        return np.arange(out).reshape(out, 1), np.ones((out, 1))
    source = _source(size, out, scale, align_corners, cubic=False)
    left = np.minimum(np.floor(source).astype(np.int64), size - 1)
    ratio = np.clip(source - left, 0.0, 1.0)
    right = left + (left < size - 1)
    return np.stack([left, right], 1), np.stack([1 - ratio, ratio], 1)


def cubic_table(size: int, out: int, scale: float | None, align_corners: bool) -> Table:
    """upsample_bicubic2d: four neighbours (clamped into the axis), cubic convolution."""
    source = _source(size, out, scale, align_corners, cubic=True)
    floor = np.floor(source)
    t = source - floor
    a = CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)
    taps = floor.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    return np.clip(taps, 0, size - 1), weights


def _resample(n: AtenNode, x: Value, tables: Sequence[Table | None]) -> Value:
    """One dlc.resample per spatial axis that has a table (the last axes of x)."""
    first = x.type.rank - len(tables)
    for offset, table in enumerate(tables):
        if table is None:
            continue
        indices, weights = table
        x = n.build(RESAMPLE, [x], {
            "axis": first + offset, "taps": indices.shape[1],
            "indices": indices.reshape(-1).tolist(), "weights": weights.reshape(-1).tolist(),
            "bias": [0.0] * indices.shape[0], "to": x.type.element_type})
    return x


def _scales(n: AtenNode, k: int, scales: Sequence[float | None] | None) -> list[float | None]:
    # (the per-axis scales of a .default overload may be left out: None)
    scales = [] if scales is None else list(scales)
    scales += [None] * (k - len(scales))
    if len(scales) != k:
        raise n.error(f"{len(scales)} scale factors for {k} spatial axes")
    return scales


def _upsample(n: AtenNode, x: Value, mode: str, scales: Sequence[float | None] | None,
              align_corners: bool = False) -> Value:
    spatial = list(x.type.shape[2:])
    out = n.out_shape[2:]
    tables: list[Table | None] = []
    for size, target, scale in zip(spatial, out, _scales(n, len(spatial), scales)):
        if size == 0 and target:
            raise n.error(f"cannot upsample the empty spatial axes of {list(x.type.shape)}")
        if mode in ("nearest", "nearest-exact"):
            table = nearest_table(size, target, scale, mode == "nearest-exact")
        elif mode == "linear":
            table = linear_table(size, target, scale, align_corners)
        else:
            table = cubic_table(size, target, scale, align_corners)
        identity = table[0].shape[1] == 1 and \
            np.array_equal(table[0][:, 0], np.arange(size)) and target == size
        tables.append(None if identity else table)
    return _resample(n, x, tables)


def _nearest(exact: bool) -> tuple[Converter, Converter]:
    mode = "nearest-exact" if exact else "nearest"

    def vec(n: AtenNode, x: Value, output_size: Sequence[int] | None,
            scale_factors: Sequence[float] | None) -> Value:
        return _upsample(n, x, mode, scale_factors)

    def sizes(n: AtenNode, x: Value, output_size: Sequence[int], *scales: float | None,
              **named: float | None) -> Value:
        return _upsample(n, x, mode, [*scales, *named.values()])

    return vec, sizes


def _interpolating(mode: str) -> tuple[Converter, Converter]:
    def vec(n: AtenNode, x: Value, output_size: Sequence[int] | None, align_corners: bool,
            scale_factors: Sequence[float] | None) -> Value:
        return _upsample(n, x, mode, scale_factors, align_corners)

    def sizes(n: AtenNode, x: Value, output_size: Sequence[int], align_corners: bool,
              *scales: float | None, **named: float | None) -> Value:
        return _upsample(n, x, mode, [*scales, *named.values()], align_corners)

    return vec, sizes


ATEN: dict[str, Converter] = {}
for _name, (_vec, _sizes) in {
    **{f"upsample_nearest{d}d": _nearest(False) for d in (1, 2, 3)},
    **{f"_upsample_nearest_exact{d}d": _nearest(True) for d in (1, 2, 3)},
    "upsample_linear1d": _interpolating("linear"),
    "upsample_bilinear2d": _interpolating("linear"),
    "upsample_trilinear3d": _interpolating("linear"),
    "upsample_bicubic2d": _interpolating("cubic"),
}.items():
    ATEN[f"aten.{_name}.vec"] = _vec
    ATEN[f"aten.{_name}.default"] = _sizes
