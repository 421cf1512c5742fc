"""What the ATen op converters share: errors, dtypes, source locations and `AtenNode`.

A converter is a function `(n: AtenNode, *args, **kwargs) -> value` registered in the `ATEN`
table of a family's module (`aten_ops.py`, `aten_movement.py`, `aten_reduce.py`, `aten_nn.py`).
It receives the FX node's arguments with every FX node
replaced by the dlc value it became (an `ir.Value`, or a tuple for a multi-result op) and every
other argument as given (ints, floats, lists, dtypes); keyword defaults are the ATen schema's.
It builds dlc ops with `n.build(...)` and reports problems with `n.error(...)`, which names the
node and the line of the user's code it came from. `n.out` is the node's example output
(a FakeTensor, or a tuple of them): shapes and dtypes there are the ground truth a converter
may read instead of recomputing them.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from mlir import ir

from dlc import element_types
from dlc.dialects import ShapeError, build, ops
from dlc.dialects.binary import CAST
from dlc.frontends.common import FrontendError, dense
from dlc.frontends.onnx_importer import UnsupportedOpsError

# the torch dtypes dlc takes, as numpy dtypes (their MLIR types: dlc.element_types)
DTYPES: dict[torch.dtype, np.dtype] = {dtype: np.dtype(numpy) for dtype, numpy in (
    (torch.float32, np.float32), (torch.float64, np.float64), (torch.float16, np.float16),
    (torch.int8, np.int8), (torch.int16, np.int16), (torch.int32, np.int32),
    (torch.int64, np.int64), (torch.uint8, np.uint8), (torch.bool, np.bool_),
)}


def check_dtype(dtype: torch.dtype, what: str) -> None:
    if dtype not in DTYPES:
        supported = ", ".join(str(d).removeprefix("torch.") for d in DTYPES)
        raise FrontendError(f"{what} has dtype {dtype}, which dlc does not support yet "
                            f"(supported: {supported})")


def element_type(dtype: torch.dtype, what: str = "a tensor") -> ir.Type:
    check_dtype(dtype, what)
    return element_types.mlir_type(DTYPES[dtype])


def torch_dtype(element: ir.Type) -> torch.dtype:
    try:
        numpy = element_types.numpy_dtype(element)
    except TypeError:
        numpy = None
    for dtype, candidate in DTYPES.items():
        if candidate == numpy:
            return dtype
    raise FrontendError(f"element type {element} has no torch dtype")


def value_dtype(value: ir.Value) -> torch.dtype:
    return torch_dtype(value.type.element_type)


# ----------------------------------------------------------------------------- dynamic size

DYNAMIC = ir.ShapedType.get_dynamic_size()  # (`?` in a dlc shape: a dynamic import's size)

# the symbol (a sympy Symbol of torch's shape environment) imported as the function's one
# dynamic size `?`, while `dynamic_size` is active; None: every size must be static
_DYNAMIC: ContextVar[Any] = ContextVar("dlc_torch_dynamic_size", default=None)


# other symbols given a value in a dynamic import (a batch imported at 1: its row function)
_FIXED: ContextVar[dict | None] = ContextVar("dlc_torch_fixed_sizes", default=None)


@contextlib.contextmanager
def dynamic_size(symbol: Any, fixed: dict | None = None) -> Iterator[None]:
    """Import with `symbol` (torch's, e.g. `s27`) as the dynamic size `?` of the dlc types
    and the symbols of `fixed` at their values; every other symbolic size is refused
    (`size`)."""
    token, fixed_token = _DYNAMIC.set(symbol), _FIXED.set(dict(fixed or {}) or None)
    try:
        yield
    finally:
        _DYNAMIC.reset(token)
        _FIXED.reset(fixed_token)


def dynamic_symbol() -> Any:
    """The symbol imported as `?` (`dynamic_size`), or None in a static import."""
    return _DYNAMIC.get()


def size(d: int | torch.SymInt, what: str) -> int:
    """A size of torch's (an int, or a SymInt of a symbolic graph) as a dlc size: the int, or
    `?` (ir.ShapedType.get_dynamic_size()) for the dynamic size; FrontendError for any other
    symbolic size (one computed from the dynamic size, such as 2 * s, or another symbol)."""
    if isinstance(d, int):
        return d
    expr = d.node.expr if isinstance(d, torch.SymInt) else None
    if expr is not None and _FIXED.get():
        expr = expr.subs(_FIXED.get())
    if expr is not None and expr.is_Integer:
        return int(expr)
    symbol = _DYNAMIC.get()
    if symbol is None:
        raise FrontendError(f"{what} has a symbolic size {d}; dlc compiles static shapes "
                            "(torch.compile(..., dynamic=False), or export without "
                            "dynamic_shapes)")
    if expr != symbol:
        raise FrontendError(f"{what} has a size {expr} computed from the dynamic sizes; the "
                            f"dynamic import takes sizes equal to {symbol} or constant")
    return DYNAMIC


@dataclass(frozen=True)
class Derived:
    """A size computed from the dynamic size that dlc has no size for (`2 * s`): a view may
    take it for the rows of a linear layer (`Rows`); any other use is `error`."""

    error: str


@dataclass(frozen=True)
class Rows:
    """A tensor torch flattens to [rows, K] whose rows count the dynamic size times static
    sizes (a linear layer's view of [2, s, K] as [2 * s, K], which dlc cannot type): dlc keeps
    `value` unflattened ([2, ?, K]), as its matmuls take leading axes; views of it back to a
    shape dlc can type, mm and addmm take it (`importer.ROWS_OPS`), no other op."""

    value: ir.Value


def shape_of(value: torch.Tensor, what: str) -> list[int]:
    """The dlc shape of a tensor's (FakeTensor's) torch shape (`size` of each dimension)."""
    return [size(d, what) for d in value.shape]


def tensor_type(value: torch.Tensor, what: str) -> ir.RankedTensorType:
    try:
        shape = shape_of(value, what)
    except FrontendError:
        if _DYNAMIC.get() is not None:
            raise
        raise FrontendError(f"{what} has a symbolic shape {list(value.shape)}; dlc compiles "
                            "static shapes (torch.compile(..., dynamic=False), or export "
                            "without dynamic_shapes)") from None
    return ir.RankedTensorType.get(shape, element_type(value.dtype, what))


def to_numpy(value: torch.Tensor, what: str) -> np.ndarray:
    check_dtype(value.dtype, what)
    return value.detach().cpu().contiguous().numpy()


# ----------------------------------------------------------------------------- source lines

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n(?P<code>.*)')


@dataclass(frozen=True)
class SourceLine:
    """The line of the user's code an FX node comes from."""

    file: str
    line: int
    function: str
    code: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}: `{self.code}`"


@cache
def _library_roots() -> tuple[str, ...]:
    """Path prefixes of torch's and dlc's own source files: their frames are not the user's.

    dlc's are its subpackages and top-level modules, not the whole repository folder: a
    virtualenv (with transformers, timm...) or the tests there hold the user's code.
    """
    import dlc

    root = Path(dlc.__file__).parent
    owned = [p for p in root.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"]
    torches = [Path(torch.__file__).parent, Path(torch.__file__).parent.parent / "functorch"]
    return tuple(str(p) + (os.sep if p.is_dir() else "") for p in [*torches, *owned])


def user_source_line(stack_trace: str | None) -> SourceLine | None:
    """The innermost frame of `stack_trace` outside torch and dlc: the line of the model's
    code (the user's, or a library's such as transformers') that produced the node."""
    if not stack_trace:
        return None
    frames = [SourceLine(m["file"], int(m["line"]), m["fn"], m["code"].strip())
              for m in _FRAME.finditer(stack_trace)]
    users = [f for f in frames if not f.file.startswith(_library_roots())]
    return (users or frames or [None])[-1]


def node_location(node: torch.fx.Node) -> ir.Location:
    """loc("node name"("file":line:0)), or loc("node name") without a stack trace."""
    source = user_source_line(node.meta.get("stack_trace"))
    if source is None:
        return ir.Location.name(node.name)
    return ir.Location.name(node.name, childLoc=ir.Location.file(source.file, source.line, 0))


def describe(node: torch.fx.Node) -> str:
    source = user_source_line(node.meta.get("stack_trace"))
    return f"node '{node.name}'" + (f" at {source}" if source else "")


# ----------------------------------------------------------------------------- errors


class UnsupportedAtenOpsError(UnsupportedOpsError):
    """The graph uses ATen ops dlc has no converter for; each is listed with its user lines."""

    def __init__(self, unsupported: dict[str, list[str]], supported: Sequence[str]):
        self.unsupported = dict(unsupported)
        listed = "; ".join(f"{op} ({', '.join(places[:5])}"
                           f"{f' and {len(places) - 5} more' if len(places) > 5 else ''})"
                           for op, places in self.unsupported.items())
        FrontendError.__init__(
            self,
            f"unsupported ATen op{'s' if len(self.unsupported) > 1 else ''}: {listed}. "
            f"Supported ATen ops: {', '.join(supported)}",
        )


# ----------------------------------------------------------------------------- AtenNode


@dataclass
class AtenNode:
    """What a converter sees of one FX node: its example output, location and builders."""

    node: torch.fx.Node
    location: ir.Location

    @property
    def out(self) -> Any:
        return self.node.meta.get("val")

    @property
    def out_shape(self) -> list[int]:
        """The result's shape: a dynamic import's dynamic size is `?` there (`size`)."""
        shape = list(self.out.shape)
        if _DYNAMIC.get() is not None:
            try:
                return shape_of(self.out, "the result")
            except FrontendError as error:
                raise self.error(str(error)) from None
        if not all(isinstance(d, int) for d in shape):
            raise self.error(f"the result's shape {shape} depends on the data (a size "
                             "torch computes at run time); dlc compiles static shapes")
        return shape

    @property
    def out_dtype(self) -> torch.dtype:
        return self.out.dtype

    def error(self, message: str) -> FrontendError:
        return FrontendError(f"{describe(self.node)} ({self.node.target}): {message}")

    def build(self, op: ops.OpDef, operands: Sequence[ir.Value], attrs: dict | None = None):
        try:
            return build(op, operands, attrs, loc=self.location)
        except ShapeError as error:
            raise self.error(str(error)) from None

    def constant(self, value: Any, dtype: torch.dtype) -> ir.Value:
        """A constant (a rank-0 tensor for a Python scalar) of `dtype`."""
        check_dtype(dtype, f"a constant of {describe(self.node)}")
        array = np.asarray(value, dtype=DTYPES[dtype])
        return self.build(ops.CONSTANT, [], {"value": dense(array)})

    def cast(self, value: ir.Value, dtype: torch.dtype) -> ir.Value:
        element = element_type(dtype, describe(self.node))
        if value.type.element_type == element:
            return value
        return self.build(CAST, [value], {"to": element})

    def tensor(self, value: ir.Value | float | bool, dtype: torch.dtype) -> ir.Value:
        """`value` as a tensor of `dtype`: a scalar becomes a constant, a tensor is cast."""
        if isinstance(value, ir.Value):
            return self.cast(value, dtype)
        return self.constant(value, dtype)

    def reshape(self, value: ir.Value, shape: Sequence[int]) -> ir.Value:
        if list(value.type.shape) == list(shape):
            return value
        return self.build(ops.RESHAPE, [value], {"shape": list(shape)})


Converter = Callable[..., Any]


def dtype_of(value: ir.Value | float | bool) -> torch.dtype | float | int | bool:
    """A stand-in for `value` in torch.result_type: a tensor sample, or the scalar itself."""
    if not isinstance(value, ir.Value):
        return value
    return torch.empty([1] * value.type.rank, dtype=torch_dtype(value.type.element_type))


def promoted(a: ir.Value | float, b: ir.Value | float) -> torch.dtype:
    """torch's result dtype of an op on `a` and `b` (tensors or Python scalars)."""
    return torch.result_type(dtype_of(a), dtype_of(b))


def axis(n: AtenNode, dim: int, rank: int) -> int:
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise n.error(f"dim {dim} is out of range for a rank-{rank} tensor")
    return dim % max(rank, 1)


def axes(n: AtenNode, dims: Sequence[int] | int | None, rank: int) -> list[int]:
    """Normalized, sorted axes; None or [] means every axis (as ATen's reductions)."""
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({axis(n, d, rank) for d in dims})
