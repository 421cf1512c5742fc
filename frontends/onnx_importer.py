"""ONNX → dlc dialect importer.

Contract: takes an `onnx.ModelProto` (or a path to one) and builds, in a given Context, a
module holding `func.func @main` whose arguments are the graph inputs (initializers excluded),
whose results are the graph outputs, and whose body is one dlc op per ONNX node, located at
`loc("<node name>")`. Initializers become `dlc.constant`. Import is 1:1 and does no
optimization (that is the passes' job); ONNX-level conveniences that need no new op (Identity,
Flatten as a reshape) are resolved here. Every problem is a `FrontendError` that names the
node and says what to change; unsupported ops are all listed in one error. Shapes the nodes
compute are checked like declared ones (memory, 64-bit sizes), and a graph output declared
with static sizes must get them (unless `input_shapes` changes or binds an input size).

A graph output whose size depends on run-time values (NonZero, Unique... of non-constant data:
a bounded result of `dialects/selection.py`, padded to its maximum size) is followed, after the
graph outputs, by one more function result: its count of valid entries along the bounded axis
(`tensor<i64>`), named `<output>#count@<axis>` (`selection.count_output_name`); the runtime
trims the output to it (`dlc.runtime.signature`). Such a value may not feed other nodes yet.
"""

from __future__ import annotations

import contextvars
import math
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from mlir import ir
from mlir.dialects import func
from onnx import helper, numpy_helper

from dlc.dialects import ShapeError, build, movement, ops, selection
from dlc.frontends.common import ImportedModel
from dlc.frontends.onnx_folding import fold, foldable
from dlc.frontends.onnx_node import (
    FrontendError,
    ModelValidationError,
    NodeContext,
    constant_value,
    dense,
    element_type,
)
from dlc.frontends.onnx_ops import importers
from dlc.frontends.onnx_ops.movement import range_size
from dlc.frontends.onnx_ops.selection import check_not_bounded
from dlc.frontends.onnx_symbolic import (
    Probed,
    arange,
    as_shape,
    broadcast_constant,
    evaluate,
    shape_value,
)
from dlc.frontends.validate import (
    check_tensor_size,
    load_external_data,
    read_raw,
    reads_raw,
    validate_model,
)

__all__ = ["DynamicShapesError", "FrontendError", "ImportedModel", "UnsupportedOpsError",
           "import_model", "load_model"]


def supported_op_types() -> list[str]:
    return sorted(importers())


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


class DynamicShapesError(FrontendError):
    """Graph inputs have dynamic sizes that `input_shapes` does not fix: the module of one
    specialization cannot be built (`dlc.compile` compiles such a model per call shape,
    `dlc.specialize.DynamicModel`). `symbolic` gives each non-constant graph input's declared
    shape, a dynamic size by its name (`?` when unnamed), a fixed one as an int."""

    def __init__(self, message: str, proto: onnx.ModelProto,
                 symbolic: dict[str, tuple[int | str, ...]]):
        super().__init__(message)
        self.proto = proto
        self.symbolic = symbolic


def load_model(model: str | Path | bytes | onnx.ModelProto,
               read_sizes: bool = True) -> onnx.ModelProto:
    """The ModelProto of `model` (a path, serialized bytes or a ModelProto), checked;
    `read_sizes=False` leaves the size of large raw initializers to their reading
    (`validate.read_raw`, which `import_model` does)."""
    base_dir = None  # where external data is found: the model's folder
    if isinstance(model, onnx.ModelProto):
        proto = model
    elif isinstance(model, bytes):
        proto = _parse(model, "the given bytes")
    elif isinstance(model, str | Path):
        path = Path(model)
        if not path.is_file():
            raise FrontendError(f"no ONNX model at '{path}'")
        proto, base_dir = _parse(path.read_bytes(), f"'{path}'"), path.parent
    else:
        raise FrontendError(
            f"expected an ONNX ModelProto or a path, got {type(model).__name__}"
        )
    validate_model(proto, read_sizes)  # specific messages first; then the checker the rest
    load_external_data(proto, base_dir)  # (only a proto read from `base_dir` is changed)
    _check(proto)
    return proto


def _check(proto: onnx.ModelProto) -> None:
    """onnx's checker, minus its demand that graph inputs and outputs declare a type and a
    shape (onnxruntime does not make it: an input's shape may come from `input_shapes`, an
    output's is computed), with its node errors naming the node. It checks a copy of the model
    without the bytes of its initializers (`_skeleton`)."""
    skeleton = _skeleton(proto)
    graph = skeleton.graph
    for value in [*graph.input, *graph.output]:
        if not value.type.HasField("tensor_type") and value.type.WhichOneof("value") is None:
            value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape"):
            value.type.tensor_type.shape.SetInParent()
    try:
        onnx.checker.check_model(skeleton)
    except (onnx.checker.ValidationError, ValueError) as error:
        raise ModelValidationError(_checker_message(proto, error)) from None


def _skeleton(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `proto` whose main graph's large initializers (raw data, at least
    `STUB_ELEMENTS` elements) are stand-ins of the same name and type, of shape [0] and without data. The checker's only
    use of their bytes is to compare their size with the shape, which
    `validate.check_initializers` did already (with a better message); but `check_model`
    serializes the whole model to hand it to C++: BERT-base's 435 MB took 1.2 s, for nothing
    (issue 20)."""
    skeleton = onnx.ModelProto()
    for descriptor, value in proto.ListFields():
        if descriptor.name != "graph":
            _copy_field(skeleton, descriptor, value)
    graph = skeleton.graph
    for descriptor, value in proto.graph.ListFields():
        if descriptor.name != "initializer":
            _copy_field(graph, descriptor, value)
    for tensor in proto.graph.initializer:
        stub = graph.initializer.add()
        # (by its shape: upb's ByteSize serializes the tensor, and raw_data is read as a copy)
        if not tensor.HasField("raw_data") or tensor.data_type == onnx.TensorProto.STRING or \
                math.prod(tensor.dims) < STUB_ELEMENTS:
            stub.CopyFrom(tensor)
            continue
        stub.name, stub.data_type = tensor.name, tensor.data_type
        stub.dims.append(0)
    return skeleton


STUB_ELEMENTS = 1024


def _copy_field(message, descriptor, value) -> None:
    repeated = getattr(descriptor, "is_repeated", None)
    if repeated is None:  # (protobuf before 5.x)
        repeated = descriptor.label == descriptor.LABEL_REPEATED
    if repeated:
        getattr(message, descriptor.name).extend(value)
    elif descriptor.message_type is not None:
        getattr(message, descriptor.name).CopyFrom(value)
    else:
        setattr(message, descriptor.name, value)


def _checker_message(proto: onnx.ModelProto, error: Exception) -> str:
    """The checker's message, led by the graph value or the node it is about (its context
    names only the op type, and an empty name for unnamed nodes)."""
    message = str(error).strip().split("\n\n==> Context:")[0].strip()
    context = onnx.checker.C.CheckerContext()
    context.ir_version = proto.ir_version
    context.opset_imports = {e.domain: e.version for e in proto.opset_import}
    graph = proto.graph
    for what, values in (("graph input", graph.input), ("graph output", graph.output),
                         ("value_info", graph.value_info)):
        for value in values:
            try:
                onnx.checker.check_value_info(value, context)
            except (onnx.checker.ValidationError, ValueError) as value_error:
                detail = str(value_error).strip().split("\n\n==> Context:")[0].strip()
                return f"{what} '{value.name}': {detail}"
    for index, node in enumerate(graph.node):
        try:
            onnx.checker.check_node(node, context)
        except (onnx.checker.ValidationError, ValueError) as node_error:
            detail = str(node_error).strip().split("\n\n==> Context:")[0].strip()
            return f"node '{node.name or f'{node.op_type}_{index}'}' ({node.op_type}): {detail}"
    return message


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as error:  # noqa: BLE001 (protobuf raises its own DecodeError)
        raise FrontendError(f"{where} is not a valid ONNX model ({error})") from None
    if not proto.HasField("graph"):
        raise FrontendError(f"{where} is not an ONNX model: it has no graph")
    return proto


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 1


def importer_key(node: onnx.NodeProto) -> str:
    """The key of the node's importer: its op type, led by its domain outside the default one
    (`com.microsoft.MatMulNBits`)."""
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"


def check_supported(graph: onnx.GraphProto) -> None:
    """Raise UnsupportedOpsError listing every node dlc cannot import, subgraphs included."""
    unsupported: dict[str, list[str]] = {}
    _collect_unsupported(graph, "", unsupported)
    if unsupported:
        raise UnsupportedOpsError(unsupported)


def _collect_unsupported(graph: onnx.GraphProto, prefix: str,
                         unsupported: dict[str, list[str]]) -> None:
    for index, node in enumerate(graph.node):
        name = prefix + (node.name or f"#{index}")
        if importer_key(node) not in importers():
            unsupported.setdefault(importer_key(node), []).append(name)
        for attribute in node.attribute:  # the bodies of If, Loop and Scan
            for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                _collect_unsupported(body, f"{name}/{attribute.name}/", unsupported)


@dataclass
class Body:
    """An imported subgraph body: its output values, and their values when known constants."""

    values: list[ir.Value]
    constants: list[np.ndarray | None]


# the bodies (If branches, Loop iterations, Scan steps) one model may import in all: a Loop
# of 1,000 iterations around another of 1,000 (a few hundred bytes) imported 10^6 bodies, for
# hours; ~1 ms each
MAX_BODIES = 1 << 14
_BODIES: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("dlc_bodies",
                                                                          default=None)


def import_subgraph(graph: onnx.GraphProto, outer: NodeContext,
                    bindings: Mapping[str, ir.Value],
                    bound_constants: Mapping[str, np.ndarray] | None = None) -> Body:
    """Import the body `graph` of the control-flow node `outer` at the current insertion point.

    The body sees the values of the enclosing scopes and `bindings` (its own inputs, with
    `bound_constants` for those known at compile time); its names do not leak out.
    """
    imported = _BODIES.get()
    if imported is not None:  # (each loop is bounded, but nested loops multiply)
        imported[0] += 1
        if imported[0] > MAX_BODIES:
            raise outer.error(f"the model's control flow imports more than {MAX_BODIES} "
                              "bodies (dlc unrolls loops at compile time, and nested loops "
                              "multiply their iterations)")
    values = {**outer.scope, **bindings}
    constants = {**outer.constants, **(bound_constants or {})}
    for tensor in graph.initializer:
        array = numpy_helper.to_array(tensor)
        constants[tensor.name] = array
        values[tensor.name] = build(ops.CONSTANT, [], {"value": dense(array)},
                                    loc=ir.Location.name(tensor.name))
    for index, node in enumerate(graph.node):
        _import_node(node, index, outer.opset, values, constants)
    missing = [o.name for o in graph.output if o.name not in values]
    if missing:
        raise outer.error(f"body outputs {missing} are produced by no node of the body")
    for output in graph.output:
        check_not_bounded(values[output.name], f"node '{outer.name}' ({outer.node.op_type}) "
                                               f"as its body output '{output.name}'", values)
    return Body([values[o.name] for o in graph.output],
                [constants.get(o.name) for o in graph.output])


def input_type(value: onnx.ValueInfoProto, shapes: Mapping[str, Sequence[int]],
               dynamic: bool = False, fixed: Mapping[str, int] | None = None) -> ir.Type:
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
        check_tensor_size(shape, tensor_type.elem_type, what)
        return ir.RankedTensorType.get(shape, element)
    # (static: `_check_static` refused an input with dynamic sizes before; `dynamic`: each
    # is the one dynamic size, but those `fixed` gives a value)
    fixed = fixed or {}
    return ir.RankedTensorType.get([
        fixed[d] if isinstance(d, str) and d in fixed else
        ir.ShapedType.get_dynamic_size() if isinstance(d, str) else d
        for d in symbolic_shape(value)], element)


def _constant_input(value: onnx.ValueInfoProto, given) -> np.ndarray:
    """The array `constants=` gives graph input `value`, checked against its declaration
    (element type; rank and fixed sizes) as a call's input would be: a float64 array for a
    float32 input, or a list read as int64, failed later in an op naming neither."""
    array = np.asarray(given)
    what = f"constants gives graph input '{value.name}'"
    tensor_type = value.type.tensor_type if value.type.HasField("tensor_type") else None
    if tensor_type is None:
        return array
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
    except (KeyError, TypeError, ValueError):
        return array  # (an element type dlc refuses: its own error, later)
    if array.dtype != dtype:
        raise FrontendError(f"{what} an array of dtype {array.dtype}; it is declared "
                            f"{dtype.name} (convert it with .astype(np.{dtype.name}))")
    if tensor_type.HasField("shape"):
        declared = [d.dim_value if d.HasField("dim_value") else None
                    for d in tensor_type.shape.dim]
        if len(declared) != array.ndim or any(
                d is not None and d != s for d, s in zip(declared, array.shape)):
            shown = ["?" if d is None else d for d in declared]
            raise FrontendError(f"{what} an array of shape {list(array.shape)}; it is "
                                f"declared {shown}")
    return array


def symbolic_shape(value: onnx.ValueInfoProto) -> tuple[int | str, ...]:
    """The declared shape of a graph input: ints, the names of dynamic sizes, `?` for an
    unnamed one (a negative size, as some exporters write, is unnamed)."""
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        raise FrontendError(f"graph input '{value.name}' has no shape; "
                            f"pass input_shapes={{'{value.name}': [...]}}")
    return tuple(d.dim_value if d.HasField("dim_value") and d.dim_value >= 0
                 else d.dim_param.strip() or "?" for d in tensor_type.shape.dim)


def import_model(
    model: str | Path | bytes | onnx.ModelProto,
    context: ir.Context,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    dynamic: bool = False,
    fixed_sizes: Mapping[str, int] | None = None,
) -> ImportedModel:
    """Import `model` into a new module of `context` (which must have the dlc dialect).

    `constants` gives values to graph inputs, which then become constants of the module
    (the compiled function is specialized to them and no longer takes them as arguments).
    `dynamic=True` imports a model whose inputs have one dynamic size (every input's dynamic
    sizes have one name) with that size dynamic (`?`), for one compile for all its values
    (`dynamic_import_reason` says which models can be: their ops must all take it).
    """
    token = _BODIES.set([0])  # (the bodies this model imports: MAX_BODIES)
    try:
        return _import_model(model, context, input_shapes, constants, dynamic, fixed_sizes)
    finally:
        _BODIES.reset(token)


# The ONNX ops imported with a dynamic size (`import_model(dynamic=True)`): each becomes dlc
# ops whose lowering takes one (`dlc.passes.lowering.dynamic_ops`), and computes nothing at
# import from a size that may be dynamic (Shape, Size and the shape computations on them:
# `onnx_symbolic`; a Slice refuses a dynamic axis).
DYNAMIC_OP_TYPES = frozenset({
    "Abs", "Add", "And", "Cast", "Ceil", "Clip", "Concat", "Constant", "ConstantOfShape", "Div",
    "Dropout", "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "Gelu",
    "Gemm", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity",
    "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul",
    "Max", "Min", "Mish", "Mul", "Neg", "Not", "Or", "Pow", "Range", "Reciprocal", "ReduceL1",
    "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
    "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Selu", "Shape", "Sigmoid", "Sign",
    "Size", "Slice", "Softmax", "Split", "Softplus", "Softsign", "Sqrt", "Squeeze", "Sub", "Tanh",
    "Transpose", "Unsqueeze", "Where",
})


def dynamic_size_name(symbolic: Mapping[str, tuple[int | str, ...]]) -> str | None:
    """The one name of the dynamic sizes of inputs of these declared shapes, or None (no
    dynamic size, or several names; an unnamed `?` is a name of its own)."""
    names = {d for shape in symbolic.values() for d in shape if isinstance(d, str)}
    unnamed = sum(d == "?" for shape in symbolic.values() for d in shape)
    if len(names) != 1 or (names == {"?"} and unnamed > 1):
        return None
    return names.pop()


def dynamic_import_reason(proto: onnx.ModelProto,
                          symbolic: Mapping[str, tuple[int | str, ...]]) -> str | None:
    """Why `import_model(dynamic=True)` does not take this model, or None when it may."""
    if dynamic_size_name(symbolic) is None:
        names = sorted({d for shape in symbolic.values() for d in shape if isinstance(d, str)})
        return f"its inputs have {len(names)} dynamic sizes ({', '.join(names)}), not one"
    others = sorted({n.op_type for n in proto.graph.node if n.domain in ("", "ai.onnx")
                     and n.op_type not in DYNAMIC_OP_TYPES}
                    | {f"{n.domain}.{n.op_type}" for n in proto.graph.node
                       if n.domain not in ("", "ai.onnx")})
    if others:
        return f"its ops {', '.join(others)} do not take a dynamic size yet"
    return None


def _import_model(
    model: str | Path | bytes | onnx.ModelProto,
    context: ir.Context,
    input_shapes: Mapping[str, Sequence[int]] | None,
    constants: Mapping[str, np.ndarray] | None,
    dynamic: bool = False,
    fixed_sizes: Mapping[str, int] | None = None,
) -> ImportedModel:
    proto = load_model(model, read_sizes=False)  # (read_raw checks them: `_initializer_array`)
    graph = proto.graph
    opset = default_opset(proto)
    check_supported(graph)
    shapes = dict(input_shapes or {})
    constants_given = dict(constants or {})
    initializers: dict[str, onnx.TensorProto | np.ndarray] = {
        t.name: t for t in graph.initializer}
    graph_inputs = [v.name for v in graph.input if v.name not in initializers]
    unknown = sorted((set(shapes) | set(constants_given)) - set(graph_inputs))
    if unknown:
        raise FrontendError(f"input_shapes or constants name unknown inputs {unknown}; "
                            f"inputs are {graph_inputs}")
    declared_inputs = {v.name: v for v in graph.input}
    initializers.update({n: _constant_input(declared_inputs[n], a)
                         for n, a in constants_given.items()})
    inputs = [v for v in graph.input if v.name not in initializers]
    dynamic_name = None
    if dynamic:
        fixed = dict(fixed_sizes or {})
        symbolic = {v.name: tuple(shapes[v.name]) if v.name in shapes else tuple(
            fixed.get(d, d) if isinstance(d, str) else d for d in symbolic_shape(v))
            for v in inputs if v.type.HasField("tensor_type")}
        reason = dynamic_import_reason(proto, symbolic)
        if reason:
            raise FrontendError(f"the model cannot be imported with a dynamic size: {reason}")
        # (an unnamed `?` gets a name: the compiled signature binds sizes by name)
        dynamic_name = dynamic_size_name(symbolic).replace("?", "size")
    else:
        _check_static(proto, inputs, shapes)
    with context, ir.Location.name(graph.name or "main"):
        module = ir.Module.create()
        arg_types = [input_type(v, shapes, dynamic, fixed_sizes) for v in inputs]
        function = func.FuncOp("main", (arg_types, []), ip=ir.InsertionPoint(module.body))
        block = function.add_entry_block()
        values: dict[str, ir.Value] = dict(zip((v.name for v in inputs), block.arguments))
        constants: dict[str, np.ndarray] = {}
        probed: dict[str, Probed] | None = {} if dynamic else None
        with ir.InsertionPoint(block):
            for name, tensor in initializers.items():
                array = tensor if isinstance(tensor, np.ndarray) else \
                    _initializer_array(tensor)
                location = ir.Location.name(name)
                try:
                    value = dense(array)
                    values[name] = build(ops.CONSTANT, [], {"value": value}, loc=location)
                except FrontendError as error:
                    raise FrontendError(f"initializer '{name}': {error}") from None
                constants[name] = _constant_view(value, array) if tensor is not array \
                    else array
            for index, node in enumerate(graph.node):
                _import_node(node, index, opset, values, constants, probed)
            for output in graph.output:  # (a shape computed from the size, returned)
                if probed and output.name in probed and output.name not in values:
                    values[output.name] = _materialized(output.name, probed[output.name],
                                                        "(graph output)", "output")
            missing = [o.name for o in graph.output if o.name not in values]
            if missing:
                raise FrontendError(f"graph outputs {missing} are produced by no node")
            results = [values[o.name] for o in graph.output]
            _check_output_kinds(graph)
            if not _reshaped(graph, shapes):
                _check_output_shapes(graph, results)
            counts = [(selection.count_output_name(o.name, bound[1]), bound[0])
                      for o, bound in ((o, selection.bound_of(v))
                                       for o, v in zip(graph.output, results)) if bound]
            results += [count for _, count in counts]
            func.ReturnOp(results)
        function.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [r.type for r in results])
        )
    output_names = [o.name for o in graph.output] + [name for name, _ in counts]
    return ImportedModel(module, [v.name for v in inputs], output_names, opset, constants,
                         dynamic_name)


VIEW_BYTES = 65536


def _initializer_array(tensor: onnx.TensorProto) -> np.ndarray:
    """The value of an initializer of the main graph, its bytes read once (and their size
    checked there: `load_model(read_sizes=False)` did not)."""
    return read_raw(tensor) if reads_raw(tensor) else numpy_helper.to_array(tensor)


def _constant_view(value: ir.DenseElementsAttr, array: np.ndarray) -> np.ndarray:
    """A large initializer's values as a read-only view of its attribute's storage (in the
    context), not as the array read from the model: that copy of the weights (BERT-base:
    435 MB) would otherwise stay alive in `ImportedModel.constants` for the whole compile."""
    if array.nbytes < VIEW_BYTES:
        return array
    try:
        view = np.asarray(value)
    except (TypeError, ValueError, RuntimeError):
        return array
    if view.dtype != array.dtype or view.shape != array.shape or view.flags.writeable:
        return array  # (a copy, or another layout: i1, 4-bit types)
    return view


def _check_static(proto: onnx.ModelProto, inputs: Sequence[onnx.ValueInfoProto],
                  shapes: Mapping[str, Sequence[int]]) -> None:
    """DynamicShapesError when an input not in `shapes` has dynamic sizes."""
    for value in inputs:
        if value.name in shapes or not value.type.HasField("tensor_type"):
            continue
        dynamic = [(axis, d) for axis, d in enumerate(symbolic_shape(value))
                   if isinstance(d, str)]
        if dynamic:
            axis, dim = dynamic[0]
            symbolic = {v.name: tuple(shapes[v.name]) if v.name in shapes
                        else symbolic_shape(v) for v in inputs
                        if v.type.HasField("tensor_type")}
            raise DynamicShapesError(
                f"graph input '{value.name}' has a dynamic size '{dim}' at axis {axis}; a "
                f"module is built for one specialization: pass "
                f"input_shapes={{'{value.name}': [...]}} (dlc.compile compiles it per call "
                "shape without them)", proto, symbolic)


def _reshaped(graph: onnx.GraphProto, shapes: Mapping[str, Sequence[int]]) -> bool:
    """Whether `input_shapes` specializes a graph input: changes a static size or binds a
    symbolic one (the declared output shapes then describe another specialization of the
    model, as onnxruntime, which only warns about them, assumes)."""
    for value in graph.input:
        if value.name not in shapes or not value.type.tensor_type.HasField("shape"):
            continue
        dims = value.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") or d.dim_value != int(s)
               for d, s in zip(dims, shapes[value.name])):
            return True
    return False


def _check_output_kinds(graph: onnx.GraphProto) -> None:
    """Graph outputs are declared tensors, or not at all (a tensor was returned for an output
    declared a map or a sequence)."""
    for output in graph.output:
        kind = output.type.WhichOneof("value")
        if kind not in (None, "tensor_type"):
            raise ModelValidationError(
                f"graph output '{output.name}' is declared a {kind.removesuffix('_type')}, "
                "but dlc computes tensors: declare it a tensor")


def _check_output_shapes(graph: onnx.GraphProto, results: Sequence[ir.Value]) -> None:
    """A graph output declared with static sizes must have them (like onnx's strict shape
    inference; a declared shape that contradicts the computed one is a broken model)."""
    producers = {name: (i, n) for i, n in enumerate(graph.node) for name in n.output}
    for output, value in zip(graph.output, results):
        tensor_type = output.type.tensor_type
        if not output.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
            continue
        declared = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?"
                    for d in tensor_type.shape.dim]
        computed = ["?" if ir.ShapedType.is_dynamic_size(d) else d
                    for d in ir.RankedTensorType(value.type).shape]
        bound = selection.bound_of(value)
        bounded = bound[1] if bound else -1  # (its size there is at most the computed one)
        if len(declared) == len(computed) and all(
                isinstance(d, str) or d == c or (axis == bounded and isinstance(c, int)
                                                   and d <= c)
                for axis, (d, c) in enumerate(zip(declared, computed))):
            continue
        if bound:
            computed[bounded] = f"<={computed[bounded]}"
        source = "it is"
        if output.name in producers:
            index, node = producers[output.name]
            source = f"node '{node.name or f'{node.op_type}_{index}'}' ({node.op_type}) computes it as"
        raise ModelValidationError(
            f"graph output '{output.name}' is declared with shape {declared}, but {source} "
            f"{computed}; fix the output's declared shape (or make its sizes symbolic)")


# the inputs an op reads as a shape, which may be computed from a dynamic size (a Probed:
# `onnx_symbolic.as_shape`); a Probed at any other input is data (`_materialized`)
SHAPE_INPUTS = {"Reshape": (1,), "Expand": (1,)}


def _import_node(node: onnx.NodeProto, index: int, opset: int, values: dict[str, ir.Value],
                 constants: dict[str, np.ndarray],
                 probed: dict[str, Probed] | None = None) -> None:
    """Import one node into `values` (and `constants`, where it folds). `probed`: the values
    computed from the one dynamic size of a dynamic import (`onnx_symbolic`), else None."""
    node_name = node.name or f"{node.op_type}_{index}"  # (the caller's model is not changed)
    if probed is not None and _probe(node, node_name, opset, values, constants, probed):
        return
    operands: list[ir.Value | None] = []
    shapes: dict[str, np.ndarray] = {}  # (a Probed read as a shape)
    for position, name in enumerate(node.input):
        if not name:
            operands.append(None)
            continue
        if probed is not None and name in probed and name not in values:
            if position in SHAPE_INPUTS.get(node.op_type, ()):
                try:
                    shapes[name] = as_shape(probed[name], "shape")
                except ValueError as error:
                    raise FrontendError(f"node '{node_name}' ({node.op_type}): {error}") \
                        from None
                operands.append(None)
                continue
            values[name] = _materialized(name, probed[name], node_name, node.op_type)
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
        constants=ChainMap(shapes, constants) if shapes else constants,
        location=ir.Location.name(node_name),
        scope=values,
    )
    if node.op_type != "Identity":  # (Identity passes a bounded value on unchanged)
        for value in operands:
            if value is not None:
                check_not_bounded(value, f"node '{node_name}' ({node.op_type})", values)
    results = _fold(context) or importers()[importer_key(node)](context)
    for name, value in zip(node.output, results):
        if name:
            values[name] = value
    if node.op_type == "Constant" and node.output:
        constants[node.output[0]] = constant_value(context)


def _probe(node: onnx.NodeProto, node_name: str, opset: int, values: dict[str, ir.Value],
           constants: dict[str, np.ndarray], probed: dict[str, Probed]) -> bool:
    """Import a node of shape computations on the dynamic size (`onnx_symbolic`): a Shape or
    Size of a dynamic value, or a node of the folders whose inputs are constants and at least
    one Probed. Its outputs are Probed, or constants where they do not depend on the size.
    False for any other node."""
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    shapes = _probed_shapes(node, values, probed) if node.op_type in ("Shape", "Size") \
        else None
    if shapes is not None:  # (Shape(x)[start:end] or Size(x), at each probe)
        outputs: list[np.ndarray | Probed] = [Probed(tuple(
            shape[attributes.get("start"):attributes.get("end")] if node.op_type == "Shape"
            else np.array(math.prod(shape.tolist()), np.int64) for shape in shapes)).settled()]
    elif any(name in probed for name in node.input) and all(
            not name or name in probed or name in constants for name in node.input):
        inputs = [probed.get(name, constants.get(name)) if name else None
                  for name in node.input]
        try:
            found = evaluate(node.op_type, inputs, attributes, opset)
        except Exception as error:  # noqa: BLE001 (malformed shapes: say which node)
            raise FrontendError(f"node '{node_name}' ({node.op_type}): cannot evaluate it on "
                                f"the dynamic size's shape values: {error}") from None
        if found is None or not all(_expressible(v) for v in found):
            return False  # (imported as ops: a gather of table rows by an arange of the size)
        outputs = found
    else:
        return False
    location = ir.Location.name(node_name)
    for name, value in zip(node.output, outputs):
        if not name:
            continue
        if isinstance(value, Probed):
            probed[name] = value
        else:
            constants[name] = value
            values[name] = build(ops.CONSTANT, [], {"value": dense(value)}, loc=location)
    return True


def _probed_shapes(node: onnx.NodeProto, values: dict[str, ir.Value],
                   probed: dict[str, Probed]) -> tuple[np.ndarray, ...] | None:
    """The shape at each probe of the first input of a Shape or Size node, when it depends on
    the dynamic size (a Probed, or a value of a dynamic shape); else None."""
    name = node.input[0] if node.input else ""
    if name in probed:
        return tuple(np.array(a.shape, np.int64) for a in probed[name].arrays)
    value = values.get(name)
    if value is None or value.type.has_static_shape:
        return None
    return shape_value(list(value.type.shape)).arrays


def _expressible(value: np.ndarray | Probed) -> bool:
    """Whether a value computed at the probe sizes may stay one: a constant, a shape (an
    integer vector or scalar), or data `_materialized` builds; a gather of a table's rows
    by an arange of the size is none of these (rows [0, size) of the table), and is
    imported as the op it is."""
    if not isinstance(value, Probed):
        return True
    if value.arrays[0].ndim <= 1 and value.arrays[0].dtype.kind in "iu":
        return True
    return broadcast_constant(value) is not None or arange(value) is not None


def _materialized(name: str, value: Probed, node_name: str, op_type: str) -> ir.Value:
    """A value computed from the dynamic size, read as data: a constant broadcast along the
    size, or an arange along it (`dlc.iota`); FrontendError for any other."""
    location = ir.Location.name(name)
    found = broadcast_constant(value)
    if found is not None:
        part, dims = found
        one = build(ops.CONSTANT, [], {"value": dense(part)}, loc=location)
        return build(movement.BROADCAST, [one], {"shape": dims}, loc=location)
    ramp = arange(value)
    if ramp is not None:
        dims, axis, start, step = ramp
        dtype = dense(value.arrays[0].reshape(-1)[:1]).type.element_type
        return build(movement.IOTA, [], {"shape": dims, "axis": axis, "start": start,
                                         "step": step, "dtype": dtype}, loc=location)
    raise FrontendError(f"node '{node_name}' ({op_type}): its input '{name}' is computed from "
                        "the dynamic size as data that is neither a constant broadcast along "
                        "it nor an arange of it, which the dynamic import does not take yet")


def _grown_shape(n: NodeContext, inputs: list[np.ndarray | None]
                 ) -> tuple[list[int], np.dtype] | None:
    """The output shape and dtype of a node whose output size is an input's value (Expand,
    Tile, ConstantOfShape, Range), when they can be computed; None for other nodes."""
    op_type = n.node.op_type
    try:
        if op_type == "Expand":
            target = [int(d) for d in inputs[1].reshape(-1)]
            return ops.broadcast_shapes(list(inputs[0].shape), target), inputs[0].dtype
        if op_type == "Tile":
            repeats = [int(r) for r in inputs[1].reshape(-1)]
            return [d * r for d, r in zip(inputs[0].shape, repeats)], inputs[0].dtype
        if op_type == "ConstantOfShape":
            value = n.attr("value")
            dtype = numpy_helper.to_array(value).dtype if value is not None else np.float32
            return [int(d) for d in inputs[0].reshape(-1)], dtype
        if op_type == "Range":
            start, limit, delta = (i.reshape(()) for i in inputs[:3])
            return [range_size(start, limit, delta)], start.dtype
    except (ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError, ShapeError):
        return None  # malformed: the folder reports it
    return None


def _fold(n: NodeContext) -> list[ir.Value] | None:
    """The node's outputs as constants when its inputs are small constants (shape math)."""
    inputs = [n.constants.get(name) if name else None for name in n.node.input]
    if any(name and name not in n.constants for name in n.node.input):
        return None
    if not foldable(n.node.op_type, inputs, n.attributes, n.opset):
        return None
    predicted = _grown_shape(n, inputs)
    if predicted is not None:  # small inputs, but the output may be huge: refuse before numpy
        n.check_shape(*predicted)
    try:
        outputs = fold(n.node.op_type, inputs, n.attributes, n.opset)
    except Exception as error:  # noqa: BLE001 (malformed attributes or shapes: say which node)
        raise n.error(f"cannot fold it on its constant inputs: {error}") from None
    if n.node.op_type == "Split" and len(outputs) != len(n.node.output):
        raise n.error(f"split gives {len(outputs)} parts but the node has "
                      f"{len(n.node.output)} outputs")
    values = []
    for name, array in zip(n.node.output, outputs):
        if name:
            n.constants[name] = array
        values.append(build(ops.CONSTANT, [], {"value": dense(array, n)}, loc=n.location))
    return values
