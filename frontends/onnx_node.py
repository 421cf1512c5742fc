"""What the ONNX op importers share: errors, element types, constants and `NodeContext`.

An op importer is a function `NodeContext -> list[ir.Value]` registered in the `IMPORTERS`
table of a module of `frontends/onnx_ops/`; it builds dlc ops with `n.build(...)`, reads
attributes with ONNX defaults as `n.attr(name, default)` and reports problems with
`n.error(...)`, which names the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from mlir import ir
from onnx import helper, numpy_helper

from dlc.dialects import ShapeError, build, ops
from dlc.errors import DlcError


def supported_op_types() -> list[str]:
    from dlc.frontends.onnx_ops import importers

    return sorted(importers())


class FrontendError(DlcError, ValueError):
    """The model cannot be imported: malformed, unsupported op or dtype, unknown shapes."""


class NeedsConstantError(FrontendError):
    """A node needs the value of `input_name` at compile time (a shape, axes, pads...)."""

    def __init__(self, input_name: str, message: str):
        super().__init__(message)
        self.input_name = input_name


def _nodes(names: list[str], shown: int = 5) -> str:
    listed = ", ".join(repr(n) for n in names[:shown])
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"node{'s' if len(names) > 1 else ''} {listed}{more}"


class UnsupportedOpsError(FrontendError):
    """The model uses ops outside dlc's supported set (all of them are listed)."""

    def __init__(self, unsupported: Mapping[str, list[str]]):
        self.unsupported = dict(unsupported)
        listed = "; ".join(f"{op_type} ({_nodes(nodes)})"
                           for op_type, nodes in self.unsupported.items())
        super().__init__(
            f"unsupported ONNX op{'s' if len(self.unsupported) > 1 else ''}: {listed}. "
            f"Supported ops: {', '.join(sorted(supported_op_types()))}"
        )


ONNX_ELEMENT_TYPES: dict[int, Callable[[], ir.Type]] = {
    onnx.TensorProto.FLOAT: ir.F32Type.get,
    onnx.TensorProto.DOUBLE: ir.F64Type.get,
    onnx.TensorProto.FLOAT16: ir.F16Type.get,
    onnx.TensorProto.INT8: lambda: ir.IntegerType.get_signless(8),
    onnx.TensorProto.INT16: lambda: ir.IntegerType.get_signless(16),
    onnx.TensorProto.INT32: lambda: ir.IntegerType.get_signless(32),
    onnx.TensorProto.INT64: lambda: ir.IntegerType.get_signless(64),
    onnx.TensorProto.UINT8: lambda: ir.IntegerType.get_unsigned(8),
    onnx.TensorProto.UINT16: lambda: ir.IntegerType.get_unsigned(16),
    onnx.TensorProto.UINT32: lambda: ir.IntegerType.get_unsigned(32),
    onnx.TensorProto.UINT64: lambda: ir.IntegerType.get_unsigned(64),
    # bool is i1 in the dlc dialect; dlc-to-linalg stores it as i8 (memrefs of i1 cannot
    # be lowered to LLVM)
    onnx.TensorProto.BOOL: lambda: ir.IntegerType.get_signless(1),
}
SUPPORTED_NUMPY_DTYPES = {np.dtype(t) for t in
                          (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32,
                           np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)}


def element_type(onnx_type: int, what: str) -> ir.Type:
    if onnx_type not in ONNX_ELEMENT_TYPES:
        name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in \
            onnx.TensorProto.DataType.values() else str(onnx_type)
        supported = ", ".join(onnx.TensorProto.DataType.Name(t) for t in ONNX_ELEMENT_TYPES)
        raise FrontendError(f"{what} has element type {name}, which dlc does not support yet "
                            f"(supported: {supported})")
    return ONNX_ELEMENT_TYPES[onnx_type]()


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
    scope: Mapping[str, ir.Value] = field(default_factory=dict)  # the values visible here

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attributes.get(name, default)

    def constant_input(self, index: int, what: str) -> np.ndarray:
        names = self.node.input
        if index >= len(names) or not names[index]:
            raise self.error(f"needs its {what} input")
        if names[index] not in self.constants:
            raise NeedsConstantError(
                names[index],
                f"node '{self.name}' ({self.node.op_type}): needs its {what} input "
                f"'{names[index]}' to be a constant (an initializer or a Constant node); "
                "computed values are not supported yet (for a graph input, pass its value: "
                f"dlc.compile(model, constants={{'{names[index]}': ...}}))",
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
    if array.dtype.kind == "u":
        unsigned = ir.IntegerType.get_unsigned(8 * array.dtype.itemsize)
        return ir.DenseElementsAttr.get(array, type=unsigned)
    return ir.DenseElementsAttr.get(array)


