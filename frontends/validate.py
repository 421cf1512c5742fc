"""Validation of an ONNX model before import: every structural problem is one specific error.

Contract: `validate_model(proto, base_dir)` raises `ModelValidationError` (a `FrontendError`)
for the first problem it finds, with a message `invalid ONNX model: <what> <problem>` naming the
node (`node 'name' (OpType)`) or tensor. It checks, in this order:
- the IR version and the opset imports (no version newer than the installed `onnx` knows, every
  node's domain imported);
- names: a graph without outputs, duplicate graph inputs, initializers, graph outputs, and
  values produced twice;
- the graph's order: inputs that nothing produces, cycles, nodes out of topological order;
- initializers: negative sizes, data that does not match the declared shape (inline or external;
  with `read_sizes=False`, not the size of the raw data of those `read_raw` reads: the importer
  reads their bytes with it, checking it there);
- declared shapes (graph inputs, outputs, value_info, initializers) whose size exceeds this
  machine's memory, or whose non-empty axes overflow 64-bit size arithmetic (`size_problem`
  of `onnx_node`; the importer checks the shapes nodes compute with the same rule);
- element types: inputs bound to one type variable of the op's schema must agree and be one of
  the types the schema of the model's opset allows (as onnxruntime; Max on int32 needs opset
  12; the few extensions dlc takes are listed in `_EXTRA_TYPES`), fixed-type inputs must have that type, and a declared type (graph output, value_info)
  must be the one its producer gives.
`load_external_data(proto, base_dir)` checks external-data tensors (location inside the model's
folder: no absolute path, no `..`, no symlink out; the file exists and holds the bytes) and
moves their bytes into the proto. What the checker (`onnx.checker`) verifies after this module
(attributes, input counts) and what dlc cannot import (ops, dtypes) are reported elsewhere.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import helper
from onnx.defs import OpSchema

from dlc.frontends.onnx_node import ModelValidationError, memory_limit, size_problem

__all__ = [
    "ModelValidationError", "check_tensor_size", "load_external_data", "memory_limit", "read_raw",
    "reads_raw", "validate_model",
]

DEFAULT_DOMAINS = ("", "ai.onnx")
_VARIADIC = OpSchema.FormalParameterOption.Variadic
_OPTIONAL = OpSchema.FormalParameterOption.Optional
_PACKED_4BIT = {onnx.TensorProto.INT4, onnx.TensorProto.UINT4}
if hasattr(onnx.TensorProto, "FLOAT4E2M1"):
    _PACKED_4BIT.add(onnx.TensorProto.FLOAT4E2M1)


def _node(node: onnx.NodeProto, index: int) -> str:
    return f"node '{node.name or f'{node.op_type}_{index}'}' ({node.op_type})"


def _type_name(elem_type: int) -> str:
    if elem_type in onnx.TensorProto.DataType.values():
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    return f"<unknown type {elem_type}>"


# ----------------------------------------------------------------------------- entry points


def validate_model(proto: onnx.ModelProto, read_sizes: bool = True) -> None:
    """Raise ModelValidationError for the first structural problem of `proto`;
    `read_sizes=False` leaves the size of the initializers that `reads_raw` to `read_raw`."""
    check_text(proto)
    check_versions(proto)
    graph = proto.graph
    check_names(graph)
    check_attributes(graph)
    check_order(graph)
    check_initializers(graph, read_sizes)
    check_sizes(graph)
    check_types(proto)


def load_external_data(proto: onnx.ModelProto, base_dir: Path | None) -> None:
    """Check every external-data initializer of `proto` and load its bytes into the proto."""
    for tensor in proto.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        data = _read_external(tensor, base_dir)
        tensor.raw_data = data
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


# ----------------------------------------------------------------------------- text


def check_text(message) -> None:
    """Every string field of `message` (names, op types, attributes) is valid UTF-8: protobuf
    parses ONNX's proto2 strings without checking and hands undecodable ones back as bytes."""
    path = _undecodable(message)
    if path is not None:
        *where, (field, value) = path
        raise ModelValidationError(
            f"{', '.join(['the model', *where])}: field '{field}' holds {value[:40]!r}, which "
            "is not UTF-8 text; the file is corrupt")


def _undecodable(message) -> list | None:
    """The path to the first undecodable string under `message` (its last entry the field
    and its bytes), or None."""
    for field in message.DESCRIPTOR.fields:
        if field.type == field.TYPE_STRING:
            value = getattr(message, field.name)
            for item in (value if field.is_repeated else [value]):
                if isinstance(item, bytes):
                    return [(field.name, item)]
        elif field.type == field.TYPE_MESSAGE and not field.message_type.GetOptions().map_entry:
            if field.is_repeated:
                children = getattr(message, field.name)
            elif message.HasField(field.name):
                children = [getattr(message, field.name)]
            else:
                continue
            for position, child in enumerate(children):
                path = _undecodable(child)
                if path is not None:
                    name = getattr(child, "name", "")
                    label = f"'{name}'" if isinstance(name, str) and name else f"#{position}"
                    op_type = getattr(child, "op_type", "")
                    if isinstance(op_type, str) and op_type:
                        label += f" ({op_type})"
                    return [f"{field.name} {label}", *path]
    return None


# ----------------------------------------------------------------------------- versions


def check_versions(proto: onnx.ModelProto) -> None:
    if proto.ir_version > onnx.IR_VERSION:
        raise ModelValidationError(
            f"the model's IR version {proto.ir_version} is newer than the newest this "
            f"installation of onnx reads ({onnx.IR_VERSION})")
    newest = onnx.defs.onnx_opset_version()
    imported = {}
    for entry in proto.opset_import:
        domain = entry.domain or ""
        if domain in DEFAULT_DOMAINS and entry.version > newest:
            raise ModelValidationError(
                f"the model imports opset {entry.version} of the default ONNX domain; dlc "
                f"supports opsets up to {newest}")
        if entry.version < 1:
            raise ModelValidationError(
                f"the model imports version {entry.version} of domain '{domain}'; "
                "versions start at 1")
        imported["" if domain == "ai.onnx" else domain] = entry.version
    for index, node in enumerate(proto.graph.node):
        domain = "" if node.domain == "ai.onnx" else node.domain
        if domain not in imported:
            raise ModelValidationError(
                f"{_node(node, index)} is in domain '{node.domain}', which the model's "
                f"opset_import does not list (it lists {sorted(imported)})")


# ----------------------------------------------------------------------------- names and order


def _first_duplicate(names: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def check_names(graph: onnx.GraphProto) -> None:
    if not graph.output:  # (onnxruntime: "At least one output should be requested")
        raise ModelValidationError("the graph has no outputs: a model computes nothing unless "
                                   "it declares at least one graph output")
    for what, values in (("graph input", graph.input), ("graph output", graph.output),
                         ("initializer", graph.initializer)):
        for position, value in enumerate(values):
            if not value.name:
                raise ModelValidationError(
                    f"{what} #{position} has an empty name; every {what} needs one")
    for what, names in (("graph input", [v.name for v in graph.input]),
                        ("initializer", [t.name for t in graph.initializer]),
                        ("graph output", [v.name for v in graph.output])):
        duplicate = _first_duplicate(names)
        if duplicate is not None:
            raise ModelValidationError(f"{what} '{duplicate}' is declared twice")
    for value in graph.output:
        if value.type.HasField("tensor_type") and not value.type.tensor_type.elem_type:
            raise ModelValidationError(
                f"graph output '{value.name}' is a tensor of no element type; declare its "
                "type (or leave the output's type out)")
    for tensor in graph.sparse_initializer:
        raise ModelValidationError(
            f"sparse initializer '{tensor.values.name}': dlc does not support sparse tensors; "
            "store it as a dense initializer")
    producers = {v.name: "a graph input" for v in graph.input}
    producers |= {t.name: "an initializer" for t in graph.initializer}
    for index, node in enumerate(graph.node):
        for name in node.output:
            if not name:
                continue
            if name in producers:
                raise ModelValidationError(
                    f"{_node(node, index)}: output '{name}' is already produced by "
                    f"{producers[name]}; every value must have one producer")
            producers[name] = _node(node, index)


# attributes that are booleans: ONNX stores them as ints, and runtimes differ on other values
# (onnxruntime reads keepdims=2 as false but transA=2 as true), so dlc takes only 0 and 1
FLAGS = frozenset({
    "keepdims", "noop_with_empty_axes", "select_last_index", "transA", "transB", "ceil_mode",
    "count_include_pad", "exclusive", "reverse", "center_point_box", "sorted", "largest",
    "is_case_sensitive", "allowzero", "input_forget", "upper", "training_mode", "new_axis",
    "align_corners", "exclude_outside", "is_causal", "interleaved", "layout",
    "detect_negative", "detect_positive", "saturate", "antialias",
})


def check_attributes(graph: onnx.GraphProto) -> None:
    """Boolean attributes are 0 or 1 and string attributes are UTF-8 text, in the graph and
    in its bodies; a Constant has one value attribute and a ConstantOfShape's value one
    element."""
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            values = [a.name for a in node.attribute if a.name.startswith(("value", "sparse"))]
            if len(values) > 1:  # (dlc took the first it knew, onnxruntime another)
                raise ModelValidationError(
                    f"{_node(node, index)}: has {len(values)} value attributes {values}; a "
                    "Constant has exactly one")
        for attribute in node.attribute:
            for text in [attribute.s, *attribute.strings]:
                try:
                    text.decode()
                except UnicodeDecodeError:
                    raise ModelValidationError(
                        f"{_node(node, index)}: attribute '{attribute.name}' holds "
                        f"{text[:40]!r}, which is not UTF-8 text; the file is corrupt") from None
            if attribute.name in FLAGS and attribute.type == onnx.AttributeProto.INT \
                    and attribute.i not in (0, 1):
                raise ModelValidationError(
                    f"{_node(node, index)}: attribute '{attribute.name}' is {attribute.i}; it "
                    "is a flag and must be 0 or 1")
            tensors = ([attribute.t] if attribute.HasField("t") else []) + \
                list(attribute.tensors)
            for sparse in ([attribute.sparse_tensor] if attribute.HasField("sparse_tensor")
                           else []) + list(attribute.sparse_tensors):
                tensors += [sparse.values, sparse.indices]
            for tensor in tensors:
                _check_whole(tensor, f"{_node(node, index)}: attribute '{attribute.name}'")
            if node.op_type == "ConstantOfShape" and node.domain in ("", "ai.onnx") and \
                    attribute.name == "value" and attribute.HasField("t") and \
                    _elements(attribute.t.dims) != 1:
                # (its first value filled the result; onnxruntime refuses such a node)
                raise ModelValidationError(
                    f"{_node(node, index)}: attribute 'value' must hold one element, got shape "
                    f"{list(attribute.t.dims)}")
            for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                for tensor in body.initializer:
                    _check_whole(tensor, f"{_node(node, index)}: initializer '{tensor.name}' "
                                         f"of its body '{body.name}'")
                check_attributes(body)


def check_order(graph: onnx.GraphProto) -> None:
    """Every input is produced, there is no cycle, and nodes come in topological order."""
    available = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    producer = {name: i for i, n in enumerate(graph.node) for name in n.output if name}
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and name not in available and name not in producer:
                raise ModelValidationError(
                    f"{_node(node, index)}: input '{name}' is produced by no node, "
                    "initializer or graph input")
    cycle = _find_cycle(graph, producer, available)
    if cycle:
        path = " -> ".join(_node(graph.node[i], i) for i in [*cycle, cycle[0]])
        raise ModelValidationError(f"the graph has a cycle: {path}")
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and name not in available:
                raise ModelValidationError(
                    f"{_node(node, index)} uses '{name}' before "
                    f"{_node(graph.node[producer[name]], producer[name])} produces it; ONNX "
                    "requires nodes in topological order")
        available.update(name for name in node.output if name)
    for output in graph.output:
        if output.name not in available:
            raise ModelValidationError(
                f"graph output '{output.name}' is produced by no node, initializer or graph input")


def _find_cycle(graph: onnx.GraphProto, producer: dict[str, int],
                available: set[str]) -> list[int]:
    """The node indices of one cycle (in data-flow order), or [] when the graph is acyclic."""
    successors: list[list[int]] = [[] for _ in graph.node]
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and name not in available:
                successors[producer[name]].append(index)
    state = [0] * len(graph.node)  # 0 unvisited, 1 on the stack, 2 done
    for root in range(len(graph.node)):
        if state[root]:
            continue
        stack, path = [(root, iter(successors[root]))], [root]
        state[root] = 1
        while stack:
            current, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[current] = 2
                stack.pop()
                path.pop()
            elif state[child] == 1:
                return path[path.index(child):]
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(successors[child])))
                path.append(child)
    return []


# ----------------------------------------------------------------------------- data and sizes


def _elements(dims: Sequence[int]) -> int:
    return math.prod(int(d) for d in dims)


def _expected_bytes(tensor: onnx.TensorProto) -> int | None:
    count = _elements(tensor.dims)
    if tensor.data_type in _PACKED_4BIT:
        return (count + 1) // 2
    if tensor.data_type == onnx.TensorProto.STRING:
        return None
    try:
        return count * helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError, TypeError):
        return None


def _inline_count(tensor: onnx.TensorProto) -> tuple[str, int, int] | None:
    """(field, values found, values expected) of a tensor stored in a typed field."""
    try:
        field = helper.tensor_dtype_to_field(tensor.data_type)
    except (KeyError, ValueError, TypeError):
        return None
    count = _elements(tensor.dims)
    if tensor.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
        count *= 2
    if tensor.data_type in _PACKED_4BIT:
        count = (count + 1) // 2
    return field, len(getattr(tensor, field)), count


def check_initializers(graph: onnx.GraphProto, read_sizes: bool = True) -> None:
    for tensor in graph.initializer:
        what = f"initializer '{tensor.name}'"
        if any(d < 0 for d in tensor.dims):
            raise ModelValidationError(f"{what} has a negative size in its shape "
                                       f"{list(tensor.dims)}")
        if tensor.data_type not in onnx.TensorProto.DataType.values() or \
                tensor.data_type == onnx.TensorProto.UNDEFINED:
            raise ModelValidationError(f"{what} has no valid data type ({tensor.data_type})")
        _check_whole(tensor, what)
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            continue  # checked when its bytes are loaded
        if not read_sizes and reads_raw(tensor):
            continue  # checked by read_raw
        _check_inline_data(tensor, what)


def _check_whole(tensor: onnx.TensorProto, what: str) -> None:
    # (onnx's numpy_helper.to_array raises a bare "Currently not supporting loading segments")
    if tensor.HasField("segment"):
        raise ModelValidationError(
            f"{what} is a segment [{tensor.segment.begin}, {tensor.segment.end}) of a larger "
            "tensor, which dlc does not support: store the whole tensor")


def _check_inline_data(tensor: onnx.TensorProto, what: str) -> None:
    shape = list(tensor.dims)
    if tensor.HasField("raw_data"):
        _check_raw_size(tensor, len(tensor.raw_data), what)
        return
    counted = _inline_count(tensor)
    if counted is None:
        return
    field, found, expected = counted
    if found != expected:
        raise ModelValidationError(
            f"{what} declares shape {shape} ({expected} values in {field}) but holds "
            f"{found} values")


def _check_raw_size(tensor: onnx.TensorProto, size: int, what: str) -> None:
    expected = _expected_bytes(tensor)
    if expected is not None and size != expected:
        raise ModelValidationError(
            f"{what} declares shape {list(tensor.dims)} of {_type_name(tensor.data_type)} "
            f"({expected} bytes) but holds {size} bytes of data")


# (as onnx_importer.STUB_ELEMENTS, those whose data the checker does not see; smaller ones are
# checked by the validation, and read again by numpy_helper.to_array: a few KiB)
READ_RAW_ELEMENTS = 1024
# the types whose raw data numpy_helper.to_array reads as it is (not unpacked: 4-bit ...)
_READ_AS_IS = {getattr(onnx.TensorProto, name) for name in (
    "FLOAT", "DOUBLE", "FLOAT16", "BFLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8",
    "UINT16", "UINT32", "UINT64", "BOOL")}


def reads_raw(tensor: onnx.TensorProto) -> bool:
    """Whether `read_raw` reads `tensor`: raw data in the proto, of at least
    `READ_RAW_ELEMENTS` elements of a type read as it is (`_READ_AS_IS`), on a little-endian
    machine (ONNX's byte order)."""
    if not tensor.HasField("raw_data") or tensor.data_location == onnx.TensorProto.EXTERNAL \
            or tensor.HasField("segment") or sys.byteorder != "little":
        return False
    return tensor.data_type in _READ_AS_IS and _elements(tensor.dims) >= READ_RAW_ELEMENTS


def read_raw(tensor: onnx.TensorProto) -> np.ndarray:
    """The array of a tensor that `reads_raw` (numpy_helper.to_array's), its size checked: its
    bytes are read once (upb copies `raw_data` on every read: BERT-base's 435 MB, 0.04-0.1 s
    each time), here rather than by the validation too (`validate_model(read_sizes=False)`)."""
    data = tensor.raw_data
    _check_raw_size(tensor, len(data), f"initializer '{tensor.name}'")
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    return np.frombuffer(data, dtype=dtype).reshape(tuple(tensor.dims))


def _declared_values(graph: onnx.GraphProto) -> Iterable[tuple[str, onnx.ValueInfoProto]]:
    yield from (("graph input", v) for v in graph.input)
    yield from (("graph output", v) for v in graph.output)
    yield from (("value", v) for v in graph.value_info)


def check_tensor_size(shape: Sequence[int], elem_type: int, what: str) -> None:
    """ModelValidationError when a tensor of `shape` would not fit in this machine's memory."""
    try:
        itemsize = helper.tensor_dtype_to_np_dtype(elem_type).itemsize
    except (KeyError, ValueError, TypeError):
        itemsize = 1
    problem = size_problem(shape, itemsize, _type_name(elem_type))
    if problem is not None:
        raise ModelValidationError(f"{what} {problem}")


def check_sizes(graph: onnx.GraphProto) -> None:
    for what, value in _declared_values(graph):
        tensor_type = value.type.tensor_type
        if not value.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
            continue
        dims = tensor_type.shape.dim
        if any(d.HasField("dim_value") and d.dim_value < 0 for d in dims):
            raise ModelValidationError(
                f"{what} '{value.name}' has a negative size in its shape "
                f"{[d.dim_value if d.HasField('dim_value') else d.dim_param for d in dims]}")
        static = [d.dim_value for d in dims if d.HasField("dim_value")]
        check_tensor_size(static, tensor_type.elem_type, f"{what} '{value.name}'")
    for tensor in graph.initializer:
        check_tensor_size(tensor.dims, tensor.data_type, f"initializer '{tensor.name}'")


# ----------------------------------------------------------------------------- external data


def _read_external(tensor: onnx.TensorProto, base_dir: Path | None) -> bytes:
    what = f"initializer '{tensor.name}'"
    entries = {e.key: e.value for e in tensor.external_data}
    location = entries.get("location", "")
    if not location:
        raise ModelValidationError(f"{what} has external data without a location")
    if base_dir is None:
        raise ModelValidationError(
            f"{what} stores its data in the external file '{location}', which is found "
            "relative to the model's folder: pass the model as a path")
    folder = base_dir.resolve()
    path = (folder / location).resolve()
    if Path(location).is_absolute() or not path.is_relative_to(folder):
        raise ModelValidationError(
            f"{what}: external data location '{location}' points outside the model's folder "
            f"{folder} (refused: path traversal)")
    if not path.is_file():
        raise ModelValidationError(
            f"{what}: external data file '{location}' does not exist in {folder}")
    try:
        offset, length = int(entries.get("offset", 0)), entries.get("length")
        length = None if length is None else int(length)
    except ValueError:
        raise ModelValidationError(f"{what}: external data offset or length is not an "
                                   f"integer ({entries})") from None
    file_size = path.stat().st_size
    if offset < 0 or offset > file_size or (length is not None and
                                            (length < 0 or offset + length > file_size)):
        raise ModelValidationError(
            f"{what}: external data [offset {offset}, length {length}] lies outside "
            f"'{location}' ({file_size} bytes)")
    with path.open("rb") as file:
        file.seek(offset)
        data = file.read(file_size - offset if length is None else length)
    expected = _expected_bytes(tensor)
    if expected is not None and len(data) != expected:
        raise ModelValidationError(
            f"{what} declares shape {list(tensor.dims)} of {_type_name(tensor.data_type)} "
            f"({expected} bytes) but its external data in '{location}' has {len(data)} bytes")
    return data


# ----------------------------------------------------------------------------- element types


def _declared_types(graph: onnx.GraphProto) -> dict[str, int]:
    declared = {}
    for _, value in _declared_values(graph):
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type:
            declared[value.name] = value.type.tensor_type.elem_type
    return declared


def _schema(node: onnx.NodeProto, versions: dict[str, int]) -> OpSchema | None:
    domain = "" if node.domain == "ai.onnx" else node.domain
    try:
        return onnx.defs.get_schema(node.op_type, versions.get(domain, 1), domain)
    except onnx.defs.SchemaError:
        return None  # unknown op: reported as unsupported


def check_types(proto: onnx.ModelProto) -> None:
    """Producer and consumer agree on each value's element type (per the op schemas)."""
    graph = proto.graph
    versions = {("" if e.domain == "ai.onnx" else e.domain): e.version for e in proto.opset_import}
    declared = _declared_types(graph)
    known = {v.name: declared[v.name] for v in graph.input if v.name in declared}
    known |= {t.name: t.data_type for t in graph.initializer}
    for index, node in enumerate(graph.node):
        schema = _schema(node, versions)
        if schema is None:
            continue
        bound = _bind_inputs(node, index, schema, known)
        for position, name in enumerate(node.output):
            if not name:
                continue
            produced = _output_type(node, schema, position, bound)
            if produced is None:
                produced = declared.get(name)
            elif name in declared and declared[name] != produced:
                raise ModelValidationError(
                    f"{_node(node, index)} produces '{name}' as {_type_name(produced)}, but the "
                    f"graph declares it {_type_name(declared[name])}")
            if produced is not None:
                known[name] = produced


# types dlc takes beyond an op's schema (onnxruntime refuses them), each tested in tests/ops:
# shifts of signed integers (two's complement, as numpy's and C's << and >>); reductions and
# cumulative ops of narrow integers and bools (numpy's semantics: wrapping sums, bool max/min);
# Relu of unsigned integers (the identity); QuantizeLinear of float64
_INTS = ("tensor(int8)", "tensor(uint8)", "tensor(int16)", "tensor(uint16)", "tensor(int32)",
         "tensor(int64)", "tensor(uint32)", "tensor(uint64)")
_EXTRA_TYPES = {
    ("BitShift", "T"): ("tensor(int8)", "tensor(int16)", "tensor(int32)", "tensor(int64)"),
    ("QuantizeLinear", "T1"): ("tensor(double)",),
    ("CumProd", "T"): _INTS, ("CumSum", "T"): _INTS,
    ("Relu", "T"): ("tensor(uint8)", "tensor(uint16)", "tensor(uint32)", "tensor(uint64)"),
    **{(f"Reduce{fn}", "T"): _INTS for fn in ("Sum", "Mean", "Prod", "SumSquare", "L1", "L2")},
    **{(f"Reduce{fn}", "T"): (*_INTS, "tensor(bool)") for fn in ("Max", "Min")},
}


def _formal(params: Sequence, position: int):
    if position < len(params):
        return params[position]
    if params and params[-1].option == _VARIADIC:
        return params[-1]
    return None


def _bind_inputs(node: onnx.NodeProto, index: int, schema: OpSchema,
                 known: dict[str, int]) -> dict[str, tuple[int, str]]:
    """The element type bound to each type variable by the node's inputs."""
    constraints = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    bound: dict[str, tuple[int, str]] = {}
    for position, name in enumerate(node.input):
        formal = _formal(schema.inputs, position)
        if not name and formal is not None and formal.option != _OPTIONAL:
            raise ModelValidationError(
                f"{_node(node, index)}: input {position} ('{formal.name}' of {node.op_type}) "
                "is empty, but only optional inputs may be omitted; give it a value")
        if not name or name not in known or formal is None:
            continue
        if formal.option == _VARIADIC and not formal.is_homogeneous:
            continue
        elem_type, variable = known[name], formal.type_str
        text = f"tensor({_type_name(elem_type)})"
        if variable in bound and bound[variable][0] != elem_type:
            other_type, other = bound[variable]
            raise ModelValidationError(
                f"{_node(node, index)}: input '{name}' is {_type_name(elem_type)} but input "
                f"'{other}' is {_type_name(other_type)}; both are '{variable}' of "
                f"{node.op_type} and must have the same element type")
        if variable not in constraints and variable.startswith("tensor(") and text != variable:
            raise ModelValidationError(
                f"{_node(node, index)}: input '{name}' ('{formal.name}' of {node.op_type}) "
                f"must be {variable[7:-1]}, but it is {_type_name(elem_type)}")
        allowed = [t for t in constraints.get(variable, []) if t.startswith("tensor(")]
        extra = _EXTRA_TYPES.get((node.op_type, variable), ())
        if len(allowed) == 1 and text != allowed[0] and not extra:
            raise ModelValidationError(
                f"{_node(node, index)}: input '{name}' ('{formal.name}' of {node.op_type}) "
                f"must be {allowed[0][7:-1]}, but it is {_type_name(elem_type)}")
        if allowed and text not in allowed and text not in extra \
                and constraints[variable] == allowed:
            kinds = ", ".join(t[7:-1] for t in allowed)
            raise ModelValidationError(
                f"{_node(node, index)}: input '{name}' ('{formal.name}' of {node.op_type}) "
                f"is {_type_name(elem_type)}, but {node.op_type} of opset "
                f"{schema.since_version} takes {kinds} only (onnxruntime refuses it too)")
        if variable in constraints:
            bound[variable] = (elem_type, name)
    return bound


_TYPE_ATTRIBUTES = {"Cast": "to", "RandomNormal": "dtype", "RandomUniform": "dtype"}


def _output_type(node: onnx.NodeProto, schema: OpSchema, position: int,
                 bound: dict[str, tuple[int, str]]) -> int | None:
    formal = _formal(schema.outputs, position)
    if formal is None:
        return None
    if formal.type_str in bound:
        return bound[formal.type_str][0]
    attributes = {a.name: a for a in node.attribute}
    if node.op_type in _TYPE_ATTRIBUTES and _TYPE_ATTRIBUTES[node.op_type] in attributes:
        return attributes[_TYPE_ATTRIBUTES[node.op_type]].i
    if node.op_type == "Constant" and "value" in attributes:
        return attributes["value"].t.data_type
    text = formal.type_str
    if text.startswith("tensor(") and text != "tensor(string)":
        name = text[7:-1].upper()
        names = {"FLOAT": onnx.TensorProto.FLOAT, "DOUBLE": onnx.TensorProto.DOUBLE}
        return names.get(name, getattr(onnx.TensorProto, name, None))
    return None
