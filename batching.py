"""Batch-separable models: one compile for every batch size.

A model whose inputs have a dynamic batch at axis 0 (`input: float32[batch, 3, 224, 224]`)
usually computes each row of the batch on its own: convolutions, pools, matmuls over the
rows' own tokens, elementwise ops, reductions along other axes. Such a model needs no code
for each batch size: the code compiled for batch 1, called once per row on views of the
inputs and outputs (no copies), computes the same outputs for any batch. `DynamicModel`
does this when `rows_plan` says the model is separable, and compiles one specialization
(batch 1) instead of one per batch size; where other sizes are dynamic too (a sequence
length), one per value of those sizes, each planned on its own.

Separable is decided on the dlc module, not guessed:
- the module is imported at batch 1, 2 and 11; the three must be the same program but for the
  batch: the same ops in the same order on the same operands, equal attributes and constants
  (a size computed from the batch, `x * x.shape[0]` or a branch on the batch folded by the
  importer, shows as a constant or attribute that differs), result types equal but at each
  value's batch axis;
- every op of the batch-11 module is row-wise along the batch axis of its operands by its own
  rule (`_RULES`): elementwise ops broadcast an unbatched operand along it, a reduction,
  softmax-like op, concat or gather does not run along it, a reshape keeps each row's
  elements in place (the batch one axis, or the outer factor of one: `At`), a matmul takes it
  as rows or a batch dimension of one operand with the other unbatched (or as a batch
  dimension of both)... An op without a rule (NonZero, Unique, scatters, einsum...) makes
  the model not separable; a splat or repeated constant sized by the batch is the same row
  for every row;
- every output has the batch at axis 0 (its rows are the call's rows).
A model that fails any of these is compiled per call shape, as before (`DynamicModel`).

The per-row code is slower than a batched compile where the batch gives a matmul its only
rows: an MLP's layers at batch 64 run as 64 vector-matrix products, its weights read once a
row instead of once a tile of rows. `rows_plan` declines a model where products with fewer
than `THIN_ROWS` rows a row of the batch (`_thin_share`) are more than `MAX_THIN` of the
multiply-adds of its matmuls and convolutions, and a model whose row is under
`MIN_ROW_WORK`; a CNN (its final classifier is ~0.05 % of ResNet-50's) and a transformer at a
sequence length of 32 or more (each row's tokens are rows) take the per-row path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir

from dlc.dialects.core import op_def
from dlc.errors import DlcError

# the batch sizes whose modules must agree; the rules read the last, a size that few other
# dimensions have (3 is an image's channels)
BATCHES = (1, 2, 11)
# products (matmuls, gemms) with fewer rows than THIN_ROWS per row of the batch read their
# weights once a row; above MAX_THIN of the multiply-adds, the batch is compiled per size
THIN_ROWS, MAX_THIN = 32, 0.1
# a row's work (multiply-adds of matmuls and convs, result elements of the other ops) below
# which its call's own cost is more than a few percent of it: 1.6 us a row (the lock, the
# descriptors; Zen 4: a ReLU of 1000 rows of 64 took 1.63 us a row, 0.09 us batched),
# 1M multiply-adds 10-20 us
MIN_ROW_WORK = 1_000_000


class NotSeparable(DlcError):
    """Why a model is not computed row by row (the reason, for `rows_reason`; caught by
    `DynamicModel`, which then compiles per shape)."""


@dataclass(frozen=True)
class RowsPlan:
    """A separable model: `batched` names the inputs whose axis 0 is the batch (the others
    are the same for every row)."""

    batched: tuple[str, ...]


def batch_symbol(inputs: Sequence[tuple[str, tuple[int | str, ...]]]) -> str | None:
    """The dynamic size at axis 0 of the inputs that have one there, if it is one named size
    found at no other axis (other dynamic sizes may be anywhere else), or None."""
    firsts = {shape[0] for _, shape in inputs if shape and isinstance(shape[0], str)}
    if len(firsts) != 1:
        return None
    (symbol,) = firsts
    if symbol == "?" or any(symbol in shape[1:] for _, shape in inputs):
        return None
    return symbol


def rows_plan(inputs: Sequence[tuple[str, tuple[int | str, ...]]],
              shapes: Sequence[Sequence[int]],
              import_at: Callable[[dict[str, list[int]]], ir.Module]) -> RowsPlan:
    """The plan of a model computed row by row at the call's other sizes, or NotSeparable
    (see the module doc). `inputs`: (name, symbolic shape) in signature order; `shapes`: a
    call's input shapes (the batch's size in them is not read); `import_at(shapes)`: the dlc
    module at those input shapes (in a context the caller keeps alive)."""
    symbol = batch_symbol(inputs)
    if symbol is None:
        raise NotSeparable("the batch must be one named dynamic size, at axis 0 of the "
                           "inputs only")
    batched = tuple(name for name, shape in inputs if shape and shape[0] == symbol)
    modules = []
    for batch in BATCHES:
        sized = {name: [batch if name in batched and axis == 0 else d
                        for axis, d in enumerate(shape)]
                 for (name, _), shape in zip(inputs, shapes)}
        try:
            modules.append(import_at(sized))
        except (DlcError, ValueError, RuntimeError) as error:  # (a Dim range without 1...)
            raise NotSeparable(f"importing at batch {batch} failed: {error}") from None
    reference = _main(modules[-1])
    args = list(reference.arguments)
    names = [name for name, _ in inputs]
    if len(args) != len(names):
        raise NotSeparable("the module's arguments are not the signature's inputs")
    ops = _ops(reference)  # (walked once: the rules, the comparisons and the costs read it)
    axes = _batch_axes(reference, ops, [0 if n in batched else None for n in names],
                       BATCHES[-1])
    for module, batch in zip(modules[:-1], BATCHES[:-1]):
        _same_program(_main(module), batch, reference, ops, BATCHES[-1], axes)
    work = _work(ops) / BATCHES[-1]
    if work < MIN_ROW_WORK:
        raise NotSeparable(f"a row is ~{work:,.0f} multiply-adds or elements, under "
                           f"{MIN_ROW_WORK:,}: a call per row would cost more than its work")
    share = _thin_share(ops, axes)
    if share > MAX_THIN:
        raise NotSeparable(f"{share:.0%} of the multiply-adds are products with fewer than "
                           f"{THIN_ROWS} rows a row of the batch (their weights read once a "
                           "row): compiled per batch size")
    return RowsPlan(batched)


def _main(module: ir.Module) -> ir.Block:
    for op in module.body.operations:
        if op.operation.name == "func.func" and \
                ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op.regions[0].blocks[0]
    raise NotSeparable("the module has no main function")


def _ops(block: ir.Block) -> list[ir.Operation]:
    """The ops of `block` that its return depends on (the importer leaves the folded
    constants of shape computations behind, `Shape`'s among them: dead, dropped later)."""
    ops = [op.operation for op in block.operations]
    live: set = set()
    kept = []
    for op in reversed(ops):
        if op.name == "func.return" or any(r in live for r in op.results):
            kept.append(op)
            live.update(op.operands)
    return kept[::-1]


# ----------------------------------------------------------------------------- the rules

@dataclass(frozen=True)
class At:
    """Where a value holds the batch: along `axis`, whose size is batch x `factor`, the
    batch the outer factor (a batch merged with the axis after it, `[B, H, ...]` viewed as
    `[B*H, ...]`: row b is the slices b*factor to (b+1)*factor - 1)."""

    axis: int
    factor: int = 1
    step: int = 0  # (a constant of indices whose row b is row 0's plus b * step: `_row_indices`)

    def moved(self, axis: int) -> At:
        return At(axis, self.factor)


Axes = dict[Any, At | None]  # value -> where its batch is (None: the same for every row)


def _batch_axes(block: ir.Block, ops: list[ir.Operation], arg_axes: list[int | None],
                batch: int) -> Axes:
    """Where each value of `block` holds the batch (arguments given), by the ops' rules;
    NotSeparable when an op is not row-wise or an output's batch is not axis 0 alone."""
    axes: Axes = {}
    for arg, axis in zip(block.arguments, arg_axes):
        if axis is not None and list(arg.type.shape)[axis] != batch:
            raise NotSeparable("an input's batch size is not the one imported")
        axes[arg] = None if axis is None else At(axis)
    for op in ops:
        if op.name == "func.return":
            for i, value in enumerate(op.operands):
                if axes.get(value) != At(0):
                    raise NotSeparable(f"output #{i} does not have the batch at axis 0")
            continue
        definition = op_def(op)
        if definition is None:
            raise NotSeparable(f"{op.name} is not a dlc op")
        operand_axes = [axes[v] for v in op.operands]
        indices = _row_indices(op, operand_axes, batch) if definition.mnemonic == "gather" \
            else None
        if indices is not None:  # (each row gathers its own elements, by constant indices)
            axes[op.operands[1]] = indices
            result_axes = [At(ir.IntegerAttr(op.attributes["axis"]).value + indices.axis)]
        elif all(a is None for a in operand_axes):  # (computed the same for every row...
            # ...but a splat or a broadcast may be sized by the batch: the same row repeated)
            result_axes = [_repeated_axis(op, definition.mnemonic, batch)] * len(op.results)
        else:
            rule = _RULES.get(definition.mnemonic)
            if rule is None:
                raise NotSeparable(f"{op.name} has no row-wise rule")
            attrs = definition.python_attributes(op)
            shapes = [list(v.type.shape) for v in op.operands]
            out = [list(r.type.shape) for r in op.results]
            result = rule(shapes, operand_axes, attrs, out, batch)
            if result is None:
                raise NotSeparable(f"{op.name} ({_where(op)}) mixes the rows of the batch")
            result_axes = [result] * len(op.results)
        for value, at in zip(op.results, result_axes):
            if at is not None and list(value.type.shape)[at.axis] != batch * at.factor:
                raise NotSeparable(f"{op.name} ({_where(op)}): the batch axis lost its size")
            axes[value] = at
    return axes


def _repeated_axis(op: ir.Operation, mnemonic: str, batch: int) -> At | None:
    """The axis of a splat constant or a broadcast of an unbatched value that has the batch's
    size there (`torch.zeros(x.shape[0], ...)`, position ids expanded to the batch): each
    row is the same. None otherwise (the comparison of the modules then finds out whether
    the size was the batch's: `_same_type`)."""
    if mnemonic not in ("constant", "broadcast") or len(op.results) != 1:
        return None
    shape = list(op.results[0].type.shape)
    found = [axis for axis, size in enumerate(shape) if size == batch]
    if len(found) != 1:
        return None
    (axis,) = found
    if mnemonic == "constant":
        return At(axis) if _repeats(op.attributes["value"], axis) else None
    source = list(op.operands[0].type.shape)
    at = axis - (len(shape) - len(source))
    return At(axis) if at < 0 or source[at] == 1 else None


def _row_indices(op: ir.Operation, axes: list[At | None], batch: int) -> At | None:
    """A gather along the batch's axis of its data (batch x factor long) whose indices are a
    constant, used by it alone, with the batch at one axis and row b's indices row 0's plus
    b x factor, all in [0, factor): each row gathers its own elements (the flat positions
    `b * S + s` of an attention mask, as exporters build them). Where the indices hold the
    batch (with the step), or None."""
    data, index = axes
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    value = op.operands[1]
    owner = value.owner
    if data is None or index is not None or data.axis != axis or \
            not isinstance(owner, ir.Operation | ir.OpView) or \
            owner.operation.name != "dlc.constant" or len(list(value.uses)) != 1:
        return None
    shape = list(value.type.shape)
    found = [k for k, size in enumerate(shape) if size == batch]
    if len(found) != 1:
        return None
    pattern = _offset_rows(owner.operation.attributes["value"], found[0], data.factor)
    if pattern is None or pattern.min(initial=0) < 0 or pattern.max(initial=0) >= data.factor:
        return None
    return At(found[0], 1, data.factor)


def _offset_rows(value: ir.Attribute, axis: int, step: int) -> np.ndarray | None:
    """Row 0 (along `axis`) of an integer constant whose row b is row 0 plus b * step, or
    None."""
    if not isinstance(value, ir.DenseElementsAttr) or value.is_splat and value.type.shape[
            axis] > 1:
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind not in "iu":
        return None
    first = np.take(array, [0], axis=axis).astype(np.int64)
    offsets = (np.arange(array.shape[axis], dtype=np.int64) * step).reshape(
        [-1 if k == axis else 1 for k in range(array.ndim)])
    return first if np.array_equal(array, first + offsets) else None


def _repeats(value: ir.Attribute, axis: int) -> bool:
    """A constant whose slices along `axis` are all equal (a splat, a folded Expand)."""
    if not isinstance(value, ir.DenseElementsAttr):
        return False
    if value.is_splat:
        return True
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):  # (an element type numpy cannot view)
        return False
    first = np.take(array, [0], axis=axis)
    return bool(np.array_equal(array, np.broadcast_to(first, array.shape), equal_nan=True))


def _where(op: ir.Operation) -> str:
    return str(op.location)


# Each rule: (operand shapes, where each operand holds the batch, attributes, result shapes,
# the batch) -> where the results hold it, or None when the op mixes rows.

def _elementwise(shapes, axes, attrs, out, batch) -> At | None:
    """numpy broadcasting: batched operands agree on the result's axis (and factor), the
    others are 1 there (or do not reach it)."""
    rank = len(out[0])
    found = {a.moved(a.axis + rank - len(s)) for s, a in zip(shapes, axes) if a is not None}
    if len(found) != 1:
        return None
    (at,) = found
    for shape, a in zip(shapes, axes):
        k = at.axis - (rank - len(shape))
        if a is None and k >= 0 and shape[k] != 1:
            return None
    return at


def _along(name: str):
    """An op along one axis (`name`), the result the operand's shape: row-wise off it."""
    def rule(shapes, axes, attrs, out, batch):
        if len(axes) != 1 or axes[0].axis == attrs[name] or len(out[0]) != len(shapes[0]):
            return None
        return axes[0]
    return rule


def _first_only(shapes, axes, attrs, out, batch) -> At | None:
    """Convs and pools: the batch (of whole images) is axis 0 of the data; filters and bias
    are unbatched."""
    if axes[0] is None or axes[0].axis != 0 or any(a is not None for a in axes[1:]):
        return None
    return axes[0]


def _reduced(at: At, reduced: Sequence[int], keepdims: int) -> At | None:
    if at.axis in reduced:
        return None
    return at if keepdims else at.moved(at.axis - sum(1 for r in reduced if r < at.axis))


def _reduce(shapes, axes, attrs, out, batch):
    return _reduced(axes[0], attrs["axes"], attrs["keepdims"])


def _argreduce(shapes, axes, attrs, out, batch):
    return _reduced(axes[0], [attrs["axis"]], attrs["keepdims"])


def _transpose(shapes, axes, attrs, out, batch):
    return axes[0].moved(list(attrs["perm"]).index(axes[0].axis))


def _reshape(shapes, axes, attrs, out, batch):
    """The same number of elements before the batch's axis, which may merge with (or split
    from) the axes after it, the batch staying its outer factor: each row's elements keep
    their places."""
    (shape,), (at,), result = shapes, axes, out[0]
    before = math.prod(shape[:at.axis])
    per_row = at.factor * math.prod(shape[at.axis + 1:])  # (the elements of a row, per prefix)
    for k, size in enumerate(result):
        if math.prod(result[:k]) != before or size % batch:
            continue
        if size // batch * math.prod(result[k + 1:]) == per_row:
            return At(k, size // batch)
    return None


def _broadcast(shapes, axes, attrs, out, batch):
    return axes[0].moved(axes[0].axis + len(out[0]) - len(shapes[0]))


def _slice(shapes, axes, attrs, out, batch):
    axis = axes[0].axis
    whole = (attrs["starts"][axis], attrs["sizes"][axis], attrs["steps"][axis]) == \
        (0, shapes[0][axis], 1)
    return axes[0] if whole else None


def _pad(shapes, axes, attrs, out, batch):
    axis, rank = axes[0].axis, len(shapes[0])
    if len(axes) > 1 and axes[1] is not None:
        return None
    pads = attrs["pads"]
    return axes[0] if pads[axis] == 0 and pads[rank + axis] == 0 else None


def _concat(shapes, axes, attrs, out, batch):
    if len(set(axes)) != 1 or axes[0] is None or axes[0].axis == attrs["axis"]:
        return None  # (an unbatched part, or the batch concatenated)
    return axes[0]


def _gather(shapes, axes, attrs, out, batch):
    (data, indices), axis = axes, attrs["axis"]
    if indices is None:  # rows of data, indexed the same in each
        if data.axis == axis:
            return None
        return data if data.axis < axis else data.moved(data.axis + len(shapes[1]) - 1)
    if data is None:  # each row's own indices into shared data (an embedding)
        return indices.moved(axis + indices.axis)
    return None


def _matmul(shapes, axes, attrs, out, batch):
    """numpy matmul: the batch as rows of A (B unbatched), as columns of B (A unbatched), or
    as a batch dimension of either or both; never along K."""
    rank = len(out[0])
    (sa, sb), (ka, kb) = shapes, axes
    if len(sa) < 2 or len(sb) < 2:
        return None
    found = set()
    if ka is not None:
        if ka.axis == len(sa) - 1:
            return None
        found.add(ka.moved(rank - 2 if ka.axis == len(sa) - 2 else ka.axis + rank - len(sa)))
    if kb is not None:
        if kb.axis == len(sb) - 2:
            return None
        found.add(kb.moved(rank - 1 if kb.axis == len(sb) - 1 else kb.axis + rank - len(sb)))
    if len(found) != 1:
        return None
    (at,) = found
    if at.axis >= rank - 2:  # rows of A or columns of B: the other operand unbatched
        return at if ka is None or kb is None else None
    for shape, k in zip(shapes, axes):  # a batch dimension: an unbatched operand is 1 there
        i = at.axis - (rank - len(shape))
        if k is None and i >= 0 and shape[i] != 1:
            return None
    return at


def _gemm(shapes, axes, attrs, out, batch):
    a, b = axes[0], axes[1]
    c = axes[2] if len(axes) > 2 else None
    if a is None or b is not None or a.axis != (1 if attrs["transA"] else 0):
        return None
    at = a.moved(0)
    if c is not None and len(shapes[2]) == 2 and c != at:
        return None
    if c is None and len(shapes) > 2 and len(shapes[2]) == 2 and shapes[2][0] != 1:
        return None
    return at


def _dequantize(shapes, axes, attrs, out, batch):
    """Quantize/DequantizeLinear: per tensor, or per channel along another axis."""
    if axes[0] is None or any(a is not None for a in axes[1:]):
        return None
    per_channel = len(shapes[1]) > 0 and math.prod(shapes[1]) > 1
    return None if per_channel and attrs["axis"] == axes[0].axis else axes[0]


def _matmul_nbits(shapes, axes, attrs, out, batch):
    if axes[0] is None or any(a is not None for a in axes[1:]) or \
            axes[0].axis == len(shapes[0]) - 1:
        return None
    return axes[0]


def _trilu(shapes, axes, attrs, out, batch):
    return axes[0] if axes[0].axis < len(shapes[0]) - 2 else None


def _grid_sample(shapes, axes, attrs, out, batch):
    return axes[0] if axes[0] == axes[1] and axes[0].axis == 0 else None


_RULES: dict[str, Callable] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "binary", "compare", "select", "relu", "unary",
                     "cast", "bitcast"), _elementwise),
    **dict.fromkeys(("conv", "conv_nhwc", "conv_transpose", "pool", "pool_nhwc"), _first_only),
    **dict.fromkeys(("quantize", "dequantize"), _dequantize),
    "reduce": _reduce, "argreduce": _argreduce, "transpose": _transpose, "reshape": _reshape,
    "broadcast": _broadcast, "slice": _slice, "pad": _pad, "concat": _concat,
    "gather": _gather, "matmul": _matmul, "gemm": _gemm, "matmul_nbits": _matmul_nbits,
    "hardmax": _along("axis"), "cumulative": _along("axis"), "resample": _along("axis"),
    "trilu": _trilu, "grid_sample": _grid_sample,
}


# ----------------------------------------------------------------------------- the same program


def _same_program(block: ir.Block, batch: int, reference: ir.Block,
                  ref_ops: list[ir.Operation], ref_batch: int, axes: Axes) -> None:
    """`block` (imported at `batch`) is `reference` (at `ref_batch`) but for the batch."""
    values = dict(zip(reference.arguments, block.arguments))
    for arg, other in values.items():
        _same_type(arg, other, axes.get(arg), batch, "an input")
    ops = _ops(block)
    if len(ops) != len(ref_ops):
        raise NotSeparable(f"the module at batch {batch} has {len(ops)} ops, at batch "
                           f"{ref_batch} {len(ref_ops)}")
    for op, ref in zip(ops, ref_ops):
        what = f"{ref.name} ({_where(ref)})"
        if op.name != ref.name or len(op.operands) != len(ref.operands) or \
                len(op.results) != len(ref.results):
            raise NotSeparable(f"the module at batch {batch} differs at {what}")
        if any(values.get(r) != o for r, o in zip(ref.operands, op.operands)):
            raise NotSeparable(f"{what} reads other values at batch {batch}")
        result = axes.get(ref.results[0]) if len(ref.results) else None
        _same_attributes(op, ref, batch, ref_batch, what, result)
        for r, o in zip(ref.results, op.results):
            _same_type(r, o, axes.get(r), batch, what)
            values[r] = o


def _same_type(ref: ir.Value, value: ir.Value, at: At | None, batch: int, what: str) -> None:
    expected = list(ref.type.shape)
    if at is not None:
        expected[at.axis] = batch * at.factor
    if list(value.type.shape) != expected or \
            str(value.type.element_type) != str(ref.type.element_type):
        raise NotSeparable(f"{what}: {value.type} at batch {batch}, expected the shape "
                           f"{expected}")


SIZED = ("shape", "sizes")  # the integer arrays that are sizes of the result, axis by axis


def _same_attributes(op: ir.Operation, ref: ir.Operation, batch: int, ref_batch: int,
                     what: str, result: At | None) -> None:
    """Equal attributes; but a reshape's or broadcast's shape and a slice's sizes may differ
    at the result's batch axis, the batch times the same factor in both."""
    names = _attribute_names(op)
    if names != _attribute_names(ref):
        raise NotSeparable(f"{what}: other attributes at batch {batch}")
    definition = op_def(ref)
    kinds = definition.attributes if definition else {}
    for name in names:
        mine, theirs = op.attributes[name], ref.attributes[name]
        if mine == theirs:
            continue
        if kinds.get(name) == "elements" and (
                _same_rows(mine, theirs) if result is None or not result.step
                else _same_offset_rows(mine, theirs, result)):
            continue  # (a row repeated to the batch: its type is compared as a value's)
        if kinds.get(name) == "ints" and name in SIZED and result is not None:
            a = definition.python_attributes(op)[name]
            b = definition.python_attributes(ref)[name]
            k = result.axis
            if len(a) == len(b) and a[:k] + a[k + 1:] == b[:k] + b[k + 1:] and \
                    (a[k], b[k]) == (batch * result.factor, ref_batch * result.factor):
                continue
        raise NotSeparable(f"{what}: attribute {name!r} depends on the batch size")


def _same_rows(a: ir.Attribute, b: ir.Attribute) -> bool:
    """Two constants of the same repeated row (at whichever batch each was imported)."""
    if not (isinstance(a, ir.DenseElementsAttr) and isinstance(b, ir.DenseElementsAttr)):
        return False
    if a.is_splat and b.is_splat:
        return a.get_splat_value() == b.get_splat_value()
    try:
        x, y = np.asarray(a), np.asarray(b)
    except (TypeError, ValueError):
        return False
    if x.ndim != y.ndim or x.dtype != y.dtype:
        return False
    differ = [k for k, (m, n) in enumerate(zip(x.shape, y.shape)) if m != n]
    if len(differ) != 1:
        return False
    (axis,) = differ
    return _repeats(a, axis) and _repeats(b, axis) and np.array_equal(
        np.take(x, [0], axis=axis), np.take(y, [0], axis=axis), equal_nan=True)


def _same_offset_rows(a: ir.Attribute, b: ir.Attribute, at: At) -> bool:
    """Two constants of indices whose rows are the same row offset by `at.step` a row."""
    first, reference = _offset_rows(a, at.axis, at.step), _offset_rows(b, at.axis, at.step)
    return first is not None and reference is not None and np.array_equal(first, reference)


def _attribute_names(op: ir.Operation) -> set[str]:
    return {op.attributes[i].name for i in range(len(op.attributes))}


# ----------------------------------------------------------------------------- the cost


def _thin_share(ops: list[ir.Operation], axes: Axes) -> float:
    """Of the multiply-adds of matmuls, gemms and convs, the share of the products of a
    batched operand and an unbatched weight with fewer than THIN_ROWS rows (M) per row of
    the batch."""
    total = single = 0
    for op in ops:
        name = op.name
        if name not in PRODUCTS:
            continue
        macs = multiply_adds(op)
        total += macs
        if name in ("dlc.matmul", "dlc.gemm") and axes.get(op.operands[0]) is not None \
                and axes.get(op.operands[1]) is None:
            out = list(op.results[0].type.shape)
            at = axes.get(op.results[0])
            batch = out[at.axis] // at.factor if at is not None else 0
            rows_per_batch_row = math.prod(out[:-1]) // batch if batch else 0
            if rows_per_batch_row < THIN_ROWS:
                single += macs
    return single / total if total else 0.0


def _work(ops: list[ir.Operation]) -> int:
    """The multiply-adds of matmuls and convs, the result elements of the other ops."""
    total = 0
    for op in ops:
        if op.name in PRODUCTS:
            total += multiply_adds(op)
        elif op.name not in ("func.return", "dlc.constant"):  # (constants: not computed)
            total += sum(math.prod(r.type.shape) for r in op.results)
    return total


PRODUCTS = ("dlc.matmul", "dlc.gemm", "dlc.conv", "dlc.conv_nhwc", "dlc.conv_transpose")


def multiply_adds(op: ir.Operation) -> int:
    """The multiply-adds of a dlc matmul, gemm or conv (one of PRODUCTS): grouped and
    depthwise convs count their own channels."""
    out = list(op.results[0].type.shape)
    if op.name in ("dlc.matmul", "dlc.gemm"):
        a = list(op.operands[0].type.shape)
        transposed = op.name == "dlc.gemm" and op_def(op).python_attributes(op)["transA"]
        k = a[0] if transposed else a[-1]
        return math.prod(out) * k
    w = list(op.operands[1].type.shape)
    if op.name == "dlc.conv_nhwc":  # (W [K..., C/group, M])
        return math.prod(out) * math.prod(w[:-1])
    if op.name == "dlc.conv_transpose":  # (W [C, M/group, K...]: each input scatters)
        return math.prod(op.operands[0].type.shape) * math.prod(w[1:])
    return math.prod(out) * math.prod(w[1:])  # (W [M, C/group, K...])
