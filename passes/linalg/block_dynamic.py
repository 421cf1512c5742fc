"""dlc-block-dynamic: the linalg ops of a dynamic size run as static blocks.

A function compiled for every value of a dynamic size (`tensor<?x784xf32>`: a batch, a number
of tokens; `dlc-to-linalg`) has linalg ops with a dynamic loop, which no schedule family
matches (their tiles are chosen from static shapes). This pass, before `dlc-schedule`, turns
each such op into static ops the schedules take as they take any other:

- a loop over the dynamic size in blocks of `block` (64) rows, each block the op on static
  slices ([64, K] x [K, N]: `transform.structured.tile_using_for`, then `transform.loop.peel`
  splits off the last, partial, block). A producer whose one use is an input of such an op
  is computed in the same blocks (`fuse_into_containing_op`, with the fill of its init): a
  matmul and its bias-and-activation consumer are one block loop, which the schedules fuse
  as in a static function (an FFN at 384 tokens: 1.08 -> 1.01x its static compile);
- the partial block (fewer than 64 rows) as blocks of 32, 16 and 8 rows, each run when its
  bit of the count is set (100 rows: 64, 32, then 4), then the last rows (fewer than
  `tail`, 8): one row is the op on [1, K] (a vector-matrix product has its own schedule; a
  large constant B is read from dlc-pack-gemv's panels, as a static compile of one row reads
  it: `_panel_gemv`), up to 4 rows are padded to 4 rows, more to 8 (zero rows in,
  their results dropped: at most 3 padded rows are computed). A group with a product by
  weights (`_reads_weights`) runs in blocks of 128 rows, and its product's partial block is
  one piece padded to 8 rows or a multiple of 16 (each piece reads all the weights,
  `WEIGHT_BYTES`). Each writes its rows of the result in place (`scf.if`s yielding the
  whole result: a branch yielding its own rows was copied by bufferization, with run-time
  ownership whose deallocation does not lower). The op is static in every case; the price
  is compile time: each op is compiled at 7 sizes, a product by weights at 10 (an FFN
  768-3072-768: 5 s against 0.5 s for one static size).

One loop a round (`ROUNDS`): an op with two loops over the size (attention's [S, S] scores,
their mask and softmax) is blocked by rows, then each row block by columns, the partial
column block one piece padded to `block` columns (2 sizes of the op, not 7: compile time, for
up to block - 1 columns computed and dropped), the column blocks inside a loop over the
heads (`_outer_tiles`: in memory order); an op whose only loop over the size is a
reduction (a softmax's sum, [S, S] x [S, D]) runs in blocks of `REDUCTION_BLOCKS` * `block`
accumulating into its result, its rest as 128/64/32/16/8-element pieces by the bits of its
count and a loop of one-element
pieces (no padding: the identity of its combination is not known here). A piece's
`linalg.index` of the blocked loop counts from the piece's offset (an iota, a mask).
An op blocked along parallel loops only whose init is a zero fill of the whole size fills
each block's init instead (`_sink_fills`; the loops start from the empty).

Ops left dynamic (two reductions over the size, the size inside an index expression) keep the
naive loop path and `NaivePathWarning` names each (its size unknown, any may be large); ops
with a static size 0 are left whole (they compute nothing; upstream's tiling asserts on their
empty loops). A static module is left unchanged.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, linalg, scf, tensor
from mlir.dialects.transform import interpreter

from dlc.passes.graph import pack_gemv
from dlc.passes.graph.report import nbytes
from dlc.passes.registry import ModulePass, PassFailure, register
from dlc.passes.walk import ops_where, untag

TAG = "dlc.block"
ANY = "!transform.any_op"
ROUNDS = 4  # (the blocked loops of one op: rows, columns, then a reduction)
REDUCTION_TAIL = 8  # (a reduction's partial block: pieces of 128... 16, 8, then 1 element)
# a reduction over the size runs in blocks of this many times `block` elements: each block
# merges its row tile of partial results (an 8 x 16 transpose and 15 ops a row group) and
# updates the result, once per block; with blocks of 64, 6 times a row of 384 where the
# static schedule merges once (ReduceMax over [1, 12, S, S], dynamic / static, Intel Xeon,
# same process: S = 384 1.35 -> 1.18, 512 1.47 -> 1.14; Softmax 512 1.11 -> 0.91; GPT-2 one
# layer 100 tokens 1.20 -> 1.13, 128 1.08 -> 1.06; its one compile 22.8 -> 23.4 s)
REDUCTION_BLOCKS = 4
# whether the one-row pieces of this run read large constant weights from panels
# (`_panel_gemv`): the module's constants are beyond dlc-pack-gemv's MODEL_BYTES
_PANELS: ContextVar[bool] = ContextVar("dlc_block_dynamic_panels", default=False)


def _maps(op: ir.Operation) -> list[ir.AffineMap] | None:
    try:
        return [ir.AffineMapAttr(a).value for a in linalg.get_indexing_maps(op)]
    except (ValueError, TypeError, RuntimeError):
        return None


def dynamic_loops(op: ir.Operation) -> tuple[list[int], list[int]] | None:
    """(the parallel, the reduction) loops of linalg op `op` over a dynamic size, each in
    loop order; None when a dynamic size is inside an index expression (a window)."""
    maps = _maps(op)
    if maps is None or len(maps) != len(op.operands) or not op.results:
        return None
    dynamic = set()
    for operand, indexing in zip(op.operands, maps):
        shape = operand.type.shape if isinstance(operand.type, ir.ShapedType) else []
        for size, expr in zip(shape, indexing.results):
            if not ir.ShapedType.is_dynamic_size(size):
                continue
            if not isinstance(expr, ir.AffineDimExpr):
                return None
            dynamic.add(ir.AffineDimExpr(expr).position)
    outputs = maps[len(maps) - len(op.results):]
    parallel = {ir.AffineDimExpr(e).position for m in outputs for e in m.results
                if isinstance(e, ir.AffineDimExpr)}
    return sorted(dynamic & parallel), sorted(dynamic - parallel)


def dynamic_loop(op: ir.Operation) -> tuple[int, bool] | None:
    """(the loop of linalg op `op` this pass blocks, whether it is a reduction): its
    outermost parallel loop over a dynamic size (rows: attention's [S, S] ops are blocked by
    rows, then each block by columns), else a reduction over one when it is the only
    dynamic loop (a softmax's sum, attention's [S, S] x [S, D]); None for no dynamic size,
    one inside an index expression, or several reductions over one."""
    loops = dynamic_loops(op)
    if loops is None:
        return None
    parallel, reductions = loops
    if parallel:
        return parallel[0], False
    if len(reductions) == 1:
        return reductions[0], True
    return None


def _structured(op: ir.Operation) -> bool:
    return op.name.startswith("linalg.") and op.name not in ("linalg.fill", "linalg.yield",
                                                              "linalg.index")


def blocked_ops(module: ir.Operation) -> list[tuple[ir.Operation, int, bool]]:
    """(op, its blocked loop, whether a reduction) of each linalg op this pass blocks now,
    in program order (`dynamic_loop`)."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        shaped = [v.type for v in [*op.operands, *op.results]
                  if isinstance(v.type, ir.ShapedType)]
        # (an op with a static size 0 computes nothing: left whole, upstream's tiling asserts
        # on its empty loops)
        if _structured(op) and any(not t.has_static_shape for t in shaped) and not any(
                d == 0 for t in shaped for d in t.shape):
            loop = dynamic_loop(op)
            if loop is not None:
                found.append((op, *loop))
        return ir.WalkResult.ADVANCE

    for top in module.regions[0].blocks[0].operations:
        if isinstance(top, func.FuncOp):
            top.operation.walk(visit)
    return found


@register
@dataclass(frozen=True)
class BlockDynamic(ModulePass):
    """Run the linalg ops of a dynamic size as loops of static blocks (see the module)."""

    name = "dlc-block-dynamic"
    block: int = 64
    tail: int = 8

    def run(self, module: ir.Operation) -> None:
        if self.block < 1 or self.tail < 2 or self.block % self.tail:
            raise PassFailure(f"dlc-block-dynamic: block ({self.block}) must be a multiple of "
                              f"tail ({self.tail}), tail >= 2")
        found = blocked_ops(module)
        if not found:
            return
        _distinct_inits(module)
        _mark_zero_inits(found)
        token = _PANELS.set(pack_gemv.constant_bytes(module, "arith.constant")
                             >= pack_gemv.MODEL_BYTES)
        try:
            # each round blocks one loop of each op: an op with two dynamic loops (attention's
            # [S, S] scores) is blocked by rows, then each of its blocks by columns
            for number in range(ROUNDS):
                found = blocked_ops(module)
                if not found:
                    break
                try:
                    self._round(module, found, columns=number > 0)
                finally:
                    untag(module, TAG)
            _sink_fills(module)
        finally:
            untag(module, SINK)
            untag(module, ZERO_INIT)
            _PANELS.reset(token)

    def _round(self, module: ir.Operation, found: list[tuple[ir.Operation, int, bool]],
               columns: bool) -> None:
        """Block the loop of each op `found` (`columns`: a loop of blocks already, whose
        partial block is one padded to `block`)."""
        i64 = ir.IntegerType.get_signless(64)
        for index, (op, _, _) in enumerate(found):
            op.attributes[TAG] = ir.IntegerAttr.get(i64, index)
        fills = {}
        for index, (op, _, reduction) in enumerate(found):
            fill = _fill_of(op) if not reduction else None
            if fill is not None:
                fills[index] = len(found) + len(fills)
                fill.attributes[TAG] = ir.IntegerAttr.get(i64, fills[index])
        lines = []
        blocks: dict[int, int] = {}  # (the block of each op's group)
        for group in _groups(found):
            # (a group with a product by weights: blocks of twice the rows, as many as the
            # static schedule's forall tile reads the weights for, `packed_rows_tile`)
            block = self.block * WEIGHT_BLOCKS if not columns and any(
                _reads_weights(found[index][0]) for index, _, _ in group) else self.block
            if found[group[0][0]][2]:  # (a reduction over the size: longer blocks)
                block = self.block * REDUCTION_BLOCKS
            blocks.update((index, block) for index, _, _ in group)
            outer = _outer_tiles(found[group[0][0]][0], found[group[0][0]][1]) \
                if columns else None
            lines += self._lines(group, fills, found[group[0][0]][2], block, outer)
        script = ir.Module.parse(_script(lines))
        loops = {index: (loop, reduction) for index, (_, loop, reduction) in enumerate(found)}
        try:
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
            for op, loop, reduction in _tails(module, loops):
                block = blocks[ir.IntegerAttr(op.attributes[TAG]).value]
                if reduction:
                    _split_reduction(op, loop, block)
                else:
                    _split_rest(op, loop, block, self.tail, columns)
            script = ir.Module.parse(_script([]))
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
        except (ValueError, ir.MLIRError) as error:
            raise PassFailure(f"dlc-block-dynamic: the blocking script failed: {error}") \
                from None

    def _lines(self, group: list[tuple[int, int, int]], fills: dict[int, int],
               reduction: bool, block: int, outer: list[int] | None = None) -> list[str]:
        """The script of one group: (index, loop, loop count) of its root, then of the
        producers fused into the root's blocks (each before its own producers). A reduction
        is a group of its own: its blocks accumulate into its result, and the partial block
        (`_split_reduction`) is left in the peeled loop."""
        def match(index: int, where: str) -> str:
            return (f"transform.structured.match attributes {{{TAG} = {index} : i64}} in "
                    f"{where} : ({ANY}) -> {ANY}")

        def sizes(loop: int, count: int, size: int) -> str:
            return ", ".join(str(size if d == loop else 0) for d in range(count))

        (root, loop, count), *producers = group
        p = f"%g{root}"
        root_sizes = sizes(loop, count, block)
        handles = f"{p}_l0"
        if outer:  # (the loops before the blocked one tiled too: it runs innermost)
            root_sizes = ", ".join(str(block if d == loop else outer[d]) for d in range(count))
            handles = ", ".join([f"{p}_o{d}" for d in range(count) if d != loop and outer[d]]
                                + [f"{p}_l0"])
        lines = [f"{p} = {match(root, '%root')}",
                 (f"{p}_t, {handles} = transform.structured.tile_using_for {p} tile_sizes "
                  f"[{root_sizes}] : ({ANY}) -> ({ANY}, "
                  + ", ".join([ANY] * (handles.count(",") + 1)) + ")")]
        loop_handle = f"{p}_l0"
        for step, index in enumerate(_fusion_order(producers, fills)):
            lines += [f"{p}_p{step} = {match(index, '%root')}",
                      (f"{p}_f{step}, {p}_l{step + 1} = transform.structured."
                       f"fuse_into_containing_op {p}_p{step} into {loop_handle} "
                       f": ({ANY}, {ANY}) -> ({ANY}, {ANY})")]
            loop_handle = f"{p}_l{step + 1}"
        lines += [
            f"{p}_c = transform.cast {loop_handle} : {ANY} to !transform.op<\"scf.for\">",
            (f"{p}_main, {p}_rest = transform.loop.peel {p}_c : (!transform.op<\"scf.for\">) "
             f"-> ({ANY}, {ANY})"),
        ]
        if reduction:
            return lines
        # the partial block: each op of the group in a loop of its own (one iteration), into
        # whose result it inserts its rows: `_split_rest` computes them in place there
        for index, op_loop, op_count in group:
            q = f"{p}_r{index}"
            lines += [f"{q} = {match(index, f'{p}_rest')}",
                      (f"{q}_t, {q}_l = transform.structured.tile_using_for {q} tile_sizes "
                       f"[{sizes(op_loop, op_count, block)}] : ({ANY}) -> ({ANY}, {ANY})")]
        return lines


def _loop_sizes(op: ir.Operation) -> list[int | None] | None:
    """The static size of each loop of linalg op `op` (None: dynamic or not read directly)."""
    maps = _maps(op)
    if maps is None:
        return None
    sizes: list[int | None] = [None] * maps[0].n_dims
    for value, amap in zip(op.operands, maps, strict=True):
        if not isinstance(value.type, ir.ShapedType):
            continue
        for axis, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr) and not ir.ShapedType.is_dynamic_size(
                    value.type.shape[axis]):
                sizes[ir.AffineDimExpr(expr).position] = value.type.shape[axis]
    return sizes


def _dims(amap: ir.AffineMap) -> set[int]:
    return {ir.AffineDimExpr(e).position for e in amap.results if isinstance(e, ir.AffineDimExpr)}


def _outer_tiles(op: ir.Operation, loop: int) -> list[int] | None:
    """The tiles of the loops around `op`'s blocked loop in the columns round (a loop of
    blocks over attention's [S, S] columns), so that the blocks run in memory order: a
    contraction's batch loops (in every operand: the heads) by 1, and for an elementwise op
    or a row reduction (the blocked loop innermost) each static loop longer than 1 but the
    innermost of them (the block's rows, kept whole) by 1; None: the blocked loop alone.
    Untiled, a block of 64 columns ran over all 12 heads of 64 rows (768 runs of 256 bytes,
    then the next 64 columns of each): [1, 12, S, S] ops, one compile / static, Intel Xeon,
    same process: a Div by the row sums at S = 512 1.69 -> 1.02, the mask's Add 1.38 ->
    0.82, Softmax 1.39 -> 1.02, at S = 384 1.20 -> 1.05."""
    sizes, maps = _loop_sizes(op), _maps(op)
    if sizes is None or maps is None:
        return None
    inputs = maps[:len(op.operands) - len(op.results)]
    if op.name == "linalg.generic":
        contraction = any("reduction" in str(a) for a in ir.ArrayAttr(
            op.attributes["iterator_types"])) and any(
            len(_dims(m)) < len(sizes) for m in inputs if loop in _dims(m))
    elif op.name in ("linalg.matmul", "linalg.batch_matmul"):
        contraction = True
    else:
        return None
    if contraction:
        batch = [d for d in range(len(sizes)) if d != loop and all(d in _dims(m) for m in maps)
                 and sizes[d] is not None and sizes[d] > 1]
        return [1 if d in batch else 0 for d in range(len(sizes))] if batch else None
    if loop != len(sizes) - 1:
        return None
    long = [d for d in range(loop) if sizes[d] is not None and sizes[d] > 1]
    if len(long) < 2:
        return None
    return [1 if d in long[:-1] else 0 for d in range(len(sizes))]


# the whole-size fill of a blocked op's init (`_mark_zero_inits`) and the op (and its clones,
# the blocks and pieces): `_sink_fills` fills each block's init instead
SINK, ZERO_INIT = "dlc.block.sink", "dlc.block.zero_init"


def _mark_zero_inits(found: list[tuple[ir.Operation, int, bool]]) -> None:
    """Tag the fills of a dynamic size that are the init of one op `found` (`blocked_ops`)
    blocked only along parallel loops (no reduction over the size: its blocks do not
    accumulate), and the op."""
    unit = ir.UnitAttr.get()
    for op, _, _ in found:
        loops = dynamic_loops(op)
        fill = _fill_of(op)
        if loops is None or loops[1] or fill is None or \
                fill.results[0].type.has_static_shape:
            continue
        fill.attributes[SINK] = unit
        op.attributes[ZERO_INIT] = unit


def _zero_init_writers(fill: ir.Operation) -> list[tuple[ir.Operation, int]] | None:
    """(op, operand number) of the inits the blocks of `fill`'s tensor are written on (ops
    tagged ZERO_INIT),
    following it through the loops of blocks (iter_args, a loop's result that is the next
    loop's init), slices and the pieces' `scf.if`s; None when anything else reads it (its
    zeros would be read: the fill stays)."""
    writers: list[tuple[ir.Operation, int]] = []
    seen: set = set()
    pending = [fill.results[0]]
    while pending:
        value = pending.pop()
        for use in value.uses:
            owner = use.owner
            owner = owner.operation if hasattr(owner, "operation") else owner
            key = (owner, use.operand_number)
            if key in seen:
                continue
            seen.add(key)
            name = owner.name
            if name == "scf.for":
                number = use.operand_number - 3  # (lower bound, upper bound, step)
                if number < 0:
                    return None
                pending.append(owner.regions[0].blocks[0].arguments[number + 1])
                result = owner.results[number]
                pending += [u.owner.regions[0].blocks[0].arguments[u.operand_number - 2]
                            for u in result.uses if u.owner.name == "scf.for"
                            and u.operand_number >= 3]
            elif (name == "tensor.extract_slice" and use.operand_number == 0) or (
                    name == "tensor.insert_slice" and use.operand_number in (0, 1)):
                pending.append(owner.results[0])
            elif name == "scf.yield":
                parent = owner.parent
                parent = parent.operation if hasattr(parent, "operation") else parent
                if parent.name == "scf.if":
                    pending.append(parent.results[use.operand_number])
                elif parent.name != "scf.for":
                    return None
            elif name == "tensor.dim":
                continue
            elif _structured(owner) and ZERO_INIT in owner.attributes and \
                    use.operand_number >= len(owner.operands) - len(owner.results):
                writers.append((owner, use.operand_number))
            else:
                return None
    return writers


def _sink_fills(module: ir.Operation) -> None:
    """Each tagged fill of a whole dynamic size (SINK) that only blocks of its op write on
    (`_zero_init_writers`) becomes a fill of each block's init (a static op the schedules
    fuse into the block's tiles, as in a static compile), the loops of blocks starting from
    the fill's empty: attention's [S, S] scores were filled whole (12 x S x S floats) before
    their blocks, each of which read its zeros back."""
    for fill in ops_where(module, lambda op: SINK in op.attributes and op.name ==
                          "linalg.fill" and not op.results[0].type.has_static_shape):
        writers = _zero_init_writers(fill)
        if not writers:
            continue
        scalar = fill.operands[0]
        for op, init_number in writers:
            init = op.operands[init_number]
            owner = init.owner
            if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "linalg.fill":
                continue
            if isinstance(owner, ir.Operation | ir.OpView) and \
                    owner.name == "tensor.insert_slice" and isinstance(
                    owner.operands[1].owner, ir.Operation | ir.OpView) and \
                    owner.operands[1].owner.name == "tensor.empty":
                # (a padded piece: its rows of the tensor dropped; an empty of its own, not
                # one CSE shares with a padded input)
                with ir.InsertionPoint(op), op.location:
                    init = tensor.EmptyOp(list(init.type.shape), init.type.element_type).result
            with ir.InsertionPoint(op), op.location:
                op.operands[init_number] = linalg.fill(scalar, outs=[init])
        fill.results[0].replace_all_uses_with(fill.operands[1])
        fill.erase()


def _fusion_order(producers: list[tuple[int, int, int]], fills: dict[int, int]) -> list[int]:
    """The tags to fuse into a group's loop, each after its consumer: the producers, each
    followed by the fill of its init."""
    order = []
    for index, _, _ in producers:
        order.append(index)
        if index in fills:
            order.append(fills[index])
    return order


def _distinct_inits(module: ir.Operation) -> None:
    """Give each use of a `linalg.fill` or a `tensor.empty` of a dynamic size its own (a
    clone before it). CSE merges the zero fills of products of one shape (a chain of them,
    the layers of a transformer) and their empties: a fill of several uses is not fused into
    any block (`_fill_of`), so it filled the whole size before the loops and each block
    copied its rows of that shared tensor into a buffer before writing them; an empty that
    is both a loop's result and the init of a producer fused into it was copied the same
    way (12 stacked 768-3072-768 FFNs at 128 rows: 1.11x their static compile)."""
    def shared(name: str) -> list[ir.Operation]:
        return ops_where(module, lambda op: op.name == name and len(op.results) == 1 and not
                         op.results[0].type.has_static_shape
                         and len(list(op.results[0].uses)) > 1)

    for name in ("linalg.fill", "tensor.empty"):  # (a fill's clones share its empty)
        for op in shared(name):
            uses = [(use.owner, use.operand_number) for use in op.results[0].uses]
            for owner, number in uses[1:]:
                owner.operands[number] = op.clone(ir.InsertionPoint(op)).results[0]


def _fill_of(op: ir.Operation) -> ir.Operation | None:
    """The `linalg.fill` whose result is `op`'s init and nothing else's."""
    inits = list(op.operands)[len(op.operands) - len(op.results):]
    for value in inits:
        owner = value.owner
        owner = owner.operation if hasattr(owner, "operation") else owner
        if isinstance(owner, ir.Operation) and owner.name == "linalg.fill" and len(
                list(value.uses)) == 1:
            return owner
    return None


def _groups(found: list[tuple[ir.Operation, int, bool]]) -> list[list[tuple[int, int, int]]]:
    """The blocked ops in groups run in one loop: a producer whose one use is an input of a
    blocked consumer in the same block, read along the consumer's blocked loop at the axes
    of its own, joins its consumer's group (its rows are computed in the consumer's row
    blocks, no intermediate of the whole size); each group is (index, loop, loop count) of
    its root (the last op), then of its producers, consumers first. Reductions are groups of
    their own."""
    index_of = {op: i for i, (op, _, _) in enumerate(found)}
    group_of: dict[int, int] = {}
    groups: dict[int, list[tuple[int, int, int]]] = {}
    for i in reversed(range(len(found))):
        op, loop, reduction = found[i]
        entry = (i, loop, _maps(op)[0].n_dims)
        consumer = _single_input_consumer(op)
        j = index_of.get(consumer) if consumer is not None else None
        if not reduction and j is not None and j in group_of and consumer.parent == op.parent \
                and not found[j][2] and _aligned(op, loop, consumer, found[j][1]):
            group_of[i] = group_of[j]
            groups[group_of[j]].append(entry)
        else:
            group_of[i] = i
            groups[i] = [entry]
    return [groups[root] for root in sorted(groups)]


def _aligned(producer: ir.Operation, loop: int, consumer: ir.Operation, consumer_loop: int
             ) -> bool:
    """Whether `consumer` reads `producer`'s result along its blocked loop exactly at the
    axes the producer's blocked loop writes."""
    (use,) = list(producer.results[0].uses)
    written = _loop_axes(producer, len(producer.operands) - 1, loop)
    return bool(written) and written == _loop_axes(consumer, use.operand_number, consumer_loop)


def _loop_axes(op: ir.Operation, position: int, loop: int) -> list[int]:
    """The axes of operand `position` of linalg op `op` indexed by its loop `loop`."""
    maps = _maps(op)
    if maps is None:
        return []
    return [axis for axis, expr in enumerate(maps[position].results)
            if isinstance(expr, ir.AffineDimExpr) and ir.AffineDimExpr(expr).position == loop]


def _extent(value: ir.Value, axis: int) -> int | ir.Value:
    """The size of `value` at `axis`: an int, or its run-time value (`tensor.dim`)."""
    size = value.type.shape[axis]
    if not ir.ShapedType.is_dynamic_size(size):
        return size
    return tensor.dim(value, arith.ConstantOp(ir.IndexType.get(), axis).result)


def _one_use(op: ir.Operation) -> tuple[ir.Operation, int] | None:
    """(the op using `op`'s one result, the operand number) when it is its one use."""
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    return (user.operation if hasattr(user, "operation") else user), uses[0].operand_number


def _single_input_consumer(op: ir.Operation) -> ir.Operation | None:
    """The op reading `op`'s one result, when it is its one use and an input (not an init)."""
    use = _one_use(op)
    if use is None:
        return None
    user, number = use
    return user if number < len(user.operands) - len(user.results) else None


def _script(lines: list[str]) -> str:
    """The transform script of `lines`, then canonicalization and CSE of every function."""
    return "\n".join([
        "module attributes {transform.with_named_sequence} {",
        f"  transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}}) {{",
        *("    " + line for line in lines),
        (f"    %funcs = transform.structured.match ops{{[\"func.func\"]}} in %root : "
         f"({ANY}) -> {ANY}"),
        "    transform.apply_patterns to %funcs {",
        "      transform.apply_patterns.canonicalization",
        # (a slice of an empty is an empty of the slice's size: a block's fused producer then
        # writes a buffer of its own, not rows of a whole-size empty that CSE may have merged
        # with the loop's result, which bufferization copied in every block)
        "      transform.apply_patterns.tensor.fold_tensor_empty",
        f"    }} : {ANY}",
        "    transform.apply_cse to %funcs : " + ANY,
        "    transform.yield",
        "  }",
        "}",
    ])


def _tails(module: ir.Operation, loops: dict[int, tuple[int, bool]]
           ) -> list[tuple[ir.Operation, int, bool]]:
    """The ops blocked this round (tagged; `loops`: the loop of each tag) whose blocked loop
    is still of a dynamic size: the partial blocks."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if TAG in op.attributes and _structured(op):
            loop, reduction = loops[ir.IntegerAttr(op.attributes[TAG]).value]
            if any(ir.ShapedType.is_dynamic_size(v.type.shape[a])
                   for position, v in enumerate(op.operands)
                   if isinstance(v.type, ir.ShapedType)
                   for a in _loop_axes(op, position, loop)):
                found.append((op, loop, reduction))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def _split_rest(op: ir.Operation, loop: int, block: int, tail: int, padded: bool = False
                ) -> None:
    """Replace `op` (the rows after the last whole block: fewer than `block`, its dynamic
    size) by static ops: the rows in blocks of block/2, block/4... down to `tail` rows, each
    run when its bit of the count is set (100 rows: 64, then 32, then 4), then the last
    rows (fewer than `tail`): one row, the op on [1, ...] slices; up to tail/2 rows,
    operands padded to tail/2 rows; more, padded to `tail` (at most 3 padded rows). Each
    writes its rows into the tensor `op`'s result is inserted into (its loop's), in place:
    the `scf.if`s yield that tensor (yielding the block's rows instead, the branches'
    buffers differ, and bufferization copies them, with run-time ownership its deallocation
    cannot lower). `padded`: the partial block is one piece, padded to `block` (the columns
    of attention's [S, S] blocks: one op of 2 sizes, not 7, for up to block - 1 columns
    computed and dropped)."""
    index = ir.IndexType.get()
    insert = _insert_of(op)
    if insert is None:
        raise PassFailure(f"dlc-block-dynamic: the rows of {op.name} are not inserted into "
                          "a loop's result")
    with ir.InsertionPoint(insert), op.location:
        position, axis = next((p, a[0]) for p, a in (
            (p, _loop_axes(op, p, loop)) for p in range(len(op.operands))) if a)
        rows = tensor.dim(op.operands[position], arith.ConstantOp(index, axis).result)

        def const(value: int) -> ir.Value:
            return arith.ConstantOp(index, value).result

        base = _offsets(insert)
        acc = insert.operands[1]
        filled = _filled_with(acc)
        result_axes = _loop_axes(op, len(op.operands) - 1, loop)

        def place(offset: ir.Value) -> list:
            """The offsets in `acc` of the rows at `offset` of `op`'s result."""
            return [arith.addi(_value(b), offset) if a in result_axes else b
                    for a, b in enumerate(base)]

        def stage(condition: ir.Value, acc: ir.Value, build) -> ir.Value:
            branch = scf.IfOp(condition, [acc.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([build(acc)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([acc])
            return branch.results[0]

        offset = const(0)
        if padded:  # (columns of blocks of rows: one piece, padded to `block` columns)
            left = arith.subi(rows, offset)
            acc = stage(arith.cmpi(arith.CmpIPredicate.ne, left, const(0)), acc,
                        lambda acc: _piece(op, loop, acc, offset, place(offset), block, left,
                                           True))
            insert.results[0].replace_all_uses_with(acc)
            insert.erase()
            op.erase()
            return
        weights = _reads_weights(op)
        size = block // 2 if not weights else 0  # (weights: no pieces by bits)
        while size >= tail:
            bit = arith.andi(rows, const(size))
            taken = arith.cmpi(arith.CmpIPredicate.ne, bit, const(0))
            acc = stage(taken, acc, lambda acc, size=size, at=offset: _piece(
                op, loop, acc, at, place(at), size, size, pad=False))
            offset = arith.addi(offset, bit)
            size //= 2
        left = arith.subi(rows, offset)
        tiers = [(1, 1, False), *([(tail // 2, tail // 2, True)] if tail // 2 > 1 else []),
                 (tail - 1, tail, True)]
        if weights:  # (one piece, its rows padded to `tail` or a multiple of 2 * `tail`:
            # 5 rows are 8, 13 are 16, 77 are 80)
            tiers = [(1, 1, False), (tail, tail, True),
                     *((size, size, True) for size in range(2 * tail, block + 1, 2 * tail))]

        def last(acc: ir.Value, tiers=tiers) -> ir.Value:
            (bound, size, pad), *others = tiers
            if not others:
                return _piece(op, loop, acc, offset, place(offset), size, left, pad, filled)
            fits = arith.cmpi(arith.CmpIPredicate.ule, left, const(bound))
            branch = scf.IfOp(fits, [acc.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([_piece(op, loop, acc, offset, place(offset), size, left, pad,
                                    filled)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([last(acc, others)])
            return branch.results[0]

        acc = stage(arith.cmpi(arith.CmpIPredicate.ne, left, const(0)), acc, last)
    insert.results[0].replace_all_uses_with(acc)
    insert.erase()
    op.erase()


# a contraction reading a constant of at least this many bytes (a layer's weights) is blocked
# by WEIGHT_BLOCKS * `block` rows with its group, and runs its partial block as one piece of
# rows padded to `tail` or a multiple of 2 * `tail` (`_split_rest`), not as pieces of 32, 16,
# 8 and the last rows: each block and piece reads all of the constant, from beyond the L2
# cache, where the static schedule reads it once per 128 rows (`packed_rows_tile`). GPT-2's
# MLP, Intel Xeon, one thread, interleaved calls, dynamic / static: 128 rows 1.12 -> 1.03,
# 77 rows (64 + 8 + 5 padded to 8: the weights read 3 times) 1.22 -> 1.08
WEIGHT_BYTES = 1 << 20
WEIGHT_BLOCKS = 2  # (the rows of their blocks: this many times `block`)


def _reads_weights(op: ir.Operation) -> bool:
    """Whether linalg op `op` is a contraction (a reduction loop) with an input that is a
    non-splat constant of at least WEIGHT_BYTES."""
    try:
        iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    except (KeyError, ValueError):
        iterators = []
    if op.name not in ("linalg.matmul", "linalg.batch_matmul") and not any(
            "reduction" in a for a in iterators):
        return False
    inputs = list(op.operands)[:len(op.operands) - len(op.results)]
    for value in inputs:
        owner = value.owner
        if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "arith.constant":
            continue
        attr = owner.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and not attr.is_splat and isinstance(
                value.type, ir.ShapedType) and value.type.has_static_shape and \
                nbytes(value.type) >= WEIGHT_BYTES:
            return True
    return False


def _value(offset) -> ir.Value:
    return offset if isinstance(offset, ir.Value) else \
        arith.ConstantOp(ir.IndexType.get(), offset).result


def _offsets(insert: ir.Operation) -> list:
    """The offsets of a `tensor.insert_slice` (ints and Values)."""
    static = [int(v) for v in ir.DenseI64ArrayAttr(insert.attributes["static_offsets"])]
    dynamic = iter(list(insert.operands)[2:2 + sum(ir.ShapedType.is_dynamic_size(v)
                                                   for v in static)])
    return [next(dynamic) if ir.ShapedType.is_dynamic_size(v) else v for v in static]


def _filled_with(acc: ir.Value) -> ir.Value | None:
    """The scalar of the `linalg.fill` that `acc` (the tensor the rows of an op's partial block
    are inserted into: an iter_arg of its loop of blocks) starts from, through the loops of
    blocks of that op (iter_args, results) and slices of them, or None. Each of those loops
    writes rows of its own (main and peeled loops of a parallel loop), so the rows a piece
    reads still hold the fill (a product's zeros)."""
    value = acc
    for _ in range(8):
        owner = value.owner
        owner = owner.operation if hasattr(owner, "operation") else owner
        if isinstance(value, ir.BlockArgument):
            loop = owner.owner if isinstance(owner, ir.Block) else None
            loop = loop.operation if hasattr(loop, "operation") else loop
            if loop is None or loop.name != "scf.for" or value.arg_number == 0:
                return None
            value = list(loop.operands)[3 + value.arg_number - 1]
        elif owner.name == "scf.for":
            value = list(owner.operands)[3 + ir.OpResult(value).result_number]
        elif owner.name == "tensor.extract_slice":
            value = owner.operands[0]
        elif owner.name == "linalg.fill":
            return owner.operands[0]
        else:
            return None
    return None


def _piece(op: ir.Operation, loop: int, acc: ir.Value, offset: ir.Value, at: list, size: int,
           count: ir.Value | int, pad: bool, filled: ir.Value | None = None) -> ir.Value:
    """`acc` with the rows [offset, offset + count) of `op`'s result (along its loop
    `loop`), written at offsets `at` (its rows' place in `acc`), computed by a clone of `op`
    of `size` rows: its inputs' rows sliced (count == size) or padded with zeros to `size`
    (count < size), its init the rows of `acc` (the result of an op whose init is the slice
    of `acc` it is inserted into; padded, its padded rows are left undefined: their results
    are dropped, and filling them cost a 16-row piece of a 768x3072 product 1.5 %). Padded,
    where `acc`'s rows are those of a fill of `filled` (`_filled_with`: a product's zeros),
    its init is that fill of all its rows, not a copy of them.
    Its other dynamic sizes (columns) stay dynamic."""
    inits = len(op.operands) - len(op.results)
    result_axes = _loop_axes(op, len(op.operands) - 1, loop)
    init = op.operands[inits]
    rows_at = [size if a in result_axes else _extent(init, a) for a in range(acc.type.rank)]
    operands = []
    for position, value in enumerate(op.operands):
        axes = _loop_axes(op, position, loop) if position < inits else result_axes
        if not axes or not isinstance(value.type, ir.RankedTensorType):
            operands.append(value)
            continue
        shape = [size if a in axes else _extent(value, a) for a in range(value.type.rank)]
        if position >= inits:  # the init: the rows of `acc`
            value, offsets = acc, at
            shape = rows_at
        else:
            offsets = [offset if a in axes else 0 for a in range(len(shape))]
        if not pad:
            operands.append(_slice(value, offsets, shape))
            continue
        if not _read(op, position):  # (an init the op only writes: not copied)
            operands.append(tensor.EmptyOp(shape, value.type.element_type).result)
            continue
        counts = [count if a in axes else s for a, s in enumerate(shape)]
        if position >= inits and filled is not None:  # (rows of a fill: filled here, whole)
            operands.append(linalg.fill(filled, outs=[
                tensor.EmptyOp(shape, value.type.element_type)]))
            continue
        if position >= inits:  # (an init's padded rows: computed, then dropped; not filled)
            padded = tensor.EmptyOp(shape, value.type.element_type).result
        else:
            zero = arith.ConstantOp(value.type.element_type, _zero_attr(value.type.element_type))
            padded = linalg.fill(zero.result,
                                 outs=[tensor.EmptyOp(shape, value.type.element_type)])
        operands.append(_insert(_slice(value, offsets, counts), padded,
                                [0] * len(shape), counts))
    if size == 1 and not pad:
        panels = _panel_gemv(op, operands)
        if panels is not None:  # (its one row read the weights from panels)
            return _insert(panels, acc, at, rows_at)
    clone = op.clone()
    for position, value in enumerate(operands):
        clone.operands[position] = value
    _shift_indices(clone, loop, offset)
    result = clone.results[0]
    result.set_type(ir.RankedTensorType.get(_mixed(rows_at)[1], result.type.element_type))
    if TAG in clone.attributes:
        del clone.attributes[TAG]
    counts = [(count if pad else size) if a in result_axes else d
              for a, d in enumerate(rows_at)]
    if pad:
        result = _slice(result, [0] * len(rows_at), counts)
    return _insert(result, acc, at, counts)


def _panel_gemv(op: ir.Operation, operands: list[ir.Value]) -> ir.Value | None:
    """The one-row piece of a matmul [1, K] x B [K, N] whose B is a large f32 constant,
    reading B from panels ([J, K, W], each contiguous: `dlc-pack-gemv`'s layout, which a
    static compile of one row gets at graph level): init + a x B as a batch matmul over the
    panels of `a` broadcast, or None for any other op. Where `dlc-pack-gemv` would pack
    (`_PANELS`: weights beyond the L2 cache, in a model beyond the last-level cache): a
    one-token call of BERT-base streamed its unpacked weights at 16 GB/s, its panels at 25
    (the weights are then held twice: rows for the blocks, panels for the row)."""
    if not _PANELS.get() or op.name != "linalg.matmul" or len(operands) != 3:
        return None
    a, b, init = operands
    types = [v.type for v in (a, b, init)]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape and t.rank == 2
               and isinstance(t.element_type, ir.F32Type) for t in types):
        return None
    (m, k), (k2, n) = types[0].shape, types[1].shape
    owner = b.owner
    if m != 1 or k != k2 or not isinstance(owner, ir.Operation | ir.OpView) or \
            owner.name != "arith.constant" or "indexing_maps" in op.attributes:
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseFPElementsAttr) or attr.is_splat or \
            4 * k * n < pack_gemv.MIN_BYTES:
        return None
    packed = pack_gemv.panels(np.asarray(attr).reshape(k, n))
    panels, width = packed.shape[0], packed.shape[2]
    f32 = ir.F32Type.get()
    table = arith.ConstantOp(ir.RankedTensorType.get(list(packed.shape), f32),
                             ir.DenseElementsAttr.get(packed)).result
    rows = linalg.broadcast(a, outs=[tensor.EmptyOp([panels, 1, k], f32).result],
                            dimensions=[0])
    rows = rows[0] if isinstance(rows, list | tuple) else rows
    zero = arith.ConstantOp(f32, ir.FloatAttr.get(f32, 0.0)).result
    out = linalg.fill(zero, outs=[tensor.EmptyOp([panels, 1, width], f32).result])
    product = linalg.batch_matmul(rows, table, outs=[out])
    flat = tensor.collapse_shape(ir.RankedTensorType.get([panels * width], f32), product,
                                 [[0, 1, 2]])
    row = tensor.expand_shape(ir.RankedTensorType.get([1, panels * width], f32), flat,
                              [[0, 1]], [], [1, panels * width])
    if panels * width != n:
        row = _slice(row, [0, 0], [1, n])
    return linalg.add(init, row, outs=[tensor.EmptyOp([1, n], f32).result])


def _split_reduction(op: ir.Operation, loop: int, block: int) -> None:
    """Replace `op`, the partial block (fewer than `block` elements, a dynamic size) of a
    reduction over its loop `loop`, by static pieces accumulating into its init in turn:
    block/2, block/4... REDUCTION_TAIL elements (32, 16, 8), each run when its bit of the
    count is set, then a loop of one-element pieces for the rest (at most 7). No padding:
    the identity of the op's combination is not known here."""
    index = ir.IndexType.get()
    inits = len(op.operands) - len(op.results)
    if len(op.results) != 1:
        raise PassFailure(f"dlc-block-dynamic: a reduction {op.name} of several results")
    with ir.InsertionPoint(op), op.location:
        position, axis = next((p, a[0]) for p, a in (
            (p, _loop_axes(op, p, loop)) for p in range(inits)) if a)
        count = tensor.dim(op.operands[position], arith.ConstantOp(index, axis).result)

        def const(value: int) -> ir.Value:
            return arith.ConstantOp(index, value).result

        acc = op.operands[inits]

        def piece(acc: ir.Value, at: ir.Value, size: int) -> ir.Value:
            operands = []
            for p, value in enumerate(op.operands):
                axes = _loop_axes(op, p, loop) if p < inits else []
                if not axes:
                    operands.append(acc if p == inits else value)
                    continue
                shape = [size if a in axes else _extent(value, a)
                         for a in range(value.type.rank)]
                operands.append(_slice(value, [at if a in axes else 0
                                               for a in range(len(shape))], shape))
            clone = op.clone()
            for p, value in enumerate(operands):
                clone.operands[p] = value
            _shift_indices(clone, loop, at)
            if TAG in clone.attributes:
                del clone.attributes[TAG]
            return clone.results[0]

        offset = const(0)
        size = block // 2
        while size >= REDUCTION_TAIL:
            bit = arith.andi(count, const(size))
            taken = arith.cmpi(arith.CmpIPredicate.ne, bit, const(0))
            branch = scf.IfOp(taken, [acc.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([piece(acc, offset, size)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([acc])
            acc = branch.results[0]
            offset = arith.addi(offset, bit)
            size //= 2
        # (the last elements, fewer than REDUCTION_TAIL: one at a time)
        rest = scf.ForOp(offset, count, const(1), [acc])
        with ir.InsertionPoint(rest.body):
            scf.YieldOp([piece(rest.inner_iter_args[0], rest.induction_variable, 1)])
        acc = rest.results[0]
    op.results[0].replace_all_uses_with(acc)
    op.erase()


def _shift_indices(clone: ir.Operation, loop: int, offset: ir.Value) -> None:
    """A clone of the elements at `offset` of the op's loop `loop`: its body's
    `linalg.index` of that loop (an iota, a mask) counts from `offset`, not from 0."""
    i64 = ir.IntegerType.get_signless(64)
    for region in clone.regions:
        for block in region.blocks:
            for inner in list(block.operations):
                if inner.operation.name != "linalg.index" or \
                        ir.IntegerAttr(inner.attributes["dim"]).value != loop:
                    continue
                with ir.InsertionPoint(inner), inner.location:
                    fresh = linalg.IndexOp(ir.IntegerAttr.get(i64, loop)).result
                    inner.results[0].replace_all_uses_with(arith.addi(fresh, offset))
                inner.erase()


def _mixed(values: list) -> tuple[list[ir.Value], list[int]]:
    """(the dynamic values, the static list with `?` for them) of a list of ints and Values."""
    dynamic = ir.ShapedType.get_dynamic_size()
    return ([v for v in values if isinstance(v, ir.Value)],
            [dynamic if isinstance(v, ir.Value) else v for v in values])


def _slice(value: ir.Value, offsets: list, sizes: list) -> ir.Value:
    offset_values, static_offsets = _mixed(offsets)
    size_values, static_sizes = _mixed(sizes)
    result = ir.RankedTensorType.get(static_sizes, value.type.element_type)
    return tensor.extract_slice(result, value, offset_values, size_values, [], static_offsets,
                                static_sizes, [1] * len(sizes))


def _insert(value: ir.Value, dest: ir.Value, offsets: list, sizes: list) -> ir.Value:
    offset_values, static_offsets = _mixed(offsets)
    size_values, static_sizes = _mixed(sizes)
    return tensor.insert_slice(value, dest, offset_values, size_values, [], static_offsets,
                               static_sizes, [1] * len(sizes))


def _insert_of(op: ir.Operation) -> ir.Operation | None:
    """The `tensor.insert_slice` of `op`'s one result when it is its one use, else None."""
    use = _one_use(op)
    if use is None or use[0].name != "tensor.insert_slice" or use[1] != 0:
        return None
    return use[0]


def _read(op: ir.Operation, position: int) -> bool:
    """Whether linalg op `op` reads its operand `position` (an init it only writes is not)."""
    inits = len(op.operands) - len(op.results)
    if position < inits:
        return True
    body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    return body is None or len(list(body.arguments[position].uses)) > 0


def _zero_attr(element: ir.Type) -> ir.Attribute:
    if isinstance(element, ir.IntegerType):
        return ir.IntegerAttr.get(element, 0)
    return ir.FloatAttr.get(element, 0.0)

