"""dlc-qdq-lut: an 8-bit -> 8-bit elementwise chain of a QDQ model is a 256-entry table.

    quantize(f(dequantize(q, s, z)), s', z')  ->  gather(T, q as i8)

where q is an 8-bit tensor (i8 or ui8) with a per-tensor scale and zero point, f a chain of
elementwise ops of the one value dequantize(q) and scalar constants (unary activations,
arithmetic, inner quantize / dequantize pairs: the QDQ SiLU `x * DQ(Q(sigmoid(x)))` of
EfficientNet, the hard swish of MobileNetV3), and the outer quantize per tensor to 8 bits.
The result depends on q's byte alone, so the chain is its table T of 256 entries, indexed by
q's bits (q's value for ui8, q + 256 for a negative i8: a negative Gather index counts from
the end), computed here once on the 256 bytes with numpy in the ops' own precision (f32
arithmetic; the transcendental functions in f64, rounded to f32; dequantize in f64 as its
lowering; quantize by an f32 division, half to even); onnxruntime's optimized session runs
these chains as tables too. The gather's indices are 8-bit, so its lowering checks nothing
(`lowering/checks.py`), and dlc-schedule's elementwise family vectorizes the lookup with the
rest of the fused chain (`codegen/elementwise.py`), which dlc-lower-vectors turns into byte
permutes on AVX-512 VBMI (`codegen/byte_table.py`).

Runs at the end of the -O2 dlc stage, after the transposes have sunk and cancelled (a gather
would stop them) and before the last constant fold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops, quant
from dlc.dialects.binary import BINARY
from dlc.dialects.indexing import GATHER
from dlc.dialects.unary import UNARY
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant,
    constant_array,
    defining_op,
    dtype_of,
)
from dlc.passes.registry import ModulePass, register

MAX_OPS = 64  # ops of one chain (the QDQ SiLU has 6)
F32 = np.float32


def _f64(fn):
    """A transcendental function computed in f64, rounded once to f32."""
    return lambda x, p: fn(x.astype(np.float64)).astype(F32)


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    line = x * F32(alpha) + F32(beta)
    return np.maximum(np.minimum(line, F32(1)), F32(0))


UNARY_FNS = {
    "sigmoid": _f64(lambda x: 1.0 / (1.0 + np.exp(-x))),
    "tanh": _f64(np.tanh),
    "exp": _f64(np.exp),
    "hard_sigmoid": lambda x, p: _hard_sigmoid(x, *p),
    "hard_swish": lambda x, p: x * _hard_sigmoid(x, 0.1666666716337204, 0.5),
    "leaky_relu": lambda x, p: np.where(x < 0, x * F32(p[0]), x),
    "abs": lambda x, p: np.abs(x),
    "neg": lambda x, p: -x,
}
BINARY_OPS = {
    ops.ADD.name: np.add,
    ops.SUB.name: np.subtract,
    ops.MUL.name: np.multiply,
    ops.DIV.name: np.divide,
}
BINARY_FNS = {"max": np.maximum, "min": np.minimum}


def _per_tensor(op: ir.Operation) -> tuple[float, int] | None:
    """(scale, zero point) of a quantize / dequantize whose scale and zero point are scalar
    constants; None otherwise."""
    scale = constant_array(op.operands[1])
    zero = constant_array(op.operands[2]) if len(op.operands) > 2 else np.zeros(1, np.int64)
    if scale is None or zero is None or scale.size != 1 or zero.size != 1:
        return None
    return float(scale.reshape(-1)[0]), int(zero.reshape(-1)[0])


def _eight_bits(t: ir.Type) -> np.dtype | None:
    dtype = dtype_of(t.element_type) if isinstance(t, ir.RankedTensorType) else None
    return dtype if dtype in (np.dtype(np.int8), np.dtype(np.uint8)) else None


class _Chain:
    """The numpy evaluation of a chain on the 256 bytes of its one 8-bit leaf."""

    def __init__(self, shape: list[int]) -> None:
        self.shape = shape
        self.leaf: ir.Value | None = None
        self.values: list[tuple[ir.Value, np.ndarray]] = []
        self.ops = 0
        self.computes = False  # (an op other than dequantize: Q(DQ(q)) alone is left alone)

    def leaf_bytes(self, value: ir.Value) -> np.ndarray | None:
        dtype = _eight_bits(value.type)
        if dtype is None or list(value.type.shape) != self.shape:
            return None
        if self.leaf is None:
            self.leaf = value
        elif self.leaf != value:
            return None  # (a second tensor: not a function of one byte)
        return np.arange(256, dtype=np.uint8).view(dtype)

    def __call__(self, value: ir.Value) -> np.ndarray | None:
        for known, array in self.values:
            if known == value:
                return array
        array = self._evaluate(value)
        if array is not None:
            self.values.append((value, array))
        return array

    def _through(self, value: ir.Value) -> np.ndarray | None:
        """A dequantized value's integers when a quantize of the chain computes them (the
        inner Q/DQ pairs); else None, with nothing of the attempt kept (the integers are then
        the leaf)."""
        owner = defining_op(value)
        if owner is None or owner.name != quant.QUANTIZE.name:
            return None
        state = (self.leaf, self.ops, self.computes, len(self.values))
        array = self(value)
        if array is None:
            self.leaf, self.ops, self.computes, count = state
            del self.values[count:]
        return array

    def _evaluate(self, value: ir.Value) -> np.ndarray | None:
        const = constant_array(value)
        if const is not None:
            return const.reshape(()) if const.size == 1 and const.dtype == F32 else None
        op = defining_op(value)
        if op is None or list(value.type.shape) != self.shape:
            return None
        self.ops += 1
        if self.ops > MAX_OPS:
            return None
        name = op.name
        if name == quant.DEQUANTIZE.name:
            params = _per_tensor(op)
            x = self._through(op.operands[0])
            if x is None:
                x = self.leaf_bytes(op.operands[0])
            if params is None or x is None or str(value.type.element_type) != "f32":
                return None
            scale, zero = params
            return ((x.astype(np.float64) - zero) * scale).astype(F32)
        self.computes = True
        if name == quant.QUANTIZE.name:
            return _quantize(op, self(op.operands[0]))
        if name == UNARY.name:
            attrs = attributes(op)
            fn = UNARY_FNS.get(attrs["fn"])
            x = self(op.operands[0])
            return None if fn is None or x is None else fn(x, list(attrs["params"]))
        if name == ops.RELU.name:
            x = self(op.operands[0])
            return None if x is None else np.maximum(x, F32(0))
        fn = BINARY_OPS.get(name)
        if fn is None and name == BINARY.name:
            fn = BINARY_FNS.get(attributes(op)["fn"])
        if fn is None:
            return None
        a, b = self(op.operands[0]), self(op.operands[1])
        if a is None or b is None or a.dtype != F32 or b.dtype != F32:
            return None
        return fn(a, b).astype(F32)


def _quantize(op: ir.Operation, x: np.ndarray | None) -> np.ndarray | None:
    """dlc.quantize per tensor to 8 bits of f32 x: round_half_even(x / s) + z, clamped."""
    dtype = _eight_bits(op.results[0].type)
    params = _per_tensor(op)
    if x is None or x.dtype != F32 or dtype is None or params is None:
        return None
    scale, zero = params
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        rounded = np.rint(x / F32(scale)).astype(np.float64) + zero
    rounded[np.isnan(rounded)] = info.min  # (the lowering's maxnumf(NaN, low): low)
    return np.clip(rounded, info.min, info.max).astype(dtype)


def qdq_lut(op: ir.OpView) -> list[ir.Value] | None:
    # quantize(f(dequantize(q))) -> gather(table, q as i8)
    result = op.results[0]
    if _eight_bits(result.type) is None or str(op.operands[0].type.element_type) != "f32":
        return None
    chain = _Chain(list(result.type.shape))
    with np.errstate(all="ignore"):
        table = _quantize(op, chain(op.operands[0]))
    if table is None or chain.leaf is None or not chain.computes:
        return None
    loc = op.location
    indices = chain.leaf
    i8 = ir.IntegerType.get_signless(8)
    if indices.type.element_type != i8:
        indices = build(quant.BITCAST, [indices], {"to": i8}, loc=loc)
    values = constant(table, result.type.element_type, loc)
    return [build(GATHER, [values, indices], {"axis": 0}, loc=loc)]


RULES: RuleTable = {quant.QUANTIZE: [qdq_lut]}


@register
@dataclass(frozen=True)
class QdqLut(ModulePass):
    """Replace each 8-bit -> 8-bit elementwise QDQ chain by a lookup in its 256-entry table."""

    name = "dlc-qdq-lut"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
