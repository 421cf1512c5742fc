"""The per-op profiler: where a compiled model's run time goes, op group by op group.

`profile(model, inputs)` (and `CompiledModel.profile`, `dlc profile MODEL`) compiles the model
again with the profile instrumentation (`dlc.passes.buffer.profile`: a timestamp before each top-level
op group of `main`, i.e. each scheduled tile loop nest with its fused epilogue, each naive
linalg op, each copy), runs it `runs` times after one warm-up call and reports per group: its
ONNX node names, their op types, the schedule family that compiled it (`matmul`, `conv`,
`depthwise`, `pool`, `reduction`, `elementwise`) or `naive` when a linalg op of it runs as
naive loops, whether it is a large naive op (a `NaivePathWarning` op: a performance cliff), its
mean time and its share of the total, sorted by time. The instrumented compile is not cached
and is separate from the model's own: profiling never changes a normal compile's code.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import onnx
from mlir import ir

from dlc.dialects import make_context
from dlc.frontends.onnx_importer import DynamicShapesError
from dlc.options import CompileOptions, merge
from dlc.passes import stage_pipelines
from dlc.passes.buffer.profile import MODE, naive_ops, segments
from dlc.passes.lowering import checks
from dlc.runtime.jit import JitFunction
from dlc.tuning import apply as tuning

MIN_VOLUME = 32 * 32 * 32  # dlc-schedule's default `min-volume`


@dataclass
class OpTime:
    """One op group of the profile."""

    nodes: list[str]
    op_types: list[str]
    family: str  # a schedule family, "naive" or "-" (copies, glue)
    naive: bool  # a linalg op of it runs as naive loops
    large_naive: bool  # ... and is above the schedule thresholds (NaivePathWarning)
    ms: float  # mean per run
    share: float  # percent of the total

    @property
    def node(self) -> str:
        text = " + ".join(self.nodes[:3]) or "(unnamed)"
        return text + (f" + {len(self.nodes) - 3} more" if len(self.nodes) > 3 else "")


@dataclass
class Profile:
    """A profile: op groups sorted by time, the total and the runs it averages."""

    ops: list[OpTime]
    total_ms: float
    runs: int
    opt_level: int
    num_threads: int
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"total_ms": self.total_ms, "runs": self.runs, "opt_level": self.opt_level,
                "num_threads": self.num_threads, "naive_path_warnings": self.warnings,
                "ops": [{**asdict(o), "node": o.node} for o in self.ops]}

    def seconds_by_node(self) -> dict[str, float]:
        """Mean seconds per ONNX node name (a group's time split evenly among its nodes)."""
        seconds: dict[str, float] = {}
        for o in self.ops:
            for node in o.nodes:
                seconds[node] = seconds.get(node, 0.0) + o.ms / 1e3 / len(o.nodes)
        return seconds

    def table(self, limit: int | None = None) -> str:
        header = f"{'node':<40} {'op':<22} {'schedule':<18} {'naive':<6} {'ms':>9} {'share':>7}"
        lines = [header, "-" * len(header)]
        shown = self.ops if limit is None else self.ops[:limit]
        for o in shown:
            naive = "LARGE" if o.large_naive else "yes" if o.naive else ""
            lines.append(f"{_clip(o.node, 40):<40} {_clip('+'.join(o.op_types), 22):<22} "
                         f"{_clip(o.family, 18):<18} {naive:<6} {o.ms:>9.3f} {o.share:>6.1f}%")
        if limit is not None and len(self.ops) > limit:
            rest = self.ops[limit:]
            lines.append(f"{f'({len(rest)} more op groups)':<89} {sum(o.ms for o in rest):>9.3f} "
                         f"{sum(o.share for o in rest):>6.1f}%")
        lines.append(f"{'total':<89} {self.total_ms:>9.3f} {100.0:>6.1f}%   "
                     f"(mean of {self.runs} runs, -O{self.opt_level}, "
                     f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''})")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _op_types(model) -> dict[str, str]:
    """ONNX node name -> op type (empty for other frontends or unreadable models)."""
    from dlc.errors import DlcError
    from dlc.frontends.onnx_importer import load_model

    try:
        proto = model if isinstance(model, onnx.ModelProto) else load_model(model)
    except (DlcError, ValueError, TypeError, OSError):  # (torch models: no ONNX op types)
        return {}
    return {n.name: n.op_type for n in proto.graph.node if n.name}


def profile(model, inputs: Sequence | Mapping | None = None, runs: int = 10,
            opt_level: int = 2, input_shapes: Mapping[str, Sequence[int]] | None = None,
            constants: Mapping[str, np.ndarray] | None = None,
            example_inputs: Sequence | None = None, num_threads: int | None = None,
            seed: int = 0, *, options: CompileOptions | None = None,
            dynamic: bool = False) -> Profile:
    """Compile `model` with the profile instrumentation and time each op group over `runs`
    calls on `inputs` (positional, a dict by name, or None: random inputs). The compile's
    arguments are `dlc.compile`'s (or `options`, a `dlc.CompileOptions`). An ONNX model with
    dynamic sizes is profiled at the inputs' shapes: its specialization for them, or with
    `dynamic=True` its one compile for every size (`DynamicModel.function`; with a batch and
    a sequence, the row function at batch 1), to see where dynamic code loses time."""
    from dlc import compiler, frontends
    from dlc.errors import ArgumentError

    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        # (0 runs gave a profile of nothing, -1 too; 2.5 or "3" a TypeError from range())
        raise ArgumentError(f"runs must be an integer >= 1, got {runs!r}")
    options = merge(options, opt_level=opt_level, input_shapes=input_shapes,
                    constants=constants, example_inputs=example_inputs,
                    num_threads=num_threads)
    opt_level, num_threads = options.opt_level, options.threads
    context = make_context()
    try:
        imported = frontends.load(model, context, options)
    except DynamicShapesError as error:  # (dynamic sizes: profiled at the given inputs')
        shapes = _shapes_of(error, inputs)
        if shapes is None:
            raise
        if dynamic:
            imported = _dynamic_import(model, error, shapes, context, options)
        else:
            shaped = options.replace(input_shapes={**(options.input_shapes or {}), **shapes})
            imported = frontends.load(model, context, shaped)
    else:
        if dynamic:
            raise ArgumentError("dynamic=True profiles a model with dynamic sizes; this "
                                "one has none (or input_shapes fixed them)")
    with context, tuning.session():  # (the schedules dlc.compile uses: tuning records too)
        module = imported.module
        module.operation.attributes[MODE] = ir.UnitAttr.get()
        main = module.body.operations[0]
        signature = compiler.signature_of(main, imported.input_names, imported.output_names,
                                          imported.dynamic_size or "?")
        main.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        large: set[str] = set()
        found: list[str] = []
        for stage, text in stage_pipelines(opt_level, num_threads).items():
            if stage == "bufferized":
                text += ",dlc-profile"
            compiler.run_stage(module, stage, text)
            if stage == "linalg" and opt_level >= 2:
                for naive in naive_ops(module.operation, MIN_VOLUME):
                    large.update(naive.nodes)
                    found.append(naive.message(MIN_VOLUME))
        labels = segments(module.operation)
        function = JitFunction(module, signature, threads=num_threads > 1,
                               checks=checks.descriptions(module.operation))
    address = function._engine.raw_lookup("dlc_profile")
    stamps = (ctypes.c_double * (len(labels) + 1)).from_address(address)
    arrays = _inputs(signature, inputs, seed)
    function(*arrays)  # (warm-up: first touches, OpenMP threads started)
    totals = np.zeros(len(labels))
    for _ in range(max(1, runs)):
        function(*arrays)
        totals += np.diff(np.frombuffer(stamps, dtype=np.float64))
    return _report(labels, totals / max(1, runs), _op_types(model), large, found, runs,
                   opt_level, num_threads)


def _dynamic_import(model, error: DynamicShapesError, shapes: dict[str, list[int]],
                    context: ir.Context, options: CompileOptions):
    """`model` imported as `dlc.compile` compiles it once for every size (one dynamic size;
    a batch and one other: the row function, its batch 1), or an ArgumentError saying why
    it has no such compile or why `shapes` (the inputs') do not fit it."""
    from dlc import compiler
    from dlc.errors import ArgumentError
    from dlc.frontends.onnx_importer import import_model

    fixed = None
    reason = compiler._dynamic_reason(error)
    rows = compiler.row_sizes(error) if reason is not None else None
    if rows is not None:
        fixed = rows  # (DynamicModel.row_function)
        reason = compiler._dynamic_reason(error, fixed)
        ((symbol, _),) = rows.items()
        batches = {shapes[n][axis] for n, shape in error.symbolic.items() if n in shapes
                   for axis, d in enumerate(shape) if d == symbol}
        if reason is None and batches != {1}:
            raise ArgumentError(f"the model's one compile is its row function (batch "
                                f"{symbol!r} 1): profile it with inputs of batch 1, not "
                                f"{sorted(batches)}")
    if reason is not None:
        raise ArgumentError(f"the model has no one compile for every size: {reason}")
    return import_model(model, context, options.input_shapes, options.constants,
                        dynamic=True, fixed_sizes=fixed)


def _shapes_of(error: DynamicShapesError, inputs) -> dict[str, list[int]] | None:
    """The shapes of the given `inputs` (positional or by name, in the model's input order)
    for a model with dynamic sizes, or None when there are none to take them from."""
    names = list(error.symbolic)
    if isinstance(inputs, Mapping):
        return {n: list(np.shape(inputs[n])) for n in names if n in inputs}
    if inputs is None or len(inputs) != len(names):
        return None
    return {n: list(np.shape(a)) for n, a in zip(names, inputs)}


def _inputs(signature, inputs, seed: int = 0) -> list[np.ndarray]:
    if inputs is None:
        rng = np.random.default_rng(seed)
        from dlc.runtime.signature import random_input

        return [random_input(spec, rng) for spec in signature.inputs]
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    args, kwargs = ((), inputs) if isinstance(inputs, Mapping) else (list(inputs), None)
    if any(isinstance(d, str) for spec in signature.inputs for d in spec.shape):
        arrays = signature.check_dtypes(args, kwargs)  # (a dynamic function: sizes named)
        signature.bind_symbols([a.shape for a in arrays])
        return arrays
    return signature.bind(args, kwargs)


def _report(labels: list[dict], seconds: np.ndarray, op_types: dict[str, str],
            large: set[str], found: list[str], runs: int, opt_level: int,
            num_threads: int) -> Profile:
    merged: dict[tuple, OpTime] = {}
    for label, spent in zip(labels, seconds):
        nodes = label["nodes"]
        naive = bool(label["naive"])
        family = "naive" if naive else "+".join(label["families"]) or "-"
        key = (tuple(nodes), family)
        if key not in merged:
            types = list(dict.fromkeys(op_types.get(n, "") for n in nodes if n in op_types))
            merged[key] = OpTime(nodes, types or label["ops"], family, naive,
                                 naive and bool(large & set(nodes)), 0.0, 0.0)
        merged[key].ms += float(spent) * 1e3
    total = float(seconds.sum()) * 1e3
    ops = sorted(merged.values(), key=lambda o: -o.ms)
    for o in ops:
        o.share = 100.0 * o.ms / total if total > 0 else 0.0
    return Profile(ops, total, runs, opt_level, num_threads, found)


def dumps(result: Profile) -> str:
    return json.dumps(result.as_json(), indent=2)

