"""dlc-pack-gemv: a vector-matrix product with large constant weights reads them in panels.

    matmul(a [1, K], B [K, N])   -> reshape(matmul(a [1, 1, K], P [J, K, W]) [J, 1, W])[:N]
    gemm(a, B, c)                -> the same (B read transposed at compile time) + c

P holds B's columns in J panels of W (the vector-matrix register tile, 256 columns on
AVX-512: `matmul.gemv_width`), each panel K x W contiguous, the last one padded with zero
columns. Unpacked, the product's register tile read W columns of each of B's rows, a piece of
1 KiB every N x 4 bytes: GPT-2's language-model head ([1,768]x[768,50257], 154 MB of weights
streamed per decoded token) ran at 16 GB/s, 1.7x onnxruntime's prepacked kernel, and its
MLP's [1,3072]x[3072,768] 1.6-1.9x; a panel is one sequential stream, which the prefetchers
follow. The product is a batch matmul over the panels whose one row of A is broadcast (a copy
of J x K floats, small beside the weights); `codegen/matmul.py`'s vector-matrix schedule tiles
each panel.

Only where the weights do not fit the L2 cache (`MIN_BYTES`) and the model's constants do not
fit the last-level cache (`MODEL_BYTES`): a CNN's classifier ([1,1280]x[1280,1000] in a 22 MB
MobileNetV3) is read from L3 at every call, where the strided rows cost nothing and the
panels' broadcast and slice copies did (1.03x); GPT-2's 500 MB stream from memory. Runs at -O2
after dlc-pad-matmul-n, before the layout passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops
from dlc.dialects.movement import SLICE
from dlc.passes.codegen import target
from dlc.passes.graph.match import RuleTable, apply_rules, attributes, constant, constant_array
from dlc.passes.graph.report import nbytes
from dlc.passes.registry import ModulePass, register
from dlc.passes.walk import ops_where

MIN_BYTES = 2 * 1024 * 1024  # weights from this size on are packed (beyond a 1-2 MiB L2)
MODEL_BYTES = 64 * 1024 * 1024  # ... in models whose constants exceed this (beyond L3)


def panels(weights: np.ndarray) -> np.ndarray:
    """B [K, N] as its panels [J, K, W]: J = ceil(N / W) column panels of the vector-matrix
    register tile's width W (`gemv_columns`), each contiguous, the last padded with zeros
    (also dlc-block-dynamic's one-row pieces' layout)."""
    k, n = weights.shape
    width = target.current().gemv_columns
    count = -(-n // width)
    padded = np.pad(weights, [(0, 0), (0, count * width - n)])
    return np.ascontiguousarray(padded.reshape(k, count, width).transpose(1, 0, 2))


def pack(op: ir.OpView) -> list[ir.Value] | None:
    result = op.results[0].type
    if not isinstance(result.element_type, ir.F32Type):
        return None
    a, b = op.operands[0], op.operands[1]
    if b.type.rank != 2 or a.type.rank < 2 or int(np.prod(a.type.shape[:-1])) != 1:
        return None
    attrs = attributes(op) if op.name == "dlc.gemm" else {}
    if attrs and (attrs["transA"] or attrs["alpha"] != 1.0 or attrs["beta"] != 1.0):
        return None
    bias = op.operands[2] if len(op.operands) > 2 else None
    if bias is not None and (bias.type.rank > 2 or int(np.prod(bias.type.shape[:-1])) != 1):
        return None  # (C broadcasts along N only: a [1, N] row, an [N] vector or a scalar)
    weights = constant_array(b)
    if weights is None or weights.nbytes < MIN_BYTES:
        return None
    if attrs.get("transB", 0):
        weights = weights.T
    k, n = weights.shape
    packed = panels(weights)
    count, width = packed.shape[0], packed.shape[2]
    loc = op.location
    row = build(ops.RESHAPE, [a], {"shape": [1, 1, k]}, loc=loc)
    product = build(ops.MATMUL, [row, constant(packed, result.element_type, loc)], loc=loc)
    flat = build(ops.RESHAPE, [product], {"shape": [1, count * width]}, loc=loc)
    if count * width != n:
        flat = build(SLICE, [flat], {"starts": [0, 0], "sizes": [1, n], "steps": [1, 1]},
                     loc=loc)
    value = build(ops.RESHAPE, [flat], {"shape": list(result.shape)}, loc=loc)
    if bias is not None:  # (gemm's C)
        value = build(ops.ADD, [value, bias], loc=loc)
    return [value]


RULES: RuleTable = {ops.MATMUL: [pack], ops.GEMM: [pack]}


@register
@dataclass(frozen=True)
class PackGemv(ModulePass):
    """Vector-matrix products with constant weights beyond the L2 cache read them from panels
    of 256 columns, each contiguous (GPT-2's decode: its head and MLP)."""

    name = "dlc-pack-gemv"
    model_bytes: int = -1  # the model's constant bytes from which it packs (-1: MODEL_BYTES)

    def run(self, module: ir.Operation) -> None:
        limit = MODEL_BYTES if self.model_bytes < 0 else self.model_bytes
        if constant_bytes(module) >= limit:
            apply_rules(module, RULES)


def constant_bytes(module: ir.Operation, name: str = "dlc.constant") -> int:
    """The bytes of the module's constants (the results of ops `name`: dlc.constant, or
    arith.constant after the lowering), from their types: no value is read."""
    constants = ops_where(module, lambda op: op.name == name)
    return sum(nbytes(op.results[0].type) for op in constants
               if isinstance(op.results[0].type, ir.RankedTensorType)
               and op.results[0].type.has_static_shape)
