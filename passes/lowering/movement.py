"""Lowering of the data-movement dlc ops: concat, slice, broadcast, pad, trilu.

All attributes are static and normalized (see `dialects/movement.py`), so every offset, size
and stride is a constant: a chain of concats becomes `tensor.insert_slice`s into one `tensor.empty`, slices
with positive steps `tensor.extract_slice` (a `linalg.generic` reading `start + step * i`
otherwise), broadcast `linalg.broadcast` or a broadcasting `linalg.generic`, a constant pad a
fill plus `tensor.insert_slice`, the other pad modes a `linalg.generic` gathering with
`tensor.extract` at indices computed in its body (no division by a non-constant: no trap).
The ops only move elements, so they are the same for every (storage) element type.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.dialects import movement
from dlc.passes.lowering.builders import (
    PARALLEL,
    as_value,
    elementwise,
    empty_like,
    filled,
    generic,
    scalar,
    sizes_of,
)


def _ints(op: ir.OpView, name: str) -> list[int]:
    return [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]


def _insert(source: ir.Value, dest: ir.Value, offsets: list[int]) -> ir.Value:
    shape = list(source.type.shape)
    return tensor.InsertSliceOp(source, dest, [], _dynamic_sizes(shape), [], offsets, shape,
                                [1] * len(shape)).result


def _dynamic_sizes(shape: list[int]) -> list[ir.Value]:
    """The run-time values of the dynamic sizes of `shape` (`builders.sizes_of`)."""
    return [d for d in sizes_of(shape) if isinstance(d, ir.Value)]


def _axis(op: ir.Operation) -> int:
    return ir.IntegerAttr(op.attributes["axis"]).value


def _chained_into(op: ir.Operation) -> bool:
    """Whether `op`'s only use is a dlc.concat on the same axis (which lowers the chain)."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return False
    user = uses[0].owner
    return user.name == movement.CONCAT.name and _axis(user) == _axis(op)


def _chain(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Operation]]:
    """The leaves of the concat chain rooted at `op`, left to right, and its inner concats.

    Iterative (an explicit stack of operands still to visit): a Concat of 10,000 inputs is
    imported as a chain of 9,999 binary concats, deeper than Python's recursion limit.
    """
    leaves: list[ir.Value] = []
    inner: list[ir.Operation] = []
    pending: list[ir.Value] = list(reversed(list(op.operands)))
    while pending:
        operand = pending.pop()
        producer = operand.owner
        if isinstance(producer, ir.OpView | ir.Operation) and \
                producer.name == movement.CONCAT.name and _chained_into(producer.operation):
            inner.append(producer.operation)
            pending.extend(reversed(list(producer.operation.operands)))
        else:
            leaves.append(operand)
    return leaves, inner


def _root(op: ir.Operation) -> ir.Operation:
    """The concat that lowers the chain `op` is in (itself when not `_chained_into` another)."""
    while _chained_into(op):
        op = next(iter(op.results[0].uses)).owner.operation
    return op


def _grows_into(op: ir.Operation) -> bool:
    """Whether `op` has other users and is the first leaf of the chain of its only concat
    user (on the same axis): a prefix of that chain's concat (DenseNet's blocks: each layer
    reads the concat of every feature before it, the next concat adds the layer's output)."""
    uses = list(op.results[0].uses)
    concats = [u.owner for u in uses if u.owner.name == movement.CONCAT.name]
    if len(uses) < 2 or len(concats) != 1 or _axis(concats[0].operation) != _axis(op):
        return False
    leaves, _ = _chain(_root(concats[0].operation))
    return leaves[0] == op.results[0]


def _prefixes(op: ir.Operation) -> list[ir.Operation]:
    """The concats that grow into `op`, innermost first, then `op`."""
    levels = [op]
    while True:
        first = _chain(levels[-1])[0][0].owner
        if not (isinstance(first, ir.OpView | ir.Operation) and
                first.name == movement.CONCAT.name and _grows_into(first.operation)):
            return levels[::-1]
        levels.append(first.operation)


def lower_concat(op: ir.OpView, rewriter) -> bool | None:
    # concat(concat(a, b), c) {axis} -> tensor.insert_slice a, b, c into one tensor.empty;
    # a concat whose prefix is a concat with other users (`_grows_into`) inserts into the
    # prefix's tensor, created at the prefix's size of the last one: the prefix's users read
    # a slice of it (`extract_slice`), so that a DenseNet block's concats, each all the
    # block's features so far, are one buffer written once (bufferized in place) instead of
    # a copy of every prefix at every layer
    if _chained_into(op.operation) or _grows_into(op.operation):
        return True  # the last concat of the chain lowers it whole
    axis = _axis(op.operation)
    result_type = op.results[0].type
    levels = _prefixes(op.operation)
    value, offset = None, 0
    for level in levels:
        leaves, inner = _chain(level)
        if value is not None:
            leaves = leaves[1:]  # (the prefix: `value` already holds it)
        with ir.InsertionPoint(level), level.location:
            if value is None:
                value = empty_like(result_type)
            for leaf in leaves:
                size = leaf.type.shape[axis]
                if size:
                    offsets = [0] * result_type.rank
                    offsets[axis] = offset
                    value = _insert(leaf, value, offsets)
                offset += size
            if level is not levels[-1]:
                part = level.results[0].type
                prefix = tensor.ExtractSliceOp(part, value, [], _dynamic_sizes(list(part.shape)),
                                               [], [0] * part.rank, list(part.shape),
                                               [1] * part.rank).result
        if level is levels[-1]:
            rewriter.replace_op(op, [value])
        else:
            rewriter.replace_op(level, [prefix])
        for dead in inner:  # users first: each was used only by the one before it
            rewriter.erase_op(dead)
    return None


def lower_slice(op: ir.OpView, rewriter) -> None:
    # dlc.slice(x) {steps > 0} -> tensor.extract_slice
    # dlc.slice(x) {a step < 0} -> linalg.generic reading x[start + step * d]
    (x,) = op.operands
    starts, steps = _ints(op, "starts"), _ints(op, "steps")
    result_type = op.results[0].type
    with rewriter.ip, op.location:
        if 0 in result_type.shape:  # nothing to read (and an offset at the end would not verify)
            value = tensor.EmptyOp(list(result_type.shape), result_type.element_type).result
        elif all(s > 0 for s in steps):  # (a dynamic size is kept whole: `infer_slice`)
            value = tensor.ExtractSliceOp(result_type, x, [], _dynamic_sizes(
                list(result_type.shape)), [], starts, list(result_type.shape), steps).result
        else:
            # first cut the region read (positive steps done, reversed axes kept whole), so
            # that every axis the generic reads as plain `d` has the result's size
            rank, sizes = result_type.rank, list(result_type.shape)
            offsets, spans, strides, reads = [], [], [], []
            for start, step, size in zip(starts, steps, sizes):
                if step > 0:
                    offsets.append(start), spans.append(size), strides.append(step)
                    reads.append((0, 1))
                else:
                    low = start + step * (size - 1) if size else start
                    offsets.append(low), spans.append(start - low + 1 if size else 0)
                    strides.append(1), reads.append((start - low, step))
            region = ir.RankedTensorType.get(spans, result_type.element_type)
            x = tensor.ExtractSliceOp(region, x, [], [], [], offsets, spans, strides).result
            exprs = [ir.AffineAddExpr.get(
                ir.AffineMulExpr.get(ir.AffineDimExpr.get(d), ir.AffineConstantExpr.get(step)),
                ir.AffineConstantExpr.get(start)) for d, (start, step) in enumerate(reads)]
            maps = [ir.AffineMap.get(rank, 0, exprs), ir.AffineMap.get_identity(rank)]
            value = generic([x], empty_like(result_type), maps, [PARALLEL] * rank,
                            lambda element, _: element)
        rewriter.replace_op(op, [as_value(value)])


def lower_broadcast(op: ir.OpView, rewriter) -> None:
    # dlc.broadcast(x) -> x (same type) | linalg.broadcast (new leading axes) |
    #                     linalg.generic (size-1 axes read at 0)
    (x,) = op.operands
    result_type = op.results[0].type
    if x.type == result_type:
        rewriter.replace_op(op, [x])
        return
    shape = list(result_type.shape)
    added = len(shape) - x.type.rank
    with rewriter.ip, op.location:
        if list(x.type.shape) == shape[added:]:
            value = linalg.broadcast(x, outs=[empty_like(result_type)],
                                     dimensions=list(range(added)))
        else:
            value = elementwise([x], result_type, lambda element: element)
        rewriter.replace_op(op, [as_value(value)])


def lower_iota(op: ir.OpView, rewriter) -> None:
    # dlc.iota {axis, start, step} -> linalg.generic {start + step * linalg.index(axis)}
    result_type = op.results[0].type
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    start = ir.IntegerAttr(op.attributes["start"]).value
    step = ir.IntegerAttr(op.attributes["step"]).value
    element = result_type.element_type
    rank = result_type.rank
    i64 = ir.IntegerType.get_signless(64)

    def body(_out):
        position = arith.index_cast(i64, linalg.IndexOp(ir.IntegerAttr.get(i64, axis)).result)
        value = arith.addi(arith.constant(i64, start),
                           arith.muli(position, arith.constant(i64, step)))
        if isinstance(element, ir.IntegerType):
            return value if element.width == 64 else arith.trunci(element, value)
        return arith.sitofp(element, value)

    with rewriter.ip, op.location:
        value = generic([], empty_like(result_type), [ir.AffineMap.get_identity(rank)],
                        [PARALLEL] * rank, body)
        rewriter.replace_op(op, [as_value(value)])


def lower_pad(op: ir.OpView, rewriter) -> None:
    # dlc.pad(x, v) {constant} -> tensor.insert_slice x into (v broadcast | linalg.fill 0)
    # dlc.pad(x) {reflect|edge|wrap} -> linalg.generic {tensor.extract x[source index]}
    x = op.operands[0]
    mode = ir.StringAttr(op.attributes["mode"]).value
    pads = _ints(op, "pads")
    result_type = op.results[0].type
    with rewriter.ip, op.location:
        if mode == "constant":
            if len(op.operands) == 2:
                base = elementwise([op.operands[1]], result_type, lambda element: element)
            else:
                base = filled(result_type, 0)
            value = _insert(x, as_value(base), pads[:x.type.rank])
        else:
            value = _gather_pad(x, result_type, mode, pads)
        rewriter.replace_op(op, [as_value(value)])


def _gather_pad(x: ir.Value, result_type: ir.RankedTensorType, mode: str,
                pads: list[int]) -> ir.Value:
    rank = result_type.rank

    def body(_) -> ir.Value:
        indices = [_source_index(linalg.IndexOp(d).result, x.type.shape[d], pads[d],
                                 pads[rank + d], mode) for d in range(rank)]
        return tensor.extract(x, indices)

    return generic([], empty_like(result_type), [ir.AffineMap.get_identity(rank)],
                   [PARALLEL] * rank, body)


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _source_index(o: ir.Value, size: int, before: int, after: int, mode: str) -> ir.Value:
    # the index of x that output index `o` copies, on an axis of `size` padded before/after
    const = _index
    if before == 0 and after == 0:
        return o
    if mode == "edge":  # clamp(o - before, 0, size - 1)
        shifted = arith.subi(o, const(before))
        return arith.minsi(arith.maxsi(shifted, const(0)), const(size - 1))
    if mode == "wrap":  # (o - before) mod size, kept non-negative
        return arith.remui(arith.addi(o, const(-before % size)), const(size))
    if size == 1:  # reflect of a single element
        return const(0)
    period = 2 * (size - 1)  # reflect: t = (o - before) mod period; t < size ? t : period - t
    t = arith.remui(arith.addi(o, const(-before % period)), const(period))
    inside = arith.cmpi(arith.CmpIPredicate.ult, t, const(size))
    return arith.select(inside, t, arith.subi(const(period), t))


def lower_trilu(op: ir.OpView, rewriter) -> None:
    # dlc.trilu(x) {upper, k} -> linalg.generic {select(j - i >= k (upper) | <= k, x, 0)}
    (x,) = op.operands
    upper = ir.IntegerAttr(op.attributes["upper"]).value
    k = ir.IntegerAttr(op.attributes["k"]).value
    result_type = op.results[0].type
    rank = result_type.rank
    predicate = arith.CmpIPredicate.sge if upper else arith.CmpIPredicate.sle

    def body(element: ir.Value) -> ir.Value:
        row, column = linalg.IndexOp(rank - 2).result, linalg.IndexOp(rank - 1).result
        diagonal = arith.addi(row, _index(k))
        keep = arith.cmpi(predicate, column, diagonal)
        return arith.select(keep, element, scalar(element.type, 0))

    with rewriter.ip, op.location:
        value = elementwise([x], result_type, body)
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {
    movement.CONCAT: lower_concat,
    movement.SLICE: lower_slice,
    movement.BROADCAST: lower_broadcast,
    movement.PAD: lower_pad,
    movement.TRILU: lower_trilu,
    movement.IOTA: lower_iota,
}
DYNAMIC_OPS = (movement.CONCAT, movement.BROADCAST, movement.SLICE, movement.IOTA)
