"""The Python API: `dlc.compile(model) -> CompiledModel`, callable with numpy arrays.

`compile` imports the model into the dlc dialect, runs the named pipeline of the opt level
stage by stage (keeping a snapshot of the IR after each stage for `CompiledModel.ir`), and
JIT-compiles the result. `lower(model, stage)` stops after a stage and generates no machine
code (`dlc compile --emit=STAGE`). Errors are `DlcError`s: `FrontendError` for the model,
`CompileError` for a stage that fails (with MLIR's diagnostics), `ValueError` at call time.

Every compile records where its time goes (`CompiledModel.timings`, `LoweredModel.timings`, a
`dlc.timings.Timings`): the import, each stage and each element of its pipeline (run by a
PassManager of its own, so that each is timed by itself), the IR snapshots, LLVM's code
generation (the ExecutionEngine) and the disk cache's save (object dump and link), or the
cache's load on a hit. `timings=True` adds the peak RSS of each (see `dlc.timings`: it resets
the process's peak-RSS mark).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from mlir import ir

from dlc import frontends, settings
from dlc.dialects import make_context
from dlc.errors import ArgumentError, DlcError
from dlc.frontends.torch.tensors import (
    call_with_tensors,
    holds_torch_tensors,
    is_exported_program,
    is_torch_model,
)
from dlc.options import CompileOptions, merge
from dlc.passes import (
    STAGES,
    build_pass_manager,
    parse_pipeline,
    pipeline,
    stage_pipelines,
)
from dlc.passes.llvm import external_weights
from dlc.passes.pipelines import extension_key
from dlc.runtime import cache, native
from dlc.runtime.jit import NativeFunction, Signature, TensorSpec, numpy_dtype
from dlc.timings import Timer, Timings
from dlc.tuning import apply as tuning

if TYPE_CHECKING:  # (imported where used: a disk-cache hit imports neither onnx nor the
    # importer: 0.9 s of a new process's hit on this machine, most of it onnx's ml_dtypes)
    import onnx

    from dlc.frontends.onnx_importer import DynamicShapesError, ImportedModel
    from dlc.specialize import DynamicModel

MACHINE_CODE = "machine code"  # the span of LLVM's optimization and code generation (the JIT)
# constant globals of at least this many bytes are bound at load, not compiled into the object
EXTERNAL_WEIGHT_BYTES = 16384


class CompileError(DlcError):
    """A pipeline stage failed; the message holds MLIR's diagnostics with their locations."""


def format_diagnostics(error: ir.MLIRError) -> str:
    lines = []
    for diagnostic in error.error_diagnostics:
        lines.append(f"{diagnostic.location}: error: {diagnostic.message}")
        lines.extend(f"  {note.location}: note: {note.message}" for note in diagnostic.notes)
    return "\n".join(lines) or str(error)


class CompiledModel:
    """A model compiled by dlc. Call it with numpy arrays (positional, or a dict by name).

    One state: its native function, the options it was compiled with and, on demand, the IR
    of each stage (`ir`): kept from the compile (a `LoweredModel`), or built again by
    `relower` when it was not kept (a disk-cache hit, a specialization that released it)."""

    def __init__(self, function: NativeFunction, options: CompileOptions,
                 compile_seconds: float, lowered: LoweredModel | None = None,
                 relower: Callable[[], LoweredModel] | None = None,
                 timings: Timings | None = None):
        self._function = function
        self._lowered = lowered
        self._relower = relower
        self.options = options
        self.signature = function.signature
        self.opt_level = options.opt_level
        self.num_threads = options.threads
        self.compile_seconds = compile_seconds
        self.timings = timings or Timings()  # where the compile's time went
        self.tuning: tuning.Report | None = None  # which ops used a tuning record (dlc tune)
        self._source = None  # the model it was compiled from, for `profile`

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.signature.inputs]

    @property
    def output_names(self) -> list[str]:
        return self.signature.output_names  # (a bounded output's count result is not one)

    @property
    def pipeline(self) -> str:
        return pipeline(self.opt_level, num_threads=self.num_threads)

    def __call__(self, *args, **kwargs) -> list[np.ndarray]:
        if holds_torch_tensors(args, kwargs):  # torch tensors in, torch tensors out
            return call_with_tensors(self._function, args, kwargs)
        return self._function(*args, **kwargs)

    def release_ir(self, relower: Callable[[], LoweredModel]) -> None:
        """Drop the IR kept for `ir` (its MLIR context holds the weights' values, once per
        stage that rewrote them: more than the compiled code's own copy); `relower()` builds
        it again when `ir` is asked for. Weights the code reads from that context's storage
        (dlc-external-weights binds a compile's weights there where it is 64-byte-aligned)
        are copied first (`external_weights.own`), so that the context can go."""
        function = self._function
        if getattr(function, "weights", None):
            with function._lock:  # (no call may read the weights while they move)
                function.weights = external_weights.own(
                    function._global_address(external_weights.TABLE_LOOKUP), function.weights)
        self._lowered = None
        self._relower = relower

    def ir(self, stage: str = "dlc", large_elements_limit: int | None = None) -> str:
        """The IR after `stage` (dlc, linalg, bufferized, llvm) as text."""
        if stage not in STAGES:
            raise ArgumentError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        if self._lowered is None:
            if self._relower is None:
                raise ArgumentError("this model keeps no IR and cannot lower its source again")
            self._lowered = self._relower()
        return self._lowered.ir(stage, large_elements_limit)

    def profile(self, inputs=None, runs: int = 10):
        """Time each op group of this model (`dlc.profiler.profile`: compiled again with the
        profile instrumentation, this model's own code is untouched) on `inputs` (positional,
        by name, or None: random ones), `runs` times; a `dlc.profiler.Profile`."""
        from dlc.profiler import profile

        if self._source is None:
            raise ArgumentError("this model was not compiled by dlc.compile: profile its "
                                "source with dlc.profiler.profile(model, ...)")
        return profile(self._source, inputs, runs, options=self.options)

    def __repr__(self) -> str:
        return f"CompiledModel{self.signature} (opt_level={self.opt_level})"


def compile(
    model: str | Path | bytes | onnx.ModelProto,  # or a torch.nn.Module / ExportedProgram
    opt_level: int = 2,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    example_inputs: Sequence | None = None,
    num_threads: int | None = None,
    timings: bool = False,
    *,
    options: CompileOptions | None = None,
) -> CompiledModel | DynamicModel:
    """Compile an ONNX model (path, bytes or ModelProto) or a PyTorch module for this CPU.

    A model whose graph inputs have dynamic sizes (`batch`, `sequence`) that `input_shapes`
    does not fix gives a `dlc.specialize.DynamicModel`: callable with any sizes that fit its
    signature, it compiles a specialization per distinct call shape, on the first call with
    it. `input_shapes` fixes the shapes of inputs with dynamic sizes; `constants` fixes the
    values of inputs (such as a Reshape's shape given as a graph input): the compiled model
    is specialized to them and takes only the other inputs. A `torch.nn.Module` is exported
    with `torch.export` on `example_inputs` (a tuple of tensors); see `dlc.frontends.torch`.
    `num_threads` (default: $DLC_NUM_THREADS, else the cores this process may run on) runs
    the scheduled tile loops of matmuls and convolutions on that many threads (OpenMP); 1
    compiles serial code. `timings=True` measures each step's peak RSS too
    (`CompiledModel.timings`; seconds are always recorded). `options` (a `dlc.CompileOptions`)
    gives all of these at once, instead of the keyword arguments.
    """
    options = merge(options, opt_level=opt_level, input_shapes=input_shapes,
                    constants=constants, example_inputs=example_inputs,
                    num_threads=num_threads, timings=timings)
    if is_exported_program(model):
        dynamic = _exported_dynamic_model(model, options)
        if dynamic is not None:
            return dynamic
    try:
        compiled = _compile(model, options)
    except DlcError as error:
        from dlc.frontends.onnx_importer import DynamicShapesError

        if not isinstance(error, DynamicShapesError):
            raise
        return _onnx_dynamic_model(model, error, options)
    compiled._source = model  # (for .profile)
    return compiled


def _onnx_dynamic_model(model, error: DynamicShapesError, options: CompileOptions
                        ) -> DynamicModel:
    """The DynamicModel of an ONNX model whose inputs have dynamic sizes (`error` holds the
    loaded proto and the inputs' shapes): `compile` with `input_shapes` makes each
    specialization (from `model` as the user gave it: a path keeps external data findable)."""
    from dlc.specialize import DynamicModel, symbolic_signature

    def compile_for(input_shapes: dict[str, list[int]]) -> CompiledModel:
        specialization = options.for_shapes(input_shapes)
        compiled = compile(model, options=specialization)
        # (a specialization keeps no IR: built again for `ir`; its weights are the process's
        # one copy, shared with the other specializations: dlc-external-weights)
        compiled.release_ir(lambda: lower(model, STAGES[-1], options=specialization))
        return compiled

    signature = symbolic_signature(error.proto, error.symbolic)
    function, reason = _dynamic_function(model, error, options)
    if function is not None:  # (its outputs' shapes are computed: shown as the function's)
        signature = Signature(signature.inputs, function._function.signature.outputs)
    row_function = _row_function(model, error, options) if function is None else None
    outputs = row_function._function.signature.outputs if row_function is not None else ()
    if outputs and all(spec.shape and spec.shape[0] == 1 for spec in outputs):
        # (its outputs' sizes, computed, with the batch's name at axis 0)
        from dlc.batching import batch_symbol

        batch = batch_symbol(list(error.symbolic.items()))
        signature = Signature(signature.inputs, tuple(
            dataclasses.replace(spec, shape=(batch, *spec.shape[1:])) for spec in outputs))
    return DynamicModel(signature, compile_for, options.opt_level, options.threads,
                        plan_rows=_rows_planner(signature, lambda shapes, context: import_source(
                            model, context, options.for_shapes(shapes)).module),
                        function=function, function_reason=reason, row_function=row_function)


def _dynamic_function(model, error: DynamicShapesError, options: CompileOptions,
                      fixed_sizes: dict[str, int] | None = None
                      ) -> tuple[CompiledModel | None, str | None]:
    """The one compile of an ONNX model for every value of its one dynamic size, when its
    ops all take it (`onnx_importer.dynamic_import_reason`), else (None, why not);
    `fixed_sizes` gives other named sizes a value (`_row_function`)."""
    from dlc.frontends.onnx_importer import import_model

    reason = _dynamic_reason(error, fixed_sizes)
    if reason is not None:
        return None, reason
    return _one_compile(lambda context: import_model(
        model, context, options.input_shapes, options.constants, dynamic=True,
        fixed_sizes=fixed_sizes), options)


def _one_compile(import_: Callable[[ir.Context], ImportedModel], options: CompileOptions
                 ) -> tuple[CompiledModel | None, str | None]:
    """The compile of a model imported with a dynamic size (`import_(context)`), or (None,
    why it failed): the model then compiles per call shape."""
    start = time.perf_counter()
    timer = Timer(memory=options.timings)
    try:
        with timer.active():
            context = make_context()
            with timer.span("import"):
                imported = import_(context)
            compiled = compile_imported_cached(context, imported, options, start, timer)
    except DlcError as failure:  # (per call shape instead: the same compiler, static)
        return None, f"its compile with a dynamic size failed: {failure}"
    except (ValueError, TypeError, IndexError, KeyError, ArithmeticError) as failure:
        # (an importer or pattern that computed from a dynamic size as from a static one:
        # a bug of the dynamic path, which must not fail a model the static path compiles)
        return None, (f"its compile with a dynamic size failed: {type(failure).__name__}: "
                      f"{failure}")
    compiled.timings = timer.result()
    return compiled, None


def _dynamic_reason(error: DynamicShapesError, fixed_sizes: dict[str, int] | None = None
                    ) -> str | None:
    """Why the model `error` found dynamic does not compile once for every size (the
    setting, or `onnx_importer.dynamic_import_reason`; `fixed_sizes` given their values
    first), or None when it may."""
    from dlc.frontends.onnx_importer import dynamic_import_reason

    if not settings.DYNAMIC_FUNCTION.get():
        return "$DLC_DYNAMIC_FUNCTION=0"
    fixed = fixed_sizes or {}
    symbolic = {name: tuple(fixed.get(d, d) if isinstance(d, str) else d for d in shape)
                for name, shape in error.symbolic.items()}
    return dynamic_import_reason(error.proto, symbolic)


def _row_function(model, error: DynamicShapesError, options: CompileOptions
                  ) -> CompiledModel | None:
    """The one compile of a model with a batch and one other dynamic size (a sequence) at
    batch 1, for every value of the other: `DynamicModel` runs it per row of a call's batch
    where the model is separable (`dlc.batching`): BERT exported with dynamic batch and
    sequence compiles once. None when the model has no such sizes or does not compile so."""
    fixed = row_sizes(error)
    if fixed is None:
        return None
    function, _ = _dynamic_function(model, error, options, fixed)
    return function


def row_sizes(error: DynamicShapesError) -> dict[str, int] | None:
    """{batch: 1}, the size the row function fixes, for a model with a batch and one other
    dynamic size (`_row_function`), else None."""
    from dlc.batching import batch_symbol

    symbol = batch_symbol(list(error.symbolic.items()))
    others = {d for shape in error.symbolic.values() for d in shape
              if isinstance(d, str)} - {symbol}
    if symbol is None or len(others) != 1:
        return None
    return {symbol: 1}


# the folding limit of the imports a batch plan compares (onnx_folding.fold_limit): index
# arithmetic of 11 rows of up to ~95,000 positions folds at every batch the plan imports
PLAN_FOLD_ELEMENTS = 1 << 20


def _rows_planner(signature: Signature, import_at) -> Callable[[Sequence], object]:
    """`DynamicModel.plan_rows` of a model imported by `import_at(shapes, context)`."""
    def plan_rows(call_shapes: Sequence[Sequence[int]]):
        from dlc.batching import rows_plan
        from dlc.frontends.onnx_folding import fold_limit

        context = make_context()
        with context, fold_limit(PLAN_FOLD_ELEMENTS):  # (batch 1, 2 and 11 fold alike)
            return rows_plan([(s.name, s.shape) for s in signature.inputs], call_shapes,
                             lambda shapes: import_at(shapes, context))
    return plan_rows


def _exported_dynamic_model(exported, options: CompileOptions) -> DynamicModel | None:
    """The DynamicModel of a torch `ExportedProgram` exported with `dynamic_shapes` (Dims),
    None when its inputs are static: each specialization is the program exported again at the
    call's shapes (torch.export checks the Dim ranges: a size outside is a FrontendError); the
    signature names the sizes by torch's symbols (`s0`...)."""
    from dlc.frontends.torch import importer
    from dlc.frontends.torch.aten_node import element_type
    from dlc.specialize import DynamicModel

    inputs = importer.dynamic_user_inputs(exported)
    if inputs is None:
        return None

    def spec(name: str, value) -> TensorSpec:  # (a symbolic size by its symbol's name)
        element = element_type(value.dtype, f"'{name}'")
        return TensorSpec(name, tuple(d if isinstance(d, int) else str(d) for d in value.shape),
                          numpy_dtype(element))

    with make_context():  # (element types are MLIR types)
        signature = Signature(tuple(spec(n, v) for n, v in inputs),
                              tuple(spec(n, v) for n, v in importer.dynamic_outputs(exported)))
    module = exported.module()
    specialization = options.replace(input_shapes=None, constants=None, example_inputs=None,
                                     timings=False)

    def compile_for(input_shapes: dict[str, list[int]]) -> CompiledModel:
        program = importer.specialized_program(exported, module, inputs, input_shapes)
        return compile(program, options=specialization)

    def import_at(shapes: dict[str, list[int]], context: ir.Context) -> ir.Module:
        program = importer.specialized_program(exported, module, inputs, shapes)
        return import_source(program, context, specialization).module

    function, reason = _exported_function(exported, inputs, specialization)
    return DynamicModel(signature, compile_for, options.opt_level, options.threads,
                        plan_rows=_rows_planner(signature, import_at), function=function,
                        function_reason=reason,
                        size_ranges=importer.size_ranges(exported) if function else None)


def _exported_function(exported, inputs, options: CompileOptions
                       ) -> tuple[CompiledModel | None, str | None]:
    """The one compile of an exported program for every value of its one symbolic size
    (`import_graph(dynamic=...)`), or (None, why not)."""
    from dlc.frontends.torch import importer

    if not settings.DYNAMIC_FUNCTION.get():
        return None, "$DLC_DYNAMIC_FUNCTION=0"
    symbol, reason = importer.one_symbol([value for _, value in inputs])
    if symbol is None:
        return None, reason
    return _one_compile(lambda context: importer.import_torch(
        exported, None, context, dynamic=symbol), options)


def _compile(model, options: CompileOptions) -> CompiledModel:
    start = time.perf_counter()
    timer = Timer(memory=options.timings)
    with timer.active():
        key = cached = None  # (torch models: cached by their imported IR, below)
        if cache.enabled() and options.example_inputs is None and not is_torch_model(model):
            with timer.span("cache lookup"):
                key = _cache_key(model, options.opt_level, options.input_shapes,
                                 options.constants, options.threads)
                cached = _cached(key, model, options, start)
        if cached is not None:
            if not cached.timings.records:  # (loaded from disk now; a memory hit keeps its own)
                cached.timings = timer.result()
            return cached
        context = make_context()
        imported = import_source(model, context, options, timer)
        if key is None:  # (PyTorch: cached by the imported IR)
            compiled = compile_imported_cached(context, imported, options, start, timer)
            compiled.timings = timer.result()
            return compiled
        compiled = compile_imported(context, imported, options, start, timer)
        cache.remember(key, compiled)
        with timer.span("cache save"):
            cache.save(key, compiled._function, compiled.compile_seconds)
    compiled.timings = timer.result()
    return compiled


class LoweredModel:
    """A model lowered up to a stage, without machine code (`lower`): its IR and timings."""

    def __init__(self, context: ir.Context, snapshots: dict[str, ir.Operation],
                 opt_level: int, timings: Timings):
        self._context = context
        self._snapshots = snapshots
        self.opt_level = opt_level
        self.stages = tuple(snapshots)  # the stages run, in order
        self.timings = timings

    def ir(self, stage: str | None = None, large_elements_limit: int | None = None) -> str:
        """The IR after `stage` (default: the last stage run) as text."""
        stage = self.stages[-1] if stage is None else stage
        if stage not in self._snapshots:
            raise ArgumentError(f"stage {stage!r} was not run; this model was lowered through "
                             f"{', '.join(self.stages)} (of {', '.join(STAGES)})")
        limit = elide_limit(large_elements_limit)
        with self._context:
            return self._snapshots[stage].get_asm(large_elements_limit=limit)


def elide_limit(limit: int | None) -> int | None:
    """`large_elements_limit` as MLIR's printer takes it: None, or an integer >= 0 (beyond
    int64's largest, which no tensor reaches, the printer's limit)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 0:
        raise ArgumentError(f"large_elements_limit must be None or an integer >= 0, got "
                            f"{limit!r}")
    return min(int(limit), 2**63 - 1)


def lower(
    model: str | Path | bytes | onnx.ModelProto,  # or a torch.nn.Module / ExportedProgram
    stage: str = "llvm",
    opt_level: int = 2,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    example_inputs: Sequence | None = None,
    num_threads: int | None = None,
    timings: bool = False,
    *,
    options: CompileOptions | None = None,
) -> LoweredModel:
    """Import `model` and run the stages of `opt_level` up to and including `stage` only:
    no machine code is generated and the compile cache is not used. The arguments are
    `compile`'s; `.ir()` is the IR after `stage`, `.ir(earlier)` after an earlier stage. A
    model with dynamic sizes needs `input_shapes`, unless it compiles once for every size
    (`DynamicModel.function`): its IR then has the size dynamic (`tensor<?x784xf32>`)."""
    if stage not in STAGES:
        raise ArgumentError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    options = merge(options, opt_level=opt_level, input_shapes=input_shapes,
                    constants=constants, example_inputs=example_inputs,
                    num_threads=num_threads, timings=timings)
    timer = Timer(memory=options.timings)
    with timer.active():
        context = make_context()
        try:
            imported = import_source(model, context, options, timer)
        except DlcError as error:  # (a model that compiles once: its IR with the size `?`)
            imported = _dynamic_import(model, error, context, options, timer)
        return lower_imported(context, imported, options, stage, timer)


def _dynamic_import(model, error: DlcError, context: ir.Context, options: CompileOptions,
                    timer: Timer) -> ImportedModel:
    """The import with its one dynamic size of a model that `error` (a DynamicShapesError)
    found dynamic, when it compiles once (`dynamic_import_reason`); else `error` again."""
    from dlc.frontends.onnx_importer import DynamicShapesError, import_model

    if not isinstance(error, DynamicShapesError) or _dynamic_reason(error) is not None:
        raise error
    try:
        with timer.span("import"):
            return import_model(model, context, options.input_shapes, options.constants,
                                dynamic=True)
    except DlcError:  # (then the IR is built for one shape: `error` says how to give it)
        raise error from None


def lower_imported(context: ir.Context, imported: ImportedModel, options: CompileOptions,
                   stage: str = STAGES[-1], timer: Timer | None = None) -> LoweredModel:
    """Run the stages up to and including `stage` on a module a frontend imported into the
    dlc dialect of `context` (it is rewritten in place): its IR after each stage."""
    timer = timer or Timer()
    with context, tuning.session() as report:
        snapshots = _run_stages(imported.module, options, stage, timer)
    lowered = LoweredModel(context, snapshots, options.opt_level, timer.result())
    lowered.tuning = report
    return lowered


def import_source(model, context: ir.Context, options: CompileOptions,
                  timer: Timer | None = None) -> ImportedModel:
    """The model in the dlc dialect of `context` (`frontends.load`), timed as "import"."""
    with timer.span("import") if timer else contextlib.nullcontext():
        return frontends.load(model, context, options)


def default_threads() -> int:
    """$DLC_NUM_THREADS when set, else the cores this process may run on."""
    return settings.NUM_THREADS.get()


def _cache_key(model, opt_level: int, input_shapes, constants,
               num_threads: int = 1) -> str | None:
    """The compile cache's key of an ONNX model, or None (cache disabled, unreadable model)."""
    if not cache.enabled():
        return None
    data = digest = None
    onnx = sys.modules.get("onnx")  # (a ModelProto is onnx's: none unless it was imported)
    if onnx is not None and isinstance(model, onnx.ModelProto):
        data = model.SerializeToString()
    elif isinstance(model, bytes):
        data = model
    else:
        try:  # (a file: hashed once per process while it does not change, cache.file_digest)
            digest = cache.file_digest(model)
        except (OSError, TypeError, ValueError):
            return None  # (the importer reports the error)
    return cache.model_key(data, opt_level, input_shapes, constants,
                           options=f"threads={num_threads}{extension_key()}{tuning.cache_key()}",
                           model_digest=digest)


def _cached(key: str | None, model, options: CompileOptions, start: float
            ) -> CompiledModel | None:
    """A hit of the compile cache: in memory, else on disk (its IR lowered again on demand)."""
    if key is None:
        return None
    hit = cache.recall(key)
    if hit is not None:
        return hit
    function = cache.load(key)
    if function is None:
        return None
    again = options.replace(timings=False)
    compiled = CompiledModel(function, options, time.perf_counter() - start,
                             relower=lambda: lower(model, STAGES[-1], options=again))
    cache.remember(key, compiled)
    return compiled


def compile_imported(context: ir.Context, imported: ImportedModel, options: CompileOptions,
                     start: float | None = None, timer: Timer | None = None) -> CompiledModel:
    """JIT-compile a module a frontend imported into the dlc dialect of `context`, with
    `options` (`options.pipelines` replaces the opt level's stage texts: `dlc bisect`)."""
    options = options.resolve()
    start = time.perf_counter() if start is None else start
    timer = timer or Timer()
    module = imported.module
    with context:
        main = module.body.operations[0]
        signature = signature_of(main, imported.input_names, imported.output_names,
                                 imported.dynamic_size or "?")
    lowered = lower_imported(context, imported, options, STAGES[-1], timer)
    from dlc.passes.lowering import checks  # (not imported by a cache hit)

    with context:
        descriptions = checks.descriptions(module.operation)
        # LLVM: translation, -O2 and code generation (the JIT compiles on the entry's lookup,
        # which the constructor does; a module whose main was split: in parallel processes,
        # dlc.runtime.native); the weights are not in the object code: it reads them through
        # pointers bound once it is loaded to the process's one copy of each (dlc-external-
        # weights: the specializations of a model share them)
        with timer.span(MACHINE_CODE):
            external_weights.externalize(module.operation, EXTERNAL_WEIGHT_BYTES)
            weights = external_weights.take(module.operation)
            function = native.compile_module(module, signature, threads=options.threads > 1,
                                             checks=descriptions, timer=timer)
            with timer.span("(bind weights)"):
                # (held by the function; the disk cache saves them beside the object code)
                function.weights = external_weights.bind(
                    function._global_address(external_weights.TABLE_LOOKUP), weights)
            del weights
    compiled = CompiledModel(function, options, time.perf_counter() - start, lowered=lowered,
                             timings=timer.result())
    compiled.tuning = lowered.tuning
    return compiled


def compile_imported_cached(context: ir.Context, imported: ImportedModel,
                            options: CompileOptions, start: float | None = None,
                            timer: Timer | None = None) -> CompiledModel:
    """`compile_imported` through the compile cache, keyed on the imported module itself (its
    bytecode, locations included): the path of frontends whose input is no ONNX file, PyTorch's
    (`dlc.compile(module)`, `torch.compile(backend="dlc")`)."""
    options = options.resolve()
    start = time.perf_counter() if start is None else start
    timer = timer or Timer()
    if not cache.enabled() or options.pipelines is not None:
        return compile_imported(context, imported, options, start, timer)
    with timer.span("cache lookup"):
        stream = io.BytesIO()
        imported.module.operation.write_bytecode(stream)
        data = stream.getvalue()
        names = f"inputs={imported.input_names} outputs={imported.output_names}"
        key = cache.model_key(data, options.opt_level, None, None,
                              options=f"threads={options.threads} dlc-ir {names}"
                                      f"{extension_key()}{tuning.cache_key()}")
        hit = cache.recall(key)
        if hit is not None:
            return hit
        function = cache.load(key)
    if function is not None:
        def relower() -> LoweredModel:  # (the stages again from the imported IR's bytes)
            from dlc.frontends.onnx_importer import ImportedModel

            again = make_context()
            with again:
                module = ir.Module.parse(data)
            parsed = ImportedModel(module, imported.input_names, imported.output_names,
                                   imported.opset, dict(imported.constants))
            return lower_imported(again, parsed, options.replace(timings=False))

        compiled = CompiledModel(function, options, time.perf_counter() - start,
                                 relower=relower)
    else:
        compiled = compile_imported(context, imported, options, start, timer)
        with timer.span("cache save"):
            cache.save(key, compiled._function, compiled.compile_seconds)
    cache.remember(key, compiled)
    return compiled


def _run_stages(module: ir.Module, options: CompileOptions, until: str, timer: Timer
                ) -> dict[str, ir.Operation]:
    """Run the stages up to and including `until` on `module` (in its context); a snapshot
    of the IR after each, by stage. `options.pipelines` replaces the opt level's texts."""
    main = module.body.operations[0]
    main.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    snapshots: dict[str, ir.Operation] = {}
    texts = options.pipelines
    if texts is None:
        texts = stage_pipelines(options.opt_level, options.threads)
    for stage, text in texts.items():
        with timer.span(stage):
            if stage == "llvm":
                _check_lowerable(module)
            if text:
                run_stage(module, stage, text, timer)
            with timer.span("(snapshot for ir())"):
                snapshots[stage] = module.operation.clone()
        if stage == until:
            break
    return snapshots


def _check_lowerable(module: ir.Module) -> None:
    """CompileError when the bufferized module stores to a memref of i1: MLIR's MemRefToLLVM
    asserts (the process aborts) on sub-byte stores; bufferization's deallocation writes them
    when a buffer's ownership is only known at run time (dlc's bool tensors are stored as i8:
    only a schedule or rewrite that leaves such a buffer makes one)."""
    found: list[tuple[ir.Type, ir.Location]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.store":
            element = ir.MemRefType(op.operands[1].type).element_type
            if isinstance(element, ir.IntegerType) and element.width < 8:
                found.append((element, op.location))
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        element, location = found[0]
        raise CompileError(f"stage 'llvm' would fail: a store to a memref of {element} at "
                           f"{location} (a buffer whose ownership bufferization could only "
                           "decide at run time), which MLIR's MemRefToLLVM cannot lower")


def verify_each() -> bool:
    """Whether every pipeline element's IR is verified after it runs ($DLC_VERIFY_EACH=1), not
    only after dlc's own (Python) passes and at the end of each stage (the default)."""
    return settings.VERIFY_EACH.get()


def _runs_dlc_pass(element, passes: Mapping[str, object]) -> bool:
    """Whether pipeline `element` is or holds one of dlc's (Python) passes."""
    if element.children is None:
        return element.name in passes
    return any(_runs_dlc_pass(child, passes) for child in element.children)


def run_stage(module: ir.Module, stage: str, text: str, timer: Timer | None = None) -> None:
    """Run the pipeline `text` of `stage` on `module`, each module-level element by a
    PassManager of its own, timed in `timer` (when given) under the element's name.

    The IR is verified after each of dlc's own (Python) passes, the ones a bug of ours (or a
    plugin's) could leave invalid, and once at the end of the stage; upstream MLIR passes are
    not verified one by one (verifying a BERT-size module after each of the llvm stage's twenty
    conversions cost a quarter of the stage) unless $DLC_VERIFY_EACH=1. dlc-opt verifies after
    every pass, as mlir-opt does (`--verify-each`)."""
    from dlc.passes import registered_passes

    each = verify_each()
    passes = registered_passes()
    with timer.span("(build pass managers)") if timer else contextlib.nullcontext():
        # (all built before any runs: a bad element fails first; an anchor is named with
        # its passes, a pass without its options)
        elements = []
        for element in parse_pipeline(text):
            pm = build_pass_manager(element.text())
            pm.enable_verifier(each or _runs_dlc_pass(element, passes))
            elements.append((element.text() if element.children is not None else element.name,
                             pm))
    for name, pm in elements:
        try:
            with timer.span(name) if timer else contextlib.nullcontext():
                pm.run(module.operation)
        except ir.MLIRError as error:
            raise CompileError(f"stage '{stage}' failed:\n{format_diagnostics(error)}") from None
    if elements and not each:
        with timer.span("(verify)") if timer else contextlib.nullcontext():
            _verify(module, stage)


def _verify(module: ir.Module, stage: str) -> None:
    """CompileError (with MLIR's diagnostics) unless `module` verifies after `stage`."""
    try:
        module.operation.verify()
    except ir.MLIRError as error:
        raise CompileError(f"stage '{stage}' failed: its IR does not verify:\n"
                           f"{format_diagnostics(error)}") from None


def signature_of(main: ir.Operation, input_names: list[str], output_names: list[str],
                 dynamic_name: str = "?") -> Signature:
    """The signature of the imported `main` with its inputs' and outputs' names; a dynamic
    size (a function has one: `dlc-to-linalg`) is shown by `dynamic_name`."""
    function_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)

    def specs(names: list[str], types) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(n, tuple(dynamic_name if ir.ShapedType.is_dynamic_size(d)
                                         else d for d in t.shape),
                                numpy_dtype(t.element_type))
                     for n, t in zip(names, types))

    return Signature(specs(input_names, function_type.inputs),
                     specs(output_names, function_type.results))
