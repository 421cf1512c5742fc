"""Lowering of `dlc.non_max_suppression` (ONNX NonMaxSuppression, a bounded output: see
`selection.py` for the loops' helpers and the contract): per batch and class, O(boxes^2)
scalar loops that select boxes greedily, as ONNX's reference does.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from dlc.dialects import selection
from dlc.passes.lowering.builders import filled
from dlc.passes.lowering.indexing import index_const, loop_nest
from dlc.passes.lowering.selection import (
    Values,
    as_index,
    clamped,
    count_tensor,
    for_loop,
    i64,
    if_then,
    int_attr,
    scalar_of,
    true,
    zero,
)


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
    nothing = zero(element)
    intersection = arith.mulf(arith.subf(ix1, ix0), arith.subf(iy1, iy0))
    area_a = arith.mulf(arith.subf(ax1, ax0), arith.subf(ay1, ay0))
    area_b = arith.mulf(arith.subf(bx1, bx0), arith.subf(by1, by0))
    union = arith.subf(arith.addf(area_a, area_b), intersection)
    gt = arith.CmpFPredicate.OGT
    conditions = [arith.cmpf(gt, ix1, ix0), arith.cmpf(gt, iy1, iy0),
                  arith.cmpf(gt, intersection, nothing), arith.cmpf(gt, area_a, nothing),
                  arith.cmpf(gt, area_b, nothing), arith.cmpf(gt, union, nothing),
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
    per_class = int_attr(op, "max_per_class")
    center_point_box = int_attr(op, "center_point_box")
    use_threshold = int_attr(op, "use_score_threshold")
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
                                       zero(i8))
                if use_threshold:
                    above = arith.cmpf(arith.CmpFPredicate.OGT, score, score_min)
                    unvisited = arith.andi(unvisited, above)
                higher = arith.cmpf(arith.CmpFPredicate.OGT, score, best_score)
                first = arith.xori(found, true())
                take = arith.andi(unvisited, arith.ori(first, higher))
                return [arith.select(take, s, best), arith.select(take, score, best_score),
                        arith.ori(found, take)]

            return for_loop(0, n, [index_const(0), zero(element), false], candidate)

        def round_(b: ir.Value, c: ir.Value, start: ir.Value, args: Values) -> Values:
            selected, count, visited = args
            best, _, found = best_unvisited(b, c, visited)

            def overlap(r: ir.Value, args: Values) -> Values:
                other = as_index(tensor.extract(selected, [r, index_const(2)]))
                return [arith.ori(args[0], _suppresses(boxes, b, best, other,
                                                       center_point_box, iou_threshold))]

            (suppressed,) = for_loop(start, count, [false], overlap)
            room = arith.cmpi(arith.CmpIPredicate.slt, arith.subi(count, start), limit)
            take = arith.andi(arith.andi(found, room), arith.xori(suppressed, true()))

            def write(values: Values) -> Values:
                out, total = values
                for column, value in enumerate((b, c, best)):
                    out = tensor.insert(arith.index_cast(i64(), value), out,
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


PATTERNS = {selection.NON_MAX_SUPPRESSION: lower_non_max_suppression}
