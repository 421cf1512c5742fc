"""dlc-gpu-device-buffers: the buffers of bufferized functions move to GPU memory.

Input: functions after `one-shot-bufferize` and `buffer-results-to-out-params` (no
deallocation pass: this one places the frees). The contract of the rewritten function is the
CPU one: every argument is a host buffer (numpy's memory), the trailing out-parameters are
written, the others only read. Inside, every memref the kernels touch lives on the device:

- each argument gets a device twin (`gpu.alloc`): inputs are copied in at entry, arguments
  the function writes (its out-parameters) are copied out before each return (with
  `device-arguments`, the public functions' arguments are device memory already: torch CUDA
  tensors, used in place);
- `memref.alloc` becomes `gpu.alloc`, freed (`gpu.dealloc`) at the end of its block unless the
  block's terminator passes it on;
- each global (`memref.get_global`, host memory) is copied into a device buffer at entry,
  and back before each return when the function writes it (the status of the index checks);
- `memref.copy` (from `tensor.insert_slice`, `tensor.pad`, concat...) becomes `linalg.copy`,
  so that it runs as a kernel like every other linalg op (the runtime's `memrefCopy` would
  read device memory on the host).

- each constant global the function only reads (the weights) becomes a trailing argument of
  the function, marked `{dlc.resident = @global}`: the caller passes a device buffer holding
  the global's data, uploaded once (`dlc.runtime.cuda.CudaFunction` does it when the model is
  loaded), so that no call copies the weights again. Globals of element types the runtime
  cannot read from the IR (bf16, f8...) stay per-call copies.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func, gpu, linalg

from dlc.passes.registry import ModulePass, register

# ops through which a memref is still the same buffer (their result aliases operand 0)
_VIEWS = frozenset({"memref.subview", "memref.collapse_shape", "memref.expand_shape",
                    "memref.cast", "memref.reinterpret_cast", "memref.transpose"})


def _owner(operand_owner) -> ir.Operation:
    return operand_owner.operation if isinstance(operand_owner, ir.OpView) else operand_owner


def _writes(user: ir.Operation, number: int) -> bool:
    """Whether `user` writes its operand `number` (a memref), or may (a call, a return)."""
    if user.name in ("memref.store", "memref.copy"):
        return number == 1
    if user.name.startswith("linalg."):
        return _is_linalg_output(user, number)
    return user.name in ("func.call", "func.return")


def is_written(value: ir.Value) -> bool:
    """Whether anything writes `value`'s buffer (through views): a store, a copy into it,
    an `outs` operand of a linalg op, or an op dlc cannot see into (a call)."""
    pending = [value]
    while pending:
        current = pending.pop()
        for use in current.uses:
            user = _owner(use.owner)
            if user.name in _VIEWS:
                pending.extend(user.results)
            elif _writes(user, use.operand_number):
                return True
    return False


def _is_linalg_output(op: ir.Operation, number: int) -> bool:
    if "operandSegmentSizes" not in op.attributes:
        return False
    inputs = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[0]
    return number >= inputs


def _ops_named(function: ir.Operation, name: str) -> list[ir.Operation]:
    """The ops called `name` in `function`, in walk order (collected before any rewrite)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    function.walk(visit)
    return found


def _device_alloc(memref_type: ir.Type) -> ir.Value:
    return gpu.AllocOp(memref_type, None, [], [], []).result


def _copy(dst: ir.Value, src: ir.Value) -> None:
    gpu.MemcpyOp(None, [], dst, src)


def _returns(function: ir.Operation) -> list[ir.Operation]:
    return [op for block in function.regions[0].blocks for op in block.operations
            if op.name == "func.return"]


def _replace_uses_except(old: ir.Value, new: ir.Value, keep: ir.Operation) -> None:
    for use in list(old.uses):
        user = _owner(use.owner)
        if user != keep:
            user.operands[use.operand_number] = new


def move_arguments(function: ir.Operation) -> None:
    """Give each memref argument a device twin: copied in (read-only ones) at entry, copied
    out (written ones) and freed before each return."""
    entry = function.regions[0].blocks[0]
    first = entry.operations[0]
    twins: list[tuple[ir.Value, ir.Value, bool]] = []
    for argument in entry.arguments:
        if not isinstance(argument.type, ir.MemRefType) or is_resident(function,
                                                                       argument.arg_number):
            continue
        written = is_written(argument)
        with ir.InsertionPoint(first), function.location:
            device = _device_alloc(argument.type)
            copy = gpu.MemcpyOp(None, [], device, argument) if not written else None
        if copy is not None:
            _replace_uses_except(argument, device, copy.operation)
        else:
            argument.replace_all_uses_with(device)
        twins.append((argument, device, written))
    for ret in _returns(function):
        with ir.InsertionPoint(ret), ret.location:
            for argument, device, written in twins:
                if written:
                    _copy(argument, device)
                gpu.DeallocOp(None, [], device)


def move_allocs(function: ir.Operation) -> None:
    """memref.alloc -> gpu.alloc (freed at the end of its block unless passed on)."""
    found = _ops_named(function, "memref.alloc")
    for alloc in found:
        block = alloc.block
        terminator = block.operations[len(block.operations) - 1]
        with ir.InsertionPoint(alloc), alloc.location:
            device = gpu.AllocOp(alloc.result.type, None, [], list(alloc.operands), []).result
        alloc.result.replace_all_uses_with(device)
        alloc.erase()
        if any(_owner(use.owner) == terminator for use in device.uses):
            continue  # (passed on: its owner frees it)
        with ir.InsertionPoint(terminator), terminator.location:
            gpu.DeallocOp(None, [], device)


def move_constants(function: ir.Operation) -> None:
    """Each memref.get_global moves to the entry and is copied into a device buffer there;
    before each return, a global the function writes (the status of the runtime index checks)
    is copied back, and the device buffer freed."""
    found = _ops_named(function, "memref.get_global")
    entry = function.regions[0].blocks[0]
    returns = _returns(function)
    for get in found:
        get.move_before(entry.operations[0])  # (no operands: it may move anywhere)
        written = is_written(get.result)
        with ir.InsertionPoint.after(get), get.location:
            device = _device_alloc(get.result.type)
            copy = gpu.MemcpyOp(None, [], device, get.result)
        _replace_uses_except(get.result, device, copy.operation)
        for ret in returns:
            with ir.InsertionPoint(ret), ret.location:
                if written:
                    _copy(get.result, device)
                gpu.DeallocOp(None, [], device)


RESIDENT = "dlc.resident"


def _private(function: ir.Operation) -> bool:
    return ("sym_visibility" in function.attributes
            and ir.StringAttr(function.attributes["sym_visibility"]).value == "private")


def _resident_type(element: ir.Type) -> bool:
    """Element types whose dense data the runtime reads from the IR as numpy arrays."""
    if isinstance(element, ir.F32Type | ir.F64Type | ir.F16Type):
        return True
    return isinstance(element, ir.IntegerType) and element.width in (1, 8, 16, 32, 64)


def is_resident(function: ir.Operation, number: int) -> bool:
    """Whether argument `number` of `function` is a resident constant (a device buffer)."""
    if "arg_attrs" not in function.attributes:
        return False
    attributes = ir.ArrayAttr(function.attributes["arg_attrs"])
    return number < len(attributes) and RESIDENT in ir.DictAttr(attributes[number])


def resident_globals(function: ir.Operation) -> list[str]:
    """The global behind each resident argument of `function`, in argument order."""
    if "arg_attrs" not in function.attributes:
        return []
    return [ir.FlatSymbolRefAttr(ir.DictAttr(a)[RESIDENT]).value
            for a in ir.ArrayAttr(function.attributes["arg_attrs"]) if RESIDENT in ir.DictAttr(a)]


def make_constants_resident(function: ir.Operation, globals_: dict[str, ir.Operation]) -> None:
    """Each constant global that `function` reads and never writes becomes a trailing argument
    marked `{dlc.resident = @global}` (one per global), in place of its `memref.get_global`s."""
    found = _ops_named(function, "memref.get_global")
    entry = function.regions[0].blocks[0]
    arguments: dict[str, ir.Value] = {}
    for get in found:
        name = ir.FlatSymbolRefAttr(get.attributes["name"]).value
        declaration = globals_.get(name)
        memref_type = ir.MemRefType(get.result.type)
        if declaration is None or "constant" not in declaration.attributes \
                or "initial_value" not in declaration.attributes \
                or not isinstance(declaration.attributes["initial_value"], ir.DenseElementsAttr) \
                or not _resident_type(memref_type.element_type) or is_written(get.result):
            continue
        if name not in arguments:
            arguments[name] = entry.add_argument(memref_type, function.location)
        get.result.replace_all_uses_with(arguments[name])
        get.erase()
    if not arguments:
        return
    old = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    inputs = [*old.inputs, *(a.type for a in arguments.values())]
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(inputs, old.results))
    previous = (list(ir.ArrayAttr(function.attributes["arg_attrs"]))
                if "arg_attrs" in function.attributes
                else [ir.DictAttr.get({})] * len(old.inputs))
    function.attributes["arg_attrs"] = ir.ArrayAttr.get(
        [*previous, *(ir.DictAttr.get({RESIDENT: ir.FlatSymbolRefAttr.get(name)})
                      for name in arguments)])


def copies_to_linalg(function: ir.Operation) -> None:
    """memref.copy(src, dst) -> linalg.copy ins(src) outs(dst), a kernel like the others."""
    found = _ops_named(function, "memref.copy")
    for copy in found:
        with ir.InsertionPoint(copy), copy.location:
            linalg.copy(copy.operands[0], outs=[copy.operands[1]])
        copy.erase()


@register
@dataclass(frozen=True)
class GpuDeviceBuffers(ModulePass):
    """Move the buffers of bufferized functions to GPU memory (copies in and out at the edges)."""

    name = "dlc-gpu-device-buffers"
    resident_constants: bool = True  # (False: every constant copied per call, as before)
    # True: the arguments are device buffers already (torch CUDA tensors): no twins, no copies
    device_arguments: bool = False

    def run(self, module: ir.Operation) -> None:
        body = module.regions[0].blocks[0].operations
        globals_ = {ir.StringAttr(op.attributes["sym_name"]).value: op.operation
                    for op in body if op.operation.name == "memref.global"}
        for top in body:
            if not isinstance(top, func.FuncOp) or not len(top.regions[0].blocks):
                continue
            function = top.operation
            copies_to_linalg(function)
            move_allocs(function)
            if self.resident_constants and not _private(function):
                make_constants_resident(function, globals_)  # (the runtime's entry points)
            move_constants(function)
            if not (self.device_arguments and not _private(function)):
                move_arguments(function)
