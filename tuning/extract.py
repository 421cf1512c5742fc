"""A model's distinct tunable ops, each as a standalone one-op module (`Task`).

The model runs through the dlc stage and the linalg stage up to `dlc-schedule` (the IR the
schedule sees); every op a tunable family matches above the schedule's thresholds is keyed
(`keys.py`), and one module per distinct key is cut out: a `func.func @main` holding the op,
the producer of its accumulator and its fused elementwise consumer, cloned; their constant
operands and empty tensors are cloned too (a constant B is transposed or packed at compile
time, as in the model; a conv's constant filter is packed, and its bias constant padded, as
in the model), every other operand becomes an argument. The one-op module has the same key
as the op in the model, so a record measured on it applies to the model. (Measured alone,
the op's filter and input stay in cache between calls, unlike in the model.)
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import onnx
from mlir import ir
from mlir.dialects import func

from dlc.dialects import make_context
from dlc.passes import stage_pipelines
from dlc.passes.codegen.fusion import epilogue, init_producer
from dlc.tuning import families
from dlc.tuning.keys import describe, structural_key

SCHEDULE = "dlc-schedule"


@dataclass(frozen=True)
class Task:
    """One distinct op to tune: its key, family, description, one-op module (bytecode), how
    many times the model runs it and its multiply-adds (the weight of the task)."""

    key: str
    family: str
    op: str
    module: bytes
    count: int
    volume: int

    @property
    def weight(self) -> int:
        return self.count * self.volume


def linalg_before_schedule(opt_level: int = 2) -> tuple[str, str]:
    """The linalg stage's pipeline cut before dlc-schedule: (before, from dlc-schedule on)."""
    text = stage_pipelines(opt_level)["linalg"]
    at = text.index(SCHEDULE)
    return text[:at].rstrip(","), text[at:]


def tasks(model: str | Path | bytes | onnx.ModelProto, input_shapes=None,
          opt_level: int = 2) -> list[Task]:
    """The distinct tunable ops of `model`, the heaviest (count x volume) first."""
    from dlc.compiler import run_stage
    from dlc.frontends.onnx_importer import import_model
    from dlc.passes.linalg.schedule import Schedule, candidates

    context = make_context()
    imported = import_model(model, context, input_shapes, None)
    before, _ = linalg_before_schedule(opt_level)
    found: dict[str, list] = {}
    with context:
        module = imported.module
        run_stage(module, "dlc", stage_pipelines(opt_level)["dlc"])
        run_stage(module, "linalg", before)
        defaults = Schedule()
        for op, family, problem in candidates(module.operation, defaults.min_volume,
                                              defaults.min_elements):
            tunable = families.of(family)
            if tunable is None:
                continue
            key = structural_key(op, tunable.name)
            if key in found:
                found[key][4] += 1
                continue
            found[key] = [key, tunable.name, describe(op), standalone(op), 1,
                          family.volume(problem)]
    return sorted((Task(*entry) for entry in found.values()), key=lambda t: -t.weight)


def _inner_ops(members: list[ir.Operation]) -> list[ir.Operation]:
    inner: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        inner.append(op.operation)
        return ir.WalkResult.ADVANCE

    for member in members:
        member.walk(visit)
    return inner


def _defined_inside(value: ir.Value, inner: list[ir.Operation]) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block):
        owner = owner.owner
    return any(owner.operation == op for op in inner)


def _is_constant(value: ir.Value) -> bool:
    """A constant or an empty tensor of static shape: cloned, not an argument."""
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView):
        return False
    return owner.name == "arith.constant" or (owner.name == "tensor.empty"
                                              and not list(owner.operands))


def standalone(op: ir.Operation) -> bytes:
    """The bytecode of a module whose @main computes `op` with its init producer and
    epilogue (see the module docstring)."""
    members = [m.operation for m in (init_producer(op), op, epilogue(op)) if m is not None]
    inner = _inner_ops(members)
    outside: list[ir.Value] = []
    for member in inner:
        for value in member.operands:
            if not _defined_inside(value, inner) and not any(value == v for v in outside):
                outside.append(value)
    arguments = [v for v in outside if not _is_constant(v)]
    result = members[-1].results[0]
    with ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            main = func.FuncOp("main", ([v.type for v in arguments], [result.type]))
            block = main.add_entry_block()
        mapping: list[tuple[ir.Value, ir.Value]] = list(zip(arguments, block.arguments))
        with ir.InsertionPoint(block):
            for value in outside:
                if _is_constant(value):
                    mapping.append((value, value.owner.clone().results[0]))
            for member in members:
                copy = member.clone()
                _remap(copy, mapping)
                mapping += list(zip(member.results, copy.results))
            func.ReturnOp([mapping[-1][1]])
    module.operation.verify()
    stream = io.BytesIO()
    module.operation.write_bytecode(stream)
    return stream.getvalue()


def _remap(copy: ir.Operation, mapping: list[tuple[ir.Value, ir.Value]]) -> None:
    """Point the operands of `copy` (and of the ops nested in it) at the new values."""
    def visit(op: ir.Operation) -> ir.WalkResult:
        for index, value in enumerate(op.operands):
            for old, new in mapping:
                if value == old:
                    op.operands[index] = new
                    break
        return ir.WalkResult.ADVANCE

    copy.walk(visit)
