"""The `dlc` ops: one `define(OpDef(...))` each, with the rule that infers its result type.

Semantics are ONNX's (numpy broadcasting, numpy matmul, ONNX Gemm), on ranked tensors.
Adding an op is adding one definition here plus its lowering pattern in `passes/lowering/`.
"""

from __future__ import annotations

import math
from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define

TensorTypes = list[ir.RankedTensorType]


# ----------------------------------------------------------------------------- helpers


def is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def is_int(t: ir.Type) -> bool:
    """Any integer type: signed (signless iN), unsigned (uiN) or bool (i1)."""
    return isinstance(t, ir.IntegerType)


def is_bool(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 1


def is_unsigned(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.is_unsigned


def tensor(shape: list[int] | tuple[int, ...], element_type: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element_type, loc=ir.Location.unknown())


def shape_str(shape: list[int] | tuple[int, ...]) -> str:
    return "x".join("?" if ir.ShapedType.is_dynamic_size(d) else str(d) for d in shape) \
        if shape else "scalar"


def broadcast_shapes(*shapes: list[int]) -> list[int]:
    """numpy's broadcasting of several shapes; ShapeError when they do not broadcast."""
    rank = max(len(s) for s in shapes)
    padded = [[1] * (rank - len(s)) + list(s) for s in shapes]
    result = []
    for axis in range(rank):
        sizes = {p[axis] for p in padded} - {1}
        if len(sizes) > 1:
            listed = ", ".join(f"[{shape_str(s)}]" for s in shapes)
            raise ShapeError(f"shapes {listed} are not broadcast-compatible (axis {axis})")
        result.append(sizes.pop() if sizes else 1)
    return result


def same_element_type(types: TensorTypes) -> ir.Type:
    element = types[0].element_type
    for t in types[1:]:
        if t.element_type != element:
            have = ", ".join(str(x.element_type) for x in types)
            raise ShapeError(f"operands must have the same element type, got {have}")
    return element


def numeric_element_type(types: TensorTypes) -> ir.Type:
    element = same_element_type(types)
    if not (is_float(element) or is_int(element)) or is_bool(element):
        raise ShapeError(f"expects a numeric element type, got {element}")
    return element


# ----------------------------------------------------------------------------- inference


def infer_constant(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    return [attrs["value"].type]


def infer_binary(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    element = numeric_element_type(types)
    return [tensor(broadcast_shapes(*(t.shape for t in types)), element)]


def infer_unary(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    numeric_element_type(types)
    return [types[0]]


def infer_matmul(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    a, b = types
    element = numeric_element_type(types)
    if a.rank == 0 or b.rank == 0:
        raise ShapeError("matmul operands must have rank >= 1")
    a_shape = [1, *a.shape] if a.rank == 1 else list(a.shape)
    b_shape = [*b.shape, 1] if b.rank == 1 else list(b.shape)
    if a_shape[-1] != b_shape[-2]:
        raise ShapeError(
            f"contracting dimensions differ: [{shape_str(a.shape)}] x [{shape_str(b.shape)}]"
            f" ({a_shape[-1]} vs {b_shape[-2]})"
        )
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    shape = [*batch]
    if a.rank > 1:
        shape.append(a_shape[-2])
    if b.rank > 1:
        shape.append(b_shape[-1])
    return [tensor(shape, element)]


def infer_gemm(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    element = numeric_element_type(types)
    a, b = types[0], types[1]
    if a.rank != 2 or b.rank != 2:
        raise ShapeError(f"gemm operands A and B must be 2-D, got ranks {a.rank} and {b.rank}")
    m, k = reversed(a.shape) if attrs["transA"] else a.shape
    k2, n = reversed(b.shape) if attrs["transB"] else b.shape
    if k != k2:
        raise ShapeError(f"contracting dimensions differ: {k} (A) vs {k2} (B)")
    fractional = [a for a in ("alpha", "beta") if not float(attrs[a]).is_integer()]
    if is_int(element) and fractional:
        raise ShapeError(f"{' and '.join(fractional)} must be integers on integer tensors "
                         f"(alpha={attrs['alpha']}, beta={attrs['beta']})")
    if len(types) == 3:
        c = types[2]
        if c.rank > 2 or any(d not in (1, s) for d, s in zip(reversed(c.shape), [n, m])):
            raise ShapeError(f"C of shape [{shape_str(c.shape)}] does not broadcast to [{m}x{n}]")
    return [tensor([m, n], element)]


WHOLE = "a reshape keeps a dynamic size (?) at one axis, whole (each, in order)"


def _dynamic_reshape(x: ir.RankedTensorType, target: list[int]) -> list[int]:
    """The shape of a reshape of `x`, which has dynamic sizes (`?`, all the one size of the
    function), into `target` (with `?`s and at most one -1): each dynamic axis keeps its
    size, in order (the static sizes between them have the same products in `x` and in the
    result; -1 stands for the one size missing, or for a dynamic size itself: [2, ?, ?] into
    [1, 2, ?, -1]); ShapeError for any other reshape (a dynamic size merged with or split
    from static ones is not one size any more)."""
    dynamic = ir.ShapedType.get_dynamic_size()
    count = sum(d == dynamic for d in x.shape)

    def refuse(why: str = "") -> ShapeError:
        return ShapeError(f"cannot reshape [{shape_str(x.shape)}] into [{shape_str(target)}]"
                          + (f": {why}" if why else ""))

    if target.count(-1) > 1 or any(d < -1 and d != dynamic for d in target):
        raise refuse(WHOLE)
    result = list(target)
    if target.count(dynamic) == count - 1 and -1 in target:
        result[result.index(-1)] = dynamic  # (-1: the dynamic size missing)
    if result.count(dynamic) != count:
        raise refuse(WHOLE)

    def segments(shape: list[int]) -> list[list[int]]:
        parts: list[list[int]] = [[]]
        for d in shape:
            if d == dynamic:
                parts.append([])
            else:
                parts[-1].append(d)
        return parts

    wanted = [math.prod(part) for part in segments(list(x.shape))]
    parts = segments(result)
    if -1 in result:  # (the one static size missing, in its segment)
        number = next(i for i, part in enumerate(parts) if -1 in part)
        known = math.prod(d for d in parts[number] if d != -1)
        if known == 0 or wanted[number] % known:
            raise refuse()
        result[result.index(-1)] = wanted[number] // known
        parts = segments(result)
    if [math.prod(part) for part in parts] != wanted:
        raise refuse(WHOLE)
    return result


def infer_reshape(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    target = list(attrs["shape"])
    if not x.has_static_shape:
        return [tensor(_dynamic_reshape(x, target), x.element_type)]
    if any(d < -1 for d in target) or target.count(-1) > 1:
        raise ShapeError(f"invalid target shape {target}: sizes are >= 0, with at most one -1")
    size = math.prod(x.shape)
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape [{shape_str(x.shape)}] into {target}")
        target[target.index(-1)] = size // known
    if math.prod(target) != size:
        raise ShapeError(
            f"cannot reshape [{shape_str(x.shape)}] ({size} elements) into "
            f"[{shape_str(target)}] ({math.prod(target)} elements)"
        )
    return [tensor(target, x.element_type)]


def infer_transpose(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    perm = list(attrs["perm"])
    if sorted(perm) != list(range(x.rank)):
        raise ShapeError(f"perm {perm} is not a permutation of the {x.rank} axes")
    return [tensor([x.shape[p] for p in perm], x.element_type)]


# ----------------------------------------------------------------------------- the ops

CONSTANT = define(
    OpDef("constant", (), infer_constant, {"value": "elements"}, "a dense tensor constant")
)
ADD = define(OpDef("add", ("lhs", "rhs"), infer_binary, summary="lhs + rhs, numpy broadcasting"))
SUB = define(OpDef("sub", ("lhs", "rhs"), infer_binary, summary="lhs - rhs, numpy broadcasting"))
MUL = define(OpDef("mul", ("lhs", "rhs"), infer_binary, summary="lhs * rhs, numpy broadcasting"))
DIV = define(OpDef("div", ("lhs", "rhs"), infer_binary, summary="lhs / rhs, numpy broadcasting"))
RELU = define(OpDef("relu", ("x",), infer_unary, summary="max(x, 0)"))
MATMUL = define(
    OpDef("matmul", ("a", "b"), infer_matmul, summary="numpy matmul (batched, broadcasting)")
)
GEMM = define(
    OpDef(
        "gemm",
        ("a", "b", "c?"),
        infer_gemm,
        {"alpha": "float", "beta": "float", "transA": "int", "transB": "int"},
        "alpha * op(A) @ op(B) + beta * C, as ONNX Gemm",
    )
)
RESHAPE = define(
    OpDef("reshape", ("x",), infer_reshape, {"shape": "ints"}, "reshape; one -1 is inferred")
)
TRANSPOSE = define(
    OpDef("transpose", ("x",), infer_transpose, {"perm": "ints"}, "permute the axes")
)

ELEMENTWISE_BINARY = (ADD, SUB, MUL, DIV)
