"""Data-movement `dlc` ops: concat, slice, broadcast, pad, trilu and iota.

`dlc.concat` is binary: IRDL binds every element of a variadic operand to one type, so a
variadic concat could only join tensors of equal shapes. N inputs are a chain of concats
(the importer builds it, the lowering joins a chain into one destination tensor).

Every attribute is static and normalized by the importer (axes non-negative, slice bounds
resolved to a first index, a size and a step per axis, one pad count per side and axis), so
the inference functions only check consistency. Split, Squeeze, Unsqueeze, Tile,
DepthToSpace and SpaceToDepth need no op of their own: the importer decomposes them into
these ops and `dlc.reshape`/`dlc.transpose`.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import same_element_type, shape_str, tensor

TensorTypes = list[ir.RankedTensorType]

PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _check_rank(what: str, values: list[int], rank: int) -> None:
    if len(values) != rank:
        raise ShapeError(f"{what} {values} must have one entry per axis ({rank})")


def infer_concat(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    element = same_element_type(types)
    rank, axis = types[0].rank, attrs["axis"]
    if not 0 <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range [0, {rank}) for rank-{rank} operands")
    shapes = [list(t.shape) for t in types]
    for shape in shapes[1:]:
        if len(shape) != rank or any(a != b for i, (a, b) in enumerate(zip(shape, shapes[0]))
                                     if i != axis):
            listed = ", ".join(f"[{shape_str(s)}]" for s in shapes)
            raise ShapeError(f"operand shapes {listed} differ outside axis {axis}")
    if any(ir.ShapedType.is_dynamic_size(s[axis]) for s in shapes):
        raise ShapeError(f"concat along axis {axis}, a dynamic size (?): not one size")
    result = list(shapes[0])
    result[axis] = sum(s[axis] for s in shapes)
    return [tensor(result, element)]


def infer_slice(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    starts, sizes, steps = attrs["starts"], attrs["sizes"], attrs["steps"]
    for what, values in (("starts", starts), ("sizes", sizes), ("steps", steps)):
        _check_rank(what, values, x.rank)
    for axis, (start, size, step, dim) in enumerate(zip(starts, sizes, steps, x.shape)):
        if ir.ShapedType.is_dynamic_size(dim) and (start, size, step) == (0, dim, 1):
            continue  # (a dynamic size (?) kept whole)
        if step == 0 or size < 0:
            raise ShapeError(f"axis {axis}: steps must be non-zero and sizes >= 0 "
                             f"(step {step}, size {size})")
        last = start + (size - 1) * step
        if size and not (0 <= start < dim and 0 <= last < dim):
            raise ShapeError(f"axis {axis}: elements {start} to {last} (step {step}) are out "
                             f"of bounds for size {dim}")
    return [tensor(sizes, x.element_type)]


def infer_iota(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    shape, axis, dtype = list(attrs["shape"]), attrs["axis"], attrs["dtype"]
    if not 0 <= axis < len(shape):
        raise ShapeError(f"axis {axis} is out of range for shape [{shape_str(shape)}]")
    if not isinstance(dtype, (ir.IntegerType, ir.FloatType)):
        raise ShapeError(f"an iota of {dtype}: an integer or float type expected")
    return [tensor(shape, dtype)]


def infer_broadcast(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    shape = list(attrs["shape"])
    offset = len(shape) - x.rank
    if offset < 0 or any(d not in (1, shape[offset + i]) for i, d in enumerate(x.shape)):
        raise ShapeError(f"[{shape_str(x.shape)}] does not broadcast to [{shape_str(shape)}]")
    return [tensor(shape, x.element_type)]


def infer_pad(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    x, mode, pads = types[0], attrs["mode"], attrs["pads"]
    if mode not in PAD_MODES:
        raise ShapeError(f"mode '{mode}' is not one of {', '.join(PAD_MODES)}")
    _check_rank("pads", pads, 2 * x.rank)
    if any(p < 0 for p in pads):
        raise ShapeError(f"pads {pads} must be >= 0")
    if len(types) == 2:
        same_element_type(types)
        if types[1].rank != 0 or mode != "constant":
            raise ShapeError(f"the pad value must be a rank-0 tensor of a constant pad "
                             f"(got [{shape_str(types[1].shape)}], mode '{mode}')")
    before, after = pads[:x.rank], pads[x.rank:]
    for axis, dim in enumerate(x.shape):
        if mode != "constant" and dim == 0 and before[axis] + after[axis]:
            raise ShapeError(f"axis {axis} is empty: mode '{mode}' has nothing to copy")
    shape = [d + b + a for d, b, a in zip(x.shape, before, after)]
    return [tensor(shape, x.element_type)]


def infer_trilu(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    if x.rank < 2:
        raise ShapeError(f"trilu needs a rank >= 2 operand, got [{shape_str(x.shape)}]")
    if attrs["upper"] not in (0, 1):
        raise ShapeError(f"upper must be 0 or 1, got {attrs['upper']}")
    return [x]


CONCAT = define(OpDef("concat", ("lhs", "rhs"), infer_concat, {"axis": "int"},
                      "join lhs and rhs along a (non-negative) axis"))
SLICE = define(OpDef("slice", ("x",), infer_slice,
                     {"starts": "ints", "sizes": "ints", "steps": "ints"},
                     "y[i] = x[starts + i * steps] for i < sizes, per axis (steps may be < 0)"))
BROADCAST = define(OpDef("broadcast", ("x",), infer_broadcast, {"shape": "ints"},
                         "numpy broadcast of x to shape"))
IOTA = define(OpDef("iota", (), infer_iota,
                    {"shape": "ints", "axis": "int", "start": "int", "step": "int", "dtype": "type"},
                    "y[i] = start + step * i[axis], of `shape` (an arange along one axis, of a "
                    "dynamic size's length where the importer knows no constant)"))
PAD = define(OpDef("pad", ("x", "value?"), infer_pad, {"mode": "str", "pads": "ints"},
                   "pad (pads = befores then afters) with value (default 0), or by "
                   "reflect/edge/wrap"))
TRILU = define(OpDef("trilu", ("x",), infer_trilu, {"upper": "int", "k": "int"},
                     "keep the upper (j - i >= k) or lower (j - i <= k) triangle, zero the rest"))
