"""Importer of onnxruntime's contrib op `com.microsoft::MatMulNBits` onto `dlc.matmul_nbits`
(dialects/nbits.py), whose kernel dequantizes the packed weights in registers.

MatMulNBits(A [..., K], B, scales, zero_points?, g_idx?, bias?) {K, N, bits, block_size,
accuracy_level}: B is uint8 [N, n_blocks, block_size * bits / 8], K packed along each column,
low bits first (4 bits: element 2i in the low nibble of byte i); scales are [N * n_blocks] or
[N, n_blocks]; zero points are uint8 packed like B per column ([N * ceil(n_blocks * bits /
8)]) or of the scales' type and shape, 2^(bits - 1) when absent; W[k, n] = (q - zp) * scale.
B, scales and zero points must be constants (they are weights): they are repacked into the
kernel's panels at import. bits 4 and 8 are supported; g_idx (act-order) is not. A is
flattened to [M, K] and the result reshaped back; a bias is added after. accuracy_level is a
hint about the computation's precision that the f32 kernel satisfies at any level. f16 A and
scales are computed in f32 (A cast to f32 and the result back).
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import CAST
from dlc.dialects.nbits import BITS, MATMUL_NBITS, pack_weights
from dlc.frontends.onnx_node import Importer, NodeContext, dense

OPTIONAL = ("zero_points", "g_idx", "bias")


def _present(n: NodeContext, index: int) -> bool:
    return index < len(n.node.input) and bool(n.node.input[index])


def unpack_low_first(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """[rows, bytes] uint8 -> [rows, count] values of `bits` bits, low bits first."""
    if bits == 8:
        return packed[:, :count]
    low, high = packed & 0x0F, packed >> 4
    return np.stack([low, high], axis=-1).reshape(packed.shape[0], -1)[:, :count]


def _int_attr(n: NodeContext, name: str, default: int | None = None) -> int:
    value = n.attr(name, default)
    if value is None:
        raise n.error(f"needs its '{name}' attribute")
    return int(value)


def _zero_points(n: NodeContext, shape: tuple[int, int], bits: int) -> np.ndarray:
    """The zero points as float [N, n_blocks]."""
    rows, blocks = shape
    if not _present(n, 3):
        return np.full(shape, 1 << (bits - 1), np.float32)
    zero = np.asarray(n.constant_input(3, "zero_points"))
    if zero.dtype.kind == "f":
        if zero.size != rows * blocks:
            raise n.error(f"float zero_points must have N * n_blocks = {rows * blocks} "
                          f"elements, got shape {list(zero.shape)}")
        return zero.reshape(shape).astype(np.float32)
    if zero.dtype != np.uint8:
        raise n.error(f"zero_points must be uint8 or the scales' float type, got {zero.dtype}")
    per_column = math.ceil(blocks * bits / 8)
    if zero.size != rows * per_column:
        raise n.error(f"packed uint8 zero_points must have N * ceil(n_blocks * bits / 8) = "
                      f"{rows * per_column} elements, got shape {list(zero.shape)}")
    return unpack_low_first(zero.reshape(rows, per_column), bits, blocks).astype(np.float32)


def import_matmul_nbits(n: NodeContext) -> list[ir.Value]:
    # MatMulNBits(A, B, scales, zp) -> reshape(dlc.matmul_nbits(reshape(A), packed B, ...))
    k, cols = _int_attr(n, "K"), _int_attr(n, "N")
    bits, block = _int_attr(n, "bits", 4), _int_attr(n, "block_size")
    if bits not in BITS:
        raise n.error(f"bits={bits} is not supported (dlc supports 4 and 8)")
    if block < 16 or block & (block - 1):
        raise n.error(f"block_size must be a power of 2 and at least 16, got {block}")
    if k < 1 or cols < 1:
        raise n.error(f"K ({k}) and N ({cols}) must be positive")
    if _present(n, 4):
        raise n.error("g_idx (act-order quantization) is not supported: export without "
                      "act-order (desc_act=False) or reorder the weights")
    a = n.inputs[0]
    if a.type.rank < 1 or a.type.shape[-1] != k:
        raise n.error(f"A's last dimension must be K = {k}, got {a.type}")
    blocks, blob = -(-k // block), block * bits // 8
    b = np.asarray(n.constant_input(1, "B"))
    if b.dtype != np.uint8 or list(b.shape) != [cols, blocks, blob]:
        raise n.error(f"B must be uint8 [N, n_blocks, blob] = [{cols}, {blocks}, {blob}] "
                      f"(K {k}, block_size {block}, {bits} bits), got {b.dtype} "
                      f"{list(b.shape)}")
    scales = np.asarray(n.constant_input(2, "scales"))
    if scales.dtype.kind != "f" or scales.size != cols * blocks:
        raise n.error(f"scales must be float with N * n_blocks = {cols * blocks} elements, "
                      f"got {scales.dtype} {list(scales.shape)}")
    scales = scales.reshape(cols, blocks).astype(np.float32)
    zero = _zero_points(n, (cols, blocks), bits)
    q = unpack_low_first(b.reshape(cols, blocks * blob), bits, k)  # [N, K]
    packed, panel_scales, panel_zero = pack_weights(
        q.T, scales.T, zero.T, bits, block)
    f32 = ir.F32Type.get()
    element = a.type.element_type
    lead = list(a.type.shape[:-1])
    rows = math.prod(lead)
    flat = n.build(ops.RESHAPE, [a], {"shape": [rows, k]}) if a.type.rank != 2 else a
    if element != f32:
        flat = n.build(CAST, [flat], {"to": f32})
    constants = [n.build(ops.CONSTANT, [], {"value": dense(x, n)})
                 for x in (packed, panel_scales, panel_zero)]
    out = n.build(MATMUL_NBITS, [flat, *constants], {"bits": bits, "block_size": block,
                                                     "n": cols})
    if element != f32:
        out = n.build(CAST, [out], {"to": element})
    if a.type.rank != 2:
        out = n.build(ops.RESHAPE, [out], {"shape": lead + [cols]})
    if _present(n, 5):
        out = n.build(ops.ADD, [out, n.inputs[5]])
    return [out]


IMPORTERS: dict[str, Importer] = {
    "com.microsoft.MatMulNBits": import_matmul_nbits,
}
