"""dlc.CausalLM (issue 26): decoders with a KV cache, prefill and decode each compiled once.

Tiny GPT-2 and Llama models of `transformers` (random weights from a config, two layers of
hidden 64) are run through both frontends, as ONNX exported in optimum's form
(`dlc.llm.export_onnx`) and as the module (torch.export); greedy generation must give exactly
the tokens of eager PyTorch's `generate`.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from dlc.errors import InputError
from dlc.llm import CausalLM, DecoderError, export_onnx, find_decoder, present_as_update

NEW_TOKENS = 64


def _model(kind: str):
    torch.manual_seed(0)
    if kind == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500,
                                         n_positions=256, bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.LlamaConfig(
            num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=500, max_position_embeddings=256,
            bos_token_id=0, eos_token_id=0)
        model = transformers.LlamaForCausalLM(config)
    return model.eval()


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def decoder(request, tmp_path_factory):
    model = _model(request.param)
    path = tmp_path_factory.mktemp(request.param) / f"{request.param}.onnx"
    export_onnx(model, path)
    return request.param, model, path


def _eager(model, prompt: np.ndarray, new: int) -> np.ndarray:
    with torch.no_grad():
        return model.generate(torch.tensor(prompt), max_new_tokens=new, min_new_tokens=new,
                              do_sample=False, pad_token_id=0).numpy()


PROMPT = np.random.default_rng(1).integers(1, 500, (1, 11))


def test_onnx_greedy_is_eager_pytorch_compiled_once(decoder):
    _, model, path = decoder
    lm = CausalLM(path, max_length=96, chunk=8)
    result = lm.generate(PROMPT, NEW_TOKENS)
    np.testing.assert_array_equal(result.tokens, _eager(model, PROMPT, NEW_TOKENS))
    # a two-chunk prompt (the second padded) and 63 decode steps: two specializations
    assert lm.model.compiles == 2
    assert sorted(s["input_ids"] for s in lm.model.specializations) == [(1, 1), (1, 8)]
    # another prompt length and another generation compile nothing more
    other = np.random.default_rng(2).integers(1, 500, (1, 5))
    again = lm.generate(other, 20)
    np.testing.assert_array_equal(again.tokens, _eager(model, other, 20))
    assert lm.model.compiles == 2
    assert again.decode_tokens_per_second > 0 and again.compile_seconds == 0
    # the logits are computed at one position (the head's matmul has one row per sequence)
    assert lm.spec.logits_index is not None
    assert "x1x500xf32>" in lm.model.ir("dlc", lm.model.specializations[0])


def test_transformers_module_greedy_is_eager_pytorch(decoder):
    _, model, _ = decoder
    lm = CausalLM(model, max_length=96, chunk=16)
    result = lm.generate(PROMPT, NEW_TOKENS)
    np.testing.assert_array_equal(result.tokens, _eager(model, PROMPT, NEW_TOKENS))
    assert lm.model.compiles == 2
    assert lm.spec.logits_index is not None


def test_cache_is_written_in_place_a_slot_per_token(decoder):
    _, _, path = decoder
    lm = CausalLM(path, max_length=32, chunk=4)
    buffers = {name: (array, array.ctypes.data) for name, array in lm.cache.buffers.items()}
    lm.prefill(PROMPT[:, :6])
    assert lm.cache.length == 6
    before = {name: array.copy() for name, (array, _) in buffers.items()}
    lm.step(np.array([7]))
    assert lm.cache.length == 7
    for name, (array, address) in buffers.items():
        assert lm.cache.buffers[name] is array and array.ctypes.data == address
        axis = lm.cache.axes[name]
        changed = np.nonzero(np.any(before[name] != array, axis=tuple(
            i for i in range(array.ndim) if i != axis)))[0]
        assert changed.tolist() == [6]  # only the new token's slot was written
    # the compiled model returns the new token's keys and values, not the whole cache
    pair = lm.spec.pairs[0]
    shapes = lm.model.specializations
    assert any(s["input_ids"] == (1, 1) for s in shapes)
    present = lm.model.signature.outputs[lm.model.output_names.index(pair.present)]
    assert present.shape[pair.axis] != 32


def test_top_k_sampling_is_seeded_and_top_k_one_is_greedy(decoder):
    _, model, path = decoder
    lm = CausalLM(path, max_length=48, chunk=8)
    first = lm.generate(PROMPT, 16, top_k=5, temperature=0.7, seed=3).tokens
    second = lm.generate(PROMPT, 16, top_k=5, temperature=0.7, seed=3).tokens
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(lm.generate(PROMPT, 16, top_k=1).tokens,
                                  _eager(model, PROMPT, 16))
    # each sampled token is among the 5 most likely of the greedy prefix it followed
    for i in range(11, first.shape[1]):
        logits = lm.prefill(first[:, :i])
        assert first[0, i] in np.argsort(-logits[0])[:5]


def test_batch_of_two_prompts(decoder):
    _, model, path = decoder
    prompts = np.random.default_rng(4).integers(1, 500, (2, 7))
    lm = CausalLM(path, max_length=40, chunk=8, batch=2)
    result = lm.generate(prompts, 12)
    np.testing.assert_array_equal(result.tokens, _eager(model, prompts, 12))


def test_errors_name_what_is_wrong(decoder):
    _, _, path = decoder
    lm = CausalLM(path, max_length=16, chunk=4)
    with pytest.raises(InputError, match="exceed max_length 16"):
        lm.generate(PROMPT, 8)
    with pytest.raises(InputError, match="prompt must be"):
        lm.prefill(np.zeros((3, 4), np.int64))
    with pytest.raises(InputError, match="integer token ids"):
        lm.prefill(np.zeros((1, 4), np.float32))
    lm.prefill(PROMPT[:, :10])
    for _ in range(6):
        lm.step(np.array([1]))
    with pytest.raises(InputError, match="KV cache holds 16 tokens"):
        lm.step(np.array([1]))


def test_models_it_cannot_run_are_decoder_errors(decoder, tmp_path):
    _, _, path = decoder
    proto = onnx.load(path)
    spec = find_decoder(proto)
    assert [p.past for p in spec.pairs][:2] == ["past_key_values.0.key",
                                                 "past_key_values.0.value"]
    rewritten = present_as_update(proto, spec)
    producers = {o: n for n in rewritten.graph.node for o in n.output}
    assert producers["present.0.key"].op_type == "Identity"
    # no position_ids input: positions would come from the past length, the cache's capacity
    without = onnx.ModelProto.FromString(proto.SerializeToString())
    position = next(v for v in without.graph.input if v.name == "position_ids")
    without.graph.input.remove(position)
    without.graph.initializer.append(onnx.numpy_helper.from_array(
        np.zeros((1, 1), np.int64), "position_ids"))
    with pytest.raises(DecoderError, match="no position_ids input"):
        CausalLM(without)
    # no cache at all
    plain = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])]))
    with pytest.raises(DecoderError, match="found no KV cache"):
        CausalLM(plain)
    # not a model at all
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07junk" * 10)
    with pytest.raises(DecoderError, match="cannot read"):
        CausalLM(tmp_path / "junk.onnx")
    with pytest.raises(DecoderError, match="cannot read"):
        CausalLM(tmp_path / "missing.onnx")


def _onnxruntime_greedy(path, prompt: np.ndarray, new_tokens: int, optimize: bool = True
                        ) -> list[int]:
    """Greedy tokens of onnxruntime's own loop on a decoder of `_model("llama")`'s geometry
    (`optimize=False`: without its graph rewrites, which quantize the activations of a
    MatMul of DequantizeLinear weights to int8)."""
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options)
    tokens = list(prompt[0])
    past = {v.name: np.zeros((1, 2, 0, 16), np.float32) for v in session.get_inputs()
            if v.name.startswith("past")}
    names = [o.name for o in session.get_outputs()]
    for _ in range(new_tokens):
        length = len(tokens)
        new = tokens if not past or next(iter(past.values())).shape[2] == 0 else tokens[-1:]
        outputs = dict(zip(names, session.run(None, {
            "input_ids": np.array([new]), "attention_mask": np.ones((1, length), np.int64),
            "position_ids": np.arange(length - len(new), length)[None], **past})))
        tokens.append(int(outputs["logits"][0, -1].argmax()))
        past = {n.replace("present", "past_key_values"): v for n, v in outputs.items()
                if n.startswith("present")}
    return tokens


def test_dequantized_head_computes_one_row(tmp_path):
    """A head whose weights are int8 codes behind a DequantizeLinear (a constant, but not an
    initializer) still gets the logits at one position; tokens equal onnxruntime's (exact:
    its graph rewrites off)."""
    export_onnx(_model("llama"), tmp_path / "llama.onnx")
    proto = onnx.load(tmp_path / "llama.onnx")
    head = next(n for n in proto.graph.node
                if n.op_type == "MatMul" and "logits" in list(n.output) + [
                    o for m in proto.graph.node if n.output[0] in m.input for o in m.output])
    weights = next(t for t in proto.graph.initializer if t.name == head.input[1])
    values = onnx.numpy_helper.to_array(weights)
    scale = np.float32(np.abs(values).max() / 127)
    codes = np.round(values / scale).astype(np.int8)
    proto.graph.initializer.remove(weights)
    proto.graph.initializer.extend([onnx.numpy_helper.from_array(codes, "head_codes"),
                                    onnx.numpy_helper.from_array(scale, "head_scale")])
    proto.graph.node.insert(0, onnx.helper.make_node(
        "DequantizeLinear", ["head_codes", "head_scale"], [head.input[1]]))
    path = tmp_path / "llama_dq_head.onnx"
    onnx.save(proto, path)
    lm = CausalLM(path, max_length=48, chunk=8)
    assert lm.spec.logits_index is not None
    assert list(lm.generate(PROMPT, 16).tokens[0]) == _onnxruntime_greedy(path, PROMPT, 16,
                                                                           optimize=False)


def test_int4_decoder_matches_onnxruntime_with_packed_weights(tmp_path):
    """A Llama quantized by onnxruntime's MatMulNBitsQuantizer (4 bits, blocks of 32): greedy
    tokens equal onnxruntime's own greedy loop on the same model, and the compiled model holds
    the packed weights, not a float copy of them."""
    quantizer = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    pytest.importorskip("onnxruntime")
    model = _model("llama")
    export_onnx(model, tmp_path / "llama.onnx")
    q = quantizer.MatMulNBitsQuantizer(onnx.load(tmp_path / "llama.onnx"), block_size=32,
                                       is_symmetric=True)
    q.process()
    path = tmp_path / "llama_int4.onnx"
    onnx.save(q.model.model, path)
    quantized = onnx.load(path)
    assert sum(n.op_type == "MatMulNBits" for n in quantized.graph.node) == 15

    lm = CausalLM(path, max_length=48, chunk=8)
    assert lm.spec.logits_index is not None  # (the quantized head multiplies one row)
    result = lm.generate(PROMPT, 24)
    assert list(result.tokens[0]) == _onnxruntime_greedy(path, PROMPT, 24)
    # the weights the compiled decode step holds: the packed bytes (no float copy of them)
    packed = sum(t.ByteSize() for t in quantized.graph.initializer)
    step = lm.model.specialize(next(s for s in lm.model.specializations
                                    if s["input_ids"] == (1, 1)))
    from dlc.runtime.cache import _weight_bytes

    held = _weight_bytes(step)  # (compiled here, or loaded from the compile cache)
    assert 0 < held <= 1.3 * packed
    # and the prefill chunk's specialization reads the same memory: one copy for both
    chunk = lm.model.specialize(next(s for s in lm.model.specializations
                                     if s["input_ids"] == (1, 8)))
    assert {id(w) for w in chunk._function.weights} == {id(w) for w in step._function.weights}
