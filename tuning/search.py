"""Searching a space of knobs: evolutionary, seeded by the heuristic; and random sampling.

A point is one value per knob (`families.Tunable.space`); `evaluate` measures a batch of
points (seconds, inf when one fails). Points that give the same schedule (`signature`: the
transform text) are measured once and count once: a trial is a distinct schedule.

`evolve`: the first batch is the heuristic's point and its neighbours (one knob one step
away); then each batch is children of the best points so far (rank-weighted): a crossover
of two parents (each knob from either) half the time, then one to two mutations, each a step
to a neighbouring value (knob values are ordered) or, one time in four, any value. `sample`:
distinct random points, the baseline the search must beat with the same number of trials
(`benchmarks/tune_bench.py search` measures them). `guided`: evolve's first batch, then
each batch chosen from many candidates (children and random points) by a cost model fit on
the trials so far (`CostModel`: ridge regression of the log time on the knobs' values).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

Point = dict[str, Any]
PARENTS = 4


@dataclass
class History:
    """Every measured point in order, (point, seconds)."""

    trials: list[tuple[Point, float]] = field(default_factory=list)

    def best(self) -> tuple[Point, float]:
        return min(self.trials, key=lambda t: t[1])

    def best_after(self, count: int) -> float:
        return min((s for _, s in self.trials[:count]), default=float("inf"))


class _Measured:
    """The signatures seen, and the batches measured through `evaluate`."""

    def __init__(self, evaluate: Callable[[list[Point]], list[float]],
                 signature: Callable[[Point], Hashable], history: History):
        self.evaluate, self.signature, self.history = evaluate, signature, history
        self.seen: set[Hashable] = set()

    def fresh(self, point: Point) -> bool:
        key = self.signature(point)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def run(self, points: list[Point]) -> None:
        if points:
            self.history.trials += list(zip(points, self.evaluate(points)))


def _mutate(point: Point, space: dict[str, list], rng: random.Random) -> Point:
    child = dict(point)
    knobs = [k for k, values in space.items() if len(values) > 1]
    if not knobs:
        return child
    for _ in range(rng.choice((1, 1, 2))):
        knob = rng.choice(knobs)
        values = space[knob]
        if rng.random() < 0.25:
            child[knob] = rng.choice(values)
            continue
        index = values.index(child[knob]) + rng.choice((-1, 1))
        child[knob] = values[min(max(index, 0), len(values) - 1)]
    return child


def _child(ranked: list[tuple[Point, float]], weights: list[int], space: dict[str, list],
           rng: random.Random) -> Point:
    """A child of the best points (`ranked`, drawn by `weights`): a crossover of two half
    the time, then mutated."""
    parent = rng.choices(ranked, weights)[0][0]
    if len(ranked) > 1 and rng.random() < 0.5:
        other = rng.choices(ranked, weights)[0][0]
        parent = {k: rng.choice((parent[k], other[k])) for k in parent}
    return _mutate(parent, space, rng)


def _random(space: dict[str, list], rng: random.Random) -> Point:
    return {k: rng.choice(values) for k, values in space.items()}


def _neighbours(point: Point, space: dict[str, list]) -> list[Point]:
    found = []
    for knob, values in space.items():
        index = values.index(point[knob])
        for step in (-1, 1):
            if 0 <= index + step < len(values):
                found.append({**point, knob: values[index + step]})
    return found


def evolve(space: dict[str, list], seed: Point, evaluate: Callable[[list[Point]], list[float]],
           trials: int, signature: Callable[[Point], Hashable], batch: int = 4,
           rng: random.Random | None = None,
           stop: Callable[[], bool] = lambda: False) -> History:
    """Up to `trials` distinct schedules, the heuristic's (`seed`) first (see the module)."""
    rng = rng or random.Random(0)
    history = History()
    measured = _Measured(evaluate, signature, history)
    neighbours = _neighbours(seed, space)
    first = [seed] + rng.sample(neighbours, len(neighbours))
    pending = [p for p in first if measured.fresh(p)][:max(1, min(batch, trials))]
    measured.run(pending)
    stale = 0
    while len(history.trials) < trials and stale < 50 and not stop():
        ranked = sorted(history.trials, key=lambda t: t[1])[:PARENTS]
        weights = [PARENTS - i for i in range(len(ranked))]
        children: list[Point] = []
        attempts = 0
        while len(children) < min(batch, trials - len(history.trials)) and attempts < 200:
            attempts += 1
            child = _child(ranked, weights, space, rng)
            if measured.fresh(child):
                children.append(child)
        stale = stale + 1 if not children else 0
        measured.run(children)
    return history


def features(point: Point, space: dict[str, list]) -> list[float]:
    """A point as the cost model reads it: per knob, its value's place among the knob's
    ordered values (0 to 1) and a one-hot of the value."""
    row: list[float] = [1.0]
    for knob, values in space.items():
        if len(values) < 2:
            continue
        index = values.index(point[knob])
        row.append(index / (len(values) - 1))
        row += [1.0 if i == index else 0.0 for i in range(len(values))]
    return row


class CostModel:
    """Ridge regression of log(seconds) on `features`: each knob's value adds to the log
    time (tile limits and switches act roughly multiplicatively and apart). A point that
    failed counts as a little slower than the slowest that ran."""

    def __init__(self, space: dict[str, list], ridge: float = 0.3):
        self.space, self.ridge = space, ridge
        self.weights = None

    def fit(self, trials: list[tuple[Point, float]]) -> None:
        import numpy as np

        finite = [s for _, s in trials if s != float("inf")]
        if len(finite) < 2:
            self.weights = None
            return
        worst = math.log(max(finite)) + 0.5
        x = np.array([features(p, self.space) for p, _ in trials])
        y = np.array([math.log(s) if s != float("inf") else worst for _, s in trials])
        mean = y.mean()
        penalty = self.ridge * np.eye(x.shape[1])
        penalty[0, 0] = 0.0  # (the intercept is not shrunk)
        self.weights = np.linalg.solve(x.T @ x + penalty, x.T @ (y - mean))
        self.mean = mean

    def predict(self, points: list[Point]) -> list[float]:
        import numpy as np

        if self.weights is None:
            return [0.0] * len(points)
        x = np.array([features(p, self.space) for p in points])
        return list(x @ self.weights + self.mean)


def guided(space: dict[str, list], seed: Point, evaluate: Callable[[list[Point]], list[float]],
           trials: int, signature: Callable[[Point], Hashable], batch: int = 4,
           rng: random.Random | None = None, stop: Callable[[], bool] = lambda: False,
           candidates: int = 96) -> History:
    """`evolve` with a cost model choosing what to measure: each batch, `candidates` children
    of the best points and as many random points are ranked by `CostModel` (fit on every
    trial so far), and the batch is the best predicted, one of them drawn at random among
    the rest (the model is fit on a few points: it must see outside what it believes)."""
    rng = rng or random.Random(0)
    history = History()
    measured = _Measured(evaluate, signature, history)
    first = [seed] + [_random(space, rng) for _ in range(4 * batch)]
    measured.run([p for p in first if measured.fresh(p)][:max(1, min(batch, trials))])
    model = CostModel(space)
    stale = 0
    while len(history.trials) < trials and stale < 50 and not stop():
        ranked = sorted(history.trials, key=lambda t: t[1])[:PARENTS]
        weights = [PARENTS - i for i in range(len(ranked))]
        pool: dict[Hashable, Point] = {}
        for attempt in range(4 * candidates):
            if len(pool) >= 2 * candidates:
                break
            if attempt % 2:
                point = _random(space, rng)
            else:
                point = _child(ranked, weights, space, rng)
            key = signature(point)
            if key not in measured.seen and key not in pool:
                pool[key] = point
        if not pool:
            stale += 1
            continue
        stale = 0
        model.fit(history.trials)
        keys = list(pool)
        predicted = model.predict([pool[k] for k in keys])
        order = sorted(range(len(keys)), key=lambda i: predicted[i])
        size = min(batch, trials - len(history.trials), len(keys))
        chosen = order[:max(1, size - 1)]
        rest = order[len(chosen):]
        if len(chosen) < size and rest:
            chosen.append(rng.choice(rest))
        for i in chosen:
            measured.seen.add(keys[i])
        measured.run([pool[keys[i]] for i in chosen])
    return history


def sample(space: dict[str, list], evaluate: Callable[[list[Point]], list[float]],
           trials: int, signature: Callable[[Point], Hashable], batch: int = 4,
           rng: random.Random | None = None) -> History:
    """`trials` distinct random schedules (uniform over each knob's values)."""
    rng = rng or random.Random(0)
    history = History()
    measured = _Measured(evaluate, signature, history)
    attempts = 0
    while len(history.trials) < trials and attempts < 100 * trials:
        points = []
        while len(points) < min(batch, trials - len(history.trials)) and attempts < 100 * trials:
            attempts += 1
            point = _random(space, rng)
            if measured.fresh(point):
                points.append(point)
        measured.run(points)
    return history
