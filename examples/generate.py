"""Text generation with dlc.CausalLM: a GPT-2 (or Llama) from a transformers config, random
weights (no download), exported to ONNX in optimum's form and run with a KV cache.

    .venv/bin/python examples/generate.py                 # a 2-layer GPT-2, 32 new tokens
    .venv/bin/python examples/generate.py --llama --layers 4 --new 64 --top-k 20

It prints the compile time, the tokens (dlc's and eager PyTorch's `generate`, which greedy
decoding must equal) and the tokens per second of prefill and decode.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
import transformers

import dlc
from dlc.llm import export_onnx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama", action="store_true", help="a Llama instead of a GPT-2")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--new", type=int, default=32, help="tokens to generate")
    parser.add_argument("--top-k", type=int, default=None, help="sample among the k likeliest")
    args = parser.parse_args()

    torch.manual_seed(0)
    if args.llama:
        config = transformers.LlamaConfig(
            num_hidden_layers=args.layers, hidden_size=128, intermediate_size=256,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, bos_token_id=0,
            eos_token_id=0)
        model = transformers.LlamaForCausalLM(config).eval()
    else:
        config = transformers.GPT2Config(n_layer=args.layers, n_embd=128, n_head=4,
                                         vocab_size=1000, bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(config).eval()
    prompt = np.random.default_rng(0).integers(1, 1000, (1, 12))

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "decoder.onnx"
        export_onnx(model, path)
        start = time.perf_counter()
        lm = dlc.CausalLM(path, max_length=prompt.shape[1] + args.new, chunk=16)
        result = lm.generate(prompt, args.new, top_k=args.top_k, seed=0)
        print(f"{lm}: first generation {time.perf_counter() - start:.1f} s "
              f"({result.compile_seconds:.1f} s compiling prefill and decode)")
        result = lm.generate(prompt, args.new, top_k=args.top_k, seed=0)  # compiled: timed
    print("dlc:    ", result.tokens[0, prompt.shape[1]:].tolist())
    if args.top_k is None:
        with torch.no_grad():
            eager = model.generate(torch.tensor(prompt), max_new_tokens=args.new,
                                   min_new_tokens=args.new, do_sample=False, pad_token_id=0)
        print("PyTorch:", eager[0, prompt.shape[1]:].tolist())
        print("same tokens:", bool(np.array_equal(result.tokens, eager.numpy())))
    print(result)


if __name__ == "__main__":
    main()
