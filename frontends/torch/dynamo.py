"""The torch.compile backend: `torch.compile(model, backend="dlc")`.

dlc registers `dlc_backend` under the `torch_dynamo_backends` entry point (pyproject.toml),
so the name "dlc" works once dlc is installed. Dynamo hands the backend each FX graph it
captures; AOTAutograd (with torch's core ATen decompositions) turns it into a graph of core
ATen ops, which `importer.import_graph` imports and `dlc.compiler` JIT-compiles. Every graph
input stays an input of the compiled function (parameters included: Dynamo passes them at each
call), so a model whose weights change keeps working. A graph dlc cannot compile (an
unsupported op, a dtype) runs eagerly instead, with a warning naming the reason. A graph with
symbolic sizes (`torch.compile(dynamic=True)`, or sizes Dynamo saw change) becomes a
`DynamicGraph`: where its tensors have one symbolic size (a sequence at batch 1, which Dynamo
specializes) and its ops take it, dlc compiles it once, that size dynamic
(`import_graph(dynamic=...)`: BERT and GPT-2 from transformers do); else at each call with
new sizes it is traced again with them (`make_fx` on fake tensors: no computation) and dlc
compiles that static graph, a specialization kept like a
`dlc.specialize.DynamicModel`'s (bounded, least recently used dropped first), so Dynamo neither
recompiles nor falls back; a batch the graph computes row by row (`dlc.batching`) runs
batch-1 code once per row: the graph with its batch imported at 1 and its other symbol
dynamic, compiled once (`row_function`), else a specialization per value of the other sizes; the backward graph of a model trained under torch.compile always runs eagerly (dlc
compiles inference). Options: `torch.compile(model, backend="dlc", options={"opt_level": 1,
"num_threads": 4, "freeze": True})` (the default threads are `dlc.compile`'s:
$DLC_NUM_THREADS, else the cores); compiled graphs go through the compile cache like
`dlc.compile`'s, keyed on their IR. `freeze=True` compiles the module's parameters and buffers
as constants, as `dlc.compile(module)` does: weights are then packed (and batch norms folded)
once at compile time instead of at each call, but a later change to them is not seen
(inference only: a graph captured with gradients enabled keeps them as inputs).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from functorch.compile import make_boxed_func
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._subclasses.fake_tensor import unset_fake_temporarily

from dlc.dialects import make_context
from dlc.errors import DlcError
from dlc.frontends.common import FrontendError
from dlc.frontends.torch.importer import import_graph, one_symbol


class DlcFallbackWarning(UserWarning):
    """A graph torch.compile gave dlc runs eagerly (the message says why)."""


def compile_graph(graph_module: torch.fx.GraphModule, opt_level: int = 2,
                  num_threads: int | None = None,
                  frozen: dict[int, torch.Tensor] | None = None
                  ) -> Callable[..., list[torch.Tensor]]:
    """A function running `graph_module` (core ATen ops) compiled by dlc: tensors in and out.
    `num_threads` and the compile cache behave as in `dlc.compile`. The inputs at the
    positions of `frozen` are compiled as those constants (the function still takes them,
    and ignores them)."""
    from dlc.compiler import compile_imported_cached
    from dlc.options import CompileOptions

    frozen = frozen or {}
    context = make_context()
    imported = _import(graph_module, frozen, context)
    options = CompileOptions(opt_level=opt_level, num_threads=num_threads).resolve()
    model = compile_imported_cached(context, imported, options)

    def run(*args: torch.Tensor) -> list[torch.Tensor]:
        # (a CompiledModel takes and returns torch tensors)
        return model(*[a for i, a in enumerate(args) if i not in frozen])

    run.compiled_model = model  # (for inspection: run.compiled_model.ir("linalg"))
    return run


def _import(graph_module: torch.fx.GraphModule, frozen: dict[int, torch.Tensor], context,
            dynamic: Any = None, fixed: dict | None = None):
    """`graph_module` in the dlc dialect of `context`, its inputs at `frozen` constants (and
    the symbol `dynamic` its dynamic size, those of `fixed` at their values: `import_graph`)."""
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    constants = {placeholders[i].name: tensor for i, tensor in frozen.items()}
    # (AOTAutograd calls its compilers in a FakeTensorMode, where the frozen tensors, real
    # ones, cannot be read)
    with unset_fake_temporarily() if frozen else contextlib.nullcontext():
        return import_graph(graph_module.graph, context, constants, attributes=graph_module,
                            dynamic=dynamic, fixed=fixed)


def _symbolic(example_inputs: Sequence) -> bool:
    """Whether Dynamo's graph has symbolic sizes (SymInt inputs, or tensors sized by them)."""
    return any(isinstance(e, torch.SymInt) or isinstance(e, torch.Tensor) and not all(
        isinstance(d, int) for d in e.shape) for e in example_inputs)


class DynamicGraph:
    """A graph with symbolic sizes, compiled by dlc once for every value of its one symbolic
    size where it can (`function`; else `function_reason` says why), else per distinct call
    shape: traced again with the call's sizes (`make_fx`, fake tensors), the static graph
    compiled by `compile_graph`.
    The size inputs (SymInts), fixed in each specialization, are ignored there like frozen
    ones. A batch (a symbol at axis 0 of tensor inputs, at no other axis) that the graph
    computes row by row runs batch-1 code once per row: the graph at batch 1 compiled once
    for every value of its other symbol (`row_function`), else a specialization per value
    of the other sizes (`dlc.batching`, as `DynamicModel`: `rows`, `rows_reason`)."""

    def __init__(self, graph_module: torch.fx.GraphModule, opt_level: int,
                 num_threads: int | None, frozen: dict[int, torch.Tensor]):
        from dlc.specialize import RowPlans, Specializations, default_max_specializations

        self.graph_module = graph_module
        self.opt_level, self.num_threads, self.frozen = opt_level, num_threads, frozen
        self.specializations = Specializations(default_max_specializations())
        values = [n.meta.get("val") for n in graph_module.graph.nodes if n.op == "placeholder"]
        # the positions of the compiled function's inputs: the tensors not frozen
        self._inputs = [i for i, v in enumerate(values)
                        if isinstance(v, torch.Tensor) and i not in frozen]
        self._symbol = _batch_symbol(values, self._inputs)
        symbolic = [(f"input{i}", tuple(str(d) if isinstance(d, torch.SymInt) else int(d)
                                        for d in values[i].shape)) for i in self._inputs]
        self._rows = RowPlans.of(symbolic, self._plan_rows if self._symbol is not None
                                 else None, default_max_specializations())  # (per call: decide)
        if self._symbol is None and self._rows.reason is None:
            self._rows.reason = "the batch must be one symbol at axis 0 of the inputs only"
        self._values = values
        self.function, self.function_reason = self._compile_once()
        # the graph at batch 1 compiled once for every value of its other symbolic size (a
        # sequence), run per row where the batch is separable (compiled at the first call
        # run by rows); None: per row shapes
        self.row_function = None
        self._row_tried = self.function is not None or self._symbol is None

    @property
    def compiles(self) -> int:
        return self.specializations.compiles + (self.function is not None) + \
            (self.row_function is not None)

    def _compile_once(self, fixed: dict | None = None) -> tuple[Any, str | None]:
        """The graph compiled once for every value of its one symbolic size (the import's
        dynamic size `?`, `import_graph(dynamic=...)`; the symbols of `fixed` at their
        values), or (None, why not): the graph is then compiled per call shape. Off with
        $DLC_DYNAMIC_FUNCTION=0."""
        from dlc import settings
        from dlc.compiler import compile_imported_cached
        from dlc.options import CompileOptions

        if not settings.DYNAMIC_FUNCTION.get():
            return None, "$DLC_DYNAMIC_FUNCTION=0"
        symbol, reason = one_symbol([self._values[i] for i in self._inputs], fixed or {})
        if symbol is None:
            return None, reason
        context = make_context()
        try:
            with unset_fake_temporarily():  # (constants and frozen tensors are real ones)
                imported = _import(self.graph_module, self.frozen, context, symbol, fixed)
            options = CompileOptions(opt_level=self.opt_level,
                                     num_threads=self.num_threads).resolve()
            return compile_imported_cached(context, imported, options), None
        except DlcError as failure:  # (per call shape instead: the same compiler, static)
            return None, f"its compile with a dynamic size failed: {failure}"
        except Exception as failure:  # noqa: BLE001
            # (torch's fake tensors, or a converter or pattern that computed from the dynamic
            # size as from a static one: a bug of the dynamic path, which must not fail a
            # graph dlc compiles per call shape)
            return None, (f"its compile with a dynamic size failed: "
                          f"{type(failure).__name__}: {failure}")

    @property
    def rows(self) -> Any:
        return self._rows.plan

    @property
    def rows_reason(self) -> str | None:
        return self._rows.reason

    @staticmethod
    def _key(args: Sequence) -> tuple:
        return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else int(a)
                     for a in args)

    def __call__(self, *args: Any) -> list[torch.Tensor]:
        if self.function is not None:
            return self.function(*[args[i] for i in self._inputs])
        run = self.specializations.recall(self._key(args))
        if run is not None:  # (a shape compiled before: no decision to look up)
            return run(*args)
        if self._rows.enabled:
            tensors = [args[i].contiguous() for i in self._inputs]
            shapes = tuple(tuple(t.shape) for t in tensors)
            row_shapes = self._rows.decide(
                shapes, lambda rows: self._row_model(args, rows),
                lambda call_shapes: self._plan_rows(call_shapes, args))
            if row_shapes is not None:
                from dlc.specialize import run_rows

                model = self._row_model(args, row_shapes)
                outputs = run_rows(model._function, [
                    (t.data_ptr(), t.numel() * t.element_size()) for t in tensors],
                    self._rows.batched, shapes, row_shapes)
                return [torch.from_numpy(o) for o in outputs]
        return self._specialization(args)(*args)

    def _row_model(self, args: Sequence, row_shapes: Sequence[Sequence[int]]) -> Any:
        """The compiled model of one row: the row function, else the specialization."""
        if not self._row_tried:
            self._row_tried = True
            self.row_function, _ = self._compile_once({self._symbol: 1})
        if self.row_function is not None:
            return self.row_function
        return self._specialization(self._args_at(args, row_shapes)).compiled_model

    def _specialization(self, args: Sequence) -> Callable:
        return self.specializations.get(self._key(args), lambda: self._compile(args))

    def _args_at(self, args: Sequence, shapes: Sequence[Sequence[int]]) -> list:
        """`args` with the compiled inputs of `shapes` (zeros: only their shapes are traced)
        and the batch's size inputs set to the batch of `shapes`."""
        sized = list(args)
        batch = None
        for i, shape, batched in zip(self._inputs, shapes, self._rows.batched):
            if tuple(args[i].shape) != tuple(shape):
                sized[i] = torch.zeros(shape, dtype=args[i].dtype)
            if batched:
                batch = shape[0]
        for i, value in enumerate(self._values):
            if isinstance(value, torch.SymInt) and value.node.expr == self._symbol:
                sized[i] = batch
        return sized

    def _plan_rows(self, shapes, args: Sequence):
        """batching.rows_plan of the graph traced at the call's (`args`) other sizes."""
        from dlc.batching import rows_plan

        context = make_context()

        def import_at(sized: dict) -> Any:
            at = self._args_at(args, [sized[f"input{i}"] for i in self._inputs])
            static = self._trace(at)
            fixed = {i: torch.tensor(int(a)) for i, a in enumerate(at)
                     if not isinstance(a, torch.Tensor)}
            return _import(static, {**self.frozen, **fixed}, context).module

        symbolic = [(f"input{i}", (str(self._symbol), *shape[1:]) if batched else shape)
                    for i, shape, batched in zip(self._inputs, shapes, self._rows.batched)]
        with context:
            return rows_plan(symbolic, shapes, import_at)

    def _trace(self, args: Sequence) -> torch.fx.GraphModule:
        from torch.fx.experimental.proxy_tensor import make_fx

        try:
            return make_fx(self.graph_module, tracing_mode="fake")(*args)
        except Exception as error:  # (torch raises many kinds; say which step and shapes)
            shapes = [list(a.shape) if isinstance(a, torch.Tensor) else int(a) for a in args]
            first = (str(error).strip().splitlines() or [repr(error)])[0]
            raise FrontendError(f"the graph with symbolic sizes could not be traced again at "
                                f"{shapes}: {type(error).__name__}: {first}") from error

    def _compile(self, args: Sequence) -> Callable:
        static = self._trace(args)
        fixed = {i: torch.tensor(int(a)) for i, a in enumerate(args)
                 if not isinstance(a, torch.Tensor)}  # (sizes: constants, unused once traced)
        return compile_graph(static, self.opt_level, self.num_threads, {**self.frozen, **fixed})


def _batch_symbol(values: Sequence, inputs: Sequence[int]) -> Any:
    """The symbol at axis 0 of the compiled tensor inputs that have one there, when it is one
    bare symbol found in no other size (of any input, or of a size input other than itself),
    else None."""
    firsts, others = set(), set()
    for i in inputs:
        dims = list(values[i].shape)
        for axis, d in enumerate(dims):
            if not isinstance(d, torch.SymInt):
                continue
            expr = d.node.expr
            if axis == 0 and expr.is_Symbol:
                firsts.add(expr)
            else:
                others |= expr.free_symbols
    for value in values:
        if isinstance(value, torch.SymInt) and not value.node.expr.is_Symbol:
            others |= value.node.expr.free_symbols
    if len(firsts) != 1 or firsts & others:
        return None
    return next(iter(firsts))


def _aligned(graph_module: torch.fx.GraphModule, inputs: int,
             state: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
    """`state` where AOTAutograd's graph takes Dynamo's `inputs` one to one (an inference
    graph: it may dedupe or merge aliased inputs otherwise), else nothing to freeze."""
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != inputs:
        return {}
    for i, tensor in state.items():
        value = placeholders[i].meta.get("val")
        if not isinstance(value, torch.Tensor) or value.shape != tensor.shape or \
                value.dtype != tensor.dtype:
            return {}
    return state


def _forward_compiler(opt_level: int, num_threads: int | None, inputs: int = 0,
                      state: dict[int, torch.Tensor] | None = None) -> Callable:
    def compile_forward(graph_module: torch.fx.GraphModule, example_inputs: Sequence) -> Any:
        frozen = _aligned(graph_module, inputs, state) if state else {}
        if _symbolic(example_inputs):
            return make_boxed_func(DynamicGraph(graph_module, opt_level, num_threads, frozen))
        try:
            return make_boxed_func(compile_graph(graph_module, opt_level, num_threads, frozen))
        except DlcError as error:
            warnings.warn(f"dlc could not compile a graph, which runs eagerly instead: {error}",
                          DlcFallbackWarning, stacklevel=2)
            return make_boxed_func(graph_module.forward)

    return compile_forward


def _eager(graph_module: torch.fx.GraphModule, example_inputs: Sequence) -> Any:
    return make_boxed_func(graph_module.forward)


def _is_module_state(node: torch.fx.Node, example: Any) -> bool:
    """A Dynamo graph input that is a parameter or a buffer of the module."""
    if isinstance(example, torch.nn.Parameter):
        return True
    source = getattr(node.meta.get("grapharg"), "source", None)
    return source is not None and "._buffers[" in source.name


def module_state(graph_module: torch.fx.GraphModule, example_inputs: Sequence
                 ) -> dict[int, torch.Tensor]:
    """The module's parameters and buffers among Dynamo's graph inputs, by position."""
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    return {i: example.detach() for i, (node, example) in
            enumerate(zip(placeholders, example_inputs))
            if _is_module_state(node, example)}


def dlc_backend(graph_module: torch.fx.GraphModule, example_inputs: Sequence,
                options: dict[str, Any] | None = None, **kwargs: Any) -> Callable:
    """The torch.compile backend "dlc" (the signature Dynamo calls backends with)."""
    from dlc.errors import ArgumentError
    from dlc.options import CompileOptions

    if options is not None and not isinstance(options, Mapping):
        raise ArgumentError(f"the dlc backend's options must be a dict, got "
                            f"{type(options).__name__}")
    settings = {**(options or {}), **kwargs}
    unknown = set(settings) - {"opt_level", "num_threads", "freeze"}
    if unknown:
        raise ArgumentError(f"unknown dlc backend options {sorted(unknown)}; known: opt_level, "
                            "num_threads, freeze")
    if settings.get("freeze", False) not in (True, False):  # (0 and 1 too)
        raise ArgumentError(f"the dlc backend's freeze option is True or False, got "
                            f"{settings['freeze']!r}")
    # checked here, as dlc.compile's arguments are: a bad value is the caller's error, not a
    # graph dlc cannot compile (which runs eagerly, with a DlcFallbackWarning)
    CompileOptions(opt_level=settings.get("opt_level", 2),
                   num_threads=settings.get("num_threads")).resolve()
    # (frozen for inference only, as inductor's freezing: a training graph keeps its weights)
    freeze = settings.get("freeze") and not torch.is_grad_enabled()
    state = module_state(graph_module, example_inputs) if freeze else {}
    forward = _forward_compiler(settings.get("opt_level", 2), settings.get("num_threads"),
                                len(example_inputs), state)
    backend = aot_autograd(fw_compiler=forward,
                           bw_compiler=_eager, decompositions=core_aten_decompositions())
    return backend(graph_module, example_inputs)
