"""torch tensors in, torch tensors out: the adapter `CompiledModel.__call__` uses.

This module imports without torch (torch is an optional extra): a value can only be a torch
tensor, or a model a torch module, when the caller has imported torch already, so the checks
look torch up in `sys.modules` instead of importing it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def _torch() -> Any:
    return sys.modules.get("torch")


def is_torch_model(model: Any) -> bool:
    """True for a `torch.nn.Module` or a `torch.export.ExportedProgram`."""
    torch = _torch()
    if torch is None:
        return False
    return isinstance(model, torch.nn.Module | torch.export.ExportedProgram)


def is_exported_program(model: Any) -> bool:
    """True for a `torch.export.ExportedProgram`."""
    torch = _torch()
    return torch is not None and isinstance(model, torch.export.ExportedProgram)


def _values(args: Sequence, kwargs: Mapping) -> list:
    if len(args) == 1 and isinstance(args[0], Mapping):
        return [*args[0].values(), *kwargs.values()]
    return [*args, *kwargs.values()]


def holds_torch_tensors(args: Sequence, kwargs: Mapping) -> bool:
    torch = _torch()
    return torch is not None and any(isinstance(v, torch.Tensor) for v in _values(args, kwargs))


def to_numpy(value: Any, what: str = "an input") -> Any:
    """A CPU tensor as a numpy array sharing its memory (others are returned as they are);
    an InputError naming `what` for a tensor numpy cannot hold (on another device, sparse or
    another layout, of a dtype numpy lacks: bfloat16, quantized)."""
    from dlc.errors import InputError

    torch = _torch()
    if not isinstance(value, torch.Tensor):
        return value
    if value.device.type != "cpu":
        raise InputError(f"dlc runs on the CPU; {what} is a tensor on {value.device} "
                         "(move it with .cpu())")
    if value.layout != torch.strided:
        raise InputError(f"{what} is a {value.layout} tensor; dlc takes dense tensors "
                         "(convert it with .to_dense())")
    try:
        return value.detach().resolve_conj().resolve_neg().numpy()
    except (TypeError, RuntimeError) as error:  # (a dtype numpy lacks: bfloat16, quantized)
        raise InputError(f"{what} of dtype {value.dtype} has no numpy equivalent: "
                         f"{error}") from None


def call_with_tensors(function: Callable[..., list], args: Sequence, kwargs: Mapping) -> list:
    """Call `function` (numpy in, numpy out) with torch tensors; its outputs as tensors."""
    torch = _torch()
    if len(args) == 1 and isinstance(args[0], Mapping) and not kwargs:
        outputs = function({k: to_numpy(v, f"input '{k}'") for k, v in args[0].items()})
    else:
        outputs = function(*(to_numpy(v, f"input {i}") for i, v in enumerate(args)),
                           **{k: to_numpy(v, f"input '{k}'") for k, v in kwargs.items()})
    return [torch.from_numpy(o) for o in outputs]
