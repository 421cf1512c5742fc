"""Figures of `dlc tune` (issue 25): a tuned model beside the heuristics and onnxruntime, and
the evolutionary search against random sampling.

    .venv/bin/python benchmarks/tune_bench.py compare MODEL.onnx --db TUNING.db [--repeat N]
    .venv/bin/python benchmarks/tune_bench.py search MODEL.onnx [--ops 2] [--trials 16]
                                             [--strategies evolve,guided,random]

`compare`: one process, single thread (or `--threads N`, both sides): the model compiled with the heuristics only
(DLC_TUNING_DB off) and with the database's records, both with the compile cache off (their
compile times side by side), onnxruntime's session; the outputs must agree; then the three are
timed alternately (`bench_models.alternate`: medians) and the ratios dlc / onnxruntime printed,
before and after tuning.

`search`: for the heaviest `--ops` tunable ops of the model, each of `--strategies` (the
evolutionary search, the cost-model-guided one, random sampling) measures `--trials` distinct
schedules (one worker process), `--seeds` times each; the winners, and the heuristic's point, are then measured again alternately (5
rounds, medians), so that the comparison is not the luck of one noisy measurement. Printed: the best-so-far after each
quarter of the trials, and the re-measured times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def compare(args: argparse.Namespace) -> None:
    import numpy as np
    import onnx
    from bench_models import Settings, alternate, onnxruntime_session, random_inputs

    import dlc
    from dlc.runtime import cache

    model = onnx.load(args.model)
    compiled = {}
    for name, db in (("heuristics", "off"), ("tuned", str(args.db))):
        os.environ["DLC_TUNING_DB"] = db
        with cache.disabled():
            start = time.perf_counter()
            compiled[name] = dlc.compile(model, num_threads=args.threads)
            print(f"{name}: compiled in {time.perf_counter() - start:.2f} s; "
                  f"{compiled[name].tuning.summary()}")
    session = onnxruntime_session(model, args.threads)
    inputs = random_inputs(compiled["tuned"])
    feeds = dict(zip(compiled["tuned"].input_names, inputs))
    expected = session.run(None, feeds)
    for name, c in compiled.items():
        for out, ref in zip(c(*inputs), expected):
            error = float(np.max(np.abs(out - ref)))
            assert error <= 2e-3 * max(1.0, float(np.max(np.abs(ref)))), (name, error)
    fns = [lambda: compiled["heuristics"](*inputs), lambda: compiled["tuned"](*inputs),
           lambda: session.run(None, feeds)]
    settings = Settings(threads=args.threads, repeat=args.repeat, budget_s=args.budget)
    block = 1 if args.threads == 1 else 4  # (bench_models' SCALING_BLOCK: spinning threads)
    heuristics, tuned, peer = alternate(fns, settings, block)
    print(f"{Path(args.model).name}, {args.threads} thread(s): onnxruntime {peer * 1e3:.2f} ms; "
          f"dlc heuristics {heuristics * 1e3:.2f} ms ({heuristics / peer:.2f}x); "
          f"dlc tuned {tuned * 1e3:.2f} ms ({tuned / peer:.2f}x)")


def search_figures(args: argparse.Namespace) -> None:
    from dlc.tuning import families
    from dlc.tuning.extract import tasks
    from dlc.tuning.measure import ProcessPool, measure
    from dlc.tuning.tune import problem_of, tune_task

    pool = ProcessPool(1)
    try:
        for task in tasks(args.model)[: args.ops]:
            tunable = families.TUNABLES[task.family]
            default = tunable.default(problem_of(task)).as_dict()
            quarters = [max(1, args.trials * q // 4) for q in (1, 2, 3, 4)]
            print(f"{task.op} x{task.count}: best-so-far (ms) after {quarters} trials")
            jobs = [("heuristic", default)]
            for seed in range(args.seed, args.seed + args.seeds):
                for strategy in args.strategies.split(","):
                    history = tune_task(task, pool, args.trials, strategy=strategy,
                                        seed=seed)[0]
                    print(f"  {strategy:7} seed {seed}: " + " ".join(
                        f"{history.best_after(n) * 1e3:.3f}" for n in quarters))
                    jobs.append((f"{strategy}/{seed}",
                                 tunable.from_point(history.best()[0]).as_dict()))
            rounds: dict[str, list[float]] = {name: [] for name, _ in jobs}
            for _ in range(5):
                for name, params in jobs:
                    rounds[name].append(pool._executor.submit(
                        measure, task, params, 0.5).result().seconds)
            medians = {n: statistics.median(t) for n, t in rounds.items()}
            print("  winners re-measured alternately (median of 5): " + ", ".join(
                f"{n} {s * 1e3:.3f} ms" for n, s in medians.items()))
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cmp = commands.add_parser("compare")
    cmp.add_argument("model")
    cmp.add_argument("--db", required=True)
    cmp.add_argument("--repeat", type=int, default=50)
    cmp.add_argument("--budget", type=float, default=60.0)
    cmp.add_argument("--threads", type=int, default=1)
    srch = commands.add_parser("search")
    srch.add_argument("model")
    srch.add_argument("--ops", type=int, default=2)
    srch.add_argument("--trials", type=int, default=16)
    srch.add_argument("--seed", type=int, default=0)
    srch.add_argument("--seeds", type=int, default=2, help="searches per strategy (seeds)")
    srch.add_argument("--strategies", default="evolve,guided,random",
                      help="the searches compared (evolve, guided, random)")
    args = parser.parse_args()
    compare(args) if args.command == "compare" else search_figures(args)


if __name__ == "__main__":
    main()
