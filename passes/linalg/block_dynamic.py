"""dlc-block-dynamic: the linalg ops of a dynamic size run as static blocks.

A function compiled for every value of a dynamic size (`tensor<?x784xf32>`: a batch, a number
of tokens; `dlc-to-linalg`) has linalg ops with a dynamic loop, which no schedule family
matches (their tiles are chosen from static shapes). This pass, before `dlc-schedule`, turns
each such op whose dynamic loop is parallel into static ops the schedules take as they take
any other:

- a loop over the dynamic size in blocks of `block` (64) rows, each block the op on static
  slices ([64, K] x [K, N]: `transform.structured.tile_using_for`, then `transform.loop.peel`
  splits off the last, partial, block). A producer whose one use is an input of such an op
  is computed in the same blocks (`fuse_into_containing_op`, with the fill of its init): a
  matmul and its bias-and-activation consumer are one block loop, which the schedules fuse
  as in a static function (an FFN at 384 tokens: 1.08 -> 1.01x its static compile);
- the partial block (fewer than 64 rows) in blocks of `tail` (8) rows: a block of one row is
  the op on [1, K] (a vector-matrix product has its own schedule, as fast as a static
  compile's), a whole one is the op on [8, K], one of up to 4 rows is padded to 4 rows, a
  larger one to 8 (zero rows in, their results dropped: at most 3 padded rows are
  computed). The op is static in every case.

Ops left dynamic (a dynamic reduction loop, two dynamic loops) keep the naive loop path and
`NaivePathWarning` names the large ones. A static module is left unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, linalg, scf, tensor
from mlir.dialects.transform import interpreter

from dlc.passes.registry import ModulePass, PassFailure, register

TAG = "dlc.block"
ANY = "!transform.any_op"


def _maps(op: ir.Operation) -> list[ir.AffineMap] | None:
    try:
        return [ir.AffineMapAttr(a).value for a in linalg.get_indexing_maps(op)]
    except (ValueError, TypeError, RuntimeError):
        return None


def dynamic_loop(op: ir.Operation) -> int | None:
    """The one loop of linalg op `op` over a dynamic size when it is parallel (it indexes the
    result); else None (no dynamic size, several, one inside an index expression, or a
    reduction over it)."""
    maps = _maps(op)
    if maps is None or len(maps) != len(op.operands):
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
    if len(dynamic) != 1:
        return None
    (loop,) = dynamic
    outputs = maps[len(maps) - len(op.results):]
    parallel = any(isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == loop
                   for m in outputs for e in m.results)
    return loop if parallel and op.results else None


def _structured(op: ir.Operation) -> bool:
    return op.name.startswith("linalg.") and op.name not in ("linalg.fill", "linalg.yield",
                                                              "linalg.index")


def blocked_ops(module: ir.Operation) -> list[tuple[ir.Operation, int]]:
    """(op, its dynamic loop) of each linalg op this pass blocks, in program order."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _structured(op) and any(isinstance(v.type, ir.ShapedType)
                                   and not ir.ShapedType(v.type).has_static_shape
                                   for v in op.operands):
            loop = dynamic_loop(op)
            if loop is not None:
                found.append((op, loop))
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
        i64 = ir.IntegerType.get_signless(64)
        for index, (op, _) in enumerate(found):
            op.attributes[TAG] = ir.IntegerAttr.get(i64, index)
        fills = {}
        for index, (op, _) in enumerate(found):
            fill = _fill_of(op)
            if fill is not None:
                fills[index] = len(found) + len(fills)
                fill.attributes[TAG] = ir.IntegerAttr.get(i64, fills[index])
        lines = []
        for group in _groups(found):
            lines += self._lines(group, fills)
        script = ir.Module.parse(_script(lines))
        try:
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
            for op, loop in _tails(module):
                _split_tail(op, loop, self.tail)
            script = ir.Module.parse(_script([]))
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
        except (ValueError, ir.MLIRError) as error:
            raise PassFailure(f"dlc-block-dynamic: the blocking script failed: {error}") \
                from None
        finally:
            _untag(module)

    def _lines(self, group: list[tuple[int, int, int]], fills: dict[int, int]) -> list[str]:
        """The script of one group: (index, loop, loop count) of its root, then of the
        producers fused into the root's blocks (each before its own producers)."""
        def match(index: int, where: str) -> str:
            return (f"transform.structured.match attributes {{{TAG} = {index} : i64}} in "
                    f"{where} : ({ANY}) -> {ANY}")

        def sizes(loop: int, count: int, size: int) -> str:
            return ", ".join(str(size if d == loop else 0) for d in range(count))

        (root, loop, count), *producers = group
        p = f"%g{root}"
        lines = [f"{p} = {match(root, '%root')}",
                 (f"{p}_t, {p}_l0 = transform.structured.tile_using_for {p} tile_sizes "
                  f"[{sizes(loop, count, self.block)}] : ({ANY}) -> ({ANY}, {ANY})")]
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
        # the partial block: each op in blocks of `tail` rows of its own (not peeled: the
        # bounds of the inner loop compose with the outer one's, and peeling leaves its blocks
        # dynamic; each is sliced or padded: `_split_tail`)
        for index, op_loop, op_count in group:
            q = f"{p}_r{index}"
            lines += [f"{q} = {match(index, f'{p}_rest')}",
                      (f"{q}_t, {q}_l = transform.structured.tile_using_for {q} tile_sizes "
                       f"[{sizes(op_loop, op_count, self.tail)}] : ({ANY}) -> ({ANY}, {ANY})")]
        return lines


def _fusion_order(producers: list[tuple[int, int, int]], fills: dict[int, int]) -> list[int]:
    """The tags to fuse into a group's loop, each after its consumer: the producers, each
    followed by the fill of its init."""
    order = []
    for index, _, _ in producers:
        order.append(index)
        if index in fills:
            order.append(fills[index])
    return order


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


def _groups(found: list[tuple[ir.Operation, int]]) -> list[list[tuple[int, int, int]]]:
    """The blocked ops in groups run in one loop: a producer whose one use is an input of a
    blocked consumer in the same block joins its consumer's group (its rows are computed in
    the consumer's row blocks, no intermediate of the whole size); each group is (index, loop,
    loop count) of its root (the last op), then of its producers, consumers first."""
    index_of = {op: i for i, (op, _) in enumerate(found)}
    group_of: dict[int, int] = {}
    groups: dict[int, list[tuple[int, int, int]]] = {}
    for i in reversed(range(len(found))):
        op, loop = found[i]
        entry = (i, loop, _maps(op)[0].n_dims)
        consumer = _single_input_consumer(op)
        j = index_of.get(consumer) if consumer is not None else None
        if j is not None and j in group_of and consumer.parent == op.parent:
            group_of[i] = group_of[j]
            groups[group_of[j]].append(entry)
        else:
            group_of[i] = i
            groups[i] = [entry]
    return [groups[root] for root in sorted(groups)]


def _single_input_consumer(op: ir.Operation) -> ir.Operation | None:
    """The op reading `op`'s one result, when it is its one use and an input (not an init)."""
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    user = user.operation if hasattr(user, "operation") else user
    inputs = len(user.operands) - len(user.results)
    return user if uses[0].operand_number < inputs else None


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
        f"    }} : {ANY}",
        "    transform.apply_cse to %funcs : " + ANY,
        "    transform.yield",
        "  }",
        "}",
    ])


def _tails(module: ir.Operation) -> list[tuple[ir.Operation, int]]:
    """The blocked ops still of a dynamic size: the last rows, fewer than a tail block."""
    return [(op, loop) for op, loop in blocked_ops(module) if TAG in op.attributes]


def _dynamic(value: ir.Value) -> list[int]:
    t = value.type
    return [axis for axis, size in enumerate(t.shape) if ir.ShapedType.is_dynamic_size(size)] \
        if isinstance(t, ir.RankedTensorType) else []


def _split_tail(op: ir.Operation, loop: int, tail: int) -> None:
    """Replace `op` (at most `tail` rows: its dynamic size) by `scf.if`s choosing the op on
    static operands by the rows: one row or `tail` rows, [1, ...] or [tail, ...] slices; up
    to tail / 2 rows, operands padded to tail / 2 rows; more, padded to `tail` (at most 3
    rows in 4, or 3 in 8, padded)."""
    index = ir.IndexType.get()
    # (rows at most `bound` -> the op at `size` rows, padded or not); a whole tail block is
    # the op on its slices, no copy
    tiers = [(1, 1, False), *([(tail // 2, tail // 2, True)] if tail // 2 > 1 else []),
             (tail - 1, tail, True), (tail, tail, False)]
    # the block's result is inserted into the op's whole result (the tile loop's): each
    # branch inserts its own, and the `scf.if` yields the whole result, in place (yielding the
    # block's rows instead, the branches' buffers differ and the rows are copied once more)
    insert = _insert_of(op)
    anchor = insert if insert is not None else op
    result_types = [r.type for r in anchor.results]

    def clone(size: int, pad: bool) -> list[ir.Value]:
        values = _static_clone(op, size, rows, pad)
        return [_reinserted(insert, values[0])] if insert is not None else values

    def choose(tiers: list[tuple[int, int, bool]]) -> list[ir.Value]:
        (bound, size, pad), *others = tiers
        if not others:
            return clone(size, pad)
        limit = arith.ConstantOp(index, bound).result
        branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ule, rows, limit), result_types,
                          has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp(clone(size, pad))
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp(choose(others))
        return list(branch.results)

    with ir.InsertionPoint(anchor), op.location:
        source = next(v for v in op.operands if _dynamic(v))
        rows = tensor.dim(source, arith.ConstantOp(index, _dynamic(source)[0]).result)
        chosen = choose(tiers)
    for old, new in zip(anchor.results, chosen):
        old.replace_all_uses_with(new)
    if insert is not None:
        insert.erase()
    op.erase()


def _insert_of(op: ir.Operation) -> ir.Operation | None:
    """The `tensor.insert_slice` of `op`'s one result when it is its one use, else None."""
    if len(op.results) != 1:
        return None
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    user = user.operation if hasattr(user, "operation") else user
    if user.name != "tensor.insert_slice" or uses[0].operand_number != 0:
        return None
    return user


def _reinserted(insert: ir.Operation, value: ir.Value) -> ir.Value:
    """`insert` (a tensor.insert_slice) again, of `value`."""
    clone = insert.clone()
    clone.operands[0] = value
    return clone.results[0]


def _static_clone(op: ir.Operation, size: int, rows: ir.Value, pad: bool) -> list[ir.Value]:
    """A clone of `op` whose dynamic sizes are `size` (its operands sliced to it, or padded
    with zeros), and its results as `op`'s types (the first `rows` rows)."""
    operands = []
    for position, value in enumerate(op.operands):
        axes = _dynamic(value)
        if not axes:
            operands.append(value)
            continue
        shape = [size if a in axes else d for a, d in enumerate(value.type.shape)]
        static = ir.RankedTensorType.get(shape, value.type.element_type)
        if pad and not _read(op, position):  # (an init the op only writes: not copied)
            operands.append(tensor.EmptyOp(shape, static.element_type).result)
            continue
        if not pad:
            operands.append(tensor.extract_slice(
                static, value, [], [], [], [0] * len(shape), shape, [1] * len(shape)))
            continue
        zero = arith.ConstantOp(value.type.element_type, _zero_attr(value.type.element_type))
        padded = linalg.fill(zero.result, outs=[tensor.EmptyOp(shape, static.element_type)])
        sizes = [rows if a in axes else d for a, d in enumerate(value.type.shape)]
        dynamic_sizes = [s for s in sizes if isinstance(s, ir.Value)]
        static_sizes = [ir.ShapedType.get_dynamic_size() if isinstance(s, ir.Value) else s
                        for s in sizes]
        operands.append(tensor.insert_slice(value, padded, [], dynamic_sizes, [],
                                            [0] * len(shape), static_sizes, [1] * len(shape)))
    clone = op.clone()
    for position, value in enumerate(operands):
        clone.operands[position] = value
    results = []
    for result in clone.results:
        axes = _dynamic(result)
        shape = [size if a in axes else d for a, d in enumerate(result.type.shape)]
        old_type = result.type
        result.set_type(ir.RankedTensorType.get(shape, old_type.element_type))
        # (its first `rows` rows, in both branches: their buffers then have one static
        # layout, and the copy of the `scf.if`'s result into its destination is rows of
        # memcpy, `dlc-lower-copies`; a cast would give it dynamic strides, a copy per element)
        sizes = [rows if a in axes else d for a, d in enumerate(old_type.shape)]
        results.append(tensor.extract_slice(
            old_type, result, [], [s for s in sizes if isinstance(s, ir.Value)], [],
            [0] * len(shape), [ir.ShapedType.get_dynamic_size() if isinstance(s, ir.Value)
                               else s for s in sizes], [1] * len(shape)))
    if TAG in clone.attributes:
        del clone.attributes[TAG]
    return results


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


def _untag(module: ir.Operation) -> None:
    def visit(op: ir.Operation) -> ir.WalkResult:
        if TAG in op.attributes:
            del op.attributes[TAG]
        return ir.WalkResult.ADVANCE

    module.walk(visit)
