"""The cost of the runtime index checks, side by side in one process (issue 21).

Each model with checked gathers or scatters is compiled twice, with and without the checks
(`dlc.passes.lowering.checks.prepare` replaced by one that numbers no op, so `emit` adds
nothing), and the two are timed alternately, single thread. Run from the repository root:

    .venv/bin/python benchmarks/checks_cost.py [-k PATTERN]

Prints one row per model: the number of checks, the median times and their ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import (
    Settings,
    alternate,
    model_cases,
    random_inputs,
)

import dlc
from dlc.passes.lowering import checks
from dlc.runtime import cache


def _no_checks(module):
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the models whose name has this text")
    parser.add_argument("--models-dir", default="build/benchmarks/models")
    args = parser.parse_args()
    settings = Settings(repeat=200, budget_s=20.0)
    print("| model | checks | with checks (ms) | without (ms) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for case in model_cases(Path(args.models_dir)):
        if args.k.lower() not in case.name.lower():
            continue
        model, _ = case.build()
        with cache.disabled():
            checked = dlc.compile(model, num_threads=1)
            with mock.patch.object(checks, "prepare", _no_checks):
                unchecked = dlc.compile(model, num_threads=1)
        inputs = random_inputs(checked)
        if not checked._function.checks:
            continue
        with_checks, without = alternate([lambda c=checked, x=inputs: c(*x), lambda u=unchecked, x=inputs: u(*x)],
                                         settings)
        print(f"| {case.name} | {len(checked._function.checks)} | {with_checks * 1e3:.3f} | "
              f"{without * 1e3:.3f} | {with_checks / without:.3f} |", flush=True)


if __name__ == "__main__":
    main()
