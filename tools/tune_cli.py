"""`dlc tune MODEL`: tune the schedules of a model's ops into the tuning database.

    dlc tune MODEL.onnx [--budget MINUTES] [--trials N] [--ray-address ADDR] [--db PATH]
                        [--search evolve|guided|random] [--retune]
    dlc tune --merge OTHER.db [--merge ...] [--db PATH]   fold other machines' records in
    dlc tune --list [MODEL.onnx] [--db PATH]              the database's records (of the
                                                          model's ops); never tunes

Each distinct scheduled matmul of the model (weighted by count x multiply-adds) is compiled
alone with candidate parameters in worker processes (`--workers`, default 1: measurements on
an otherwise idle machine), or as Ray tasks (`--ray-address local` starts a local Ray with
`--workers` CPUs, default 2; `--ray-address HOST:PORT` joins a cluster); the best of each
becomes a record; ops with a record already (of this CPU and dlc version) are skipped unless
`--retune`. `dlc.compile` then uses the records of this CPU (`CompiledModel.tuning`,
`dlc compile --timings` say which ops did). See `dlc.tuning`.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(commands, model_command) -> None:
    from dlc.tools.cli_args import at_least

    sub = model_command("tune", "search the schedules' parameters of the model's ops, write "
                        "the best to the tuning database", optional=True)
    sub.add_argument("--budget", type=float, default=30.0, metavar="MINUTES",
                     help="time for the whole model (default 30), shared by weight")
    sub.add_argument("--trials", type=at_least(1), default=48, metavar="N",
                     help="distinct schedules measured per op at most (default 48)")
    sub.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="run the measurements as Ray tasks: 'local' (a local Ray of "
                     "--workers CPUs) or a cluster's address")
    sub.add_argument("--workers", type=at_least(1), default=None, metavar="N",
                     help="measuring processes (default 1; 2 for a local Ray)")
    sub.add_argument("--db", default=None, metavar="PATH",
                     help="the tuning database (default $DLC_TUNING_DB, else "
                     "~/.cache/dlc/tuning.db)")
    sub.add_argument("--merge", action="append", default=[], metavar="OTHER.db",
                     help="merge the records of another database into --db (repeatable)")
    sub.add_argument("--search", choices=("evolve", "guided", "random"), default="evolve",
                     help="the search: evolutionary from the heuristic (default), guided by a "
                     "cost model fit on the trials, or random sampling")
    sub.add_argument("--retune", action="store_true",
                     help="tune ops the database already has a record of (default: skipped)")
    sub.add_argument("--list", action="store_true", help="print the database's records (with a "
                     "MODEL: of its ops only) and tune nothing")
    sub.set_defaults(handler=run)


def _path(args: argparse.Namespace):
    from pathlib import Path

    from dlc.tuning import default_path

    path = Path(args.db) if args.db else default_path()
    if path is None:
        raise ValueError("DLC_TUNING_DB is off: pass --db PATH")
    return path


def run(args: argparse.Namespace) -> int:
    from dlc.tools.cli_args import parse_shapes
    from dlc.tuning import Database, merge

    path = _path(args)
    if args.merge:
        stored = merge(path, *args.merge)
        print(f"merged {', '.join(args.merge)} into {path}: {stored} records stored")
    if args.list:  # (never tunes: with a MODEL, the records of its ops only)
        keys = None
        if args.model is not None:
            from dlc.tuning.extract import tasks

            keys = {t.key for t in tasks(args.model, parse_shapes(args.input_shape) or None)}
        for r in sorted(Database(path).records(), key=lambda r: (r.cpu, r.op)):
            if keys is None or r.key in keys:
                print(f"{r.op}  [{r.key}] {r.cpu}, dlc {r.version}: {r.seconds * 1e3:.3f} ms "
                      f"(heuristic {r.default_seconds * 1e3:.3f} ms, {r.trials} trials) "
                      f"{r.params}")
        return 0
    if args.model is None:
        if not args.merge and not args.list:
            raise ValueError("dlc tune: give a MODEL to tune, or --merge / --list")
        return 0
    from dlc.tuning.tune import tune

    results = tune(args.model, path, args.budget, args.trials, args.ray_address, args.workers,
                   parse_shapes(args.input_shape) or None,
                   log=lambda line: print(line, file=sys.stderr, flush=True),
                   retune=args.retune, strategy=args.search)
    before = sum(r.default_seconds * r.task.count for r in results if r.params)
    after = sum(min(r.best_seconds, r.default_seconds) * r.task.count
                for r in results if r.params)
    if after:
        print(f"tuned {len(results)} ops into {path}: their time {before * 1e3:.3f} -> "
              f"{after * 1e3:.3f} ms ({before / after:.2f}x)")
    elif not results:
        print(f"nothing to tune: every tunable op of {args.model} has a record in {path}")
    return 0
