"""An llvm dialect module cut into parts that LLVM compiles separately, in parallel processes
(`dlc.runtime.native`), and that link into one shared object.

Each function definition goes to one part, dealt by cost (its op count; a third of it for
`main` and its parts) to the part of least cost so far, largest first, in module order among
equals: the parts take about the same time in `opt` and `llc`, and the same module always
gives the same parts. In each part:
- its own functions are defined, made external and hidden (the linker resolves the other
  parts' calls; the shared object exports only the entry points), and the other parts'
  functions it calls are declared; the module's external functions (`main`, its C interface)
  keep their default visibility;
- the mutable globals (the buffer arena, the weight pointers bound at load, the weight table,
  the runtime-check status) are defined in part 0 only, hidden unless external already, and
  declared in the others: one copy each;
- the constant globals are private copies in each part that reads them (small: the large ones
  are external weights), so that LLVM still folds their loads;
- what a part does not use (other constants) LLVM drops (`opt`'s global DCE: symbol-dce here
  took as long as writing the part).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path

from mlir import ir

from dlc.passes.walk import ops_where

FUNC = "llvm.func"
GLOBAL = "llvm.mlir.global"
KERNEL = "__kernel"  # (dlc-outline-kernels' functions: main__kernel<N>)
HIDDEN = 1  # (LLVM::Visibility::Hidden, the llvm dialect's visibility_ value)


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _defines(op: ir.Operation) -> bool:
    return op.name == FUNC and len(op.regions[0].blocks) > 0


def _size(op: ir.Operation) -> int:
    """The ops in `op`, nested ones included (a kernel's OpenMP region holds nearly all)."""
    return len(ops_where(op, lambda _: True))


def _cost(op: ir.Operation) -> int:
    """About how long LLVM takes on function `op`: its ops, a third for those of `main` and its
    parts (calls and memref descriptors, few loops; BERT-base's main and kernels dealt by ops
    alone took 0.4 and 0.6 CPU s in opt and llc, by this cost 0.6 and 0.6)."""
    return _size(op) if KERNEL in _name(op) else _size(op) // 3


def assign(module: ir.Module, count: int) -> dict[str, int]:
    """The part (0 .. count-1) of each function definition of `module`, balanced by size."""
    functions = [op.operation for op in module.body.operations
                 if _defines(op.operation)]
    sizes = [_cost(op) for op in functions]
    order = sorted(range(len(functions)), key=lambda i: (-sizes[i], i))
    loads = [(0, part) for part in range(count)]  # (ops so far, part): a min-heap
    parts: dict[str, int] = {}
    for i in order:
        load, part = heapq.heappop(loads)
        parts[_name(functions[i])] = part
        heapq.heappush(loads, (load + sizes[i], part))
    return parts


def write_parts(module: ir.Module, count: int, folder: Path) -> Iterator[int]:
    """Write `module` cut into at most `count` parts as `folder`/part{k}.mlirbc, yielding each
    k once its file is written (the caller may compile it while the next is written)."""
    parts = assign(module, count)
    for part in sorted(set(parts.values())) or [0]:
        clone = module.operation.clone()  # (a module of its own; the caller's is unchanged)
        try:
            _keep(clone, part, parts)
            with open(folder / f"part{part}.mlirbc", "wb") as file:
                clone.write_bytecode(file)
        finally:
            clone.erase()
        yield part


def _keep(module: ir.Operation, part: int, parts: dict[str, int]) -> None:
    """Make `module` (a clone) part `part` of `parts`, in place."""
    body = module.regions[0].blocks[0]
    for op in list(body.operations):
        op = op.operation
        if op.name == FUNC and _defines(op):
            if parts[_name(op)] == part:
                _share(op)
            else:
                _declare(op, FUNCTION_KEPT)
        elif op.name == GLOBAL and "constant" not in op.attributes:
            if part == 0:
                _share(op)
            else:
                _declare(op, GLOBAL_KEPT)


# the attributes a declaration keeps of a function's or a global's definition
FUNCTION_KEPT = ("sym_name", "function_type", "CConv", "visibility_")
GLOBAL_KEPT = ("sym_name", "global_type", "addr_space", "alignment", "visibility_")


def _linked(attributes: ir.OpAttributeMap | dict, was: ir.Attribute) -> None:
    """External linkage in `attributes`, hidden where the definition's linkage `was` not
    external (a symbol of the module that only its parts use: not exported)."""
    if str(was) != "#llvm.linkage<external>":
        attributes["visibility_"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), HIDDEN)
    attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")


def _share(op: ir.Operation) -> None:
    """A definition of this part that the others may use."""
    _linked(op.attributes, op.attributes["linkage"])
    if "sym_visibility" in op.attributes:
        del op.attributes["sym_visibility"]


def _declare(op: ir.Operation, kept: tuple[str, ...]) -> None:
    """Replace the definition `op` (of another part) by a declaration of it."""
    attributes = {name: op.attributes[name] for name in kept if name in op.attributes}
    _linked(attributes, op.attributes["linkage"])
    with ir.InsertionPoint(op), op.location:
        ir.Operation.create(op.name, attributes=attributes, regions=1)
    op.erase()
