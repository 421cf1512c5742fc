"""Lowering of gather/scatter and indexing dlc ops.

Gathers become a `linalg.generic` over the result whose body computes the source position
from `linalg.index` and the index operand (`arith.index_cast`) and reads the data with
`tensor.extract`. Scatters copy the data (`linalg.copy`), then an `scf.for` nest over the
updates carries the tensor as an iter_arg and writes each update with `tensor.insert`
(one-shot-bufferize writes in place into the copy). `dlc.topk` is an insertion sort of each
row into its k-element result, branch-free (selects), in `scf.for` loops.

Every index read from a tensor goes through `safe_index`: negative values count from the end,
and what is still out of range is clamped into the axis, so no access is ever out of bounds;
an index out of [-size, size - 1] is also reported at run time by the check that `checks.emit`
puts before the op (the call then raises `IndexOutOfRangeError`, see `checks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

from dlc.dialects import indexing
from dlc.dialects.ops import is_bool, is_float, is_unsigned
from dlc.passes.lowering import checks
from dlc.passes.lowering.builders import PARALLEL, dims_map, empty_like, filled, generic
from dlc.passes.lowering.storage import source_types

# ----------------------------------------------------------------------------- helpers


def index_const(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def safe_index(raw: ir.Value, size: int | ir.Value) -> ir.Value:
    # i = raw < 0 ? raw + size : raw, then clamped into [0, size - 1] (size: an index value
    # where it is dynamic)
    index = arith.index_cast(ir.IndexType.get(), raw) if raw.type != ir.IndexType.get() else raw
    zero = index_const(0)
    size_value = size if isinstance(size, ir.Value) else index_const(size)
    last = arith.maxsi(arith.subi(size_value, index_const(1)), zero) \
        if isinstance(size, ir.Value) else index_const(max(size - 1, 0))
    wrapped = arith.select(arith.cmpi(arith.CmpIPredicate.slt, index, zero),
                           arith.addi(index, size_value), index)
    return arith.maxsi(arith.minsi(wrapped, last), zero)


def loop_index(dim: int) -> ir.Value:
    return linalg.IndexOp(dim).result


def for_range(upper: int, inits: Sequence[ir.Value],
              body: Callable[[ir.Value, list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
    """An `scf.for` from 0 to `upper` carrying `inits`; `body(iv, args)` yields the next args."""
    loop = scf.ForOp(index_const(0), index_const(upper), index_const(1), list(inits))
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(body(loop.induction_variable, list(loop.inner_iter_args)))
    return list(loop.results)


def loop_nest(shape: Sequence[int], inits: Sequence[ir.Value],
              body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]],
              ivs: tuple[ir.Value, ...] = ()) -> list[ir.Value]:
    """Nested `scf.for` loops over `shape` carrying `inits`; `body(ivs, args)` -> next args."""
    if len(ivs) == len(shape):
        return body(list(ivs), list(inits))
    return for_range(shape[len(ivs)], inits,
                     lambda iv, args: loop_nest(shape, args, body, (*ivs, iv)))


def copy_of(value: ir.Value) -> ir.Value:
    """A fresh tensor holding `value` (scatters write into it, never into their operand)."""
    return linalg.copy(value, outs=[empty_like(value.type)])


def combiner(reduction: str, source: ir.Type) -> Callable[[ir.Value, ir.Value], ir.Value]:
    """How a scatter merges the current element with an update (bool is stored as i8 0/1)."""
    if reduction == "none":
        return lambda old, new: new
    if is_float(source):
        table = {"add": arith.addf, "mul": arith.mulf, "max": arith.maximumf,
                 "min": arith.minimumf}
    elif is_bool(source):
        table = {"add": arith.ori, "mul": arith.andi, "max": arith.ori, "min": arith.andi}
    elif is_unsigned(source):
        table = {"add": arith.addi, "mul": arith.muli, "max": arith.maxui, "min": arith.minui}
    else:
        table = {"add": arith.addi, "mul": arith.muli, "max": arith.maxsi, "min": arith.minsi}
    return table[reduction]


def _int_attr(op: ir.OpView, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _str_attr(op: ir.OpView, name: str) -> str:
    return ir.StringAttr(op.attributes[name]).value


# ----------------------------------------------------------------------------- gathers


def _constant_index(indices: ir.Value, size: int) -> int | None:
    """The value of a constant scalar index in [-size, size), made non-negative, else None."""
    owner = indices.owner
    if indices.type.rank != 0 or not isinstance(owner, ir.Operation | ir.OpView):
        return None
    if owner.name not in ("dlc.constant", "arith.constant"):
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return None
    index = int(attr[0])
    return index + size if -size <= index < 0 else index if index < size else None


def lower_gather(op: ir.OpView, rewriter) -> None:
    # dlc.gather{axis}(data, indices) -> linalg.generic {tensor.extract data[.., idx, ..]}
    #   (a constant scalar index: tensor.extract_slice data[.., idx, ..], rank-reducing: a
    #   copy of rows that bufferizes to a view, not a scalar loop; ViT's q/k/v of
    #   nn.MultiheadAttention and its class token)
    data, indices = op.operands
    result_type = op.results[0].type
    axis, rank, q = _int_attr(op, "axis"), result_type.rank, indices.type.rank
    size = data.type.shape[axis]
    index = _constant_index(indices, size) if data.type.has_static_shape else None
    if index is not None:
        shape = list(data.type.shape)
        offsets = [0] * len(shape)
        offsets[axis] = index
        sizes = shape[:axis] + [1] + shape[axis + 1:]
        with rewriter.ip, op.location:
            value = tensor.ExtractSliceOp(result_type, data, [], [], [], offsets, sizes,
                                          [1] * len(shape)).result
            rewriter.replace_op(op, [value])
        return

    def body(raw: ir.Value, _out: ir.Value) -> ir.Value:
        position = [loop_index(d) for d in range(axis)] + [safe_index(raw, size)]
        position += [loop_index(d) for d in range(axis + q, rank)]
        return tensor.extract(data, position)

    with rewriter.ip, op.location:
        if ir.ShapedType.is_dynamic_size(size):  # (data of the dynamic size along the axis)
            size = tensor.dim(data, index_const(axis))
        checks.emit(op, indices, [size])
        maps = [dims_map(rank, list(range(axis, axis + q))), dims_map(rank, list(range(rank)))]
        value = generic([indices], empty_like(result_type), maps, [PARALLEL] * rank, body)
        rewriter.replace_op(op, [value])


def lower_gather_elements(op: ir.OpView, rewriter) -> None:
    # dlc.gather_elements{axis}(data, indices) -> linalg.generic {data[i with i[axis] = idx]}
    data, indices = op.operands
    result_type = op.results[0].type
    axis, rank = _int_attr(op, "axis"), result_type.rank
    size = data.type.shape[axis]

    def body(raw: ir.Value, _out: ir.Value) -> ir.Value:
        position = [loop_index(d) for d in range(rank)]
        position[axis] = safe_index(raw, size)
        return tensor.extract(data, position)

    with rewriter.ip, op.location:
        if ir.ShapedType.is_dynamic_size(size):  # (data of the dynamic size along the axis)
            size = tensor.dim(data, index_const(axis))
        checks.emit(op, indices, [size])
        identity = dims_map(rank, list(range(rank)))
        value = generic([indices], empty_like(result_type), [identity, identity],
                        [PARALLEL] * rank, body)
        rewriter.replace_op(op, [value])


def nd_sizes(data: ir.Value, indices: ir.Value, batch_dims: int) -> list[int | ir.Value]:
    """The sizes of data's axes an index tuple of `indices` reads (an index value, tensor.dim,
    for the dynamic size)."""
    axes = range(batch_dims, batch_dims + indices.type.shape[-1])
    return [tensor.dim(data, index_const(a)) if ir.ShapedType.is_dynamic_size(
        data.type.shape[a]) else data.type.shape[a] for a in axes]


def nd_position(data: ir.Value, indices: ir.Value, outer: list[ir.Value],
                batch_dims: int, sizes: Sequence[int | ir.Value] | None = None
                ) -> list[ir.Value]:
    """The data position of the index tuple `indices[outer, :]` (batch axes from `outer`)."""
    k = indices.type.shape[-1]
    tuple_ = [tensor.extract(indices, [*outer, index_const(c)]) for c in range(k)]
    sizes = data.type.shape[batch_dims:batch_dims + k] if sizes is None else sizes
    return outer[:batch_dims] + [safe_index(raw, size) for raw, size in zip(tuple_, sizes)]


def lower_gather_nd(op: ir.OpView, rewriter) -> None:
    # dlc.gather_nd{b}(data, indices) -> linalg.generic {data[i[:b], indices[i[:q-1]], i[q-1:]]}
    data, indices = op.operands
    result_type = op.results[0].type
    batch_dims, rank, q = _int_attr(op, "batch_dims"), result_type.rank, indices.type.rank

    def body(_out: ir.Value) -> ir.Value:
        loops = [loop_index(d) for d in range(rank)]
        position = nd_position(data, indices, loops[:q - 1], batch_dims, sizes) + \
            loops[q - 1:]
        return tensor.extract(data, position)

    with rewriter.ip, op.location:
        sizes = nd_sizes(data, indices, batch_dims)
        checks.emit(op, indices, sizes)
        value = generic([], empty_like(result_type), [dims_map(rank, list(range(rank)))],
                        [PARALLEL] * rank, body)
        rewriter.replace_op(op, [value])


# ----------------------------------------------------------------------------- scatters


def lower_scatter_elements(op: ir.OpView, rewriter) -> None:
    # dlc.scatter_elements{axis, reduction}(data, indices, updates)
    #   -> linalg.copy(data), then scf.for over updates {tensor.insert at i[axis] = idx}
    data, indices, updates = op.operands
    axis = _int_attr(op, "axis")
    combine = combiner(_str_attr(op, "reduction"), source_types(op)[0][0])
    size = data.type.shape[axis]

    def body(ivs: list[ir.Value], args: list[ir.Value]) -> list[ir.Value]:
        (out,) = args
        position = list(ivs)
        position[axis] = safe_index(tensor.extract(indices, ivs), size)
        new = combine(tensor.extract(out, position), tensor.extract(updates, ivs))
        return [tensor.insert(new, out, position)]

    with rewriter.ip, op.location:
        checks.emit(op, indices, [size])
        (value,) = loop_nest(list(indices.type.shape), [copy_of(data)], body)
        rewriter.replace_op(op, [value])


def lower_scatter_nd(op: ir.OpView, rewriter) -> None:
    # dlc.scatter_nd{reduction}(data, indices, updates)
    #   -> linalg.copy(data), then scf.for over updates {tensor.insert at indices[i[:q-1]], i[q-1:]}
    data, indices, updates = op.operands
    q = indices.type.rank
    combine = combiner(_str_attr(op, "reduction"), source_types(op)[0][0])

    def body(ivs: list[ir.Value], args: list[ir.Value]) -> list[ir.Value]:
        (out,) = args
        position = nd_position(data, indices, ivs[:q - 1], 0) + ivs[q - 1:]
        new = combine(tensor.extract(out, position), tensor.extract(updates, ivs))
        return [tensor.insert(new, out, position)]

    with rewriter.ip, op.location:
        checks.emit(op, indices, data.type.shape[:indices.type.shape[-1]])
        (value,) = loop_nest(list(updates.type.shape), [copy_of(data)], body)
        rewriter.replace_op(op, [value])


# ----------------------------------------------------------------------------- one_hot, topk


def lower_one_hot(op: ir.OpView, rewriter) -> None:
    # dlc.one_hot{depth, axis}(indices, values)
    #   -> linalg.generic {(idx < 0 ? idx + depth : idx) == i[axis] ? values[1] : values[0]}
    indices, values = op.operands
    result_type = op.results[0].type
    depth, axis, rank = _int_attr(op, "depth"), _int_attr(op, "axis"), result_type.rank
    source = source_types(op)[0][0]

    def matches(raw: ir.Value) -> ir.Value:
        position = loop_index(axis)
        if is_float(source):  # compared as floats, as the reference does (1.5 matches nothing)
            wrapped = arith.select(arith.cmpf(arith.CmpFPredicate.OLT, raw, _zero(raw.type)),
                                   arith.addf(raw, _constant(raw.type, depth)), raw)
            column = arith.sitofp(raw.type, arith.index_cast(ir.IntegerType.get_signless(64),
                                                             position))
            return arith.cmpf(arith.CmpFPredicate.OEQ, wrapped, column)
        wide = ir.IntegerType.get_signless(64)
        if raw.type.width < 64:
            raw = arith.extui(wide, raw) if is_unsigned(source) else arith.extsi(wide, raw)
        if not is_unsigned(source):
            raw = arith.select(arith.cmpi(arith.CmpIPredicate.slt, raw, _zero(wide)),
                               arith.addi(raw, _constant(wide, depth)), raw)
        column = arith.index_cast(wide, position)
        return arith.cmpi(arith.CmpIPredicate.eq, raw, column)

    with rewriter.ip, op.location:
        off, on = (tensor.extract(values, [index_const(i)]) for i in (0, 1))
        kept = [d for d in range(rank) if d != axis]
        maps = [dims_map(rank, kept), dims_map(rank, list(range(rank)))]
        value = generic([indices], empty_like(result_type), maps, [PARALLEL] * rank,
                        lambda raw, _out: arith.select(matches(raw), on, off))
        rewriter.replace_op(op, [value])


def _constant(element: ir.Type, value: float) -> ir.Value:
    if is_float(element):
        return arith.ConstantOp(element, ir.FloatAttr.get(element, float(value))).result
    return arith.ConstantOp(element, ir.IntegerAttr.get(element, int(value))).result


def _zero(element: ir.Type) -> ir.Value:
    return _constant(element, 0)


def order(source: ir.Type) -> tuple[Callable, Callable]:
    """(less, greater) of two elements of `source` type; NaN is above every number and equal
    to NaN (numpy's sort order)."""
    if is_float(source):
        def nan(a: ir.Value) -> ir.Value:
            return arith.cmpf(arith.CmpFPredicate.UNO, a, a)

        def less(a: ir.Value, b: ir.Value) -> ir.Value:
            ordered = arith.cmpf(arith.CmpFPredicate.OLT, a, b)
            true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
            return arith.ori(ordered, arith.andi(nan(b), arith.xori(nan(a), true)))

        def greater(a: ir.Value, b: ir.Value) -> ir.Value:
            return less(b, a)

        return less, greater
    lt, gt = ((arith.CmpIPredicate.ult, arith.CmpIPredicate.ugt) if is_unsigned(source)
              or ir.IntegerType(source).width == 1
              else (arith.CmpIPredicate.slt, arith.CmpIPredicate.sgt))
    return (lambda a, b: arith.cmpi(lt, a, b)), (lambda a, b: arith.cmpi(gt, a, b))


def _better(largest: int, source: ir.Type) -> Callable[[ir.Value, ir.Value], ir.Value]:
    """a strictly before b in topk's order (ties keep the lower index first): `order`'s, NaN
    above every number (first of the largest, last of the smallest: numpy's sort, onnxruntime
    and PyTorch; ordered comparisons left a NaN wherever it was inserted)."""
    less, greater = order(source)
    return greater if largest else less


def lower_topk(op: ir.OpView, rewriter) -> None:
    # dlc.topk{k, axis, largest}(x) -> scf.for over rows, over x's axis j, over the k slots p:
    #   an insertion sort, branch-free: the carried (v, i) takes slot p when slot p is still
    #   empty (p >= j), when v is better, or once an insertion began (the slots shift down);
    #   the slot's previous content is carried on
    (x,) = op.operands
    values_type, indices_type = (r.type for r in op.results)
    k, axis = _int_attr(op, "k"), _int_attr(op, "axis")
    better = _better(_int_attr(op, "largest"), source_types(op)[0][0])
    i64, i1 = ir.IntegerType.get_signless(64), ir.IntegerType.get_signless(1)
    rows = [size for d, size in enumerate(x.type.shape) if d != axis]

    def insert_row(row: list[ir.Value], args: list[ir.Value]) -> list[ir.Value]:
        def insert_element(j: ir.Value, args: list[ir.Value]) -> list[ir.Value]:
            position = row[:axis] + [j] + row[axis:]
            carried = [tensor.extract(x, position), arith.index_cast(i64, j),
                       arith.ConstantOp(i1, 0).result]
            return for_range(k, [*args, *carried],
                             lambda p, state: slot_step(row, j, p, state))[:2]

        return for_range(x.type.shape[axis], args, insert_element)

    slot_step = insertion_step(better, axis)

    with rewriter.ip, op.location:
        inits = [filled(values_type, 0), filled(indices_type, 0)]
        results = loop_nest(rows, inits, insert_row)
        rewriter.replace_op(op, results)


def insertion_step(better: Callable[[ir.Value, ir.Value], ir.Value], axis: int) -> Callable:
    """Slot p of the branch-free insertion of a row's element j (topk's sort; dlc.topk and
    dlc.runtime_topk): step(row, j, p, [values, indices, v, i, shifting]) -> the same state,
    the carried (v, i) written into slot p when p >= j (still empty), when v is better, or
    once the insertion began (`shifting`), the slot's previous content carried on."""
    def step(row: list[ir.Value], j: ir.Value, p: ir.Value,
             state: list[ir.Value]) -> list[ir.Value]:
        values, indices, value, index, shifting = state
        slot = row[:axis] + [p] + row[axis:]
        old_value, old_index = tensor.extract(values, slot), tensor.extract(indices, slot)
        empty = arith.cmpi(arith.CmpIPredicate.uge, p, j)
        take = arith.ori(arith.ori(shifting, empty), better(value, old_value))
        values = tensor.insert(arith.select(take, value, old_value), values, slot)
        indices = tensor.insert(arith.select(take, index, old_index), indices, slot)
        return [values, indices, arith.select(take, old_value, value),
                arith.select(take, old_index, index), take]

    return step


PATTERNS = {
    indexing.GATHER: lower_gather,
    indexing.GATHER_ELEMENTS: lower_gather_elements,
    indexing.GATHER_ND: lower_gather_nd,
    indexing.SCATTER_ELEMENTS: lower_scatter_elements,
    indexing.SCATTER_ND: lower_scatter_nd,
    indexing.ONE_HOT: lower_one_hot,
    indexing.TOPK: lower_topk,
}


def _gather_elements_limit(op: ir.OpView) -> str | None:
    """A gather_elements with a dynamic size reads data at the indices' positions off its
    axis: there, an index of the dynamic size must be one of data's (the same size)."""
    data, indices = (v.type for v in op.operands)
    axis = _int_attr(op, "axis")
    for d, (have, want) in enumerate(zip(data.shape, indices.shape)):
        if d != axis and ir.ShapedType.is_dynamic_size(want) != \
                ir.ShapedType.is_dynamic_size(have):
            return (f"gathers along axis {axis} with the dynamic size (?) at axis {d} of "
                    "only one of data and indices, which its lowering does not take yet")
    return None


def _gather_nd_limit(op: ir.OpView) -> str | None:
    """A gather_nd with a dynamic size: batch axes (read from the loops) are not taken."""
    types = [v.type for v in (*op.operands, *op.results)]
    if _int_attr(op, "batch_dims") and not all(t.has_static_shape for t in types):
        return ("has batch axes and a dynamic size (?), which its lowering does not take "
                "yet")
    return None


LIMITS = {indexing.GATHER_ELEMENTS: _gather_elements_limit,
          indexing.GATHER_ND: _gather_nd_limit}
DYNAMIC_OPS = (indexing.GATHER, indexing.GATHER_ELEMENTS, indexing.GATHER_ND)
