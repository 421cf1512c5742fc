"""`dlc profile MODEL`: where a model's run time goes, per op group (`dlc.profiler`).

A table sorted by time: each op group's ONNX node names and op types, the schedule family that
compiled it (or `naive`), whether it runs as naive loops (`LARGE`: above the schedule
thresholds, a performance cliff), its mean time and share of the total; `--json` the same as
data.
"""

from __future__ import annotations

import argparse


def add_parser(commands, model_command) -> None:
    from dlc.tools.cli_args import at_least

    sub = model_command("profile", "time per op group: node, op, schedule family, naive "
                        "path, share of the total")
    sub.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    sub.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    sub.add_argument("--runs", type=at_least(1), default=10, help="timed runs after one warm-up")
    sub.add_argument("--threads", type=at_least(1), default=None, metavar="N",
                     help="threads of the compile (default: dlc.compile's)")
    sub.add_argument("--top", type=at_least(1), default=None, metavar="N",
                     help="show the N slowest op groups only")
    sub.add_argument("--json", action="store_true", help="the profile as JSON")
    sub.add_argument("--dynamic", action="store_true",
                     help="a model with dynamic sizes: profile its one compile for every "
                     "size at the inputs' shapes (default: their specialization)")
    sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dlc.profiler import dumps, profile
    from dlc.tools.cli_args import parse_shapes, read_input

    shapes = parse_shapes(args.input_shape) or None
    inputs = None
    if args.input:
        inputs = dict(read_input(item) for item in args.input)
    result = profile(args.model, inputs, args.runs, args.opt_level, shapes,
                     num_threads=args.threads, seed=args.seed, dynamic=args.dynamic)
    print(dumps(result) if args.json else result.table(args.top))
    return 0
