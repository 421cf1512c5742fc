"""Reading a dlc graph and rewriting it by tables of rules.

A rule is a small named function `rule(op) -> list[ir.Value] | None`: it inspects `op` (a dlc
op), returns None when it does not apply, or builds the replacement (with `build(...,
loc=op.location)`, the insertion point is already set before `op`) and returns the values that
replace `op`'s results. All checks come before the first op is built. `apply_rules(module,
table)` runs a table {OpDef: [rule, ...]} with MLIR's greedy driver (so rules chain until
nothing applies). Upstream DCE does not touch IRDL ops, so the driver erases dead dlc ops
itself: those dead before the pass, and as it goes the producers a replacement leaves unused.
So `uses` and `single_use` count live uses in a rule, never a consumer already replaced.

The driver checks what a rule returns before MLIR sees it (a list with one `ir.Value` per
result of the op, of the result's type, not the op's own result) and raises `RuleError` (a
`DlcError`, reported by a pass at the op's location) naming the rule and the op otherwise, or
when the rule raises. A rule that fails on an op the verifier rejects (IR that did not go
through `dlc-verify`) does not apply: the verifier reports that op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from mlir import ir
from mlir.rewrite import GreedyRewriteConfig, RewritePatternSet, apply_patterns_and_fold_greedily

from dlc.dialects import ShapeError, build, check_op, op_def, ops
from dlc.dialects.movement import CONCAT
from dlc.passes.blocked_copy import contiguous
from dlc.passes.registry import PassFailure
from dlc.passes.walk import ops_where
from dlc.runtime.jit import numpy_dtype

Rule = Callable[[ir.OpView], "list[ir.Value] | None"]
RuleTable = Mapping[ops.OpDef, Sequence[Rule]]


# ----------------------------------------------------------------------------- reading


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op that produces `value`; None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


def producer(value: ir.Value, *definitions: ops.OpDef) -> ir.Operation | None:
    """The op producing `value` when it is one of `definitions`, else None."""
    owner = defining_op(value)
    if owner is None or owner.name not in {d.name for d in definitions}:
        return None
    return owner


def attributes(op: ir.Operation | ir.OpView) -> dict[str, Any]:
    """The dlc op's attributes as Python values (ints, lists, strings, types)."""
    return op_def(op).python_attributes(op.operation)


def uses(value: ir.Value) -> int:
    """How many ops read `value` (all live in a rule: the driver erases dead dlc ops)."""
    return sum(1 for _ in value.uses)


def single_use(value: ir.Value) -> bool:
    """Whether one op reads `value` (so a rewrite of that op may consume it)."""
    return uses(value) == 1


def size(t: ir.RankedTensorType) -> int:
    return int(np.prod(t.shape, dtype=np.int64))


def dtype_of(element: ir.Type) -> np.dtype | None:
    try:
        return numpy_dtype(element)
    except TypeError:
        return None


def elements_to_numpy(attr: ir.DenseElementsAttr) -> np.ndarray | None:
    """The value of a dense attribute as a numpy array of its element type."""
    t = attr.type
    dtype = dtype_of(t.element_type)
    if dtype is None:
        return None
    if attr.is_splat:  # read one element (np.array of some splats reads past their value)
        one = ir.RankedTensorType.get([1], t.element_type, loc=ir.Location.unknown())
        value = np.array(ir.DenseElementsAttr.get_splat(one, attr.get_splat_value()))
        return np.full(list(t.shape), value.reshape(()), dtype=dtype)
    # (a read-only view of the attribute's data: callers that transpose or slice it copy it
    # once, not twice; ResNet-50's 53 filters: 10 ms)
    return np.asarray(attr).astype(dtype, copy=False).reshape(list(t.shape))


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The value of `value` when a `dlc.constant` produces it, else None."""
    owner = producer(value, ops.CONSTANT)
    if owner is None:
        return None
    return elements_to_numpy(ir.DenseElementsAttr(owner.attributes["value"]))


def splat(value: ir.Value) -> float | int | bool | None:
    """The one value every element of a constant `value` holds, else None."""
    array = constant_array(value)
    if array is None or array.size == 0:
        return None
    first = array.reshape(-1)[0]
    if not np.all(array == first):
        return None
    return first.item()


def is_splat_of(value: ir.Value, number: float) -> bool:
    found = splat(value)
    return found is not None and not isinstance(found, bool) and found == number


# ----------------------------------------------------------------------------- building


def numpy_to_elements(array: np.ndarray, element: ir.Type) -> ir.DenseElementsAttr:
    """A dense attribute of type tensor<shape x element> holding `array` (a splat if uniform)."""
    shape = list(array.shape)
    array = contiguous(np.asarray(array).astype(numpy_dtype(element), copy=False))
    flat = array.reshape(-1)
    # (the first two elements differ in nearly every weight: no pass over all of it then)
    uniform = flat.size > 1 and bool(flat[1] == flat[0]) and bool(np.all(flat == flat[0]))
    if uniform:
        array = flat[:1]
    if isinstance(element, ir.IntegerType) and element.is_unsigned:
        attr = ir.DenseElementsAttr.get(array, type=element)
    else:
        attr = ir.DenseElementsAttr.get(array)
    if not uniform:
        return attr
    t = ir.RankedTensorType.get(shape, element, loc=ir.Location.unknown())
    return ir.DenseElementsAttr.get_splat(t, attr.get_splat_value())


def constant(array: np.ndarray, element: ir.Type, loc: ir.Location) -> ir.Value:
    """A `dlc.constant` of `array` with element type `element`."""
    return build(ops.CONSTANT, [], {"value": numpy_to_elements(np.asarray(array), element)},
                 loc=loc)


def concatenated(values: Sequence[ir.Value], axis: int, loc: ir.Location) -> ir.Value:
    """`values` joined along `axis` (dlc.concat is binary: a left fold)."""
    joined = values[0]
    for value in values[1:]:
        joined = build(CONCAT, [joined, value], {"axis": axis}, loc=loc)
    return joined


# ----------------------------------------------------------------------------- the driver


def functions(module: ir.Operation) -> Iterator[ir.Block]:
    """The body block of each function of `module`."""
    for region in module.regions:
        for block in region.blocks:
            for op in block.operations:
                for inner in op.regions:
                    yield from inner.blocks


def erase_dead(module: ir.Operation) -> None:
    """Erase the dlc ops whose results are unused (dlc ops have no side effects)."""
    for block in functions(module):
        for op in reversed(list(block.operations)):
            op = op.operation
            if op_def(op) is not None and all(uses(r) == 0 for r in op.results):
                op.erase()


class RuleError(PassFailure):
    """A rule failed, or returned values that cannot replace its op: a bug in the rule (a
    PassFailure, so a DlcError).

    Raised by the driver before MLIR sees the replacement (MLIR asserts, and the process
    aborts, on a wrong count); the message names the rule (its function name) and the op, and
    a pass reports it at the op's location.
    """


def _name(rule: Rule) -> str:
    return getattr(rule, "__name__", None) or repr(rule)


def _unverified(op: ir.Operation) -> bool:
    """Whether `op` or a dlc op producing one of its operands breaks its shape rules.

    Rules read attributes (a perm, axes) as the verifier guarantees them; on IR that never
    went through `dlc-verify` they may fail, which is the IR's fault, not the rule's.
    """
    producers = [defining_op(v) for v in op.operands]
    return any(o is not None and check_op(o) is not None for o in [op, *producers])


def _checked(rule: Rule, op: ir.OpView, values: Any) -> list[ir.Value]:
    """`values` when they can replace `op`'s results (count, kind, types); else RuleError."""
    what = f"rule '{_name(rule)}' on '{op.name}' at {op.location}"
    if not isinstance(values, list | tuple):
        raise RuleError(f"{what} returned a {type(values).__name__}; a rule returns a list of "
                        "values (one per result of the op) or None", op.location)
    results = list(op.results)
    if len(values) != len(results):
        raise RuleError(f"{what} returned {len(values)} replacement value(s) for an op with "
                        f"{len(results)} result(s)", op.location)
    for index, (value, result) in enumerate(zip(values, results)):
        if not isinstance(value, ir.Value):
            raise RuleError(f"{what}: replacement {index} is a {type(value).__name__}, not an "
                            "ir.Value", op.location)
        if value.type != result.type:
            raise RuleError(f"{what}: replacement {index} has type {value.type} but result "
                            f"{index} of the op has type {result.type}", op.location)
        owner = defining_op(value)
        if owner is not None and owner == op.operation:
            raise RuleError(f"{what} replaces the op by its own result {index}", op.location)
    return list(values)


def dynamic(op: ir.Operation | ir.OpView) -> bool:
    """Whether an operand or result of `op` has a dynamic size (`?`)."""
    return any(isinstance(v.type, ir.ShapedType) and not ir.ShapedType(v.type).has_static_shape
               for v in [*op.operands, *op.results])


def takes_dynamic(rule: Rule) -> Rule:
    """Mark `rule` as one that computes nothing from its op's sizes (it rewrites elements:
    pow(x, 3) -> x*x*x), so that it applies to ops with a dynamic size too."""
    rule.takes_dynamic = True
    return rule


def _apply(rule: Rule, op: ir.OpView) -> list[ir.Value] | None:
    """What `rule` replaces `op` with, checked; None when it does not apply (graph rules
    compute with static sizes: an op with a dynamic size is left as it is, but by the rules
    marked `takes_dynamic`)."""
    if dynamic(op) and not getattr(rule, "takes_dynamic", False):
        return None
    try:
        values = rule(op)
    except ShapeError:  # a replacement that would not type-check: no match
        return None
    except Exception as error:
        if _unverified(op):
            return None  # (the verifier reports the op at its location)
        raise RuleError(f"rule '{_name(rule)}' on '{op.name}' at {op.location} failed: "
                        f"{type(error).__name__}: {error}", op.location) from error
    if values is None:
        return None
    try:
        return _checked(rule, op, values)
    except RuleError:
        if _unverified(op):
            return None
        raise


def _erase_unused_producers(values: list[ir.Value], rewriter) -> None:
    """Erase the dlc ops producing `values` that nothing reads any more, and theirs in turn."""
    pending: list[ir.Operation] = []

    def push(value: ir.Value) -> None:
        owner = defining_op(value)
        if owner is not None and op_def(owner) is not None and owner not in pending:
            pending.append(owner)

    for value in values:
        push(value)
    while pending:
        op = pending.pop()
        if any(uses(r) for r in op.results):
            continue
        operands = list(op.operands)
        rewriter.erase_op(op)  # (nothing reads it, so no op still pending reads it)
        for value in operands:
            push(value)


def _dispatch(rules: Sequence[Rule]) -> Callable:
    def rewrite(op: ir.OpView, rewriter) -> bool | None:
        with rewriter.ip, op.location:  # what rules build is located at the op they replace
            for rule in rules:
                values = _apply(rule, op)
                if values is not None:
                    operands = list(op.operands)
                    rewriter.replace_op(op, values)
                    _erase_unused_producers(operands, rewriter)
                    return None
        return True

    return rewrite


def apply_rules(module: ir.Operation, table: RuleTable) -> None:
    """Apply the rules of `table` until none applies, erasing dead dlc ops before and as it
    goes (so that rules count live uses only), and those left dead after."""
    patterns = RewritePatternSet()
    for definition, rules in table.items():
        patterns.add(definition.name, _dispatch(rules))
    erase_dead(module)
    # (MLIR's default of 10 sweeps is not enough where a rewrite travels along the graph one
    # step a sweep: convert-layout's transposes through timm's RepVGG-A0, 22 blocks, failed to
    # converge; a bound that grows with the graph still ends a rule set that never settles)
    config = GreedyRewriteConfig()
    config.max_iterations = 10 + len(ops_where(module, lambda _op: True)) // 4
    apply_patterns_and_fold_greedily(module, patterns.freeze(), config)
    erase_dead(module)


def merge(*tables: RuleTable) -> dict[ops.OpDef, list[Rule]]:
    """One table with the rules of each of `tables`, in order."""
    merged: dict[ops.OpDef, list[Rule]] = {}
    for table in tables:
        for definition, rules in table.items():
            merged.setdefault(definition, []).extend(rules)
    return merged
