"""Transformer fused ops against onnx.reference: Attention (opsets 23-25), RotaryEmbedding,
SwiGLU, CausalConvWithState and LinearAttention, all decomposed by the importer."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import assert_same, make_model, node_model, random_array, reference, run_both

TOLERANCES = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-5),
              np.dtype(np.float64): (1e-10, 1e-10)}


def qkv(q_shape, k_shape, v_shape, dtype=np.float32, seed=0) -> list[np.ndarray]:
    shapes = (q_shape, k_shape, v_shape)
    return [random_array(s, dtype, seed=seed + i) for i, s in enumerate(shapes)]


def attention_model(inputs, outputs=("y",), opset=23, check=True, **attrs):
    """One Attention node; an output named "" is absent (present_key/value without past)."""
    names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    specs = {f"x{i}": (x.dtype, list(x.shape)) for i, x in enumerate(inputs) if x is not None}
    node = helper.make_node("Attention", names, list(outputs), **attrs)
    graph_outputs = [o for o in outputs if o]
    if not check:
        graph_outputs = {o: (inputs[0].dtype, list(inputs[0].shape)) for o in graph_outputs}
    return make_model([node], specs, graph_outputs, opset=opset, check=check)


def attention(inputs, opset=23, n_outputs=1, **attrs):
    outputs = ("y", "present_key", "present_value", "qk")[:n_outputs]
    run_both(attention_model(inputs, outputs, opset, **attrs),
             [x for x in inputs if x is not None], tolerances=TOLERANCES)


# ----------------------------------------------------------------------------- Attention


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_attention_4d(dtype):
    attention(qkv([2, 3, 4, 8], [2, 3, 6, 8], [2, 3, 6, 5], dtype))


@pytest.mark.parametrize("attrs", [{}, {"scale": 0.1}, {"is_causal": 1}, {"softcap": 2.0}],
                         ids=str)
def test_attention_gqa(attrs):
    # 6 query heads read 2 KV heads: h -> h // 3
    attention(qkv([1, 6, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4]), **attrs)


def test_attention_3d_gqa_causal():
    attention(qkv([2, 4, 24], [2, 6, 8], [2, 6, 10]), is_causal=1, q_num_heads=3,
              kv_num_heads=1)


@pytest.mark.parametrize("mask_shape", [[4, 6], [4, 3], [2, 1, 4, 6], [6]], ids=str)
def test_attention_float_mask(mask_shape):
    # a mask shorter than the keys is padded with -inf
    mask = random_array(mask_shape, np.float32, seed=9)
    attention([*qkv([2, 3, 4, 8], [2, 3, 6, 8], [2, 3, 6, 8]), mask])


def test_attention_bool_mask_fully_masked_row_gives_zero():
    mask = np.array([[False] * 6, [True, False] * 3, [True] * 6, [False] * 5 + [True]])
    attention([*qkv([1, 2, 4, 8], [1, 2, 6, 8], [1, 2, 6, 8]), mask], is_causal=1)


def test_attention_past_and_present_3d_mask():
    q, k, v = qkv([2, 3, 4, 8], [2, 3, 2, 8], [2, 3, 2, 8])
    past_k, past_v = random_array([2, 3, 5, 8], np.float32, 7), random_array([2, 3, 5, 8],
                                                                            np.float32, 8)
    mask = random_array([3, 4, 7], np.float32, seed=9)
    attention([q, k, v, mask, past_k, past_v], n_outputs=3, is_causal=1)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_matmul_output(mode):
    mask = random_array([4, 6], np.float32, seed=9)
    inputs = [*qkv([2, 3, 4, 8], [2, 3, 6, 8], [2, 3, 6, 8]), mask]
    model = attention_model(inputs, ("y", "", "", "qk"), qk_matmul_output_mode=mode, softcap=3.0)
    run_both(model, inputs, tolerances=TOLERANCES)


def test_attention_softmax_precision():
    inputs = qkv([1, 2, 3, 8], [1, 2, 3, 8], [1, 2, 3, 8], np.float16)
    model = attention_model(inputs, ("y", "", "", "qk"), qk_matmul_output_mode=3,
                            softmax_precision=1)
    run_both(model, inputs, tolerances=TOLERANCES)


def test_attention_nonpad_kv_seqlen_at_run_time():
    # opset 24: the causal frontier and the key padding come from nonpad_kv_seqlen, one
    # compiled model for any lengths
    q, k, v = qkv([2, 2, 3, 8], [2, 2, 6, 8], [2, 2, 6, 8])
    model = attention_model([q, k, v, None, None, None, np.array([4, 6])], opset=24,
                            is_causal=1)
    compiled = dlc.compile(model)
    for lengths in ([4, 6], [3, 1]):
        feeds = {"x0": q, "x1": k, "x2": v, "x6": np.array(lengths)}
        (expected,) = reference(model, feeds)
        (actual,) = compiled(feeds)
        assert_same(actual, expected, TOLERANCES)


@pytest.mark.parametrize("attrs", [{"is_causal": 1, "left_window_size": 2},
                                   {"left_window_size": 1, "right_window_size": 1}], ids=str)
def test_attention_sliding_window(attrs):
    attention(qkv([1, 2, 5, 4], [1, 2, 5, 4], [1, 2, 5, 4]), opset=25, **attrs)


def test_attention_rejects_heads_that_do_not_group():
    model = attention_model(qkv([1, 4, 3, 4], [1, 3, 3, 4], [1, 3, 3, 4]), check=False)
    with pytest.raises(dlc.FrontendError, match="not a multiple"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- RotaryEmbedding


def caches(positions: int, half: int) -> list[np.ndarray]:
    angles = np.arange(positions)[:, None] * (0.5 ** np.arange(half))[None, :]
    return [np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)]


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("dim", [0, 4])
def test_rotary_embedding_4d(interleaved, dim):
    x = random_array([2, 3, 5, 8], np.float32)
    cos, sin = caches(16, (dim or 8) // 2)
    positions = np.array([[0, 1, 2, 3, 4], [7, 3, 9, 15, 0]])
    inputs = [x, cos, sin, positions]
    run_both(node_model("RotaryEmbedding", inputs, opset=23, interleaved=interleaved,
                        rotary_embedding_dim=dim), inputs, tolerances=TOLERANCES)


def test_rotary_embedding_3d_without_position_ids():
    x = random_array([2, 5, 12], np.float32)
    cos, sin = (random_array([2, 5, 2], np.float32, seed=s) for s in (1, 2))
    inputs = [x, cos, sin]
    run_both(node_model("RotaryEmbedding", inputs, opset=23, num_heads=3, interleaved=1),
             inputs, tolerances=TOLERANCES)


# ----------------------------------------------------------------------------- SwiGLU


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("alpha", [1.0, 1.702])
def test_swiglu(dtype, alpha):
    inputs = [random_array([3, 7], dtype, seed=s) for s in (1, 2)]
    run_both(node_model("SwiGLU", inputs, opset=28, alpha=alpha), inputs, tolerances=TOLERANCES)


# ----------------------------------------------------------------------------- CausalConvWithState


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_causal_conv_with_state_bias_past_silu(dtype):
    inputs = [random_array(s, dtype, seed=i)
              for i, s in enumerate(([2, 3, 6], [3, 1, 4], [3], [2, 3, 3]))]
    run_both(node_model("CausalConvWithState", inputs, opset=27, n_outputs=2,
                        activation="silu"), inputs, tolerances=TOLERANCES)


@pytest.mark.parametrize("kernel", [1, 5])
def test_causal_conv_with_state_no_past(kernel):
    inputs = [random_array([1, 2, 3], np.float32), random_array([2, 1, kernel], np.float32, 1)]
    run_both(node_model("CausalConvWithState", inputs, opset=27, n_outputs=2), inputs,
             tolerances=TOLERANCES)


# ----------------------------------------------------------------------------- LinearAttention


def test_linear_attention_linear():
    inputs = qkv([2, 3, 8], [2, 3, 8], [2, 3, 6])
    run_both(node_model("LinearAttention", inputs, opset=27, n_outputs=2, update_rule="linear",
                        q_num_heads=2, kv_num_heads=2), inputs, tolerances=TOLERANCES)


@pytest.mark.parametrize("decay_size", [2, 8])
def test_linear_attention_gated_delta_gqa_with_past(decay_size):
    q, k, v = qkv([1, 3, 16], [1, 3, 8], [1, 3, 6])
    past = random_array([1, 2, 4, 3], np.float32, seed=5) * 0.1
    decay = -np.abs(random_array([1, 3, decay_size], np.float32, seed=6)) * 0.1
    beta = np.abs(random_array([1, 3, 2], np.float32, seed=7))
    inputs = [q, k, v, past, decay, beta]
    run_both(node_model("LinearAttention", inputs, opset=27, n_outputs=2, q_num_heads=4,
                        kv_num_heads=2, scale=0.3), inputs, tolerances=TOLERANCES)
