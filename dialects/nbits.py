"""Weight-only quantized matmul: `dlc.matmul_nbits`.

`dlc.matmul_nbits(a, b, scales, zero_points) {bits, block_size, n}`: `a [M, K] f32` times a
[K, n] matrix W of `bits`-bit unsigned integers q (4 or 8) dequantized block by block along K,
`W[k, j] = (q[k, j] - zp) * scale = q[k, j] * scale + offset` with `offset = -(zp * scale)`
in f32 (zp and scale those of the block k / block_size of column j). The weights stay packed in memory: the kernel
(`passes/codegen/matmul_nbits.py`) dequantizes them in registers, never into a float copy.

Layout, in panels of 16 columns (the last one padded with zero columns; P = ceil(n / 16),
NB = ceil(K / block_size)):
- b: ui8 [P, K, 8] for 4 bits (byte c of row k holds column c in its low nibble and column
  c + 8 in its high nibble), ui8 [P, K, 16] for 8 bits (one byte a column);
- scales: f32 [P, NB, 16]; zero points: ui8 [P, NB, 16] (f32 where they are not all
  integers of 0..255: MatMulNBits allows float zero points). A byte a zero point keeps the
  weights' memory within 1.3x of the packed codes for 32-blocks (codes 0.5 byte a weight,
  scales 4 / 32, zero points 1 / 32), as onnxruntime's own layout.
The importer of onnxruntime's MatMulNBits and the pass `dlc-weight-only-matmul` (MatMul of a
DequantizeLinear of integer weights) pack the constants into it (`pack_weights`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import TensorTypes, shape_str, tensor

PANEL = 16  # columns of a panel
BITS = (4, 8)


def panel_bytes(bits: int) -> int:
    """Bytes of one row of a panel."""
    return PANEL * bits // 8


def pack_weights(q: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, bits: int,
                 block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q [K, N] unsigned values (< 2^bits), scales and zero points [NB, N] (float) ->
    (b, scales, zero points) in the panel layout of `dlc.matmul_nbits` (zero points as
    uint8 where they are integers of 0..255, else f32)."""
    k, n = q.shape
    panels, blocks = -(-n // PANEL), -(-k // block)
    padded = np.zeros([k, panels * PANEL], np.uint8)
    padded[:, :n] = q
    rows = padded.reshape(k, panels, PANEL).transpose(1, 0, 2)  # [P, K, 16]
    if bits == 4:
        rows = rows[:, :, :8] | (rows[:, :, 8:] << 4)
    b = np.ascontiguousarray(rows, dtype=np.uint8)

    def per_panel(values: np.ndarray, dtype: type) -> np.ndarray:
        out = np.zeros([blocks, panels * PANEL], dtype)
        out[:, :n] = values
        return np.ascontiguousarray(out.reshape(blocks, panels, PANEL).transpose(1, 0, 2))

    zero = np.asarray(zero_points, np.float32)
    byte = bool(np.all((zero == np.round(zero)) & (zero >= 0) & (zero <= 255)))
    return (b, per_panel(np.asarray(scales, np.float32), np.float32),
            per_panel(zero, np.uint8 if byte else np.float32))


def infer_matmul_nbits(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    a, b, scales, zero_points = types
    bits, block, n = attrs["bits"], attrs["block_size"], attrs["n"]
    if bits not in BITS:
        raise ShapeError(f"bits must be 4 or 8, got {bits}")
    if block < 1 or n < 1:
        raise ShapeError(f"block_size {block} and n {n} must be positive")
    if a.rank != 2 or str(a.element_type) != "f32":
        raise ShapeError(f"a must be a rank-2 f32 tensor, got {a}")
    k = a.shape[1]
    panels, blocks = -(-n // PANEL), -(-k // block)
    expected = [panels, k, panel_bytes(bits)]
    if list(b.shape) != expected or b.element_type.width != 8:
        raise ShapeError(f"b must be 8-bit [{shape_str(expected)}] (n {n}, K {k}, {bits} bits), "
                         f"got {b}")
    for name, value, allowed in (("scales", scales, ("f32",)),
                                 ("zero_points", zero_points, ("f32", "ui8", "i8"))):
        if list(value.shape) != [panels, blocks, PANEL] or \
                str(value.element_type) not in allowed:
            raise ShapeError(f"{name} must be {' or '.join(allowed[:2])} [{panels}, {blocks}, "
                             f"{PANEL}], got {value}")
    return [tensor([a.shape[0], n], a.element_type)]


MATMUL_NBITS = define(OpDef(
    "matmul_nbits", ("a", "b", "scales", "zero_points"), infer_matmul_nbits,
    {"bits": "int", "block_size": "int", "n": "int"},
    "a times bits-bit weights dequantized per block in registers (packed panels of 16 columns)",
))
