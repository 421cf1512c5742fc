"""An llvm dialect module cut into parts that LLVM compiles separately, in parallel processes
(`dlc.runtime.native`), and that link into one shared object.

Each function definition goes to one part, dealt by cost (its op count; a third of it for
`main` and its parts) to the part of least cost so far, largest first, in module order among equals: the parts take about the same
time in `opt` and `llc`, and the same module always gives the same parts. In each part:
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
    count = 0

    def visit(_: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return count


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
                _replace(op, _function_declaration(op))
        elif op.name == GLOBAL and "constant" not in op.attributes:
            if part == 0:
                _share(op)
            else:
                _replace(op, _global_declaration(op))


def _share(op: ir.Operation) -> None:
    """A symbol of this part that the others may use: external linkage, hidden unless it was
    external already."""
    attributes = op.attributes
    if str(attributes["linkage"]) != "#llvm.linkage<external>":
        attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")
        attributes["visibility_"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), HIDDEN)
    if "sym_visibility" in attributes:
        del attributes["sym_visibility"]


def _function_declaration(op: ir.Operation) -> dict:
    kept = ("sym_name", "function_type", "CConv", "visibility_")
    return {"name": FUNC, "attributes": _declared(op, kept)}


def _global_declaration(op: ir.Operation) -> dict:
    kept = ("sym_name", "global_type", "addr_space", "alignment", "visibility_")
    return {"name": GLOBAL, "attributes": _declared(op, kept)}


def _declared(op: ir.Operation, kept: tuple[str, ...]) -> dict[str, ir.Attribute]:
    attributes = {name: op.attributes[name] for name in kept if name in op.attributes}
    attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")
    if str(op.attributes["linkage"]) != "#llvm.linkage<external>":
        attributes["visibility_"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), HIDDEN)
    return attributes


def _replace(op: ir.Operation, declaration: dict) -> None:
    with ir.InsertionPoint(op), op.location:
        ir.Operation.create(declaration["name"], attributes=declaration["attributes"],
                            regions=1)
    op.erase()
