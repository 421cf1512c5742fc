"""The command-line helpers `dlc`'s subcommands share (`dlc_cli.py` and the subcommand modules
`bisect`, `explore`, `export`, `profile_cli`): argparse types, `--input-shape` and `--input`.

Below all of them: the subcommand modules use these without importing `dlc_cli`, which
imports them to dispatch.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from dlc.runtime.signature import random_input


def at_least(minimum: int):
    """An argparse type: an integer >= `minimum` (argparse words the error as a CLI error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


_PYTHON_SHAPES = re.compile(r"input_shapes=\{'([^']*)': \[\.\.\.\]\}")


def cli_advice(message: str) -> str:
    """An error's message with the Python API's advice in command-line words: pass
    `input_shapes={'x': [...]}` -> pass `--input-shape x=D0,D1,...`."""
    message = message.replace(" (dlc.compile compiles it per call shape without them)", "")
    return _PYTHON_SHAPES.sub(lambda m: f"--input-shape {m[1]}=D0,D1,...", message)


def parse_shapes(items: Sequence[str]) -> dict[str, list[int]]:
    shapes = {}
    for item in items:
        name, _, dims = item.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",") if d.strip()]
        except ValueError:
            raise SystemExit(f"dlc: error: --input-shape expects NAME=D0,D1,..., got '{item}'")
    return shapes


def read_input(item: str) -> tuple[str, np.ndarray]:
    """(NAME, its array) of an `--input NAME=FILE.npy` argument; SystemExit with the reason
    when FILE is no readable .npy of one array (np.load reads a .npz as a mapping)."""
    name, sep, path = item.partition("=")
    if not sep:
        raise SystemExit(f"dlc: error: --input expects NAME=FILE.npy, got '{item}'")
    try:
        with open(path, "rb") as file:
            array = np.load(file, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise SystemExit(f"dlc: error: cannot read input '{name}' from '{path}': {error}")
    if not isinstance(array, np.ndarray):
        raise SystemExit(f"dlc: error: cannot read input '{name}' from '{path}': it holds "
                         "several arrays (a .npz); save one array with numpy.save")
    return name, array


def load_inputs(compiled, items: Sequence[str], seed: int) -> dict[str, np.ndarray]:
    given = dict(read_input(item) for item in items)
    unknown = sorted(set(given) - set(compiled.input_names))
    if unknown:
        raise SystemExit(f"dlc: error: unknown inputs {unknown}; the model's inputs are "
                         f"{compiled.input_names}")
    rng = np.random.default_rng(seed)
    sizes = {}  # the dynamic sizes the given inputs fix (a DynamicModel's signature has them)
    for spec in compiled.signature.inputs:
        if spec.name in given:
            sizes.update((d, s) for d, s in zip(spec.shape, given[spec.name].shape)
                         if isinstance(d, str) and d != "?" and d not in sizes)
    inputs = {}
    for spec in compiled.signature.inputs:
        if spec.name in given:
            inputs[spec.name] = given[spec.name]
            continue
        shape = tuple(sizes.get(d) if isinstance(d, str) else d for d in spec.shape)
        if None in shape:
            raise SystemExit(f"dlc: error: input '{spec.name}' has dynamic sizes ({spec}): "
                             f"give its shape (--input-shape {spec.name}=D0,D1,...) or its "
                             f"value (--input {spec.name}=FILE.npy)")
        inputs[spec.name] = random_input(replace(spec, shape=shape), rng)
    return inputs
