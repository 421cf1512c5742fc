"""dlc-split-concat-matmul: a matmul reads the parts of a concatenated operand in place.

    matmul(x, concat(b₁, b₂, axis=N))          -> concat(matmul(x, b₁), matmul(x, b₂), axis=N)
    matmul(x, concat(b₁, b₂, axis=K))          -> matmul(x[.., :k₁], b₁) + matmul(x[.., k₁:], b₂)
    matmul(concat(a₁, a₂, axis=K), y)          -> matmul(a₁, y[.., :k₁, :]) + matmul(a₂, y[.., k₁:, :])
    matmul(x, transpose(concat(..)))           -> the same on the transposed parts (the last two
                                                  axes swapped: K and N trade places)
    matmul(x, [transpose] (y * c))             -> matmul(x * c, [transpose] y)   (c one constant
                                                  number, x smaller than y and the product)
                                               -> matmul(x, [transpose] y) * c   (else, the
                                                  product smaller than y)
    concat(p₁, p₂) * c                         -> concat(p₁ * c, p₂ * c)   (when a matmul reads it)
    matmul(x, [transpose] repeat_kv(y))        -> matmul(x as [B, G, R·M, K], [transpose] y)
                                                  as [B, G·R, M, N]   (grouped-query attention:
                                                  the R query heads of a key-value head become
                                                  rows, the repeated keys are never built)

A decoder's attention at a decode step concatenates the whole past keys and values with the
new token's (`present = Concat(past, new)`), scales the keys, transposes them and multiplies:
four passes over the cache to read it once. Split, the matmuls read the past buffers where they
are and only the small scores are concatenated (and the probabilities sliced): GPT-2 at a past of
1,088 positions read each layer's 3.3 MB key cache 7 times before, 3 after (the transpose stays)
and its value cache 3 times before, once after.

Only for f32 and f64 (a float16 product rounded per part is not the product rounded once; the
grouped-heads rewrite is exact and applies to every type). A rewrite applies only where it moves less data than the concatenation it removes: the N split
when the product is smaller than the concatenated operand, the K split when the other operand
and the product together are (at a prefill chunk, where the scores are as large as the keys,
nothing changes); the concatenation and what lies between it and the matmul must have no other
use.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.movement import BROADCAST, CONCAT, SLICE
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant_array,
    producer,
    single_use,
    size,
)
from dlc.passes.registry import ModulePass, register


def _swaps_last_two(perm: list[int]) -> bool:
    rank = len(perm)
    return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]


def _concat_parts(value: ir.Value) -> tuple[ir.Operation, list[int] | None, int] | None:
    """(concat, perm, axis) for `value` = concat(..) (perm None) or transpose(concat(..), perm)
    with perm swapping the last two axes, each used only on the way to here; `axis` is the
    concatenation's axis in `value`."""
    if not single_use(value):
        return None
    transpose = producer(value, ops.TRANSPOSE)
    if transpose is not None:
        perm = list(attributes(transpose)["perm"])
        inner = transpose.operands[0]
        if not _swaps_last_two(perm) or not single_use(inner):
            return None
        concat = producer(inner, CONCAT)
        if concat is None:
            return None
        return concat, perm, perm.index(attributes(concat)["axis"] % inner.type.rank)
    concat = producer(value, CONCAT)
    if concat is None:
        return None
    return concat, None, attributes(concat)["axis"] % value.type.rank


def _parts(found: tuple[ir.Operation, list[int] | None, int], loc: ir.Location
           ) -> list[ir.Value]:
    concat, perm, _ = found
    if perm is None:
        return list(concat.operands)
    return [build(ops.TRANSPOSE, [p], {"perm": perm}, loc=loc) for p in concat.operands]


def _slice_axis(value: ir.Value, axis: int, start: int, length: int,
                loc: ir.Location) -> ir.Value:
    shape = list(value.type.shape)
    starts, sizes = [0] * len(shape), list(shape)
    starts[axis], sizes[axis] = start, length
    return build(SLICE, [value], {"starts": starts, "sizes": sizes, "steps": [1] * len(shape)},
                 loc=loc)


def _sum(values: list[ir.Value], loc: ir.Location) -> ir.Value:
    total = values[0]
    for value in values[1:]:
        total = build(ops.ADD, [total, value], loc=loc)
    return total


def _wide_float(op: ir.OpView) -> bool:
    """f32 or f64: a float16 product rounded per part and summed (or scaled after) is not the
    product rounded once (the ONNX fp16 attention tests see the last bit)."""
    return isinstance(op.results[0].type.element_type, ir.F32Type | ir.F64Type)


def split_b(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(x, [transpose] concat(..)): along N a concat of products, along K a sum
    x, b = op.operands
    out = op.results[0]
    if x.type.rank < 2 or b.type.rank < 2 or not _wide_float(op):
        return None
    found = _concat_parts(b)
    if found is None:
        return None
    axis, rank, loc = found[2], b.type.rank, op.location
    if axis == rank - 1 and size(out.type) < size(b.type):
        products = [build(ops.MATMUL, [x, p], loc=loc) for p in _parts(found, loc)]
        return [build(CONCAT, products, {"axis": out.type.rank - 1}, loc=loc)]
    if axis == rank - 2 and size(x.type) + size(out.type) < size(b.type):
        offset, products = 0, []
        for p in _parts(found, loc):
            k = p.type.shape[axis]
            products.append(build(ops.MATMUL, [_slice_axis(x, x.type.rank - 1, offset, k, loc),
                                               p], loc=loc))
            offset += k
        return [_sum(products, loc)]
    return None


def split_a(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(concat(.., axis=K), y) -> a sum of products of the parts and y's row blocks
    a, y = op.operands
    out = op.results[0]
    if a.type.rank < 2 or y.type.rank < 2 or producer(a, CONCAT) is None or not _wide_float(op):
        return None
    found = _concat_parts(a)
    if found is None:
        return None
    axis, loc = found[2], op.location
    if axis != a.type.rank - 1 or size(y.type) + size(out.type) >= size(a.type):
        return None
    offset, products = 0, []
    for p in _parts(found, loc):
        k = p.type.shape[axis]
        products.append(build(ops.MATMUL, [p, _slice_axis(y, y.type.rank - 2, offset, k, loc)],
                              loc=loc))
        offset += k
    return [_sum(products, loc)]


def _scalar(value: ir.Value) -> bool:
    array = constant_array(value)
    return array is not None and array.size == 1


def scale_after(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(x, [transpose] (y * c)) -> matmul(x * c, [transpose] y) when x is the smallest,
    # else matmul(x, [transpose] y) * c when the product is smaller than y
    x, b = op.operands
    out = op.results[0]
    if not single_use(b) or not _wide_float(op):
        return None
    transpose = producer(b, ops.TRANSPOSE)
    scaled = b
    if transpose is not None:
        if not _swaps_last_two(list(attributes(transpose)["perm"])):
            return None
        scaled = transpose.operands[0]
        if not single_use(scaled):
            return None
    mul = producer(scaled, ops.MUL)
    if mul is None:
        return None
    y, c = mul.operands
    if not _scalar(c):
        y, c = c, y
    if not _scalar(c) or y.type != scaled.type:
        return None
    to_x = _smallest(x, y, out)
    if not to_x and size(out.type) >= size(y.type):
        return None
    if not to_x and producer(y, CONCAT) is not None and single_use(y):
        return None  # (the concat's parts are scaled first: `scale_parts`, then split)
    loc = op.location
    if transpose is not None:
        y = build(ops.TRANSPOSE, [y], attributes(transpose), loc=loc)
    if to_x:  # (a prefill chunk's scaled keys, transposed: the largest of the three)
        return [build(ops.MATMUL, [build(ops.MUL, [x, c], loc=loc), y], loc=loc)]
    return [build(ops.MUL, [build(ops.MATMUL, [x, y], loc=loc), c], loc=loc)]


def _feeds_matmul(value: ir.Value) -> bool:
    """Whether `value`'s one use is a matmul, directly or through a transpose."""
    if not single_use(value):
        return False
    user = next(use.owner for use in value.uses)
    if user.name == "dlc.transpose":
        return _feeds_matmul(user.results[0])
    return user.name == "dlc.matmul"


def _scales_other_operand(value: ir.Value) -> bool:
    """Whether the matmul that reads `value` (as its B, directly or through a transpose) has
    an A smaller than both `value` and the product (`scale_after` scales A then)."""
    user = next(use.owner for use in value.uses)
    if user.name == "dlc.transpose":
        value, user = user.results[0], next(use.owner for use in user.results[0].uses)
    if user.name != "dlc.matmul" or user.operands[1] != value:
        return False
    return _smallest(user.operands[0], value, user.results[0])


def _smallest(a: ir.Value, b: ir.Value, product: ir.Value) -> bool:
    """Whether a matmul's A is smaller than its B and its product (a scale of B goes to A)."""
    return size(a.type) < min(size(b.type), size(product.type))


def scale_parts(op: ir.OpView) -> list[ir.Value] | None:
    # concat(p₁, p₂) * c -> concat(p₁ * c, p₂ * c), when a matmul reads the product
    if not _wide_float(op):
        return None
    for index in (0, 1):
        concat, c = op.operands[index], op.operands[1 - index]
        owner = producer(concat, CONCAT)
        if owner is None or not single_use(concat) or not _scalar(c):
            continue
        if op.results[0].type != concat.type or not _feeds_matmul(op.results[0]):
            continue
        if _scales_other_operand(op.results[0]):
            continue  # (`scale_after` moves the scale to the matmul's smaller operand)
        loc = op.location
        parts = [build(ops.MUL, [p, c], loc=loc) for p in owner.operands]
        return [build(CONCAT, parts, attributes(owner), loc=loc)]
    return None


def _repeated_heads(value: ir.Value) -> tuple[ir.Value, int] | None:
    """(y, R) when `value` = reshape(broadcast(reshape(y))) repeats each of y's G heads R
    times ([B, G, S, D] -> [B, G, 1, S, D] -> [B, G, R, S, D] -> [B, G·R, S, D]: grouped-query
    attention's `repeat_kv`), each step used only here."""
    outer = producer(value, ops.RESHAPE)
    if outer is None or not single_use(value):
        return None
    repeated = outer.operands[0]
    broadcast = producer(repeated, BROADCAST)
    if broadcast is None or not single_use(repeated):
        return None
    expanded = broadcast.operands[0]
    inner = producer(expanded, ops.RESHAPE)
    if inner is None or not single_use(expanded):
        return None
    y = inner.operands[0]
    if y.type.rank != 4 or expanded.type.rank != 5 or repeated.type.rank != 5:
        return None
    b, g, s, d = y.type.shape
    r = repeated.type.shape[2]
    if (list(expanded.type.shape) != [b, g, 1, s, d]
            or list(repeated.type.shape) != [b, g, r, s, d]
            or list(value.type.shape) != [b, g * r, s, d]):
        return None
    return y, r


def grouped_heads(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(x [B, G·R, M, K], [transpose] repeat_kv(y)) -> the R query heads of each
    # key-value head as rows: matmul(x as [B, G, R·M, K], [transpose] y), reshaped back
    x, b = op.operands
    out = op.results[0]
    if x.type.rank != 4 or b.type.rank != 4 or out.type.rank != 4:
        return None
    transpose = producer(b, ops.TRANSPOSE)
    inner = b
    if transpose is not None:
        if not _swaps_last_two(list(attributes(transpose)["perm"])) or not single_use(b):
            return None
        inner = transpose.operands[0]
    found = _repeated_heads(inner)
    if found is None:
        return None
    y, r = found
    batch, heads, m, k = x.type.shape
    g = y.type.shape[1]
    if heads != g * r or list(x.type.shape[:2]) != list(b.type.shape[:2]):
        return None
    loc = op.location
    rows = build(ops.RESHAPE, [x], {"shape": [batch, g, r * m, k]}, loc=loc)
    if transpose is not None:
        y = build(ops.TRANSPOSE, [y], attributes(transpose), loc=loc)
    product = build(ops.MATMUL, [rows, y], loc=loc)
    return [build(ops.RESHAPE, [product], {"shape": list(out.type.shape)}, loc=loc)]


RULES: RuleTable = {ops.MATMUL: [split_b, split_a, scale_after, grouped_heads],
                    ops.MUL: [scale_parts]}


@register
@dataclass(frozen=True)
class SplitConcatMatmul(ModulePass):
    """Let a matmul read the parts of a concatenated operand (a decoder's past and new keys and
    values) instead of a copy of them; move a constant scale past it."""

    name = "dlc-split-concat-matmul"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
