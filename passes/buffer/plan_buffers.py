"""dlc-plan-buffers: a function's intermediate buffers become views of one static arena.

After bufferization every intermediate tensor is a `memref.alloc` that the deallocation
pipeline frees once its last alias is dead: a malloc and a free per buffer and per call. This
pass (at -O2/-O3, after bufferization) places each static allocation of a function's top-level
block that is freed by one `memref.dealloc` in that block in a single arena, a `memref.global`
of bytes (uninitialized: no data in the object file), at an offset planned at compile time on
the live ranges in program order (first fit, largest first: `graph.report.plan`, the plan
`dlc compile --stats` reports); the alloc becomes a `memref.view` of the arena and its dealloc
goes. A call then allocates nothing but its outputs (numpy's arrays). A live range ends at the
last top-level op using the buffer or a view of it (`last_use`), not at its dealloc: the
deallocation pipeline frees every buffer at the end of the function, so that ResNet-50's 57
buffers were all live at once (45 MiB; planned on last uses: 7.7 MiB, reused while in cache:
MobileNetV2 0.93x -> 0.84x, ResNet-50 1.03x -> 1.01x onnxruntime, same-process A/B).

Allocations inside loops or branches, with dynamic sizes, a non-identity layout or another
memory space, freed elsewhere, or used by an op that neither accesses them in place
(`ACCESSES`, or a call of dlc-lower-copies' row-copy functions) nor is a view (`VIEWS`): a
loop's or a call's operand, a yield... keep malloc.
Of those, a top-level one with its one dealloc in the top-level block and no such use (a
dynamic size) is freed just after its last use instead of at the end (`_free_early`).
Buffers are aligned to `alignment` bytes (at least the alloc's own alignment). The arena
makes the function non-reentrant: the runtime serializes the calls of a compiled model
(`JitFunction` and `SharedObjectFunction` hold a lock, one per loaded shared object). Why:
with malloc, the MLP's 2-thread build ran 0.28 ms instead of 0.09 ms in a process whose
earlier large frees had raised glibc's dynamic mmap threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, memref

from dlc.passes.buffer.lower_copies import ROW_COPY
from dlc.passes.graph.report import Buffer, nbytes, plan
from dlc.passes.registry import ModulePass, register


def plannable_bytes(op: ir.Operation) -> int | None:
    """The size of a static, identity-layout, default-space `memref.alloc`, else None."""
    if op.name != "memref.alloc" or len(op.operands) != 0:
        return None
    kind = ir.MemRefType(op.results[0].type)
    if not kind.has_static_shape or kind.memory_space is not None:
        return None
    strides, offset = kind.get_strides_and_offset()
    count = 1
    for extent, stride in zip(reversed(kind.shape), reversed(strides), strict=True):
        if stride != count and extent != 1:
            return None  # (not row-major: a view could not stand for it)
        count *= extent
    return max(1, nbytes(kind)) if offset == 0 else None


LAST_USE = True  # live ranges end at the last use (False: at the dealloc, the function's end)
VIEWS = ("memref.subview", "memref.expand_shape", "memref.collapse_shape", "memref.view",
         "memref.reinterpret_cast", "memref.cast", "memref.transpose", "memref.reshape")


# the ops that read or write a buffer where they stand (anything else may keep it: a loop's
# iteration argument, a call, a yield, its pointer taken)
ACCESSES = ("memref.load", "memref.store", "memref.copy", "vector.transfer_read",
            "vector.transfer_write", "vector.load", "vector.store", "vector.maskedload",
            "vector.maskedstore", "linalg.", "affine.load", "affine.store")


def last_use(alloc: ir.Operation, function: ir.Operation, position: dict) -> int | None:
    """The position (in the function's block) of the last op that uses `alloc` or a view of
    it, or None when a use could let it escape (an op other than `ACCESSES` and `VIEWS`):
    such a buffer keeps malloc."""
    last = position[alloc]
    pending = [alloc.results[0]]
    while pending:
        value = pending.pop()
        for use in value.uses:
            user = use.owner.operation
            if user.name == "memref.dealloc":
                continue
            if user.name in VIEWS:
                pending.extend(user.results)
            elif not (user.name.startswith(ACCESSES) or _row_copy(user)) or any(
                    isinstance(result.type, ir.MemRefType) for result in user.results):
                return None  # (a loop's or a call's operand, a yield, a pointer taken...)
            top = user
            while top.parent is not None and top.parent.operation != function:
                top = top.parent.operation
            last = max(last, position[top])
    return last


def _row_copy(op: ir.Operation) -> bool:
    """Whether `op` calls one of dlc-lower-copies' row-copy functions (a copy: it keeps no
    pointer)."""
    return op.name == "func.call" and ir.FlatSymbolRefAttr(
        op.attributes["callee"]).value.startswith(ROW_COPY)


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _candidates(block: ir.Block, scope: ir.Operation) -> tuple[list, dict]:
    """The plannable allocs of `block` (the body of `scope`: a function or a loop) that one
    `memref.dealloc` in `block` frees and nothing lets escape: (alloc, dealloc, bytes, end)
    each, with `end` the position of its last use in `block`; and the ops' positions."""
    operations = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(operations)}
    planned = []
    for alloc in operations:
        size = plannable_bytes(alloc)
        if size is None:
            continue
        deallocs = [use.owner.operation for use in alloc.results[0].uses
                    if use.owner.name == "memref.dealloc"]
        if len(deallocs) != 1 or deallocs[0] not in position:
            continue  # (freed in a branch or a loop, or never: malloc keeps it)
        # (the deallocation pipeline frees every buffer at the end of the function: the live
        # range ends at the last use of the buffer or of a view of it instead)
        end = last_use(alloc, scope, position) if LAST_USE else position[deallocs[0]]
        if end is not None:
            planned.append((alloc, deallocs[0], size, end))
    return planned, position


def _sequential_loops(block: ir.Block) -> list[ir.Operation]:
    """The `scf.for` loops of `block` with a body of one block (one iteration at a time: a
    buffer of the body can be reused by the next iteration)."""
    return [op.operation for op in block.operations
            if op.operation.name == "scf.for" and len(op.operation.regions[0].blocks) == 1]


def plan_function(function: func.FuncOp, module_body: ir.Block, name: str,
                  alignment: int) -> int:
    """Rewrite `function`'s plannable buffers into an arena named `name`; its size.

    The buffers of the body of a top-level `scf.for` (a dynamic function's loop of blocks,
    whose ops allocate their static intermediates per block: `dlc-distinct-empty-tensors`)
    are planned on their live ranges in the body, and the body's plan is one buffer of the
    function's, live at the loop."""
    block = function.regions[0].blocks[0]
    top, position = _candidates(block, function.operation)
    _free_early(function, [op.operation for op in block.operations], position, top)
    loops = [(loop, *_candidates(loop.regions[0].blocks[0], loop))
             for loop in _sequential_loops(block)]
    loops = [(loop, inner, places) for loop, inner, places in loops if inner]
    if not top and not loops:
        return 0
    for alloc, _, _, _ in [*top, *(entry for _, inner, _ in loops for entry in inner)]:
        if "alignment" in alloc.attributes:
            alignment = max(alignment, ir.IntegerAttr(alloc.attributes["alignment"]).value)
    buffers = [Buffer(_align(size, alignment), position[alloc], end)
               for alloc, _, size, end in top]
    inner_offsets = []
    for loop, inner, places in loops:
        inner_buffers = [Buffer(_align(size, alignment), places[alloc], end)
                         for alloc, _, size, end in inner]
        offsets = plan(inner_buffers)
        inner_offsets.append(offsets)
        extent = max(offset + b.nbytes for offset, b in zip(offsets, inner_buffers))
        buffers.append(Buffer(extent, position[loop], position[loop]))
    offsets = plan(buffers)
    arena = max(offset + buffer.nbytes for offset, buffer in zip(offsets, buffers))
    placed = list(zip(top, offsets))
    for (_, inner, _), base, within in zip(loops, offsets[len(top):], inner_offsets,
                                           strict=True):
        placed += [(entry, base + offset) for entry, offset in zip(inner, within, strict=True)]
    with function.location:
        arena_type = ir.MemRefType.get([arena], ir.IntegerType.get_signless(8))
    with ir.InsertionPoint.at_block_begin(module_body), function.location:
        memref.GlobalOp(sym_name=name, type_=ir.TypeAttr.get(arena_type),
                        sym_visibility="private", initial_value=ir.UnitAttr.get(),
                        alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                     alignment))
    with ir.InsertionPoint.at_block_begin(block), function.location:
        base = memref.GetGlobalOp(arena_type, name).result
    index = ir.IndexType.get()
    for (alloc, dealloc, _, _), offset in placed:
        with ir.InsertionPoint(alloc), alloc.location:
            shift = arith.ConstantOp(index, offset).result
            view = memref.ViewOp(alloc.results[0].type, base, shift, []).result
        alloc.results[0].replace_all_uses_with(view)
        dealloc.erase()
        alloc.erase()
    return arena


def _free_early(function: func.FuncOp, operations: list[ir.Operation], position: dict,
                planned: list) -> None:
    """Move the one top-level `memref.dealloc` of each buffer the arena does not take (a
    dynamic size) from the end of the function to just after its last use (`last_use`),
    where no use could let it escape: in a function compiled for every sequence length,
    GPT-2's twelve layers' intermediates ([12, S, S] scores...) were all live until the end,
    about 1 GB at 512 tokens, freshly mapped and faulted in at each call."""
    taken = {alloc for alloc, _, _, _ in planned}
    for alloc in operations:
        if alloc.name != "memref.alloc" or alloc in taken:
            continue
        deallocs = [use.owner.operation for use in alloc.results[0].uses
                    if use.owner.name == "memref.dealloc"]
        if len(deallocs) != 1 or deallocs[0] not in position:
            continue
        end = last_use(alloc, function.operation, position)
        if end is None or end + 1 >= position[deallocs[0]]:
            continue
        deallocs[0].move_after(operations[end])


@register
@dataclass(frozen=True)
class PlanBuffers(ModulePass):
    """Place each function's top-level static buffers in one static arena (memref.global) at
    offsets planned on their live ranges: no malloc or free per call."""

    name = "dlc-plan-buffers"
    alignment: int = 64

    def run(self, module: ir.Operation) -> None:
        body = module.regions[0].blocks[0]
        functions = [op for op in body.operations
                     if isinstance(op, func.FuncOp) and len(op.regions[0].blocks) == 1]
        for number, function in enumerate(functions):
            name = ir.StringAttr(function.attributes["sym_name"]).value
            plan_function(function, body, f"__dlc_arena_{number}_{name}", self.alignment)
