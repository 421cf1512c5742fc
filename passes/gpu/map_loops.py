"""dlc-gpu-map-loops: every host-level parallel loop nest becomes a `gpu.launch`, one thread
per iteration; every other host-level memory access runs in a one-thread launch.

Input: bufferized functions whose linalg ops were lowered by `convert-linalg-to-parallel-loops`
(one `scf.parallel` over an op's parallel dimensions, its reductions as `scf.for` inside).
Each top-level `scf.parallel` with constant bounds becomes

    gpu.launch blocks(ceildiv(N, block-size), 1, 1) threads(block-size, 1, 1) {
      %i = block_id.x * block-size + thread_id.x
      scf.if %i < N { (ivs) = delinearize(%i, trip counts) ; <loop body> }
    }

where N is the product of the trip counts: every dimension is mapped, however many there are
(upstream `gpu-map-parallel-loops` maps three and leaves the others serial; with dynamic tile
bounds `convert-parallel-loops-to-gpu` leaves the loop on the host). Consecutive threads take
consecutive iterations of the innermost dimension, so that a warp reads contiguous memory.

Host code may not touch device memory: any other top-level op that reads or writes a memref
(`memref.load/store/copy`, `scf.for`/`scf.if` containing them, such as the runtime index checks
of gathers) is moved into a `gpu.launch` of one thread. A `gpu.launch` needs no `memref.copy`:
copies must be lowered before (`dlc-gpu-device-buffers` turns them into `linalg.copy`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, gpu, scf

from dlc.passes.registry import ModulePass, PassFailure, register
from dlc.passes.walk import constant_index, trip_counts

# ops that only compute addresses or scalars: they may stay on the host
_HOST_OPS = frozenset({
    "arith.constant", "memref.alloc", "memref.dealloc", "memref.get_global", "memref.subview",
    "memref.collapse_shape", "memref.expand_shape", "memref.reinterpret_cast", "memref.cast",
    "memref.extract_strided_metadata", "memref.dim", "func.return", "func.call",
    "gpu.alloc", "gpu.dealloc", "gpu.memcpy", "gpu.memset", "gpu.launch", "gpu.launch_func",
    "gpu.wait", "affine.apply", "arith.index_cast", "memref.assume_alignment",
})
# ops whose presence in a region means it touches memory
_MEMORY_OPS = frozenset({"memref.load", "memref.store", "memref.copy", "affine.load",
                         "affine.store", "vector.transfer_read", "vector.transfer_write",
                         "vector.load", "vector.store", "linalg.generic"})


def touches_memory(op: ir.Operation) -> bool:
    found = False

    def visit(inner: ir.Operation) -> ir.WalkResult:
        nonlocal found
        found = found or inner.name in _MEMORY_OPS
        return ir.WalkResult.INTERRUPT if found else ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def _launch(before: ir.Operation, blocks: int, threads: int) -> tuple[ir.Block, ir.Value]:
    """A gpu.launch of `blocks` x `threads` (x only) before `before`: (its body, its linear
    thread index block_id.x * threads + thread_id.x); the body ends with gpu.terminator."""
    index = ir.IndexType.get()
    with ir.InsertionPoint(before), before.location:
        one = arith.ConstantOp(index, 1).result
        grid = arith.ConstantOp(index, blocks).result
        block = arith.ConstantOp(index, threads).result
        launch = gpu.LaunchOp((grid, one, one), (block, one, one))
        body = launch.regions[0].blocks[0]  # (its 12 arguments: ids and sizes)
    with ir.InsertionPoint(body), before.location:
        size = arith.ConstantOp(index, threads).result
        linear = arith.AddIOp(arith.MulIOp(body.arguments[0], size).result,
                              body.arguments[3]).result
        gpu.TerminatorOp()
    return body, linear


def _affine(position: ir.Value, step: int, low: int) -> ir.Value:
    """position * step + low, folded where step is 1 or low is 0."""
    index = ir.IndexType.get()
    if step != 1:
        position = arith.MulIOp(position, arith.ConstantOp(index, step).result).result
    if low != 0:
        position = arith.AddIOp(position, arith.ConstantOp(index, low).result).result
    return position


def map_parallel(loop: ir.Operation, counts: list[int], block_size: int) -> None:
    """Replace the scf.parallel `loop` (without results) by a launch of one thread per
    iteration; its body moves into the launch, its induction variables delinearized."""
    total = 1
    for count in counts:
        total *= count
    threads = max(1, min(block_size, total))
    body, linear = _launch(loop, -(-total // threads), threads)
    index = ir.IndexType.get()
    rank = len(counts)
    # (constants, made inside the kernel rather than passed to it as arguments)
    lows = [constant_index(v) for v in list(loop.operands)[:rank]]
    steps = [constant_index(v) for v in list(loop.operands)[2 * rank:3 * rank]]
    with ir.InsertionPoint.at_block_terminator(body), loop.location:
        in_range = arith.CmpIOp(arith.CmpIPredicate.ult, linear,
                                arith.ConstantOp(index, total).result).result
        guard = scf.IfOp(in_range)
    with ir.InsertionPoint(guard.then_block), loop.location:
        terminator = scf.YieldOp([])
    with ir.InsertionPoint(terminator), loop.location:
        positions, rest = [], linear
        for count in reversed(counts[1:]):  # innermost first: x = ((p0 * c1 + p1) * c2 + p2)
            size = arith.ConstantOp(index, count).result
            positions.insert(0, arith.RemUIOp(rest, size).result)
            rest = arith.DivUIOp(rest, size).result
        positions.insert(0, rest)
        ivs = [_affine(p, step, low) for p, step, low in zip(positions, steps, lows, strict=True)]
    old_body = loop.regions[0].blocks[0]
    for old, new in zip(old_body.arguments, ivs, strict=True):
        old.replace_all_uses_with(new)
    for op in list(old_body.operations)[:-1]:  # (not the scf.reduce terminator)
        op.move_before(terminator)
    loop.erase()


def map_serial(ops: list[ir.Operation]) -> None:
    """Move `ops` (consecutive, whose results are used only among them) into a launch of
    one thread."""
    body, _ = _launch(ops[0], 1, 1)
    terminator = body.operations[len(body.operations) - 1]
    for op in ops:
        op.move_before(terminator)


def serial_run(block_ops: list[ir.Operation], start: int) -> list[ir.Operation]:
    """The consecutive ops from `block_ops[start]` up to the last one that uses a result of
    the run (the scalar loop of an index check and the `scf.if` that reports it): they move
    into one kernel together. PassFailure if a result is used later, or if an op of the run
    must stay on the host."""
    first = block_ops[start]
    run, defined = [first], set(first.results)
    end = start
    for position in range(start + 1, len(block_ops)):
        op = block_ops[position]
        if not any(operand in defined for operand in op.operands) and not _uses_inside(op, defined):
            continue
        end = position
        for between in block_ops[len(run) + start:end + 1]:
            run.append(between)
            defined.update(between.results)
    for op in run:
        if op.name.startswith("gpu.") or op.name in ("memref.alloc", "func.return"):
            raise PassFailure(f"dlc-gpu-map-loops: '{first.name}' reads or writes memory on "
                              f"the host and its results reach '{op.name}', which must stay on "
                              "the host", first.location)
    for op in block_ops[end + 1:]:
        if any(operand in defined for operand in op.operands) or _uses_inside(op, defined):
            raise PassFailure(f"dlc-gpu-map-loops: '{first.name}' reads or writes memory on "
                              f"the host and its results are used by '{op.name}' after it",
                              first.location)
    return run


def _uses_inside(op: ir.Operation, values: set) -> bool:
    """Whether an op nested in `op`'s regions uses one of `values`."""
    if not values or not len(op.regions):
        return False
    found = False

    def visit(inner: ir.Operation) -> ir.WalkResult:
        nonlocal found
        found = found or any(operand in values for operand in inner.operands)
        return ir.WalkResult.INTERRUPT if found else ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


@register
@dataclass(frozen=True)
class GpuMapLoops(ModulePass):
    """Map host-level scf.parallel loops to gpu.launch (one thread per iteration)."""

    name = "dlc-gpu-map-loops"
    block_size: int = 256

    def run(self, module: ir.Operation) -> None:
        if not 1 <= self.block_size <= 1024:
            raise PassFailure(f"dlc-gpu-map-loops: block-size must be in [1, 1024] (threads "
                              f"per block), got {self.block_size}")
        for top in module.regions[0].blocks[0].operations:
            if isinstance(top, func.FuncOp) and len(top.regions[0].blocks):
                self.map_function(top.operation)

    def map_function(self, function: ir.Operation) -> None:
        for block in function.regions[0].blocks:
            block_ops = list(block.operations)
            position = 0
            while position < len(block_ops):
                position += self.map_op(block_ops, position)

    def map_op(self, block_ops: list[ir.Operation], position: int) -> int:
        """Map `block_ops[position]` if it must run on the device; how many ops it took."""
        op = block_ops[position]
        if op.name in _HOST_OPS or not touches_memory(op) and op.name != "scf.parallel":
            return 1
        counts = trip_counts(op) if op.name == "scf.parallel" else None
        if counts is not None and not len(op.results):
            map_parallel(op, counts, self.block_size)
            return 1
        run = serial_run(block_ops, position)
        map_serial(run)
        return len(run)
