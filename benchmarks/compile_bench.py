"""Compile-time benchmark (issue 20): how long dlc takes to compile, and where the time goes.

    make compile-bench   (or: .venv/bin/python benchmarks/compile_bench.py [-O N ...]
                          [--chains 1000,2000,...] [--zoo resnet50,bert,...] [-k NAME]
                          [--limit S] [--breakdown] [--json FILE])

Cases: the models of `bench_models.py` (the MLP, ResNet-50 and SqueezeNet from ONNX's light
set, the PyTorch exports), synthetic chains of N elementwise nodes (Relu and Neg
alternating on a [1, 64] tensor: a graph as long as a real model's, whose ops cost nothing),
by default N = 1k, 2k, 4k, 8k, 16k, and with `--zoo` the full-size exports of
`benchmarks/zoo.py` (`build/zoo/<name>_full.onnx`, `make zoo` writes them: torchvision's
ResNet-50, transformers' BERT-base, GPT-2 small, ViT-B/16 ..., random weights), each at every
`-O` level asked (default 0 and 2).

Each case runs in a child process of its own, under a wall-clock limit (`--limit`, 300 s): a
case that does not finish is reported as such ("> 300 s"), not waited for. The child compiles
the model cold (compile cache disabled, `timings=True`: the process's peak RSS during the
compile, and the seconds of every stage and pass), writes it to a private disk cache, empties
the memory level and compiles it again (a cached compile: the shared object is loaded; this
process still holds the cold compile's model, whose weights the loaded one shares, and the
model file's digest); then a new child process compiles it once more, from the disk cache (the
cached compile of a new process: the time of its `dlc.compile` call, which imports dlc's
compiler, not of `import dlc`, nor of the Python start).
The markdown table gives, per case, the cold and both cached seconds, the cold compile's CPU
seconds (the process's and its code-generation processes', `dlc.runtime.native`: a machine
loaded by other work inflates them less than wall time), the peak RSS, the model's weight
bytes and the peak's multiple of them (the issue's bound is 3x), and the spans that took most of the cold compile; below it, per opt level, the growth exponent of the chains'
cold compile time, fitted by least squares on log(time) = k log(N) + c over the chains that
finished. `--breakdown` prints each case's whole timings table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHAINS = (1000, 2000, 4000, 8000, 16000)
ZOO_DIR = ROOT / "build" / "zoo"
ZOO = ("resnet50", "bert", "gpt2", "vit")  # (--zoo's default: the four)
CHAIN_WIDTH = 64
TOP_SPANS = 3  # the spans (stage/pass) shown per case


@dataclass
class Result:
    name: str
    opt_level: int
    nodes: int | None = None  # chains: N
    cold_s: float | None = None
    cold_cpu_s: float | None = None
    cached_s: float | None = None
    cached_new_s: float | None = None  # (the cached compile of a new process)
    peak_rss_mib: float | None = None
    weight_mib: float | None = None
    top: list[tuple[str, float]] = field(default_factory=list)  # (span, share of cold)
    table: str = ""
    status: str = "ok"  # "ok", "> N s" (limit), or the error's first line


# ----------------------------------------------------------------------------- cases


def chain(n: int):
    """An ONNX model of n nodes: Relu, Neg, Relu, ... on a [1, CHAIN_WIDTH] float input."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu" if i % 2 == 0 else "Neg", [f"t{i}"], [f"t{i + 1}"],
                              name=f"n{i}") for i in range(n)]
    graph = helper.make_graph(
        nodes, f"chain{n}", [helper.make_tensor_value_info("t0", TensorProto.FLOAT,
                                                           [1, CHAIN_WIDTH])],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, CHAIN_WIDTH])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def model_names() -> list[str]:
    from bench_models import MODELS_DIR, model_cases

    return [case.name for case in model_cases(MODELS_DIR)]


def zoo_path(name: str) -> Path:
    return ZOO_DIR / f"{name.removeprefix('zoo ')}_full.onnx"


def weight_bytes(model) -> int:
    """The bytes of a model's initializers (external data included, by their dims)."""
    import numpy as np
    import onnx
    from onnx import helper

    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model), load_external_data=False)
    return sum(int(np.prod(t.dims, dtype=np.int64))
               * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
               for t in model.graph.initializer)


def build(name: str):
    """The ONNX model of case `name` ("chain N", "zoo NAME": its file's path, or a
    bench_models case)."""
    if name.startswith("chain "):
        return chain(int(name.split()[1]))
    if name.startswith("zoo "):
        path = zoo_path(name)
        if not path.is_file():
            raise SystemExit(f"compile_bench: no {path}; `make zoo` exports it")
        return str(path)
    from bench_models import MODELS_DIR, model_cases

    for case in model_cases(MODELS_DIR):
        if case.name == name:
            return case.build()[0]
    raise SystemExit(f"compile_bench: no case {name!r}; cases: {model_names()}")


# ----------------------------------------------------------------------------- the child


def measure(name: str, opt_level: int) -> dict:
    """Cold and cached compile of case `name` in this process (the child)."""
    model = build(name)  # (before dlc is imported: the export does not count)
    import dlc
    from dlc.runtime import cache

    with cache.disabled():
        start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        compiled = dlc.compile(model, opt_level=opt_level, num_threads=1, timings=True)
        cold_s, cold_cpu_s = time.perf_counter() - start, time.process_time() - cpu
        # (and the processes that generated its machine code, dlc.runtime.native)
        cold_cpu_s += _children_cpu() - children
    timings = compiled.timings
    peaks = [r.peak_rss_mib for r in timings.records if r.peak_rss_mib is not None]
    key = dlc.compiler._cache_key(model, opt_level, None, None, 1)
    cached_s = None
    if key is not None and cache.save(key, compiled._function, seconds=float("inf")):
        cache.forget_all()
        start = time.perf_counter()
        again = dlc.compile(model, opt_level=opt_level, num_threads=1)
        cached_s = time.perf_counter() - start
        # (compiled again, not loaded, when it holds its IR: no cached figure)
        if any(getattr(again, name, None) is not None for name in ("_snapshots", "_lowered")):
            cached_s = None
    # the spans whose own time (less their children's: machine code less its weight binding,
    # a pass less its steps) was the largest
    own = {r.path: r.seconds for r in timings.records}
    for r in timings.records:
        if r.depth:
            own[r.path[:-1]] -= r.seconds
    leaves = sorted(timings.records, key=lambda r: own[r.path], reverse=True)
    total = timings.total_seconds or 1.0
    return {"cold_s": cold_s, "cold_cpu_s": cold_cpu_s, "cached_s": cached_s,
            "peak_rss_mib": max(peaks, default=None),
            "weight_mib": weight_bytes(model) / 2**20,
            "top": [("/".join(r.path), own[r.path] / total) for r in leaves[:TOP_SPANS]],
            "table": timings.table()}


def measure_cached(name: str, opt_level: int) -> dict:
    """The cached compile of case `name` in this new process (the child): its seconds, None
    when it was not a hit (compiled again: it holds its IR)."""
    model = build(name)  # (before dlc is imported)
    import dlc

    start = time.perf_counter()
    again = dlc.compile(model, opt_level=opt_level, num_threads=1)
    seconds = time.perf_counter() - start
    hit = not any(getattr(again, n, None) is not None for n in ("_snapshots", "_lowered"))
    return {"cached_new_s": seconds if hit else None}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_main(name: str, opt_level: int, cached: bool = False) -> None:
    result = measure_cached(name, opt_level) if cached else measure(name, opt_level)
    print("RESULT " + json.dumps(result), flush=True)


# ----------------------------------------------------------------------------- the parent


def run_case(name: str, opt_level: int, limit_s: float, cache_dir: Path) -> Result:
    nodes = int(name.split()[1]) if name.startswith("chain ") else None
    result = Result(name, opt_level, nodes)
    env = {**os.environ, "DLC_CACHE_DIR": str(cache_dir), "DLC_CACHE_MIN_SECONDS": "0",
           "DLC_NUM_THREADS": "1"}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name,
               "-O", str(opt_level)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit_s,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        result.status = f"> {limit_s:g} s"
        return result
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        result.status = f"failed: {tail[:120]}"
        return result
    data = json.loads(lines[-1][len("RESULT "):])
    result.cold_s, result.cached_s = data["cold_s"], data["cached_s"]
    result.cold_cpu_s, result.weight_mib = data["cold_cpu_s"], data["weight_mib"]
    result.peak_rss_mib, result.table = data["peak_rss_mib"], data["table"]
    result.top = [tuple(item) for item in data["top"]]
    if result.cached_s is not None:  # (an entry was written: a new process loads it)
        try:
            again = subprocess.run([*command, "--cached"], capture_output=True, text=True,
                                   timeout=limit_s, env=env, check=False)
            lines = [line for line in again.stdout.splitlines() if line.startswith("RESULT ")]
            if again.returncode == 0 and lines:
                result.cached_new_s = json.loads(lines[-1][len("RESULT "):])["cached_new_s"]
        except subprocess.TimeoutExpired:
            pass
    return result


def growth_exponent(points: Sequence[tuple[int, float]]) -> float | None:
    """k of the least-squares fit log(t) = k log(n) + c; None under two points."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(results: Sequence[Result]) -> str:
    lines = [("| case | -O | cold s | cold CPU s | cached s | cached s, new process | "
              "peak RSS MiB | weights MiB | peak / weights | most of the cold compile | "
              "status |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        top = ", ".join(f"{span} {share:.0%}" for span, share in r.top) or "-"
        ratio = (r.peak_rss_mib / r.weight_mib if r.peak_rss_mib and r.weight_mib
                 and r.weight_mib >= 1 else None)  # (tiny models: the runtime's own RSS)
        lines.append(f"| {r.name} | {r.opt_level} | {fmt(r.cold_s)} | {fmt(r.cold_cpu_s)} | "
                     f"{fmt(r.cached_s, 3)} | {fmt(r.cached_new_s, 3)} | "
                     f"{fmt(r.peak_rss_mib, 0)} | "
                     f"{fmt(r.weight_mib, 0)} | {fmt(ratio, 1)} | {top} | {r.status} |")
    for level in sorted({r.opt_level for r in results if r.nodes}):
        chains = [r for r in results if r.nodes and r.opt_level == level]
        done = [(r.nodes, r.cold_s) for r in chains if r.cold_s]
        k = growth_exponent(done)
        unfinished = [str(r.nodes) for r in chains if not r.cold_s]
        note = f"; not finished: N = {', '.join(unfinished)}" if unfinished else ""
        lines.append("")
        lines.append(f"Chains at -O{level}: cold compile time ~ N^{fmt(k)} "
                     f"(least squares over N = {', '.join(str(n) for n, _ in done)}){note}")
    return "\n".join(lines)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-O", "--opt-level", type=int, action="append", choices=range(4),
                        help="opt levels to compile at (repeatable; default 0 and 2)")
    parser.add_argument("--chains", default=",".join(map(str, CHAINS)),
                        help="chain lengths, comma-separated ('' for none)")
    parser.add_argument("-k", "--filter", default="",
                        help="only cases whose name contains this ('chain' for the chains)")
    parser.add_argument("--no-models", action="store_true",
                        help="no bench_models cases (chains and --zoo only)")
    parser.add_argument("--zoo", nargs="?", const=",".join(ZOO), default="",
                        help="also the full-size zoo exports build/zoo/NAME_full.onnx "
                             f"(comma-separated; alone: {','.join(ZOO)})")
    parser.add_argument("--limit", type=float, default=300.0,
                        help="seconds a case may take (its child is killed after)")
    parser.add_argument("--breakdown", action="store_true",
                        help="print each case's timings table (stage / pass / seconds)")
    parser.add_argument("--json", metavar="FILE", help="write the results to FILE")
    parser.add_argument("--child", metavar="CASE", help=argparse.SUPPRESS)
    parser.add_argument("--cached", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    sys.path[:0] = [str(HERE), str(ROOT / "examples")]
    levels = args.opt_level or [0, 2]
    if args.child:
        child_main(args.child, levels[0], args.cached)
        return 0
    names = [] if args.no_models else model_names()
    names += [f"zoo {n.strip()}" for n in args.zoo.split(",") if n.strip()]
    names += [f"chain {int(n)}" for n in args.chains.split(",") if n.strip()]
    names = [n for n in names if args.filter.lower() in n.lower()]
    results = []
    with tempfile.TemporaryDirectory(prefix="dlc-compile-bench-") as cache_dir:
        os.chmod(cache_dir, 0o700)
        for name in names:
            for level in levels:
                result = run_case(name, level, args.limit, Path(cache_dir))
                results.append(result)
                print(f"{name} -O{level}: {fmt(result.cold_s)} s cold, "
                      f"{fmt(result.cached_s, 3)} s cached, {fmt(result.cached_new_s, 3)} s "
                      f"cached in a new process, {result.status}",
                      file=sys.stderr, flush=True)
                if args.breakdown and result.table:
                    print(f"\n{name} -O{level}\n{result.table}\n", file=sys.stderr, flush=True)
    print(markdown(results))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
