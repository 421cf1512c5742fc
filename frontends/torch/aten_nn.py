"""Converters of the ATen neural-network ops: convolution, pooling, normalization, softmax,
attention and the fused transformer layer.

Layouts are torch's, which are ONNX's (NCHW, OIHW weights), so convolution and pooling map
onto `dlc.conv` and `dlc.pool` with explicit pads. Softmax, the normalizations and attention
decompose into dlc's reductions and elementwise ops as the ONNX importers do. Outputs that only
training reads (batch norm's saved statistics, max pooling's indices) are not built: a graph
that uses them fails with an error naming the node. `_transformer_encoder_layer_fwd` and
`_native_multi_head_attention` are what `nn.TransformerEncoderLayer` and
`nn.MultiheadAttention` run under `torch.no_grad()` in eval mode (their "fast path"), which is
what torch.compile sees; they decompose into the same building blocks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import SELECT
from dlc.dialects.conv import CONV, CONV_TRANSPOSE, POOL
from dlc.frontends import decompose
from dlc.frontends.decompose import affine, inverse_std, normalize, per_channel, reduce
from dlc.frontends.torch.aten_movement import permute, split_with_sizes
from dlc.frontends.torch.aten_node import AtenNode, Converter, axis, value_dtype
from dlc.frontends.torch.aten_ops import unary

Value = ir.Value

# ----------------------------------------------------------------------------- building blocks


def per_axis(values: int | Sequence[int], k: int) -> list[int]:
    """An int or a list of one value per spatial axis (one value means all k)."""
    values = [values] if isinstance(values, int) else list(values)
    return values * k if len(values) == 1 else values


def layer_norm(n: AtenNode, x: Value, dims: int, weight: Value | None, bias: Value | None,
               eps: float) -> tuple[Value, Value, Value]:
    # (x - mean) / sqrt(var + eps) * weight + bias over the last `dims` axes
    rank = x.type.rank
    y, mean, rstd = normalize(n, x, range(rank - dims, rank), eps)
    return affine(n, y, weight, bias), mean, rstd


def softmax(n: AtenNode, x: Value, dim: int) -> Value:
    return decompose.softmax(n, x, [axis(n, dim, x.type.rank)])


def linear(n: AtenNode, x: Value, weight: Value, bias: Value | None) -> Value:
    # x @ weight^T + bias over the last axis of x, as a 2-D gemm
    shape = list(x.type.shape)
    flat = n.reshape(x, [math.prod(shape[:-1]), shape[-1]])
    attrs = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1}
    y = n.build(ops.GEMM, [flat, weight] + ([bias] if bias is not None else []), attrs)
    return n.reshape(y, [*shape[:-1], weight.type.shape[0]])


def attention(n: AtenNode, q: Value, k: Value, v: Value, mask: Value | None = None,
              is_causal: bool = False, scale: float | None = None) -> Value:
    # softmax(q @ k^T * scale + mask) @ v over [..., L, E] x [..., S, E]
    dtype = value_dtype(q)
    length, source = q.type.shape[-2], k.type.shape[-2]
    scale = 1 / math.sqrt(q.type.shape[-1]) if scale is None else scale
    rank = k.type.rank
    k_t = permute(n, k, [*range(rank - 2), rank - 1, rank - 2])
    scores = n.build(ops.MUL, [n.build(ops.MATMUL, [q, k_t]), n.constant(scale, dtype)])
    if is_causal:
        allowed = np.tril(np.ones((length, source), dtype=np.bool_))
        mask = n.constant(allowed, torch.bool)
    if mask is not None and mask.type.element_type == ir.IntegerType.get_signless(1):
        minus_inf = n.constant(-np.inf, dtype)
        scores = n.build(SELECT, [mask, scores, minus_inf])
    elif mask is not None:
        scores = n.build(ops.ADD, [scores, n.cast(mask, dtype)])
    return n.build(ops.MATMUL, [softmax(n, scores, -1), v])


def heads(n: AtenNode, x: Value, count: int) -> Value:
    # [B, L, E] -> [B, H, L, E/H]
    batch, length, width = x.type.shape
    return permute(n, n.reshape(x, [batch, length, count, width // count]), [0, 2, 1, 3])


def merge_heads(n: AtenNode, x: Value) -> Value:
    # [B, H, L, D] -> [B, L, H*D]
    batch, count, length, width = x.type.shape
    return n.reshape(permute(n, x, [0, 2, 1, 3]), [batch, length, count * width])


def self_attention(n: AtenNode, x: Value, num_heads: int, qkv_weight: Value, qkv_bias: Value,
                   proj_weight: Value, proj_bias: Value) -> Value:
    # out_proj(attention(q, k, v)) with [q, k, v] = in_proj(x), x of shape [B, L, E]
    width = x.type.shape[-1]
    qkv = linear(n, x, qkv_weight, qkv_bias)
    q, k, v = (heads(n, part, num_heads)
               for part in split_with_sizes(n, qkv, [width] * 3, dim=-1))
    return linear(n, merge_heads(n, attention(n, q, k, v)), proj_weight, proj_bias)


# ----------------------------------------------------------------------------- converters


def convolution(n: AtenNode, x: Value, weight: Value, bias: Value | None,
                stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                transposed: bool, output_padding: Sequence[int], groups: int) -> Value:
    k = x.type.rank - 2
    pads = per_axis(padding, k)
    attrs = {"strides": per_axis(stride, k), "dilations": per_axis(dilation, k),
             "pads": pads + pads, "group": groups}
    operands = [x, weight] + ([bias] if bias is not None else [])
    if transposed:
        return n.build(CONV_TRANSPOSE, operands,
                       {**attrs, "output_padding": per_axis(output_padding, k)})
    return n.build(CONV, operands, attrs)


def _pool(n: AtenNode, kind: str, x: Value, kernel: Sequence[int], stride: Sequence[int],
          padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool,
          count_include_pad: bool = False) -> Value:
    k = x.type.rank - 2
    pads = per_axis(padding, k)
    attrs = {"kind": kind, "kernel": per_axis(kernel, k),
             "strides": per_axis(stride or kernel, k), "dilations": per_axis(dilation, k),
             "pads": pads + pads, "ceil_mode": int(ceil_mode),
             "count_include_pad": int(count_include_pad), "p": 2}
    return n.build(POOL, [x], attrs)


def max_pool_with_indices(n: AtenNode, x: Value, kernel_size: Sequence[int],
                          stride: Sequence[int] = (), padding: Sequence[int] = (0,),
                          dilation: Sequence[int] = (1,), ceil_mode: bool = False
                          ) -> tuple[Value, None]:
    # (values, indices): the indices feed only max_unpool and training
    return _pool(n, "max", x, kernel_size, stride, padding, dilation, ceil_mode), None


def avg_pool(n: AtenNode, x: Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
             padding: Sequence[int] = (0,), ceil_mode: bool = False,
             count_include_pad: bool = True, divisor_override: int | None = None) -> Value:
    if divisor_override is not None:
        raise n.error("divisor_override is not supported")
    return _pool(n, "avg", x, kernel_size, stride, padding, (1,), ceil_mode, count_include_pad)


def adaptive_avg_pool(n: AtenNode, x: Value, output_size: Sequence[int]) -> Value:
    # a global mean, or an average pool whose windows tile the input exactly
    spatial = list(x.type.shape[2:])
    sizes = per_axis(output_size, len(spatial))
    if all(s == 1 for s in sizes):
        return reduce(n, "mean", x, list(range(2, x.type.rank)))
    if any(d % s for d, s in zip(spatial, sizes)):
        raise n.error(f"adaptive pooling of {spatial} to {sizes} is supported only where the "
                      "output size divides the input size")
    kernel = [d // s for d, s in zip(spatial, sizes)]
    return _pool(n, "avg", x, kernel, kernel, (0,), (1,), False)


def batch_norm_no_training(n: AtenNode, x: Value, weight: Value | None, bias: Value | None,
                           running_mean: Value, running_var: Value, momentum: float,
                           eps: float) -> tuple[Value, None, None]:
    # (x - mean) / sqrt(var + eps) * weight + bias, per channel
    rank = x.type.rank
    mean, var = (per_channel(n, p, rank) for p in (running_mean, running_var))
    y = n.build(ops.MUL, [n.build(ops.SUB, [x, mean]), inverse_std(n, var, eps)])
    weight, bias = (None if p is None else per_channel(n, p, rank) for p in (weight, bias))
    return affine(n, y, weight, bias), None, None


def native_layer_norm(n: AtenNode, x: Value, normalized_shape: Sequence[int],
                      weight: Value | None, bias: Value | None, eps: float
                      ) -> tuple[Value, Value, Value]:
    return layer_norm(n, x, len(normalized_shape), weight, bias, eps)


def native_group_norm(n: AtenNode, x: Value, weight: Value | None, bias: Value | None,
                      batch: int, channels: int, spatial: int, group: int, eps: float
                      ) -> tuple[Value, None, None]:
    # statistics per (sample, group of C/G channels), weight and bias per channel
    shape = list(x.type.shape)
    grouped = n.reshape(x, [batch, group, channels // group * spatial])
    y, _, _ = layer_norm(n, grouped, 1, None, None, eps)
    rank = len(shape)
    weight, bias = (None if p is None else per_channel(n, p, rank) for p in (weight, bias))
    return affine(n, n.reshape(y, shape), weight, bias), None, None


def softmax_(n: AtenNode, x: Value, dim: int, half_to_float: bool = False) -> Value:
    return softmax(n, x, dim)


def log_softmax(n: AtenNode, x: Value, dim: int, half_to_float: bool = False) -> Value:
    return decompose.log_softmax(n, x, [axis(n, dim, x.type.rank)])


def sdpa(n: AtenNode, query: Value, key: Value, value: Value, attn_mask: Value | None = None,
         dropout_p: float = 0.0, is_causal: bool = False, *, scale: float | None = None,
         enable_gqa: bool = False) -> Value:
    if enable_gqa and key.type.shape[-3] != query.type.shape[-3]:
        raise n.error("grouped-query attention (enable_gqa) is not supported yet")
    return attention(n, query, key, value, attn_mask, is_causal, scale)


def flash_attention_cpu(n: AtenNode, query: Value, key: Value, value: Value,
                        dropout_p: float = 0.0, is_causal: bool = False, *,
                        attn_mask: Value | None = None, scale: float | None = None
                        ) -> tuple[Value, None]:
    # (output, logsumexp): the logsumexp feeds only the backward pass
    return attention(n, query, key, value, attn_mask, is_causal, scale), None


def native_multi_head_attention(n: AtenNode, query: Value, key: Value, value: Value,
                                embed_dim: int, num_head: int, qkv_weight: Value,
                                qkv_bias: Value, proj_weight: Value, proj_bias: Value,
                                mask: Value | None = None, need_weights: bool = True,
                                average_attn_weights: bool = True,
                                mask_type: int | None = None) -> tuple[Value, None]:
    if mask is not None or need_weights:
        raise n.error("masks and attention weights (need_weights) are not supported in the "
                      "fused attention")
    if not (query == key == value):
        raise n.error("the fused attention is supported for self-attention only")
    out = self_attention(n, query, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias)
    return out, None


def transformer_encoder_layer(n: AtenNode, src: Value, embed_dim: int, num_heads: int,
                              qkv_weight: Value, qkv_bias: Value, proj_weight: Value,
                              proj_bias: Value, use_gelu: bool, norm_first: bool, eps: float,
                              norm_weight_1: Value, norm_bias_1: Value, norm_weight_2: Value,
                              norm_bias_2: Value, ffn_weight_1: Value, ffn_bias_1: Value,
                              ffn_weight_2: Value, ffn_bias_2: Value, mask: Value | None = None,
                              mask_type: int | None = None) -> Value:
    # x + attention(norm1(x)), x + ffn(norm2(x)) (norm_first), or norms after the residuals
    if mask is not None:
        raise n.error("masks are not supported in the fused transformer encoder layer")
    if src.type.rank != 3:
        raise n.error(f"expects a batched [B, L, E] input, got rank {src.type.rank}")

    def norm(x: Value, weight: Value, bias: Value) -> Value:
        return layer_norm(n, x, 1, weight, bias, eps)[0]

    def attend(x: Value) -> Value:
        return self_attention(n, x, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias)

    def feed_forward(x: Value) -> Value:
        hidden = linear(n, x, ffn_weight_1, ffn_bias_1)
        hidden = unary(n, "gelu", hidden) if use_gelu else n.build(ops.RELU, [hidden])
        return linear(n, hidden, ffn_weight_2, ffn_bias_2)

    x = src
    if norm_first:
        x = n.build(ops.ADD, [x, attend(norm(x, norm_weight_1, norm_bias_1))])
        return n.build(ops.ADD, [x, feed_forward(norm(x, norm_weight_2, norm_bias_2))])
    x = norm(n.build(ops.ADD, [x, attend(x)]), norm_weight_1, norm_bias_1)
    return norm(n.build(ops.ADD, [x, feed_forward(x)]), norm_weight_2, norm_bias_2)


ATEN: dict[str, Converter] = {
    "aten.convolution.default": convolution,
    "aten.max_pool2d_with_indices.default": max_pool_with_indices,
    "aten.max_pool3d_with_indices.default": max_pool_with_indices,
    "aten.avg_pool1d.default": avg_pool,
    "aten.avg_pool2d.default": avg_pool,
    "aten.avg_pool3d.default": avg_pool,
    "aten._adaptive_avg_pool2d.default": adaptive_avg_pool,
    "aten._adaptive_avg_pool3d.default": adaptive_avg_pool,
    "aten._native_batch_norm_legit_no_training.default": batch_norm_no_training,
    "aten.native_layer_norm.default": native_layer_norm,
    "aten.native_group_norm.default": native_group_norm,
    "aten._softmax.default": softmax_,
    "aten._log_softmax.default": log_softmax,
    "aten.scaled_dot_product_attention.default": sdpa,
    "aten._scaled_dot_product_flash_attention_for_cpu.default": flash_attention_cpu,
    "aten._native_multi_head_attention.default": native_multi_head_attention,
    "aten._transformer_encoder_layer_fwd.default": transformer_encoder_layer,
}
