"""Value ranges of tensors and linalg bodies: an interval holding every value, all integers.

`value_range(value)` answers for a tensor (or a scalar of a linalg body) produced by constants,
reshapes and slices, and `linalg.generic` ops whose bodies cast 8/16-bit integers to float,
add, subtract, multiply, round and clamp: the codegen's integer matmul kernel
(`int8_matmul.py`) asks it whether an f32 operand holds small integers only (the centered
quantized activations of MatMulInteger). Anything it cannot bound is None: the answer is
always safe, never a guess. Floats stay exact only within 2^24 (larger bounds are None), and
a rounded float of unknown magnitude is (-inf, inf), which only maxnumf/minnumf (NaN-free)
clamps bound.
"""

from __future__ import annotations

import math
import re

import numpy as np
from mlir import ir

F32_EXACT = 1 << 24  # every integer up to this magnitude is exact in f32

Range = tuple[float, float]  # an integer-valued interval (bounds may be infinite)
RESHAPES = ("tensor.reshape", "tensor.collapse_shape", "tensor.expand_shape")
_CLAMPS = {"arith.maxnumf": max, "arith.maximumf": max, "arith.minnumf": min,
           "arith.minimumf": min, "arith.maxsi": max, "arith.minsi": min}
_ROUNDS = ("math.roundeven", "math.round", "math.floor", "math.ceil", "math.trunc")


def is_op(owner: object) -> bool:
    return isinstance(owner, ir.Operation | ir.OpView)


def _width(t: ir.Type) -> int | None:
    return ir.IntegerType(t).width if isinstance(t, ir.IntegerType) else None


def _full(width: int, unsigned: bool) -> Range:
    return (0, (1 << width) - 1) if unsigned else (-(1 << (width - 1)), (1 << (width - 1)) - 1)


def constant_range(attr: ir.Attribute) -> Range | None:
    """The range of a constant's values when they are all integers (None otherwise)."""
    if isinstance(attr, ir.IntegerAttr):
        return (attr.value, attr.value)
    if isinstance(attr, ir.FloatAttr):
        value = attr.value
        return (value, value) if math.isfinite(value) and value == int(value) else None
    if isinstance(attr, ir.DenseElementsAttr):
        array = _elements(attr)
        if array.size == 0 or array.dtype == np.bool_:
            return None
        # (a float weight that is no integer shows it in its first elements: the whole check,
        # two passes over every weight of a model, took 1.9 s of GPT-2's compile)
        if array.dtype.kind == "f" and not all(
                np.all(np.isfinite(part)) and np.all(part == np.round(part))
                for part in (array.reshape(-1)[:4096], array)):
            return None
        return (float(array.min()), float(array.max()))
    return None


def _elements(attr: ir.DenseElementsAttr) -> np.ndarray:
    """The constant's values, without a copy where the bindings give its buffer."""
    if attr.is_splat:
        return np.array([attr.get_splat_value().value])
    try:
        return np.asarray(memoryview(attr))
    except (TypeError, ValueError, BufferError):  # (i1 and other packed element types)
        return np.array(attr)


def value_range(value: ir.Value, depth: int = 4) -> Range | None:
    """An interval holding every value of `value` (a tensor or a scalar of a linalg body),
    all of them integers, or None when it cannot tell. Integer tensors and scalars of at most
    16 bits without a known range are left to the cast that reads them (their type's range,
    signed or unsigned as the cast says): `_integer_pattern`."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None  # (a block argument: `_generic_range` knows its operand)
    if not is_op(owner) or depth < 0:
        return None
    name = owner.name
    if name == "arith.constant":
        return constant_range(owner.attributes["value"])
    if name in RESHAPES or name == "tensor.extract_slice":
        return value_range(owner.operands[0], depth)
    if name == "linalg.generic":
        return _generic_range(owner, value, depth - 1)
    if name == "linalg.transpose":
        return value_range(owner.operands[0], depth)
    if name == "linalg.fill":
        return value_range(owner.operands[0], depth)
    if name == "tensor.insert_slice":  # (a conv's zero padding: the values of both)
        inner, outer = (value_range(v, depth - 1) for v in owner.operands[:2])
        if inner is None or outer is None:
            return None
        return (min(inner[0], outer[0]), max(inner[1], outer[1]))
    return None


class _Known(dict):
    """Ranges of a body's values; a constant defined above the body is looked up on use."""

    def __missing__(self, value: ir.Value) -> Range | None:
        owner = value.owner
        if is_op(owner) and owner.name == "arith.constant":
            return constant_range(owner.attributes["value"])
        return None


def _generic_range(op: ir.Operation, value: ir.Value, depth: int) -> Range | None:
    """The range of result `value` of a linalg.generic, from its body's yield."""
    index = next(i for i, r in enumerate(op.results) if r == value)
    block = op.regions[0].blocks[0]
    inputs = len(op.operands) - len(op.results)
    known = _Known()
    for arg, operand in zip(list(block.arguments)[:inputs], list(op.operands)[:inputs]):
        known[arg] = value_range(operand, depth)
    for arg in list(block.arguments)[inputs:]:
        known[arg] = None
    for inner in block.operations:
        if inner.name == "linalg.yield":
            return known[inner.operands[index]]
        result = _scalar_range(inner, known)
        for r in inner.results:
            known[r] = _fits(result, r.type)
    return None


def _integer_pattern(value: ir.Value, known: _Known, unsigned: bool) -> Range | None:
    """An integer scalar read as `unsigned` or signed: its known range, else its type's."""
    width = _width(value.type)
    found = known[value]
    if found is not None and (not unsigned or found[0] >= 0):
        return found
    return _full(width, unsigned) if width is not None and width <= 16 else None


def _scalar_range(op: ir.Operation, known: _Known) -> Range | None:
    """The range of a body op's result from its operands' (None: unknown)."""
    name = op.name
    args = list(op.operands)
    if name == "arith.constant":
        return constant_range(op.attributes["value"])
    if name in ("arith.uitofp", "arith.extui"):
        return _integer_pattern(args[0], known, unsigned=True)
    if name in ("arith.sitofp", "arith.extsi"):
        return _integer_pattern(args[0], known, unsigned=False)
    if name in ("arith.fptosi", "arith.fptoui", "arith.trunci"):
        return None  # (a narrow integer: the cast reading it knows its type's range)
    ranges = [known[a] for a in args]
    if name == "arith.select":
        if ranges[1] is None or ranges[2] is None:
            return None
        return (min(ranges[1][0], ranges[2][0]), max(ranges[1][1], ranges[2][1]))
    if name in _ROUNDS:
        return ranges[0] if ranges[0] is not None else (-math.inf, math.inf)
    if name in _CLAMPS:
        return _clamp(name, _CLAMPS[name], ranges)
    if any(r is None for r in ranges):
        return None
    if name == "arith.extf":  # (exact)
        return ranges[0]
    if name == "arith.truncf":  # (exact within 2^24; infinite bounds stay so)
        return ranges[0] if all(math.isinf(b) or abs(b) <= F32_EXACT for b in ranges[0]) \
            else None
    if name == "arith.negf":
        return (-ranges[0][1], -ranges[0][0])
    if name in ("arith.addf", "arith.addi"):
        return _exact(ranges[0][0] + ranges[1][0], ranges[0][1] + ranges[1][1])
    if name in ("arith.subf", "arith.subi"):
        return _exact(ranges[0][0] - ranges[1][1], ranges[0][1] - ranges[1][0])
    if name in ("arith.mulf", "arith.muli"):
        products = [x * y for x in ranges[0] for y in ranges[1]]
        return _exact(min(products), max(products))
    return None


def _clamp(name: str, fn, ranges: list[Range | None]) -> Range | None:
    """max/min of two ranges. A rounded float of unknown magnitude is (-inf, inf), maybe NaN:
    only maxnumf/minnumf (which return the other operand for a NaN) bound it."""
    if any(r is None for r in ranges):
        return None
    infinite = any(math.isinf(b) for r in ranges for b in r)
    if infinite and name not in ("arith.maxnumf", "arith.minnumf"):
        return None
    return (fn(r[0] for r in ranges), fn(r[1] for r in ranges))


def _fits(found: Range | None, t: ir.Type) -> Range | None:
    """`found` if an integer type holds it as a signed value (arithmetic in that width
    wrapped otherwise), None if not; a float range as it is."""
    width = _width(t)
    if found is None or width is None:
        return found
    low, high = _full(width, unsigned=False)
    return found if low <= found[0] and found[1] <= high else None


def _exact(low: float, high: float) -> Range | None:
    """An interval whose every integer is exact in f32 (None otherwise)."""
    return (low, high) if max(abs(low), abs(high)) <= F32_EXACT else None


# ----------------------------------------------------------------------------- row spans


def row_span(value: ir.Value, depth: int = 4) -> float | None:
    """A bound on max - min within any row (the last dimension) of tensor `value`, or None.

    The VNNI integer matmul (`int8_vnni.py`) moves each row of A into u8 by subtracting the
    row's minimum, which is exact when the span is at most 255: MatMulInteger's A is
    `uitofp(a) - uitofp(zero point)` with a zero point computed at run time (range [-255,
    255], span 255). A value uniform along the rows (a scalar, a per-row value) has span 0;
    adding or subtracting one keeps the other's span; any other op's span is its range's
    width (`value_range`), else unknown. Reshapes that keep the last dimension keep rows."""
    owner = value.owner
    if not is_op(owner) or depth < 0 or not isinstance(value.type, ir.RankedTensorType):
        return None
    name = owner.name
    if name in RESHAPES or name == "tensor.extract_slice":
        # (a reshape keeping the last dimension keeps the rows; a slice of the same rank takes
        # parts of them)
        source = owner.operands[0]
        if not isinstance(source.type, ir.RankedTensorType) or value.type.rank == 0 \
                or source.type.rank == 0 or not (name == "tensor.extract_slice"
                                                 or source.type.shape[-1] == value.type.shape[-1]) \
                or (name == "tensor.extract_slice" and source.type.rank != value.type.rank):
            return _width_of(value_range(value, depth))
        found = row_span(source, depth)
        return found if found is not None else _width_of(value_range(value, depth))
    if name == "linalg.generic":
        found = _generic_span(owner, value, depth - 1)
        if found is not None:
            return found
    return _width_of(value_range(value, depth))


def _width_of(found: Range | None) -> float | None:
    if found is None or not all(math.isfinite(b) for b in found):
        return None
    return found[1] - found[0]


def _row_dimension(op: ir.Operation, index: int) -> int | None:
    """The loop dimension of generic `op` that indexes the last axis of its result `index`."""
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    inputs = len(op.operands) - len(op.results)
    result_map = ir.AffineMapAttr(maps[inputs + index]).value
    if not result_map.results:
        return None
    last = result_map.results[-1]
    return last.position if isinstance(last, ir.AffineDimExpr) else None


def _uniform(op: ir.Operation, operand: int, dimension: int) -> bool:
    """Whether generic input `operand`'s indexing map ignores loop `dimension`."""
    affine = ir.AffineMapAttr(list(ir.ArrayAttr(op.attributes["indexing_maps"]))[operand]).value
    return re.search(rf"\bd{dimension}\b", str(affine).split("->", 1)[1]) is None


def _generic_span(op: ir.Operation, value: ir.Value, depth: int) -> float | None:
    """The row span of result `value` of a linalg.generic (see `row_span`)."""
    index = next(i for i, r in enumerate(op.results) if r == value)
    dimension = _row_dimension(op, index)
    if dimension is None:
        return None
    block = op.regions[0].blocks[0]
    inputs = len(op.operands) - len(op.results)
    known = _Known()
    spans: dict = {}
    for i, (arg, operand) in enumerate(zip(list(block.arguments)[:inputs],
                                           list(op.operands)[:inputs])):
        known[arg] = value_range(operand, depth)
        spans[arg] = 0 if _uniform(op, i, dimension) else _width_of(known[arg])
    for arg in list(block.arguments)[inputs:]:
        known[arg] = None
        spans[arg] = None
    for inner in block.operations:
        if inner.name == "linalg.yield":
            return spans.get(inner.operands[index])
        if inner.name == "linalg.index":
            return None
        result = _scalar_range(inner, known)
        for r in inner.results:
            known[r] = _fits(result, r.type)
            spans[r] = _scalar_span(inner, spans, known[r], r.type)
    return None


def _scalar_span(op: ir.Operation, spans: dict, found: Range | None, t: ir.Type
                 ) -> float | None:
    """The row span of a body op's result: 0 when every operand is uniform, the sum of the
    operands' spans for add/sub, the span of a cast's operand when its range is that of an
    8/16-bit integer, else the width of its range (None: unknown)."""
    operand_spans = [spans.get(a, 0) for a in op.operands]  # (from above: uniform)
    if all(s == 0 for s in operand_spans):
        return 0
    if op.name in ("arith.addf", "arith.subf", "arith.addi", "arith.subi") \
            and None not in operand_spans:
        total = sum(operand_spans)
        width = _width_of(found)
        return total if width is None else min(total, width)
    if found is None:  # (a narrow integer, e.g. a quantize's fptoui: its type's width)
        width = _width(t)
        return (1 << width) - 1 if width is not None and width <= 16 else None
    return _width_of(found)

