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

from dlc.passes.llvm.split_functions import single_block_functions
from dlc.passes.registry import ModulePass, register

# views the kernel makes itself from the buffers they view (their static shapes are in its
# text, their index operands, the arena offsets of dlc-plan-buffers, are its arguments)
VIEWS = ("memref.view", "memref.expand_shape", "memref.collapse_shape", "memref.subview",
         "memref.reinterpret_cast", "memref.cast", "memref.reshape")
PURE = ("arith.constant", "ub.poison", "memref.get_global", *VIEWS)  # (erased in main unused)


def _cloneable(value: ir.Value) -> bool:
    """A constant the kernel gets a copy of: an op without operands or regions (arith.constant,
    ub.poison) whose results are no buffers."""
    if not isinstance(value, ir.OpResult):
        return False
    owner = value.owner.operation
    return not owner.operands and not owner.regions and \
        not any(isinstance(r.type, ir.MemRefType) for r in owner.results) and \
        owner.name in ("arith.constant", "ub.poison", "llvm.mlir.constant")


class _Kernel:
    """The entry block of a kernel being built: an outside value's counterpart in it, made
    the first time it is asked for (an argument, a cloned constant, or a view rebuilt)."""

    def __init__(self, entry: ir.Block, location: ir.Location):
        self.entry, self.location = entry, location
        self.inputs: list[ir.Value] = []  # the outside values passed, in argument order
        self._arguments: dict[ir.Value, ir.Value] = {}
        self._local: dict[ir.Value, ir.Value] = {}

    def argument(self, value: ir.Value) -> ir.Value:
        if value not in self._arguments:
            self._arguments[value] = self.entry.add_argument(value.type, self.location)
            self.inputs.append(value)
        return self._arguments[value]

    def local(self, value: ir.Value) -> ir.Value:
        """The kernel's value for `value`, used as an operand of its ops."""
        if value in self._local:
            return self._local[value]
        owner = value.owner.operation if isinstance(value, ir.OpResult) else None
        if owner is not None and (_cloneable(value) or owner.name in VIEWS):
            # (a view's buffers are rebuilt too; its offsets and sizes are arguments, even
            # constant ones: they are what differs between a model's identical layers)
            operands = [self.local(v) if isinstance(v.type, ir.MemRefType) else self.argument(v)
                        for v in owner.operands]
            with ir.InsertionPoint(self.entry):
                clone = owner.clone()
            for number, operand in enumerate(operands):
                clone.operands[number] = operand
            for original, new in zip(owner.results, clone.results, strict=True):
                self._local[original] = new
        else:
            self._local[value] = self.argument(value)
        return self._local[value]


def _outline(group: list[ir.Operation], defined: set[ir.Value], module_body: ir.Block,
             name: str, location: ir.Location) -> tuple[func.FuncOp, func.CallOp]:
    """Move the ops of `group` (consecutive but for constants and views between them) into
    a new private function `name`, called where the last of them was: the values the group
    uses may be defined among those constants and views (after its first op), and no op
    between its members uses its results (`_groups` ends a run at a view of them)."""
    members = set(group)
    inside = {result for op in group for result in op.results}
    uses: list[tuple[ir.Operation, int, ir.Value]] = []

    def visit(nested: ir.Operation) -> ir.WalkResult:
        for number, value in enumerate(nested.operands):
            if value in defined and value not in inside:
                uses.append((nested, number, value))
        return ir.WalkResult.ADVANCE

    for op in group:
        op.walk(visit, ir.WalkOrder.PRE_ORDER)
    # (the values used after the group, by ops outside it)
    results = [r for r in inside if any(u.owner.operation not in members for u in r.uses)]
    results = [r for op in group for r in op.results if r in set(results)]  # (in order)
    with ir.InsertionPoint(module_body), location:
        kernel = func.FuncOp(name, ([], [r.type for r in results]), visibility="private")
        kernel.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
        kernel.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
        entry = kernel.add_entry_block()
    built = _Kernel(entry, location)
    replacements = [built.local(value) for _, _, value in uses]
    kernel.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [v.type for v in built.inputs], [r.type for r in results]))
    with ir.InsertionPoint(group[-1]), location:
        call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name),
                           built.inputs)
    for result, replacement in zip(results, call.results, strict=True):
        for use in list(result.uses):
            if use.owner.operation not in members:
                use.owner.operands[use.operand_number] = replacement
    for op in group:
        entry.append(op)
    for (user, number, _), replacement in zip(uses, replacements, strict=True):
        user.operands[number] = replacement
    with ir.InsertionPoint(entry), location:
        func.ReturnOp(results)
    return kernel, call


# ops that stay in the function: buffers are allocated and freed where they were, calls (a
# profile's timestamps) are not moved
KEPT = ("memref.alloc", "memref.alloca", "memref.dealloc", "func.call", "llvm.call")


def _groups(operations: list[ir.Operation]) -> list[list[ir.Operation]]:
    """The kernels of a block's ops (its terminator aside): each op with regions by itself,
    and each run of other computing ops (copies, vector ops, stores) between them, skipping
    the constants and views among them (a view of the run's own results ends it)."""
    groups: list[list[ir.Operation]] = []
    run: list[ir.Operation] = []
    produced: set[ir.Value] = set()

    def end() -> None:
        nonlocal run
        if run:
            groups.append(run)
        run = []
        produced.clear()

    for op in operations[:-1]:
        if op.regions:
            end()
            groups.append([op])
        elif op.name in PURE:
            if any(value in produced for value in op.operands):
                end()
        elif op.name in KEPT:
            end()
        else:
            run.append(op)
            produced.update(op.results)
    end()
    return groups


def _text(kernel: func.FuncOp, name: str) -> str:
    """The kernel's text with its name left out (two kernels of the same text are the same)."""
    text = kernel.operation.get_asm(enable_debug_info=False, use_local_scope=True,
                                    assume_verified=True)  # (verified once, with the stage)
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
    for group in _groups(operations):
        while f"{base}__kernel{number}" in taken:
            number += 1
        name = f"{base}__kernel{number}"
        kernel, call = _outline(group, defined, module_body, name, function.location)
        defined.update(call.results)  # (a later kernel may use them)
        text = _text(kernel, name)
        count += 1
        if text in known:
            call.attributes["callee"] = ir.FlatSymbolRefAttr.get(known[text])
            kernel.operation.erase()
            continue
        known[text] = name
        taken.add(name)
    # the constants, globals and views only the kernels used (they have their own now)
    for op in reversed(list(block.operations)):
        op = op.operation
        if op.name in PURE and all(next(iter(r.uses), None) is None for r in op.results):
            op.erase()
    return count


@register
@dataclass(frozen=True)
class OutlineKernels(ModulePass):
    """Move each top-level op with regions of a function into a private noinline function
    called in its place; kernels of the same text become one function."""

    name = "dlc-outline-kernels"

    def run(self, module: ir.Operation) -> None:
        body, functions, taken = single_block_functions(module)
        known: dict[str, str] = {}
        for function in functions:
            outline_function(function, body, taken, known)
