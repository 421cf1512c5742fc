"""The element types of dlc's tensors: one table, numpy dtype <-> MLIR element type.

Frontends map their own type enums to numpy dtypes (ONNX's `TensorProto` codes in
`frontends/onnx_node.py`, torch dtypes in `frontends/torch/aten_node.py`) and take the MLIR type
from here; the runtime takes the numpy dtype of a signature's MLIR types from here. bool is
`i1` in the dlc dialect (stored as one byte, as numpy stores it: dlc-to-linalg makes it i8).
"""

from __future__ import annotations

import numpy as np

# (numpy dtype, MLIR element type as text); unsigned integers are MLIR's unsigned types
TABLE: tuple[tuple[np.dtype, str], ...] = tuple((np.dtype(d), t) for d, t in (
    (np.float32, "f32"), (np.float64, "f64"), (np.float16, "f16"),
    (np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"), (np.int64, "i64"),
    (np.uint8, "ui8"), (np.uint16, "ui16"), (np.uint32, "ui32"), (np.uint64, "ui64"),
    (np.bool_, "i1"),
))
NUMPY_DTYPES: frozenset[np.dtype] = frozenset(d for d, _ in TABLE)
_BY_DTYPE = dict(TABLE)
_BY_TEXT = {t: d for d, t in TABLE}


def mlir_type(dtype) -> ir.Type:  # noqa: F821 (mlir is imported on use)
    """The MLIR element type of a numpy dtype (in the current Context); TypeError if dlc has
    none."""
    from mlir import ir

    dtype = np.dtype(dtype)
    if dtype not in _BY_DTYPE:
        raise TypeError(f"dtype {dtype} has no element type in dlc")
    return ir.Type.parse(_BY_DTYPE[dtype])


def numpy_dtype(element) -> np.dtype:
    """The numpy dtype of an MLIR element type (an ir.Type or its text); TypeError if none."""
    name = str(element)
    if name not in _BY_TEXT:
        raise TypeError(f"element type {name} has no numpy equivalent in dlc's runtime")
    return _BY_TEXT[name]
