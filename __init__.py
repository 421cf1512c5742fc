"""dlc: an MLIR-based deep-learning compiler, written in Python.

    import dlc
    model = dlc.compile("mlp.onnx", opt_level=2)
    outputs = model(x)            # numpy in, numpy out
    print(model.ir("linalg"))     # the IR after a stage: dlc, linalg, bufferized, llvm
"""

from dlc.compiler import CompiledModel, CompileError, compile
from dlc.errors import DlcError
from dlc.frontends.onnx_importer import FrontendError, UnsupportedOpsError
from dlc.passes import pipeline

__all__ = [
    "CompileError",
    "CompiledModel",
    "DlcError",
    "FrontendError",
    "UnsupportedOpsError",
    "compile",
    "pipeline",
]
