"""Models with dynamic dimensions, compiled per call shape: `dlc.compile` returns a
`DynamicModel` for an ONNX model whose graph inputs have dynamic sizes (`batch`, `sequence`,
or unnamed) that `input_shapes` does not fix, and for a torch `ExportedProgram` exported with
`Dim`s. This module holds the model and its signature; `dlc.compiler` gives it the function
that compiles one specialization (`compile_for`), so that it does not import the compiler.

Its signature shows the dynamic sizes by name (`input_ids: int64[batch, seq]`). A call checks
the inputs' dtypes, ranks and fixed sizes, and that the inputs which share a name agree on its
size (an `InputError`, a ValueError, naming both otherwise); it then runs the static
specialization compiled for the inputs' shapes, compiling it on the first call with them
(JIT specialization, as `dlc.backend` and torch.compile without `dynamic` do). Each
specialization is an ordinary `CompiledModel` (`specialize(shapes)` gives it; `ir(stage,
shapes)` its IR), with the code and the speed of a static compile for its shapes, and goes
through the compile cache: a shape seen before, in this process or an earlier one, is loaded,
not compiled again. At most `max_specializations` of them are kept, least recently used
dropped first (default 8, `$DLC_MAX_SPECIALIZATIONS`).

One compile for every batch: when a batch is dynamic at axis 0 and the model computes each
row on its own (`dlc.batching`, checked on the dlc module: `plan_rows`, at the first call
with each value of the other sizes), the batch-1 specialization is compiled and every call,
at any batch, runs it once per row on views of the inputs and outputs (`rows`: the plan
decided last; `rows_reason` says why a model is not run so; `$DLC_BATCH_ROWS=0` turns it
off).

What this is not (yet): one compiled function for every shape. Another dynamic size
(a sequence length) still compiles per value: the first call with a new one pays a compile
(seconds for a real model, see `compile_seconds` of each specialization).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from dlc import settings
from dlc.errors import ArgumentError, DlcError, InputError
from dlc.frontends.onnx_importer import symbolic_shape
from dlc.frontends.torch.tensors import call_with_tensors, holds_torch_tensors
from dlc.options import check_shapes
from dlc.runtime.signature import Signature, TensorSpec, address

DEFAULT_MAX_SPECIALIZATIONS = 8

Shapes = tuple[tuple[int, ...], ...]  # the shapes of a call's inputs, in signature order


def default_max_specializations() -> int:
    """$DLC_MAX_SPECIALIZATIONS when set (at least 1), else 8."""
    return settings.MAX_SPECIALIZATIONS.get()


def _dtype(value: onnx.ValueInfoProto, what: str) -> np.dtype:
    elem_type = value.type.tensor_type.elem_type
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        raise DlcError(f"{what} '{value.name}' has the element type "
                       f"{onnx.TensorProto.DataType.Name(elem_type)}, which dlc does not "
                       "support") from None


def _output_shape(value: onnx.ValueInfoProto) -> tuple[int | str, ...]:
    """A graph output's declared shape (names for dynamic sizes; `...` when its rank is not
    declared either: it is known per specialization)."""
    if not value.type.tensor_type.HasField("shape"):
        return ("...",)
    return symbolic_shape(value)


def symbolic_signature(proto: onnx.ModelProto, symbolic: Mapping[str, tuple[int | str, ...]]
                       ) -> Signature:
    """The signature of `proto`'s inputs `symbolic` (their shapes) and declared outputs."""
    values = {v.name: v for v in proto.graph.input}
    inputs = tuple(TensorSpec(name, shape, _dtype(values[name], "graph input"))
                   for name, shape in symbolic.items())
    outputs = tuple(TensorSpec(o.name, _output_shape(o), _dtype(o, "graph output"))
                    for o in proto.graph.output)
    return Signature(inputs, outputs)


class Specializations:
    """Compiled specializations by key (a call's shapes), at most `limit` kept, the least
    recently used dropped first; one compile at a time, while calls of kept keys go on. The
    store of `DynamicModel` and of torch.compile's `DynamicGraph`."""

    def __init__(self, limit: int):
        self.limit = limit
        self.compiles = 0  # compiled (or loaded from the disk cache), all together
        self._kept: OrderedDict[Any, Any] = OrderedDict()
        self._compile_lock = threading.Lock()
        self._kept_lock = threading.Lock()  # (held briefly: the LRU order and the count)

    def __len__(self) -> int:
        return len(self._kept)

    def kept(self) -> list:
        """The keys kept, least recently used first."""
        return list(self._kept)

    def last(self) -> Any | None:
        """The specialization used last, or None."""
        with self._kept_lock:
            return next(reversed(self._kept.values()), None)

    def recall(self, key: Any) -> Any | None:
        """The specialization kept for `key`, now the most recently used, or None."""
        with self._kept_lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def get(self, key: Any, compile: Callable[[], Any]) -> Any:
        """The specialization for `key`, `compile()`d when it is not kept."""
        found = self.recall(key)
        if found is not None:
            return found
        with self._compile_lock:
            found = self.recall(key)  # (another thread may have compiled it meanwhile)
            if found is not None:
                return found
            compiled = compile()
            with self._kept_lock:
                self.compiles += 1
                self._kept[key] = compiled
                while len(self._kept) > self.limit:
                    self._kept.popitem(last=False)
            return compiled


class RowPlans:
    """How a model with a dynamic batch runs (`dlc.batching`): per value of its other sizes,
    the batch-1 shapes whose code runs once per row, or None (compiled per shape), decided at
    the first call with that value; at most `limit` decisions kept, least recently used
    dropped first. `plan` and `reason` tell the last decision. Shared by `DynamicModel` and
    torch.compile's `DynamicGraph`."""

    def __init__(self, batched: tuple[bool, ...], plan_rows: Callable[[Shapes], Any] | None,
                 limit: int, reason: str | None = None):
        self.batched = batched  # per input: whether its axis 0 is the batch
        self.enabled = plan_rows is not None
        self._plan_rows = plan_rows  # a call's shapes -> a RowsPlan, or NotSeparable
        self.limit = limit
        self.plan: Any = None
        self.reason = reason
        # the call's shapes but the batch -> batch-1 shapes, or None: per shape
        self._decided: OrderedDict[Shapes, Shapes | None] = OrderedDict()
        self._lock = threading.Lock()  # (held briefly: the order)
        self._decide_lock = threading.Lock()  # (one decision at a time)

    @classmethod
    def of(cls, inputs: Sequence[tuple[str, tuple[int | str, ...]]],
           plan_rows: Callable[[Shapes], Any] | None, limit: int) -> RowPlans:
        """The plans of a model whose inputs have these symbolic shapes (disabled without
        `plan_rows`, with $DLC_BATCH_ROWS=0, or without one batch symbol at axis 0 only)."""
        if plan_rows is None:
            return cls((), None, limit)
        if not settings.BATCH_ROWS.get():
            return cls((), None, limit, "DLC_BATCH_ROWS=0")
        from dlc.batching import batch_symbol

        symbol = batch_symbol(inputs)
        if symbol is None:
            return cls((), None, limit, "the batch must be one named dynamic size, at axis 0 "
                                        "of the inputs only")
        return cls(tuple(bool(shape) and shape[0] == symbol for _, shape in inputs),
                   plan_rows, limit)

    def decide(self, shapes: Shapes, specialize: Callable[[Shapes], Any],
               plan_rows: Callable[[Shapes], Any] | None = None) -> Shapes | None:
        """The batch-1 shapes to run per row for a call of `shapes`, or None (per shape);
        `specialize(shapes)` compiles (or recalls) the batch-1 specialization; `plan_rows`,
        when given, plans instead of the one given at construction (a call's own)."""
        key = tuple(tuple(-1 if batched and axis == 0 else d for axis, d in enumerate(shape))
                    for shape, batched in zip(shapes, self.batched))
        with self._lock:
            if key in self._decided:
                self._decided.move_to_end(key)
                return self._decided[key]
        with self._decide_lock:
            if key not in self._decided:
                decided = self._decide(shapes, specialize, plan_rows or self._plan_rows)
                with self._lock:
                    self._decided[key] = decided
                    while len(self._decided) > self.limit:
                        self._decided.popitem(last=False)
            return self._decided[key]

    def _decide(self, shapes: Shapes, specialize: Callable[[Shapes], Any],
                plan_rows: Callable[[Shapes], Any]) -> Shapes | None:
        from dlc.batching import NotSeparable

        try:
            plan = plan_rows(shapes)
        except NotSeparable as reason:
            self.plan, self.reason = None, str(reason)
            return None
        row_shapes = tuple((1, *shape[1:]) if batched else tuple(shape)
                           for shape, batched in zip(shapes, self.batched))
        public = specialize(row_shapes)._function.signature
        if public.bounds or any(not spec.shape or spec.shape[0] != 1
                                for spec in public.outputs):
            self.plan, self.reason = None, "an output is not one row at batch 1"
            return None
        self.plan, self.reason = plan, None
        return row_shapes


def run_rows(function: Any, inputs: Sequence[tuple[int, int]], batched: Sequence[bool],
             shapes: Shapes, row_shapes: Shapes | None = None) -> list[np.ndarray]:
    """The outputs of `function` (a batch-1 NativeFunction) called once per row of the batch
    on views of the inputs (C-contiguous buffers: (address, bytes) each, of `shapes`) and of
    the outputs (numpy arrays, returned); a function with a dynamic size (a sequence) is
    given the rows' shapes (`row_shapes`, the inputs')."""
    batch = next(shape[0] for shape, b in zip(shapes, batched) if b)
    call_shapes = None
    if function.dynamic:
        sizes = function.signature.bind_symbols(row_shapes)
        rows = [tuple(function.signature.output_shape(spec.shape, sizes))
                for spec in function.signature.outputs]
        call_shapes = [*row_shapes, *rows]
    else:
        rows = [spec.shape for spec in function.signature.outputs]
    outputs = [np.empty((batch, *row[1:]), spec.dtype)
               for row, spec in zip(rows, function.signature.outputs)]
    steps = [size // batch if b and batch else 0 for (_, size), b in zip(inputs, batched)]
    steps += [o.nbytes // batch if batch else 0 for o in outputs]
    starts = [start for start, _ in inputs] + [address(o) for o in outputs]
    for row in range(batch):
        function.call_addresses([start + row * step for start, step in zip(starts, steps)],
                                call_shapes)
    return outputs


class DynamicModel:
    """A model with dynamic input sizes, compiled once per distinct call shape.

    Called like a `CompiledModel` (numpy arrays or torch tensors, positional or by name).
    """

    def __init__(self, signature: Signature,
                 compile_for: Callable[[dict[str, list[int]]], Any], opt_level: int = 2,
                 num_threads: int = 1, max_specializations: int | None = None,
                 plan_rows: Callable[[Shapes], Any] | None = None,
                 function: Any | None = None, function_reason: str | None = None,
                 row_function: Any | None = None,
                 size_ranges: Mapping[str, tuple[int, int | None]] | None = None):
        self.signature = signature
        # the range [low, high] of named sizes (torch.export's Dims), checked at each call of
        # `function` (a specialization is exported again at its shapes: torch checks them)
        self.size_ranges = dict(size_ranges or {})
        # one CompiledModel for every value of the model's one dynamic size (compiled with it
        # dynamic), which then runs every call; else None and why (`function_reason`)
        self.function = function
        self.function_reason = function_reason
        # one CompiledModel at batch 1 for every value of the model's other dynamic size (a
        # sequence), run per row where the model is separable (for every call shape), or None
        self.row_function = row_function
        self._compile_for = compile_for  # input shapes (all, by name) -> a CompiledModel
        self.opt_level = opt_level
        self.num_threads = num_threads
        self.max_specializations = max_specializations or default_max_specializations()
        self._compiled = Specializations(self.max_specializations)
        self.compile_seconds = 0.0  # the specializations' compile time, all together
        self._rows = RowPlans.of([(spec.name, spec.shape) for spec in signature.inputs],
                                 plan_rows, self.max_specializations)

    @property
    def rows(self) -> Any:
        """The `batching.RowsPlan` decided last (None: compiled per shape, `rows_reason`)."""
        return self._rows.plan

    @property
    def rows_reason(self) -> str | None:
        """Why the last decision was per shape (None when it was per row, or not asked)."""
        return self._rows.reason

    @property
    def compiles(self) -> int:
        """Compiles made (or loaded from the disk cache): the one of `function`, and each
        specialization's."""
        return self._compiled.compiles + (self.function is not None) + \
            (self.row_function is not None)

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.signature.inputs]

    @property
    def output_names(self) -> list[str]:
        return self.signature.output_names

    @property
    def specializations(self) -> list[dict[str, tuple[int, ...]]]:
        """The input shapes of the specializations kept, least recently used first."""
        return [dict(zip(self.input_names, shapes)) for shapes in self._compiled.kept()]

    def __call__(self, *args, **kwargs) -> list[np.ndarray]:
        if holds_torch_tensors(args, kwargs):  # torch tensors in, torch tensors out
            return call_with_tensors(self, args, kwargs)
        arrays = self.signature.check_dtypes(args, kwargs)
        shapes = tuple(a.shape for a in arrays)
        if self.function is not None:  # (it binds the sizes: checks the shapes)
            if self.size_ranges:
                self._check_ranges(shapes)
            return self.function._function.run(arrays)
        compiled = self._compiled.recall(shapes)
        if compiled is None:  # (a shape seen before fits the signature: checked then)
            self.signature.bind_symbols(shapes)
            if self.row_function is not None and self._rows.enabled and all(
                    shape[0] == 1 for shape, b in zip(shapes, self._rows.batched) if b):
                return self.row_function._function.run(arrays)  # (batch 1: the model's row)
            specialize = self._row_specialization
            row_shapes = self._rows.decide(shapes, specialize) if self._rows.enabled else None
            if row_shapes is not None:
                function = specialize(row_shapes)._function  # (kept: a lookup)
                return run_rows(function, [(address(a), a.nbytes) for a in arrays],
                                self._rows.batched, shapes, row_shapes)
            compiled = self._specialization(shapes)
        return compiled._function.run(arrays)  # (the arrays are checked: not again)

    def _check_ranges(self, shapes: Shapes) -> None:
        for spec, shape in zip(self.signature.inputs, shapes):
            for axis, (name, value) in enumerate(zip(spec.shape, shape)):
                low, high = self.size_ranges.get(name, (0, None))
                if value < low or (high is not None and value > high):
                    raise InputError(
                        f"input '{spec.name}' has size {value} at axis {axis}, outside the "
                        f"range [{low}, {'inf' if high is None else high}] of its dimension "
                        f"{name} (its torch.export.Dim)")

    def specialize(self, input_shapes: Mapping[str, Sequence[int]]) -> Any:
        """The `CompiledModel` for these input shapes (every input's, by name), compiled now
        when it was not yet; `InputError` when they do not fit the signature."""
        check_shapes(input_shapes)  # (a mapping of integer sizes: ArgumentError)
        unknown = sorted(set(input_shapes) - set(self.input_names))
        missing = [n for n in self.input_names if n not in input_shapes]
        if unknown or missing:
            raise InputError(f"input_shapes must give every input's shape: missing {missing}, "
                             f"unknown {unknown}; signature {self.signature}")
        shapes = tuple(tuple(int(d) for d in input_shapes[n]) for n in self.input_names)
        self.signature.bind_symbols(shapes)
        return self._specialization(shapes)

    def _row_specialization(self, row_shapes: Shapes) -> Any:
        """The batch-1 CompiledModel run per row for rows of `row_shapes`: the row function
        when there is one (every value of the other size), else the specialization."""
        if self.row_function is not None:
            return self.row_function
        return self._specialization(row_shapes)

    def _specialization(self, shapes: Shapes) -> Any:
        def compile() -> Any:  # (under the store's compile lock)
            compiled = self._compile_for({n: list(shape)
                                          for n, shape in zip(self.input_names, shapes)})
            self.compile_seconds += compiled.compile_seconds
            return compiled

        return self._compiled.get(shapes, compile)

    def ir(self, stage: str = "dlc", input_shapes: Mapping[str, Sequence[int]] | None = None,
           large_elements_limit: int | None = None) -> str:
        """The IR after `stage` of the specialization for `input_shapes` (compiled when not
        yet); without them, of the model's one compile (`function`), else of the
        specialization used last, else of the row function (`row_function`)."""
        if input_shapes is None and self.function is not None:
            return self.function.ir(stage, large_elements_limit)
        compiled = self._compiled.last() if input_shapes is None else \
            self.specialize(input_shapes)
        if compiled is None and input_shapes is None:
            compiled = self.row_function
        if compiled is None:
            raise ArgumentError(f"{self!r} has no specialization yet: call it, or pass "
                                "input_shapes (the IR is built for one shape)")
        return compiled.ir(stage, large_elements_limit)

    def __repr__(self) -> str:
        mode = "; one compile for every batch, run per row" if self.rows is not None else ""
        if self.function is not None:
            mode = "; one compile for every size"
        return (f"DynamicModel{self.signature} (opt_level={self.opt_level}, "
                f"{len(self._compiled)} specialization{'s' * (len(self._compiled) != 1)}{mode})")

