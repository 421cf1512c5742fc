"""`dlc export MODEL -o DIR`: a model as a shared library, C header and manifest (issue 23;
the work is `dlc.runtime.export`'s)."""

from __future__ import annotations

import argparse


def add_parser(commands, model_command) -> argparse.ArgumentParser:
    """Register `dlc export` (model_command adds the model, -O, --input-shape options)."""
    from dlc.runtime.export import TARGETS

    sub = model_command("export", "write libNAME.so, NAME.h and NAME.json (C API, no Python "
                        "needed to run it)")
    sub.add_argument("-o", "--output", required=True, metavar="DIR", help="the output folder")
    sub.add_argument("--name", help="NAME, the C prefix (default: the model file's stem)")
    sub.add_argument("--target", default="native", help=f"one of {', '.join(TARGETS)}")
    sub.add_argument("--specialize", action="append", default=[],
                     metavar="NAME=D0,D1[;NAME=...]",
                     help="a model with dynamic sizes: one set of input shapes to compile in "
                          "(repeatable: one specialization each, in one library)")
    sub.set_defaults(handler=run)
    return sub


def run(args) -> int:
    from dlc.runtime.export import export
    from dlc.tools.cli_args import parse_shapes

    shapes = parse_shapes(args.input_shape)
    if args.specialize:  # (each a set of shapes; --input-shape fixes the rest in all of them)
        shapes = [{**shapes, **parse_shapes(s.split(";"))} for s in args.specialize]
    manifest = export(args.model, args.output, name=args.name, target=args.target,
                      opt_level=args.opt_level, input_shapes=shapes)
    for produced in (manifest["library"], manifest["header"], f"{manifest['name']}.json"):
        print(f"{args.output}/{produced}")
    return 0
