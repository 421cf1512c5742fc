"""dlc-outline-kernels: each loop nest of a function becomes a call; identical ones, one function.

A transformer's layers lower to the same kernels: the same shapes and schedules, reading other
buffers (views of dlc-plan-buffers' arena) and other weights (globals, pointers bound at load
by dlc-external-weights). In one `main` LLVM optimized and generated the code of each of them,
BERT-base's twelve layers twelve times (issue 20: LLVM's -O2 and code generation were 10 of its
25 CPU seconds). This pass (after bufferization, first in the llvm stage at -O2/-O3) moves every
top-level op with regions of a single-block function (a scheduled tile loop nest with its fused
epilogue, a naive linalg op, a loop of index checks) into a private function of its own, called
in its place: the values it uses from the function are its arguments (buffers, views, globals
and scalars, in the order of their first use), except constants without operands (scalars,
vector splats, `ub.poison`), which are cloned into it; its results are the function's.
Two outlined functions whose text is the same (printed with the same name, without locations)
are one: the second's calls call the first, its body is erased. The kernels are named
`<function>__kernel<k>` in the order of their first occurrence, internal and `noinline` (LLVM
would inline a function called once back, and the point is that it compiles each once): the
output is deterministic, and the computation and its order are unchanged, bit for bit.
A BERT-base `main` of 12 identical layers keeps one copy of each layer kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from dlc.passes.registry import ModulePass, register


def _cloneable(value: ir.Value) -> bool:
    """A constant the kernel gets a copy of: an op without operands or regions (arith.constant,
    ub.poison) whose results are no buffers."""
    if not isinstance(value, ir.OpResult):
        return False
    owner = value.owner.operation
    return not owner.operands and not owner.regions and \
        not any(isinstance(r.type, ir.MemRefType) for r in owner.results) and \
        owner.name in ("arith.constant", "ub.poison", "llvm.mlir.constant")


def _outline(op: ir.Operation, defined: set[ir.Value], module_body: ir.Block,
             name: str, location: ir.Location) -> tuple[func.FuncOp, func.CallOp]:
    """Move `op` into a new private function `name`, called where it was."""
    uses: list[tuple[ir.Operation, int, ir.Value]] = []

    def visit(nested: ir.Operation) -> ir.WalkResult:
        for number, value in enumerate(nested.operands):
            if value in defined:
                uses.append((nested, number, value))
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    inputs: list[ir.Value] = []
    index: dict[ir.Value, int] = {}  # an input -> its argument number; a constant -> -1
    constants: list[ir.Value] = []
    for _, _, value in uses:
        if value in index:
            continue
        if _cloneable(value):
            index[value] = -1
            constants.append(value)
        else:
            index[value] = len(inputs)
            inputs.append(value)
    results = list(op.results)
    with ir.InsertionPoint(op), location:
        call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name), inputs)
    for result, replacement in zip(results, call.results, strict=True):
        result.replace_all_uses_with(replacement)
    with ir.InsertionPoint(module_body), location:
        kernel = func.FuncOp(name, ([v.type for v in inputs], [r.type for r in results]),
                             visibility="private")
        kernel.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
        kernel.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
        entry = kernel.add_entry_block()
    copies: dict[ir.Value, ir.Value] = {}
    for value in constants:
        with ir.InsertionPoint(entry):
            clone = value.owner.operation.clone()
        for original, new in zip(value.owner.operation.results, clone.results, strict=True):
            copies[original] = new
    entry.append(op)
    for user, number, value in uses:
        user.operands[number] = copies[value] if index[value] == -1 \
            else entry.arguments[index[value]]
    with ir.InsertionPoint(entry), location:
        func.ReturnOp(results)
    return kernel, call


def _text(kernel: func.FuncOp, name: str) -> str:
    """The kernel's text with its name left out (two kernels of the same text are the same)."""
    text = kernel.operation.get_asm(enable_debug_info=False, use_local_scope=True)
    return text.replace(f"@{name}(", "@(", 1)


def outline_function(function: func.FuncOp, module_body: ir.Block, taken: set[str],
                     known: dict[str, str]) -> int:
    """Outline the top-level ops with regions of `function` (one block); `known` maps a
    kernel's text to its name (shared by the functions of a module). How many were outlined."""
    block = function.regions[0].blocks[0]
    defined: set[ir.Value] = set(block.arguments)
    operations = [op.operation for op in block.operations]
    for op in operations:
        defined.update(op.results)
    base = ir.StringAttr(function.attributes["sym_name"]).value
    count = number = 0
    for op in operations[:-1]:  # (not the terminator)
        if not op.regions:
            continue
        while f"{base}__kernel{number}" in taken:
            number += 1
        name = f"{base}__kernel{number}"
        kernel, call = _outline(op, defined, module_body, name, function.location)
        defined.update(call.results)  # (a later kernel may use them)
        text = _text(kernel, name)
        count += 1
        if text in known:
            call.attributes["callee"] = ir.FlatSymbolRefAttr.get(known[text])
            kernel.operation.erase()
            continue
        known[text] = name
        taken.add(name)
    return count


@register
@dataclass(frozen=True)
class OutlineKernels(ModulePass):
    """Move each top-level op with regions of a function into a private noinline function
    called in its place; kernels of the same text become one function."""

    name = "dlc-outline-kernels"

    def run(self, module: ir.Operation) -> None:
        body = module.regions[0].blocks[0]
        functions = [op for op in body.operations
                     if isinstance(op, func.FuncOp) and len(op.regions[0].blocks) == 1]
        taken = {ir.StringAttr(op.attributes["sym_name"]).value for op in body.operations
                 if "sym_name" in op.attributes}
        known: dict[str, str] = {}
        for function in functions:
            outline_function(function, body, taken, known)
