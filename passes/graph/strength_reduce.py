"""dlc-strength-reduce: replace costly dlc ops by cheaper equivalents.

    pow(x, 2) -> x * x       pow(x, 1) -> x       pow(x, 0.5) -> sqrt(x)      (float x)
    pow(x, 3) -> (x * x) * x                                                   (float x)
    x / c -> x * (1 / c)     where every element of the constant c is a power of two
    reduce_mean(x, axes=[2, 3]) -> global average pool (reduce_max: max pool)   (f32 NCHW x)
    max_pool(x) -> cast(max_pool(f32(x)))                                     (8-bit x)

A quotient by a power of two and the product by its reciprocal are the same real number, so
both round to the same float: the rewrite is exact. Any other divisor stays a division (its
reciprocal would be rounded). The exponent must be a constant holding one value
(dlc-fold-constants first turns the importer's cast of it into a constant). pow(x, 3) is the
one inexact rewrite (two roundings instead of a libm call's one: within 2 ulp): it is what
onnxruntime's Pow kernel computes for an exponent of 3, and the cube of the tanh GELU
(`gelu_new`: GPT-2 and many transformers models) was a scalar `powf` call per element, 4.3 ms
of each GPT-2 layer's 25 ms. A mean (or max) over the two spatial axes of a 4-D NCHW tensor
(squeeze-and-excitation means, a head's mean written as ReduceMean: GhostNet, ShuffleNetV2,
MnasNet) is the global pool of that window (the same sum and division), which dlc-convert-layout
computes channels-last with the pool schedule: as a reduction over the middle axes of NHWC it
ran as naive loops (a NaivePathWarning each; GhostNet's 7 took 4 % of its time). An 8-bit
max pool (a QOperator model's MaxPool on its uint8 activations) is the max pool of its values
in f32, which hold them exactly, then cast back: the pool schedules take f32 only, and the
integer pool ran as naive loops (a NaivePathWarning: ResNet-50's stem pool on 1x64x112x112).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.binary import BINARY, CAST
from dlc.dialects.conv import POOL
from dlc.dialects.reduction import REDUCE
from dlc.dialects.unary import UNARY
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant,
    constant_array,
    splat,
    takes_dynamic,
)
from dlc.passes.registry import ModulePass, register


@takes_dynamic  # (GPT-2's gelu_new in a function of a dynamic sequence: powf per element)
def reduce_pow(op: ir.OpView) -> list[ir.Value] | None:
    # pow(x, 2) -> x * x; pow(x, 1) -> x; pow(x, 0.5) -> sqrt(x)
    x = op.operands[0]
    if attributes(op)["fn"] != "pow" or x.type != op.results[0].type:
        return None
    exponent = splat(op.operands[1])
    if exponent is None or isinstance(exponent, bool):
        return None
    if exponent == 1:
        return [x]
    if exponent == 2:
        return [build(ops.MUL, [x, x], loc=op.location)]
    if exponent == 3 and isinstance(x.type.element_type, (ir.F16Type, ir.F32Type, ir.F64Type)):
        square = build(ops.MUL, [x, x], loc=op.location)
        return [build(ops.MUL, [square, x], loc=op.location)]
    if exponent == 0.5 and isinstance(x.type.element_type, (ir.F16Type, ir.F32Type, ir.F64Type)):
        return [build(UNARY, [x], {"fn": "sqrt", "params": []}, loc=op.location)]
    return None


def _exact_reciprocal(c: np.ndarray) -> np.ndarray | None:
    """1 / c when it is exact for every element (c a power of two, 1 / c normal), else None."""
    if c.dtype.kind != "f" or c.size == 0 or not np.all(np.isfinite(c)) or np.any(c == 0):
        return None
    mantissa, _ = np.frexp(c)
    with np.errstate(all="ignore"):
        inverse = np.reciprocal(c)
    normal = np.abs(inverse) >= np.finfo(c.dtype).tiny
    if not (np.all(np.abs(mantissa) == 0.5) and np.all(np.isfinite(inverse)) and np.all(normal)):
        return None
    return inverse


@takes_dynamic
def divide_by_multiplying(op: ir.OpView) -> list[ir.Value] | None:
    # x / c -> x * (1 / c), c a constant of powers of two
    x, divisor = op.operands
    c = constant_array(divisor)
    inverse = None if c is None else _exact_reciprocal(c)
    if inverse is None:
        return None
    element = divisor.type.element_type
    return [build(ops.MUL, [x, constant(inverse, element, op.location)], loc=op.location)]


_POOLS = {"mean": "avg", "max": "max"}


def spatial_reduce_as_pool(op: ir.OpView) -> list[ir.Value] | None:
    # reduce_{mean,max}(x [N, C, H, W], axes=[2, 3]) -> pool {avg, max} with window [H, W]
    attrs = attributes(op)
    x = op.operands[0]
    if attrs["fn"] not in _POOLS or list(attrs["axes"]) != [2, 3] or x.type.rank != 4 \
            or not isinstance(x.type.element_type, ir.F32Type) or 0 in x.type.shape:
        return None
    n, c, h, w = x.type.shape
    pool = build(POOL, [x], {"kind": _POOLS[attrs["fn"]], "kernel": [h, w], "strides": [1, 1],
                             "dilations": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0,
                             "count_include_pad": 0, "p": 2}, loc=op.location)
    if not attrs["keepdims"]:
        pool = build(ops.RESHAPE, [pool], {"shape": [n, c]}, loc=op.location)
    return [pool]


def integer_max_pool(op: ir.OpView) -> list[ir.Value] | None:
    # max_pool(x: 8-bit) -> cast(max_pool(f32(x))): exact (f32 holds every 8-bit value)
    x = op.operands[0]
    element = x.type.element_type
    if attributes(op)["kind"] != "max" or not isinstance(element, ir.IntegerType) \
            or element.width != 8:
        return None
    f32 = ir.F32Type.get()
    wide = build(CAST, [x], {"to": f32}, loc=op.location)
    pool = build(POOL, [wide], attributes(op), loc=op.location)
    return [build(CAST, [pool], {"to": element}, loc=op.location)]


RULES: RuleTable = {BINARY: [reduce_pow], ops.DIV: [divide_by_multiplying],
                    REDUCE: [spatial_reduce_as_pool], POOL: [integer_max_pool]}


@register
@dataclass(frozen=True)
class StrengthReduce(ModulePass):
    """Strength reduction: pow(x, 2) -> x*x, pow(x, 3) -> x*x*x, pow(x, 0.5) -> sqrt,
    x / 2^k -> x * 2^-k, a spatial mean or max of NCHW -> a global pool."""

    name = "dlc-strength-reduce"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
