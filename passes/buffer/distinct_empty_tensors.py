"""dlc-distinct-empty-tensors: each use of a `tensor.empty` (or of a reshape or `linalg.fill` of
one) gets its own copy of it, placed right before the top-level op that uses it.

CSE merges identical `tensor.empty` ops, and identical fills and slices of them, into one value
that many ops then take as their destination (an `outs`, a loop's `iter_args` or `shared_outs`,
an insertion's destination): in BERT-base's linalg IR 53 empties stand for ~350 destinations,
one `tensor<128x768xf32>` is the init of 60 matmul loop nests and one zero fill that of 50 row
sums. one-shot-bufferize then (a) checks every in-place write to that value against all its
other aliases: 0.85 of its 1.0 s on BERT-base (issue 20); (b) bufferizes it into one buffer that
the layers write in place one after another, alive from the first layer to the last, which
`dlc-plan-buffers` can only place beside everything else (BERT-base's arena 9.9 MB); (c) copies
a shared fill into a new buffer for each use it cannot write in place (BERT-base: 71
`memref.copy` of zeros).

With a copy per use, each destination bufferizes into a buffer allocated right before its op,
whose live range `dlc-plan-buffers` ends at its last use. -O2, one-shot-bufferize CPU s, arena
MB and `memref.copy` count before -> after: BERT-base 0.87-1.18 -> 0.26-0.38 s, 9.9 -> 3.6 MB,
71 -> 0; GPT-2 12.3 -> 3.6 MB, 71 -> 0; ViT-B/16 1.6-1.9 -> 0.5-0.8 s, 24.5 -> 7.9 MB, 429 ->
146; ConvNeXt-T 23.4 -> 15.0 MB; ResNet-50 unchanged (IR identical); outputs bit-identical.
Values are unchanged: an empty tensor's contents are undefined, a fill's are its scalar.

The uses are grouped first (`use_groups`): a slice of the value and the insertion back into
the value of what was computed in that slice keep one copy (a padded buffer whose interior its
producer writes in place, `dlc-pad-in-place`), and so do an op and an op that reads its result
(one-shot-bufferize may run an elementwise op in place over its input: the -O2 MLP's matmul,
its bias and ReLU, and the out-parameter); a slice that several layers computed in is first
copied for each (`untie_slices`). A value with a use of another kind (an input) is left
as it is. Only chains in a function's top-level block are untied; a copy goes before the
top-level ancestor of its use (never into a loop body, where it would be allocated per
iteration and kept out of the arena). -O2/-O3 only, after `dlc-eliminate-empty-tensors`
(which sees the IR it saw before); without the arena (-O0/-O1) each copy would be a malloc.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from dlc.passes import walk
from dlc.passes.registry import ModulePass, register

_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")
_CHAIN = ("tensor.empty", "linalg.fill", *_RESHAPES)
_UNTIED = "dlc.untied"  # (the producers of an untied chain, while the pass runs)
# linalg ops with one input and one init and no operand segments
_INPUT_INIT = ("linalg.transpose", "linalg.broadcast", "linalg.copy")


def _source_index(op: ir.Operation) -> int | None:
    """The operand through which `op` continues a chain: a reshape's source, a fill's init;
    None for the `tensor.empty` that starts it."""
    if op.name in _RESHAPES:
        return 0
    return 1 if op.name == "linalg.fill" else None


def is_fresh(value: ir.Value) -> bool:
    """Whether `value` is a `tensor.empty`, or a reshape or fill of a fresh value."""
    while isinstance(value, ir.OpResult):
        op = value.owner
        if op.name == "tensor.empty":
            return True
        if op.name not in _CHAIN or len(op.results) != 1:
            return False
        value = op.operands[_source_index(op)]
    return False


def clone_chain(value: ir.Value, ip: ir.InsertionPoint) -> ir.Value:
    """A copy of the fresh `value`'s chain of ops, inserted at `ip`, producer first."""
    op = value.owner
    index = _source_index(op)
    source = clone_chain(op.operands[index], ip) if index is not None else None
    clone = op.clone(ip)
    if source is not None:
        clone.operands[index] = source
    return clone.results[0]


def is_init_use(owner: ir.Operation, number: int) -> bool:
    """Whether operand `number` of `owner` is a destination it computes its result in: a
    linalg op's init (`outs`), a loop's `iter_args` or `shared_outs`."""
    name = owner.name
    if name == "scf.for":
        return number >= 3  # (lower bound, upper bound, step, then the inits)
    if name == "scf.forall":
        return number >= len(owner.operands) - len(owner.results)
    if not name.startswith("linalg."):
        return False
    if "operandSegmentSizes" in owner.attributes:
        inputs = ir.DenseI32ArrayAttr(owner.attributes["operandSegmentSizes"])[0]
        return number >= inputs
    return name in _INPUT_INIT and number == 1


def _top_level(op: ir.Operation, block: ir.Block) -> ir.Operation:
    """The ancestor of `op` (itself included) that stands in `block`."""
    while op.block != block:
        op = op.parent.operation
    return op


def _destination(op: ir.Operation, number: int) -> int | None:
    """The operand of `op` whose buffer its result `number` is computed in (a linalg op's or a
    loop's init, an insertion's destination, a slice's or a reshape's source), or None."""
    if op.name in (*_RESHAPES, "tensor.extract_slice"):
        return 0
    if op.name in ("tensor.insert_slice", "vector.transfer_write", *_INPUT_INIT):
        return 1
    if op.name in ("scf.for", "scf.forall") or "operandSegmentSizes" in op.attributes:
        first = len(op.operands) - len(op.results)  # (the inits are the last operands)
        return first + number if is_init_use(op, first + number) else None
    return None


def _computed_in(value: ir.Value, fresh: ir.Value) -> tuple[ir.Operation, int] | None:
    """The use of `fresh` (owner, operand number) in whose buffer `value` was computed,
    following destinations back (at most 64 steps), or None."""
    for _ in range(64):
        if not isinstance(value, ir.OpResult):
            return None
        op = value.owner.operation
        index = _destination(op, value.result_number)
        if index is None:
            return None
        if op.operands[index] == fresh:
            return op, index
        value = op.operands[index]
    return None


def _inputs(owner: ir.Operation) -> list[ir.Value]:
    """The operands a linalg op reads besides its inits."""
    if "operandSegmentSizes" in owner.attributes and owner.name.startswith("linalg."):
        return list(owner.operands)[:ir.DenseI32ArrayAttr(owner.attributes["operandSegmentSizes"])[0]]
    return list(owner.operands)[:1] if owner.name in _INPUT_INIT else []


def use_groups(fresh: ir.Value, uses: list[tuple[ir.Operation, int]]
               ) -> list[list[tuple[ir.Operation, int]]] | None:
    """The uses of `fresh` (owner, operand number; in program order) in groups that may each
    have a copy of it, or None when some use is of a kind not known to be one: an init, the
    source of a slice or of a chain op, the destination of an insertion. An insertion joins
    the group of the use its source was computed in (a slice of a padded buffer whose
    interior a producer writes in place, `dlc-pad-in-place`), and so does an init whose op
    reads a value computed in a use of `fresh` (an elementwise op in place over its input:
    a matmul and its bias and ReLU)."""
    groups: list[list[tuple[ir.Operation, int]]] = []
    group_of: dict[tuple[ir.Operation, int], list[tuple[ir.Operation, int]]] = {}
    for owner, number in uses:
        if owner.name == "tensor.insert_slice" and number == 1:
            sources = [owner.operands[0]]
        elif is_init_use(owner, number):
            sources = _inputs(owner)
        elif not (owner.name == "tensor.extract_slice" and number == 0) and not (
                owner.name in _CHAIN and number == _source_index(owner)):
            return None
        else:
            sources = []
        reached = (_computed_in(source, fresh) for source in sources)
        group = next((group_of[use] for use in reached if use in group_of), None)
        if group is None:
            group = []
            groups.append(group)
        group.append((owner, number))
        group_of[(owner, number)] = group
    return groups


def _chain_ops(op: ir.Operation) -> list[ir.Operation]:
    """The ops of the chain `op` reads (`op` excluded), consumer first."""
    chain = [op]
    while (index := _source_index(chain[-1])) is not None:
        chain.append(chain[-1].operands[index].owner)
    return chain[1:]


def untie_slices(block: ir.Block) -> None:
    """Give each use of an extract_slice of a fresh value a copy of it, when every use is an
    init: CSE merged the slices that several layers computed in (ViT-B/16's 50 row sums of
    its 192 padded rows, all in one slice of one fill), which then stay one group
    (`use_groups`); with one slice each, each sum and its insertion are a group of their own."""
    for op in [op.operation for op in block.operations]:
        if op.name != "tensor.extract_slice" or not is_fresh(op.operands[0]):
            continue
        uses = [(use.owner.operation, use.operand_number) for use in op.results[0].uses]
        if len(uses) < 2 or not all(is_init_use(owner, n) for owner, n in uses):
            continue
        for owner, number in uses:
            with ir.InsertionPoint(_top_level(owner, block)):
                owner.operands[number] = op.clone().results[0]
        op.erase()


def untie_block(block: ir.Block) -> int:
    """Give each group of uses (`use_groups`) of a fresh value defined in `block` a copy of its
    chain, placed before the group's first top-level op; the untied originals, left without
    uses, are erased. The number of copies made."""
    untie_slices(block)
    copies = 0
    # (last first: a fill's uses are untied before its empty's, which then has one use left)
    for op in reversed([op.operation for op in block.operations]):
        if op.name not in _CHAIN or not is_fresh(op.results[0]):
            continue
        uses = [(use.owner.operation, use.operand_number) for use in op.results[0].uses]
        if len(uses) < 2:
            continue
        # (in program order; compared by MLIR, not by Python objects: a use's owner may be
        # another Python object than the one the block listed for the same op)
        uses.sort(key=functools.cmp_to_key(lambda a, b: _compare(a[0], b[0], block)))
        groups = use_groups(op.results[0], uses)
        if groups is None or len(groups) < 2:
            continue
        for group in groups:
            ip = ir.InsertionPoint(_top_level(group[0][0], block))
            value = clone_chain(op.results[0], ip)
            for owner, number in group:
                owner.operands[number] = value
            copies += 1
        for producer in _chain_ops(op):  # (marked: erased below if left without uses)
            producer.attributes[_UNTIED] = ir.UnitAttr.get()
        op.erase()  # (visited: only its producers are still to come)
    # (consumers first: each erased op's producer may then be without uses)
    for op in reversed([op.operation for op in block.operations]):
        if _UNTIED not in op.attributes:
            continue
        if any(True for _ in op.results[0].uses):
            del op.attributes[_UNTIED]
        else:
            op.erase()
    return copies


def _loop_of_blocks(op: ir.Operation) -> bool:
    """Whether `op` is an `scf.for` with a bound that is not a constant (a dynamic function's
    loop of blocks, `dlc-block-dynamic`) and a body of one block."""
    if op.name != "scf.for" or len(op.regions[0].blocks) != 1:
        return False
    return any(walk.constant_index(bound) is None for bound in list(op.operands)[:3])


def sink_into_loops(block: ir.Block) -> list[ir.Operation]:
    """Move each fresh chain of `block` (a `tensor.empty` of a static shape, with its fills
    and reshapes) whose uses all stand in the body of one loop of blocks (`_loop_of_blocks`)
    into that body, before the body's op holding its first use; the loops that received one.

    LICM and CSE hoist the static empties of a block's ops out of the loop of blocks: there
    they bufferize into buffers alive for the whole loop, which `dlc-plan-buffers` can only
    place side by side (12 stacked FFNs: each layer's hidden block a buffer of its own, 12
    cold 1.5 MB writes per block where a static compile reuses two warm ones). In the body
    they are allocated per block, and planned there (`plan_buffers.plan_function`). Only chains
    without operands are moved (a dynamic empty's sizes are defined outside)."""
    loops: dict[ir.Operation, None] = {}
    moved: list[ir.Operation] = []
    # (consumers first: a fill moves with its empty, which is then left without uses)
    for op in reversed([op.operation for op in block.operations]):
        if op.name not in _CHAIN or op in moved or not is_fresh(op.results[0]):
            continue
        chain = [op, *_chain_ops(op)]
        uses = [use.owner.operation for use in op.results[0].uses]
        if len(chain[-1].operands) or not uses:
            continue  # (a dynamic size: defined outside, allocated per block by malloc)
        tops = {_top_level(owner, block) for owner in uses}
        loop = tops.pop()
        if tops or not _loop_of_blocks(loop) or any(owner == loop for owner in uses):
            continue
        body = loop.regions[0].blocks[0]
        first = min((_top_level(owner, body) for owner in uses),
                    key=functools.cmp_to_key(lambda a, b, body=body: _compare(a, b, body)))
        copy = clone_chain(op.results[0], ir.InsertionPoint(first))
        op.results[0].replace_all_uses_with(copy)
        moved.extend(chain)
        loops[loop] = None
    for op in reversed(list(dict.fromkeys(reversed(moved)))):  # (consumers first)
        if not any(True for result in op.results for _ in result.uses):
            op.erase()
    return list(loops)


def _compare(a: ir.Operation, b: ir.Operation, block: ir.Block) -> int:
    """-1, 0 or 1 as the top-level op of `a` in `block` stands before, is, or follows `b`'s."""
    a, b = _top_level(a, block), _top_level(b, block)
    if a == b:
        return 0
    return -1 if a.is_before_in_block(b) else 1


@register
@dataclass(frozen=True)
class DistinctEmptyTensors(ModulePass):
    """Give every use of a tensor.empty (or of a reshape or fill of one) its own copy: no
    destination shared by many ops for one-shot-bufferize."""

    name = "dlc-distinct-empty-tensors"

    def run(self, module: ir.Operation) -> None:
        for op in module.regions[0].blocks[0].operations:
            if isinstance(op, func.FuncOp):
                for block in op.regions[0].blocks:
                    untie_block(block)
                    for loop in sink_into_loops(block):
                        untie_block(loop.regions[0].blocks[0])
