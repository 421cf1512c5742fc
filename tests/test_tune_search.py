"""The tuning searches on synthetic spaces (no compiles): each measures distinct schedules
only, at most `trials`; the cost model learns an additive cost; the guided search beats
random sampling where the space has structure."""

import math
import random
import statistics

import pytest

from dlc.tuning import search


def synthetic(seed: int, knobs: int = 8, values: int = 5, interact: float = 1.0):
    """A space of `knobs` ordered knobs and a cost: per knob a distance to its best value,
    plus a few products of two knobs (tile sizes interact), exponentiated (times are
    multiplicative); the heuristic's point in the middle."""
    r = random.Random(seed)
    space = {f"k{i}": list(range(values)) for i in range(knobs)}
    best = {k: r.randrange(values) for k in space}
    scale = {k: r.uniform(0.05, 0.4) for k in space}
    pairs = [(r.choice(list(space)), r.choice(list(space)), r.uniform(-interact, interact))
             for _ in range(4)]

    def cost(point):
        c = sum(scale[k] * abs(point[k] - best[k]) / values for k in space)
        c += sum(w * point[a] / values * point[b] / values for a, b, w in pairs)
        return math.exp(c)

    return space, {k: values // 2 for k in space}, cost


def signature(point):
    return tuple(sorted(point.items()))


def run(strategy: str, seed: int, trials: int = 16):
    space, middle, cost = synthetic(seed)
    evaluated = []

    def evaluate(points):
        evaluated.extend(points)
        return [cost(p) for p in points]

    rng = random.Random(seed)
    if strategy == "random":
        history = search.sample(space, evaluate, trials, signature, 4, rng)
    else:
        history = getattr(search, strategy)(space, middle, evaluate, trials, signature, 4, rng)
    return history, evaluated, cost


@pytest.mark.parametrize("strategy", ["evolve", "guided", "random"])
def test_each_search_measures_distinct_points_up_to_the_trials(strategy):
    history, evaluated, _ = run(strategy, 0, trials=13)
    keys = [signature(p) for p in evaluated]
    assert len(keys) == len(set(keys)) == len(history.trials) == 13


def test_the_guided_search_starts_from_the_heuristic():
    history, _, _ = run("guided", 1)
    assert history.trials[0][0] == synthetic(1)[1]


def test_the_cost_model_learns_an_additive_cost():
    space = {"a": [1, 2, 4, 8], "b": [16, 32, 64], "pack": [False, True]}
    truth = {"a": {1: 0.4, 2: 0.1, 4: 0.0, 8: 0.3}, "b": {16: 0.2, 32: 0.0, 64: 0.5},
             "pack": {False: 0.3, True: 0.0}}
    r = random.Random(0)
    points = [{k: r.choice(v) for k, v in space.items()} for _ in range(14)]
    trials = [(p, math.exp(sum(truth[k][p[k]] for k in p))) for p in points]
    model = search.CostModel(space, ridge=0.01)
    model.fit(trials)
    everything = [{"a": a, "b": b, "pack": c} for a in space["a"] for b in space["b"]
                  for c in space["pack"]]
    predicted = model.predict(everything)
    assert everything[predicted.index(min(predicted))] == {"a": 4, "b": 32, "pack": True}


def test_failed_points_do_not_stop_the_guided_search():
    space, middle, cost = synthetic(2)
    history = search.guided(space, middle, lambda ps: [
        float("inf") if p["k0"] == 0 else cost(p) for p in ps], 12, signature, 4,
        random.Random(2))
    assert len(history.trials) == 12 and history.best()[1] < float("inf")


def test_the_guided_search_beats_random_sampling_with_as_many_trials():
    """Over 24 synthetic spaces, 16 trials each: the guided search's best is lower than
    random sampling's in most of them and by a geometric mean of at least 5 %; the
    evolutionary search, which stays near the heuristic, does not (its figures are why the
    guided one exists: on real ops, docs/tuning.md)."""
    ratios = []
    for seed in range(24):
        best = {}
        for strategy in ("guided", "random"):
            history, _, cost = run(strategy, seed)
            best[strategy] = min(cost(p) for p, _ in history.trials)
        ratios.append(best["guided"] / best["random"])
    wins = sum(r < 1 - 1e-9 for r in ratios)
    losses = sum(r > 1 + 1e-9 for r in ratios)
    geomean = math.exp(statistics.mean(math.log(r) for r in ratios))
    assert wins >= 3 * losses and geomean <= 0.95, (wins, losses, geomean)
