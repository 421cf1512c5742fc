"""Importers of the transformer fused ops, each decomposed into existing dlc ops.

- Attention (opsets 23, 24, 25): 3-D inputs are split into heads (`dlc.reshape`,
  `dlc.transpose`); past_key/past_value are joined to K/V (`dlc.concat`: present_key,
  present_value); Q and K are each scaled by sqrt(scale), QK^T is a `dlc.matmul`, softcap is
  `softcap * tanh(qk / softcap)`; the mask, is_causal, the sliding window and
  nonpad_kv_seqlen become one additive bias of 0 / -inf (a constant when the causal offset is
  static, `dlc.compare`/`dlc.select` on nonpad_kv_seqlen at run time otherwise); the softmax
  is the -inf-safe one of onnx.reference (max of a fully masked row taken as 0, a zero sum as
  1) and a row whose bias is all -inf gives 0. Grouped-query attention never copies K/V: the
  query heads of one KV head are folded into the query-sequence axis of the matmuls.
  qk_matmul_output follows the reference: modes 0 and 1 give QK^T after softcap, 2 after the
  bias, 3 the probabilities.
- RotaryEmbedding (23): `dlc.gather` of the cos/sin caches by position_ids, halves or
  even/odd elements (`dlc.slice`), rotation by mul/sub/add, re-interleaving by
  reshape + concat; partial rotation keeps the last head_size - rotary_embedding_dim elements.
- SwiGLU (28): `dlc.unary {swish, alpha}` (a * sigmoid(alpha * a)) times B.
- CausalConvWithState (27): past_state (or zeros) concatenated before the input, a depthwise
  `dlc.conv` (float16 computed in float32, rounded once, as numpy's matmul does), bias, an
  optional SiLU; present_state is the last kernel - 1 steps.
- LinearAttention (27): the recurrence over the sequence is unrolled at compile time (static
  shapes), in float32 as the reference: per step an optional decay exp(g_t), the delta-rule
  correction beta_t * (v_t - k_t S), the rank-1 update S += k_t^T v_t and the read q_t S;
  query heads sharing a KV head are folded as in Attention.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.conv import CONV
from dlc.dialects.indexing import GATHER
from dlc.dialects.movement import CONCAT, SLICE
from dlc.dialects.reduction import REDUCE
from dlc.dialects.unary import UNARY
from dlc.frontends.onnx_node import Importer, NodeContext, dense, element_type
from dlc.frontends.onnx_ops.movement import numpy_dtype

# ----------------------------------------------------------------------------- building blocks


def _input(n: NodeContext, index: int) -> ir.Value | None:
    return n.inputs[index] if index < len(n.inputs) else None


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _const(n: NodeContext, value, element: ir.Type) -> ir.Value:
    """A dlc.constant of `value` (a scalar: rank 0, or an array) of element type `element`."""
    array = np.asarray(value, dtype=numpy_dtype(element))
    return n.build(ops.CONSTANT, [], {"value": dense(array, n)})


def _reshape(n: NodeContext, x: ir.Value, shape: list[int]) -> ir.Value:
    if list(x.type.shape) == list(shape):
        return x
    return n.build(ops.RESHAPE, [x], {"shape": list(shape)})


def _transpose(n: NodeContext, x: ir.Value, perm: list[int]) -> ir.Value:
    return n.build(ops.TRANSPOSE, [x], {"perm": perm})


def _swap_last(n: NodeContext, x: ir.Value) -> ir.Value:
    rank = x.type.rank
    return _transpose(n, x, [*range(rank - 2), rank - 1, rank - 2])


def _slice(n: NodeContext, x: ir.Value, axis: int, start: int, size: int,
           step: int = 1) -> ir.Value:
    """x[..., start : start + size * step : step, ...] along `axis`."""
    shape = list(x.type.shape)
    starts, sizes, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], sizes[axis], steps[axis] = start, size, step
    return n.build(SLICE, [x], {"starts": starts, "sizes": sizes, "steps": steps})


def _concat(n: NodeContext, values: list[ir.Value], axis: int) -> ir.Value:
    joined = values[0]
    for value in values[1:]:
        joined = n.build(CONCAT, [joined, value], {"axis": axis})
    return joined


def _cast(n: NodeContext, x: ir.Value, element: ir.Type) -> ir.Value:
    return x if x.type.element_type == element else n.build(CAST, [x], {"to": element})


def _unary(n: NodeContext, fn: str, x: ir.Value, params: list[float] | None = None) -> ir.Value:
    return n.build(UNARY, [x], {"fn": fn, "params": params or []})


def _is_neg_inf(n: NodeContext, x: ir.Value) -> ir.Value:
    return _unary(n, "isinf", x, [0.0, 1.0])


def _bias_where(n: NodeContext, allowed: ir.Value, element: ir.Type) -> ir.Value:
    # allowed ? 0 : -inf (select, never a product: 0 * -inf is NaN)
    return n.build(SELECT, [allowed, _const(n, 0, element), _const(n, -np.inf, element)])


def _add_bias(n: NodeContext, bias: ir.Value | None, term: ir.Value) -> ir.Value:
    return term if bias is None else n.build(ops.ADD, [bias, term])


def _heads(n: NodeContext, x: ir.Value, heads: int, what: str) -> ir.Value:
    # [B, S, H * D] -> [B, H, S, D]
    batch, seq, hidden = x.type.shape
    if heads is None or heads <= 0 or hidden % heads:
        raise n.error(f"{what} hidden size {hidden} is not a multiple of its number of heads "
                      f"({heads})")
    split = _reshape(n, x, [batch, seq, heads, hidden // heads])
    return _transpose(n, split, [0, 2, 1, 3])


def _merge_heads(n: NodeContext, x: ir.Value) -> ir.Value:
    # [B, H, S, D] -> [B, S, H * D]
    batch, heads, seq, size = x.type.shape
    return _reshape(n, _transpose(n, x, [0, 2, 1, 3]), [batch, seq, heads * size])


def _grouped_matmul(n: NodeContext, a: ir.Value, b: ir.Value) -> ir.Value:
    # a [B, Hq, M, K] @ b [B, Hkv, K, N] with Hq = g * Hkv, query head h reading KV head h // g:
    # a folded to [B, Hkv, g * M, K], the product unfolded to [B, Hq, M, N]
    batch, q_heads, rows, _ = a.type.shape
    kv_heads = b.type.shape[1]
    if q_heads == kv_heads:
        return n.build(ops.MATMUL, [a, b])
    if kv_heads == 0 or q_heads % kv_heads:
        raise n.error(f"the {q_heads} query heads are not a multiple of the {kv_heads} "
                      "key/value heads")
    folded = _reshape(n, a, [batch, kv_heads, q_heads // kv_heads * rows, a.type.shape[3]])
    product = n.build(ops.MATMUL, [folded, b])
    return _reshape(n, product, [batch, q_heads, rows, b.type.shape[3]])


# ----------------------------------------------------------------------------- Attention


def _padded_mask(n: NodeContext, mask: ir.Value, kv_len: int) -> ir.Value:
    # a mask shorter than the keys is padded at the end with -inf (False for a bool mask)
    shape = list(mask.type.shape)
    missing = kv_len - shape[-1]
    if missing < 0:
        raise n.error(f"attn_mask covers {shape[-1]} keys, more than the {kv_len} keys")
    if missing == 0:
        return mask
    element = mask.type.element_type
    fill = False if isinstance(element, ir.IntegerType) else -np.inf
    pad = _const(n, np.full([*shape[:-1], missing], fill), element)
    return _concat(n, [mask, pad], len(shape) - 1)


def _frontier_bias(n: NodeContext, element: ir.Type, q_len: int, kv_len: int,
                   offset: int | ir.Value, causal: bool, left: int, right: int
                   ) -> ir.Value | None:
    """The causal / sliding-window bias: query i sees key j iff d = i + offset - j satisfies
    d >= 0 (causal), d <= left, -d <= right. A static offset gives a constant [q, kv]; a
    per-batch one (nonpad_kv_seqlen - q_len) a [B, 1, q, kv] bias computed at run time."""
    bounds: list[tuple[str, int]] = []  # (comparison, bound) that d must satisfy
    if causal:
        bounds.append(("ge", 0))
    if left >= 0:
        bounds.append(("le", left))
    if right >= 0:
        bounds.append(("ge", -right))
    if not bounds:
        return None
    d = np.arange(q_len)[:, None] - np.arange(kv_len)[None, :]
    if isinstance(offset, int):
        allowed = np.ones_like(d, dtype=bool)
        for fn, bound in bounds:
            allowed &= (d + offset >= bound) if fn == "ge" else (d + offset <= bound)
        return _const(n, np.where(allowed, 0, -np.inf), element)
    i64 = ir.IntegerType.get_signless(64)
    d = n.build(ops.ADD, [_const(n, d, i64), offset])  # [B, q, kv]
    allowed = None
    for fn, bound in bounds:
        test = n.build(COMPARE, [d, _const(n, bound, i64)], {"fn": fn})
        allowed = test if allowed is None else n.build(BINARY, [allowed, test], {"fn": "and"})
    bias = _bias_where(n, allowed, element)
    return _reshape(n, bias, [bias.type.shape[0], 1, q_len, kv_len])


def _attention_bias(n: NodeContext, element: ir.Type, q_len: int, kv_len: int,
                    past_len: int | None, nonpad: ir.Value | None) -> ir.Value | None:
    """The additive bias (0 where a key is attended, -inf where masked), None when none."""
    mask = _input(n, 3)
    bias = None
    if mask is not None:
        mask = _padded_mask(n, mask, kv_len)
        if isinstance(mask.type.element_type, ir.IntegerType):  # bool: True attends
            bias = _bias_where(n, mask, element)
        else:
            bias = _cast(n, mask, element)
    causal = bool(n.attr("is_causal", 0))
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    if left < -1 or right < -1:
        raise n.error(f"window sizes must be -1 or >= 0, got left {left}, right {right}")
    i64 = ir.IntegerType.get_signless(64)
    seqlen = None
    if nonpad is not None:
        if nonpad.type.rank != 1:
            raise n.error(f"nonpad_kv_seqlen must be 1-D [batch], got rank {nonpad.type.rank}")
        seqlen = _cast(n, nonpad, i64)
    if seqlen is not None and past_len is None:  # external cache: offset[b] = seqlen[b] - q
        offset = n.build(ops.SUB, [_reshape(n, seqlen, [seqlen.type.shape[0], 1, 1]),
                                   _const(n, q_len, i64)])
    else:
        offset = past_len or 0
    frontier = _frontier_bias(n, element, q_len, kv_len, offset, causal, left, right)
    if frontier is not None:
        bias = _add_bias(n, bias, frontier)
    if seqlen is not None:  # keys at or after nonpad_kv_seqlen[b] are padding
        batch = seqlen.type.shape[0]
        valid = n.build(COMPARE, [_const(n, np.arange(kv_len), i64),
                                  _reshape(n, seqlen, [batch, 1, 1, 1])], {"fn": "lt"})
        bias = _add_bias(n, bias, _bias_where(n, valid, element))
    return bias


def _safe_softmax(n: NodeContext, x: ir.Value) -> ir.Value:
    # softmax over the last axis; a row whose max is -inf is shifted by 0, a zero sum
    # divides by 1 (onnx.reference's _softmax: no NaN from a fully masked row)
    axis = [x.type.rank - 1]
    element = x.type.element_type
    peak = n.build(REDUCE, [x], {"fn": "max", "axes": axis, "keepdims": 1})
    peak = n.build(SELECT, [_is_neg_inf(n, peak), _const(n, 0, element), peak])
    e = _unary(n, "exp", n.build(ops.SUB, [x, peak]))
    total = n.build(REDUCE, [e], {"fn": "sum", "axes": axis, "keepdims": 1})
    zero = n.build(COMPARE, [total, _const(n, 0, element)], {"fn": "eq"})
    total = n.build(SELECT, [zero, _const(n, 1, element), total])
    return n.build(ops.DIV, [e, total])


def _softcapped(n: NodeContext, qk: ir.Value) -> ir.Value:
    # softcap * tanh(qk / softcap), when softcap > 0
    softcap = float(n.attr("softcap", 0.0) or 0.0)
    if softcap <= 0:
        return qk
    cap = _const(n, softcap, qk.type.element_type)
    return n.build(ops.MUL, [_unary(n, "tanh", n.build(ops.DIV, [qk, cap])), cap])


def import_attention(n: NodeContext) -> list[ir.Value]:
    # Y = softmax(softcap(Q s @ (K s)^T) + bias) @ V, s = sqrt(scale)
    q, k, v = n.inputs[:3]
    past_k, past_v, nonpad = _input(n, 4), _input(n, 5), _input(n, 6)
    rank = q.type.rank
    if rank not in (3, 4) or k.type.rank != rank or v.type.rank != rank:
        raise n.error(f"Q, K and V must all be 3-D or all 4-D, got ranks {q.type.rank}, "
                      f"{k.type.rank}, {v.type.rank}")
    if (past_k is None) != (past_v is None):
        raise n.error("past_key and past_value must be given together")
    if nonpad is not None and past_k is not None:
        raise n.error("nonpad_kv_seqlen cannot be combined with past_key/past_value")
    if rank == 3:
        q_heads, kv_heads = n.attr("q_num_heads"), n.attr("kv_num_heads")
        q, k, v = (_heads(n, q, q_heads, "Q"), _heads(n, k, kv_heads, "K"),
                   _heads(n, v, kv_heads, "V"))
    element = q.type.element_type
    scale = n.attr("scale")
    scale = 1 / math.sqrt(q.type.shape[3]) if scale is None else float(scale)
    root = _const(n, math.sqrt(scale), element)
    if past_k is not None:
        k = _concat(n, [past_k, k], 2)
        v = _concat(n, [past_v, v], 2)
    present_k, present_v = k, v
    q_len, kv_len = q.type.shape[2], k.type.shape[2]
    qk = _grouped_matmul(n, n.build(ops.MUL, [q, root]),
                         _swap_last(n, n.build(ops.MUL, [k, root])))
    qk = _softcapped(n, qk)
    past_len = past_k.type.shape[2] if past_k is not None else None
    bias = _attention_bias(n, element, q_len, kv_len, past_len, nonpad)
    with_bias = qk if bias is None else n.build(ops.ADD, [qk, bias])
    precision = n.attr("softmax_precision")
    logits = with_bias if precision is None else _cast(n, with_bias,
                                                       element_type(precision, "softmax_precision"))
    probs = _safe_softmax(n, logits)
    if bias is not None:  # a row whose bias is all -inf attends nothing: 0
        bias_peak = n.build(REDUCE, [bias], {"fn": "max", "axes": [bias.type.rank - 1],
                                             "keepdims": 1})
        zero = _const(n, 0, probs.type.element_type)
        probs = n.build(SELECT, [_is_neg_inf(n, bias_peak), zero, probs])
    probs = _cast(n, probs, element)
    y = _grouped_matmul(n, probs, v)
    if rank == 3:
        y = _merge_heads(n, y)
    results = [y, present_k, present_v]
    if len(n.node.output) > 3 and n.node.output[3]:
        mode = n.attr("qk_matmul_output_mode", 0)
        if mode not in (0, 1, 2, 3):
            raise n.error(f"qk_matmul_output_mode must be 0, 1, 2 or 3, got {mode}")
        results.append({0: qk, 1: qk, 2: with_bias, 3: probs}[mode])
    return results


# ----------------------------------------------------------------------------- RotaryEmbedding


def import_rotary_embedding(n: NodeContext) -> list[ir.Value]:
    # [x1, x2] -> [cos x1 - sin x2, sin x1 + cos x2] on the first rotary_embedding_dim elements
    # of each head (x1, x2: the halves, or the even and odd elements when interleaved)
    x, cos, sin = n.inputs[:3]
    positions = _input(n, 3)
    shape = list(x.type.shape)
    if x.type.rank == 4:  # [B, H, S, D]: the caches broadcast as [B, 1, S, r/2]
        work, batch, seq = x, shape[0], shape[2]
    elif x.type.rank == 3:  # [B, S, H*D] -> [B, S, H, D]: caches as [B, S, 1, r/2]
        heads = n.attr("num_heads")
        if not heads or shape[2] % heads:
            raise n.error(f"num_heads ({heads}) must divide the hidden size {shape[2]}")
        work, batch, seq = _reshape(n, x, [*shape[:2], heads, shape[2] // heads]), *shape[:2]
    else:
        raise n.error(f"input must be 3-D or 4-D, got rank {x.type.rank}")
    head_size = work.type.shape[3]
    dim = n.attr("rotary_embedding_dim", 0) or head_size
    if dim % 2 or dim > head_size:
        raise n.error(f"rotary_embedding_dim {dim} must be even and at most the head size "
                      f"{head_size}")
    half = dim // 2
    if positions is not None:
        cos = n.build(GATHER, [cos, positions], {"axis": 0})
        sin = n.build(GATHER, [sin, positions], {"axis": 0})
    if list(cos.type.shape) != [batch, seq, half] or list(sin.type.shape) != [batch, seq, half]:
        raise n.error(f"the cos/sin caches must give [batch, seq, rotary_embedding_dim / 2] = "
                      f"[{batch}, {seq}, {half}], got {list(cos.type.shape)}")
    cache_shape = [batch, 1, seq, half] if x.type.rank == 4 else [batch, seq, 1, half]
    cos, sin = _reshape(n, cos, cache_shape), _reshape(n, sin, cache_shape)
    interleaved = bool(n.attr("interleaved", 0))
    x1 = _slice(n, work, 3, 0, half, 2 if interleaved else 1)
    x2 = _slice(n, work, 3, 1 if interleaved else half, half, 2 if interleaved else 1)
    real = n.build(ops.SUB, [n.build(ops.MUL, [cos, x1]), n.build(ops.MUL, [sin, x2])])
    imag = n.build(ops.ADD, [n.build(ops.MUL, [sin, x1]), n.build(ops.MUL, [cos, x2])])
    if interleaved:  # [.., r/2] twice -> [.., r/2, 2] -> [.., r]
        pairs = [_reshape(n, t, [*t.type.shape, 1]) for t in (real, imag)]
        rotated = _reshape(n, _concat(n, pairs, 4), [*real.type.shape[:3], dim])
    else:
        rotated = _concat(n, [real, imag], 3)
    if dim < head_size:
        rotated = _concat(n, [rotated, _slice(n, work, 3, dim, head_size - dim)], 3)
    return [_reshape(n, rotated, shape)]


# ----------------------------------------------------------------------------- SwiGLU


def import_swiglu(n: NodeContext) -> list[ir.Value]:
    # A * sigmoid(alpha * A) * B, A and B of one shape
    a, b = n.inputs[:2]
    if a.type != b.type:
        raise n.error(f"A and B must have the same type, got {a.type} and {b.type}")
    gate = _unary(n, "swish", a, [float(n.attr("alpha", 1.0))])
    return [n.build(ops.MUL, [gate, b])]


# ----------------------------------------------------------------------------- CausalConvWithState


def import_causal_conv_with_state(n: NodeContext) -> list[ir.Value]:
    # padded = [past_state | x]; y = act(depthwise_conv(padded, w) + bias);
    # present_state = padded[..., -(k - 1):]
    x, w = n.inputs[:2]
    bias, past = _input(n, 2), _input(n, 3)
    activation = _text(n.attr("activation", "none"))
    if activation not in ("none", "silu", "swish"):
        raise n.error(f"activation '{activation}' must be none, silu or swish")
    if x.type.rank != 3 or w.type.rank != 3:
        raise n.error("input must be [batch, channels, length] and weight [channels, 1, k]")
    batch, channels, _ = x.type.shape
    kernel = w.type.shape[2]
    if list(w.type.shape[:2]) != [channels, 1] or kernel < 1:
        raise n.error(f"weight must be [{channels}, 1, k], got {list(w.type.shape)}")
    element = x.type.element_type
    state = past if past is not None else _const(n, np.zeros([batch, channels, kernel - 1]),
                                                 element)
    padded = x if kernel == 1 else _concat(n, [state, x], 2)
    wide = ir.F32Type.get() if isinstance(element, (ir.F16Type, ir.BF16Type)) else element
    conv = n.build(CONV, [_cast(n, padded, wide), _cast(n, w, wide)],
                   {"strides": [1], "dilations": [1], "pads": [0, 0], "group": channels})
    y = _cast(n, conv, element)
    if bias is not None:
        y = n.build(ops.ADD, [y, _reshape(n, bias, [channels, 1])])
    if activation != "none":  # SiLU in float32, rounded once
        y = _cast(n, _unary(n, "swish", _cast(n, y, ir.F32Type.get()), [1.0]), element)
    length = padded.type.shape[2]
    present = _slice(n, padded, 2, length - (kernel - 1), kernel - 1)
    return [y, present]


# ----------------------------------------------------------------------------- LinearAttention


def _per_step(n: NodeContext, x: ir.Value, heads: int, b: int, t: int) -> ir.Value:
    # [B, T, heads * d] -> [B, heads, T, d] in float32
    d = x.type.shape[2] // heads
    split = _reshape(n, _cast(n, x, ir.F32Type.get()), [b, t, heads, d])
    return _transpose(n, split, [0, 2, 1, 3])


def import_linear_attention(n: NodeContext) -> list[ir.Value]:
    # per step t: S = exp(g_t) S; v_t = beta_t (v_t - k_t S); S += k_t^T v_t; o_t = scale q_t S
    query, key, value = n.inputs[:3]
    past, decay, beta = _input(n, 3), _input(n, 4), _input(n, 5)
    rule = _text(n.attr("update_rule", "gated_delta"))
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise n.error(f"update_rule '{rule}' must be linear, gated, delta or gated_delta")
    q_heads, kv_heads = n.attr("q_num_heads"), n.attr("kv_num_heads")
    if not q_heads or not kv_heads or q_heads % kv_heads:
        raise n.error(f"q_num_heads ({q_heads}) must be a positive multiple of kv_num_heads "
                      f"({kv_heads})")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gated != (decay is not None) or delta != (beta is not None):
        raise n.error(f"update_rule '{rule}' needs {'decay' if gated else 'no decay'} and "
                      f"{'beta' if delta else 'no beta'}")
    if any(x.type.rank != 3 for x in (query, key, value)):
        raise n.error("query, key and value must be 3-D [batch, seq, heads * size]")
    f32 = ir.F32Type.get()
    b, t, _ = query.type.shape
    q4 = _per_step(n, query, q_heads, b, t)
    k4 = _per_step(n, key, kv_heads, b, t)
    v4 = _per_step(n, value, kv_heads, b, t)
    d_k, d_v = k4.type.shape[3], v4.type.shape[3]
    if q4.type.shape[3] != d_k:
        raise n.error(f"query head size {q4.type.shape[3]} differs from the key's {d_k}")
    k_cols = _swap_last(n, k4)  # [B, Hkv, dk, T]: step i is a column k_i^T
    if gated:
        if decay.type.shape[2] not in (kv_heads, kv_heads * d_k):
            raise n.error(f"decay's last axis must be {kv_heads} or {kv_heads * d_k}")
        g = _per_step(n, decay, kv_heads, b, t)  # [B, Hkv, T, dk or 1]
        g = _swap_last(n, _unary(n, "exp", g))  # [B, Hkv, dk or 1, T]
    if delta:
        if beta.type.shape[2] not in (kv_heads, 1):
            raise n.error(f"beta's last axis must be {kv_heads} or 1")
        beta4 = _per_step(n, beta, beta.type.shape[2], b, t)  # [B, H or 1, T, 1]
    if past is not None:
        if list(past.type.shape) != [b, kv_heads, d_k, d_v]:
            raise n.error(f"past_state must be [{b}, {kv_heads}, {d_k}, {d_v}]")
        state = _cast(n, past, f32)
    else:
        state = _const(n, np.zeros([b, kv_heads, d_k, d_v]), f32)
    outputs = []
    for i in range(t):
        if gated:
            state = n.build(ops.MUL, [state, _slice(n, g, 3, i, 1)])
        v_i = _slice(n, v4, 2, i, 1)  # [B, Hkv, 1, dv]
        if delta:
            retrieved = n.build(ops.MATMUL, [_slice(n, k4, 2, i, 1), state])
            v_i = n.build(ops.MUL, [_slice(n, beta4, 2, i, 1),
                                    n.build(ops.SUB, [v_i, retrieved])])
        state = n.build(ops.ADD, [state, n.build(ops.MUL, [_slice(n, k_cols, 3, i, 1), v_i])])
        outputs.append(_grouped_matmul(n, _slice(n, q4, 2, i, 1), state))
    scale = float(n.attr("scale", 0.0) or 0.0) or 1 / math.sqrt(d_k)
    out = n.build(ops.MUL, [_concat(n, outputs, 2), _const(n, scale, f32)])
    out = _cast(n, _merge_heads(n, out), query.type.element_type)
    present = _cast(n, state, (past if past is not None else query).type.element_type)
    return [out, present]


IMPORTERS: dict[str, Importer] = {
    "Attention": import_attention,
    "RotaryEmbedding": import_rotary_embedding,
    "SwiGLU": import_swiglu,
    "CausalConvWithState": import_causal_conv_with_state,
    "LinearAttention": import_linear_attention,
}
