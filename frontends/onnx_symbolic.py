"""Shape computations on a model's one dynamic size, evaluated at probe sizes (issue 22).

Exporters compute shapes at run time: PyTorch's `x.view(b, s, heads, -1)` exports as
Shape -> Gather -> Unsqueeze -> Concat -> Reshape, a mask as ConstantOfShape of a computed
shape. With static shapes the importer folds them (`onnx_folding`); in a model imported with
one dynamic size (`import_model(dynamic=True)`) they depend on it. Such a value (a `Probed`)
is evaluated by the same folders at PROBES, several values of the size, which is all it
depends on:
- equal at every probe (shape and elements): a constant, as in a static import (a head
  count, a `Where(Equal(shape, -1), ...)` that never takes the size);
- used as a shape (the shape input of a Reshape or an Expand, `as_shape`): an element
  equal to the probe at every probe is the size (a `?` of the shape), one equal at every
  probe a constant; any other element (`2 * size`, `size - 1`) is refused, naming the node:
  one dynamic size cannot express it;
- used as data (`_materialized` in the importer): one constant broadcast along the size (a
  mask of ones, an embedding row for each position: `broadcast_constant`) is that constant
  and a `dlc.broadcast`; an arange along the size (`arange`, positions) a `dlc.iota`; any
  other is refused. A value of neither kind that an op of the folders computes from a
  table (the rows [0, size) of a position table) is not kept: the op is imported as it is.
A refusal is a FrontendError of the dynamic import: the model compiles per shape, with the
reason (`DynamicModel.function_reason`). Probe 1 catches a comparison with 1 (broadcasting
code); the probes are small because a model's buffers bound the size (BERT slices its
positions [0, 512) to the size): a value that is the size up to such a bound is taken as
the size, and a call past the bound fails where the model reads past it (a gather's index
check), as the model itself does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir

from dlc.frontends.onnx_folding import MAX_ELEMENTS, PROBE_FOLDERS, fold, foldable

PROBES = (1, 2, 3, 13)


@dataclass(frozen=True)
class Probed:
    """A value computed from the dynamic size alone: its value at each of PROBES."""

    arrays: tuple[np.ndarray, ...]

    def constant(self) -> np.ndarray | None:
        """The value when it is the same at every probe, else None."""
        first = self.arrays[0]
        if all(a.shape == first.shape and a.dtype == first.dtype and np.array_equal(a, first)
               for a in self.arrays[1:]):
            return first
        return None

    def settled(self) -> np.ndarray | Probed:
        """The constant it is when it does not depend on the size, else itself."""
        constant = self.constant()
        return self if constant is None else constant


def shape_value(shape: Sequence[int]) -> Probed:
    """Shape(x) of an x of `shape`, whose dynamic sizes are the one size."""
    return Probed(tuple(np.array([p if ir.ShapedType.is_dynamic_size(d) else d for d in shape],
                                 np.int64) for p in PROBES))


def evaluate(op_type: str, inputs: list[np.ndarray | Probed | None], attrs: dict[str, Any],
             opset: int) -> list[np.ndarray | Probed] | None:
    """The node's outputs on constant and probed inputs (constants where they do not depend
    on the size), or None when the folders do not take the node."""
    at = [[i.arrays[k] if isinstance(i, Probed) else i for i in inputs]
          for k in range(len(PROBES))]
    if op_type in PROBE_FOLDERS:
        if not all(all(i is None or i.size <= MAX_ELEMENTS for i in a) for a in at):
            return None
        outputs = [PROBE_FOLDERS[op_type](a, attrs, opset) for a in at]
    elif not all(foldable(op_type, a, attrs, opset) for a in at):
        return None
    else:
        outputs = [fold(op_type, a, attrs, opset) for a in at]
    return [Probed(tuple(np.asarray(o[index]) for o in outputs)).settled()
            for index in range(len(outputs[0]))]


def _dims(value: Probed) -> list[int] | None:
    """The value's shape with the dynamic size as `?`, or None when its shape is some other
    function of the size."""
    ranks = {a.ndim for a in value.arrays}
    if len(ranks) != 1:
        return None
    dims = []
    for axis in range(ranks.pop()):
        sizes = [a.shape[axis] for a in value.arrays]
        if len(set(sizes)) == 1:
            dims.append(sizes[0])
        elif sizes == list(PROBES):
            dims.append(ir.ShapedType.get_dynamic_size())
        else:
            return None
    return dims


def as_shape(value: Probed, what: str) -> np.ndarray:
    """The value as a shape (int64), its elements that are the size as `?` (the dynamic
    marker); ValueError saying what else it is."""
    dims = _dims(value)
    if dims is None or any(ir.ShapedType.is_dynamic_size(d) for d in dims):
        raise ValueError(f"its {what} has a number of elements that depends on the dynamic size")
    stacked = np.stack([a.reshape(-1).astype(np.int64) for a in value.arrays])
    result = []
    for position, column in enumerate(stacked.T):
        if len(set(column.tolist())) == 1:
            result.append(int(column[0]))
        elif column.tolist() == list(PROBES):
            result.append(ir.ShapedType.get_dynamic_size())
        else:
            raise ValueError(f"its {what}'s element {position} is computed from the dynamic "
                             f"size but is not the size itself (at sizes {list(PROBES)}: "
                             f"{column.tolist()}), which one dynamic size cannot express")
    return np.array(result, np.int64)


def broadcast_constant(value: Probed) -> tuple[np.ndarray, list[int]] | None:
    """(the value's constant part, of size 1 at its dynamic axes; its shape with `?`) of a
    value that is one constant broadcast along the dynamic size (a mask of ones, an embedding
    row repeated for each position), or None."""
    dims = _dims(value)
    if dims is None:
        return None
    dynamic = [axis for axis, d in enumerate(dims) if ir.ShapedType.is_dynamic_size(d)]
    part = None
    for array in value.arrays:
        if array.size == 0:
            return None
        first = array[tuple(slice(0, 1) if a in dynamic else slice(None)
                            for a in range(array.ndim))]
        if not np.array_equal(np.broadcast_to(first, array.shape), array) or (
                part is not None and not np.array_equal(part, first)):
            return None
        part = first
    return part, dims


def arange(value: Probed) -> tuple[list[int], int, int, int] | None:
    """(its shape with `?`, the axis, start, step) of a value that is an arange along its one
    dynamic axis (start + step * i, the same across its other axes), or None."""
    dims = _dims(value)
    if dims is None or value.arrays[0].dtype.kind not in "iuf":
        return None
    dynamic = [axis for axis, d in enumerate(dims) if ir.ShapedType.is_dynamic_size(d)]
    if len(dynamic) != 1:
        return None
    (axis,) = dynamic
    longest = value.arrays[-1]
    start = longest.reshape(-1)[0]
    step = np.take(longest, [1], axis=axis).reshape(-1)[0] - start
    if float(start) != int(start) or float(step) != int(step):
        return None
    for array in value.arrays:
        index = np.arange(array.shape[axis]).reshape(
            [-1 if a == axis else 1 for a in range(array.ndim)])
        if not np.array_equal(np.broadcast_to(start + step * index, array.shape), array):
            return None
    return dims, axis, int(start), int(step)
