"""`dlc fuzz`: a differential fuzzer, dlc at -O0 and -O3 against onnxruntime on random graphs.

    dlc fuzz [-n COUNT] [--seed S] [-j JOBS] [--max-depth D] [--out DIR] [--timeout SECONDS]
             [--index-values [FRACTION]] [--mutate [FRACTION]]

Contract:
- Case `i` of seed `s` is a random valid ONNX graph (opset 18) drawn from
  `numpy.random.default_rng([s, i])`: the same seed and index give the same graph on any machine.
  A graph chains 1 to `max_depth` steps over a pool of values (graph inputs of rank 1 to 4,
  float32, float64, int32 or int64): elementwise unary and binary ops with broadcasting,
  MatMul/Gemm, Conv/pooling, reductions, Softmax, Transpose/Reshape/Concat/Slice/Flatten/
  Unsqueeze/Expand/Pad, Cast, comparisons and Where, Clip. Values stay finite by construction
  (Exp, Sin and Cos of a Tanh, Log of |x|+1, divisors away from zero, comparisons and rounding
  only on exact values) so that a mismatch means a bug, not a rounding tie.
- Each case runs in a worker process (`python -m dlc.testing.fuzz --worker`), so a case that kills
  the process (a signal) is recorded as `crash` and one that runs past `--timeout` as `hang`;
  the worker is restarted and the run goes on. Outcomes: pass, mismatch (dlc's output differs
  from onnxruntime's beyond tolerance), error (dlc raised on a valid model), crash, hang, and
  skip (onnxruntime itself refused the graph: no oracle; counted apart).
- Two more modes, each a fraction of the cases (`case_mode`: drawn per case from the seed, so
  a case replays alone; the flag without a value makes every case of that mode):
  `--index-values` (`fuzz_index.py`): gathers and scatters whose indices are runtime inputs,
  in range and out of range; dlc must answer like onnxruntime or refuse like it
  (`IndexOutOfRangeError`). `--mutate` (`fuzz_mutate.py`): invalid mutants of the graphs;
  dlc must refuse them with a DlcError that names what is wrong, or answer like onnxruntime.
  Their failures: internal (an exception that is no DlcError), vague (a DlcError naming
  nothing), accepted (dlc ran a model onnxruntime and the checker refuse). The summary counts
  the calls compared and refused (index values) and the verdicts per mutation category.
- The worker reports its phase ("onnxruntime", "dlc") before each: a death while onnxruntime
  runs (it segfaults on some mutants) is a skip, not a crash of dlc.
- Every failure is saved as `<out>/<seed>-<index>[-<mode>]-<status>.onnx` with its inputs
  (`.npz`; `name@k` for feed k of several), what failed (`.txt`) and its mode (`.json`, for
  `--replay`), after greedy minimization (graphs and index values): a node is dropped (its
  outputs become graph inputs) as long as the case still fails the same way.
- Exit status 0 when every case passes or is skipped, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import onnx
from onnx import helper

from dlc.testing.fuzz_graphs import (  # noqa: F401 (fuzz_index and the tests use these names)
    F32,
    F64,
    FLOATS,
    GENERATORS,
    I32,
    I64,
    INTS,
    OPSET,
    PERIODIC,
    Builder,
    Value,
    generate,
    make_model,
    random_shape,
)

# ============================================================================= one case


TOLERANCES = {F32: (1e-3, 1e-4), F64: (1e-7, 1e-9)}


def compare(got: np.ndarray, want: np.ndarray, computed_in=None) -> str | None:
    """Why `got` is not `want` (dtype, shape, values beyond tolerance), or None.

    `computed_in` is the least precise float type the value went through (float32 for a
    float32 MatMul cast to float64): its tolerance applies."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype not in TOLERANCES:
        bad = np.flatnonzero(got != want)
        return None if bad.size == 0 else f"{bad.size} of {want.size} elements differ"
    rtol, atol = TOLERANCES[computed_in if computed_in in TOLERANCES else want.dtype]
    scale = max(1.0, float(np.max(np.abs(want), initial=0, where=np.isfinite(want))))
    close = np.isclose(got, want, rtol=rtol, atol=atol * scale, equal_nan=True)
    if close.all():
        return None
    error = float(np.max(np.abs(got.astype(np.float64) - want)[~close]))
    return f"{np.count_nonzero(~close)} of {want.size} elements differ, max abs error {error:.3g}"


def uses_float32(model: onnx.ModelProto) -> bool:
    graph, f32 = model.graph, onnx.TensorProto.FLOAT
    return (any(v.type.tensor_type.elem_type == f32 for v in graph.input) or
            any(t.data_type == f32 for t in graph.initializer) or
            any(n.op_type == "Cast" and n.attribute[0].i == f32 for n in graph.node))


def ort_session(model: onnx.ModelProto | bytes):
    """An onnxruntime session of `model` on one thread, quiet."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 4  # (no warnings about unused initializers, no error logs
    # for the calls the index-value cases expect it to refuse: the exception says it all)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def run_onnxruntime(model: onnx.ModelProto, inputs: dict) -> list[np.ndarray]:
    return ort_session(model).run(None, inputs)


def run_case(model: onnx.ModelProto, inputs: dict) -> dict:
    """The outcome of one case: {"status", "detail"} (worker side; may crash the process)."""
    import dlc

    phase("onnxruntime")
    try:
        expected = run_onnxruntime(model, inputs)
    except Exception as error:  # noqa: BLE001  (no oracle for this graph)
        return {"status": "skip", "detail": f"onnxruntime: {str(error).splitlines()[0][:200]}"}
    phase("dlc")
    computed_in = F32 if uses_float32(model) else None
    for level in (0, 3):
        try:
            outputs = dlc.compile(model, opt_level=level)(inputs)
        except Exception as error:  # noqa: BLE001  (dlc must run every valid graph it generates)
            first = (str(error).strip().splitlines() or [""])[0][:300]
            return {"status": "error", "detail": f"-O{level}: {type(error).__name__}: {first}",
                    "signature": f"error:{type(error).__name__}"}
        for output, got, want in zip(model.graph.output, outputs, expected, strict=True):
            problem = compare(got, np.asarray(want), computed_in)
            if problem:
                return {"status": "mismatch", "signature": "mismatch",
                        "detail": f"-O{level}: output '{output.name}': {problem}"}
    return {"status": "pass", "detail": ""}


_PROTOCOL: TextIO | None = None  # a worker's stream of phases and outcomes


def phase(name: str) -> None:
    """Tell the driver what the worker runs now ("onnxruntime", "dlc"): a death while the
    oracle runs (onnxruntime segfaults on some invalid models) is no crash of dlc."""
    if _PROTOCOL is not None:
        _PROTOCOL.write(json.dumps({"phase": name}) + "\n")
        _PROTOCOL.flush()


def worker() -> int:
    """Read tasks (JSON lines) on stdin, write phase lines and one outcome line per task on
    the original stdout."""
    global _PROTOCOL
    os.environ["DLC_CACHE"] = "0"  # every case compiles for real; nothing lands on disk
    out = _PROTOCOL = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the protocol
    for line in sys.stdin:
        out.write(json.dumps(run_task(json.loads(line))) + "\n")
        out.flush()
    return 0


def run_task(task: dict) -> dict:
    """The outcome of a task: a case of a mode by seed and index, or a saved one by path."""
    mode = task.get("mode", "graph")
    if mode == "index":
        from dlc.testing import fuzz_index

        if "path" in task:
            return fuzz_index.run_case(onnx.load(task["path"]), load_feeds(task["inputs"]))
        model, feeds, spoilt = fuzz_index.generate(task["seed"], task["index"],
                                                   task["max_depth"])
        return fuzz_index.run_case(model, feeds, spoilt)
    if mode == "mutate":
        from dlc.testing import fuzz_mutate

        if "path" in task:
            return fuzz_mutate.run_case(Path(task["path"]).read_bytes(),
                                        load_feeds(task["inputs"])[0], task["level"],
                                        task["names"])
        mutant = fuzz_mutate.generate(task["seed"], task["index"], task["max_depth"])
        outcome = fuzz_mutate.run_case(mutant.data, mutant.feed, mutant.level, mutant.names)
        return {**outcome, "category": mutant.category}
    if "path" in task:
        return run_case(onnx.load(task["path"]), load_feeds(task["inputs"])[0])
    return run_case(*generate(task["seed"], task["index"], task["max_depth"]))


def save_feeds(path: Path, feeds: list[dict[str, np.ndarray]]) -> None:
    """One feed as its arrays by name; several as `name@k` (k: the feed's position)."""
    if len(feeds) == 1:
        np.savez(path, **feeds[0])
        return
    np.savez(path, **{f"{name}@{k}": a for k, feed in enumerate(feeds) for name, a in
                      feed.items()})


def load_feeds(path: str | Path) -> list[dict[str, np.ndarray]]:
    """The feeds `save_feeds` wrote."""
    arrays = dict(np.load(path))
    if not arrays or not all(re.fullmatch(r".*@\d+", key) for key in arrays):
        return [arrays]
    feeds: dict[int, dict[str, np.ndarray]] = {}
    for key, array in arrays.items():
        name, k = key.rsplit("@", 1)
        feeds.setdefault(int(k), {})[name] = array
    return [feeds[k] for k in sorted(feeds)]


# ============================================================================= the driver


class Worker:
    """A worker process; `run(task)` returns its outcome, restarting it after a crash/hang."""

    def __init__(self, timeout: float, module: str = "dlc.testing.fuzz"):
        self.timeout = timeout
        self.module = module  # whose `--worker` runs the tasks
        self.process: subprocess.Popen | None = None
        self._buffer = b""  # what the worker wrote after the last line read

    def start(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            self._buffer = b""
            self.process = subprocess.Popen(
                [sys.executable, "-m", self.module, "--worker"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return self.process

    def run(self, task: dict) -> dict:
        process = self.start()
        try:
            process.stdin.write(json.dumps(task) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            return self._died(process, "dlc")
        deadline, running = time.monotonic() + self.timeout, "dlc"
        while True:
            try:
                line = self._line(process, deadline)
            except TimeoutError:
                self.stop()
                return {"status": "hang", "signature": "hang",
                        "detail": f"no result after {self.timeout:g} s (in {running})"}
            if line is None:
                return self._died(process, running)
            message = json.loads(line)
            if "status" in message:
                return message
            running = message.get("phase", running)

    def _line(self, process: subprocess.Popen, deadline: float) -> str | None:
        """The worker's next line, None once it died; TimeoutError past `deadline`. (Read from
        the descriptor: a buffered reader could hold a second line that select cannot see.)"""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([process.stdout], [], [],
                                        max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError
            chunk = os.read(process.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def _died(self, process: subprocess.Popen, running: str) -> dict:
        code = process.wait()
        self.process = None
        what = f"signal {-code}" if code < 0 else f"exit status {code}"
        if running == "onnxruntime":
            return {"status": "skip", "detail": f"onnxruntime killed the worker ({what})"}
        return {"status": "crash", "signature": "crash", "detail": f"worker died ({what})"}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


FAILURES = ("mismatch", "error", "internal", "vague", "accepted", "crash", "hang")
MODES = ("graph", "index", "mutate")


def case_mode(seed: int, index: int, index_values: float = 0.0, mutate: float = 0.0) -> str:
    """The mode of case `index`: "index" with probability `index_values`, "mutate" with
    `mutate` (both scaled down where they add up past 1), else "graph"."""
    total = index_values + mutate
    if total <= 0:
        return "graph"
    roll = np.random.default_rng([seed, index, 3]).random() * max(1.0, total)
    return "index" if roll < index_values else "mutate" if roll < total else "graph"


def prune(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop nodes, inputs and initializers that no graph output depends on."""
    graph = model.graph
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    for field_name in ("input", "initializer"):
        items = [x for x in getattr(graph, field_name) if x.name in needed]
        del getattr(graph, field_name)[:]
        getattr(graph, field_name).extend(items)
    return model


def without_node(model: onnx.ModelProto, index: int, inputs: dict,
                 rng: np.random.Generator) -> tuple[onnx.ModelProto, dict] | None:
    """`model` with node `index` removed: its outputs become graph inputs (random data)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    candidate = onnx.ModelProto()
    candidate.CopyFrom(model)
    node = candidate.graph.node[index]
    feeds = dict(inputs)
    for name in node.output:
        if name not in types:
            return None
        tensor_type = types[name].type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        shape = [d.dim_value for d in tensor_type.shape.dim]
        candidate.graph.input.append(types[name])
        feeds[name] = Builder(rng).data(shape, np.dtype(dtype))
    del candidate.graph.node[index]
    candidate = prune(candidate)
    names = {v.name for v in candidate.graph.input}
    return candidate, {n: a for n, a in feeds.items() if n in names}


def minimize(model: onnx.ModelProto, inputs: dict, signature: str, worker: Worker,
             folder: Path, mode: str = "graph") -> tuple[onnx.ModelProto, dict, dict | None]:
    """Greedily drop nodes while the case still fails with the same signature."""
    rng = np.random.default_rng(0)
    model, last = prune(model), None
    index = len(model.graph.node) - 1
    while index >= 0 and len(model.graph.node) > 1:
        candidate = without_node(model, index, inputs, rng)
        index -= 1
        if candidate is None:
            continue
        path, data = folder / "candidate.onnx", folder / "candidate.npz"
        onnx.save(candidate[0], path)
        np.savez(data, **candidate[1])
        outcome = worker.run({"path": str(path), "inputs": str(data), "mode": mode})
        if outcome.get("signature") == signature:
            model, inputs, last = candidate[0], candidate[1], outcome
            index = min(index + 1, len(model.graph.node) - 1)
    return model, inputs, last


def save_failure(seed: int, index: int, outcome: dict, args, worker: Worker,
                 mode: str = "graph") -> Path:
    """Save case `index` as `<out>/<seed>-<index>[-<mode>]-<status>.onnx` with its feeds
    (.npz), what failed (.txt) and how to replay it (.json), minimized where it can be."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "" if mode == "graph" else f"-{mode}"
    stem = out / f"{seed}-{index}{tag}-{outcome['status']}"
    meta: dict = {"mode": mode}
    if mode == "mutate":  # (no minimizing: the mutant of a small graph, as it was)
        from dlc.testing import fuzz_mutate

        mutant = fuzz_mutate.generate(seed, index, args.max_depth)
        stem.with_suffix(".onnx").write_bytes(mutant.data)
        save_feeds(stem.with_suffix(".npz"), [mutant.feed])
        meta |= {"level": mutant.level, "names": mutant.names}
        note = f"mutation: {mutant.category}: {mutant.description}"
    else:
        model, feeds, note = _failing_case(seed, index, outcome, args, worker, mode, out)
        onnx.save(model, stem.with_suffix(".onnx"))
        save_feeds(stem.with_suffix(".npz"), feeds)
    stem.with_suffix(".json").write_text(json.dumps(meta))
    stem.with_suffix(".txt").write_text(
        f"seed {seed} index {index} ({mode}): {outcome['status']}: {outcome['detail']}\n"
        f"{note}\nreplay: python -m dlc.testing.fuzz --replay {stem.with_suffix('.onnx')}\n")
    return stem.with_suffix(".onnx")


def _failing_case(seed: int, index: int, outcome: dict, args, worker: Worker, mode: str,
                  out: Path) -> tuple[onnx.ModelProto, list[dict], str]:
    """A failing graph or index-value case, minimized: (model, feeds, a note on it)."""
    if mode == "index":
        from dlc.testing import fuzz_index

        model, feeds, _ = fuzz_index.generate(seed, index, args.max_depth)
    else:
        model, feed = generate(seed, index, args.max_depth)
        feeds = [feed]
    nodes = len(model.graph.node)
    work = out / f".work-{threading.get_ident()}"
    work.mkdir(exist_ok=True)
    if args.no_minimize:
        return model, feeds, f"{nodes} nodes (not minimized)"
    if len(feeds) > 1:  # minimized with the failing feed alone, if it fails alone
        onnx.save(model, work / "case.onnx")
        feed = [feeds[outcome.get("feed", 0)]]
        save_feeds(work / "case.npz", feed)
        alone = worker.run({"path": str(work / "case.onnx"), "inputs": str(work / "case.npz"),
                            "mode": mode})
        if alone.get("signature") != outcome["signature"]:
            return model, feeds, f"{nodes} nodes; fails only after the feeds before it"
        feeds = feed
    model, inputs, _ = minimize(model, feeds[0], outcome["signature"], worker, work, mode)
    ops = sorted({n.op_type for n in model.graph.node})
    return model, [inputs], (f"minimized from {nodes} to {len(model.graph.node)} nodes; "
                             f"ops: {', '.join(ops)}")


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)  # by status
    modes: Counter = field(default_factory=Counter)  # cases by mode
    calls: Counter = field(default_factory=Counter)  # index values: calls compared, refused
    categories: Counter = field(default_factory=Counter)  # mutants: (category, verdict)
    saved: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, mode: str, outcome: dict) -> None:
        self.counts[outcome["status"]] += 1
        self.modes[mode] += 1
        self.calls.update({k: outcome.get(k, 0) for k in ("compared", "refused")})
        if mode == "mutate":
            verdict = outcome.get("verdict", outcome["status"])
            self.categories[outcome.get("category", "?"), verdict] += 1

    def details(self) -> list[str]:
        """Lines on the index-value cases and mutants, for the summary."""
        lines = []
        if self.modes["index"]:
            lines.append(f"index values: {self.modes['index']} cases, "
                         f"{self.calls['compared']} calls compared with onnxruntime, "
                         f"{self.calls['refused']} refused by both (out-of-range indices)")
        if not self.modes["mutate"]:
            return lines
        lines.append(f"mutants: {self.modes['mutate']} cases")
        for category in sorted({c for c, _ in self.categories}):
            verdicts = sorted((v, n) for (c, v), n in self.categories.items() if c == category)
            lines.append(f"  {category}: " + ", ".join(f"{n} {v}" for v, n in verdicts))
        return lines


def run_jobs(args) -> Report:
    from dlc.tools import progress

    with progress.bar("fuzz", total=args.count) as advance:
        return _run_jobs(args, advance)


def _run_jobs(args, advance) -> Report:
    report = Report()
    indices = list(range(args.start, args.start + args.count))

    def job(mine: list[int]) -> None:
        worker = Worker(args.timeout)
        try:
            for index in mine:
                mode = case_mode(args.seed, index, args.index_values, args.mutate)
                task = {"seed": args.seed, "index": index, "max_depth": args.max_depth,
                        "mode": mode}
                outcome = worker.run(task)
                if mode == "mutate" and "category" not in outcome:  # (the worker died)
                    from dlc.testing import fuzz_mutate

                    mutant = fuzz_mutate.generate(args.seed, index, args.max_depth)
                    outcome["category"] = mutant.category
                saved = None
                if outcome["status"] in FAILURES:
                    try:
                        saved = save_failure(args.seed, index, outcome, args, worker, mode)
                    except Exception as error:  # noqa: BLE001  (the run goes on)
                        saved = f"(not saved: {type(error).__name__}: {error})"
                with report.lock:
                    report.add(mode, outcome)
                    if saved:
                        report.saved.append(f"{saved}: {outcome['detail']}")
                        print(f"case {index} ({mode}): {outcome['status']}: "
                              f"{outcome['detail']} -> {saved}", flush=True)
                    done = sum(report.counts.values())
                    advance(1, ", ".join(f"{n} {k}" for k, n in sorted(report.counts.items())))
                    if args.progress and done % args.progress == 0:
                        print(f"{done} cases: {dict(report.counts)}", flush=True)
        finally:
            worker.stop()

    jobs = max(1, args.jobs)
    threads = [threading.Thread(target=job, args=(indices[j::jobs],)) for j in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return report


def replay(path: str) -> int:
    """Run a saved reproducer (beside its .npz and .json) in this process; print the outcome."""
    sidecar = Path(path).with_suffix(".json")
    meta = json.loads(sidecar.read_text()) if sidecar.is_file() else {}
    outcome = run_task({**meta, "path": path, "inputs": str(Path(path).with_suffix(".npz"))})
    print(f"{outcome['status']}: {outcome['detail']}")
    return 0 if outcome["status"] in ("pass", "skip") else 1


def make_parser(add_help: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dlc fuzz", description=__doc__.split("\n")[0],
                                     add_help=add_help)
    parser.add_argument("-n", "--count", type=int, default=200, help="graphs to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--max-depth", type=int, default=20, help="most ops per graph (>= 1)")
    parser.add_argument("--out", default="fuzz-failures", help="folder of the reproducers")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per case")
    parser.add_argument("--no-minimize", action="store_true", help="save failures as found")
    parser.add_argument("--progress", type=int, default=0, metavar="N",
                        help="print the counts every N cases")
    parser.add_argument("--index-values", type=float, nargs="?", const=1.0, default=0.0,
                        metavar="FRACTION",
                        help="this fraction of the cases (all without a value) are gathers and "
                             "scatters fed runtime indices, in and out of range")
    parser.add_argument("--mutate", type=float, nargs="?", const=1.0, default=0.0,
                        metavar="FRACTION",
                        help="this fraction of the cases (all without a value) are invalid "
                             "mutants of a graph, which dlc must refuse by name")
    parser.add_argument("--replay", metavar="FILE.onnx", help="run one saved reproducer")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(make_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """`dlc fuzz` with parsed arguments (those of `make_parser`)."""
    if args.worker:
        return worker()
    if args.replay:
        return replay(args.replay)
    if args.max_depth < 1 or args.count < 0:
        raise SystemExit("dlc fuzz: error: --max-depth must be >= 1 and --count >= 0")
    if not (0 <= args.index_values <= 1 and 0 <= args.mutate <= 1):
        raise SystemExit("dlc fuzz: error: --index-values and --mutate take a fraction in [0, 1]")
    start = time.perf_counter()
    report = run_jobs(args)
    seconds = time.perf_counter() - start
    counts = ", ".join(f"{report.counts[s]} {s}" for s in ("pass", "skip", *FAILURES))
    modes = "".join(f" --{name} {value:g}" for name, value in
                    (("index-values", args.index_values), ("mutate", args.mutate)) if value)
    print(f"dlc fuzz --seed {args.seed} --start {args.start} -n {args.count} "
          f"--max-depth {args.max_depth}{modes}: {counts} in {seconds:.0f} s")
    for line in report.details():
        print(f"  {line}")
    for line in report.saved:
        print(f"  {line}")
    return 1 if any(report.counts[s] for s in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
