"""dlc's frontends: models (ONNX, PyTorch) imported into the `dlc` dialect.

- `onnx_importer` (with `onnx_node`, `validate`, `onnx_folding` and the op tables of
  `onnx_ops/`): an ONNX ModelProto into a `func.func` of dlc ops;
- `torch/`: `torch.export` programs and `torch.compile` graphs (ATen ops) into the same.

What belongs here: reading a model format and building dlc IR, with errors that name the node
(`FrontendError`). What does not: optimizations (graph passes in `dlc.passes`), lowering and
codegen (`dlc.passes`), running compiled code (`dlc.runtime`), and the compile driver
(`dlc.compiler`); frontends import neither the runtime nor the tools.

`load(model, context, options)` is the one way a compile enters the frontends: an ONNX model
(path, bytes, ModelProto) or a PyTorch module / ExportedProgram (the torch frontend is imported
only then: torch is an optional extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlir import ir

    from dlc.frontends.onnx_importer import ImportedModel
    from dlc.options import CompileOptions


def load(model, context: ir.Context, options: CompileOptions) -> ImportedModel:
    """`model` in the dlc dialect of `context`: ONNX, or PyTorch (a module with
    `options.example_inputs`, an ExportedProgram, a torch.fx graph)."""
    from dlc.frontends.torch.tensors import is_torch_model

    if options.example_inputs is None and not is_torch_model(model):
        from dlc.frontends.onnx_importer import import_model

        return import_model(model, context, options.input_shapes, options.constants)
    from dlc.frontends.torch.importer import import_torch

    return import_torch(model, options.example_inputs, context)
