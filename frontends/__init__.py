"""dlc's frontends: models (ONNX, PyTorch) imported into the `dlc` dialect.

- `onnx_importer` (with `onnx_node`, `validate`, `onnx_folding` and the op tables of
  `onnx_ops/`): an ONNX ModelProto into a `func.func` of dlc ops;
- `torch/`: `torch.export` programs and `torch.compile` graphs (ATen ops) into the same.

What belongs here: reading a model format and building dlc IR, with errors that name the node
(`FrontendError`). What does not: optimizations (graph passes in `dlc.passes`), lowering and
codegen (`dlc.passes`), running compiled code (`dlc.runtime`), and the compile driver
(`dlc.compiler`); frontends import neither the runtime nor the tools.
"""
