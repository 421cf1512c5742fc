"""The schedule families of `dlc-schedule`: what a family is (`Family`) and which there are, in
the order they are tried (`FAMILIES`).

A family is a module of `passes/codegen/` with four functions:
- `match(op) -> problem | None`: the family's analysis of a linalg op (a frozen record of what
  its schedule needs: shapes, types, the fused epilogue...), None when it does not take it;
- `volume(problem) -> int`: its size, compared with the family's threshold (`Threshold`: the
  pass's `min-volume` for contractions, convs and pools, `min-elements` for elementwise ops,
  row reductions and transposes): smaller ops keep the naive path, where they cost nothing;
- `prepare(op) -> op | None`: payload rewrites before the transform script (packing a
  constant operand, converting a layout, an integer kernel in place of the op): the op that
  the script then schedules, None for the op unchanged;
- `lines(handle, problem, prefix) -> Lines`: the transform-dialect text of the op's schedule.
A problem whose family fuses its elementwise consumer into its output tiles (matmuls, convs)
says so by `epilogue`.

An op goes to the first family that matches it with a volume at its threshold, so the order
is the precedence: the integer matmul kernel before the f32 matmul, convs before grouped
convs, and so on. A new family is a module with these four functions and a row here.
"""

from __future__ import annotations

import enum
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from mlir import ir

from dlc.passes.codegen import (
    conv,
    depthwise,
    elementwise,
    grouped_conv,
    int8_matmul,
    matmul,
    pool,
    reduction,
    transpose,
)
from dlc.passes.codegen.script import Lines


@runtime_checkable
class Family(Protocol):
    def match(self, op: ir.Operation) -> Any | None: ...

    def volume(self, problem: Any) -> int: ...

    def prepare(self, op: ir.Operation) -> ir.Operation | None: ...

    def lines(self, handle: str, problem: Any, prefix: str) -> Lines: ...


class Threshold(enum.Enum):
    VOLUME = "min-volume"  # iterations of the op (contractions, convs, pools)
    ELEMENTS = "min-elements"  # elements of its result (elementwise, reductions, transposes)


FAMILIES: tuple[tuple[ModuleType, Threshold], ...] = (
    (int8_matmul, Threshold.VOLUME),
    (matmul, Threshold.VOLUME),
    (conv, Threshold.VOLUME),
    (grouped_conv, Threshold.VOLUME),
    (elementwise, Threshold.ELEMENTS),
    (depthwise, Threshold.VOLUME),
    (pool, Threshold.VOLUME),
    (reduction, Threshold.ELEMENTS),
    (transpose, Threshold.ELEMENTS),
)


def name(family: ModuleType) -> str:
    """The family's name as the profiler and the tuning records say it (`matmul`)."""
    return family.__name__.rsplit(".", 1)[-1]


def wants_epilogue(problem: Any) -> bool:
    """Whether the family of `problem` fuses the op's elementwise consumer into its tiles."""
    return bool(getattr(problem, "epilogue", False))
