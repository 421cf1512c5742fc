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
Two outlined functions equal but for their names and locations are one: the second's calls
call the first, its body is erased. MLIR's `duplicate-function-elimination` compares them, in
a scratch module that holds them until then (`OperationEquivalence`: op names, attributes and
properties, types, operands up to the renaming of values, regions; printing each kernel to
compare texts cost BERT-base's 473 kernels 0.09-0.18 s, of Python calls, one per 2.4 bytes
of text written). The kernels are named
`<function>__kernel<k>` in the order of their first occurrence, internal and `noinline` (LLVM
would inline a function called once back, and the point is that it compiles each once): the
output is deterministic, and the computation and its order are unchanged, bit for bit.
A BERT-base `main` of 12 identical layers keeps one copy of each layer kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func
from mlir.passmanager import PassManager

from dlc.passes.llvm.split_functions import single_block_functions
from dlc.passes.registry import ModulePass, register

# views the kernel makes itself from the buffers they view (their static shapes are in its
# text, their index operands, the arena offsets of dlc-plan-buffers, are its arguments)
VIEWS = ("memref.view", "memref.expand_shape", "memref.collapse_shape", "memref.subview",
         "memref.reinterpret_cast", "memref.cast", "memref.reshape")
PURE = ("arith.constant", "ub.poison", "memref.get_global", *VIEWS)  # (erased in main unused)


def _view(op: ir.Operation) -> bool:
    """Whether `op` is a view a kernel rebuilds at its entry: one of VIEWS, but not a
    `memref.reshape` whose shape is a buffer the function writes (not a constant global): its
    sizes are read when it runs, after the stores (a function of a dynamic size builds its
    reshapes' shapes at run time; rebuilt at the kernel's entry, it read them unwritten)."""
    if op.name not in VIEWS:
        return False
    if op.name != "memref.reshape":
        return True
    shape = op.operands[1]
    owner = shape.owner.operation if isinstance(shape, ir.OpResult) else None
    return owner is not None and owner.name == "memref.get_global"


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
        if owner is not None and (_cloneable(value) or _view(owner)):
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
        elif op.name in PURE and (op.name not in VIEWS or _view(op)):
            if any(value in produced for value in op.operands):
                end()
        elif op.name in KEPT:
            end()
        else:
            run.append(op)
            produced.update(op.results)
    end()
    return groups


REPRESENTATIVE = "dlc.representative"
# (the kernels use the module's globals, not in the scratch module: they are verified with
# the stage)
DEDUPLICATE = "builtin.module(duplicate-function-elimination)"


def _marker(scratch_body: ir.Block, name: str) -> None:
    """Before the kernel `name` in the scratch module, a declaration whose attribute
    `REPRESENTATIVE` refers to it: duplicate-function-elimination renames the uses of a kernel
    it erases (this one) to its representative (it walks the users of each kernel it
    erases, not the module)."""
    with ir.InsertionPoint(scratch_body), ir.Location.unknown():
        marker = func.FuncOp(f"{name}.marker", ([], []), visibility="private")
    marker.attributes[REPRESENTATIVE] = ir.FlatSymbolRefAttr.get(name)


def _deduplicate(scratch: ir.Module) -> dict[str, tuple[str, ir.Operation | None]]:
    """Erase each kernel of `scratch` equal to an earlier one: each kernel's name gives its
    representative's, and the kernel if it is kept (its own representative)."""
    pm = PassManager.parse(DEDUPLICATE, context=scratch.context)
    pm.enable_verifier(False)
    pm.run(scratch.operation)
    # (only now are the kernels' Python objects made: an erased one's would be invalid)
    kept: dict[str, tuple[str, ir.Operation | None]] = {}
    operations = list(scratch.body.operations)
    for number, op in enumerate(operations):
        if REPRESENTATIVE not in op.attributes:
            continue  # (a kernel)
        name = ir.StringAttr(op.attributes["sym_name"]).value.removesuffix(".marker")
        representative = ir.FlatSymbolRefAttr(op.attributes[REPRESENTATIVE]).value
        kept[name] = (representative, operations[number + 1] if name == representative
                      else None)
    return kept


def outline_function(function: func.FuncOp, scratch_body: ir.Block,
                     calls: list[func.CallOp]) -> None:
    """Outline the top-level ops with regions of `function` (one block) into kernels of the
    scratch module, each after its marker, named `__outlined<k>` (k: the number of calls so far,
    which `calls` gets them appended)."""
    block = function.regions[0].blocks[0]
    defined: set[ir.Value] = set(block.arguments)
    operations = [op.operation for op in block.operations]
    for op in operations:
        defined.update(op.results)
    for group in _groups(operations):
        name = f"__outlined{len(calls)}"
        _marker(scratch_body, name)
        _, call = _outline(group, defined, scratch_body, name, function.location)
        defined.update(call.results)  # (a later kernel may use them)
        calls.append(call)
    # the constants, globals and views only the kernels used (they have their own now)
    for op in reversed(list(block.operations)):
        op = op.operation
        if op.name in PURE and all(next(iter(r.uses), None) is None for r in op.results):
            op.erase()


def _place(calls: list[func.CallOp], bases: list[str],
           kept: dict[str, tuple[str, ir.Operation | None]], module_body: ir.Block,
           taken: set[str]) -> None:
    """Move the kept kernels into the module, in the order of their first call, named
    `<function>__kernel<k>` (k from 0 per function, skipping the names taken), and point every
    call at its kernel's representative."""
    names: dict[str, str] = {}  # a kept kernel's scratch name: its name
    number: dict[str, int] = {}
    for call, base in zip(calls, bases, strict=True):
        representative, kernel = kept[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
        if kernel is not None:
            k = number.get(base, 0)
            while f"{base}__kernel{k}" in taken:
                k += 1
            number[base] = k
            names[representative] = f"{base}__kernel{k}"
            taken.add(names[representative])
            kernel.attributes["sym_name"] = ir.StringAttr.get(names[representative])
            module_body.append(kernel)
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(names[representative])


@register
@dataclass(frozen=True)
class OutlineKernels(ModulePass):
    """Move each top-level op with regions of a function into a private noinline function
    called in its place; kernels equal but for names and locations become one function."""

    name = "dlc-outline-kernels"

    def run(self, module: ir.Operation) -> None:
        body, functions, taken = single_block_functions(module)
        with module.context, ir.Location.unknown():
            scratch = ir.Module.create()  # (the kernels, until they are compared)
        calls: list[func.CallOp] = []
        bases: list[str] = []  # (the function of each call)
        for function in functions:
            outline_function(function, scratch.body, calls)
            base = ir.StringAttr(function.attributes["sym_name"]).value
            bases += [base] * (len(calls) - len(bases))
        _place(calls, bases, _deduplicate(scratch), body, taken)
