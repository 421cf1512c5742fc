"""Converters of the core ATen tensor ops: elementwise, data movement, reductions, matmuls.

Each entry of `ATEN` maps an ATen overload name (`str(node.target)`, e.g. "aten.add.Tensor")
to a converter (see `aten_node.py`). Elementwise ops follow torch's type promotion: operands
are cast to the dtype torch computes in (`promoted`), and the result to the node's dtype.
Reshaping ops (view, unsqueeze, squeeze, flatten...) all become one `dlc.reshape` to the
node's known output shape. The neural-network ops are in `aten_nn.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, COMPARE, SELECT
from dlc.dialects.indexing import GATHER, GATHER_ELEMENTS
from dlc.dialects.movement import BROADCAST, CONCAT, PAD, SLICE
from dlc.dialects.reduction import ARGREDUCE, REDUCE
from dlc.dialects.unary import UNARY
from dlc.frontends.torch.aten_node import AtenNode, Converter, axes, axis, promoted

Value = ir.Value
Scalar = float | int | bool

# ----------------------------------------------------------------------------- elementwise


def unary(n: AtenNode, fn: str, x: Value, *params: float) -> Value:
    return n.build(UNARY, [x], {"fn": fn, "params": list(params)})


def _unary(fn: str, *params: float) -> Converter:
    def convert(n: AtenNode, x: Value) -> Value:
        return unary(n, fn, n.cast(x, n.out_dtype), *params)

    return convert


def relu(n: AtenNode, x: Value) -> Value:
    return n.build(ops.RELU, [x])


def gelu(n: AtenNode, x: Value, approximate: str = "none") -> Value:
    return unary(n, "gelu_tanh" if approximate == "tanh" else "gelu", x)


def rsqrt(n: AtenNode, x: Value) -> Value:
    # rsqrt(x) = 1 / sqrt(x)
    return unary(n, "reciprocal", unary(n, "sqrt", n.cast(x, n.out_dtype)))


def silu(n: AtenNode, x: Value) -> Value:
    return unary(n, "swish", x, 1.0)


def hardsigmoid(n: AtenNode, x: Value) -> Value:
    return unary(n, "hard_sigmoid", x, 1 / 6, 0.5)


def leaky_relu(n: AtenNode, x: Value, negative_slope: float = 0.01) -> Value:
    return unary(n, "leaky_relu", x, negative_slope)


def elu(n: AtenNode, x: Value, alpha: float = 1.0, scale: float = 1.0,
        input_scale: float = 1.0) -> Value:
    if scale != 1.0 or input_scale != 1.0:
        raise n.error(f"elu with scale {scale} and input_scale {input_scale} is not supported")
    return unary(n, "elu", x, alpha)


def clamp(n: AtenNode, x: Value, min: Scalar | None = None,  # noqa: A002  (ATen's names)
          max: Scalar | None = None) -> Value:  # noqa: A002
    # clamp(x, lo, hi) = min(max(x, lo), hi)
    y = n.cast(x, n.out_dtype)
    if min is not None:
        y = n.build(BINARY, [y, n.tensor(min, n.out_dtype)], {"fn": "max"})
    if max is not None:
        y = n.build(BINARY, [y, n.tensor(max, n.out_dtype)], {"fn": "min"})
    return y


def hardtanh(n: AtenNode, x: Value, min_val: float = -1.0, max_val: float = 1.0) -> Value:
    return clamp(n, x, min_val, max_val)


def _arith(op: ops.OpDef, reverse: bool = False) -> Converter:
    # a op b in the result dtype (true division: ints divide as floats)
    def convert(n: AtenNode, a: Value | Scalar, b: Value | Scalar, alpha: Scalar = 1) -> Value:
        dtype = n.out_dtype
        if alpha != 1:  # add/sub: a + alpha * b
            b = n.build(ops.MUL, [n.tensor(b, dtype), n.tensor(alpha, dtype)])
        lhs, rhs = n.tensor(a, dtype), n.tensor(b, dtype)
        return n.build(op, [rhs, lhs] if reverse else [lhs, rhs])

    return convert


def div_mode(n: AtenNode, a: Value, b: Value | Scalar, rounding_mode: str | None = None
             ) -> Value:
    if rounding_mode is None:
        return _arith(ops.DIV)(n, a, b)
    dtype = promoted(a, b)
    if not dtype.is_floating_point:
        raise n.error(f"division of integers with rounding_mode={rounding_mode!r} is not "
                      "supported yet")
    q = n.build(ops.DIV, [n.tensor(a, dtype), n.tensor(b, dtype)])
    return unary(n, "floor", q) if rounding_mode == "floor" else _trunc(n, q)


def _trunc(n: AtenNode, x: Value) -> Value:
    # trunc(x) = x >= 0 ? floor(x) : ceil(x)
    zero = n.constant(0, n.out_dtype)
    positive = n.build(COMPARE, [x, zero], {"fn": "ge"})
    return n.build(SELECT, [positive, unary(n, "floor", x), unary(n, "ceil", x)])


def _binary_fn(fn: str) -> Converter:
    def convert(n: AtenNode, a: Value | Scalar, b: Value | Scalar) -> Value:
        dtype = n.out_dtype
        return n.build(BINARY, [n.tensor(a, dtype), n.tensor(b, dtype)], {"fn": fn})

    return convert


def pow_(n: AtenNode, a: Value | Scalar, b: Value | Scalar) -> Value:
    dtype = n.out_dtype
    if isinstance(b, int | float) and b == 2:  # x ** 2 = x * x (exact, and cheaper)
        x = n.tensor(a, dtype)
        return n.build(ops.MUL, [x, x])
    return n.build(BINARY, [n.tensor(a, dtype), n.tensor(b, dtype)], {"fn": "pow"})


def _compare(fn: str) -> Converter:
    def convert(n: AtenNode, a: Value | Scalar, b: Value | Scalar) -> Value:
        dtype = promoted(a, b)
        return n.build(COMPARE, [n.tensor(a, dtype), n.tensor(b, dtype)], {"fn": fn})

    return convert


def _logical(fn: str) -> Converter:
    def convert(n: AtenNode, a: Value, b: Value) -> Value:
        bools = [n.cast(v, torch.bool) for v in (a, b)]
        return n.build(BINARY, bools, {"fn": fn})

    return convert


def logical_not(n: AtenNode, x: Value) -> Value:
    return unary(n, "not", n.cast(x, torch.bool))


def where(n: AtenNode, condition: Value, a: Value | Scalar, b: Value | Scalar) -> Value:
    dtype = n.out_dtype
    return n.build(SELECT, [n.cast(condition, torch.bool), n.tensor(a, dtype),
                            n.tensor(b, dtype)])


def to_copy(n: AtenNode, x: Value, **_options) -> Value:
    # _to_copy(x, dtype=..., device=..., layout=..., memory_format=...): only dtype matters
    return n.cast(x, n.out_dtype)


def identity(n: AtenNode, x: Value, *_args, **_kwargs) -> Value:
    return x


def full_like(n: AtenNode, x: Value, fill_value: Scalar, **_options) -> Value:
    return n.build(BROADCAST, [n.constant(fill_value, n.out_dtype)], {"shape": n.out_shape})


def full(n: AtenNode, size: Sequence[int], fill_value: Scalar, **_options) -> Value:
    return full_like(n, None, fill_value)


def factory(n: AtenNode, *args, **kwargs) -> Value:
    # arange, scalar_tensor...: no tensor inputs, so torch computes the constant at import
    return n.constant(n.node.target(*args, **kwargs).numpy(), n.out_dtype)


# ----------------------------------------------------------------------------- data movement


def reshape_to_out(n: AtenNode, x: Value, *_args, **_kwargs) -> Value:
    """view, _unsafe_view, reshape, squeeze, unsqueeze, flatten: a reshape to the out shape."""
    return n.reshape(x, n.out_shape)


def permute(n: AtenNode, x: Value, dims: Sequence[int]) -> Value:
    rank = x.type.rank
    perm = [axis(n, d, rank) for d in dims]
    if perm == list(range(rank)):
        return x
    return n.build(ops.TRANSPOSE, [x], {"perm": perm})


def transpose(n: AtenNode, x: Value, dim0: int, dim1: int) -> Value:
    rank = x.type.rank
    perm = list(range(rank))
    a, b = axis(n, dim0, rank), axis(n, dim1, rank)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(n, x, perm)


def t(n: AtenNode, x: Value) -> Value:
    return x if x.type.rank < 2 else transpose(n, x, 0, 1)


def expand(n: AtenNode, x: Value, size: Sequence[int], implicit: bool = False) -> Value:
    if list(x.type.shape) == n.out_shape:
        return x
    return n.build(BROADCAST, [x], {"shape": n.out_shape})


def cat(n: AtenNode, tensors: Sequence[Value], dim: int = 0) -> Value:
    # cat([a, b, c]) = concat(concat(a, b), c); empty 1-D tensors are skipped, as torch does
    dtype = n.out_dtype
    parts = [n.cast(v, dtype) for v in tensors if list(v.type.shape) != [0]]
    if not parts:
        return tensors[0]
    dim = axis(n, dim, parts[0].type.rank)
    result = parts[0]
    for part in parts[1:]:
        result = n.build(CONCAT, [result, part], {"axis": dim})
    return result


def slice_along(n: AtenNode, x: Value, dim: int, start: int, size: int, step: int = 1
                ) -> Value:
    shape = list(x.type.shape)
    if start == 0 and step == 1 and size == shape[dim]:
        return x
    starts, sizes, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], sizes[dim], steps[dim] = start, size, step
    return n.build(SLICE, [x], {"starts": starts, "sizes": sizes, "steps": steps})


def slice_tensor(n: AtenNode, x: Value, dim: int = 0, start: int | None = None,
                 end: int | None = None, step: int = 1) -> Value:
    dim = axis(n, dim, x.type.rank)
    first, _, _ = slice(start, end, step).indices(x.type.shape[dim])
    return slice_along(n, x, dim, first, n.out_shape[dim], step)


def select(n: AtenNode, x: Value, dim: int, index: int) -> Value:
    dim = axis(n, dim, x.type.rank)
    size = x.type.shape[dim]
    if not -size <= index < size:
        raise n.error(f"index {index} is out of range for size {size}")
    return n.reshape(slice_along(n, x, dim, index % size, 1), n.out_shape)


def split_with_sizes(n: AtenNode, x: Value, split_sizes: Sequence[int], dim: int = 0
                     ) -> tuple[Value, ...]:
    dim = axis(n, dim, x.type.rank)
    starts = [sum(split_sizes[:i]) for i in range(len(split_sizes))]
    return tuple(slice_along(n, x, dim, s, size) for s, size in zip(starts, split_sizes))


def split(n: AtenNode, x: Value, split_size: int, dim: int = 0) -> tuple[Value, ...]:
    return split_with_sizes(n, x, [o.shape[axis(n, dim, x.type.rank)] for o in n.out], dim)


def unbind(n: AtenNode, x: Value, dim: int = 0) -> tuple[Value, ...]:
    dim = axis(n, dim, x.type.rank)
    shape = [d for i, d in enumerate(x.type.shape) if i != dim]
    return tuple(n.reshape(slice_along(n, x, dim, i, 1), shape)
                 for i in range(x.type.shape[dim]))


def constant_pad_nd(n: AtenNode, x: Value, pad: Sequence[int], value: Scalar = 0) -> Value:
    # torch's pad lists (before, after) pairs from the last axis backwards
    rank = x.type.rank
    if len(pad) % 2 or len(pad) > 2 * rank or any(p < 0 for p in pad):
        raise n.error(f"pad {list(pad)} is not supported (pairs per axis, non-negative)")
    before, after = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        before[rank - 1 - i], after[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    fill = n.constant(value, n.out_dtype)
    return n.build(PAD, [x, fill], {"mode": "constant", "pads": before + after})


def index_select(n: AtenNode, x: Value, dim: int, index: Value) -> Value:
    return n.build(GATHER, [x, index], {"axis": axis(n, dim, x.type.rank)})


def gather(n: AtenNode, x: Value, dim: int, index: Value, sparse_grad: bool = False) -> Value:
    return n.build(GATHER_ELEMENTS, [x, index], {"axis": axis(n, dim, x.type.rank)})


def embedding(n: AtenNode, weight: Value, indices: Value, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Value:
    return n.build(GATHER, [weight, indices], {"axis": 0})


# ----------------------------------------------------------------------------- reductions


def _reduce(fn: str) -> Converter:
    def convert(n: AtenNode, x: Value, dim: Sequence[int] | int | None = None,
                keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Value:
        x = n.cast(x, n.out_dtype)
        attrs = {"fn": fn, "axes": axes(n, dim, x.type.rank), "keepdims": int(keepdim)}
        return n.build(REDUCE, [x], attrs)

    return convert


def _reduce_all(fn: str) -> Converter:
    def convert(n: AtenNode, x: Value, *, dtype: torch.dtype | None = None) -> Value:
        return _reduce(fn)(n, x)

    return convert


def _reduce_bool(fn: str) -> Converter:
    # any = max over bools, all = min over bools
    def convert(n: AtenNode, x: Value, dim: Sequence[int] | int | None = None,
                keepdim: bool = False) -> Value:
        return _reduce(fn)(n, n.cast(x, torch.bool), dim, keepdim)

    return convert


def _argreduce(fn: str) -> Converter:
    def convert(n: AtenNode, x: Value, dim: int | None = None, keepdim: bool = False) -> Value:
        if dim is None:  # over the flattened tensor
            x, dim = n.reshape(x, [-1]), 0
        attrs = {"fn": fn, "axis": axis(n, dim, x.type.rank), "keepdims": int(keepdim),
                 "select_last_index": 0}
        return n.reshape(n.build(ARGREDUCE, [x], attrs), n.out_shape)

    return convert


def _reduce_with_index(fn: str) -> Converter:
    # max.dim / min.dim: (values, indices)
    def convert(n: AtenNode, x: Value, dim: int, keepdim: bool = False) -> tuple[Value, Value]:
        return _reduce(fn)(n, x, [dim], keepdim), _argreduce(fn)(n, x, dim, keepdim)

    return convert


def var(n: AtenNode, x: Value, dim: Sequence[int] | None = None, *,
        correction: float | None = None, keepdim: bool = False) -> Value:
    # var = sum((x - mean)^2) / (N - correction)
    rank = x.type.rank
    reduced = axes(n, dim, rank)
    count = 1
    for a in reduced:
        count *= x.type.shape[a]
    dtype = n.out_dtype
    mean = n.build(REDUCE, [x], {"fn": "mean", "axes": reduced, "keepdims": 1})
    d = n.build(ops.SUB, [x, mean])
    total = n.build(REDUCE, [n.build(ops.MUL, [d, d])],
                    {"fn": "sum", "axes": reduced, "keepdims": int(keepdim)})
    divisor = count - (1 if correction is None else correction)
    return n.build(ops.DIV, [total, n.constant(max(divisor, 0), dtype)])


# ----------------------------------------------------------------------------- contractions


def mm(n: AtenNode, a: Value, b: Value) -> Value:
    return n.build(ops.MATMUL, [a, b])


def addmm(n: AtenNode, bias: Value, a: Value, b: Value, *, beta: Scalar = 1,
          alpha: Scalar = 1) -> Value:
    # beta * bias + alpha * (a @ b)
    if bias.type.rank > 2:
        raise n.error(f"bias of rank {bias.type.rank} is not supported")
    attrs = {"alpha": float(alpha), "beta": float(beta), "transA": 0, "transB": 0}
    return n.build(ops.GEMM, [a, b, bias], attrs)


def baddbmm(n: AtenNode, bias: Value, a: Value, b: Value, *, beta: Scalar = 1,
            alpha: Scalar = 1) -> Value:
    product = n.build(ops.MATMUL, [a, b])
    if alpha != 1:
        product = n.build(ops.MUL, [product, n.constant(alpha, n.out_dtype)])
    if beta == 0:
        return product
    if beta != 1:
        bias = n.build(ops.MUL, [bias, n.constant(beta, n.out_dtype)])
    return n.build(ops.ADD, [product, bias])


ATEN: dict[str, Converter] = {
    # activations and unary math
    "aten.relu.default": relu,
    "aten.gelu.default": gelu,
    "aten.silu.default": silu,
    "aten.hardsigmoid.default": hardsigmoid,
    "aten.hardswish.default": _unary("hard_swish"),
    "aten.leaky_relu.default": leaky_relu,
    "aten.elu.default": elu,
    "aten.hardtanh.default": hardtanh,
    "aten.clamp.default": clamp,
    "aten.clamp.Tensor": clamp,
    "aten.rsqrt.default": rsqrt,
    **{f"aten.{name}.default": _unary(fn) for name, fn in {
        "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "log": "log", "sqrt": "sqrt",
        "neg": "neg", "abs": "abs", "erf": "erf", "sin": "sin", "cos": "cos",
        "reciprocal": "reciprocal", "floor": "floor", "ceil": "ceil", "sign": "sign",
        "round": "round",
    }.items()},
    # arithmetic, comparison, selection
    **{f"aten.{name}.{overload}": _arith(op)
       for name, op in (("add", ops.ADD), ("sub", ops.SUB), ("mul", ops.MUL), ("div", ops.DIV))
       for overload in ("Tensor", "Scalar")},
    "aten.rsub.Scalar": _arith(ops.SUB, reverse=True),
    "aten.rsub.Tensor": _arith(ops.SUB, reverse=True),
    "aten.div.Tensor_mode": div_mode,
    "aten.maximum.default": _binary_fn("max"),
    "aten.minimum.default": _binary_fn("min"),
    "aten.remainder.Tensor": _binary_fn("mod"),
    "aten.remainder.Scalar": _binary_fn("mod"),
    "aten.fmod.Tensor": _binary_fn("fmod"),
    "aten.fmod.Scalar": _binary_fn("fmod"),
    "aten.pow.Tensor_Scalar": pow_,
    "aten.pow.Tensor_Tensor": pow_,
    "aten.pow.Scalar": pow_,
    **{f"aten.{fn}.{overload}": _compare(fn)
       for fn in ("eq", "ne", "lt", "le", "gt", "ge") for overload in ("Tensor", "Scalar")},
    "aten.logical_and.default": _logical("and"),
    "aten.logical_or.default": _logical("or"),
    "aten.logical_xor.default": _logical("xor"),
    "aten.logical_not.default": logical_not,
    "aten.where.self": where,
    "aten._to_copy.default": to_copy,
    "aten.full_like.default": full_like,
    "aten.full.default": full,
    "aten.scalar_tensor.default": factory,
    "aten.arange.default": factory,
    "aten.arange.start": factory,
    "aten.arange.start_step": factory,
    # no-ops on values
    "aten.clone.default": identity,
    "aten.alias.default": identity,
    "aten.detach.default": identity,
    "aten.lift_fresh_copy.default": identity,
    "aten.dropout.default": identity,  # (inference: export and compile in eval mode)
    # data movement
    **{f"aten.{name}": reshape_to_out for name in (
        "view.default", "_unsafe_view.default", "reshape.default", "unsqueeze.default",
        "squeeze.default", "squeeze.dim", "squeeze.dims", "flatten.using_ints")},
    "aten.permute.default": permute,
    "aten.transpose.int": transpose,
    "aten.t.default": t,
    "aten.expand.default": expand,
    "aten.cat.default": cat,
    "aten.slice.Tensor": slice_tensor,
    "aten.select.int": select,
    "aten.split.Tensor": split,
    "aten.split_with_sizes.default": split_with_sizes,
    "aten.split.sizes": split_with_sizes,
    "aten.unbind.int": unbind,
    "aten.constant_pad_nd.default": constant_pad_nd,
    "aten.index_select.default": index_select,
    "aten.gather.default": gather,
    "aten.embedding.default": embedding,
    # reductions
    "aten.sum.dim_IntList": _reduce("sum"),
    "aten.sum.default": _reduce_all("sum"),
    "aten.mean.dim": _reduce("mean"),
    "aten.mean.default": _reduce_all("mean"),
    "aten.amax.default": _reduce("max"),
    "aten.amin.default": _reduce("min"),
    "aten.prod.dim_int": _reduce("prod"),
    "aten.any.dim": _reduce_bool("max"),
    "aten.any.dims": _reduce_bool("max"),
    "aten.any.default": _reduce_bool("max"),
    "aten.all.dim": _reduce_bool("min"),
    "aten.all.default": _reduce_bool("min"),
    "aten.max.dim": _reduce_with_index("max"),
    "aten.min.dim": _reduce_with_index("min"),
    "aten.argmax.default": _argreduce("max"),
    "aten.argmin.default": _argreduce("min"),
    "aten.var.correction": var,
    # contractions
    "aten.mm.default": mm,
    "aten.bmm.default": mm,
    "aten.addmm.default": addmm,
    "aten.baddbmm.default": baddbmm,
}
