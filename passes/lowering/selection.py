"""Lowering of the selection dlc ops (bounded outputs: `dialects/selection.py`).

Each op becomes `scf.for` loops on tensors (carried as iter_args and written with
`tensor.insert`, in place after one-shot-bufferize) that fill a result of the maximum size and
count its valid entries; the count (an `index` carried by the loops) is returned as a
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
from dlc.dialects.ops import is_float, is_unsigned
from dlc.passes.lowering.builders import filled
from dlc.passes.lowering.indexing import index_const, loop_nest
from dlc.passes.lowering.storage import source_types

Values = list[ir.Value]


# ----------------------------------------------------------------------------- helpers


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _index() -> ir.Type:
    return ir.IndexType.get()


def _int_attr(op: ir.OpView, name: str) -> int:
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
    return tensor.FromElementsOp(ir.RankedTensorType.get([], _i64(), loc=ir.Location.unknown()),
                                 [arith.index_cast(_i64(), count)]).result


def scalar_of(value: ir.Value) -> ir.Value:
    """The element of a one-element tensor (rank 0 or 1)."""
    return tensor.extract(value, [index_const(0)] * value.type.rank)


def as_index(raw: ir.Value, signed: bool = True) -> ir.Value:
    """An integer as an index, via i64 (unsigned values zero-extended)."""
    if ir.IntegerType(raw.type).width < 64:
        raw = arith.extsi(_i64(), raw) if signed else arith.extui(_i64(), raw)
    return arith.index_cast(_index(), raw)


def clamped(value: ir.Value, upper: int) -> ir.Value:
    """An index clamped into [0, upper]."""
    return arith.maxsi(arith.minsi(value, index_const(upper)), index_const(0))


def one_if(condition: ir.Value) -> ir.Value:
    """1 where `condition` holds, else 0, as an index."""
    return arith.select(condition, index_const(1), index_const(0))


def with_axis(ivs: Sequence[ir.Value], axis: int, value: ir.Value) -> Values:
    """A position: the loop indices of the other axes with `value` at `axis`."""
    return [*ivs[:axis], value, *ivs[axis:]]


def _zero(element: ir.Type) -> ir.Value:
    if is_float(element):
        return arith.ConstantOp(element, ir.FloatAttr.get(element, 0.0)).result
    return arith.ConstantOp(element, ir.IntegerAttr.get(element, 0)).result


def is_nonzero(value: ir.Value) -> ir.Value:
    # NaN is non-zero (numpy's x != 0); bool is stored as i8 0/1
    if is_float(value.type):
        return arith.cmpf(arith.CmpFPredicate.UNE, value, _zero(value.type))
    return arith.cmpi(arith.CmpIPredicate.ne, value, _zero(value.type))


def order(source: ir.Type) -> tuple[Callable, Callable]:
    """(less, greater) of two elements of `source` type; NaN is above every number and equal
    to NaN (numpy's sort order)."""
    if is_float(source):
        def nan(a: ir.Value) -> ir.Value:
            return arith.cmpf(arith.CmpFPredicate.UNO, a, a)

        def less(a: ir.Value, b: ir.Value) -> ir.Value:
            ordered = arith.cmpf(arith.CmpFPredicate.OLT, a, b)
            return arith.ori(ordered, arith.andi(nan(b), arith.xori(nan(a), _true())))

        def greater(a: ir.Value, b: ir.Value) -> ir.Value:
            return less(b, a)

        return less, greater
    lt, gt = ((arith.CmpIPredicate.ult, arith.CmpIPredicate.ugt) if is_unsigned(source)
              or ir.IntegerType(source).width == 1
              else (arith.CmpIPredicate.slt, arith.CmpIPredicate.sgt))
    return (lambda a, b: arith.cmpi(lt, a, b)), (lambda a, b: arith.cmpi(gt, a, b))


def _true() -> ir.Value:
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
            positions = tensor.insert(arith.index_cast(_i64(), iv), positions,
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
    axis = _int_attr(op, "axis")
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
    axis, largest = _int_attr(op, "axis"), _int_attr(op, "largest")
    less, greater = order(source_types(op)[0][0])
    better = greater if largest else less
    n = x.type.shape[axis]
    rows = [d for a, d in enumerate(x.type.shape) if a != axis]
    i1 = ir.IntegerType.get_signless(1)

    def sort_row(row: Values, args: Values, count: ir.Value) -> Values:
        def insert(j: ir.Value, args: Values) -> Values:
            carried = [tensor.extract(x, with_axis(row, axis, j)), arith.index_cast(_i64(), j),
                       arith.ConstantOp(i1, 0).result]
            return for_loop(0, count, [*args, *carried], lambda p, s: slot(row, j, p, s))[:2]

        return for_loop(0, n, args, insert)

    def slot(row: Values, j: ir.Value, p: ir.Value, state: Values) -> Values:
        values, indices, value, index, shifting = state
        position = with_axis(row, axis, p)
        old_value, old_index = tensor.extract(values, position), tensor.extract(indices, position)
        empty = arith.cmpi(arith.CmpIPredicate.uge, p, j)
        take = arith.ori(arith.ori(shifting, empty), better(value, old_value))
        values = tensor.insert(arith.select(take, value, old_value), values, position)
        indices = tensor.insert(arith.select(take, index, old_index), indices, position)
        return [values, indices, arith.select(take, old_value, value),
                arith.select(take, old_index, index), take]

    with rewriter.ip, op.location:
        count = clamped(as_index(scalar_of(k)), n)
        inits = [filled(values_type, 0), filled(indices_type, 0)]
        results = loop_nest(rows, inits, lambda row, args: sort_row(row, args, count))
        rewriter.replace_op(op, [*results, count_tensor(count)])


# ----------------------------------------------------------------------------- NMS


def _suppresses(boxes: ir.Value, batch: ir.Value, a: ir.Value, b: ir.Value,
                center_point_box: int, threshold: ir.Value) -> ir.Value:
    """IoU(box a, box b) > threshold, as ONNX's reference computes it (false when the boxes
    do not intersect or an area is not positive)."""
    element = boxes.type.element_type
    a_coords = [tensor.extract(boxes, [batch, a, index_const(c)]) for c in range(4)]
    b_coords = [tensor.extract(boxes, [batch, b, index_const(c)]) for c in range(4)]
    half = arith.ConstantOp(element, ir.FloatAttr.get(element, 0.5)).result

    def extents(coords: Values) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """(x_min, x_max, y_min, y_max)."""
        if center_point_box:  # [x_center, y_center, width, height]
            x, y, w, h = coords
            w, h = arith.mulf(w, half), arith.mulf(h, half)
            return arith.subf(x, w), arith.addf(x, w), arith.subf(y, h), arith.addf(y, h)
        y1, x1, y2, x2 = coords  # [y1, x1, y2, x2], either corner first
        return (arith.minimumf(x1, x2), arith.maximumf(x1, x2), arith.minimumf(y1, y2),
                arith.maximumf(y1, y2))

    ax0, ax1, ay0, ay1 = extents(a_coords)
    bx0, bx1, by0, by1 = extents(b_coords)
    ix0, ix1 = arith.maximumf(ax0, bx0), arith.minimumf(ax1, bx1)
    iy0, iy1 = arith.maximumf(ay0, by0), arith.minimumf(ay1, by1)
    zero = _zero(element)
    intersection = arith.mulf(arith.subf(ix1, ix0), arith.subf(iy1, iy0))
    area_a = arith.mulf(arith.subf(ax1, ax0), arith.subf(ay1, ay0))
    area_b = arith.mulf(arith.subf(bx1, bx0), arith.subf(by1, by0))
    union = arith.subf(arith.addf(area_a, area_b), intersection)
    gt = arith.CmpFPredicate.OGT
    conditions = [arith.cmpf(gt, ix1, ix0), arith.cmpf(gt, iy1, iy0),
                  arith.cmpf(gt, intersection, zero), arith.cmpf(gt, area_a, zero),
                  arith.cmpf(gt, area_b, zero), arith.cmpf(gt, union, zero),
                  arith.cmpf(gt, arith.divf(intersection, union), threshold)]
    result = conditions[0]
    for condition in conditions[1:]:
        result = arith.andi(result, condition)
    return result


def _as_element(value: ir.Value, element: ir.Type) -> ir.Value:
    """A float scalar converted to the float type `element`."""
    have, want = value.type, element
    if have == want:
        return value
    if ir.FloatType(have).width < ir.FloatType(want).width:
        return arith.extf(want, value)
    return arith.truncf(want, value)


def lower_non_max_suppression(op: ir.OpView, rewriter) -> None:
    # dlc.non_max_suppression(boxes, scores, max_output, iou, score_threshold)
    #   -> per batch b and class c, up to `boxes` rounds: the best unvisited box above the
    #   score threshold (highest score, then lowest index: the reference's sort order) is
    #   visited; it is selected, as row (b, c, box) at `count`, unless this class already has
    #   its maximum or a selected box of this class overlaps it by IoU > iou_threshold
    boxes, scores, max_output, iou, score_threshold = op.operands
    selected_type = op.results[0].type
    per_class = _int_attr(op, "max_per_class")
    center_point_box = _int_attr(op, "center_point_box")
    use_threshold = _int_attr(op, "use_score_threshold")
    batches, classes, n = scores.type.shape
    element = scores.type.element_type
    i1, i8 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(8)
    visited_type = ir.RankedTensorType.get([n], i8, loc=ir.Location.unknown())

    with rewriter.ip, op.location:
        limit = clamped(as_index(scalar_of(max_output)), per_class)
        iou_threshold = _as_element(scalar_of(iou), element)
        score_min = _as_element(scalar_of(score_threshold), element)
        false = arith.ConstantOp(i1, 0).result

        def best_unvisited(b: ir.Value, c: ir.Value, visited: ir.Value) -> Values:
            def candidate(s: ir.Value, args: Values) -> Values:
                best, best_score, found = args
                score = tensor.extract(scores, [b, c, s])
                unvisited = arith.cmpi(arith.CmpIPredicate.eq, tensor.extract(visited, [s]),
                                       _zero(i8))
                if use_threshold:
                    above = arith.cmpf(arith.CmpFPredicate.OGT, score, score_min)
                    unvisited = arith.andi(unvisited, above)
                higher = arith.cmpf(arith.CmpFPredicate.OGT, score, best_score)
                first = arith.xori(found, _true())
                take = arith.andi(unvisited, arith.ori(first, higher))
                return [arith.select(take, s, best), arith.select(take, score, best_score),
                        arith.ori(found, take)]

            return for_loop(0, n, [index_const(0), _zero(element), false], candidate)

        def round_(b: ir.Value, c: ir.Value, start: ir.Value, args: Values) -> Values:
            selected, count, visited = args
            best, _, found = best_unvisited(b, c, visited)

            def overlap(r: ir.Value, args: Values) -> Values:
                other = as_index(tensor.extract(selected, [r, index_const(2)]))
                return [arith.ori(args[0], _suppresses(boxes, b, best, other,
                                                       center_point_box, iou_threshold))]

            (suppressed,) = for_loop(start, count, [false], overlap)
            room = arith.cmpi(arith.CmpIPredicate.slt, arith.subi(count, start), limit)
            take = arith.andi(arith.andi(found, room), arith.xori(suppressed, _true()))

            def write(values: Values) -> Values:
                out, total = values
                for column, value in enumerate((b, c, best)):
                    out = tensor.insert(arith.index_cast(_i64(), value), out,
                                        [total, index_const(column)])
                return [out, arith.addi(total, index_const(1))]

            selected, count = if_then(take, [selected, count], write)
            mark = arith.select(found, arith.ConstantOp(i8, 1).result,
                                tensor.extract(visited, [best]))
            return [selected, count, tensor.insert(mark, visited, [best])]

        def per_class_(ivs: Values, args: Values) -> Values:
            b, c = ivs
            selected, count = args
            start = count
            visited = filled(visited_type, 0)
            return for_loop(0, n, [selected, count, visited],
                            lambda _, state: round_(b, c, start, state))[:2]

        selected, count = loop_nest([batches, classes],
                                    [filled(selected_type, 0), index_const(0)], per_class_)
        rewriter.replace_op(op, [selected, count_tensor(count)])


# ----------------------------------------------------------------------------- unique


def lower_unique(op: ir.OpView, rewriter) -> None:
    # dlc.unique{axis, sorted}(x) -> slices compared lexicographically (row-major over the
    #   other axes); first[i] = the first slice equal to slice i; the unique id of a first
    #   occurrence is its rank among the first occurrences (sorted: the number of smaller
    #   ones; not sorted: the number before it), any other slice takes its first's id; then
    #   y[id] = x[i], indices[id] = i (first occurrences), counts[id] += 1, inverse[i] = id
    (x,) = op.operands
    y_type, indices_type = op.results[0].type, op.results[1].type
    axis, sorted_ = _int_attr(op, "axis"), _int_attr(op, "sorted")
    n = x.type.shape[axis]
    others = [d for a, d in enumerate(x.type.shape) if a != axis]
    less, greater = order(source_types(op)[0][0])

    def compare(i: ir.Value, j: ir.Value) -> ir.Value:
        """-1, 0 or 1 (i64): slice i before, equal to or after slice j."""
        def element(ivs: Values, args: Values) -> Values:
            (state,) = args
            a = tensor.extract(x, with_axis(ivs, axis, i))
            b = tensor.extract(x, with_axis(ivs, axis, j))
            sign = arith.select(less(a, b), _const64(-1),
                                arith.select(greater(a, b), _const64(1), _const64(0)))
            undecided = arith.cmpi(arith.CmpIPredicate.eq, state, _const64(0))
            return [arith.select(undecided, sign, state)]

        return loop_nest(others, [_const64(0)], element)[0]

    def equal(i: ir.Value, j: ir.Value) -> ir.Value:
        return arith.cmpi(arith.CmpIPredicate.eq, compare(i, j), _const64(0))

    with rewriter.ip, op.location:
        def first_of(i: ir.Value, args: Values) -> Values:
            def earlier(j: ir.Value, state: Values) -> Values:
                first, found = state
                take = arith.andi(arith.xori(found, _true()), equal(j, i))
                return [arith.select(take, j, first), arith.ori(found, take)]

            first, _ = for_loop(0, i, [i, arith.ConstantOp(ir.IntegerType.get_signless(1),
                                                           0).result], earlier)
            return [tensor.insert(arith.index_cast(_i64(), first), args[0], [i])]

        (firsts,) = for_loop(0, n, [filled(indices_type, 0)], first_of)

        def is_first(i: ir.Value) -> ir.Value:
            first = arith.index_cast(_index(), tensor.extract(firsts, [i]))
            return arith.cmpi(arith.CmpIPredicate.eq, first, i)

        def rank_of(i: ir.Value, count: ir.Value) -> ir.Value:
            if not sorted_:
                return count

            def smaller(j: ir.Value, args: Values) -> Values:
                below = arith.cmpi(arith.CmpIPredicate.eq, compare(j, i), _const64(-1))
                return [arith.addi(args[0], one_if(arith.andi(is_first(j), below)))]

            return for_loop(0, n, [index_const(0)], smaller)[0]

        def identify(i: ir.Value, args: Values) -> Values:
            ids, count = args
            first = is_first(i)
            earlier_id = tensor.extract(ids, [arith.index_cast(_index(),
                                                               tensor.extract(firsts, [i]))])
            own = if_then(first, [earlier_id], lambda _: [arith.index_cast(
                _i64(), rank_of(i, count))])[0]
            ids = tensor.insert(own, ids, [i])
            return [ids, arith.addi(count, one_if(first))]

        ids, count = for_loop(0, n, [filled(indices_type, 0), index_const(0)], identify)

        def gather(i: ir.Value, args: Values) -> Values:
            y, indices, inverse, counts = args
            raw = tensor.extract(ids, [i])
            unique = arith.index_cast(_index(), raw)
            first = is_first(i)
            inverse = tensor.insert(raw, inverse, [i])
            counts = tensor.insert(arith.addi(tensor.extract(counts, [unique]), _const64(1)),
                                   counts, [unique])

            def place(values: Values) -> Values:
                y, indices = values
                indices = tensor.insert(arith.index_cast(_i64(), i), indices, [unique])

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


def _const64(value: int) -> ir.Value:
    return arith.ConstantOp(_i64(), value).result


PATTERNS = {
    selection.NONZERO: lower_nonzero,
    selection.COMPRESS: lower_compress,
    selection.RUNTIME_TOPK: lower_runtime_topk,
    selection.NON_MAX_SUPPRESSION: lower_non_max_suppression,
    selection.UNIQUE: lower_unique,
}
