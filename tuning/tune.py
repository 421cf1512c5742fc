"""`tune(model)`: measure candidates of each distinct tunable op, write the best as records.

The model's distinct ops (`extract.tasks`) are tuned heaviest first (count x multiply-adds);
each gets a share of the time budget in proportion to its weight (and at most `trials`
distinct schedules): the evolutionary search (`search.evolve`) from the heuristic's point,
each batch measured in parallel by the pool (`measure.py`: local processes, or Ray tasks with
`ray_address`). The best few points and the heuristic's are then measured again alternately
(`confirm`: medians, on a busy machine one measurement can be lucky); the best of those becomes
a record of the database (for the CPU it was measured on), unless the database holds a faster
one; the heuristic's own point is a record too when nothing beat it (the op is known tuned).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlc.tuning import database, families, search
from dlc.tuning.extract import Task, tasks
from dlc.tuning.measure import Measurement, ProcessPool, RayPool

CONFIRM, ROUNDS = 3, 3  # the best candidates of an op measured again, alternately (`confirm`)


@dataclass(frozen=True)
class TunedOp:
    task: Task
    default_seconds: float
    best_seconds: float
    params: dict[str, Any] | None  # the best record (None: every candidate failed)
    trials: int
    failed: int
    stored: bool

    @property
    def speedup(self) -> float:
        return self.default_seconds / self.best_seconds if self.best_seconds else 0.0

    def line(self) -> str:
        return (f"{self.task.op} x{self.task.count}: heuristic {self.default_seconds * 1e3:.3f}"
                f" ms, best {self.best_seconds * 1e3:.3f} ms ({self.speedup:.2f}x) after "
                f"{self.trials} trials ({self.failed} failed)"
                f"{'' if self.stored else ', database kept its faster record'}")


def problem_of(task: Task) -> Any:
    """The family's problem of the task's op (parsed from its one-op module)."""
    from mlir import ir

    from dlc.dialects import make_context
    from dlc.passes.linalg.schedule import Schedule, candidates
    from dlc.tuning.keys import structural_key

    with make_context():
        module = ir.Module.parse(task.module)
        defaults = Schedule()
        for op, family, problem in candidates(module.operation, defaults.min_volume,
                                              defaults.min_elements):
            tunable = families.of(family)
            if tunable is not None and structural_key(op, tunable.name) == task.key:
                return problem
    raise RuntimeError(f"the one-op module of {task.op} lost its op")


STRATEGIES = {"evolve": search.evolve, "guided": search.guided}  # (and "random": sample)


def make_pool(ray_address: str | None, workers: int | None):
    if ray_address:
        return RayPool(ray_address, workers or 2)
    return ProcessPool(workers or 1)


def tune_task(task: Task, pool, trials: int, stop: Callable[[], bool] = lambda: False,
              strategy: str = "evolve", seed: int = 0) -> tuple[search.History, list]:
    """Search the task's space; (history, measurements in the history's order)."""
    import random

    tunable = families.TUNABLES[task.family]
    problem = problem_of(task)
    space = tunable.space(problem)
    measurements: list[Measurement] = []

    def params(point: search.Point) -> dict:
        return tunable.from_point(point).as_dict()

    def evaluate(points: list[search.Point]) -> list[float]:
        done = pool.map([(task, params(p)) for p in points])
        measurements.extend(done)
        return [m.seconds for m in done]

    def signature(point: search.Point) -> str:
        return tunable.signature(problem, tunable.from_point(point))

    batch = max(2, 2 * getattr(pool, "workers", 1))
    rng = random.Random(seed)
    if strategy == "random":
        history = search.sample(space, evaluate, trials, signature, batch, rng)
    elif strategy in STRATEGIES:
        seed_point = tunable.to_point(tunable.default(problem))
        history = STRATEGIES[strategy](space, seed_point, evaluate, trials, signature, batch,
                                       rng, stop)
    else:
        raise ValueError(f"unknown search strategy {strategy!r}: "
                         f"{', '.join([*STRATEGIES, 'random'])}")
    return history, measurements


def tune(model, db: str | Path | None = None, budget_minutes: float = 30.0, trials: int = 48,
         ray_address: str | None = None, workers: int | None = None, input_shapes=None,
         log: Callable[[str], None] = lambda line: None, retune: bool = False,
         strategy: str = "evolve") -> list[TunedOp]:
    """Tune `model`'s distinct tunable ops into the database `db` (default: `default_path`).
    Ops the database has a record of for this CPU and dlc version are skipped (a layer
    shared with a model tuned before), unless `retune`."""
    path = Path(db) if db is not None else database.default_path()
    if path is None:
        raise ValueError("no tuning database: DLC_TUNING_DB is off; pass --db PATH")
    found = tasks(model, input_shapes)
    log(f"{len(found)} distinct tunable ops; database {path}")
    if not retune:
        known = {r.key for r in database.Database(path).records(database.cpu_id(),
                                                                database.version())}
        for task in found:
            if task.key in known:
                log(f"{task.op} x{task.count}: has a record (--retune to tune it again)")
        found = [t for t in found if t.key not in known]
    if not found:
        return []
    deadline = time.monotonic() + budget_minutes * 60
    pool = make_pool(ray_address, workers)
    results: list[TunedOp] = []
    try:
        for index, task in enumerate(found):
            remaining = sum(t.weight for t in found[index:]) or 1
            share = (deadline - time.monotonic()) * task.weight / remaining
            op_deadline = time.monotonic() + share
            history, measured = tune_task(task, pool, trials,
                                          lambda end=op_deadline: time.monotonic() > end,
                                          strategy)
            result = _record(task, pool, history, measured, database.Database(path))
            results.append(result)
            log(result.line())
    finally:
        pool.close()
    return results


# a record's point must beat the heuristic's by this share of its median time, else the record
# holds the heuristic's point (the op known, its schedule unchanged): timed alone, 14 of
# ResNet-50's 24 convs gained 1 % or less, and one "1.17x" was 1.00x measured again
MIN_GAIN = 0.02


def confirm(task: Task, pool, history: search.History, count: int = CONFIRM,
            rounds: int = ROUNDS) -> tuple[search.Point, float, float, str]:
    """The best `count` points of `history` and the heuristic's (its first) measured again,
    alternately, `rounds` times: (the best point by median, its median, the heuristic's
    median, the CPU). One lucky measurement on a busy machine does not make a record."""
    tunable = families.TUNABLES[task.family]
    ranked = [p for p, s in sorted(history.trials, key=lambda t: t[1]) if s < float("inf")]
    points = [history.trials[0][0]] + [p for p in ranked[:count] if p != history.trials[0][0]]
    jobs = [(task, tunable.from_point(p).as_dict()) for _ in range(rounds) for p in points]
    done = pool.map(jobs)
    medians = [statistics.median(m.seconds for m in done[i::len(points)])
               for i in range(len(points))]
    best = min(range(len(points)), key=lambda i: medians[i])
    return points[best], medians[best], medians[0], done[best].cpu


def _record(task: Task, pool, history: search.History, measured: list[Measurement],
            db: database.Database) -> TunedOp:
    tunable = families.TUNABLES[task.family]
    failed = sum(1 for m in measured if m.error is not None)
    if history.best()[1] == float("inf"):
        return TunedOp(task, history.trials[0][1], float("inf"), None, len(history.trials),
                       failed, False)
    point, best, default_seconds, cpu = confirm(task, pool, history)
    if best == float("inf"):
        return TunedOp(task, default_seconds, best, None, len(history.trials), failed, False)
    if best > default_seconds * (1 - MIN_GAIN):  # (noise: the heuristic's own point kept)
        point, best = history.trials[0][0], default_seconds
    params = tunable.from_point(point).as_dict()
    stored = db.put(database.Record(task.key, cpu, database.version(), task.family, task.op,
                                    json.dumps(params, sort_keys=True), best, default_seconds,
                                    len(history.trials)))
    return TunedOp(task, default_seconds, best, params, len(history.trials), failed, stored)
