"""dlc-split-functions: a function too large for LLVM becomes calls to parts of bounded size.

A model's graph is one `main`; LLVM's optimization and code generation, and some MLIR passes
(`convert-scf-to-cf` splits the block once per loop, moving the rest of it each time), cost
more than linear in the size of one function: a 1000-node elementwise chain at -O0 spent 36 s
of its 40 s compile in LLVM (issue 20). LLVM's IndVarSimplify alone took 4.7 of the
6.5 s of -O2 on ResNet-50's unsplit `main` (3,436 ops; 0.56 s once split into 7 parts). This
pass (on the memrefs, before the lowering to the llvm dialect; CPU pipelines only) cuts the
top-level ops of every single-block function of more than max(`min-ops`, `max-ops`) ops
(nested ones included; `min-ops` 0 by default; the -O2/-O3 pipelines set 2000, leaving the
code of smaller models as it was) into consecutive runs of at most `max-ops` (500; a run holds
at least one op), and moves each run into a private function
(`<name>__part<k>`, internal linkage, `noinline`: LLVM must not inline them back) called in
its place, in order. A value a run uses from before it becomes an argument, a value used
after it a result; constants, globals and views of them (`CLONED`) are cloned into each part
instead. No run ends while a stack buffer (`memref.alloca`, or a view of one) defined in it
is used after it. Before cutting, each top-level `memref.dealloc` of a top-level
`memref.alloc` moves to right after the last op that uses the buffer or a view of it
(`plan_buffers.last_use`; a buffer that may escape keeps its dealloc where it is): the
deallocation pipeline frees every buffer at the end of the function, which would make every
buffer a result of its part. Functions within the bound are left exactly as they were.
The computation and its order are unchanged: same results, bit for bit. Run time: the
intermediate buffers are views of dlc-plan-buffers' static arena, cloned into each part, so
LLVM still sees them as distinct; in same-process A/Bs (interleaved calls, a loaded 2-core
machine) split and unsplit ran alike: ResNet-50 147 vs 146 ms (min), ResNet-18 p25 105 vs
106 ms, MobileNetV3-Large p10 8.09 vs 8.16 ms (an earlier A/B saw 0.94-1.2x, within the noise
of that machine's load).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from dlc.passes.buffer.plan_buffers import last_use
from dlc.passes.registry import ModulePass, register

# side-effect-free ops cloned into each part that uses them rather than passed (their
# operands must be cloneable too)
CLONED = ("arith.constant", "memref.get_global", "memref.view", "memref.subview",
          "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast",
          "memref.cast")
VIEWS = ("memref.view", "memref.subview", "memref.expand_shape", "memref.collapse_shape",
         "memref.reinterpret_cast", "memref.cast", "memref.transpose", "memref.reshape")


def _ancestor_function(op: ir.Operation) -> ir.Operation:
    while op.name != "func.func":
        op = op.parent.operation
    return op


def _early_deallocs(function: ir.Operation, block: ir.Block) -> None:
    """Move each top-level dealloc of a top-level alloc right after the buffer's last use."""
    operations = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(operations)}
    moves: list[tuple[ir.Operation, ir.Operation]] = []
    for op in operations:
        if op.name != "memref.dealloc":
            continue
        buffer = op.operands[0]
        if not isinstance(buffer, ir.OpResult):
            continue
        alloc = buffer.owner.operation
        if alloc.name != "memref.alloc" or alloc not in position:
            continue
        end = last_use(alloc, function, position)
        if end is not None and end < position[op]:
            moves.append((op, operations[end]))
    for dealloc, after in reversed(moves):  # (several after one op keep their order)
        dealloc.move_after(after)


@dataclass
class _Analysis:
    """The top-level ops of a block, with what split_function needs to know of them."""

    operations: list[ir.Operation]
    sizes: list[int]  # ops nested in each, itself included
    uses: list[list[tuple[ir.Operation, int, ir.Value]]]  # (user, operand #, value) per op
    defined: dict[ir.Value, int]  # top-level results and block arguments (-1) -> position
    last: dict[ir.Value, int]  # the position of a value's last top-level user


def _analyze(block: ir.Block) -> _Analysis:
    operations = [op.operation for op in block.operations]
    defined: dict[ir.Value, int] = {arg: -1 for arg in block.arguments}
    for i, op in enumerate(operations):
        for result in op.results:
            defined[result] = i
    sizes: list[int] = []
    uses: list[list[tuple[ir.Operation, int, ir.Value]]] = []
    last: dict[ir.Value, int] = {}
    for i, op in enumerate(operations):
        found: list[tuple[ir.Operation, int, ir.Value]] = []
        count = 0

        def visit(nested: ir.Operation, found=found) -> ir.WalkResult:
            nonlocal count
            count += 1
            for number, value in enumerate(nested.operands):
                if value in defined:
                    found.append((nested, number, value))
            return ir.WalkResult.ADVANCE

        op.walk(visit, ir.WalkOrder.PRE_ORDER)
        sizes.append(count)
        uses.append(found)
        for _, _, value in found:
            last[value] = i
    return _Analysis(operations, sizes, uses, defined, last)


def _stack_rooted(value: ir.Value, defined: dict[ir.Value, int]) -> bool:
    while isinstance(value, ir.OpResult) and value in defined:
        owner = value.owner.operation
        if owner.name == "memref.alloca":
            return True
        if owner.name not in VIEWS or not owner.operands:
            return False
        value = owner.operands[0]
    return False


def _cloneable(value: ir.Value, defined: dict[ir.Value, int], memo: dict) -> bool:
    if value in memo:
        return memo[value]
    result = False
    if isinstance(value, ir.OpResult) and value in defined:
        owner = value.owner.operation
        result = owner.name in CLONED and not owner.regions and \
            all(_cloneable(operand, defined, memo) for operand in owner.operands)
    memo[value] = result
    return result


def _runs(analysis: _Analysis, movable: list[int], max_ops: int) -> list[list[int]]:
    """Consecutive runs of the positions `movable`, each of at most max_ops nested ops (at
    least one op), none ending while a stack buffer it defines is used after it."""
    ops = analysis.operations
    pinned_until: dict[int, int] = {}  # a position -> a later one that must share its run
    for i, op in enumerate(ops):
        for result in op.results:
            if _stack_rooted(result, analysis.defined):
                pinned_until[i] = max(pinned_until.get(i, i), analysis.last.get(result, i))
    runs: list[list[int]] = []
    current: list[int] = []
    size = 0
    must_reach = -1  # the run may not end before this position
    for i in movable:
        if current and size + analysis.sizes[i] > max_ops and current[-1] >= must_reach:
            runs.append(current)
            current, size = [], 0
        current.append(i)
        size += analysis.sizes[i]
        must_reach = max(must_reach, pinned_until.get(i, -1))
    if current:
        runs.append(current)
    return runs


def split_function(function: func.FuncOp, module_body: ir.Block, max_ops: int,
                   taken: set[str], min_ops: int = 0) -> int:
    """Split `function` (one block) into calls to parts of at most ~max_ops ops if it has
    more than max(min_ops, max_ops); how many parts."""
    block = function.regions[0].blocks[0]
    analysis = _analyze(block)
    if sum(analysis.sizes) <= max(min_ops, max_ops):
        return 0
    _early_deallocs(function.operation, block)
    analysis = _analyze(block)
    ops = analysis.operations
    memo: dict[ir.Value, bool] = {}
    terminator = len(ops) - 1
    movable = [i for i in range(terminator)
               if not all(_cloneable(r, analysis.defined, memo) for r in ops[i].results)
               or not ops[i].results]
    runs = _runs(analysis, movable, max_ops)
    if len(runs) < 2:
        return 0
    name = ir.StringAttr(function.attributes["sym_name"]).value
    renamed: dict[ir.Value, ir.Value] = {}  # a value moved into a part -> its call's result
    parts = 0
    for run in runs:
        members = set(run)
        inputs: list[ir.Value] = []  # (current values, in order of first use)
        index: dict[ir.Value, int] = {}
        cloned: list[ir.Value] = []
        for i in run:
            for _, _, value in analysis.uses[i]:
                if analysis.defined[value] in members:
                    continue
                if memo.get(value) or _cloneable(value, analysis.defined, memo):
                    if value not in index:
                        index[value] = -1
                        cloned.append(value)
                    continue
                current = renamed.get(value, value)
                if current not in index:
                    index[current] = len(inputs)
                    inputs.append(current)
        outputs = [result for i in run for result in ops[i].results
                   if analysis.last.get(result, -1) > run[-1]]
        while f"{name}__part{parts}" in taken:
            parts += 1
        part_name = f"{name}__part{parts}"
        taken.add(part_name)
        parts += 1
        with ir.InsertionPoint(module_body), function.location:
            part = func.FuncOp(part_name, ([v.type for v in inputs], [v.type for v in outputs]),
                               visibility="private")
            part.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
            part.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
            entry = part.add_entry_block()
        with ir.InsertionPoint(ops[run[0]]), function.location:
            call = func.CallOp([v.type for v in outputs], ir.FlatSymbolRefAttr.get(part_name),
                               inputs)
        # the constants and views the run uses, cloned at the part's start (operands first)
        copies: dict[ir.Value, ir.Value] = {}

        def copy(value: ir.Value, entry=entry, copies=copies) -> ir.Value:
            if value not in copies:
                owner = value.owner.operation
                operands = [copy(operand) for operand in owner.operands]
                with ir.InsertionPoint(entry):
                    clone = owner.clone()
                for number, operand in enumerate(operands):
                    clone.operands[number] = operand
                for original, new in zip(owner.results, clone.results, strict=True):
                    copies[original] = new
            return copies[value]

        for value in cloned:
            copy(value)
        for i in run:
            entry.append(ops[i])
        for i in run:
            for user, number, value in analysis.uses[i]:
                if analysis.defined[value] in members:
                    continue
                if index.get(value) == -1:
                    user.operands[number] = copies[value]
                else:
                    user.operands[number] = entry.arguments[index[renamed.get(value, value)]]
        with ir.InsertionPoint(entry), function.location:
            func.ReturnOp(outputs)
        for output, result in zip(outputs, call.results, strict=True):
            renamed[output] = result
            for use in list(output.uses):
                user = use.owner.operation
                if _ancestor_function(user) != part.operation:
                    user.operands[use.operand_number] = result
    # the constants and views no part left a use of
    for op in reversed(list(block.operations)):
        op = op.operation
        if op.name in CLONED and op.results and \
                all(next(iter(r.uses), None) is None for r in op.results):
            op.erase()
    return len(runs)


def single_block_functions(module: ir.Operation
                           ) -> tuple[ir.Block, list[func.FuncOp], set[str]]:
    """(the module's body, its functions of one block, the symbol names taken): what the passes
    that move ops of a function into new functions (this one, dlc-outline-kernels) start from."""
    body = module.regions[0].blocks[0]
    functions = [op for op in body.operations
                 if isinstance(op, func.FuncOp) and len(op.regions[0].blocks) == 1]
    taken = {ir.StringAttr(op.attributes["sym_name"]).value for op in body.operations
             if "sym_name" in op.attributes}
    return body, functions, taken


@register
@dataclass(frozen=True)
class SplitFunctions(ModulePass):
    """Split each function of more than min-ops ops into calls, in order, to private
    noinline functions of at most max-ops ops each (same computation, same order)."""

    name = "dlc-split-functions"
    max_ops: int = 500
    min_ops: int = 0

    def run(self, module: ir.Operation) -> None:
        body, functions, taken = single_block_functions(module)
        for function in functions:
            split_function(function, body, self.max_ops, taken, self.min_ops)
