"""transformers' own `generate` with a static cache (`cache_implementation="static"`, the
recipe transformers documents for torch.compile) through `torch.compile(backend="dlc")`: the
tokens are eager PyTorch's, prefill and decode are two Dynamo graphs compiled once each (the
cache update, `index_put` on the cache buffers, is dlc's scatter), and a second generation
compiles nothing."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def test_static_cache_generate_through_torch_compile():
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=500, max_position_embeddings=256, bos_token_id=0,
        eos_token_id=0)
    model = transformers.LlamaForCausalLM(config).eval()
    prompt = torch.tensor(np.random.default_rng(1).integers(1, 500, (1, 11)))
    options = {"max_new_tokens": 24, "min_new_tokens": 24, "do_sample": False,
               "pad_token_id": 0}
    with torch.no_grad():
        expected = model.generate(prompt, **options)
        torch._dynamo.reset()
        counters.clear()
        model.forward = torch.compile(model.forward, backend="dlc")
        first = model.generate(prompt, cache_implementation="static", **options)
        graphs = counters["stats"]["unique_graphs"]
        second = model.generate(prompt, cache_implementation="static", **options)
    torch._dynamo.reset()
    assert torch.equal(first, expected) and torch.equal(second, expected)
    assert graphs == 2  # prefill and decode
    assert counters["stats"]["unique_graphs"] == graphs  # the second generation: no compile
