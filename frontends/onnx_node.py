"""What the ONNX op importers share: errors, element types, constants and `NodeContext`.

An op importer is a function `NodeContext -> list[ir.Value]` registered in the `IMPORTERS`
table of a module of `frontends/onnx_ops/`; it builds dlc ops with `n.build(...)`, reads
attributes with ONNX defaults as `n.attr(name, default)` and reports problems with
`n.error(...)`, which names the node.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from mlir import ir
from onnx import helper, numpy_helper

from dlc import element_types
from dlc.dialects import ShapeError, build, ops
from dlc.frontends.common import FrontendError, dense  # noqa: F401 (the op importers' names)


class ModelValidationError(FrontendError):
    """The model is malformed: the message names the node or tensor and the problem."""

    def __init__(self, message: str):
        super().__init__(f"invalid ONNX model: {message}")


# ----------------------------------------------------------------------------- size limits

MAX_BITS = 2**63 - 1  # MLIR computes sizes and strides in int64 bits: past it, it asserts


def memory_limit() -> int:
    """The bytes one tensor may take: this machine's physical memory (1 TiB if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 40


MAX_RANK = 64  # numpy's most dimensions (numpy 2; 32 before)


def size_problem(shape: Sequence[int], itemsize: int, type_name: str) -> str | None:
    """Why a tensor of `shape` cannot exist here (`has shape ...: more than ...`), else None.

    Its bytes must fit in this machine's memory and, empty axes counted as 1, its bits in
    int64: MLIR's strides multiply the non-empty sizes, and numpy refuses such arrays too.
    """
    if len(shape) > MAX_RANK:  # (numpy's limit: such an input or output cannot be passed or
        # returned, and MLIR's maps of a rank-1000 tensor took minutes to compile)
        return (f"has rank {len(shape)}: dlc, like numpy, takes tensors of rank at most "
                f"{MAX_RANK}")
    size = math.prod(int(d) for d in shape) * itemsize
    limit = memory_limit()
    if size > limit:
        return (f"has shape {list(shape)} of {type_name}, {size / 2**30:.4g} GiB: more than this "
                f"machine's memory ({limit / 2**30:.4g} GiB)")
    span = math.prod(max(int(d), 1) for d in shape)
    if span * itemsize * 8 > MAX_BITS:
        return (f"has shape {list(shape)} of {type_name}: its non-empty axes span {span:.4g} "
                "elements, more than 64-bit size arithmetic allows (2^63 bits)")
    return None


def check_result_sizes(value: ir.Value, what: str) -> None:
    """ModelValidationError naming `what` when a result of `value`'s op is too large."""
    for result in value.owner.results:
        t = ir.RankedTensorType(result.type)
        element = t.element_type
        try:
            dtype = element_types.numpy_dtype(element)
        except TypeError:
            dtype = None
        onnx_type = next((k for k, d in ONNX_DTYPES.items() if d == dtype), None)
        itemsize = max(1, (getattr(element, "width", 8) + 7) // 8)
        name = onnx.TensorProto.DataType.Name(onnx_type).lower() if onnx_type else str(element)
        # (a dynamic size is checked at each call, by the runtime: counted as 1 here)
        problem = size_problem([1 if ir.ShapedType.is_dynamic_size(d) else d for d in t.shape],
                               itemsize, name)
        if problem is not None:
            raise ModelValidationError(f"{what} computes a result that {problem}")


class NeedsConstantError(FrontendError):
    """A node needs the value of `input_name` at compile time (a shape, axes, pads...)."""

    def __init__(self, input_name: str, message: str):
        super().__init__(message)
        self.input_name = input_name


# the ONNX element types dlc takes, as numpy dtypes (their MLIR types: dlc.element_types)
ONNX_DTYPES: dict[int, np.dtype] = {code: np.dtype(dtype) for code, dtype in (
    (onnx.TensorProto.FLOAT, np.float32), (onnx.TensorProto.DOUBLE, np.float64),
    (onnx.TensorProto.FLOAT16, np.float16), (onnx.TensorProto.INT8, np.int8),
    (onnx.TensorProto.INT16, np.int16), (onnx.TensorProto.INT32, np.int32),
    (onnx.TensorProto.INT64, np.int64), (onnx.TensorProto.UINT8, np.uint8),
    (onnx.TensorProto.UINT16, np.uint16), (onnx.TensorProto.UINT32, np.uint32),
    (onnx.TensorProto.UINT64, np.uint64), (onnx.TensorProto.BOOL, np.bool_),
)}
SUPPORTED_NUMPY_DTYPES = element_types.NUMPY_DTYPES


def element_type(onnx_type: int, what: str) -> ir.Type:
    if onnx_type not in ONNX_DTYPES:
        name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in \
            onnx.TensorProto.DataType.values() else str(onnx_type)
        supported = ", ".join(onnx.TensorProto.DataType.Name(t) for t in ONNX_DTYPES)
        raise FrontendError(f"{what} has element type {name}, which dlc does not support yet "
                            f"(supported: {supported})")
    return element_types.mlir_type(ONNX_DTYPES[onnx_type])


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

    def check_shape(self, shape: Sequence[int], dtype: np.dtype) -> None:
        """ModelValidationError when the node would compute a `dtype` tensor of `shape` too
        large to exist (called before numpy computes one: a ConstantOfShape, a Range)."""
        dtype = np.dtype(dtype)
        name = onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(dtype)).lower()
        problem = size_problem(shape, dtype.itemsize, name)
        if problem is not None:
            raise ModelValidationError(f"node '{self.name}' ({self.node.op_type}) computes a "
                                       f"result that {problem}")

    def error(self, message: str) -> FrontendError:
        return FrontendError(f"node '{self.name}' ({self.node.op_type}): {message}")

    def build(self, op: ops.OpDef, operands: Sequence[ir.Value], attrs: dict | None = None):
        try:
            value = build(op, operands, attrs, loc=self.location)
        except ShapeError as error:
            raise self.error(str(error)) from None
        # computed shapes are checked like declared ones (an Expand to [2^32, 2^32] would
        # otherwise abort in MLIR or numpy, far from the node)
        check_result_sizes(value, f"node '{self.name}' ({self.node.op_type})")
        return value


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


