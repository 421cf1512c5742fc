"""Side-by-side benchmarks: dlc against onnxruntime (models) and numpy or onnxruntime (kernels).

    make bench      (or: .venv/bin/python benchmarks/bench_models.py [--threads N] [--all-threads]
                     [--repeat N] [--budget S] [--large] [--markdown] [-k NAME] [--json FILE]
                     [--chart FILE])

One process. Every case is compiled by dlc at -O2 with the compile cache disabled (the compile
time is real), run once beside its peer on the same inputs (the outputs must agree within
2e-3 of the reference's largest magnitude, else the row is marked wrong), warmed up, then dlc
and the peer are timed alternately (at most --repeat runs each, fewer when a case would take
more than --budget seconds); the table gives the median latencies, the ratio dlc / peer (lower
is better, 1.0 = parity), dlc's GFLOP/s where defined, the compile time, a cached recompile's
time (from the disk cache, memory level emptied), and the peak resident memory that dlc's
compile and runs, and the peer's session and runs, each added to the process (Linux
/proc/self/clear_refs; "-" elsewhere). A case that fails to compile or run stays in the table
with the error in its status column: nothing is dropped.

Models: the MLP example (batch 1 and 64), ResNet-50 and SqueezeNet from ONNX's light set with
random weights (`light_models.py`), ResNet-18, MobileNetV2 and a BERT-style encoder exported
from PyTorch (`torch_models.py`; the files are cached in build/benchmarks). Kernels:
`bench_kernels.py`. Threads: `--threads N` (default 1) sets OpenBLAS's and onnxruntime's
thread count, and dlc's `num_threads` where `dlc.compile` has that option; `--all-threads` adds
a table of the selected models at 1 and at all cores' threads (the speed-up of threads, side
by side: dlc's two builds timed alternately, then onnxruntime's two sessions).
"""

from __future__ import annotations

import os
import sys


def threads_argument(argv: list[str]) -> int:
    """--threads N from the command line, read before numpy loads OpenBLAS."""
    for i, arg in enumerate(argv):
        if arg.startswith("--threads="):
            return int(arg.partition("=")[2])
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
    return 1


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads_argument(sys.argv)))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads_argument(sys.argv)))

import argparse
import ctypes
import datetime
import gc
import importlib.util
import inspect
import platform
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "examples")]
from bench_kernels import KernelCase, kernel_cases
from bench_report import Row, ScalingRow, scaling_table, table, write_chart, write_json
from make_mlp import make_mlp

import dlc
from dlc.runtime import cache

MODELS_DIR = ROOT / "build" / "benchmarks"
TOLERANCE = 2e-3  # of the reference output's largest magnitude
PROCESS_PEAK_MIB = 0.0  # the process's peak RSS before the last reset_peak_memory


@dataclass
class Settings:
    threads: int = 1
    repeat: int = 50  # timed runs per side, at most
    budget_s: float = 10.0  # timing seconds per case, about


@dataclass
class Case:
    name: str
    group: str  # "model", "zoo" (--zoo) or "kernel"
    build: Callable[[], tuple[onnx.ModelProto, list[np.ndarray] | None]]  # None: random inputs
    numpy_peer: Callable[[list[np.ndarray]], np.ndarray] | None = None  # None: onnxruntime
    flops: float | None = None


# ----------------------------------------------------------------------------- cases


def model_cases(models_dir: Path, zoo: bool = False) -> Iterator[Case]:
    for batch in (1, 64):
        yield Case(f"MLP 784-256-256-10, batch {batch}", "model",
                   lambda b=batch: (make_mlp(batch=b), None))

    def light(name: str):
        from light_models import light_model

        return onnx.load(light_model(name, models_dir)), None

    def exported(name: str):
        from torch_models import exported_model

        return onnx.load(exported_model(name, models_dir)), None

    yield Case("ResNet-50 (light, random weights)", "model", lambda: light("resnet50"))
    yield Case("SqueezeNet 1.0 (light, random weights)", "model", lambda: light("squeezenet"))
    yield Case("ResNet-18 (PyTorch export)", "model", lambda: exported("resnet18"))
    yield Case("MobileNetV2 (PyTorch export)", "model", lambda: exported("mobilenet_v2"))
    yield Case("BERT encoder 2x256, seq 128 (PyTorch export)", "model",
               lambda: exported("bert"))
    if zoo:
        from light_models import ZOO

        for name, label in ZOO.items():
            yield Case(f"{label} (light, random weights)", "zoo", lambda n=name: light(n))


def as_case(kernel: KernelCase) -> Case:
    return Case(kernel.name, "kernel", kernel.build, kernel.numpy_peer, kernel.flops)


def all_cases(large: bool, models_dir: Path, zoo: bool = False) -> list[Case]:
    return [*model_cases(models_dir, zoo), *map(as_case, kernel_cases(large))]


def selected(cases: list[Case], pattern: str) -> list[Case]:
    pattern = pattern.lower()
    return [c for c in cases if pattern in c.name.lower() or pattern == c.group]


# ----------------------------------------------------------------------------- measuring


def reset_peak_memory() -> float | None:
    """Reset the process's peak RSS (Linux); the current RSS in MiB, None where unsupported.

    Garbage is collected and freed heap memory returned to the system first, so that the next
    case's peak is not hidden by pages that an earlier case freed.
    """
    global PROCESS_PEAK_MIB
    PROCESS_PEAK_MIB = max(PROCESS_PEAK_MIB, memory_status("VmHWM") or 0.0)
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return memory_status("VmRSS")
    except OSError:
        return None


def memory_status(field: str) -> float | None:
    """A memory figure of /proc/self/status (VmRSS, VmHWM) in MiB; None where unavailable."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return None


def added_peak(baseline: float | None) -> float | None:
    peak = memory_status("VmHWM") if baseline is not None else None
    return None if peak is None else max(0.0, peak - baseline)


def dlc_options(threads: int) -> dict:
    """dlc.compile's keyword arguments: num_threads where dlc has that option."""
    return {"num_threads": threads} if dlc_has_threads() else {}


def dlc_has_threads() -> bool:
    return "num_threads" in inspect.signature(dlc.compile).parameters


def compile_timed(model: onnx.ModelProto, options: dict
                  ) -> tuple[dlc.CompiledModel, float, float | None]:
    """The compiled model, its compile time (cache off) and a cached recompile's time.

    The compiled object code is written to the disk cache under the key of a plain compile,
    the memory level is emptied, and the recompile is timed. Where dlc keys the compile
    differently (options), that recompile fills the cache and a second one is timed; None if
    even that one missed the cache.
    """
    with cache.disabled():
        start = time.perf_counter()
        compiled = dlc.compile(model, **options)
        compile_s = time.perf_counter() - start
    cache.save(cache_key(model, options), compiled._function)
    for _ in range(2):
        cache.forget_all()
        start = time.perf_counter()
        again = dlc.compile(model, **options)
        if again._lowered is None:  # (loaded from the disk cache)
            return compiled, compile_s, time.perf_counter() - start
    return compiled, compile_s, None


def cache_key(model: onnx.ModelProto, options: dict) -> str:
    """The key under which `dlc.compile(model, **options)` looks in the cache (dlc's private
    rule; a plain compile's key where that rule changed, and compile_timed then compiles twice)."""
    from dlc import compiler

    try:
        return compiler._cache_key(model, 2, None, None, **options) or ""
    except TypeError:
        return cache.model_key(model.SerializeToString(), 2, None, None)


def onnxruntime_session(model: onnx.ModelProto, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def random_inputs(compiled: dlc.CompiledModel, seed: int = 0) -> list[np.ndarray]:
    from dlc.runtime.signature import random_input  # (token ids in [0, 10) for int inputs)

    rng = np.random.default_rng(seed)
    return [random_input(spec, rng) for spec in compiled.signature.inputs]


def largest_error(results: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> str | None:
    """None if every output agrees within TOLERANCE of the reference's largest magnitude."""
    for index, (got, want) in enumerate(zip(results, expected)):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got.shape != want.shape:
            return f"wrong output {index}: shape {list(got.shape)} != {list(want.shape)}"
        scale = float(np.abs(want).max()) if want.size else 0.0
        error = float(np.abs(got - want).max()) if want.size else 0.0
        if not error <= TOLERANCE * scale + 1e-6:
            return f"wrong output {index}: max |diff| {error:.3g} (max |ref| {scale:.3g})"
    return None


SCALING_BLOCK = 4  # calls in a row per side in the threads table (the first one untimed)
# ... and in the main table with threads: the peer's spinning pool outlasts a few of dlc's calls
# (2 threads, MobileNetV2, dlc/onnxruntime: one call each 2.30, blocks of 4 1.66, of 16 1.11;
# each runtime in a loop of its own, the threads table: 1.04)
PEER_BLOCK = 16
# onnxruntime's pool threads spin 40-50 ms after its last call (this guest, 2 threads, the
# worker's CPU time sampled every 10 ms after one call or a hundred): a block of the other
# side timed inside that window ran with the second core taken. The MLP at batch 1, dlc at 2
# threads, read 0.17 ms there (its 50 rounds of blocks took 8 ms, all inside the window
# after the correctness check's one onnxruntime call), 0.016 ms after a pause.
SETTLE_S = 0.08


def settle() -> None:
    """Wait until the idle threads of the runtime that ran last have stopped spinning."""
    time.sleep(SETTLE_S)


def alternate(fns: list[Callable[[], object]], settings: Settings, block: int = 1,
              pause: bool = False) -> list[float]:
    """Median seconds of each fn, timed alternately after a warm-up.

    With block > 1 each fn runs `block` times in a row per round and the first of those calls
    is not timed: multi-threaded runtimes keep their idle threads spinning for a while after
    a call (onnxruntime's pool, OpenMP's KMP_BLOCKTIME), which on 2 cores takes the second
    core from whichever side runs next; the untimed call absorbs a short spin, and `pause`
    (sides of different runtimes with threads) waits for a long one (`settle`) before each
    block.
    """
    for fn in fns:
        fn()
    start = time.perf_counter()
    for fn in fns:
        fn()
    one_round = (time.perf_counter() - start) * block
    repeat = max(3, min(settings.repeat, int(settings.budget_s / max(one_round, 1e-9))))
    times: list[list[float]] = [[] for _ in fns]
    if pause:
        repeat = max(3, min(repeat, int(settings.budget_s / (len(fns) * SETTLE_S))))
    for _ in range(repeat):
        for fn, bucket in zip(fns, times):
            if pause:
                settle()
            for call in range(block):
                start = time.perf_counter()
                fn()
                if call or block == 1:
                    bucket.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def first_lines(error: BaseException, count: int = 3) -> str:
    text = " / ".join(line.strip() for line in str(error).splitlines()[:count] if line.strip())
    return f"{type(error).__name__}: {text}"[:400]


def measure(case: Case, settings: Settings) -> Row:
    """Compile, check and time one case beside its peer; failures become the row's status."""
    peer_name = "numpy" if case.numpy_peer else "onnxruntime"
    row = Row(case.name, case.group, peer_name, flops=case.flops)
    try:
        model, inputs = case.build()
    except Exception as error:  # noqa: BLE001 (e.g. torch, an optional extra, is missing)
        row.status = f"model not built: {first_lines(error)}"
        return row
    baseline = reset_peak_memory()
    try:
        compiled, row.compile_s, row.cached_s = compile_timed(model, dlc_options(settings.threads))
        inputs = inputs if inputs is not None else random_inputs(compiled)
        results = compiled(*inputs)
    except Exception as error:  # noqa: BLE001 (a failing case is reported, not fatal)
        row.status = f"dlc failed: {first_lines(error)}"
        return row
    row.dlc_mib = added_peak(baseline)
    baseline = reset_peak_memory()
    if case.numpy_peer:
        peer = (lambda: case.numpy_peer(inputs))
    else:
        session = onnxruntime_session(model, settings.threads)
        feed = dict(zip(compiled.input_names, inputs))
        peer = (lambda: session.run(None, feed))
    expected = peer()
    row.peer_mib = added_peak(baseline)
    expected = expected if isinstance(expected, list) else [expected]
    row.status = largest_error(results, expected) or "ok"
    # (with threads, blocks of PEER_BLOCK calls per side, the first untimed: onnxruntime's
    # pool spins after its calls and took the second core from dlc's next ones)
    block = 1 if settings.threads == 1 else PEER_BLOCK
    row.dlc_s, row.peer_s = alternate([lambda: compiled(*inputs), peer], settings, block=block,
                                      pause=settings.threads > 1)
    return row


def compiled_and_inputs(model: onnx.ModelProto, inputs: list[np.ndarray] | None, threads: int
                        ) -> tuple[dlc.CompiledModel, list[np.ndarray]]:
    with cache.disabled():
        compiled = dlc.compile(model, **dlc_options(threads))
    return compiled, inputs if inputs is not None else random_inputs(compiled)


def measure_scaling(case: Case, threads: int, settings: Settings) -> ScalingRow:
    """One model at 1 and at `threads` threads: dlc's two builds timed alternately, then
    onnxruntime's two sessions."""
    row = ScalingRow(case.name, threads)
    if not dlc_has_threads():
        row.status = "dlc has no num_threads option: not measured"
        return row
    try:
        model, inputs = case.build()
    except Exception as error:  # noqa: BLE001 (e.g. torch, an optional extra, is missing)
        row.status = f"model not built: {first_lines(error)}"
        return row
    try:
        serial, inputs = compiled_and_inputs(model, inputs, 1)
        parallel, _ = compiled_and_inputs(model, inputs, threads)
        results = parallel(*inputs)
    except Exception as error:  # noqa: BLE001 (a failing case is reported, not fatal)
        row.status = f"dlc failed: {first_lines(error)}"
        return row
    feed = dict(zip(serial.input_names, inputs))
    sessions = [onnxruntime_session(model, n) for n in (1, threads)]
    row.status = largest_error(results, sessions[1].run(None, feed)) or "ok"
    # each runtime's two builds take turns in a loop of their own: the other runtime's idle
    # threads (onnxruntime's spinning pool, OpenMP's workers) are then never on the machine
    # while a thread count is being timed (in one loop of four, ResNet-50's 2-thread speed-up
    # read 1.42-1.65x from run to run; measured alone, 1.64-1.78x)
    settle()  # (after the check's onnxruntime call)
    row.dlc_1_s, row.dlc_n_s = alternate(
        [lambda: serial(*inputs), lambda: parallel(*inputs)], settings, block=SCALING_BLOCK)
    settle()
    row.peer_1_s, row.peer_n_s = alternate(
        [lambda: sessions[0].run(None, feed), lambda: sessions[1].run(None, feed)], settings,
        block=SCALING_BLOCK)
    return row


# ----------------------------------------------------------------------------- the run


def openblas_core() -> str | None:
    """The kernel family numpy's OpenBLAS chose for this CPU (e.g. 'Haswell', 'SkylakeX'), or
    None. OpenBLAS picks it from the CPU model at load time; one it does not know gets an
    older family (AMD's Zen 5 gets 'Haswell', AVX2, at about half the AVX-512 kernel's speed;
    OPENBLAS_CORETYPE=SkylakeX set before the run picks the AVX-512 kernel)."""
    libs = Path(np.__file__).parent.parent / "numpy.libs"
    for path in sorted(libs.glob("*openblas*")):
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                     "openblas_get_corename64_", "openblas_get_corename"):
            function = getattr(library, name, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return None


def idle_share(seconds: float = 1.0) -> str:
    """The share of all CPUs idle over the next `seconds` (Linux /proc/stat; "-" elsewhere):
    where other processes keep a core busy, a parallel region waits for its thread there
    (2 threads, a softmax of four 32 x 256 parallel regions: 11 us on an idle machine, 305 us
    beside one busy process), which the load average, a minute's mean, may not show."""
    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # (total, idle + iowait)

    try:
        total, idle = sample()
        time.sleep(seconds)
        total2, idle2 = sample()
    except (OSError, ValueError, IndexError):
        return "-"
    return f"{100 * (idle2 - idle) / max(1, total2 - total):.0f} %"


def machine_note(threads: int) -> str:
    from dlc import host

    cpu = host.model_name() or platform.processor() or platform.machine()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    load += f" (CPUs idle before the run: {idle_share()})"
    dlc_threads = (f"dlc num_threads={threads}" if dlc_has_threads()
                   else "dlc single-threaded (dlc.compile has no num_threads option yet)")
    core = openblas_core()
    blas = f"OpenBLAS ({core} kernels)" if core else "OpenBLAS"
    return (f"{cpu}, {os.cpu_count()} cores, load average {load}; {threads} thread(s) for "
            f"onnxruntime and {blas}, {dlc_threads}")


@contextmanager
def private_cache() -> Iterator[None]:
    """A fresh, temporary disk cache for the cached-recompile timings; every compile written."""
    names = ("DLC_CACHE_DIR", "DLC_CACHE_MIN_SECONDS")
    previous = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="dlc-bench-cache-") as folder:
        os.environ.update(DLC_CACHE_DIR=folder, DLC_CACHE_MIN_SECONDS="0")
        try:
            yield
        finally:
            cache.forget_all()
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def measure_all_threads(cases: list[Case], settings: Settings) -> list[ScalingRow]:
    threads = os.cpu_count() or 1
    rows = []
    with private_cache():
        for case in (c for c in cases if c.group == "model"):
            rows.append(measure_scaling(case, threads, settings))
            print(f"  done: {case.name} at 1 and {threads} threads: {rows[-1].status}",
                  file=sys.stderr, flush=True)
    return rows


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of onnxruntime, OpenBLAS and (where supported) dlc")
    parser.add_argument("--repeat", type=int, default=50, help="timed runs per side, at most")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="about this many seconds of timed runs per case")
    parser.add_argument("--large", action="store_true", help="also matmul 2048^3")
    parser.add_argument("--zoo", action="store_true",
                        help="also the other 7 light models of the onnx package (AlexNet, "
                             "DenseNet-121, Inception v1/v2, ShuffleNet, VGG-19, ZFNet-512), "
                             "random weights; -k zoo runs only those")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("-k", dest="filter", default="",
                        help="only cases whose name has this (any case), or 'model'/'kernel'")
    parser.add_argument("--all-threads", action="store_true",
                        help="also time each selected model at 1 and at all cores' threads, "
                             "side by side (dlc and onnxruntime)")
    parser.add_argument("--json", type=Path, help="write the rows and the run's note as JSON")
    parser.add_argument("--chart", type=Path, help="write a bar chart of the ratios (PNG)")
    parser.add_argument("--models-dir", type=Path, default=MODELS_DIR,
                        help="where the exported and randomized models are cached")
    return parser


def run(argv: Sequence[str] | None = None) -> list[Row]:
    """Run the benchmark of the command line `argv`; print and write its results."""
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.chart and importlib.util.find_spec("matplotlib") is None:
        parser.error("--chart needs matplotlib, the bench extra: pip install -e '.[bench]'")
    settings = Settings(args.threads, args.repeat, args.budget)
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    note = machine_note(args.threads)
    print(f"# {date}; {note}", flush=True)
    cases = selected(all_cases(args.large, args.models_dir, args.zoo), args.filter)
    rows = []
    with private_cache():
        for case in cases:
            rows.append(measure(case, settings))
            print(f"  done: {case.name}: {rows[-1].status}", file=sys.stderr, flush=True)
    print(table(rows, args.markdown))
    scaling = []
    if args.all_threads:
        scaling = measure_all_threads(cases, settings)
        count = scaling[0].threads if scaling else '-'
        print(f"\nThreads: 1 and {count}, each runtime's two timed alternately\n")
        print(scaling_table(scaling, args.markdown))
    peak = max(PROCESS_PEAK_MIB, memory_status("VmHWM") or 0.0,
               resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(f"\npeak resident memory of the process: {peak:.0f} MiB; load average at the end: "
          + ", ".join(f"{x:.1f}" for x in os.getloadavg()) + f" (CPUs idle: {idle_share()})")
    command = " ".join(["benchmarks/bench_models.py", *(sys.argv[1:] if argv is None else argv)])
    meta = {"date": date, "machine": note, "command": command}
    if args.json:
        write_json(rows, meta, args.json, scaling)
    if args.chart:
        write_chart(rows, f"dlc -O2 / peer, {date}: {note}", args.chart)
    return rows


def main() -> None:
    run()


if __name__ == "__main__":
    main()
