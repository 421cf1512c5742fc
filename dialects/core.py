"""The machinery behind the `dlc` dialect: op definitions, IRDL, building and verifying ops.

An op is declared once, as an `OpDef` in `dialects/ops.py`: its operands, its attributes and
the function that infers its result types. From those declarations this module generates the
IRDL text that registers the dialect in a Context (`make_context`), builds ops with inferred
result types (`build`), and verifies a module's `dlc` ops (`verify`), reporting each problem at
the op's location. IRDL only checks operand counts and coarse types; every shape rule lives in
the inference functions.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from mlir import ir
from mlir.dialects import irdl

from dlc.errors import DlcError

DIALECT = "dlc"


class ShapeError(DlcError, ValueError):
    """An op's operands or attributes are inconsistent (raised by inference functions)."""


# Attribute kinds: how a Python value maps to an MLIR attribute, and which IRDL base checks it.
_IRDL_BASE = {
    "int": "#builtin.integer",
    "float": "#builtin.float",
    "ints": "#builtin.dense_array",
    "floats": "#builtin.dense_array",
    "type": "#builtin.type",
    "elements": "#builtin.dense_int_or_fp_elements",
    "str": "#builtin.string",
}


def _check_array(attr: ir.Attribute, element: str) -> None:
    # casting an `array<index>` (or i1...) to a Dense*ArrayAttr aborts the process in C++
    if not str(attr).startswith((f"array<{element}>", f"array<{element}:")):
        raise ValueError(f"expected an array<{element}: ...>, got {attr}")


def attr_to_python(kind: str, attr: ir.Attribute) -> Any:
    if kind in ("ints", "floats"):
        _check_array(attr, "i64" if kind == "ints" else "f64")
    if kind == "int":
        return ir.IntegerAttr(attr).value
    if kind == "float":
        return ir.FloatAttr(attr).value
    if kind == "ints":
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]
    if kind == "floats":
        return [float(v) for v in ir.DenseF64ArrayAttr(attr)]
    if kind == "type":
        return ir.TypeAttr(attr).value
    if kind == "str":
        return ir.StringAttr(attr).value
    return attr


def python_to_attr(kind: str, value: Any) -> ir.Attribute:
    if isinstance(value, ir.Attribute):
        return value
    if kind == "int":
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
    if kind == "float":
        return ir.FloatAttr.get(ir.F32Type.get(), float(value))
    if kind == "ints":
        return ir.DenseI64ArrayAttr.get([int(v) for v in value])
    if kind == "floats":
        return ir.DenseF64ArrayAttr.get([float(v) for v in value])
    if kind == "type":
        return ir.TypeAttr.get(value)
    if kind == "str":
        return ir.StringAttr.get(str(value))
    raise TypeError(f"cannot make a {kind!r} attribute from {value!r}")


InferFn = Callable[[list[ir.RankedTensorType], dict[str, Any]], list[ir.Type]]


@dataclass(frozen=True, eq=False)  # identity-hashed: usable as a dict key
class OpDef:
    """One `dlc` op: its name, operands, attributes and result-type inference.

    `operands` names each operand; a trailing `?` marks an optional one, a leading `*` a
    variadic one (at most one optional or variadic operand per op: IRDL needs segment sizes
    beyond that; and every value of a variadic operand must have the same type, since IRDL
    binds one constraint variable for all of them — ops taking operands of different shapes
    chain binary ops instead, as concat and einsum do). `attributes` maps each attribute name to its kind (see `_IRDL_BASE`):
    int (i64), float (f32), ints (array<i64>), floats (array<f64>), str, type, elements.
    """

    mnemonic: str
    operands: tuple[str, ...]
    infer: InferFn
    attributes: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    results: tuple[str, ...] = ("out",)  # names; the inference returns one type each

    @property
    def name(self) -> str:
        return f"{DIALECT}.{self.mnemonic}"

    def irdl(self) -> str:
        lines = [f"  irdl.operation @{self.mnemonic} {{"]
        specs = []
        for i, operand in enumerate(self.operands):
            lines.append(f'    %in{i} = irdl.base "!builtin.tensor"')
            name, mode = _operand_mode(operand)
            specs.append(f"{name}: {mode}%in{i}")
        for result in self.results:
            lines.append(f'    %r_{result} = irdl.base "!builtin.tensor"')
        for attr, kind in self.attributes.items():
            lines.append(f'    %a_{attr} = irdl.base "{_IRDL_BASE[kind]}"')
        if specs:
            lines.append(f"    irdl.operands({', '.join(specs)})")
        lines.append(f"    irdl.results({', '.join(f'{r}: %r_{r}' for r in self.results)})")
        if self.attributes:
            pairs = ", ".join(f'"{a}" = %a_{a}' for a in self.attributes)
            lines.append(f"    irdl.attributes {{{pairs}}}")
        lines.append("  }")
        return "\n".join(lines)

    def python_attributes(self, op: ir.Operation) -> dict[str, Any]:
        return {a: attr_to_python(k, op.attributes[a]) for a, k in self.attributes.items()}


def _operand_mode(operand: str) -> tuple[str, str]:
    if operand.startswith("*"):
        return operand[1:], "variadic "
    if operand.endswith("?"):
        return operand[:-1], "optional "
    return operand, ""


_REGISTRY: dict[str, OpDef] = {}


def define(op: OpDef) -> OpDef:
    """Register an op definition; returns it so that `ADD = define(OpDef(...))` reads well."""
    if op.name in _REGISTRY:
        raise ValueError(f"op {op.name} defined twice")
    _REGISTRY[op.name] = op
    return op


@cache
def _import_op_modules() -> None:
    """Import each module of `dlc.dialects` once: importing a module registers its ops."""
    package = sys.modules[__package__]  # (dlc.dialects, imported before this module)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"dlc.dialects.{module.name}")


def registered_ops() -> dict[str, OpDef]:
    """Every dlc op by name."""
    _import_op_modules()
    return dict(_REGISTRY)


def irdl_text() -> str:
    body = "\n".join(op.irdl() for op in registered_ops().values())
    return f"irdl.dialect @{DIALECT} {{\n{body}\n}}\n"


def _python_module() -> None:
    """Give the bindings a Python module for the `dlc` namespace.

    Each time the bindings wrap an op (`value.owner`, `block.operations`), they import
    `mlir.dialects.<namespace>` to find its op classes, and they do not remember an import that
    failed: for `dlc`, every wrap searched sys.path (0.15 ms each; 0.6 s of one graph pass on
    ResNet-50). An empty module, found in sys.modules, is remembered as loaded.
    """
    name = f"mlir.dialects.{DIALECT}"
    if name not in sys.modules:
        sys.modules[name] = types.ModuleType(name, "dlc ops are IRDL-defined: no OpView classes")


def load_dialect(context: ir.Context) -> None:
    """Register the `dlc` dialect (and every upstream dialect) in `context`."""
    _python_module()
    with context:
        context.load_all_available_dialects()
        irdl.load_dialects(ir.Module.parse(irdl_text()))


def make_context() -> ir.Context:
    """The one way dlc makes a Context: upstream dialects plus `dlc`."""
    context = ir.Context()
    load_dialect(context)
    return context


def op_def(op: ir.Operation | ir.OpView) -> OpDef | None:
    _import_op_modules()
    return _REGISTRY.get(op.operation.name)


def tensor_types(values: Sequence[ir.Value]) -> list[ir.RankedTensorType]:
    types = []
    for i, value in enumerate(values):
        if not isinstance(value.type, ir.RankedTensorType):
            raise ShapeError(f"operand #{i} must be a ranked tensor, got {value.type}")
        types.append(value.type)
    return types


def infer_types(op: OpDef, operands: Sequence[ir.Value], attrs: dict[str, Any]) -> list[ir.Type]:
    return op.infer(tensor_types(operands), attrs)


def build(
    op: OpDef,
    operands: Sequence[ir.Value],
    attributes: dict[str, Any] | None = None,
    *,
    loc: ir.Location | None = None,
    ip: ir.InsertionPoint | None = None,
) -> ir.Value:
    """Create `op` with its result types inferred; raises ShapeError on inconsistent input.

    Returns the first result (`value.owner.results` has all of them; see `build_all`).
    """
    attributes = attributes or {}
    missing = set(op.attributes) - set(attributes)
    if missing:
        raise ShapeError(f"{op.name} needs attributes {sorted(missing)}")
    attrs = {a: python_to_attr(op.attributes[a], attributes[a]) for a in op.attributes}
    py_attrs = {a: attr_to_python(op.attributes[a], v) for a, v in attrs.items()}
    result_types = infer_types(op, operands, py_attrs)
    created = ir.Operation.create(
        op.name, results=result_types, operands=list(operands), attributes=attrs, loc=loc, ip=ip
    )
    return created.results[0]


def build_all(op: OpDef, operands: Sequence[ir.Value], attributes: dict[str, Any] | None = None,
              *, loc: ir.Location | None = None, ip: ir.InsertionPoint | None = None
              ) -> list[ir.Value]:
    """`build` returning every result of the op."""
    first = build(op, operands, attributes, loc=loc, ip=ip)
    return list(first.owner.results)


def check_op(operation: ir.Operation) -> str | None:
    """The reason `operation` (a dlc op) is invalid, or None when it is valid."""
    definition = op_def(operation)
    if definition is None:
        return None
    try:
        attributes = definition.python_attributes(operation)
    except (ValueError, TypeError) as error:  # IRDL checks the kind, not the element type
        return f"has an attribute of the wrong type: {error}"
    try:
        expected = infer_types(definition, list(operation.operands), attributes)
    except ShapeError as error:
        return str(error)
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError) as error:
        # hand-written IR can hold values no importer builds (an axis out of range...)
        return f"has operands or attributes its shape rule rejects ({type(error).__name__}: " \
            f"{error})"
    actual = [r.type for r in operation.results]
    if actual != expected:
        have = ", ".join(str(t) for t in actual)
        want = ", ".join(str(t) for t in expected)
        return f"result type {have} does not match the inferred type {want}"
    return None


def verify(root: ir.Operation) -> list[tuple[ir.Location, str]]:
    """Check every dlc op under `root`; returns (location, message) for each invalid one."""
    problems: list[tuple[ir.Location, str]] = []

    def visit(operation: ir.Operation) -> ir.WalkResult:
        reason = check_op(operation)
        if reason is not None:
            problems.append((operation.location, f"'{operation.name}' op {reason}"))
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return problems
