"""Lowering of the selection dlc ops (bounded outputs: `dialects/selection.py`).

NonZero, Compress and TopK with a run-time k here; NonMaxSuppression in `nms.py` and Unique in
`unique.py`, which share these helpers. Each op becomes `scf.for` loops on tensors (carried as
iter_args and written with `tensor.insert`, in place after one-shot-bufferize) that fill a
result of the maximum size and count its valid entries; the count (an `index` carried by the loops) is returned as a
`tensor<i64>`. These are small ops: the loops are plain and correct first (Unique is O(n^2)
slice comparisons, NonMaxSuppression O(boxes^2) per batch and class).

No access is ever out of bounds, whatever the data: a position written is always below the
count of entries visited so far (NonZero, Compress), a loop bound read from a tensor is
clamped into its static maximum (TopK's k, NonMaxSuppression's max_output_boxes_per_class),
and a write that could pass the end is guarded (`scf.if`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, scf, tensor

from dlc.dialects import selection
from dlc.dialects.ops import is_float
from dlc.passes.lowering.builders import filled
from dlc.passes.lowering.indexing import index_const, insertion_step, loop_nest, order
from dlc.passes.lowering.storage import source_types

Values = list[ir.Value]


# ----------------------------------------------------------------------------- helpers


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def index_type() -> ir.Type:
    return ir.IndexType.get()


def int_attr(op: ir.OpView, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _bound(value: int | ir.Value) -> ir.Value:
    return index_const(value) if isinstance(value, int) else value


def for_loop(lower: int | ir.Value, upper: int | ir.Value, inits: Sequence[ir.Value],
             body: Callable[[ir.Value, Values], Values]) -> Values:
    """An `scf.for` from `lower` to `upper` (ints or index values) carrying `inits`."""
    loop = scf.ForOp(_bound(lower), _bound(upper), index_const(1), list(inits))
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(body(loop.induction_variable, list(loop.inner_iter_args)))
    return list(loop.results)


def if_then(condition: ir.Value, values: Sequence[ir.Value],
            then: Callable[[Values], Values]) -> Values:
    """`then(values)` where `condition` holds, `values` unchanged elsewhere (an `scf.if`)."""
    branch = scf.IfOp(condition, [v.type for v in values], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(then(list(values)))
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp(list(values))
    return list(branch.results)


def count_tensor(count: ir.Value) -> ir.Value:
    """The `tensor<i64>` result holding an index count."""
    return tensor.FromElementsOp(ir.RankedTensorType.get([], i64(), loc=ir.Location.unknown()),
                                 [arith.index_cast(i64(), count)]).result


def scalar_of(value: ir.Value) -> ir.Value:
    """The element of a one-element tensor (rank 0 or 1)."""
    return tensor.extract(value, [index_const(0)] * value.type.rank)


def as_index(raw: ir.Value, signed: bool = True) -> ir.Value:
    """An integer as an index, via i64 (unsigned values zero-extended)."""
    if ir.IntegerType(raw.type).width < 64:
        raw = arith.extsi(i64(), raw) if signed else arith.extui(i64(), raw)
    return arith.index_cast(index_type(), raw)


def clamped(value: ir.Value, upper: int) -> ir.Value:
    """An index clamped into [0, upper]."""
    return arith.maxsi(arith.minsi(value, index_const(upper)), index_const(0))


def one_if(condition: ir.Value) -> ir.Value:
    """1 where `condition` holds, else 0, as an index."""
    return arith.select(condition, index_const(1), index_const(0))


def with_axis(ivs: Sequence[ir.Value], axis: int, value: ir.Value) -> Values:
    """A position: the loop indices of the other axes with `value` at `axis`."""
    return [*ivs[:axis], value, *ivs[axis:]]


def zero(element: ir.Type) -> ir.Value:
    if is_float(element):
        return arith.ConstantOp(element, ir.FloatAttr.get(element, 0.0)).result
    return arith.ConstantOp(element, ir.IntegerAttr.get(element, 0)).result


def is_nonzero(value: ir.Value) -> ir.Value:
    # NaN is non-zero (numpy's x != 0); bool is stored as i8 0/1
    if is_float(value.type):
        return arith.cmpf(arith.CmpFPredicate.UNE, value, zero(value.type))
    return arith.cmpi(arith.CmpIPredicate.ne, value, zero(value.type))


def true() -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result


# ----------------------------------------------------------------------------- nonzero


def lower_nonzero(op: ir.OpView, rewriter) -> None:
    # dlc.nonzero(x) -> scf.for over x (row-major): positions[:, count] = the loop indices,
    #   count += (x[i] != 0); column `count` is below the element's linear index, so in bounds
    (x,) = op.operands
    positions_type = op.results[0].type

    def visit(ivs: Values, args: Values) -> Values:
        positions, count = args
        for axis, iv in enumerate(ivs):
            positions = tensor.insert(arith.index_cast(i64(), iv), positions,
                                      [index_const(axis), count])
        nonzero = is_nonzero(tensor.extract(x, ivs))
        return [positions, arith.addi(count, one_if(nonzero))]

    with rewriter.ip, op.location:
        positions, count = loop_nest(list(x.type.shape), [filled(positions_type, 0),
                                                          index_const(0)], visit)
        rewriter.replace_op(op, [positions, count_tensor(count)])


# ----------------------------------------------------------------------------- compress


def lower_compress(op: ir.OpView, rewriter) -> None:
    # dlc.compress{axis}(x, condition) -> scf.for j over the axis: out[.., count, ..] =
    #   x[.., j, ..], count += condition[j] (slot `count` <= j: in bounds; an unselected
    #   slice is overwritten by the next one)
    x, condition = op.operands
    out_type = op.results[0].type
    axis = int_attr(op, "axis")
    others = [d for a, d in enumerate(out_type.shape) if a != axis]

    def slice_(j: ir.Value, args: Values) -> Values:
        out, count = args

        def copy(ivs: Values, inner: Values) -> Values:
            value = tensor.extract(x, with_axis(ivs, axis, j))
            return [tensor.insert(value, inner[0], with_axis(ivs, axis, count))]

        (out,) = loop_nest(others, [out], copy)
        selected = is_nonzero(tensor.extract(condition, [j]))
        return [out, arith.addi(count, one_if(selected))]

    with rewriter.ip, op.location:
        out, count = for_loop(0, out_type.shape[axis], [filled(out_type, 0), index_const(0)],
                              slice_)
        rewriter.replace_op(op, [out, count_tensor(count)])


# ----------------------------------------------------------------------------- runtime_topk


def lower_runtime_topk(op: ir.OpView, rewriter) -> None:
    # dlc.runtime_topk{axis, largest}(x, k) -> count = clamp(k, 0, n); per row, an insertion
    #   sort of the row's n elements into its first `count` slots (dlc.topk's, with a run-time
    #   slot count): the carried (v, i) takes slot p when p >= j (still empty), when v is
    #   better, or once an insertion began; the slot's previous content is carried on
    x, k = op.operands
    values_type, indices_type = op.results[0].type, op.results[1].type
    axis, largest = int_attr(op, "axis"), int_attr(op, "largest")
    less, greater = order(source_types(op)[0][0])
    better = greater if largest else less
    n = x.type.shape[axis]
    rows = [d for a, d in enumerate(x.type.shape) if a != axis]
    i1 = ir.IntegerType.get_signless(1)

    def sort_row(row: Values, args: Values, count: ir.Value) -> Values:
        def insert(j: ir.Value, args: Values) -> Values:
            carried = [tensor.extract(x, with_axis(row, axis, j)), arith.index_cast(i64(), j),
                       arith.ConstantOp(i1, 0).result]
            return for_loop(0, count, [*args, *carried], lambda p, s: slot(row, j, p, s))[:2]

        return for_loop(0, n, args, insert)

    slot = insertion_step(better, axis)

    with rewriter.ip, op.location:
        count = clamped(as_index(scalar_of(k)), n)
        inits = [filled(values_type, 0), filled(indices_type, 0)]
        results = loop_nest(rows, inits, lambda row, args: sort_row(row, args, count))
        rewriter.replace_op(op, [*results, count_tensor(count)])


def const64(value: int) -> ir.Value:
    return arith.ConstantOp(i64(), value).result


PATTERNS = {
    selection.NONZERO: lower_nonzero,
    selection.COMPRESS: lower_compress,
    selection.RUNTIME_TOPK: lower_runtime_topk,
}
