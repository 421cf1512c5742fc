"""`transformers` causal LMs into the form `CausalLM` runs: exported by `torch.export` around a
flat cache and compiled by dlc (`compile_transformers`), or exported to ONNX as `optimum` writes
it (`export_onnx`)."""

from __future__ import annotations

from pathlib import Path

import onnx

from dlc.llm.decoder import CachePair, DecoderError, DecoderSpec


def is_torch_module(model) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def compile_transformers(model, batch: int, opt_level: int, num_threads: int | None):
    """A `transformers` causal LM (`GPT2LMHeadModel`, `LlamaForCausalLM`, ...) exported with
    `torch.export` around a flat cache (inputs `input_ids, attention_mask, position_ids,
    past_0..`, outputs the logits and each past's new tokens' part) and compiled by dlc: a
    `DynamicModel` and its `DecoderSpec`."""
    import torch

    from dlc.compiler import compile as dlc_compile

    layers, heads, head_dim = _cache_geometry(model)
    wrapper = _flat_cache_module()(model, layers).eval()
    example, shapes = _examples(model, batch, layers, heads, head_dim)
    try:
        with torch.no_grad():
            program = torch.export.export(wrapper, example, dynamic_shapes=shapes)
    except Exception as error:  # (torch raises many kinds)
        raise DecoderError(f"torch.export could not export {type(model).__name__} with a "
                           f"flat KV cache: {type(error).__name__}: {error}") from error
    compiled = dlc_compile(program, opt_level=opt_level, num_threads=num_threads)
    inputs, outputs = compiled.input_names, compiled.output_names
    pairs = tuple(CachePair(inputs[4 + i], outputs[1 + i], 2, f"layer {i // 2}")
                  for i in range(2 * layers))
    return compiled, DecoderSpec(inputs[0], inputs[1], inputs[2], outputs[0], pairs, inputs[3])


def export_onnx(model, path: str | Path, opset: int = 18) -> onnx.ModelProto:
    """Export a `transformers` causal LM to ONNX in the form `optimum` writes (inputs
    `input_ids`, `attention_mask`, `position_ids`, `past_key_values.N.key/value`; outputs
    `logits`, `present.N.key/value`, sizes `batch`, `sequence`, `past`, `total`), with
    torch.onnx.export; the model written to `path`, returned."""
    import torch

    layers, heads, head_dim = _cache_geometry(model)
    wrapper = _flat_cache_module()(model, layers, whole=True).eval()
    example, _ = _examples(model, 1, layers, heads, head_dim, index=False)
    cached = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"},
            **{n: {0: "batch", 2: "past"} for n in cached},
            **{n: {0: "batch", 2: "total"} for n in present}}
    with torch.no_grad():
        torch.onnx.export(wrapper, example, str(path), opset_version=opset, dynamo=False,
                          input_names=["input_ids", "attention_mask", "position_ids", *cached],
                          output_names=["logits", *present], dynamic_axes=axes)
    return onnx.load(str(path))


def _cache_geometry(model) -> tuple[int, int, int]:
    """The layers, the key/value heads and the head size of a transformers model's cache."""
    config = model.config
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    heads = (getattr(config, "num_key_value_heads", None)
             or getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None))
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    head_dim = getattr(config, "head_dim", None) or (hidden // config.num_attention_heads
                                                     if hidden else None)
    if not (layers and heads and head_dim):
        raise DecoderError(f"cannot tell the cache's layers, heads and head size from the "
                           f"config of {type(model).__name__}")
    return layers, heads, head_dim


def _examples(model, batch: int, layers: int, heads: int, head_dim: int, index: bool = True):
    """Example inputs of the flat-cache module and their dynamic sizes for torch.export."""
    import torch

    length, past = 3, 2  # (example sizes: distinct, and not 0 or 1, which torch.export fixes)
    example_batch = max(batch, 2)
    dtype = next(model.parameters()).dtype
    example = (torch.zeros(example_batch, length, dtype=torch.int64),
               torch.ones(example_batch, past + length, dtype=torch.int64),
               torch.arange(past, past + length).expand(example_batch, length),
               *([torch.tensor([length - 1])] if index else []),
               *[torch.zeros(example_batch, heads, past, head_dim, dtype=dtype)
                 for _ in range(2 * layers)])
    dynamic = torch.export.Dim.DYNAMIC
    shapes = ({0: dynamic, 1: dynamic},) * 3 + (
        tuple([None] * index + [{0: dynamic, 2: dynamic}] * (2 * layers)),)
    return example, shapes


def _flat_cache_module():
    import torch

    class FlatCache(torch.nn.Module):
        """A causal LM called with its cache as flat tensors, returning the new part."""

        def __init__(self, model, layers: int, whole: bool = False):
            super().__init__()
            self.model, self.layers, self.whole = model, layers, whole

        def forward(self, input_ids, attention_mask, position_ids, *rest):
            from transformers import DynamicCache

            keep, past = (0, rest) if self.whole else (rest[0], rest[1:])

            try:
                cache = DynamicCache(config=self.model.config)
            except TypeError:  # (transformers 4)
                cache = DynamicCache()
            for i in range(self.layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=cache, use_cache=True,
                             logits_to_keep=keep)
            new = 0 if self.whole else input_ids.shape[1]
            kept = out.past_key_values
            parts = []
            for i in range(self.layers):
                if hasattr(kept, "layers"):
                    keys, values = kept.layers[i].keys, kept.layers[i].values
                else:  # (transformers 4)
                    keys, values = kept.key_cache[i], kept.value_cache[i]
                parts += [keys[:, :, -new:], values[:, :, -new:]] if new else [keys, values]
            return (out.logits, *parts)

    return FlatCache


