"""The PyTorch frontend: torch.export and torch.compile graphs into the dlc dialect.

    import dlc, torch
    model = dlc.compile(net.eval(), example_inputs=(x,))    # torch.export, then dlc
    (y,) = model(x)                                          # torch in, torch out
    fast = torch.compile(net.eval(), backend="dlc")          # the torch.compile backend

`importer.py` walks a graph of core ATen ops (what `torch.export(...).run_decompositions()`
and AOTAutograd give) and converts each node through the `ATEN` tables of `aten_ops.py`
(elementwise), `aten_movement.py`, `aten_index.py` (advanced indexing, as_strided),
`aten_reduce.py`, `aten_nn.py` and `aten_image.py` (upsampling); `dynamo.py` is the
torch.compile backend; `tensors.py` lets a CompiledModel take and return torch tensors. torch is an optional extra (`pip install dlc[torch]`): nothing here
is imported by `import dlc`, and the names below load on first use.

What belongs here: reading torch graphs and building dlc ops (shared math from
`frontends/decompose.py`, shared types from `frontends/common.py`). What does not: anything
ONNX-specific, optimizations or lowering.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "UnsupportedAtenOpsError": "dlc.frontends.torch.aten_node",
    "dlc_backend": "dlc.frontends.torch.dynamo",
    "export_module": "dlc.frontends.torch.importer",
    "import_exported": "dlc.frontends.torch.importer",
    "import_graph": "dlc.frontends.torch.importer",
    "import_torch": "dlc.frontends.torch.importer",
    "supported_aten_ops": "dlc.frontends.torch.importer",
}

__all__ = [
    "UnsupportedAtenOpsError",
    "dlc_backend",
    "export_module",
    "import_exported",
    "import_graph",
    "import_torch",
    "supported_aten_ops",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dlc.frontends.torch' has no attribute '{name}'")
    return getattr(import_module(_EXPORTS[name]), name)
