"""Lowering of reduction dlc ops: reduce, argreduce, hardmax, cumulative, det.

- `dlc.reduce` is a `linalg.generic` whose reduced loops are `reduction` iterators,
  accumulating into a `linalg.fill` of the identity (0, 1, lowest, highest); the per-element
  transform (|x|, x*x, exp(x - max)) runs in its body and the final one (divide by the count,
  sqrt, log) in an elementwise `linalg.generic` after it. float16 accumulates in float32.
  keepdims is a `tensor.expand_shape` of the reduced tensor. logsumexp first reduces the max
  (ignoring infinities, as ONNX's reference does; 0 where no element is finite), then sums
  exp(x - max).
- `dlc.argreduce` is one `linalg.generic` with two outputs, the best value and its index
  (`linalg.index`); ties keep the first index (`>`) or the last (`>=`); a NaN wins, as in
  numpy's argmax.
- `dlc.hardmax` is that argmax, then an elementwise generic comparing each index with it.
- `dlc.cumulative` along an axis of fewer than 16 is a `linalg.generic` with one extra
  reduction loop k over the axis, adding (or multiplying) x[.., k, ..] where k <= i (k < i
  exclusive, k >= i reverse), the identity elsewhere: quadratic in the axis size, one op; a
  longer axis is a scan, an `scf.for` over the axis carrying the running slice and inserting
  each step's slice into the result (linear).
- `dlc.det` is loops (`scf.for`) over the batch and the LU elimination with partial pivoting of
  each matrix, on tensors (`tensor.extract`/`tensor.insert` on a `linalg.copy` of the
  operand, updated in place once bufferized): the determinant is the product of the pivots,
  negated per row swap. A zero pivot (a column of zeros) gives 0 without dividing by it.
  float16 eliminates in float32.

Element types come from `source_types` (bool is i8 0/1, unsigned uiN is iN in storage).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg, scf
from mlir.dialects import math as mmath
from mlir.dialects import tensor as mtensor

from dlc.dialects import reduction
from dlc.dialects.ops import is_bool, is_float, is_unsigned
from dlc.passes.lowering.builders import (
    PARALLEL,
    REDUCTION,
    as_value,
    dims_map,
    elementwise,
    empty_like,
    filled,
    generic,
    scalar,
    sizes_of,
)
from dlc.passes.lowering.storage import source_types

# ----------------------------------------------------------------------------- element kinds


def NO_SIGNED_ZEROS() -> ir.Attribute:
    """fastmath<nsz> of a reduction's maximumf/minimumf: NaN still propagates, only which zero
    max(-0, +0) returns is left open (numpy's maximum returns its first operand there). x86
    then needs vmaxps and a NaN fix-up (3 instructions a vector, not 6: the ordering of zeros
    took a sign test and two blends). Zen 4, one thread, CPU ms, before -> after
    (onnxruntime): ReduceMax of 2364 rows of 192 0.066 -> 0.058 (0.039), ReduceMin of 197
    rows of 768 0.022 -> 0.017 (0.019), Softmax [1,12,197,197] 0.358 -> 0.352 (0.184)."""
    return ir.Attribute.parse("#arith.fastmath<nsz>")


class Kind:
    """How to do arithmetic on one element type as the program wrote it (`source`)."""

    def __init__(self, source: ir.Type, storage: ir.Type):
        self.source, self.storage = source, storage
        self.floating = is_float(source)
        self.unsigned = is_unsigned(source) or is_bool(source)
        # float16 accumulates in float32; other types in themselves
        self.acc = ir.F32Type.get() if isinstance(storage, ir.F16Type) else storage

    def widen(self, x: ir.Value) -> ir.Value:
        return arith.extf(self.acc, x) if self.acc != self.storage else x

    def narrow(self, x: ir.Value) -> ir.Value:
        return arith.truncf(self.storage, x) if self.acc != self.storage else x

    def lowest(self) -> float:
        if self.floating:
            return -math.inf
        if self.unsigned:
            return 0
        return -(1 << (self.storage.width - 1))

    def highest(self) -> float:
        if self.floating:
            return math.inf
        if is_bool(self.source):
            return 1
        if self.unsigned:
            return -1  # all ones
        return (1 << (self.storage.width - 1)) - 1

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.addf(a, b) if self.floating else arith.addi(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.mulf(a, b) if self.floating else arith.muli(a, b)

    def max(self, a: ir.Value, b: ir.Value) -> ir.Value:
        if self.floating:  # NaN-propagating, as numpy's maximum (see NO_SIGNED_ZEROS)
            return arith.maximumf(a, b, fastmath=NO_SIGNED_ZEROS())
        return arith.maxui(a, b) if self.unsigned else arith.maxsi(a, b)

    def min(self, a: ir.Value, b: ir.Value) -> ir.Value:
        if self.floating:
            return arith.minimumf(a, b, fastmath=NO_SIGNED_ZEROS())
        return arith.minui(a, b) if self.unsigned else arith.minsi(a, b)

    def abs(self, x: ir.Value) -> ir.Value:
        if self.floating:
            return mmath.absf(x)
        return x if self.unsigned else mmath.absi(x)

    def greater(self, a: ir.Value, b: ir.Value, or_equal: bool) -> ir.Value:
        if self.floating:
            return arith.cmpf(arith.CmpFPredicate.OGE if or_equal else arith.CmpFPredicate.OGT,
                              a, b)
        names = ("uge", "ugt") if self.unsigned else ("sge", "sgt")
        return arith.cmpi(getattr(arith.CmpIPredicate, names[0 if or_equal else 1]), a, b)

    def sqrt(self, x: ir.Value) -> ir.Value:
        # integers: through float64, truncated back (numpy's sqrt(...).astype(int))
        if self.floating:
            return mmath.sqrt(x)
        f64 = ir.F64Type.get()
        wide = arith.uitofp(f64, x) if self.unsigned else arith.sitofp(f64, x)
        root = mmath.sqrt(wide)
        return arith.fptoui(x.type, root) if self.unsigned else arith.fptosi(x.type, root)

    def divide_by(self, x: ir.Value, count: int) -> ir.Value:
        if self.floating:
            return arith.divf(x, scalar(x.type, count))
        if count == 0:  # an empty integer mean: 0 rather than a trap
            return scalar(x.type, 0)
        divide = arith.divui if self.unsigned else arith.divsi
        return divide(x, scalar(x.type, count))


# ----------------------------------------------------------------------------- shared builders


def _kept(rank: int, axes: list[int]) -> list[int]:
    return [d for d in range(rank) if d not in axes]


def _tensor_of(shape: list[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(shape, element)


def reduce_loops(x: ir.Value, extras: list[ir.Value], init: ir.Value, axes: list[int],
                 body: Callable[..., ir.Value]) -> ir.Value:
    """A generic over x's loops, reducing `axes` into `init`; extras are indexed like init."""
    rank = x.type.rank
    out_map = dims_map(rank, _kept(rank, axes))
    maps = [ir.AffineMap.get_identity(rank), *[out_map] * len(extras), out_map]
    iterators = [REDUCTION if d in axes else PARALLEL for d in range(rank)]
    return as_value(generic([x, *extras], init, maps, iterators, body))


def expand_kept(value: ir.Value, result_type: ir.RankedTensorType, axes: list[int]) -> ir.Value:
    """Reinsert the reduced `axes` as size-1 axes (keepdims) with tensor.expand_shape."""
    if value.type == result_type:
        return value
    groups: list[list[int]] = []
    pending: list[int] = []
    for d in range(result_type.rank):
        if d not in axes:
            groups.append([*pending, d])
            pending = []
        elif groups:
            groups[-1].append(d)
        else:
            pending.append(d)
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])
    sizes = sizes_of(list(result_type.shape))  # (a dynamic size: its run-time value)
    return mtensor.ExpandShapeOp(result_type, value, reassociation,
                                 [d for d in sizes if isinstance(d, ir.Value)],
                                 list(result_type.shape)).result


def _loop_index(dim: int) -> ir.Value:
    # (linalg.index is shadowed by the OpDSL's `index` in mlir.dialects.linalg)
    return linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)).result


def _float_attr(element: ir.Type, value: float) -> ir.Value:
    return arith.ConstantOp(element, ir.FloatAttr.get(element, value)).result


# ----------------------------------------------------------------------------- dlc.reduce

# fn -> (identity: Kind -> value, combine: Kind -> (acc, x) -> acc)
COMBINE: dict[str, tuple[Callable[[Kind], float], Callable[[Kind], Callable]]] = {
    "sum": (lambda k: 0, lambda k: k.add),
    "mean": (lambda k: 0, lambda k: k.add),
    "l1": (lambda k: 0, lambda k: k.add),
    "l2": (lambda k: 0, lambda k: k.add),
    "sumsquare": (lambda k: 0, lambda k: k.add),
    "logsum": (lambda k: 0, lambda k: k.add),
    "logsumexp": (lambda k: 0, lambda k: k.add),
    "prod": (lambda k: 1, lambda k: k.mul),
    "max": (Kind.lowest, lambda k: k.max),
    "min": (Kind.highest, lambda k: k.min),
}

# fn -> the per-element transform, before combining (x is widened to the accumulator type)
PRE: dict[str, Callable[[Kind, ir.Value], ir.Value]] = {
    "l1": lambda k, x: k.abs(x),
    "l2": lambda k, x: k.mul(x, x),
    "sumsquare": lambda k, x: k.mul(x, x),
}

# fn -> the final transform of an accumulated value (count: the number of reduced elements)
# (the fns of POST that read the count, a constant: not over a dynamic size, `_reduce_limit`)
POST_COUNTS = ("mean",)
POST: dict[str, Callable[[Kind, ir.Value, int], ir.Value]] = {
    "mean": lambda k, acc, count: k.divide_by(acc, count),
    "l2": lambda k, acc, count: k.sqrt(acc),
    "logsum": lambda k, acc, count: mmath.log(acc),
}


def lower_reduce(op: ir.OpView, rewriter) -> None:
    # dlc.reduce{fn}(x) -> linalg.generic {reduction loops, combine(acc, pre(x))}
    #                      [-> linalg.generic {post(acc)}] [-> tensor.expand_shape]
    fn = ir.StringAttr(op.attributes["fn"]).value
    axes = [int(a) for a in ir.DenseI64ArrayAttr(op.attributes["axes"])]
    (x,) = op.operands
    result_type = op.results[0].type
    kind = Kind(source_types(op)[0][0], result_type.element_type)
    shape = [x.type.shape[d] for d in _kept(x.type.rank, axes)]
    count = math.prod(x.type.shape[d] for d in axes)
    with rewriter.ip, op.location:
        if fn == "logsumexp":
            value = _logsumexp(x, axes, kind, shape)
        else:
            value = _reduce(x, axes, kind, shape, fn, count)
        rewriter.replace_op(op, [expand_kept(value, result_type, axes)])


def _reduce(x: ir.Value, axes: list[int], kind: Kind, shape: list[int], fn: str,
            count: int) -> ir.Value:
    identity, combine = COMBINE[fn]
    pre = PRE.get(fn, lambda k, v: v)
    combine_fn = combine(kind)
    init = filled(_tensor_of(shape, kind.acc), identity(kind))
    acc = reduce_loops(x, [], init, axes,
                       lambda v, a: combine_fn(a, pre(kind, kind.widen(v))))
    post = POST.get(fn)
    if post is None and kind.acc == kind.storage:
        return acc
    finish = post or (lambda k, v, c: v)
    return as_value(elementwise([acc], _tensor_of(shape, kind.storage),
                                lambda a: kind.narrow(finish(kind, a, count))))


def _logsumexp(x: ir.Value, axes: list[int], kind: Kind, shape: list[int]) -> ir.Value:
    # m = max(x where finite, else -inf); log(sum(exp(x - m))) + m
    acc_type = _tensor_of(shape, kind.acc)

    def finite_max(v: ir.Value, a: ir.Value) -> ir.Value:
        v = kind.widen(v)
        infinite = arith.cmpf(arith.CmpFPredicate.OEQ, mmath.absf(v),
                              _float_attr(kind.acc, math.inf))
        return arith.maximumf(a, arith.select(infinite, _float_attr(kind.acc, -math.inf), v))

    peak = reduce_loops(x, [], filled(acc_type, -math.inf), axes, finite_max)
    # no finite element: shift by 0, not -inf (x - (-inf) is NaN for x = -inf, and log(s) +
    # (-inf) NaN for s = inf): all -inf -> log(0) = -inf, an inf -> inf, as numpy and
    # onnxruntime give
    shift = as_value(elementwise(
        [peak], acc_type,
        lambda m: arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, m,
                                          _float_attr(kind.acc, -math.inf)),
                               _float_attr(kind.acc, 0.0), m)))
    total = reduce_loops(x, [shift], filled(acc_type, 0), axes,
                         lambda v, m, a: arith.addf(a, mmath.exp(arith.subf(kind.widen(v), m))))
    return as_value(elementwise([total, shift], _tensor_of(shape, kind.storage),
                                lambda s, m: kind.narrow(arith.addf(mmath.log(s), m))))


# ----------------------------------------------------------------------------- argmax/argmin


def arg_loops(x: ir.Value, axis: int, fn: str, last: bool, kind: Kind) -> ir.Value:
    """The index (i64) of the max or min of x along `axis`, that axis removed."""
    rank = x.type.rank
    shape = [x.type.shape[d] for d in _kept(rank, [axis])]
    i64 = ir.IntegerType.get_signless(64)
    start = kind.lowest() if fn == "max" else kind.highest()
    best_init = filled(_tensor_of(shape, kind.storage), start)
    index_init = filled(_tensor_of(shape, i64), 0)
    out_map = dims_map(rank, _kept(rank, [axis]))
    maps = [ir.AffineMap.get_identity(rank), out_map, out_map]
    iterators = [REDUCTION if d == axis else PARALLEL for d in range(rank)]

    @linalg.generic([x], [best_init, index_init], maps, iterators)
    def result(v, best, index):
        better = kind.greater(v, best, last) if fn == "max" else kind.greater(best, v, last)
        if kind.floating:  # a NaN wins (the first one, or the last with last=True)
            v_nan = arith.cmpf(arith.CmpFPredicate.UNO, v, v)
            best_nan = arith.cmpf(arith.CmpFPredicate.UNO, best, best)
            best_number = arith.xori(best_nan, _true())
            new_nan = v_nan if last else arith.andi(v_nan, best_number)
            better = arith.ori(arith.andi(better, best_number), new_nan)
        here = arith.index_cast(i64, _loop_index(axis))
        return [arith.select(better, v, best), arith.select(better, here, index)]

    return result[1]


def _true() -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result


def lower_argreduce(op: ir.OpView, rewriter) -> None:
    # dlc.argreduce{max}(x) -> linalg.generic {outs: best value, its index} [-> expand_shape]
    fn = ir.StringAttr(op.attributes["fn"]).value
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    last = bool(ir.IntegerAttr(op.attributes["select_last_index"]).value)
    (x,) = op.operands
    kind = Kind(source_types(op)[0][0], x.type.element_type)
    with rewriter.ip, op.location:
        index = arg_loops(x, axis, fn, last, kind)
        rewriter.replace_op(op, [expand_kept(index, op.results[0].type, [axis])])


def lower_hardmax(op: ir.OpView, rewriter) -> None:
    # dlc.hardmax(x) -> argmax generic, then linalg.generic {index(axis) == argmax ? 1 : 0}
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    (x,) = op.operands
    result_type = op.results[0].type
    element = result_type.element_type
    kind = Kind(source_types(op)[0][0], element)
    rank = x.type.rank
    with rewriter.ip, op.location:
        index = arg_loops(x, axis, "max", False, kind)
        maps = [dims_map(rank, _kept(rank, [axis])), ir.AffineMap.get_identity(rank)]

        def one_hot(best: ir.Value, out: ir.Value) -> ir.Value:
            here = arith.index_cast(best.type, _loop_index(axis))
            hit = arith.cmpi(arith.CmpIPredicate.eq, here, best)
            return arith.select(hit, scalar(element, 1), scalar(element, 0))

        value = generic([index], empty_like(result_type), maps, [PARALLEL] * rank, one_hot)
        rewriter.replace_op(op, [as_value(value)])


# ----------------------------------------------------------------------------- cumulative

# fn -> (identity, combine: Kind -> (acc, x) -> acc)
CUMULATIVE: dict[str, tuple[float, Callable[[Kind], Callable]]] = {
    "sum": (0, lambda k: k.add),
    "prod": (1, lambda k: k.mul),
}


SCAN_MIN = 16  # from this axis size on, a cumulative op is a scan (below: one generic)


def lower_cumulative(op: ir.OpView, rewriter) -> None:
    # dlc.cumulative{fn}(x) -> linalg.generic {loops i.., k: fn(acc, k <= i ? x[..k..] : id)}
    # (an axis of SCAN_MIN or more: a scan, `_scan`)
    fn = ir.StringAttr(op.attributes["fn"]).value
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    exclusive = bool(ir.IntegerAttr(op.attributes["exclusive"]).value)
    reverse = bool(ir.IntegerAttr(op.attributes["reverse"]).value)
    (x,) = op.operands
    result_type = op.results[0].type
    kind = Kind(source_types(op)[0][0], result_type.element_type)
    identity, combine = CUMULATIVE[fn]
    combine_fn = combine(kind)
    rank = x.type.rank
    if result_type.shape[axis] >= SCAN_MIN:
        with rewriter.ip, op.location:
            value = _scan(x, axis, exclusive, reverse, kind, identity, combine_fn)
            if kind.acc != kind.storage:
                value = as_value(elementwise([value], result_type, kind.narrow))
            rewriter.replace_op(op, [value])
        return
    predicate = {(False, False): "ule", (False, True): "ult", (True, False): "uge",
                 (True, True): "ugt"}[(reverse, exclusive)]
    maps = [dims_map(rank + 1, [rank if d == axis else d for d in range(rank)]),
            dims_map(rank + 1, list(range(rank)))]
    with rewriter.ip, op.location:
        init = filled(_tensor_of(list(result_type.shape), kind.acc), identity)

        def masked(v: ir.Value, acc: ir.Value) -> ir.Value:
            take = arith.cmpi(getattr(arith.CmpIPredicate, predicate),
                              _loop_index(rank), _loop_index(axis))
            return combine_fn(acc, arith.select(take, kind.widen(v), scalar(kind.acc, identity)))

        value = as_value(generic([x], init, maps, [PARALLEL] * rank + [REDUCTION], masked))
        if kind.acc != kind.storage:
            value = as_value(elementwise([value], result_type, kind.narrow))
        rewriter.replace_op(op, [value])


def _scan(x: ir.Value, axis: int, exclusive: bool, reverse: bool, kind: Kind, identity: float,
          combine: Callable) -> ir.Value:
    """The running fn of x along `axis` as an scf.for over it (from its end when `reverse`),
    carrying the running slice (x's shape with 1 at `axis`) and the result, into which each
    step inserts its slice: O(L) where the masked generic is O(L^2) (a CumSum over 1024
    positions: 55 ms against onnxruntime's 0.015)."""
    shape = list(x.type.shape)
    length = shape[axis]
    part = [1 if d == axis else n for d, n in enumerate(shape)]
    part_x = _tensor_of(part, x.type.element_type)
    part_acc = _tensor_of(part, kind.acc)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    offsets = [dynamic if d == axis else 0 for d in range(len(shape))]
    ones = [1] * len(shape)
    result0 = mtensor.EmptyOp(shape, kind.acc).result
    running0 = as_value(filled(part_acc, identity))
    last = _index(length - 1)

    def step(j: ir.Value, result: ir.Value, running: ir.Value) -> list[ir.Value]:
        position = arith.subi(last, j) if reverse else j
        element = mtensor.ExtractSliceOp(part_x, x, [position], [], [], offsets, part,
                                         ones).result
        if exclusive:  # (the slice before this step's element: written first)
            result = mtensor.InsertSliceOp(running, result, [position], [], [], offsets,
                                           part, ones).result
        # (updated in place: an scf.for must yield a value its buffer is equivalent to)
        identity_map = ir.AffineMap.get_identity(len(shape))
        following = as_value(generic([element], running, [identity_map, identity_map],
                                     [PARALLEL] * len(shape),
                                     lambda v, acc: combine(acc, kind.widen(v))))
        if not exclusive:
            result = mtensor.InsertSliceOp(following, result, [position], [], [], offsets,
                                           part, ones).result
        return [result, following]

    return _loop(_index(0), _index(length), [result0, running0], step)[0]


# ----------------------------------------------------------------------------- det


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _loop(lower: ir.Value, upper: ir.Value, carried: list[ir.Value],
          body: Callable[..., list[ir.Value]]) -> list[ir.Value]:
    """scf.for lower..upper carrying `carried`; body(i, *carried) returns their next values."""
    loop = scf.ForOp(lower, upper, _index(1), carried)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(body(loop.induction_variable, *loop.inner_iter_args))
    return list(loop.results)


def lower_det(op: ir.OpView, rewriter) -> None:
    # dlc.det(x [B, n, n]) -> scf.for b, k: LU elimination with partial pivoting of x[b] in
    #                         place (tensor.extract/insert), det = sign * product of pivots
    (x,) = op.operands
    result_type = op.results[0].type
    kind = Kind(source_types(op)[0][0], result_type.element_type)
    batch, size = x.type.shape[0], x.type.shape[1]
    acc = kind.acc
    with rewriter.ip, op.location:
        # a fresh tensor to eliminate in: the loops must never write into their operand
        if acc != kind.storage:  # float16 eliminates in float32
            work = as_value(elementwise([x], _tensor_of(list(x.type.shape), acc), kind.widen))
        else:
            work = linalg.copy(x, outs=[empty_like(x.type)])
        zero, one, n = _index(0), _index(1), _index(size)

        def eliminate(b: ir.Value, m: ir.Value, det: ir.Value, k: ir.Value) -> list[ir.Value]:
            def at(t: ir.Value, i: ir.Value, j: ir.Value) -> ir.Value:
                return mtensor.extract(t, [b, i, j])

            def pick_pivot(i: ir.Value, best_row: ir.Value, best: ir.Value) -> list[ir.Value]:
                size_here = mmath.absf(at(m, i, k))
                better = arith.cmpf(arith.CmpFPredicate.OGT, size_here, best)
                return [arith.select(better, i, best_row), arith.select(better, size_here, best)]

            p, _ = _loop(k, n, [k, _float_attr(acc, -1.0)], pick_pivot)

            def swap(j: ir.Value, t: ir.Value) -> list[ir.Value]:
                row_k, row_p = at(t, k, j), at(t, p, j)
                t = mtensor.insert(row_p, t, [b, k, j])
                return [mtensor.insert(row_k, t, [b, p, j])]

            (m,) = _loop(zero, n, [m], swap)
            swapped = arith.cmpi(arith.CmpIPredicate.ne, p, k)
            pivot = at(m, k, k)
            det = arith.mulf(arith.select(swapped, arith.negf(det), det), pivot)
            is_zero = arith.cmpf(arith.CmpFPredicate.OEQ, pivot, _float_attr(acc, 0.0))
            safe = arith.select(is_zero, _float_attr(acc, 1.0), pivot)  # column all zero
            below = arith.addi(k, one)

            def row(i: ir.Value, t: ir.Value) -> list[ir.Value]:
                factor = arith.divf(at(t, i, k), safe)

                def column(j: ir.Value, u: ir.Value) -> list[ir.Value]:
                    value = arith.subf(at(u, i, j), arith.mulf(factor, at(u, k, j)))
                    return [mtensor.insert(value, u, [b, i, j])]

                return _loop(below, n, [t], column)

            (m,) = _loop(below, n, [m], row)
            return [m, det]

        def matrix(b: ir.Value, m: ir.Value, out: ir.Value) -> list[ir.Value]:
            m, det = _loop(zero, n, [m, _float_attr(acc, 1.0)],
                           lambda k, t, d: eliminate(b, t, d, k))
            return [m, mtensor.insert(kind.narrow(det), out, [b])]

        _, dets = _loop(zero, _index(batch), [work, empty_like(result_type)], matrix)
        rewriter.replace_op(op, [dets])


def _reduce_limit(op: ir.OpView) -> str | None:
    """Why a reduction of a dynamic size has no lowering yet: a mean over the dynamic size
    (its count is the lowering's constant)."""
    (x,) = op.operands
    axes = [int(a) for a in ir.DenseI64ArrayAttr(op.attributes["axes"])]
    if any(ir.ShapedType.is_dynamic_size(x.type.shape[d]) for d in axes if 0 <= d < x.type.rank) \
            and ir.StringAttr(op.attributes["fn"]).value in POST_COUNTS:
        return "averages over a dynamic size (?), which its lowering does not take yet"
    return None


PATTERNS = {
    reduction.REDUCE: lower_reduce,
    reduction.ARGREDUCE: lower_argreduce,
    reduction.HARDMAX: lower_hardmax,
    reduction.CUMULATIVE: lower_cumulative,
    reduction.DET: lower_det,
}
LIMITS = {reduction.REDUCE: _reduce_limit}
DYNAMIC_OPS = (reduction.REDUCE,)
