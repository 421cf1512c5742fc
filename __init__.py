"""dlc: an MLIR-based deep-learning compiler, written in Python.

    import dlc
    model = dlc.compile("mlp.onnx", opt_level=2)
    outputs = model(x)            # numpy in, numpy out
    print(model.ir("linalg"))     # the IR after a stage: dlc, linalg, bufferized, llvm

The names below load on first use, so that tools that need only the dialect and the passes
(dlc-opt) do not pay for importing onnx.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ArgumentError": "dlc.errors",
    "CausalLM": "dlc.llm",
    "CompileError": "dlc.compiler",
    "CompileOptions": "dlc.options",
    "CompiledModel": "dlc.compiler",
    "compile": "dlc.compiler",
    "lower": "dlc.compiler",
    "export": "dlc.runtime.export",
    "LoweredModel": "dlc.compiler",
    "DlcError": "dlc.errors",
    "DynamicModel": "dlc.specialize",
    "IndexOutOfRangeError": "dlc.errors",
    "InputError": "dlc.errors",
    "FrontendError": "dlc.frontends.onnx_importer",
    "UnsupportedOpsError": "dlc.frontends.onnx_importer",
    "pipeline": "dlc.passes",
    "NaivePathWarning": "dlc.passes.buffer.profile",
    "profile": "dlc.profiler",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dlc' has no attribute '{name}'")
    return getattr(import_module(_EXPORTS[name]), name)
