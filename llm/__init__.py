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

What belongs here: serving decoders (`decoder.py`: the ONNX graph's rewrites; `export.py`:
transformers models in; this module: the cache and generation). What does not: the passes
that make attention fast (`passes/graph/split_concat_matmul.py`) or the kernels.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from dlc.errors import ArgumentError, InputError
from dlc.llm.decoder import (  # noqa: F401 (dlc.llm's names)
    CachePair,
    DecoderError,
    DecoderSpec,
    _load,
    find_decoder,
    logits_at_index,
    present_as_update,
)
from dlc.llm.export import compile_transformers, export_onnx, is_torch_module  # noqa: F401


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
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                   for v in (max_length, chunk, batch)) or \
                max_length < 2 or chunk < 1 or batch < 1:
            raise ArgumentError(f"max_length ({max_length!r}) must be an integer of at least 2, "
                                f"chunk ({chunk!r}) and batch ({batch!r}) at least 1")
        self.max_length, self.chunk, self.batch = max_length, min(chunk, max_length), batch
        if is_torch_module(model):
            self.model, self.spec = compile_transformers(model, batch, opt_level, num_threads)
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
        if isinstance(max_new_tokens, bool) or \
                not isinstance(max_new_tokens, int | np.integer) or max_new_tokens < 1:
            raise ArgumentError(f"max_new_tokens must be an integer of at least 1, got "
                                f"{max_new_tokens!r}")
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
    if not (isinstance(temperature, int | float | np.number) and 0 < temperature < math.inf):
        # (NaN passed `<= 0` and made numpy's choice fail on NaN probabilities)
        raise ArgumentError(f"temperature must be a positive number, got {temperature!r}")
    k = min(top_k, logits.shape[-1])
    chosen = np.empty(len(logits), np.int64)
    for row, values in enumerate(logits.astype(np.float64)):
        top = np.argpartition(-values, k - 1)[:k]
        weights = np.exp((values[top] - values[top].max()) / temperature)
        chosen[row] = top[rng.choice(k, p=weights / weights.sum())]
    return chosen


