"""ONNX → dlc dialect importer.

Contract: takes an `onnx.ModelProto` (or a path to one) and builds, in a given Context, a
module holding `func.func @main` whose arguments are the graph inputs (initializers excluded),
whose results are the graph outputs, and whose body is one dlc op per ONNX node, located at
`loc("<node name>")`. Initializers become `dlc.constant`. Import is 1:1 and does no
optimization (that is the passes' job); ONNX-level conveniences that need no new op (Identity,
Flatten as a reshape) are resolved here. Every problem is a `FrontendError` that names the
node and says what to change; unsupported ops are all listed in one error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from mlir import ir
from mlir.dialects import func
from onnx import helper, numpy_helper

from dlc.dialects import ShapeError, build, ops
from dlc.errors import DlcError


class FrontendError(DlcError, ValueError):
    """The model cannot be imported: malformed, unsupported op or dtype, unknown shapes."""


class UnsupportedOpsError(FrontendError):
    """The model uses ops outside dlc's supported set (all of them are listed)."""

    def __init__(self, unsupported: Mapping[str, list[str]]):
        self.unsupported = dict(unsupported)
        listed = "; ".join(
            f"{op_type} (node{'s' if len(nodes) > 1 else ''} {', '.join(repr(n) for n in nodes)})"
            for op_type, nodes in self.unsupported.items()
        )
        super().__init__(
            f"unsupported ONNX op{'s' if len(self.unsupported) > 1 else ''}: {listed}. "
            f"Supported ops: {', '.join(sorted(IMPORTERS))}"
        )


ONNX_ELEMENT_TYPES: dict[int, Callable[[], ir.Type]] = {
    onnx.TensorProto.FLOAT: ir.F32Type.get,
    onnx.TensorProto.DOUBLE: ir.F64Type.get,
    onnx.TensorProto.FLOAT16: ir.F16Type.get,
    onnx.TensorProto.INT8: lambda: ir.IntegerType.get_signless(8),
    onnx.TensorProto.INT16: lambda: ir.IntegerType.get_signless(16),
    onnx.TensorProto.INT32: lambda: ir.IntegerType.get_signless(32),
    onnx.TensorProto.INT64: lambda: ir.IntegerType.get_signless(64),
    # no BOOL: lowering a memref of i1 to LLVM aborts the process (an assertion in MLIR)
}
SUPPORTED_NUMPY_DTYPES = {np.dtype(t) for t in
                          (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32,
                           np.int64)}


def element_type(onnx_type: int, what: str) -> ir.Type:
    if onnx_type not in ONNX_ELEMENT_TYPES:
        name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in \
            onnx.TensorProto.DataType.values() else str(onnx_type)
        supported = ", ".join(onnx.TensorProto.DataType.Name(t) for t in ONNX_ELEMENT_TYPES)
        raise FrontendError(f"{what} has element type {name}, which dlc does not support yet "
                            f"(supported: {supported})")
    return ONNX_ELEMENT_TYPES[onnx_type]()


def load_model(model: str | Path | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """The ModelProto of `model` (a path, serialized bytes or a ModelProto), checked."""
    if isinstance(model, onnx.ModelProto):
        proto = model
    elif isinstance(model, bytes):
        proto = _parse(model, "the given bytes")
    elif isinstance(model, str | Path):
        path = Path(model)
        if not path.is_file():
            raise FrontendError(f"no ONNX model at '{path}'")
        proto = _parse(path.read_bytes(), f"'{path}'")
    else:
        raise FrontendError(
            f"expected an ONNX ModelProto or a path, got {type(model).__name__}"
        )
    try:
        onnx.checker.check_model(proto)
    except (onnx.checker.ValidationError, ValueError) as error:
        raise FrontendError(f"invalid ONNX model: {str(error).strip()}") from None
    return proto


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as error:  # protobuf raises its own DecodeError
        raise FrontendError(f"{where} is not a valid ONNX model ({error})") from None
    if not proto.HasField("graph"):
        raise FrontendError(f"{where} is not an ONNX model: it has no graph")
    return proto


@dataclass
class NodeContext:
    """What an op importer sees of one node: its values, attributes and constant inputs."""

    node: onnx.NodeProto
    name: str  # the node's name, or `<op type>_<index>` for an unnamed node
    inputs: list[ir.Value | None]
    attributes: dict[str, Any]
    opset: int
    constants: Mapping[str, np.ndarray]
    location: ir.Location

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attributes.get(name, default)

    def constant_input(self, index: int, what: str) -> np.ndarray:
        names = self.node.input
        if index >= len(names) or not names[index]:
            raise self.error(f"needs its {what} input")
        if names[index] not in self.constants:
            raise self.error(
                f"needs its {what} input '{names[index]}' to be a constant (an initializer or "
                "a Constant node); computed values are not supported yet"
            )
        return self.constants[names[index]]

    def error(self, message: str) -> FrontendError:
        return FrontendError(f"node '{self.name}' ({self.node.op_type}): {message}")

    def build(self, op: ops.OpDef, operands: Sequence[ir.Value], attrs: dict | None = None):
        try:
            return build(op, operands, attrs, loc=self.location)
        except ShapeError as error:
            raise self.error(str(error)) from None


Importer = Callable[[NodeContext], list[ir.Value]]


def _binary(op: ops.OpDef) -> Importer:
    def import_binary(n: NodeContext) -> list[ir.Value]:
        if n.opset < 7 and n.attr("broadcast"):
            raise n.error("legacy broadcast attribute (opset < 7) is not supported")
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
    target = [math.prod(shape[:axis]), math.prod(shape[axis:])]
    return [n.build(ops.RESHAPE, [x], {"shape": target})]


def import_transpose(n: NodeContext) -> list[ir.Value]:
    x = n.inputs[0]
    perm = n.attr("perm", list(reversed(range(x.type.rank))))
    return [n.build(ops.TRANSPOSE, [x], {"perm": list(perm)})]


def import_constant(n: NodeContext) -> list[ir.Value]:
    return [n.build(ops.CONSTANT, [], {"value": dense(constant_value(n), n)})]


def constant_value(n: NodeContext) -> np.ndarray:
    """The numpy value of a Constant node, whichever attribute carries it."""
    node = n.node
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if attribute.name == "value":
            return numpy_helper.to_array(value)
        if attribute.name in ("value_float", "value_floats"):
            return np.asarray(value, dtype=np.float32)
        if attribute.name in ("value_int", "value_ints"):
            return np.asarray(value, dtype=np.int64)
    raise n.error("has no value attribute dlc supports (value, value_float(s), value_int(s))")


def dense(array: np.ndarray, n: NodeContext | None = None) -> ir.DenseElementsAttr:
    if array.dtype not in SUPPORTED_NUMPY_DTYPES:
        message = f"constant of dtype {array.dtype} is not supported yet"
        raise n.error(message) if n else FrontendError(message)
    array = np.asarray(array, order="C")  # (np.ascontiguousarray makes rank 0 into [1])
    return ir.DenseElementsAttr.get(array)


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


@dataclass
class ImportedModel:
    module: ir.Module
    input_names: list[str]
    output_names: list[str]
    opset: int
    constants: dict[str, np.ndarray] = field(default_factory=dict)


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 1


def check_supported(graph: onnx.GraphProto) -> None:
    unsupported: dict[str, list[str]] = {}
    for index, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in IMPORTERS:
            op_type = node.op_type if node.domain in ("", "ai.onnx") else \
                f"{node.domain}.{node.op_type}"
            unsupported.setdefault(op_type, []).append(node.name or f"#{index}")
    if unsupported:
        raise UnsupportedOpsError(unsupported)


def input_type(value: onnx.ValueInfoProto, shapes: Mapping[str, Sequence[int]]) -> ir.Type:
    what = f"graph input '{value.name}'"
    if not value.type.HasField("tensor_type"):
        raise FrontendError(f"{what} is not a tensor; dlc supports tensor inputs only")
    tensor_type = value.type.tensor_type
    element = element_type(tensor_type.elem_type, what)
    if value.name in shapes:
        shape = [int(d) for d in shapes[value.name]]
        declared = tensor_type.shape.dim if tensor_type.HasField("shape") else None
        if declared is not None and len(declared) != len(shape):
            raise FrontendError(f"{what} has rank {len(declared)}, but input_shapes gives {shape}")
        if any(d < 0 for d in shape):
            raise FrontendError(f"input_shapes gives {what} the shape {shape}; sizes must be >= 0")
        return ir.RankedTensorType.get(shape, element)
    if not tensor_type.HasField("shape"):
        raise FrontendError(f"{what} has no shape; pass input_shapes={{'{value.name}': [...]}}")
    shape = []
    for axis, dim in enumerate(tensor_type.shape.dim):
        if not dim.HasField("dim_value"):
            symbol = dim.dim_param or "?"
            raise FrontendError(
                f"{what} has a symbolic size '{symbol}' at axis {axis}; dlc compiles static "
                f"shapes: pass input_shapes={{'{value.name}': [...]}}"
            )
        shape.append(dim.dim_value)
    return ir.RankedTensorType.get(shape, element)


def import_model(
    model: str | Path | bytes | onnx.ModelProto,
    context: ir.Context,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ImportedModel:
    """Import `model` into a new module of `context` (which must have the dlc dialect)."""
    proto = load_model(model)
    graph = proto.graph
    opset = default_opset(proto)
    check_supported(graph)
    shapes = dict(input_shapes or {})
    initializers = {t.name: t for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in initializers]
    unknown = sorted(set(shapes) - {v.name for v in inputs})
    if unknown:
        raise FrontendError(f"input_shapes names unknown inputs {unknown}; inputs are "
                            f"{[v.name for v in inputs]}")
    with context, ir.Location.name(graph.name or "main"):
        module = ir.Module.create()
        arg_types = [input_type(v, shapes) for v in inputs]
        function = func.FuncOp("main", (arg_types, []), ip=ir.InsertionPoint(module.body))
        block = function.add_entry_block()
        values: dict[str, ir.Value] = dict(zip((v.name for v in inputs), block.arguments))
        constants: dict[str, np.ndarray] = {}
        with ir.InsertionPoint(block):
            for name, tensor in initializers.items():
                array = numpy_helper.to_array(tensor)
                constants[name] = array
                location = ir.Location.name(name)
                try:
                    values[name] = build(ops.CONSTANT, [], {"value": dense(array)}, loc=location)
                except FrontendError as error:
                    raise FrontendError(f"initializer '{name}': {error}") from None
            for index, node in enumerate(graph.node):
                _import_node(node, index, opset, values, constants)
            missing = [o.name for o in graph.output if o.name not in values]
            if missing:
                raise FrontendError(f"graph outputs {missing} are produced by no node")
            results = [values[o.name] for o in graph.output]
            func.ReturnOp(results)
        function.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [r.type for r in results])
        )
    return ImportedModel(module, [v.name for v in inputs], [o.name for o in graph.output],
                         opset, constants)


def _import_node(node: onnx.NodeProto, index: int, opset: int, values: dict[str, ir.Value],
                 constants: dict[str, np.ndarray]) -> None:
    node_name = node.name or f"{node.op_type}_{index}"  # (the caller's model is not changed)
    operands: list[ir.Value | None] = []
    for name in node.input:
        if not name:
            operands.append(None)
            continue
        if name not in values:
            raise FrontendError(f"node '{node_name}' ({node.op_type}): input '{name}' is "
                                "produced by no earlier node, initializer or graph input")
        operands.append(values[name])
    context = NodeContext(
        node=node,
        name=node_name,
        inputs=operands,
        attributes={a.name: helper.get_attribute_value(a) for a in node.attribute},
        opset=opset,
        constants=constants,
        location=ir.Location.name(node_name),
    )
    results = IMPORTERS[node.op_type](context)
    for name, value in zip(node.output, results):
        if name:
            values[name] = value
    if node.op_type == "Constant" and node.output:
        constants[node.output[0]] = constant_value(context)
