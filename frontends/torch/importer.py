"""PyTorch → dlc dialect importer: a graph of core ATen ops becomes `func.func @main`.

Contract: `import_torch(module, example_inputs, context)` exports an `nn.Module` with
`torch.export.export(module, example_inputs).run_decompositions()` (the core ATen opset) and
imports the result; `import_graph` imports any FX graph of ATen ops whose nodes carry example
values (`node.meta["val"]`), which is what AOTAutograd hands the torch.compile backend. The
function's arguments are the graph's tensor inputs (parameters and buffers of an exported
program become `dlc.constant`s instead), its results the graph's outputs, and each node
becomes the dlc ops of its converter (the `ATEN` tables of the `aten_*.py` modules),
located at `loc("<node name>"("<user file>":<line>:0))`, the line of the user's code that
produced it. Import is 1:1 and does no optimization. Every problem is a `FrontendError`
naming the node and its source line; unsupported ops are all listed in one
`UnsupportedAtenOpsError`.

Sizes are static, but for one: `import_graph(dynamic=symbol)` imports a graph with symbolic
sizes (torch.compile(dynamic=True)'s, whose example values have sizes such as `s27`) with
that symbol as the function's one dynamic size `?` (`tensor<1x?x768xf32>`): size inputs
(SymInts) and shape arithmetic become sizes (`aten_node.size`: the symbol, or a constant),
any other size (`2 * s27`, a second symbol) is refused, and only the ops of `DYNAMIC_ATEN`,
whose converters take `?`, are imported so (`dynamic_import_reason`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
import torch
from mlir import ir
from mlir.dialects import func
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind

from dlc.dialects import build, ops
from dlc.frontends.common import FrontendError, ImportedModel, dense
from dlc.frontends.torch import (
    aten_image,
    aten_index,
    aten_movement,
    aten_nn,
    aten_ops,
    aten_recurrent,
    aten_reduce,
)
from dlc.frontends.torch.aten_node import (
    AtenNode,
    Converter,
    Derived,
    Rows,
    UnsupportedAtenOpsError,
    describe,
    dynamic_size,
    dynamic_symbol,
    element_type,
    node_location,
    size,
    tensor_type,
    to_numpy,
)

# nodes that compute nothing the compiled function needs (runtime checks of shapes/values)
IGNORED = {
    "aten._assert_tensor_metadata.default",
    "aten._assert_scalar.default",
    "aten.sym_constrain_range_for_size.default",
    "aten._assert_async.msg",
}


# the ATen ops whose converters take a dynamic size (`?`): they read no static size from
# their operands but the ones they keep, or handle `?` (slice, arange, select, split, cat);
# a graph with any other op is not imported with a dynamic size (`dynamic_import_reason`)
DYNAMIC_ATEN = frozenset({
    *(f"aten.{name}.default" for name in (
        "relu", "gelu", "silu", "hardsigmoid", "hardswish", "leaky_relu", "elu", "hardtanh",
        "clamp", "rsqrt", "sigmoid", "tanh", "exp", "log", "sqrt", "neg", "abs", "erf",
        "reciprocal", "floor", "ceil", "sign", "round", "maximum", "minimum",
        "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_not",
        "clone", "alias", "detach", "lift_fresh_copy", "dropout", "_to_copy", "full_like",
        "full", "scalar_tensor", "arange", "view", "_unsafe_view", "reshape", "unsqueeze",
        "squeeze", "permute", "t", "expand", "cat", "embedding", "index_select", "gather",
        "_softmax", "_log_softmax", "native_layer_norm", "mm", "bmm", "addmm", "baddbmm",
        "amax", "amin", "split_with_sizes")),
    *(f"aten.{name}.{overload}" for name in ("add", "sub", "mul", "div")
      for overload in ("Tensor", "Scalar")),
    *(f"aten.{name}.{overload}" for name in ("eq", "ne", "lt", "le", "gt", "ge")
      for overload in ("Tensor", "Scalar")),
    *(f"aten.bitwise_{name}.{overload}" for name in ("and", "or", "xor")
      for overload in ("Tensor", "Scalar")),
    "aten.true_divide.Tensor", "aten.rsub.Scalar", "aten.rsub.Tensor",
    "aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor",
    "aten.clamp.Tensor", "aten.where.self", "aten.arange.start", "aten.arange.start_step",
    "aten.squeeze.dim", "aten.squeeze.dims", "aten.flatten.using_ints", "aten.transpose.int",
    "aten.slice.Tensor", "aten.select.int", "aten.split.Tensor", "aten.split.sizes",
    "aten.sum.dim_IntList", "aten.mean.dim", "aten.any.dim", "aten.any.dims",
    "aten.all.dim", "aten.sym_size.int", "aten.index.Tensor",
    "prims.convert_element_type.default",
})


TABLES = (aten_ops, aten_movement, aten_index, aten_reduce, aten_nn, aten_image, aten_recurrent)


@cache
def converters() -> dict[str, Converter]:
    """ATen overload name -> converter, from the `ATEN` table of each family's module."""
    table: dict[str, Converter] = {}
    for family in TABLES:
        clash = set(table) & set(family.ATEN)
        if clash:
            raise RuntimeError(f"ATen ops {sorted(clash)} converted by two tables")
        table.update(family.ATEN)
    return table


def supported_aten_ops() -> list[str]:
    """The ATen overloads dlc converts, e.g. 'aten.add.Tensor'."""
    return sorted(converters())


# ----------------------------------------------------------------------------- torch.export


def export_module(module: torch.nn.Module, example_inputs: Sequence) -> ExportedProgram:
    """`module` exported on `example_inputs` and decomposed to the core ATen opset."""
    if not isinstance(example_inputs, tuple | list):
        raise FrontendError("example_inputs must be a tuple of example arguments, e.g. (x,)")
    try:
        exported = torch.export.export(module, tuple(example_inputs))
        return exported.run_decompositions(decompositions())
    except Exception as error:  # torch raises many kinds; say which step failed
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise FrontendError(f"torch.export could not export {type(module).__name__}: "
                            f"{type(error).__name__}: {message}") from error


def import_torch(model: Any, example_inputs: Sequence | None = None,
                 context: ir.Context | None = None, dynamic: Any = None) -> ImportedModel:
    """Import an `nn.Module` (exported on `example_inputs`) or an `ExportedProgram` (with
    `dynamic`, one of its symbols, as the dynamic size: `import_graph`)."""
    if isinstance(model, ExportedProgram):
        return import_exported(_decomposed(model), context, dynamic)
    if not isinstance(model, torch.nn.Module):
        raise FrontendError(f"example_inputs is given, so a torch.nn.Module or an "
                            f"ExportedProgram is expected, got {type(model).__name__}")
    if example_inputs is None:
        raise FrontendError("compiling a torch.nn.Module needs example_inputs=(x, ...): "
                            "torch.export traces the module on them")
    if model.training:
        raise FrontendError(f"{type(model).__name__} is in training mode; dlc compiles "
                            "inference graphs: call model.eval() first")
    return import_exported(export_module(model, example_inputs), context)


def _decomposed(exported: ExportedProgram) -> ExportedProgram:
    """`exported` itself when dlc converts all its ops already, else its core ATen form."""
    table = converters()
    if all(str(n.target) in table or n.target is operator.getitem
           for n in exported.graph.nodes if n.op == "call_function"):
        return exported
    return exported.run_decompositions(decompositions())


def decompositions() -> Any:
    """torch.export's core-ATen decompositions but for the ops dlc converts whole
    (`aten_recurrent.KEPT`: decomposed, a recurrent layer is unrolled over its steps)."""
    table = torch.export.default_decompositions()
    for op in aten_recurrent.KEPT:
        table.pop(op, None)
    return table


def import_exported(exported: ExportedProgram, context: ir.Context, dynamic: Any = None
                    ) -> ImportedModel:
    """Import an exported program whose graph holds core ATen ops (`dynamic`: as in
    `import_graph`)."""
    signature = exported.graph_signature
    constants: dict[str, torch.Tensor] = {}
    for spec in signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            continue
        if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            raise FrontendError(f"input '{spec.arg.name}' ({spec.kind.name}) is not supported")
        state = exported.state_dict if spec.target in exported.state_dict else \
            exported.constants
        constants[spec.arg.name] = state[spec.target]
    for spec in signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise FrontendError(f"the model updates '{spec.target}' ({spec.kind.name}); dlc "
                                "compiles inference graphs: call model.eval() before export")
    return import_graph(exported.graph_module.graph, context, constants, dynamic=dynamic)


# ----------------------------------------------------------------------------- FX graphs


def check_supported(graph: torch.fx.Graph) -> None:
    unsupported: dict[str, list[str]] = {}
    table = converters()
    for node in graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        target = str(node.target)
        if node.target is operator.getitem or target in IGNORED or target in table or \
                _is_scalar_operator(node):
            continue
        unsupported.setdefault(target, []).append(describe(node))
    if unsupported:
        raise UnsupportedAtenOpsError(unsupported, supported_aten_ops())


def one_symbol(tensors: Sequence[torch.Tensor], fixed: Sequence[Any] = ()
               ) -> tuple[Any, str | None]:
    """(the one symbol of these example tensors' symbolic sizes but those of `fixed`, None),
    or (None, why not: none or several, or a size that is no bare symbol)."""
    symbols = {d.node.expr for value in tensors for d in value.shape
               if not isinstance(d, int)} - set(fixed)
    if len(symbols) != 1 or not next(iter(symbols)).is_Symbol:
        return None, (f"its inputs have {len(symbols)} symbolic sizes "
                      f"({', '.join(sorted(map(str, symbols)))}), not one")
    return next(iter(symbols)), None


def dynamic_import_reason(graph: torch.fx.Graph) -> str | None:
    """Why `import_graph(dynamic=...)` does not take this graph (its ops that do not take a
    dynamic size yet), or None when it may."""
    others = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"
                     and n.target is not operator.getitem and not _is_scalar_operator(n)
                     and str(n.target) not in IGNORED and str(n.target) not in DYNAMIC_ATEN})
    if others:
        return f"its ops {', '.join(others)} do not take a dynamic size yet"
    return None


def import_graph(graph: torch.fx.Graph, context: ir.Context,
                 constants: Mapping[str, torch.Tensor] | None = None,
                 attributes: torch.nn.Module | None = None,
                 dynamic: Any = None, fixed: Mapping[Any, int] | None = None) -> ImportedModel:
    """Import an FX graph of ATen ops. Placeholders named in `constants` become constants;
    `get_attr` nodes read their tensors from `attributes` (the GraphModule). `dynamic`, a
    symbol of the graph's symbolic sizes (torch's `s0`), is imported as the function's one
    dynamic size `?`: size inputs (SymInts) equal to it are no inputs of the function, and
    any other symbolic size is a FrontendError (`aten_node.size`), but for the symbols of
    `fixed`, imported at their values (a batch at 1: the graph's row function)."""
    if dynamic is None:
        return _import_graph(graph, context, constants, attributes)
    reason = dynamic_import_reason(graph)
    if reason:
        raise FrontendError(f"the graph cannot be imported with a dynamic size: {reason}")
    with dynamic_size(dynamic, fixed):
        imported = _import_graph(graph, context, constants, attributes)
    imported.dynamic_size = str(dynamic)
    return imported


def _import_graph(graph: torch.fx.Graph, context: ir.Context,
                  constants: Mapping[str, torch.Tensor] | None,
                  attributes: torch.nn.Module | None) -> ImportedModel:
    check_supported(graph)
    constants = dict(constants or {})
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    sizes = {n: size(n.meta["val"], f"graph input '{n.name}'") for n in placeholders
             if dynamic_symbol() is not None and n.name not in constants
             and isinstance(n.meta.get("val"), torch.SymInt)}
    inputs = [n for n in placeholders if n.name not in constants and n not in sizes]
    with context, ir.Location.name("main"):
        module = ir.Module.create()
        arg_types = [_input_type(n) for n in inputs]
        function = func.FuncOp("main", (arg_types, []), ip=ir.InsertionPoint(module.body))
        block = function.add_entry_block()
        values: dict[torch.fx.Node, Any] = {**dict(zip(inputs, block.arguments)), **sizes}
        with ir.InsertionPoint(block):
            for node in placeholders:
                if node.name in constants:
                    values[node] = _constant(constants[node.name], node)
            results = _import_nodes(graph, values, attributes)
            func.ReturnOp(results)
        function.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [r.type for r in results]))
    output = next(n for n in graph.nodes if n.op == "output")
    names = [n.name if isinstance(n, torch.fx.Node) else f"output_{i}"
             for i, n in enumerate(_flat(output.args[0]))]
    return ImportedModel(module, [n.name for n in inputs], names, opset=0)


def _input_type(node: torch.fx.Node) -> ir.Type:
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        raise FrontendError(f"graph input '{node.name}' is {type(value).__name__}, not a "
                            "tensor; dlc compiles functions of tensors")
    return tensor_type(value, f"graph input '{node.name}'")


def _constant(tensor: torch.Tensor, node: torch.fx.Node) -> ir.Value:
    array = to_numpy(tensor, f"constant '{node.name}'")
    return build(ops.CONSTANT, [], {"value": dense(np.asarray(array))},
                 loc=node_location(node))


def _flat(value: Any) -> list:
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def _import_nodes(graph: torch.fx.Graph, values: dict[torch.fx.Node, Any],
                  attributes: torch.nn.Module | None) -> list[ir.Value]:
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "get_attr":
            values[node] = _constant(_attribute(attributes, node), node)
        elif dynamic_symbol() is not None and isinstance(node.meta.get("val"), torch.SymInt):
            # (shape arithmetic of a symbolic graph: torch computed its value, a size)
            try:
                values[node] = size(node.meta["val"], describe(node))
            except FrontendError as error:  # (refused where an op other than a view uses it)
                values[node] = Derived(str(error))
        elif node.op == "call_function" and node.target is operator.getitem:
            values[node] = _getitem(node, values)
        elif node.op == "call_function" and _is_scalar_operator(node):
            values[node] = _scalar_operator(node, values)
        elif node.op == "call_function" and str(node.target) not in IGNORED:
            values[node] = _convert(node, values)
        elif node.op == "output":
            return [_result(node, leaf, values) for leaf in _flat(node.args[0])]
    raise FrontendError("the graph has no output node")


def _is_scalar_operator(node: torch.fx.Node) -> bool:
    """operator.ge, operator.mul...: shape arithmetic on Python ints (sym_size results)."""
    return node.op == "call_function" and getattr(node.target, "__module__", None) == \
        "_operator" and node.target is not operator.getitem


def _scalar_operator(node: torch.fx.Node, values: dict[torch.fx.Node, Any]) -> Any:
    args = torch.fx.node.map_arg(node.args, values.__getitem__)
    if not all(isinstance(a, int | float | bool) for a in args):
        raise FrontendError(f"{describe(node)}: {node.target.__name__} on tensors is not "
                            "supported (only on Python numbers, as in shape arithmetic)")
    return node.target(*args)


def _attribute(attributes: torch.nn.Module | None, node: torch.fx.Node) -> torch.Tensor:
    value = attributes
    for part in str(node.target).split("."):
        value = getattr(value, part, None)
    if not isinstance(value, torch.Tensor):
        raise FrontendError(f"{describe(node)}: attribute '{node.target}' is not a tensor")
    return value


def _getitem(node: torch.fx.Node, values: dict[torch.fx.Node, Any]) -> Any:
    source, index = node.args
    item = values[source][index]
    if item is None:
        raise FrontendError(f"{describe(node)}: output {index} of {source.target} (node "
                            f"'{source.name}') is not supported: dlc computes only the outputs "
                            "inference uses (a training graph saves it for the backward pass: "
                            "run the model under torch.no_grad())")
    return item


# the ops that take a linear layer's rows of a dynamic import (`aten_node.Rows`, `Derived`)
ROWS_OPS = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                      "aten.mm.default", "aten.addmm.default"})


def _convert(node: torch.fx.Node, values: dict[torch.fx.Node, Any]) -> Any:
    n = AtenNode(node, node_location(node))
    args = torch.fx.node.map_arg(node.args, values.__getitem__)
    kwargs = torch.fx.node.map_arg(node.kwargs, values.__getitem__)
    if str(node.target) not in ROWS_OPS:
        for leaf in _flat([*args, *kwargs.values()]):
            if isinstance(leaf, Derived):
                raise FrontendError(leaf.error)
            if isinstance(leaf, Rows):
                raise n.error("it takes a tensor whose rows count the dynamic size times "
                              "another size, which the dynamic import keeps for views, mm "
                              "and addmm only")
    with n.location:
        result = converters()[str(node.target)](n, *args, **kwargs)
    if not isinstance(result, Rows):
        _check_result(n, result)
    return result


def _check_result(n: AtenNode, result: Any) -> None:
    """The converter built what torch computes: same shapes and dtypes (a converter bug
    otherwise, reported rather than compiled into wrong numbers)."""
    expected, got = _flat(n.out), _flat(result)
    for want, value in zip(expected, got):
        if value is None or not isinstance(want, torch.Tensor):
            continue
        want_type = _expected_type(n, want, value)
        if value.type != want_type:
            raise n.error(f"dlc built {value.type} where torch computes {want_type} "
                          "(a bug in dlc's converter: please report it)")


def _expected_type(n: AtenNode, want: torch.Tensor, value: ir.Value) -> ir.Type:
    """The type torch computes; a data-dependent size (an index by a constant mask, whose
    value dlc knows) is taken from what dlc built."""
    shape = list(want.shape)
    if all(isinstance(d, int) for d in shape) or len(shape) != value.type.rank:
        return tensor_type(want, describe(n.node))
    static = [d if isinstance(d, int) else built for d, built in zip(shape, value.type.shape)]
    return ir.RankedTensorType.get(static, element_type(want.dtype, describe(n.node)))


def _result(node: torch.fx.Node, leaf: Any, values: dict[torch.fx.Node, Any]) -> ir.Value:
    if not isinstance(leaf, torch.fx.Node) or not isinstance(values.get(leaf), ir.Value):
        raise FrontendError(f"graph output {leaf!r} is not a tensor; dlc compiles functions "
                            "returning tensors")
    return values[leaf]


# ----------------------------------------------------------------------------- dynamic sizes


def dynamic_user_inputs(exported: ExportedProgram) -> list[tuple[str, torch.Tensor]] | None:
    """The user inputs (placeholder name, example value) of a program exported with
    `dynamic_shapes` (`torch.export.Dim`), when one of them has a symbolic size; else None
    (static, or inputs that are no tensors: the importer reports those)."""
    user = {s.arg.name for s in exported.graph_signature.input_specs
            if s.kind == InputKind.USER_INPUT}
    inputs = [(n.name, n.meta.get("val")) for n in exported.graph.nodes
              if n.op == "placeholder" and n.name in user]
    if not all(isinstance(v, torch.Tensor) for _, v in inputs) or all(
            isinstance(d, int) for _, v in inputs for d in v.shape):
        return None
    return inputs


def size_ranges(exported: ExportedProgram) -> dict[str, tuple[int, int | None]]:
    """The range [low, high] (high None: unbounded) of each symbolic size of a program
    exported with `torch.export.Dim`s, by the symbol's name."""
    ranges = {}
    for symbol, bounds in exported.range_constraints.items():
        low, high = bounds.lower, bounds.upper
        ranges[str(symbol)] = (int(low), int(high) if high.is_finite else None)
    return ranges


def dynamic_outputs(exported: ExportedProgram) -> list[tuple[str, torch.Tensor]]:
    """The outputs (name, example value) of an exported program, sizes symbolic or not."""
    output = next(n for n in exported.graph.nodes if n.op == "output")
    return [(r.name, r.meta["val"]) for r in _flat(output.args[0])
            if isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.Tensor)]


def specialized_program(exported: ExportedProgram, module: torch.nn.Module,
                        inputs: Sequence[tuple[str, torch.Tensor]],
                        input_shapes: Mapping[str, Sequence[int]]) -> ExportedProgram:
    """`module` (`exported.module()`) exported again on inputs of `input_shapes`: a static
    program; FrontendError when the program does not take them (a `Dim` range, a guard)."""
    args = tuple(torch.zeros(list(input_shapes[name]), dtype=value.dtype)
                 for name, value in inputs)
    try:
        return torch.export.export(module, args)
    except Exception as error:  # (torch raises many kinds: a Dim range, a guard)
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise FrontendError(f"the exported program does not take inputs of shapes "
                            f"{dict(input_shapes)}: {type(error).__name__}: {first}") from error

