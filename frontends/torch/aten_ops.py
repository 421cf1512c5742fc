"""Converters of the elementwise ATen ops: activations, unary math, arithmetic, comparisons,
selection, casts and constant factories.

Each entry of `ATEN` maps an ATen overload name (`str(node.target)`, e.g. "aten.add.Tensor")
to a converter (see `aten_node.py`). Elementwise ops follow torch's type promotion: operands
are cast to the dtype torch computes in (`promoted`), and the result to the node's dtype.
Data movement is in `aten_movement.py`, reductions and matmuls in `aten_reduce.py`, the
neural-network ops in `aten_nn.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from mlir import ir
from torch._subclasses.fake_tensor import unset_fake_temporarily

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, COMPARE, SELECT
from dlc.dialects.movement import BROADCAST, IOTA
from dlc.dialects.unary import UNARY
from dlc.frontends.torch.aten_node import (
    DYNAMIC,
    AtenNode,
    Converter,
    describe,
    element_type,
    promoted,
)

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


def clamp(n: AtenNode, x: Value, min: Scalar | None = None,
          max: Scalar | None = None) -> Value:
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


def bitwise_not(n: AtenNode, x: Value) -> Value:
    return unary(n, "not" if n.out_dtype == torch.bool else "bitwise_not", x)


def logical_not(n: AtenNode, x: Value) -> Value:
    return unary(n, "not", n.cast(x, torch.bool))


def where(n: AtenNode, condition: Value, a: Value | Scalar, b: Value | Scalar) -> Value:
    dtype = n.out_dtype
    return n.build(SELECT, [n.cast(condition, torch.bool), n.tensor(a, dtype),
                            n.tensor(b, dtype)])


def to_copy(n: AtenNode, x: Value, *_dtype, **_options) -> Value:
    # _to_copy(x, dtype=..., device=..., layout=..., memory_format=...), or
    # convert_element_type(x, dtype): only the dtype matters, the node's out dtype
    return n.cast(x, n.out_dtype)


def identity(n: AtenNode, x: Value, *_args, **_kwargs) -> Value:
    return x


def full_like(n: AtenNode, x: Value, fill_value: Scalar, **_options) -> Value:
    return n.build(BROADCAST, [n.constant(fill_value, n.out_dtype)], {"shape": n.out_shape})


def full(n: AtenNode, size: Sequence[int], fill_value: Scalar, **_options) -> Value:
    return full_like(n, None, fill_value)


def factory(n: AtenNode, *args, **kwargs) -> Value:
    # arange, scalar_tensor...: no tensor inputs, so torch computes the constant at import
    # (outside the fake mode torch.compile calls the backend in, which makes fake tensors);
    # an arange of the dynamic size is a `dlc.iota`
    if DYNAMIC in n.out_shape:
        return _dynamic_arange(n, *args)
    with unset_fake_temporarily():
        value = n.node.target(*args, **{**kwargs, "device": "cpu"}).numpy()
    return n.constant(value, n.out_dtype)


def _dynamic_arange(n: AtenNode, *args) -> Value:
    """arange(start, end, step) whose length is the dynamic size (torch computed it): an
    iota from a constant start by a constant step."""
    if "arange" not in str(n.node.target):
        raise n.error("a tensor of the dynamic size made by this factory is not supported yet")
    start, step = (0, 1) if len(args) == 1 else (args[0], args[2] if len(args) > 2 else 1)
    if not all(isinstance(v, int) and v != DYNAMIC for v in (start, step)):
        raise n.error(f"an arange of the dynamic size from {start} by {step}: a constant "
                      "integer start and step are supported")
    element = element_type(n.out_dtype, describe(n.node))
    return n.build(IOTA, [], {"shape": [DYNAMIC], "axis": 0, "start": start, "step": step,
                              "dtype": element})


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
    "aten.true_divide.Tensor": _arith(ops.DIV),
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
    **{f"aten.bitwise_{fn}.{overload}": _binary_fn(fn)
       for fn in ("and", "or", "xor") for overload in ("Tensor", "Scalar")},
    "aten.bitwise_not.default": bitwise_not,
    "aten.where.self": where,
    "aten._to_copy.default": to_copy,
    "prims.convert_element_type.default": to_copy,  # (its dtype positional: GPT-2's)
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
}
