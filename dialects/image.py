"""Image resampling and geometry ops of the `dlc` dialect: resample and grid_sample.

- `dlc.resample {axis, taps, indices, weights, bias, to}`: a 1-D resampling of one axis by a
  compile-time table. With `size = len(bias)` outputs along `axis`,
  `y[..., o, ...] = bias[o] + sum_t weights[o * taps + t] * x[..., indices[o * taps + t], ...]`,
  computed in floating point (f64, or f32 when x and y are f32/f16) and converted to the
  element type `to` (integers: rounded half to even and saturated, as onnx.reference's
  Resize). A table that only picks elements (one tap of weight 1, no bias) with `to` equal to
  x's element type is a pure gather: any element type, exact. Resize and Upsample (every mode,
  coordinate transformation, antialias, roi and extrapolation) are separable: the importer
  computes one table per resized axis with numpy and chains one `dlc.resample` per axis.
- `dlc.grid_sample {mode, padding_mode, align_corners}(x, grid)`: ONNX GridSample on
  x [N, C, D1..Dr] with grid [N, O1..Or, r] (normalized coordinates, last axis in reverse axis
  order x, y, z): y [N, C, O1..Or]. `mode` is nearest, linear or cubic; `padding_mode` is
  zeros, border or reflection. The grid is a run-time value: the lowering does the index math.

Index tables are checked here (every index within its axis), so the lowering never reads out
of bounds. AffineGrid and CenterCropPad need no op: they decompose into matmul/reshape and
slice/pad in `frontends/onnx_ops/image.py`.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import is_bool, is_float, is_int, shape_str, tensor

TensorTypes = list[ir.RankedTensorType]

GRID_MODES = ("nearest", "linear", "cubic")
PADDING_MODES = ("zeros", "border", "reflection")


def is_numeric(t: ir.Type) -> bool:
    return is_float(t) or (is_int(t) and not is_bool(t))


def is_pure_gather(attrs: dict[str, Any], source: ir.Type, target: ir.Type) -> bool:
    """Whether a resample table only picks elements (no arithmetic, any element type)."""
    return attrs["taps"] == 1 and source == target and \
        all(w == 1.0 for w in attrs["weights"]) and all(b == 0.0 for b in attrs["bias"])


def infer_resample(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    axis, taps, to = attrs["axis"], attrs["taps"], attrs["to"]
    size = len(attrs["bias"])
    if not 0 <= axis < x.rank:
        raise ShapeError(f"axis {axis} is out of range [0, {x.rank}) for a rank-{x.rank} "
                         "operand")
    if taps < 1:
        raise ShapeError(f"taps must be >= 1, got {taps}")
    for what in ("indices", "weights"):
        if len(attrs[what]) != size * taps:
            raise ShapeError(f"{what} has {len(attrs[what])} entries, expected {size * taps} "
                             f"({size} outputs x {taps} taps)")
    dim = x.shape[axis]
    bad = [i for i in attrs["indices"] if not 0 <= i < dim]
    if bad and size:
        raise ShapeError(f"index {bad[0]} is out of range [0, {dim}) of axis {axis}")
    if not is_pure_gather(attrs, x.element_type, to):
        for what, element in (("operand", x.element_type), ("result", to)):
            if not is_numeric(element):
                raise ShapeError(f"{what} element type {element} must be numeric (float or "
                                 "integer) unless the table only picks elements")
    shape = list(x.shape)
    shape[axis] = size
    return [tensor(shape, to)]


def infer_grid_sample(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, grid = types
    if attrs["mode"] not in GRID_MODES:
        raise ShapeError(f"mode '{attrs['mode']}' is not one of {', '.join(GRID_MODES)}")
    if attrs["padding_mode"] not in PADDING_MODES:
        raise ShapeError(f"padding_mode '{attrs['padding_mode']}' is not one of "
                         f"{', '.join(PADDING_MODES)}")
    if attrs["align_corners"] not in (0, 1):
        raise ShapeError(f"align_corners must be 0 or 1, got {attrs['align_corners']}")
    spatial = x.rank - 2
    if spatial < 1 or grid.rank != x.rank or grid.shape[-1] != spatial:
        raise ShapeError(f"x [{shape_str(x.shape)}] and grid [{shape_str(grid.shape)}] must be "
                         f"[N, C, D1..Dr] and [N, O1..Or, r] with r >= 1")
    if grid.shape[0] != x.shape[0]:
        raise ShapeError(f"batch sizes differ: x {x.shape[0]}, grid {grid.shape[0]}")
    if not is_float(grid.element_type):
        raise ShapeError(f"grid must hold floats, got {grid.element_type}")
    element = x.element_type
    if not (is_float(element) or (attrs["mode"] == "nearest" and is_numeric(element))):
        raise ShapeError(f"x element type {element} must be float (or numeric with mode "
                         "nearest)")
    if any(d == 0 for d in x.shape[2:]) and all(d > 0 for d in grid.shape[:-1]):
        raise ShapeError(f"x [{shape_str(x.shape)}] has an empty spatial axis to sample")
    return [tensor([*x.shape[:2], *grid.shape[1:-1]], element)]


RESAMPLE = define(OpDef(
    "resample", ("x",), infer_resample,
    {"axis": "int", "taps": "int", "indices": "ints", "weights": "floats", "bias": "floats",
     "to": "type"},
    "y[.., o, ..] = bias[o] + sum_t weights[o, t] * x[.., indices[o, t], ..] along axis"))
GRID_SAMPLE = define(OpDef(
    "grid_sample", ("x", "grid"), infer_grid_sample,
    {"mode": "str", "padding_mode": "str", "align_corners": "int"},
    "ONNX GridSample: sample x at the normalized coordinates of grid"))
