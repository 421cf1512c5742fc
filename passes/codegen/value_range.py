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
