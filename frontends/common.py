"""What every frontend shares: its error class, the imported model it returns and the dense
constant attribute it builds (the ONNX and the torch frontends both import these from here; the
element types are `dlc.element_types`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from dlc import element_types
from dlc.errors import DlcError


class FrontendError(DlcError, ValueError):
    """The model cannot be imported: malformed, unsupported op or dtype, unknown shapes."""


@dataclass
class ImportedModel:
    """A model in the dlc dialect: `module` holds one `func.func @main` whose arguments and
    results are the graph's inputs and outputs, by these names; `constants` are the input
    values compiled in (`dlc.compile(constants=...)`); `dynamic_size` names the one dynamic
    size (`?`) of `main`'s tensors, when they have one (`batch`)."""

    module: ir.Module
    input_names: list[str]
    output_names: list[str]
    opset: int
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    dynamic_size: str | None = None


def dense(array: np.ndarray, n=None) -> ir.DenseElementsAttr:
    """The constant attribute of `array` (in the current Context); `n` (a node context with
    `error(message)`) names the node in the error of an unsupported dtype."""
    if array.dtype.name in ("int4", "uint4"):  # (4-bit weights: held in 8 bits, as dlc has
        array = array.astype(np.int8 if array.dtype.name == "int4" else np.uint8)  # no i4)
    if array.dtype not in element_types.NUMPY_DTYPES:
        message = f"constant of dtype {array.dtype} is not supported yet"
        raise n.error(message) if n else FrontendError(message)
    array = np.asarray(array, order="C")  # (np.ascontiguousarray makes rank 0 into [1])
    if array.dtype.kind == "u":  # (numpy's unsigned arrays would become signless ints)
        return ir.DenseElementsAttr.get(array, type=element_types.mlir_type(array.dtype))
    return ir.DenseElementsAttr.get(array)
