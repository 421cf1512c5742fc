"""Lowering of `dlc.unique` (ONNX Unique, a bounded output: see `selection.py` for the loops'
helpers and the contract): O(n^2) lexicographic slice comparisons in scalar loops.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from dlc.dialects import selection
from dlc.passes.lowering.builders import filled
from dlc.passes.lowering.indexing import index_const, loop_nest
from dlc.passes.lowering.selection import (
    Values,
    const64,
    count_tensor,
    for_loop,
    i64,
    if_then,
    index_type,
    int_attr,
    one_if,
    order,
    true,
    with_axis,
)
from dlc.passes.lowering.storage import source_types


def lower_unique(op: ir.OpView, rewriter) -> None:
    # dlc.unique{axis, sorted}(x) -> slices compared lexicographically (row-major over the
    #   other axes); first[i] = the first slice equal to slice i; the unique id of a first
    #   occurrence is its rank among the first occurrences (sorted: the number of smaller
    #   ones; not sorted: the number before it), any other slice takes its first's id; then
    #   y[id] = x[i], indices[id] = i (first occurrences), counts[id] += 1, inverse[i] = id
    (x,) = op.operands
    y_type, indices_type = op.results[0].type, op.results[1].type
    axis, sorted_ = int_attr(op, "axis"), int_attr(op, "sorted")
    n = x.type.shape[axis]
    others = [d for a, d in enumerate(x.type.shape) if a != axis]
    less, greater = order(source_types(op)[0][0])

    def compare(i: ir.Value, j: ir.Value) -> ir.Value:
        """-1, 0 or 1 (i64): slice i before, equal to or after slice j."""
        def element(ivs: Values, args: Values) -> Values:
            (state,) = args
            a = tensor.extract(x, with_axis(ivs, axis, i))
            b = tensor.extract(x, with_axis(ivs, axis, j))
            sign = arith.select(less(a, b), const64(-1),
                                arith.select(greater(a, b), const64(1), const64(0)))
            undecided = arith.cmpi(arith.CmpIPredicate.eq, state, const64(0))
            return [arith.select(undecided, sign, state)]

        return loop_nest(others, [const64(0)], element)[0]

    def equal(i: ir.Value, j: ir.Value) -> ir.Value:
        return arith.cmpi(arith.CmpIPredicate.eq, compare(i, j), const64(0))

    with rewriter.ip, op.location:
        def first_of(i: ir.Value, args: Values) -> Values:
            def earlier(j: ir.Value, state: Values) -> Values:
                first, found = state
                take = arith.andi(arith.xori(found, true()), equal(j, i))
                return [arith.select(take, j, first), arith.ori(found, take)]

            first, _ = for_loop(0, i, [i, arith.ConstantOp(ir.IntegerType.get_signless(1),
                                                           0).result], earlier)
            return [tensor.insert(arith.index_cast(i64(), first), args[0], [i])]

        (firsts,) = for_loop(0, n, [filled(indices_type, 0)], first_of)

        def is_first(i: ir.Value) -> ir.Value:
            first = arith.index_cast(index_type(), tensor.extract(firsts, [i]))
            return arith.cmpi(arith.CmpIPredicate.eq, first, i)

        def rank_of(i: ir.Value, count: ir.Value) -> ir.Value:
            if not sorted_:
                return count

            def smaller(j: ir.Value, args: Values) -> Values:
                below = arith.cmpi(arith.CmpIPredicate.eq, compare(j, i), const64(-1))
                return [arith.addi(args[0], one_if(arith.andi(is_first(j), below)))]

            return for_loop(0, n, [index_const(0)], smaller)[0]

        def identify(i: ir.Value, args: Values) -> Values:
            ids, count = args
            first = is_first(i)
            earlier_id = tensor.extract(ids, [arith.index_cast(index_type(),
                                                               tensor.extract(firsts, [i]))])
            own = if_then(first, [earlier_id], lambda _: [arith.index_cast(
                i64(), rank_of(i, count))])[0]
            ids = tensor.insert(own, ids, [i])
            return [ids, arith.addi(count, one_if(first))]

        ids, count = for_loop(0, n, [filled(indices_type, 0), index_const(0)], identify)

        def gather(i: ir.Value, args: Values) -> Values:
            y, indices, inverse, counts = args
            raw = tensor.extract(ids, [i])
            unique = arith.index_cast(index_type(), raw)
            first = is_first(i)
            inverse = tensor.insert(raw, inverse, [i])
            counts = tensor.insert(arith.addi(tensor.extract(counts, [unique]), const64(1)),
                                   counts, [unique])

            def place(values: Values) -> Values:
                y, indices = values
                indices = tensor.insert(arith.index_cast(i64(), i), indices, [unique])

                def copy(ivs: Values, inner: Values) -> Values:
                    value = tensor.extract(x, with_axis(ivs, axis, i))
                    return [tensor.insert(value, inner[0], with_axis(ivs, axis, unique))]

                return [loop_nest(others, [y], copy)[0], indices]

            y, indices = if_then(first, [y, indices], place)
            return [y, indices, inverse, counts]

        inits = [filled(y_type, 0), filled(indices_type, 0), filled(indices_type, 0),
                 filled(indices_type, 0)]
        y, indices, inverse, counts = for_loop(0, n, inits, gather)
        rewriter.replace_op(op, [y, indices, inverse, counts, count_tensor(count)])



PATTERNS = {selection.UNIQUE: lower_unique}
