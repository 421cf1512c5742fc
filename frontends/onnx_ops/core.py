"""Importers of the foundation op set: arithmetic, Relu, MatMul, Gemm and shape ops."""

from __future__ import annotations

import math

from mlir import ir

from dlc.dialects import ops
from dlc.frontends.onnx_node import Importer, NodeContext, constant_value, dense


def check_same_shapes(n: NodeContext, since: int) -> None:
    """Before opset `since` (7 for the binary ops, 8 for Max/Min/Sum/Mean) an elementwise op
    does not broadcast: its inputs must have one shape (onnxruntime and onnx's shape inference
    refuse others); the legacy `broadcast` attribute of opsets < 7 is not supported."""
    if n.opset >= since:
        return
    if n.attr("broadcast"):
        raise n.error(f"legacy broadcast attribute (opset < {since}) is not supported")
    shapes = [list(v.type.shape) for v in n.inputs if v is not None]
    if any(shape != shapes[0] for shape in shapes):
        raise n.error(f"inputs of shapes {shapes} differ, but {n.node.op_type} of opset "
                      f"{n.opset} does not broadcast (numpy broadcasting came with opset "
                      f"{since}): give the inputs one shape or update the model's opset")


def _binary(op: ops.OpDef) -> Importer:
    def import_binary(n: NodeContext) -> list[ir.Value]:
        check_same_shapes(n, 7)
        return [n.build(op, n.inputs[:2])]

    return import_binary


def import_gemm(n: NodeContext) -> list[ir.Value]:
    attrs = {"alpha": n.attr("alpha", 1.0), "beta": n.attr("beta", 1.0),
             "transA": n.attr("transA", 0), "transB": n.attr("transB", 0)}
    operands = [v for v in n.inputs[:3] if v is not None]
    return [n.build(ops.GEMM, operands, attrs)]


def import_reshape(n: NodeContext) -> list[ir.Value]:
    x = n.inputs[0]
    if n.opset < 5:
        shape = list(n.attr("shape", []))
    else:
        shape = [int(d) for d in n.constant_input(1, "shape").reshape(-1)]
    if not n.attr("allowzero", 0):  # 0 copies the input's size at that axis
        for axis, size in enumerate(shape):
            if size == 0:
                if axis >= x.type.rank:
                    raise n.error(f"shape {shape} copies axis {axis} of a rank-{x.type.rank} input")
                shape[axis] = x.type.shape[axis]
    return [n.build(ops.RESHAPE, [x], {"shape": shape})]


def import_flatten(n: NodeContext) -> list[ir.Value]:
    x = n.inputs[0]
    rank = x.type.rank
    axis = n.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise n.error(f"axis {axis} is out of range for a rank-{rank} input")
    axis = axis + rank if axis < 0 else axis
    shape = list(x.type.shape)
    target = [_product(n, shape[:axis]), _product(n, shape[axis:])]
    return [n.build(ops.RESHAPE, [x], {"shape": target})]


def _product(n: NodeContext, sizes: list[int]) -> int:
    """The product of `sizes`; a dynamic size (`?`) times sizes of 1 is itself, times others
    not one size: an error naming the node."""
    dynamic = [d for d in sizes if ir.ShapedType.is_dynamic_size(d)]
    if not dynamic:
        return math.prod(sizes)
    if len(dynamic) == 1 and all(d == 1 for d in sizes if d not in dynamic):
        return dynamic[0]
    raise n.error(f"flattens a dynamic size (?) with other sizes {sizes}, which a compile "
                  "for every size does not take yet")


def import_transpose(n: NodeContext) -> list[ir.Value]:
    x = n.inputs[0]
    perm = n.attr("perm", list(reversed(range(x.type.rank))))
    return [n.build(ops.TRANSPOSE, [x], {"perm": list(perm)})]


def import_constant(n: NodeContext) -> list[ir.Value]:
    return [n.build(ops.CONSTANT, [], {"value": dense(constant_value(n), n)})]


def import_identity(n: NodeContext) -> list[ir.Value]:
    return [n.inputs[0]]


# The dispatch table: ONNX op type -> importer. Keys are the supported ONNX ops.
IMPORTERS: dict[str, Importer] = {
    "Add": _binary(ops.ADD),
    "Sub": _binary(ops.SUB),
    "Mul": _binary(ops.MUL),
    "Div": _binary(ops.DIV),
    "Relu": lambda n: [n.build(ops.RELU, n.inputs[:1])],
    "MatMul": lambda n: [n.build(ops.MATMUL, n.inputs[:2])],
    "Gemm": import_gemm,
    "Reshape": import_reshape,
    "Flatten": import_flatten,
    "Transpose": import_transpose,
    "Constant": import_constant,
    "Identity": import_identity,
}


