"""The `dlc` dialect: ONNX-level ops on tensors, registered through IRDL.

`make_context()` gives a Context with the dialect loaded; `ops` holds one `OpDef` per op
(`ops.ADD.name == "dlc.add"`); `build` creates an op with its result type inferred and
`verify` checks the shape rules IRDL cannot express.

What belongs here: op declarations, shape inference and verification. What does not: any
model format (frontends), any rewrite or lowering (passes), running code (runtime); the
dialect imports nothing else of dlc.
"""

from dlc.dialects import ops
from dlc.dialects.core import (
    OpDef,
    ShapeError,
    build,
    build_all,
    check_op,
    irdl_text,
    load_dialect,
    make_context,
    op_def,
    registered_ops,
    verify,
)

__all__ = [
    "OpDef",
    "ShapeError",
    "build",
    "build_all",
    "check_op",
    "irdl_text",
    "load_dialect",
    "make_context",
    "op_def",
    "ops",
    "registered_ops",
    "verify",
]
