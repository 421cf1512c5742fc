"""Reading the PTX out of a module lowered by the nvptx pipeline, and checking it.

After `gpu-module-to-binary{format=isa}` each kernel module is a `gpu.binary` op whose object
(`#gpu.object<#nvvm.target<...>, assembly = "...">`) holds PTX text emitted by LLVM's NVPTX
backend. `binaries(module)` maps each binary's symbol to its PTX; `entries(ptx)` lists the
kernels (`.visible .entry` functions) of one PTX text; `check(binaries, expected)` raises
`PtxError` when a kernel is missing or when the PTX calls a function it does not define
(a libdevice `__nv_*` math function: the driver's PTX JIT links no libraries).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from mlir import ir
from mlir.dialects import gpu

from dlc.errors import DlcError

_ENTRY = re.compile(r"^\.(?:visible|weak) \.entry (\w+)\(", re.MULTILINE)
_EXTERN = re.compile(r"^\.extern \.func(?: \([^)]*\))? (\w+)", re.MULTILINE)


class PtxError(DlcError):
    """The PTX of a compiled model is incomplete: a kernel or a called function is missing."""


def binaries(module: ir.Operation) -> dict[str, str]:
    """PTX text of each `gpu.binary` of `module` (top level), by symbol name."""
    found: dict[str, str] = {}
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name != "gpu.binary":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        for attribute in ir.ArrayAttr(op.attributes["objects"]):
            found[name] = gpu.ObjectAttr(attribute).object.decode()
    return found


def entries(ptx: str) -> list[str]:
    """The kernel entry points that a PTX text defines."""
    return _ENTRY.findall(ptx)


def unresolved(ptx: str) -> list[str]:
    """Functions the PTX declares `.extern` and calls (libdevice's `__nv_*`...)."""
    return _EXTERN.findall(ptx)


def check(ptx_by_module: Mapping[str, str], expected: Iterable[tuple[str, str]]) -> None:
    """PtxError unless every (module, kernel) of `expected` is an entry of that module's PTX
    and no PTX calls an external function."""
    problems = []
    for module, kernel in expected:
        text = ptx_by_module.get(module)
        if text is None:
            problems.append(f"no PTX for kernel module '{module}'")
        elif kernel not in entries(text):
            problems.append(f"kernel '{kernel}' is not an entry of the PTX of '{module}'")
    for module, text in ptx_by_module.items():
        for name in unresolved(text):
            problems.append(f"the PTX of '{module}' calls '{name}', which the driver cannot "
                            "link (a libdevice math function: lower that math op to arith, "
                            "e.g. with dlc-polynomial-math)")
    if problems:
        raise PtxError("; ".join(problems))
