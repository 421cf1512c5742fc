"""dlc-weight-only-matmul: a matmul by dequantized integer weights runs on the packed weights.

    matmul(A, dequantize(W, scale, zero_point)) -> matmul_nbits(A, packed W, scales, zero points)

W is a constant [K, N] of 8-bit integers (int4/uint4 initializers are imported as 8-bit ones);
scale and zero point are constants per tensor, per column (axis 1) or blocked along K (axis
0, `block_size` of opset 21). Left alone, `dlc-fold-constants` would fold the dequantization
into a float copy of W (4 or 8 times its bytes); instead `dlc.matmul_nbits` (dialects/nbits.py)
keeps W packed, in 4 bits where its values fit (uint4 or int4 values), else 8, and dequantizes
it in registers. Signed values are shifted to unsigned ones (q = w + 2^(bits-1), the zero
point likewise). A must be f32 and not itself dequantized: a model whose activations are
quantized too (QDQ) keeps the integer matmul path (`codegen/int8_matmul.py`). The pass runs
before the first `dlc-fold-constants`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops, quant
from dlc.dialects.nbits import MATMUL_NBITS, pack_weights
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant,
    constant_array,
    producer,
)
from dlc.passes.registry import ModulePass, register


def _bits_and_shift(w: np.ndarray) -> tuple[int, int]:
    """The width that holds W's values as unsigned ones, and the shift that makes them so."""
    low, high = int(w.min()), int(w.max())
    signed = w.dtype.kind == "i"
    for bits in (4, 8):
        shift = 1 << (bits - 1) if signed else 0
        if 0 <= low + shift and high + shift < (1 << bits):
            return bits, shift
    raise ValueError("not an 8-bit weight")  # (checked by the caller)


def _blocked(scale: np.ndarray, zero: np.ndarray, k: int, n: int, attrs: dict
             ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Scale and zero point as [NB, N] per K block, and the block size; None when their
    granularity is not one of K blocks (per row of W)."""
    if scale.ndim == 0:
        return np.full([1, n], scale), np.full([1, n], zero), k
    axis, block = attrs["axis"], attrs["block_size"]
    if block == 0 and axis == 1:
        return scale.reshape(1, n), zero.reshape(1, n), k
    if block > 0 and axis == 0:
        return scale, zero, block
    return None


def weight_only_matmul(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(A, dequantize(W, s, zp)) -> reshape(matmul_nbits(reshape(A, [M, K]), ...))
    a, b = op.operands
    dq = producer(b, quant.DEQUANTIZE)
    if dq is None or b.type.rank != 2 or a.type.rank < 1 or producer(a, quant.DEQUANTIZE):
        return None
    f32 = ir.F32Type.get()
    if a.type.element_type != f32 or b.type.element_type != f32:
        return None
    w = constant_array(dq.operands[0])
    scale = constant_array(dq.operands[1])
    zero = constant_array(dq.operands[2]) if len(dq.operands) > 2 else None
    if w is None or scale is None or (len(dq.operands) > 2 and zero is None):
        return None
    if w.dtype not in (np.int8, np.uint8) or scale.dtype != np.float32 or w.size == 0:
        return None
    k, n = w.shape
    zero = np.zeros(scale.shape, np.int64) if zero is None else zero.astype(np.int64)
    blocked = _blocked(scale, zero, k, n, attributes(dq))
    if blocked is None:
        return None
    scales, zeros, block = blocked
    bits, shift = _bits_and_shift(w)
    q = (w.astype(np.int64) + shift).astype(np.uint8)
    packed, panel_scales, panel_zero = pack_weights(q, scales,
                                                    (zeros + shift).astype(np.float32), bits, block)
    loc = op.location
    lead = list(a.type.shape[:-1])
    rows = math.prod(lead)
    flat = a if a.type.rank == 2 else build(ops.RESHAPE, [a], {"shape": [rows, k]}, loc=loc)
    operands = [flat, constant(packed, ir.IntegerType.get_unsigned(8), loc),
                constant(panel_scales, f32, loc),
                constant(panel_zero, ir.IntegerType.get_unsigned(8), loc)]
    out = build(MATMUL_NBITS, operands, {"bits": bits, "block_size": block, "n": n}, loc=loc)
    if a.type.rank != 2:
        out = build(ops.RESHAPE, [out], {"shape": lead + [n]}, loc=loc)
    return [out]


RULES: RuleTable = {ops.MATMUL: [weight_only_matmul]}


@register
@dataclass(frozen=True)
class WeightOnlyMatmul(ModulePass):
    """Run matmuls by dequantized constant 4/8-bit weights on the packed weights
    (dlc.matmul_nbits), never on a float copy of them."""

    name = "dlc-weight-only-matmul"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
