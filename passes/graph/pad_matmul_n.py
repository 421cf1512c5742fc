"""dlc-pad-matmul-n: widen a matmul with constant weights and an awkward N to a tileable N.

    matmul(A, B)     -> slice(matmul(A, pad(B)), N)        (B [K, N] constant, zero columns)
    gemm(A, B, C)    -> slice(gemm(A, pad(B), pad(C)), N)  (C absent, a scalar or a constant
                                                             per column)

The contraction schedule (passes/codegen/matmul.py) tiles N by divisors: an outer tile is the
largest multiple of the register tile dividing N up to 512, the packed schedule needs N to be
a multiple of 32. An N without such divisors, GPT-2's vocabulary of 50,257 = 29 x 1,733 above
all, got tiles of 29 columns split 16 + 13: its language-model head ran 2.96x onnxruntime as a
vector-matrix product ([1,768]x[768,50257]: 20.4 ms; 7.4 ms at N = 50,240) and 6.9x at 128
rows (762 ms against 146 ms at N = 50,240), 70 % of a 128-token GPT-2 prefill. The weights get
zero columns up to the next multiple of 256 (at most 255 columns: 0.5 % more work at N =
50,257; of 128 for an N that is a multiple of 32, `pad_to`) at compile time and the result is sliced back (a copy of the output, small beside the
product). Only for N >= 1,024 whose best outer tile would be under 128 columns, or that is not
a multiple of 32: a smaller N costs little either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.movement import SLICE
from dlc.passes.graph.match import RuleTable, apply_rules, attributes, constant, constant_array
from dlc.passes.registry import ModulePass, register

PAD_TO = 256  # N becomes a multiple of this
MIN_N = 1024  # smaller N are left as they are
GOOD_TILE = 128  # an outer tile of this many columns (a multiple of 16 dividing N) is enough
PACK_N = 32  # the packed schedule's column panel


def awkward(n: int) -> bool:
    """Whether N lacks the divisors the matmul schedule tiles by."""
    if n < MIN_N or n % PAD_TO == 0:
        return False
    if n % PACK_N:
        return True
    best = max((t for t in range(16, 513, 16) if n % t == 0), default=0)
    return best < GOOD_TILE


def pad_to(n: int) -> int:
    """The multiple an awkward N is padded to: PAD_TO, or GOOD_TILE for a multiple of PACK_N
    (already packable: only its outer tile is poor). A small Llama's MLP, N = 1,376 = 43 x 32:
    padded to 1,536 (11.6 % more work), [128,512]x[512,1376] ran 1.15x onnxruntime; to 1,408
    (2.3 %), 1.0x (Zen 4, single thread, issue 18)."""
    return GOOD_TILE if n % PACK_N == 0 else PAD_TO


def pad_n(op: ir.OpView) -> list[ir.Value] | None:
    result = op.results[0].type
    if not isinstance(result.element_type, ir.F32Type) or result.rank < 2:
        return None
    a, b = op.operands[0], op.operands[1]
    if b.type.rank != 2:
        return None
    attrs = attributes(op) if op.name == "dlc.gemm" else {}
    transposed = bool(attrs.get("transB", 0))
    n = result.shape[-1]
    if not awkward(n):
        return None
    weights = constant_array(b)
    if weights is None:
        return None
    padded_n = -(-n // pad_to(n)) * pad_to(n)
    widths = [(0, padded_n - n), (0, 0)] if transposed else [(0, 0), (0, padded_n - n)]
    operands = [a, constant(np.pad(weights, widths), result.element_type, op.location)]
    if op.name == "dlc.gemm" and len(op.operands) > 2:
        bias = op.operands[2]
        if bias.type.rank >= 1 and bias.type.shape[-1] == n:
            values = constant_array(bias)
            if values is None or (bias.type.rank == 2 and bias.type.shape[0] != 1):
                return None  # (a residual of [M, N]: not padded here)
            widths = [(0, 0)] * (values.ndim - 1) + [(0, padded_n - n)]
            bias = constant(np.pad(values, widths), result.element_type, op.location)
        operands.append(bias)
    wide = build(ops.GEMM if op.name == "dlc.gemm" else ops.MATMUL, operands, attrs,
                 loc=op.location)
    shape = list(result.shape)
    return [build(SLICE, [wide], {"starts": [0] * len(shape), "sizes": shape,
                                  "steps": [1] * len(shape)}, loc=op.location)]


RULES: RuleTable = {ops.MATMUL: [pad_n], ops.GEMM: [pad_n]}


@register
@dataclass(frozen=True)
class PadMatmulN(ModulePass):
    """Pad the constant weights of a matmul or gemm with an awkward N (GPT-2's vocabulary)
    to a multiple of 256 columns; slice the result back."""

    name = "dlc-pad-matmul-n"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
