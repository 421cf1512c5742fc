"""Text generation with a KV cache: a decoder's prefill and decode, each compiled once.

    lm = dlc.CausalLM("gpt2.onnx", max_length=1024)
    result = lm.generate(prompt_ids, max_new_tokens=64)             # greedy
    result = lm.generate(prompt_ids, 64, top_k=50, temperature=0.8, seed=0)
    result.tokens, result.decode_tokens_per_second

The model is a decoder as `optimum` and `torch.onnx.export` write it: inputs `input_ids`,
`attention_mask` (over past and new tokens), `position_ids` and a past key and value per layer
(`past_key_values.N.key`, any names), outputs the logits and a present key and value per layer,
each a `Concat` of its past input and the new tokens' keys along the sequence axis.

How it runs without a compile per token (the "static cache" of transformers, done on the
graph): the cache is caller-visible numpy buffers of `max_length` positions per layer, zeroed
once and written in place, a slot per token. The model is rewritten so that each present output
is its new tokens' part only (`present = Identity(new)`, the Concat stays inside for the
attention), and it is always called with the whole buffers as its past: the past length is
`max_length` at every step, so the shapes never change. The positions not yet written are
masked out by `attention_mask` (zeros), the new tokens' positions come from `position_ids`,
and after a call their keys and values go to the buffers at the next free slots (a copy of
the new tokens' part, never of the cache). Two specializations serve every prompt and every
step: decode (one token) and prefill chunks of `chunk` tokens (a prompt is processed a chunk
at a time; the last chunk is padded, its padding masked and overwritten later), each compiled
once, through the compile cache.

What the model must do for this to hold, and what `CausalLM` checks when it loads it: take
`attention_mask` and `position_ids` as inputs (a model that derives positions from the past
length would see `max_length`), and make its present outputs Concats of the past inputs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from dlc.errors import DlcError, InputError


class DecoderError(DlcError):
    """The model is not a decoder with a KV cache in the form `CausalLM` runs."""


@dataclass(frozen=True)
class CachePair:
    """A layer's past input and the present output that is Concat(past, new, axis)."""

    past: str
    present: str
    axis: int  # the sequence axis (non-negative)
    concat: str  # the name of the Concat node


@dataclass(frozen=True)
class DecoderSpec:
    """Which inputs and outputs of a decoder model are what."""

    input_ids: str
    attention_mask: str
    position_ids: str
    logits: str
    pairs: tuple[CachePair, ...]
    logits_index: str | None = None  # an input choosing the one position of the logits


def _producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {out: node for node in graph.node for out in node.output if out}


def _through_identities(name: str, producers: dict[str, onnx.NodeProto]) -> str:
    """The value `name` copies (through Identities and one-input Concats: exporters write
    both)."""
    while name in producers and (producers[name].op_type == "Identity" or (
            producers[name].op_type == "Concat" and len(producers[name].input) == 1)):
        name = producers[name].input[0]
    return name


def _rank(value: onnx.ValueInfoProto) -> int | None:
    tensor = value.type.tensor_type
    return len(tensor.shape.dim) if tensor.HasField("shape") else None


def find_decoder(proto: onnx.ModelProto) -> DecoderSpec:
    """The decoder's inputs, outputs and cache pairs; `DecoderError` saying what is missing."""
    graph = proto.graph
    initializers = {t.name for t in graph.initializer}
    inputs = {v.name: v for v in graph.input if v.name not in initializers}
    producers = _producers(graph)
    pairs = []
    for output in graph.output:
        node = producers.get(_through_identities(output.name, producers))
        if node is None or node.op_type != "Concat" or len(node.input) != 2:
            continue
        past = _through_identities(node.input[0], producers)
        if past not in inputs:
            continue
        rank = _rank(inputs[past])
        axis = next((a.i for a in node.attribute if a.name == "axis"), None)
        if rank is None or axis is None:
            continue
        pairs.append(CachePair(past, output.name, axis % rank, node.name or node.output[0]))
    if not pairs:
        fused = sorted({n.op_type for n in graph.node if n.op_type in (
            "Attention", "GroupQueryAttention", "MultiHeadAttention")})
        raise DecoderError(
            "found no KV cache: no graph output is a Concat of a graph input (the past) and "
            "the new keys or values; CausalLM runs decoders exported with past_key_values "
            "inputs and present outputs (optimum, torch.onnx.export, dlc.llm.export_onnx)"
            + (f"; this model's cache is inside {', '.join(fused)} nodes, which CausalLM does "
               "not rewrite yet" if fused else ""))
    cached = {p.past for p in pairs}
    presents = {p.present for p in pairs}

    def named(what: str, words: Sequence[str]) -> str:
        for name in inputs:
            if name not in cached and any(w in name for w in words):
                return name
        raise DecoderError(
            f"the model has no {what} input (an input named like {' or '.join(words)}); "
            f"CausalLM needs it to {_NEEDS[what]}; inputs: {sorted(inputs)}")

    spec_inputs = (named("input_ids", ("input_ids", "tokens")),
                   named("attention_mask", ("attention_mask",)),
                   named("position_ids", ("position_ids",)))
    others = [n for n in inputs if n not in cached and n not in spec_inputs]
    if others:
        hint = (" (optimum's merged decoder: export decoder_with_past_model.onnx, or the model "
                "with dlc.llm.export_onnx)" if "use_cache_branch" in others else "")
        raise DecoderError(f"the model has inputs CausalLM does not know how to fill: "
                           f"{others}{hint}")
    rest = [o.name for o in graph.output if o.name not in presents]
    logits = next((n for n in rest if "logits" in n), rest[0] if len(rest) == 1 else None)
    if logits is None:
        raise DecoderError(f"cannot tell the logits among the outputs {rest} (name one "
                           "'logits')")
    return DecoderSpec(*spec_inputs, logits, tuple(pairs))


_NEEDS = {
    "input_ids": "feed the tokens",
    "attention_mask": "mask the cache positions not yet written",
    "position_ids": "give each token its position (the past length it would derive it from "
                    "is the cache's capacity)",
}


def present_as_update(proto: onnx.ModelProto, spec: DecoderSpec, copy: bool = True
                      ) -> onnx.ModelProto:
    """`proto` (a copy, or itself rewritten in place with `copy=False`) whose present outputs
    are the new tokens' keys and values only: `present = Identity(new)`; the Concat keeps
    feeding the attention under another name."""
    if copy:
        proto = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = proto.graph
    producers = _producers(graph)
    outputs = {o.name: o for o in graph.output}
    for pair in spec.pairs:
        concat = producers[_through_identities(pair.present, producers)]
        renamed = concat.output[0] + "/dlc.cache_concat"
        for node in graph.node:
            for i, name in enumerate(node.input):
                if name == concat.output[0]:
                    node.input[i] = renamed
        old = concat.output[0]
        concat.output[0] = renamed
        # (the chain of Identities from the concat to the output, if any, now reads `renamed`;
        # the output itself becomes an Identity of the new part)
        chain_end = next((n for n in graph.node if pair.present in n.output), None)
        if chain_end is not None and chain_end is not concat:
            graph.node.remove(chain_end)
        graph.node.append(onnx.helper.make_node(
            "Identity", [concat.input[1]], [pair.present], name=f"dlc.cache_update/{old}"))
        shape = outputs[pair.present].type.tensor_type.shape
        if len(shape.dim) > pair.axis:
            shape.dim[pair.axis].Clear()
            shape.dim[pair.axis].dim_param = "new_tokens"
    return proto


LOGITS_INDEX = "dlc.logits_index"


def _constant_values(graph: onnx.GraphProto) -> set[str]:
    """The values computed from initializers and Constant nodes alone (a weight behind a
    DequantizeLinear, a Transpose or a Cast is one)."""
    constants = {t.name for t in graph.initializer}
    for node in graph.node:  # (in topological order, as ONNX requires)
        if node.op_type == "Constant" or (
                node.input and all(not i or i in constants for i in node.input)
                and not node.op_type.startswith("Random")):
            constants.update(node.output)
    return constants


def logits_at_index(proto: onnx.ModelProto, spec: DecoderSpec, copy: bool = True
                    ) -> tuple[onnx.ModelProto, DecoderSpec]:
    """`proto` computing the logits at one position, the input `dlc.logits_index` ([1]),
    instead of at every position (transformers' `logits_to_keep`): a prefill chunk of 128
    tokens multiplies one row by GPT-2's [768, 50257] head, not 128. Applies when the logits
    are MatMul(hidden [batch, sequence, hidden], weights) or a quantized head (MatMulNBits, or
    MatMul of constant DequantizeLinear weights), then elementwise ops with constants; the model unchanged, and the spec without the index, otherwise. A copy is
    rewritten, or `proto` itself with `copy=False`."""
    graph = proto.graph
    constants = _constant_values(graph)
    producers = _producers(graph)
    chain, node = [], producers.get(_through_identities(spec.logits, producers))
    while node is not None and node.op_type in ("Add", "Mul", "Div", "Sub") and len(
            [i for i in node.input if i not in constants]) == 1:
        chain.append(node)
        node = producers.get(next(i for i in node.input if i not in constants))
    output = next(o for o in graph.output if o.name == spec.logits)
    if (node is None or node.op_type not in ("MatMul", "MatMulNBits")
            or any(i and i not in constants for i in node.input[1:]) or _rank(output) != 3):
        return proto, spec
    if copy:
        proto = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = proto.graph
    matmul = next(n for n in graph.node if list(n.output) == list(node.output))
    gathered = matmul.input[0] + "/dlc.logits_row"
    position = list(graph.node).index(matmul)
    graph.node.insert(position, onnx.helper.make_node(
        "Gather", [matmul.input[0], LOGITS_INDEX], [gathered], axis=1,
        name="dlc.logits_row"))
    matmul.input[0] = gathered
    graph.input.append(onnx.helper.make_tensor_value_info(LOGITS_INDEX,
                                                          onnx.TensorProto.INT64, [1]))
    changed = {matmul.output[0], *(o for n in chain for o in n.output)}
    for value in [v for v in graph.value_info if v.name in changed]:
        graph.value_info.remove(value)
    shape = next(o for o in graph.output if o.name == spec.logits).type.tensor_type.shape
    shape.dim[1].Clear()
    shape.dim[1].dim_value = 1
    return proto, DecoderSpec(spec.input_ids, spec.attention_mask, spec.position_ids,
                              spec.logits, spec.pairs, LOGITS_INDEX)


@dataclass
class GenerationResult:
    """The tokens of a `generate` call (prompt and new, `[batch, length]`) and its times."""

    tokens: np.ndarray
    prompt_length: int
    prefill_seconds: float
    decode_seconds: float
    new_tokens: int
    compile_seconds: float = 0.0
    step_seconds: list[float] = field(default_factory=list, repr=False)

    @property
    def prefill_tokens_per_second(self) -> float:
        return self.prompt_length * len(self.tokens) / max(self.prefill_seconds, 1e-12)

    @property
    def decode_tokens_per_second(self) -> float:
        steps = max(self.new_tokens - 1, 0)  # (the first new token comes from the prefill)
        return steps * len(self.tokens) / max(self.decode_seconds, 1e-12)

    def __str__(self) -> str:
        return (f"{self.new_tokens} new tokens after a {self.prompt_length}-token prompt: "
                f"prefill {self.prefill_seconds * 1e3:.1f} ms "
                f"({self.prefill_tokens_per_second:.0f} tokens/s), decode "
                f"{self.decode_tokens_per_second:.1f} tokens/s")


class KVCache:
    """A decoder's key and value buffers: `[batch, ..., capacity, ...]` per past input,
    zeroed once, written a slot per token (`length` slots hold tokens)."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], axes: dict[str, int],
                 dtypes: dict[str, np.dtype]):
        self.buffers = {name: np.zeros(shape, dtypes[name]) for name, shape in shapes.items()}
        self.axes = axes
        self.length = 0

    @property
    def capacity(self) -> int:
        name = next(iter(self.buffers))
        return self.buffers[name].shape[self.axes[name]]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers.values())

    def reset(self) -> None:
        """Forget the tokens (the buffers stay; the masked slots are never read)."""
        self.length = 0

    def write(self, name: str, new: np.ndarray, count: int) -> None:
        """The first `count` new tokens' part `new` into the buffer at the next slots."""
        axis = self.axes[name]
        index = [slice(None)] * new.ndim
        index[axis] = slice(self.length, self.length + count)
        source = [slice(None)] * new.ndim
        source[axis] = slice(0, count)
        self.buffers[name][tuple(index)] = new[tuple(source)]


class CausalLM:
    """A decoder-only language model compiled by dlc, with a preallocated KV cache.

    `model`: an ONNX decoder (path, bytes or ModelProto) with past inputs and present outputs,
    or a `transformers` causal LM module (exported by `torch.export` with a flat cache, its
    `config` giving the layers and heads).
    `max_length`: the cache's capacity (prompt and new tokens). `chunk`: prefill tokens per
    call (the prefill specialization's size). `batch`: the number of sequences generated
    together (prompts of one length).
    """

    def __init__(self, model: str | Path | bytes | onnx.ModelProto, max_length: int = 1024,
                 chunk: int = 64, batch: int = 1, num_threads: int | None = None,
                 opt_level: int = 2):
        if max_length < 2 or chunk < 1 or batch < 1:
            raise ValueError(f"max_length ({max_length}) must be at least 2, chunk ({chunk}) "
                             f"and batch ({batch}) at least 1")
        self.max_length, self.chunk, self.batch = max_length, min(chunk, max_length), batch
        if _is_torch_module(model):
            self.model, self.spec = _compile_transformers(model, batch, opt_level, num_threads)
        else:
            from dlc.compiler import compile as dlc_compile

            proto = _load(model)
            spec = find_decoder(proto)
            # (rewritten in place: one copy, of a caller's ModelProto only)
            proto = present_as_update(proto, spec, copy=isinstance(model, onnx.ModelProto))
            proto, self.spec = logits_at_index(proto, spec, copy=False)
            self.model = dlc_compile(proto, opt_level=opt_level, num_threads=num_threads)
        signature = self.model.signature
        specs = {s.name: s for s in signature.inputs}
        shapes, axes, dtypes = {}, {}, {}
        for pair in self.spec.pairs:
            past = specs[pair.past]
            shape = list(past.shape)
            for i, size in enumerate(shape):
                if i == pair.axis:
                    shape[i] = max_length
                elif i == 0 and not isinstance(size, int):
                    shape[i] = batch
                elif not isinstance(size, int):
                    raise DecoderError(f"past input '{pair.past}' has the dynamic size "
                                       f"'{size}' at axis {i}: only batch (axis 0) and "
                                       f"sequence (axis {pair.axis}) may be dynamic")
            shapes[pair.past], axes[pair.past], dtypes[pair.past] = tuple(shape), pair.axis, \
                past.dtype
        self.cache = KVCache(shapes, axes, dtypes)
        self._dtypes = {s.name: s.dtype for s in signature.inputs}

    @property
    def compile_seconds(self) -> float:
        return getattr(self.model, "compile_seconds", 0.0)

    def _call(self, tokens: np.ndarray, valid: int) -> np.ndarray:
        """Run one call on `tokens` `[batch, n]` (the first `valid` real, the rest padding) at
        the cache's length; write their keys and values; the logits of the last valid token,
        `[batch, vocab]`."""
        spec, cache = self.spec, self.cache
        batch, n = tokens.shape
        start, capacity = cache.length, cache.capacity
        if start + valid > capacity:
            raise InputError(f"the KV cache holds {capacity} tokens (max_length): "
                             f"{start} + {valid} do not fit")
        mask = np.zeros((batch, capacity + n), self._dtypes[spec.attention_mask])
        mask[:, :start] = 1
        mask[:, capacity:capacity + valid] = 1
        positions = np.minimum(np.arange(start, start + n), start + valid - 1)
        feeds = {spec.input_ids: tokens.astype(self._dtypes[spec.input_ids], copy=False),
                 spec.attention_mask: mask,
                 spec.position_ids: np.broadcast_to(positions, (batch, n)).astype(
                     self._dtypes[spec.position_ids])}
        if spec.logits_index is not None:
            feeds[spec.logits_index] = np.array([valid - 1], np.int64)
        feeds.update(cache.buffers)
        outputs = dict(zip(self.model.output_names, self.model(**feeds)))
        for pair in spec.pairs:
            cache.write(pair.past, outputs[pair.present], valid)
        cache.length += valid
        logits = outputs[spec.logits]
        return logits[:, 0] if spec.logits_index is not None else logits[:, valid - 1]

    def prefill(self, prompt: np.ndarray) -> np.ndarray:
        """Forget the cache, run `prompt` (`[batch, length]` token ids) through the model a
        chunk at a time; the logits of its last token, `[batch, vocab]`."""
        prompt = np.asarray(prompt)
        if prompt.ndim == 1:
            prompt = prompt[None]
        if prompt.ndim != 2 or prompt.shape[0] != self.batch or prompt.shape[1] < 1:
            raise InputError(f"prompt must be [batch={self.batch}, length >= 1] token ids, got "
                             f"shape {list(prompt.shape)}")
        if not np.issubdtype(prompt.dtype, np.integer):
            raise InputError(f"prompt must be integer token ids, got {prompt.dtype}")
        self.cache.reset()
        logits = None
        for start in range(0, prompt.shape[1], self.chunk):
            part = prompt[:, start:start + self.chunk]
            valid = part.shape[1]
            if valid < self.chunk:  # (padded: one specialization for every chunk)
                part = np.concatenate([part, np.repeat(part[:, -1:], self.chunk - valid, 1)], 1)
            logits = self._call(part, valid)
        return logits

    def step(self, tokens: np.ndarray) -> np.ndarray:
        """One decode step: `tokens` (`[batch]`, the last chosen) in, their logits out."""
        tokens = np.asarray(tokens).reshape(self.batch, 1)
        return self._call(tokens, 1)

    def generate(self, prompt: np.ndarray, max_new_tokens: int, *, top_k: int | None = None,
                 temperature: float = 1.0, seed: int | None = None,
                 eos_token_id: int | None = None) -> GenerationResult:
        """Greedy (`top_k` None or 1) or top-k sampling (`temperature`, `seed`) of up to
        `max_new_tokens` tokens after `prompt`; stops early when every sequence gave
        `eos_token_id`."""
        prompt = np.asarray(prompt)
        prompt = prompt[None] if prompt.ndim == 1 else prompt
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if prompt.shape[-1] + max_new_tokens > self.max_length:
            raise InputError(f"a {prompt.shape[-1]}-token prompt and {max_new_tokens} new tokens"
                             f" exceed max_length {self.max_length}")
        rng = np.random.default_rng(seed)
        compiled_before = self.compile_seconds
        start = time.perf_counter()
        logits = self.prefill(prompt)
        prefill_seconds = time.perf_counter() - start
        tokens, steps = [], []
        done = np.zeros(self.batch, bool)
        decode_start = time.perf_counter()
        for i in range(max_new_tokens):
            if i:
                t = time.perf_counter()
                logits = self.step(tokens[-1])
                steps.append(time.perf_counter() - t)
            chosen = _choose(logits, top_k, temperature, rng)
            tokens.append(chosen)
            if eos_token_id is not None:
                done |= chosen == eos_token_id
                if done.all():
                    break
        decode_seconds = time.perf_counter() - decode_start
        new = np.stack(tokens, 1)
        # (a first call's compile is in its time: compile_seconds says how much)
        return GenerationResult(np.concatenate([prompt.astype(np.int64), new], 1),
                                prompt.shape[1], prefill_seconds, decode_seconds, len(tokens),
                                self.compile_seconds - compiled_before, steps)

    def __repr__(self) -> str:
        return (f"CausalLM({len(self.spec.pairs)} cached tensors, max_length={self.max_length}, "
                f"chunk={self.chunk}, batch={self.batch}, cache {self.cache.nbytes / 2**20:.1f} "
                "MiB)")


def _choose(logits: np.ndarray, top_k: int | None, temperature: float,
            rng: np.random.Generator) -> np.ndarray:
    """The next token of each row of `logits` `[batch, vocab]`."""
    if top_k is None or top_k <= 1:
        return logits.argmax(-1)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    k = min(top_k, logits.shape[-1])
    chosen = np.empty(len(logits), np.int64)
    for row, values in enumerate(logits.astype(np.float64)):
        top = np.argpartition(-values, k - 1)[:k]
        weights = np.exp((values[top] - values[top].max()) / temperature)
        chosen[row] = top[rng.choice(k, p=weights / weights.sum())]
    return chosen


def _is_torch_module(model) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def _compile_transformers(model, batch: int, opt_level: int, num_threads: int | None):
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


def _load(model: str | Path | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """The model as a ModelProto; `DecoderError` when it cannot be read as one."""
    if isinstance(model, onnx.ModelProto):
        return model
    what = "the model bytes" if isinstance(model, bytes) else f"'{model}'"
    try:
        if isinstance(model, bytes):
            return onnx.load_model_from_string(model)
        return onnx.load(str(model))
    except Exception as error:  # (protobuf's DecodeError, OSError, ...)
        raise DecoderError(f"cannot read {what} as an ONNX model: {type(error).__name__}: "
                           f"{error}") from error
