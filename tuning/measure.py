"""Measuring one candidate: a one-op module compiled with given parameters, checked, timed.

`measure(task, params)` runs in a worker (a process of the local pool, or a Ray task): it
compiles the task's one-op module from the schedule on (`extract.py`) with the parameters as
an override of the op's key (the report must say the override was used: else the key of the
one-op module and the model's differ, and the measurement would be of the heuristic), runs it
on seeded random inputs, compares the result with the heuristic's (compiled once per worker
and task; a wrong result is a failed candidate, never a record: PERF.md's LLVM 22 miscompile
hit some tile shapes) and times it the way the benchmarks do (`benchmarks/bench_models.py`:
warm-up calls, then repeated calls within `seconds`), taking the fastest call (`time_calls`). Single-threaded, compile
cache off, failing schedules raise (DLC_STRICT_SCHEDULE) instead of falling back.

Pools run lists of (task, params) and return `Measurement`s in order: `ProcessPool` (spawned
processes of this machine) and `RayPool` (Ray tasks, `ray.init(address)`; "local" starts a
local Ray with `workers` CPUs). A measurement names the CPU it ran on: the record is for it.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import numpy as np

from dlc import settings
from dlc.tuning.extract import Task, linalg_before_schedule

WARMUP = 2
MIN_RUNS = 5


@dataclass(frozen=True)
class Measurement:
    seconds: float  # inf when the candidate failed
    cpu: str
    error: str | None = None


_REFERENCES: dict[str, np.ndarray] = {}  # task key -> the heuristic's output (per worker)


def _pipelines() -> dict[str, str]:
    from dlc.passes import stage_pipelines

    stages = stage_pipelines(2, 1)
    return {"dlc": "", "linalg": linalg_before_schedule(2)[1],
            "bufferized": stages["bufferized"], "llvm": stages["llvm"]}


def _compile(task: Task, params: dict | None):
    from mlir import ir

    from dlc.compiler import compile_imported
    from dlc.dialects import make_context
    from dlc.frontends.onnx_importer import ImportedModel
    from dlc.options import CompileOptions
    from dlc.runtime import cache
    from dlc.tuning import apply

    context = make_context()
    with context:
        module = ir.Module.parse(task.module)
    count = len(module.body.operations[0].arguments)
    imported = ImportedModel(module, [f"arg{i}" for i in range(count)], ["result"], 17)
    overrides = {task.key: params} if params is not None else {}
    with settings.override(STRICT_SCHEDULE=True), cache.disabled(), \
            apply.session(None, overrides) as report:
        compiled = compile_imported(context, imported,
                                    CompileOptions(num_threads=1, pipelines=_pipelines()))
    wanted = "record" if params is not None else "heuristic"
    if not any(c.key == task.key and c.source == wanted for c in report.choices):
        raise RuntimeError(f"the one-op module of {task.op} did not take its {wanted} "
                           f"schedule: {report.table()}")
    return compiled


def _inputs(compiled) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(spec.shape).astype(spec.dtype)
            for spec in compiled.signature.inputs]


def time_calls(fn, seconds: float) -> float:
    """The fastest call of `fn` after WARMUP calls, of at least MIN_RUNS calls and about
    `seconds` of calls. (The benchmarks take medians of calls alternated with their peer;
    here one schedule is timed against the others' times taken at other moments, on a
    machine whose other processes only ever add time: the minimum is the stable statistic.
    `tune.confirm` then takes medians of these, alternated.)"""
    for _ in range(WARMUP):
        fn()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while len(times) < MIN_RUNS or time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(task: Task, params: dict | None, seconds: float = 0.2) -> Measurement:
    """Compile, check and time `task` with `params` (None: the heuristic); never raises."""
    from dlc.tuning.database import cpu_id

    try:
        if task.key not in _REFERENCES:
            reference = _compile(task, None)
            _REFERENCES[task.key] = reference(*_inputs(reference))[0]
        compiled = _compile(task, params)
        inputs = _inputs(compiled)
        result = compiled(*inputs)[0]
        expected = _REFERENCES[task.key]
        scale = float(np.max(np.abs(expected))) or 1.0
        if not np.allclose(result, expected, rtol=1e-3, atol=1e-4 * scale):
            error = float(np.max(np.abs(result - expected)))
            return Measurement(float("inf"), cpu_id(), f"wrong result (max error {error:.3g})")
        return Measurement(time_calls(lambda: compiled(*inputs), seconds), cpu_id())
    except Exception as error:  # noqa: BLE001 (a candidate that fails is a failed trial)
        return Measurement(float("inf"), cpu_id(), f"{type(error).__name__}: "
                           f"{str(error).splitlines()[0] if str(error) else ''}")


class ProcessPool:
    """Measurements in `workers` spawned processes of this machine."""

    def __init__(self, workers: int = 1):
        self.workers = workers
        self._executor = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))

    def map(self, jobs: list[tuple[Task, dict | None]]) -> list[Measurement]:
        futures = [self._executor.submit(measure, task, params) for task, params in jobs]
        return [f.result() for f in futures]

    def close(self) -> None:
        self._executor.shutdown(cancel_futures=True)


class RayPool:
    """Measurements as Ray tasks (one CPU each) on the cluster at `address`; "local" starts
    a local Ray instance of `workers` CPUs (shut down by `close`)."""

    def __init__(self, address: str = "local", workers: int = 2):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--ray-address needs Ray: pip install 'dlc[tune]' (or ray)"
                               ) from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address == "local":
                ray.init(num_cpus=workers, **options)
            else:
                ray.init(address=address, **options)
        self.workers = int(ray.cluster_resources().get("CPU", workers))
        self._remote = ray.remote(num_cpus=1)(measure)
        self._tasks: dict[str, Any] = {}  # key -> the task's object ref (put once)

    def map(self, jobs: list[tuple[Task, dict | None]]) -> list[Measurement]:
        refs = []
        for task, params in jobs:
            if task.key not in self._tasks:
                self._tasks[task.key] = self._ray.put(task)
            refs.append(self._remote.remote(self._tasks[task.key], params))
        return self._ray.get(refs)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
