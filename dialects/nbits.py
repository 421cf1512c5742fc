"""Weight-only quantized matmul: `dlc.matmul_nbits`.

`dlc.matmul_nbits(a, b, scales, offsets) {bits, block_size, n}`: `a [M, K] f32` times a
[K, n] matrix W of `bits`-bit unsigned integers q (4 or 8) dequantized block by block along K,
`W[k, j] = q[k, j] * scale[k / block_size, j] + offset[k / block_size, j]` (an ONNX zero point
zp is the offset `-zp * scale`). The weights stay packed in memory: the kernel
(`passes/codegen/matmul_nbits.py`) dequantizes them in registers, never into a float copy.

Layout, in panels of 16 columns (the last one padded with zero columns; P = ceil(n / 16),
NB = ceil(K / block_size)):
- b: ui8 [P, K, 8] for 4 bits (byte c of row k holds column c in its low nibble and column
  c + 8 in its high nibble), ui8 [P, K, 16] for 8 bits (one byte a column);
- scales, offsets: f32 [P, NB, 16].
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
    (b, scales, offsets) in the panel layout of `dlc.matmul_nbits`; offset = -zp * scale."""
    k, n = q.shape
    panels, blocks = -(-n // PANEL), -(-k // block)
    padded = np.zeros([k, panels * PANEL], np.uint8)
    padded[:, :n] = q
    rows = padded.reshape(k, panels, PANEL).transpose(1, 0, 2)  # [P, K, 16]
    if bits == 4:
        rows = rows[:, :, :8] | (rows[:, :, 8:] << 4)
    b = np.ascontiguousarray(rows, dtype=np.uint8)

    def per_panel(values: np.ndarray) -> np.ndarray:
        out = np.zeros([blocks, panels * PANEL], np.float32)
        out[:, :n] = values
        return np.ascontiguousarray(out.reshape(blocks, panels, PANEL).transpose(1, 0, 2))

    scales = np.asarray(scales, np.float32)
    offsets = -(np.asarray(zero_points, np.float32) * scales)
    return b, per_panel(scales), per_panel(offsets)


def infer_matmul_nbits(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    a, b, scales, offsets = types
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
    for name, value in (("scales", scales), ("offsets", offsets)):
        if list(value.shape) != [panels, blocks, PANEL] or str(value.element_type) != "f32":
            raise ShapeError(f"{name} must be f32 [{panels}, {blocks}, {PANEL}], got {value}")
    return [tensor([a.shape[0], n], a.element_type)]


MATMUL_NBITS = define(OpDef(
    "matmul_nbits", ("a", "b", "scales", "offsets"), infer_matmul_nbits,
    {"bits": "int", "block_size": "int", "n": "int"},
    "a times bits-bit weights dequantized per block in registers (packed panels of 16 columns)",
))
