"""Runtime bounds checks of the indices that gathers and scatters read from tensors.

ONNX allows an index `i` of an axis of size `n` in [-n, n - 1]; onnxruntime raises for any
other value, and so does dlc: a silently clamped index would be a wrong answer. The contract:

- `prepare(module)` (run by dlc-to-linalg before its patterns) numbers every checked op in walk
  order (the discardable attribute `dlc.check_id`), records what each check is about in the
  module attribute `dlc.index_checks` (an array of strings, one per id: the op, its ONNX node,
  the axis and its size) and declares the status global `_mlir_dlc_status` (`memref<2xi64>`,
  public so that LLVM keeps its stores and the runtime finds it). Indices that are constants
  are checked now instead: an out-of-range constant is a compile-time error naming the node.
- `emit(op, indices, bounds)` (called by the op's lowering pattern) adds the check before the
  op: a scalar loop over the indices that finds whether one is out of range and the first such
  value, then, on that cold path only, stores `[id + 1, value]` into the status global.
- The runtime (`dlc.runtime.jit.NativeFunction`) zeroes the status before a call and raises
  `IndexOutOfRangeError` with the check's description when it is set after the call.

The lowering itself still clamps every index (`indexing.safe_index`), so no memory outside the
tensors is ever touched, even before the runtime reports the error.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref, scf, tensor

from dlc.dialects import indexing, op_def
from dlc.passes.graph.match import constant_array

STATUS = "_mlir_dlc_status"  # (the runtime's raw_lookup("dlc_status") adds the `_mlir_` prefix)
CHECKS_ATTRIBUTE = "dlc.index_checks"
ID_ATTRIBUTE = "dlc.check_id"


def _int(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _bounds(op: ir.Operation) -> tuple[int, list[int], str]:
    """The checked op's indices operand, the bound of each index (one per component of an
    index tuple for the ND ops, else one), and what the bound is, for messages."""
    definition = op_def(op)
    data = op.operands[0].type
    def text(size: int) -> str:  # (the dynamic size: its value is the call's)
        return "?" if ir.ShapedType.is_dynamic_size(size) else str(size)

    if definition in (indexing.GATHER, indexing.GATHER_ELEMENTS, indexing.SCATTER_ELEMENTS):
        axis = _int(op, "axis")
        return 1, [data.shape[axis]], f"axis {axis} of size {text(data.shape[axis])}"
    batch_dims = _int(op, "batch_dims") if definition == indexing.GATHER_ND else 0
    k = op.operands[1].type.shape[-1]
    sizes = list(data.shape[batch_dims:batch_dims + k])
    return 1, sizes, (f"axes {list(range(batch_dims, batch_dims + k))} of sizes "
                      f"[{', '.join(map(text, sizes))}]")


CHECKED = (indexing.GATHER, indexing.GATHER_ELEMENTS, indexing.GATHER_ND,
           indexing.SCATTER_ELEMENTS, indexing.SCATTER_ND)


def node_name(location: ir.Location) -> str | None:
    """The ONNX node (or torch node) name that the importer gave the op's location."""
    text = str(location)
    if text.startswith('loc("') and text.endswith('")'):
        return text[5:-2]
    return None


def describe(op: ir.Operation, what: str) -> str:
    name = node_name(op.location)
    node = f" (node '{name}')" if name else ""
    return f"'{op.name}'{node}, indices into {what}"


def out_of_range(values: np.ndarray, bounds: Sequence[int]) -> tuple[int, int] | None:
    """The first index (value, bound) out of [-bound, bound - 1], else None; a tuple's
    components (the last axis of `values`) each have their own bound."""
    limits = np.asarray(bounds, dtype=np.int64)
    bad = (values < -limits) | (values >= limits)
    if not bad.any():
        return None
    position = np.unravel_index(int(np.argmax(bad)), bad.shape)
    value = int(values[position])
    return value, int(limits[position[-1]] if limits.size > 1 else limits[0])


def _always_in_range(element: ir.Type, bounds: Sequence[int]) -> bool:
    """Whether every value of the integer type `element` (signless read as signed) is in
    [-bound, bound - 1] for each bound: such indices need no check."""
    if not isinstance(element, ir.IntegerType) or element.width > 32:
        return False
    if element.is_unsigned:
        low, high = 0, (1 << element.width) - 1
    else:
        low, high = -(1 << (element.width - 1)), (1 << (element.width - 1)) - 1
    return all(-bound <= low and high <= bound - 1 for bound in bounds)


def prepare(module: ir.Operation) -> list[tuple[ir.Location, str]]:
    """Number the checked ops, record their descriptions, declare the status global; return
    the constant indices that are out of range (location, message)."""
    descriptions: list[str] = []
    problems: list[tuple[ir.Location, str]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op_def(op) not in CHECKED:
            return ir.WalkResult.ADVANCE
        operand, bounds, what = _bounds(op)
        indices = op.operands[operand]
        constant = constant_array(indices)
        if constant is not None and all(b >= 0 for b in bounds):  # (not a dynamic size)
            values = constant.astype(np.int64)
            found = out_of_range(values, bounds) if values.size else None
            if found is not None:
                value, bound = found
                message = (f"{describe(op, what)}: constant index {value} is out of range "
                           f"[-{bound}, {bound - 1}]")
                problems.append((op.location, message))
            return ir.WalkResult.ADVANCE
        if _always_in_range(indices.type.element_type, bounds):
            return ir.WalkResult.ADVANCE  # (8-bit indices into 256 entries: dlc-qdq-lut)
        i64 = ir.IntegerType.get_signless(64)
        op.attributes[ID_ATTRIBUTE] = ir.IntegerAttr.get(i64, len(descriptions))
        descriptions.append(describe(op, what))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    if descriptions:
        module.attributes[CHECKS_ATTRIBUTE] = ir.ArrayAttr.get(
            [ir.StringAttr.get(d) for d in descriptions])
        _declare_status(module)
    return problems


def descriptions(module: ir.Operation) -> tuple[str, ...]:
    """The descriptions that `prepare` recorded, one per check id (empty when none)."""
    if CHECKS_ATTRIBUTE not in module.attributes:
        return ()
    return tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(module.attributes[CHECKS_ATTRIBUTE]))


def _status_type() -> ir.MemRefType:
    return ir.MemRefType.get([2], ir.IntegerType.get_signless(64))


def _declare_status(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    for op in body.operations:
        if op.operation.name == "memref.global" and \
                ir.StringAttr(op.operation.attributes["sym_name"]).value == STATUS:
            return
    with ir.InsertionPoint(body), module.location:
        zeros = ir.DenseElementsAttr.get(np.zeros(2, np.int64), type=ir.RankedTensorType.get(
            [2], ir.IntegerType.get_signless(64)))
        memref.GlobalOp(sym_name=STATUS, type_=ir.TypeAttr.get(_status_type()),
                        initial_value=zeros)


def _const(value: int, type_: ir.Type) -> ir.Value:
    return arith.ConstantOp(type_, value).result


def emit(op: ir.Operation, indices: ir.Value, bounds: Sequence[int | ir.Value]) -> None:
    """Check `indices` before `op` (at the current insertion point and location): one bound
    (an index value where it is a dynamic size), or one per component of the last axis. Does
    nothing for an op `prepare` did not number."""
    if ID_ATTRIBUTE not in op.attributes:
        return
    check = _int(op, ID_ATTRIBUTE)
    i64, index = ir.IntegerType.get_signless(64), ir.IndexType.get()
    shape = list(indices.type.shape)
    if any(extent == 0 for extent in shape):
        return
    zero, one = _const(0, i64), _const(1, i64)

    def step(ivs: list[ir.Value], flag: ir.Value, first: ir.Value) -> list[ir.Value]:
        raw = tensor.extract(indices, ivs)
        value = raw if ir.IntegerType(raw.type).width == 64 else arith.extsi(i64, raw)
        def of(value: int | ir.Value) -> ir.Value:
            return arith.index_cast(i64, value) if isinstance(value, ir.Value) \
                else _const(value, i64)

        bound = of(bounds[0])
        for component in range(1, len(bounds)):  # (the ND ops: a bound per tuple component)
            is_it = arith.cmpi(arith.CmpIPredicate.eq, ivs[-1], _const(component, index))
            bound = arith.select(is_it, of(bounds[component]), bound)
        low = arith.cmpi(arith.CmpIPredicate.slt, value, arith.subi(zero, bound))
        high = arith.cmpi(arith.CmpIPredicate.sge, value, bound)
        bad = arith.extui(i64, arith.ori(low, high))
        # the first bad value is kept: replaced only while no index was bad yet
        take = arith.andi(bad, arith.xori(flag, one))
        first = arith.select(arith.trunci(ir.IntegerType.get_signless(1), take), value, first)
        return [arith.ori(flag, bad), first]

    def nest(ivs: list[ir.Value], args: list[ir.Value]) -> list[ir.Value]:
        if len(ivs) == len(shape):
            return step(ivs, *args)
        extent = shape[len(ivs)]
        bound = tensor.dim(indices, _const(len(ivs), index)) \
            if ir.ShapedType.is_dynamic_size(extent) else _const(extent, index)
        loop = scf.ForOp(_const(0, index), bound, _const(1, index), args)
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(nest([*ivs, loop.induction_variable], list(loop.inner_iter_args)))
        return list(loop.results)

    flag, first = nest([], [zero, zero])
    failed = arith.cmpi(arith.CmpIPredicate.ne, flag, zero)
    branch = scf.IfOp(failed)
    with ir.InsertionPoint(branch.then_block):
        status = memref.get_global(_status_type(), STATUS)
        memref.store(_const(check + 1, i64), status, [_const(0, index)])
        memref.store(first, status, [_const(1, index)])
        scf.YieldOp([])
