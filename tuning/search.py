"""Searching a space of knobs: evolutionary, seeded by the heuristic; and random sampling.

A point is one value per knob (`families.Tunable.space`); `evaluate` measures a batch of
points (seconds, inf when one fails). Points that give the same schedule (`signature`: the
transform text) are measured once and count once: a trial is a distinct schedule.

`evolve`: the first batch is the heuristic's point and its neighbours (one knob one step
away); then each batch is children of the best points so far (rank-weighted): a crossover
of two parents (each knob from either) half the time, then one to two mutations, each a step
to a neighbouring value (knob values are ordered) or, one time in four, any value. `sample`:
distinct random points, the baseline the search must beat with the same number of trials
(`benchmarks/tune_search.py` measures both).
"""

from __future__ import annotations

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
            parent = rng.choices(ranked, weights)[0][0]
            if len(ranked) > 1 and rng.random() < 0.5:
                other = rng.choices(ranked, weights)[0][0]
                parent = {k: rng.choice((parent[k], other[k])) for k in parent}
            child = _mutate(parent, space, rng)
            if measured.fresh(child):
                children.append(child)
        stale = stale + 1 if not children else 0
        measured.run(children)
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
            point = {k: rng.choice(values) for k, values in space.items()}
            if measured.fresh(point):
                points.append(point)
        measured.run(points)
    return history
