"""The torch.compile backend: `torch.compile(model, backend="dlc")`.

dlc registers `dlc_backend` under the `torch_dynamo_backends` entry point (pyproject.toml),
so the name "dlc" works once dlc is installed. Dynamo hands the backend each FX graph it
captures; AOTAutograd (with torch's core ATen decompositions) turns it into a graph of core
ATen ops, which `importer.import_graph` imports and `dlc.compiler` JIT-compiles. Every graph
input stays an input of the compiled function (parameters included: Dynamo passes them at each
call), so a model whose weights change keeps working. A graph dlc cannot compile (an
unsupported op, a symbolic shape, a dtype) runs eagerly instead, with a warning naming the
reason; the backward graph of a model trained under torch.compile always runs eagerly (dlc
compiles inference). Options: `torch.compile(model, backend="dlc", options={"opt_level": 1,
"num_threads": 4})` (the default threads are `dlc.compile`'s: $DLC_NUM_THREADS, else the
cores); compiled graphs go through the compile cache like `dlc.compile`'s, keyed on their IR.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from functorch.compile import make_boxed_func
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd

from dlc.dialects import make_context
from dlc.errors import DlcError
from dlc.frontends.torch.importer import import_graph


class DlcFallbackWarning(UserWarning):
    """A graph torch.compile gave dlc runs eagerly (the message says why)."""


def compile_graph(graph_module: torch.fx.GraphModule, opt_level: int = 2,
                  num_threads: int | None = None) -> Callable[..., list[torch.Tensor]]:
    """A function running `graph_module` (core ATen ops) compiled by dlc: tensors in and out.
    `num_threads` and the compile cache behave as in `dlc.compile`."""
    from dlc.compiler import _threads, compile_imported_cached

    context = make_context()
    imported = import_graph(graph_module.graph, context, attributes=graph_module)
    model = compile_imported_cached(context, imported, opt_level, _threads(num_threads))

    def run(*args: torch.Tensor) -> list[torch.Tensor]:
        return model(*args)  # (a CompiledModel takes and returns torch tensors)

    run.compiled_model = model  # (for inspection: run.compiled_model.ir("linalg"))
    return run


def _forward_compiler(opt_level: int, num_threads: int | None) -> Callable:
    def compile_forward(graph_module: torch.fx.GraphModule, example_inputs: Sequence) -> Any:
        try:
            return make_boxed_func(compile_graph(graph_module, opt_level, num_threads))
        except DlcError as error:
            warnings.warn(f"dlc could not compile a graph, which runs eagerly instead: {error}",
                          DlcFallbackWarning, stacklevel=2)
            return make_boxed_func(graph_module.forward)

    return compile_forward


def _eager(graph_module: torch.fx.GraphModule, example_inputs: Sequence) -> Any:
    return make_boxed_func(graph_module.forward)


def dlc_backend(graph_module: torch.fx.GraphModule, example_inputs: Sequence,
                options: dict[str, Any] | None = None, **kwargs: Any) -> Callable:
    """The torch.compile backend "dlc" (the signature Dynamo calls backends with)."""
    settings = {**(options or {}), **kwargs}
    unknown = set(settings) - {"opt_level", "num_threads"}
    if unknown:
        raise ValueError(f"unknown dlc backend options {sorted(unknown)}; known: opt_level, "
                         "num_threads")
    forward = _forward_compiler(settings.get("opt_level", 2), settings.get("num_threads"))
    backend = aot_autograd(fw_compiler=forward,
                           bw_compiler=_eager, decompositions=core_aten_decompositions())
    return backend(graph_module, example_inputs)
