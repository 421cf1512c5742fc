"""The register tiles of each CPU target (`dlc.passes.codegen.target`) side by side, on this CPU.

Each case is compiled once per target (`target.use`: the tiles of that target, the object code
still for this host), then dlc's runs under each target and onnxruntime's alternate, single
thread, `--rounds` rounds of `--runs` runs each, and the minimum is kept (the machine may be
loaded: only same-process ratios mean anything). Cases: f32 MatMul with a constant weight
([128,768]x[768,768], [128,768]x[768,3072], [197,768]x[768,3072]) and any ONNX files given.

    .venv/bin/python benchmarks/cpu_target_bench.py --targets avx512,avx2 \
        build/benchmarks/models/bert.onnx

A target may also be an ad-hoc matmul tile, `MxN` (e.g. 6x16), to try other tiles, or a
target with one family's parameters taken from another, `BASE+FAMILY=OTHER` (repeatable):
`avx512+conv=avx2` is the AVX-512 target with AVX2's conv tiles. The families (`FAMILIES`):
matmul, conv (unpacked, packed and grouped convs), window (depthwise convs and pools), or a
single `CpuTarget` field (`avx512+conv_ow=avx2`), which may also be given a value
(`avx512+conv_ow=6`, `avx512+conv_widths=32/16`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

os.environ.setdefault("DLC_NUM_THREADS", "1")
os.environ["DLC_CACHE"] = "0"  # (every compile fresh)

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.passes.codegen import target

MATMULS = [(128, 768, 768), (128, 768, 3072), (197, 768, 3072)]


def matmul_model(m: int, k: int, n: int) -> onnx.ModelProto:
    weight = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(weight, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


FAMILIES = {"matmul": ("matmul_tile",),
            "conv": ("conv_widths", "conv_blocks", "conv_ow", "conv_accumulators"),
            "window": ("window_widths",)}


def chosen(name: str) -> target.CpuTarget:
    if "+" in name:
        base, *swaps = name.split("+")
        cpu = target.named(base)
        for swap in swaps:
            family, other = swap.split("=")
            if other[0].isdigit():  # (a value: 6, or 16/8 for a tuple)
                values = tuple(int(v) for v in other.split("/"))
                tuples = isinstance(getattr(cpu, family), tuple)
                changes = {family: values if tuples else values[0]}
            else:
                donor = target.named(other)
                changes = {f: getattr(donor, f) for f in FAMILIES.get(family, (family,))}
            cpu = dataclasses.replace(cpu, **changes)
        return dataclasses.replace(cpu, name=name)
    if name[0].isdigit():
        mr, nr = (int(v) for v in name.split("x"))
        return target.CpuTarget(name, 8, 16, (mr, nr))
    return target.named(name)


def feeds_of(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    feeds = {}
    for given in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in given.shape]
        if "int" in given.type:
            feeds[given.name] = rng.integers(0, 100, shape).astype(np.int64)
        else:
            feeds[given.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


CLOCK = time.perf_counter  # (--cpu-time: time.thread_time, as zoo.py's)


def best_ms(run, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = CLOCK()
        run()
        best = min(best, CLOCK() - start)
    return best * 1e3


def bench(name: str, model_bytes: bytes, targets: list[str], rounds: int, runs: int) -> str:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    feeds = feeds_of(session)
    expected = session.run(None, feeds)
    compiled = {}
    for tname in targets:
        with target.use(chosen(tname)):
            model = dlc.compile(model_bytes, num_threads=1)
        outputs = model(**feeds)
        outputs = list(outputs.values()) if isinstance(outputs, dict) else list(outputs)
        error = max(float(np.abs(np.asarray(a) - b).max()) for a, b in zip(outputs, expected,
                                                                             strict=True))
        compiled[tname] = (model, error)
    times: dict[str, list[float]] = {t: [] for t in ["ort", *targets]}
    for _ in range(rounds):
        times["ort"].append(best_ms(lambda: session.run(None, feeds), runs))
        for tname in targets:
            model = compiled[tname][0]
            times[tname].append(best_ms(lambda m=model: m(**feeds), runs))
    peer = min(times["ort"])
    cells = [f"{min(times[t]):.2f} ms {min(times[t]) / peer:.2f}x (err {compiled[t][1]:.1e})"
             for t in targets]
    return f"| {name} | {peer:.2f} ms | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", type=Path, help="ONNX files to compare too")
    parser.add_argument("--targets", default="avx512,avx2",
                        help="comma-separated: avx512, avx2, host or MxN tiles")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-matmuls", action="store_true")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by the calling thread's CPU time (a shared machine)")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.cpu_time else time.perf_counter
    targets = args.targets.split(",")
    print(f"host target: {target.host().name}")
    print("| case | onnxruntime | " + " | ".join(f"dlc {t}" for t in targets) + " |")
    print("|---|---:|" + "---:|" * len(targets))
    cases = [] if args.no_matmuls else [
        (f"MatMul [{m},{k}]x[{k},{n}]", matmul_model(m, k, n).SerializeToString())
        for m, k, n in MATMULS]
    cases += [(path.name, path.read_bytes()) for path in args.models]
    for name, data in cases:
        print(bench(name, data, targets, args.rounds, args.runs), flush=True)


if __name__ == "__main__":
    main()
