"""The compiled signature of a model: named tensors with shapes and numpy dtypes, and the check
of a call's inputs against it. A compiled function's shapes are static (ints); the signature of
a model with dynamic dimensions (`dlc.specialize.DynamicModel`) holds their names instead
(`input_ids: int64[batch, seq]`, `?` for an unnamed one): `bind_symbols` checks a call against
it and gives each name its size. Imports numpy only (no mlir), so that the runtime of
exported libraries (`dlc.runtime.loader`) checks its inputs exactly as a `CompiledModel` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dlc.errors import InputError

_ELEMENT_DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,  # stored as one byte (i8) by dlc-to-linalg, as numpy stores it
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
}


def numpy_dtype(element_type) -> np.dtype:
    """The numpy dtype of an MLIR element type (an ir.Type or its text)."""
    name = str(element_type)
    if name not in _ELEMENT_DTYPES:
        raise TypeError(f"element type {name} has no numpy equivalent in dlc's runtime")
    return np.dtype(_ELEMENT_DTYPES[name])


@dataclass(frozen=True)
class TensorSpec:
    """A named tensor of the signature: its shape (ints; a dynamic dimension by its name, or
    `?` when unnamed) and numpy dtype."""

    name: str
    shape: tuple[int | str, ...]
    dtype: np.dtype

    @property
    def static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def __str__(self) -> str:
        ins = ", ".join(str(s) for s in self.inputs)
        outs = ", ".join(str(s) for s in self.outputs)
        return f"({ins}) -> ({outs})"

    def bind(self, args: Sequence, kwargs: Mapping | None = None) -> list[np.ndarray]:
        """The inputs as C-contiguous arrays in signature order; ValueError on any mismatch."""
        arrays = self.arrange(args, kwargs or {})
        return [self._check(spec, value) for spec, value in zip(self.inputs, arrays)]

    def bind_symbols(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The size of each named dimension in a call whose inputs have `shapes` (in signature
        order), checking ranks and fixed sizes, and that the inputs which share a
        name agree on its size: InputError naming both inputs otherwise."""
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
        return np.asarray(array, order="C")  # (np.ascontiguousarray makes rank 0 into [1])


def random_input(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    """Random values for an input of `spec` (integers in [0, 10): token ids, indices)."""
    if spec.dtype == np.bool_:
        return rng.integers(0, 2, spec.shape).astype(np.bool_)
    if np.issubdtype(spec.dtype, np.integer):
        return rng.integers(0, 10, spec.shape).astype(spec.dtype)
    return rng.standard_normal(spec.shape).astype(spec.dtype)
