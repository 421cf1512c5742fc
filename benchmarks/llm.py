"""Language-model inference (issue 26): prefill and decode tokens/s of dlc.CausalLM beside
onnxruntime on the same ONNX models and beside eager PyTorch, in one process.

    .venv/bin/python benchmarks/llm.py                      # GPT-2 small and a Llama, 1 thread
    .venv/bin/python benchmarks/llm.py --models gpt2 --threads 1 2 --prefill 128 1024 \\
        --past 128 1024
    .venv/bin/python benchmarks/llm.py --tiny               # 2-layer models: a smoke run

The models are built from `transformers` configs (random weights, no download): GPT-2 small
(12 layers, hidden 768) and a Llama of the same size (12 layers, hidden 768, 12 heads, 4 key-value
heads, MLP 2048, vocabulary 32,000), exported by `dlc.llm.export_onnx` (optimum's form) into
build/llm/. Prefill of P tokens: one call on a P-token prompt (onnxruntime and PyTorch with an
empty past; dlc a chunk at a time). Decode at past N: one token after N cached tokens, the
median of 4 x `--repeat` steps; the three peers' calls are interleaved (dlc's cache capacity is N + 64, as for a user generating 64 tokens
after N). The ratio columns are dlc's time over the peer's (below 1: dlc is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT.parent))

import onnxruntime as ort
import torch
import transformers

from dlc.llm import CausalLM, export_onnx
from dlc.runtime import cache

CONFIGS = {
    "gpt2": lambda tiny: transformers.GPT2Config(
        n_layer=2 if tiny else 12, n_embd=128 if tiny else 768, n_head=4 if tiny else 12,
        vocab_size=1000 if tiny else 50257, n_positions=2048),
    "llama": lambda tiny: transformers.LlamaConfig(
        num_hidden_layers=2 if tiny else 12, hidden_size=128 if tiny else 768,
        intermediate_size=256 if tiny else 2048, num_attention_heads=4 if tiny else 12,
        num_key_value_heads=2 if tiny else 4, vocab_size=1000 if tiny else 32000,
        max_position_embeddings=4096),
}


def int4(path: Path) -> Path:
    """The model with its MatMuls quantized by onnxruntime's MatMulNBitsQuantizer (4 bits,
    symmetric, blocks of 32: what onnxruntime's int4 exports hold)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    out = path.with_name(path.stem + "_int4.onnx")
    if not out.exists():
        import onnx

        quantizer = MatMulNBitsQuantizer(onnx.load(str(path)), block_size=32, is_symmetric=True)
        quantizer.process()
        onnx.save(quantizer.model.model, str(out))
    return out


def build(kind: str, tiny: bool):
    torch.manual_seed(0)
    config = CONFIGS[kind](tiny)
    model = (transformers.GPT2LMHeadModel(config) if kind == "gpt2"
             else transformers.LlamaForCausalLM(config)).eval()
    folder = ROOT / "build" / "llm"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kind}{'_tiny' if tiny else ''}.onnx"
    if not path.exists():
        export_onnx(model, path)
    return model, path


def median_seconds(calls, repeat: int) -> list[float]:
    """The median time of each call, the calls interleaved (a slow spell of a shared machine
    falls on all of them, not on one)."""
    for call in calls:
        call()
    times = [[] for _ in calls]
    for _ in range(repeat):
        for call, spent in zip(calls, times):
            start = time.perf_counter()
            call()
            spent.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def ort_feeds(session, length: int, past: int, rng) -> dict:
    feeds = {}
    for value in session.get_inputs():
        if value.name == "input_ids":
            feeds[value.name] = rng.integers(0, 100, (1, length)).astype(np.int64)
        elif value.name == "attention_mask":
            feeds[value.name] = np.ones((1, past + length), np.int64)
        elif value.name == "position_ids":
            feeds[value.name] = np.arange(past, past + length, dtype=np.int64)[None]
        else:
            shape = [1 if d == "batch" else past if d == "past" else d for d in value.shape]
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def torch_call(model, feeds: dict):
    from transformers import DynamicCache

    past = [torch.from_numpy(v) for k, v in feeds.items() if k.startswith("past_key_values")]

    def call():
        try:
            cache = DynamicCache(config=model.config)
        except TypeError:
            cache = DynamicCache()
        for i in range(len(past) // 2):
            cache.update(past[2 * i], past[2 * i + 1], i)
        with torch.no_grad():
            model(input_ids=torch.from_numpy(feeds["input_ids"]),
                  attention_mask=torch.from_numpy(feeds["attention_mask"]),
                  position_ids=torch.from_numpy(feeds["position_ids"]), past_key_values=cache)
    return call


def fresh() -> None:
    """Drop the compiled models of the cases before (the compile cache's memory level keeps
    32 of them: GPT-2's would fill the machine's memory)."""
    import gc

    cache.forget_all()
    gc.collect()


def run(args) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for kind in args.models:
        model, path = build(kind, args.tiny)
        if args.int4:
            path = int4(path)
        for threads in args.threads:
            torch.set_num_threads(threads)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            for prompt in args.prefill:
                feeds = ort_feeds(session, prompt, 0, rng)
                fresh()
                lm = CausalLM(path, max_length=prompt + 64, chunk=args.chunk,
                              num_threads=threads)
                tokens = feeds["input_ids"]
                start = time.perf_counter()
                lm.prefill(tokens)
                compile_seconds = time.perf_counter() - start
                rows.append(row(kind, threads, f"prefill {prompt}", prompt, *median_seconds(
                    [lambda lm=lm, tokens=tokens: lm.prefill(tokens),
                     lambda session=session, feeds=feeds: session.run(None, feeds),
                     torch_call(model, feeds)], args.repeat), compile_seconds))
                print(format_row(rows[-1]), file=sys.stderr, flush=True)
            for past in args.past:
                feeds = ort_feeds(session, 1, past, rng)
                fresh()
                lm = CausalLM(path, max_length=past + 64, chunk=args.chunk,
                              num_threads=threads)
                start = time.perf_counter()
                lm.prefill(np.zeros((1, 1), np.int64))  # (compiles the chunk)
                lm.cache.length = past  # (as after a prompt of `past` tokens)
                token = np.array([1])

                def step(lm=lm, past=past, token=token):
                    lm.cache.length = past  # (each step at past N)
                    lm.step(token)
                step()
                compile_seconds = time.perf_counter() - start
                rows.append(row(kind, threads, f"decode at {past}", 1, *median_seconds(
                    [step, lambda session=session, feeds=feeds: session.run(None, feeds),
                     torch_call(model, feeds)],
                    args.repeat * 4), compile_seconds))
                print(format_row(rows[-1]), file=sys.stderr, flush=True)
    return rows


def row(kind, threads, what, tokens, dlc_s, ort_s, torch_s, compile_s) -> dict:
    return {"model": kind + (" int4" if ARGS.int4 else ""), "threads": threads, "what": what, "tokens": tokens,
            "dlc_tokens_per_s": tokens / dlc_s, "ort_tokens_per_s": tokens / ort_s,
            "torch_tokens_per_s": tokens / torch_s, "dlc/ort": dlc_s / ort_s,
            "dlc/torch": dlc_s / torch_s, "compile_s": compile_s}


ARGS = argparse.Namespace(int4=False)

HEADER = ("| model | threads | case | dlc tokens/s | onnxruntime | PyTorch | dlc/ort time "
          "| dlc/torch time |\n|---|---:|---|---:|---:|---:|---:|---:|")


def format_row(r: dict) -> str:
    return (f"| {r['model']} | {r['threads']} | {r['what']} | {r['dlc_tokens_per_s']:.1f} | "
            f"{r['ort_tokens_per_s']:.1f} | {r['torch_tokens_per_s']:.1f} | {r['dlc/ort']:.2f} | "
            f"{r['dlc/torch']:.2f} |")


def resident(path: Path, max_length: int, chunk: int, threads: int) -> dict:
    """Memory of a CausalLM on `path` in a new process (its compiled specializations from
    the disk cache when an earlier run compiled them): MB of the weights (the ONNX model's
    initializers: int4 ones packed), of the KV cache, the process's resident growth from
    before the CausalLM (dlc's libraries loaded by a first compile) to after a prefill and a
    decode step (freed memory returned first:
    malloc_trim), the part of it that is the ONNX model the CausalLM keeps to specialize
    (its initializers), and the peak."""
    import json
    import subprocess

    out = subprocess.run([sys.executable, __file__, "--resident", str(path), str(max_length),
                          str(chunk), str(threads)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the memory measurement failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _resident_child(path: str, max_length: int, chunk: int, threads: int) -> None:
    import ctypes
    import gc
    import json

    import onnx

    def rss_mb() -> float:
        gc.collect()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
        return 0.0

    from onnx import TensorProto, helper

    import dlc

    weights = sum(t.ByteSize() for t in onnx.load(path).graph.initializer) / 2**20
    # (dlc's own memory first: its libraries and passes, loaded by a first compile)
    dlc.compile(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "warm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])))(np.ones(4, np.float32))

    def generate() -> tuple[CausalLM, float]:
        start = rss_mb()
        lm = CausalLM(path, max_length=max_length, chunk=chunk, num_threads=threads)
        lm.prefill(np.ones((1, 3), np.int64))
        lm.step(np.array([1]))
        return lm, rss_mb() - start

    # once to fill the disk cache (or find it filled), then measured as a user's process that
    # loads the compiled model finds it: from the disk
    lm, cold = generate()
    del lm
    cache.forget_all()
    lm, grown = generate()
    peak = next(int(line.split()[1]) / 1024 for line in Path("/proc/self/status").read_text(
        ).splitlines() if line.startswith("VmHWM"))
    print(json.dumps({"weights_mb": weights, "cache_mb": lm.cache.nbytes / 2**20,
                      "resident_mb": grown, "first_mb": cold, "source_mb": weights,
                      "peak_mb": peak}))


MEMORY_HEADER = ("| model | weights MB | KV cache MB | resident MB | of it the ONNX source | "
                 "resident - source, / (weights + cache) | first CausalLM MB | peak MB |\n"
                 "|---|---:|---:|---:|---:|---:|---:|---:|")


def format_memory(kind: str, m: dict) -> str:
    compiled = m["resident_mb"] - m["source_mb"]
    return (f"| {kind} | {m['weights_mb']:.0f} | {m['cache_mb']:.1f} | {m['resident_mb']:.0f} | "
            f"{m['source_mb']:.0f} | {compiled:.0f}, "
            f"{compiled / (m['weights_mb'] + m['cache_mb']):.2f} | {m['first_mb']:.0f} | "
            f"{m['peak_mb']:.0f} |")


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--resident":
        _resident_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["gpt2", "llama"], choices=CONFIGS)
    parser.add_argument("--threads", nargs="+", type=int, default=[1])
    parser.add_argument("--prefill", nargs="*", type=int, default=[128, 1024])
    parser.add_argument("--past", nargs="*", type=int, default=[128, 1024])
    parser.add_argument("--chunk", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="2-layer models (a smoke run)")
    parser.add_argument("--int4", action="store_true",
                        help="the MatMuls quantized to 4 bits (MatMulNBits) for dlc and "
                             "onnxruntime; PyTorch stays float32")
    parser.add_argument("--memory", action="store_true",
                        help="also measure each model's resident memory in a new process "
                             "(after the timings: its specializations then come from the disk "
                             "cache)")
    args = parser.parse_args()
    global ARGS
    ARGS = args
    os.environ.setdefault("KMP_BLOCKTIME", "0")
    rows = run(args)
    print(HEADER)
    for r in rows:
        print(format_row(r))
    if args.memory:
        print()
        print(MEMORY_HEADER)
        for kind in args.models:
            path = build(kind, args.tiny)[1]
            path = int4(path) if args.int4 else path
            capacity = max(args.past or args.prefill or [1024]) + 64
            memory = resident(path, capacity, args.chunk, args.threads[0])
            print(format_memory(kind + (" int4" if args.int4 else ""), memory), flush=True)


if __name__ == "__main__":
    main()
