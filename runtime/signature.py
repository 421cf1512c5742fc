"""The compiled signature of a model: named tensors with shapes and numpy dtypes, and the check
of a call's inputs against it. A compiled function's shapes are static (ints); the signature of
a model with dynamic dimensions (`dlc.specialize.DynamicModel`) holds their names instead
(`input_ids: int64[batch, seq]`, `?` for an unnamed one): `bind_symbols` checks a call against
it and gives each name its size. Imports numpy only (no mlir), so that the runtime of
exported libraries (`dlc.runtime.loader`) checks its inputs exactly as a `CompiledModel` does.

Bounded outputs: an output whose size depends on run-time values (NonZero, Unique...) is
computed at its maximum size, and the compiled function returns, after the graph outputs, its
count of valid entries along one axis as an int64 scalar named `<output>#count@<axis>`
(`dlc.dialects.selection.count_output_name`). `outputs` are the compiled function's results,
counts included (the cache and exported libraries store exactly these); `public_outputs` are
what a call returns (the bounded axis shown as `<=N`), and `trim` turns the results of a call
into them: each bounded output cut to its count, the counts dropped.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dlc.element_types import numpy_dtype  # noqa: F401 (the runtime's name for it)
from dlc.errors import InputError


def address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's data: through the buffer protocol where the
    array is writable and not empty (0.6 us; `array.ctypes.data` builds a helper object,
    1-2 us, a tenth of a small model's call), else `array.ctypes.data`."""
    try:
        return ctypes.addressof(ctypes.c_byte.from_buffer(array))
    except (TypeError, ValueError, BufferError):
        return array.ctypes.data


@dataclass(frozen=True)
class TensorSpec:
    """A named tensor of the signature: its shape (ints; a dynamic dimension by its name, or
    `?` when unnamed) and numpy dtype."""

    name: str
    shape: tuple[int | str, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


COUNT_MARK = "#count@"


def count_of(name: str) -> tuple[str, int] | None:
    """(output, axis) of a count result's name `<output>#count@<axis>`, else None."""
    output, mark, axis = name.rpartition(COUNT_MARK)
    if not mark or not axis.isdigit():
        return None
    return output, int(axis)


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]  # the compiled function's results (counts included)

    def __str__(self) -> str:
        ins = ", ".join(str(s) for s in self.inputs)
        outs = ", ".join(str(s) for s in self.public_outputs)
        return f"({ins}) -> ({outs})"

    @cached_property
    def bounds(self) -> tuple[tuple[int, int, int], ...]:
        """(output index, count index, axis) of each bounded output."""
        found = []
        first = {}
        for index, spec in enumerate(self.outputs):
            first.setdefault(spec.name, index)
        for index, spec in enumerate(self.outputs):
            parsed = count_of(spec.name)
            if parsed is None or spec.shape != () or spec.dtype != np.int64:
                continue
            output, axis = parsed
            target = first.get(output)
            if target is None or axis >= len(self.outputs[target].shape):
                continue
            found.append((target, index, axis))
        return tuple(found)

    @cached_property
    def public_outputs(self) -> tuple[TensorSpec, ...]:
        """What a call returns: the outputs, a bounded one's axis shown as `<=N`, without
        the count results."""
        counts = {count for _, count, _ in self.bounds}
        shown = {output: axis for output, _, axis in self.bounds}
        public = []
        for index, spec in enumerate(self.outputs):
            if index in counts:
                continue
            if index in shown:
                shape = list(spec.shape)
                shape[shown[index]] = f"<={shape[shown[index]]}"
                spec = TensorSpec(spec.name, tuple(shape), spec.dtype)
            public.append(spec)
        return tuple(public)

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.public_outputs]

    def trim(self, results: list[np.ndarray]) -> list[np.ndarray]:
        """The public outputs of a call whose results (in `outputs` order) are `results`:
        each bounded output cut to its count along its axis (a C-contiguous array), the
        counts dropped. `results` itself when nothing is bounded."""
        if not self.bounds:
            return results
        trimmed = list(results)
        for output, count, axis in self.bounds:
            array = results[output]
            size = min(max(int(results[count]), 0), array.shape[axis])
            index = (slice(None),) * axis + (slice(0, size),)
            trimmed[output] = array[index] if axis == 0 else np.ascontiguousarray(array[index])
        counts = {count for _, count, _ in self.bounds}
        return [a for i, a in enumerate(trimmed) if i not in counts]

    def bind(self, args: Sequence, kwargs: Mapping | None = None) -> list[np.ndarray]:
        """The inputs as C-contiguous arrays in signature order; ValueError on any mismatch."""
        if not kwargs and len(args) == len(self.inputs):  # the common call, checked cheaply
            for spec, value in zip(self.inputs, args):
                if (type(value) is not np.ndarray or value.dtype != spec.dtype
                        or value.shape != spec.shape or not value.flags.c_contiguous):
                    break
            else:
                return list(args)
        arrays = self.arrange(args, kwargs or {})
        return [self._check(spec, value) for spec, value in zip(self.inputs, arrays)]

    @cached_property
    def _binding(self) -> tuple[tuple[int, tuple[tuple[int, int], ...],
                                      tuple[tuple[int, str], ...]], ...]:
        """Per input: its rank, its fixed sizes (axis, size) and named ones (axis, name)."""
        return tuple((len(spec.shape),
                      tuple((a, d) for a, d in enumerate(spec.shape) if isinstance(d, int)),
                      tuple((a, d) for a, d in enumerate(spec.shape)
                            if isinstance(d, str) and d != "?"))
                     for spec in self.inputs)

    def bind_symbols(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The size of each named dimension in a call whose inputs have `shapes` (in signature
        order), checking ranks and fixed sizes, and that the inputs which share a
        name agree on its size: InputError naming both inputs otherwise."""
        sizes: dict[str, int] = {}
        if len(shapes) == len(self._binding):  # (the common call: checked quickly; any
            for (rank, fixed, named), shape in zip(self._binding, shapes):  # mismatch is
                if len(shape) != rank:  # reported by the full check below)
                    break
                if any(shape[a] != d for a, d in fixed):
                    break
                for axis, name in named:
                    if sizes.setdefault(name, shape[axis]) != shape[axis]:
                        break
                else:
                    continue
                break
            else:
                return sizes
        return self._bind_symbols(shapes)

    def _bind_symbols(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        sizes: dict[str, tuple[int, str, int]] = {}  # name -> (size, input, axis) seen first
        for spec, shape in zip(self.inputs, shapes, strict=True):
            if len(shape) != len(spec.shape) or any(
                    isinstance(d, int) and d != s for d, s in zip(spec.shape, shape)):
                raise InputError(
                    f"input '{spec.name}' has shape {list(shape)}, expected "
                    f"{list(spec.shape)} (signature {self})")
            for axis, (dim, size) in enumerate(zip(spec.shape, shape)):
                if not isinstance(dim, str) or dim == "?":
                    continue
                if dim not in sizes:
                    sizes[dim] = (size, spec.name, axis)
                    continue
                known, other, other_axis = sizes[dim]
                if known != size:
                    raise InputError(
                        f"inputs '{other}' and '{spec.name}' disagree on the dynamic size "
                        f"'{dim}': {known} (axis {other_axis} of '{other}') and {size} "
                        f"(axis {axis} of '{spec.name}'); signature {self}")
        return {name: size for name, (size, _, _) in sizes.items()}

    def output_shape(self, shape: Sequence[int | str], sizes: Mapping[str, int]
                     ) -> tuple[int, ...]:
        """An output's `shape` (ints and names) with each name's size in `sizes`."""
        try:
            return tuple(d if d.__class__ is int else sizes[d] for d in shape)
        except KeyError as error:
            raise InputError(f"the output size {error} is not a size of the inputs "
                             f"(signature {self})") from None

    def check_dtypes(self, args: Sequence, kwargs: Mapping | None = None) -> list[np.ndarray]:
        """The inputs as C-contiguous arrays in signature order, of the signature's dtypes
        (shapes are not checked: see `bind_symbols`); InputError otherwise."""
        arrays = self.arrange(args, kwargs or {})
        return [self._check(spec, value, shape=False) for spec, value in zip(self.inputs, arrays)]

    def arrange(self, args: Sequence, kwargs: Mapping) -> list:
        """The inputs (any kind of value) in signature order, from positional arguments, one
        mapping, or keywords; InputError when their count or names do not match."""
        if len(args) == 1 and isinstance(args[0], Mapping) and not kwargs:
            kwargs, args = args[0], ()
        if args and kwargs:
            raise InputError("pass inputs either positionally or by name, not both")
        if kwargs:
            names = [s.name for s in self.inputs]
            unknown = sorted(set(kwargs) - set(names))
            missing = [n for n in names if n not in kwargs]
            if unknown or missing:
                raise InputError(
                    f"inputs by name do not match the signature {self}: "
                    f"missing {missing}, unknown {unknown}"
                )
            return [kwargs[n] for n in names]
        if len(args) != len(self.inputs):
            raise InputError(
                f"expected {len(self.inputs)} inputs, got {len(args)}; signature: {self}"
            )
        return list(args)

    def _check(self, spec: TensorSpec, value, shape: bool = True) -> np.ndarray:
        if not isinstance(value, np.ndarray | np.generic):
            raise InputError(
                f"input '{spec.name}' must be a numpy array, got {type(value).__name__}; "
                f"expected {spec}"
            )
        array = np.asarray(value)
        if array.dtype != spec.dtype:
            raise InputError(
                f"input '{spec.name}' has dtype {array.dtype}, expected {spec.dtype} "
                f"(signature {self})"
            )
        if shape and array.shape != spec.shape:
            raise InputError(
                f"input '{spec.name}' has shape {list(array.shape)}, expected "
                f"{list(spec.shape)} (signature {self})"
            )
        try:
            return np.asarray(array, order="C")  # (np.ascontiguousarray makes rank 0 into [1])
        except MemoryError:  # a non-contiguous view (a broadcast) larger than memory, copied
            raise InputError(
                f"input '{spec.name}' of shape {list(array.shape)} is not contiguous and its "
                f"copy ({array.size * array.itemsize / 2**30:.4g} GiB) does not fit in "
                "memory") from None


def random_input(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    """Random values for an input of `spec` (integers in [0, 10): token ids, indices)."""
    if spec.dtype == np.bool_:
        return rng.integers(0, 2, spec.shape).astype(np.bool_)
    if np.issubdtype(spec.dtype, np.integer):
        return rng.integers(0, 10, spec.shape).astype(spec.dtype)
    return rng.standard_normal(spec.shape).astype(spec.dtype)
