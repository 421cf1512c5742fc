"""The schedule families that can be tuned, each described once as a `Tunable`.

A family plugs in with: its codegen module (whose `match` gives a problem with a `params`
field and whose `lines` reads it), its parameter record type (`from_dict`, `as_dict`), the
heuristic's point, the space of legal knob values, and the conversions between a record and
a point of the space (one value per knob: what the search mutates). `signature` is the text
of the schedule a record gives (the family's `lines`), so that points giving the same
schedule are measured once. The matmul family (`matmul_params.py`) and the conv family
(`conv_params.py`: the named and the packed convs) are tunable; depthwise convs and reductions
would join by adding an entry to `TUNABLES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from mlir import ir

from dlc.passes.codegen import conv, conv_common, conv_params, matmul, matmul_params, target


@dataclass(frozen=True)
class Tunable:
    name: str
    module: ModuleType
    record: type
    default: Callable[[Any], Any]  # problem -> the heuristic's record
    space: Callable[[Any], dict[str, list]]  # problem -> legal values per knob
    to_point: Callable[[Any], dict[str, Any]]
    from_point: Callable[[dict[str, Any]], Any]
    check: Callable[[Any, dict[str, list]], None]  # ValueError when outside the space
    # (op or None, problem, params) -> the problem to schedule (None: no payload to mark)
    apply: Callable[[Any, Any, Any], Any] = lambda op, problem, params: replace(
        problem, params=params)

    def signature(self, problem: Any, params: Any) -> str:
        """The schedule's transform text for `params` (equal texts: the same code)."""
        return "\n".join(self.module.lines("%op", self.apply(None, problem, params), "s").ops)


def _matmul_space(problem: matmul.Contraction) -> dict[str, list]:
    cpu = target.current()
    return matmul_params.space(problem, matmul.default_params(), cpu.lanes, cpu.registers)


def _matmul_apply(op: ir.Operation | None, problem: matmul.Contraction,
                  params: matmul_params.MatmulParams) -> matmul.Contraction:
    """The problem with `params`; a packed one scheduled plain when `params.pack` is False
    (its op marked for `matmul.prepare`, which then does not pack it)."""
    problem = replace(problem, params=params)
    if not problem.packed or params.pack:
        return problem
    if op is None:  # (a signature: the padded rows stand for the rows)
        return matmul.unpacked(problem, problem.m)
    op.attributes[matmul.UNPACKED] = ir.UnitAttr.get()
    return matmul.unpacked(problem, op.results[0].type.shape[-2])


MATMUL = Tunable("matmul", matmul, matmul_params.MatmulParams,
                 lambda problem: matmul.default_params(), _matmul_space,
                 matmul_params.to_point, matmul_params.from_point, matmul_params.check,
                 _matmul_apply)


def _conv_apply(op: ir.Operation | None, problem: conv_common.Conv,
                params: conv_params.ConvParams) -> conv_common.Conv:
    """The problem with `params`; a packed one scheduled as the named conv when `params.pack`
    is False (its op marked for `conv.prepare`, which then does not pack it; its F the op's,
    unpadded). For a signature (no op), a conv with an init or an epilogue stands as fused
    greedily (`fusion_plan.plan` decides that only at schedule time), so that the knobs only a
    greedy forall reads (`order`, `register_fusion`) tell schedules apart."""
    problem = replace(problem, params=params)
    if problem.packed and not params.pack:
        problem = replace(problem, packed=False)
        if op is not None:
            op.attributes[matmul.UNPACKED] = ir.UnitAttr.get()
            problem = replace(problem, f=op.results[0].type.shape[-1])
    if op is None and (problem.init or problem.epilogue):
        return replace(problem, greedy=True)
    return problem


CONV = Tunable("conv", conv, conv_params.ConvParams,
               lambda problem: conv_common.default_params(),
               lambda problem: conv_params.space(problem, conv_common.default_params(),
                                                 conv_common.ow_limit()),
               conv_params.to_point, conv_params.from_point, conv_params.check, _conv_apply)
TUNABLES = {t.name: t for t in (MATMUL, CONV)}


def of(family: ModuleType) -> Tunable | None:
    """The Tunable of a codegen module, None when its schedules have no knobs yet."""
    for tunable in TUNABLES.values():
        if tunable.module is family:
            return tunable
    return None
