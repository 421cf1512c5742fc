"""Converters of the ATen reductions (sum, mean, amax, any, argmax, var...) and matmuls.

Reductions become one `dlc.reduce` or `dlc.argreduce` (axes normalized: non-negative, sorted;
none or an empty list means every axis, as ATen's), except a mean over every spatial axis of
an image, which becomes the global average `dlc.pool` ONNX's GlobalAveragePool imports to; mm and bmm become `dlc.matmul`, addmm
`dlc.gemm`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, COMPARE
from dlc.dialects.conv import POOL
from dlc.dialects.reduction import ARGREDUCE, CUMULATIVE, REDUCE
from dlc.dialects.unary import UNARY
from dlc.frontends.torch.aten_node import AtenNode, Converter, Rows, axes, axis

Value = ir.Value
Scalar = float | int | bool

# ----------------------------------------------------------------------------- reductions


def _reduce(fn: str) -> Converter:
    def convert(n: AtenNode, x: Value, dim: Sequence[int] | int | None = None,
                keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Value:
        x = n.cast(x, n.out_dtype)
        attrs = {"fn": fn, "axes": axes(n, dim, x.type.rank), "keepdims": int(keepdim)}
        return n.build(REDUCE, [x], attrs)

    return convert


def mean_dim(n: AtenNode, x: Value, dim: Sequence[int] | int | None = None,
             keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Value:
    # mean over H, W (and D) of [N, C, (D,) H, W] -> a global average pool, as ONNX's
    # GlobalAveragePool imports (what nn.AdaptiveAvgPool2d(1) decomposes to): the pool has
    # schedules where a reduction fused with its producer (a conv's epilogue) may not
    rank = x.type.rank
    spatial = list(range(2, rank))
    if rank not in (4, 5) or axes(n, dim, rank) != spatial or not n.out_dtype.is_floating_point:
        return _reduce("mean")(n, x, dim, keepdim, dtype=dtype)
    x = n.cast(x, n.out_dtype)
    k = rank - 2
    attrs = {"kind": "avg", "kernel": list(x.type.shape[2:]), "strides": [1] * k,
             "dilations": [1] * k, "pads": [0] * 2 * k, "ceil_mode": 0,
             "count_include_pad": 0, "p": 2}
    return n.reshape(n.build(POOL, [x], attrs), n.out_shape)


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
        attrs = {"fn": fn, "axes": [axis(n, dim, x.type.rank)], "keepdims": int(keepdim)}
        values = n.build(REDUCE, [x], attrs)
        attrs = {"fn": fn, "axis": attrs["axes"][0], "keepdims": int(keepdim),
                 "select_last_index": 0}
        return values, n.build(ARGREDUCE, [x], attrs)

    return convert


def _cumulative(fn: str) -> Converter:
    # a running sum along dim, in the result dtype (bools and small ints sum as int64)
    def convert(n: AtenNode, x: Value, dim: int, *, dtype: torch.dtype | None = None) -> Value:
        attrs = {"fn": fn, "axis": axis(n, dim, x.type.rank), "exclusive": 0, "reverse": 0}
        return n.build(CUMULATIVE, [n.cast(x, n.out_dtype)], attrs)

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


def vector_norm(n: AtenNode, x: Value, ord: Scalar = 2, dim: Sequence[int] | int | None = None,
                keepdim: bool = False, *, dtype: torch.dtype | None = None) -> Value:
    # ||x||_ord over dim (Tensor.norm, torch.norm, F.normalize, ConvNeXt-V2's GRN): 2 and 1 are
    # dlc.reduce's l2 and l1, inf / -inf the max / min of |x|, 0 the count of non-zeros,
    # another p (sum |x|^p)^(1/p)
    x = n.cast(x, n.out_dtype)
    attrs = {"axes": axes(n, dim, x.type.rank), "keepdims": int(keepdim)}
    p = float(ord)
    if p in (1.0, 2.0):
        return n.build(REDUCE, [x], {"fn": "l1" if p == 1.0 else "l2", **attrs})
    if p == 0.0:
        nonzero = n.cast(n.build(COMPARE, [x, n.constant(0, n.out_dtype)], {"fn": "ne"}),
                         n.out_dtype)
        return n.build(REDUCE, [nonzero], {"fn": "sum", **attrs})
    magnitude = n.build(UNARY, [x], {"fn": "abs", "params": []})
    if p in (float("inf"), float("-inf")):
        return n.build(REDUCE, [magnitude], {"fn": "max" if p > 0 else "min", **attrs})
    powered = n.build(BINARY, [magnitude, n.constant(p, n.out_dtype)], {"fn": "pow"})
    total = n.build(REDUCE, [powered], {"fn": "sum", **attrs})
    return n.build(BINARY, [total, n.constant(1.0 / p, n.out_dtype)], {"fn": "pow"})


# ----------------------------------------------------------------------------- contractions


def mm(n: AtenNode, a: Value | Rows, b: Value) -> Value | Rows:
    if isinstance(a, Rows):  # (a linear layer's rows, unflattened: a dynamic import)
        return Rows(n.build(ops.MATMUL, [a.value, b]))
    return n.build(ops.MATMUL, [a, b])


def addmm(n: AtenNode, bias: Value, a: Value | Rows, b: Value, *, beta: Scalar = 1,
          alpha: Scalar = 1) -> Value | Rows:
    # beta * bias + alpha * (a @ b)
    if bias.type.rank > 2:
        raise n.error(f"bias of rank {bias.type.rank} is not supported")
    if isinstance(a, Rows):  # (a linear layer's rows, unflattened: a dynamic import)
        if not isinstance(b, ir.Value) or bias.type.rank == 2 and bias.type.shape[0] != 1:
            raise n.error("addmm of a dynamic import's rows takes a weight and a bias row")
        product = baddbmm(n, bias, a.value, b, beta=beta, alpha=alpha)
        return Rows(product)
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
    # reductions
    "aten.sum.dim_IntList": _reduce("sum"),
    "aten.sum.default": _reduce_all("sum"),
    "aten.mean.dim": mean_dim,
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
    "aten.linalg_vector_norm.default": vector_norm,
    "aten.cumsum.default": _cumulative("sum"),
    # contractions
    "aten.mm.default": mm,
    "aten.bmm.default": mm,
    "aten.addmm.default": addmm,
    "aten.baddbmm.default": baddbmm,
}
