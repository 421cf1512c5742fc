"""dlc-qdq-conv: a convolution of dequantized 8-bit operands convolves their integers.

    conv(dequantize(x, sx, zx), dequantize(W, sw, zw), b)
        -> transpose(f32(i32(conv_nhwc(transpose(f32(x) - f32(zx)), HWCF(W - zw))))
                     * (sx * sw) + b, NCHW)

The static QDQ form of onnxruntime's quantizer (the QDQ -> QLinearConv fusion of its
optimized session): x is 8-bit with a per-tensor scale and zero point, W a constant of 8-bit
integers with a per-tensor or per-output-channel (axis 0) scale and zero point. Left alone,
`dlc-fold-constants` folds W's dequantization into float weights and the conv sums floats;
rewritten, the conv's operands are integers (the centered activation, the centered weights as
f32 constants), which the codegen's integer kernels take where the target has one
(`codegen/int8_matmul.py`: vpdpbusd on AVX-512 VNNI), and the scales apply once per output in
the epilogue. Mathematically the same values; the float rounding differs (as onnxruntime's
integer kernels differ from the model run as written). Grouped convs are left as they are
(no integer kernel takes them). Runs before the first `dlc-fold-constants`.

MatMuls likewise (the QDQ form of a transformer's Linear layers):

    matmul(dequantize(x, sx, zx), dequantize(W, sw, zw))
        -> f32(i32(matmul(f32(x) - f32(zx), W - zw))) * (sx * sw)

with W a constant [K, N] of 8-bit integers, per tensor or per column (axis 1); folded, its
float product had run 3.6-3.9x onnxruntime's integer one ([128,768]x[768,768] 1.41 vs 0.39 ms:
BERT-tiny and DeiT-tiny QDQ at 1.5-1.6x onnxruntime, their dynamic-int8 forms at 0.6-0.8x).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build, ops, quant
from dlc.dialects.binary import CAST
from dlc.dialects.conv import CONV, CONV_NHWC
from dlc.passes.graph.match import (
    RuleTable,
    apply_rules,
    attributes,
    constant,
    constant_array,
    producer,
)
from dlc.passes.registry import ModulePass, register

EIGHT_BITS = (np.int8, np.uint8)


def _weights(dq: ir.Operation, axis: int) -> tuple[np.ndarray, ir.Value] | None:
    """(W - zw as f32, W's scale value) of a constant 8-bit W dequantized per tensor or per
    output channel along `axis`; None otherwise."""
    w = constant_array(dq.operands[0])
    zero = constant_array(dq.operands[2]) if len(dq.operands) > 2 else None
    if w is None or w.dtype not in EIGHT_BITS or (len(dq.operands) > 2 and zero is None):
        return None
    channels = w.shape[axis]
    scale = dq.operands[1]
    count = int(np.prod(scale.type.shape)) if isinstance(scale.type, ir.RankedTensorType) else 0
    attrs = attributes(dq)
    if attrs.get("block_size", 0) or not (count == 1 or (count == channels
                                                        and attrs.get("axis", 0) == axis)):
        return None
    shape = [1] * w.ndim
    shape[axis] = channels
    centered = w.astype(np.int64)
    if zero is not None:
        centered = centered - zero.astype(np.int64).reshape(() if zero.size == 1 else shape)
    return centered.astype(np.float32), scale


def _operands(op: ir.OpView) -> tuple[ir.Operation, ir.Operation] | None:
    """The dequantizations of an f32 op's activation (8-bit, per tensor) and weights."""
    dqx = producer(op.operands[0], quant.DEQUANTIZE)
    dqw = producer(op.operands[1], quant.DEQUANTIZE)
    if dqx is None or dqw is None or op.results[0].type.element_type != ir.F32Type.get():
        return None
    if str(dqx.operands[0].type.element_type) not in ("i8", "ui8", "si8") or \
            any(int(np.prod(v.type.shape)) != 1 for v in dqx.operands[1:]):
        return None
    return dqx, dqw


def _centered(dqx: ir.Operation, loc: ir.Location) -> ir.Value:
    """The activation's integers minus its zero point, in f32."""
    lhs = build(CAST, [dqx.operands[0]], {"to": ir.F32Type.get()}, loc=loc)
    if len(dqx.operands) > 2:
        lhs = build(ops.SUB, [lhs, _scalar(dqx.operands[2], loc)], loc=loc)
    return lhs


def _multiplier(dqx: ir.Operation, w_scale: ir.Value, loc: ir.Location) -> ir.Value:
    """sx * sw (per tensor, or per output channel)."""
    if int(np.prod(w_scale.type.shape)) == 1:
        w_scale = _scalar(w_scale, loc)
    return build(ops.MUL, [_scalar(dqx.operands[1], loc), w_scale], loc=loc)


def _rescaled(product: ir.Value, multiplier: ir.Value, loc: ir.Location) -> ir.Value:
    # (through i32, as ConvInteger: the sums are integers, and dlc-fuse-batchnorm must not
    # fold the scales back into the weights)
    exact = build(CAST, [build(CAST, [product], {"to": ir.IntegerType.get_signless(32)},
                               loc=loc)], {"to": ir.F32Type.get()}, loc=loc)
    return build(ops.MUL, [exact, multiplier], loc=loc)


def _scalar(value: ir.Value, loc: ir.Location) -> ir.Value:
    f32 = ir.F32Type.get()
    value = build(CAST, [value], {"to": f32}, loc=loc) \
        if value.type.element_type != f32 else value
    return value if value.type.rank == 0 else \
        build(ops.RESHAPE, [value], {"shape": []}, loc=loc)


def qdq_conv(op: ir.OpView) -> list[ir.Value] | None:
    # conv(dq(x), dq(W), b) -> conv(x - zx, W - zw) * (sx * sw) + b
    x, w = op.operands[0], op.operands[1]
    bias = op.operands[2] if len(op.operands) > 2 else None
    found = _operands(op)
    if found is None:
        return None
    if attributes(op)["group"] != 1 or w.type.rank != 4 or x.type.rank != 4:
        return None  # (2-D convs: NHWC below)
    dqx, dqw = found
    weights = _weights(dqw, 0)
    if weights is None:
        return None
    centered, w_scale = weights
    loc = op.location
    # channels last (what dlc-convert-layout does to float convs: here the scales and the bias
    # are per last axis, where the elementwise schedules and dlc-sink-transpose take them)
    lhs = build(ops.TRANSPOSE, [_centered(dqx, loc)], {"perm": [0, 2, 3, 1]}, loc=loc)
    filters = constant(centered.transpose(2, 3, 1, 0), ir.F32Type.get(), loc)
    conv = build(CONV_NHWC, [lhs, filters], attributes(op), loc=loc)
    out = _rescaled(conv, _multiplier(dqx, w_scale, loc), loc)
    if bias is not None:
        out = build(ops.ADD, [out, bias], loc=loc)
    return [build(ops.TRANSPOSE, [out], {"perm": [0, 3, 1, 2]}, loc=loc)]


def qdq_matmul(op: ir.OpView) -> list[ir.Value] | None:
    # matmul(dq(x), dq(W)) -> f32(i32(matmul(x - zx, W - zw))) * (sx * sw)
    # (W a constant [K, N] of 8-bit integers, per tensor or per column: axis 1)
    return _integer_product(op, transposed=False, bias=None)


def qdq_gemm(op: ir.OpView) -> list[ir.Value] | None:
    # gemm(dq(x), dq(W), c) (alpha = 1, op(x) = x) -> the product above + beta * c (W [N, K]
    # read transposed, per output channel along its axis 0)
    attrs = attributes(op)
    if attrs["transA"] or attrs["alpha"] != 1.0:
        return None
    bias = op.operands[2] if len(op.operands) > 2 else None
    if bias is not None and attrs["beta"] != 1.0:
        return None
    return _integer_product(op, transposed=bool(attrs["transB"]), bias=bias)


def _integer_product(op: ir.OpView, transposed: bool,
                     bias: ir.Value | None) -> list[ir.Value] | None:
    x, w = op.operands[0], op.operands[1]
    found = _operands(op)
    if found is None or w.type.rank != 2 or x.type.rank < 2:
        return None
    dqx, dqw = found
    weights = _weights(dqw, 0 if transposed else 1)
    if weights is None:
        return None
    centered, w_scale = weights
    loc = op.location
    lhs = _centered(dqx, loc)
    rhs = constant(centered.T if transposed else centered, ir.F32Type.get(), loc)
    product = build(ops.MATMUL, [lhs, rhs], loc=loc)
    out = _rescaled(product, _multiplier(dqx, w_scale, loc), loc)
    if bias is not None:
        out = build(ops.ADD, [out, bias], loc=loc)
    return [out]


RULES: RuleTable = {CONV: [qdq_conv], ops.MATMUL: [qdq_matmul], ops.GEMM: [qdq_gemm]}


@register
@dataclass(frozen=True)
class QdqConv(ModulePass):
    """Convolve the integers of dequantized 8-bit activations and weights, the scales applied
    once per output (the static QDQ convs of quantized models)."""

    name = "dlc-qdq-conv"

    def run(self, module: ir.Operation) -> None:
        apply_rules(module, RULES)
