"""Epilogue and init fusion: a contraction's outer tile loop is an `scf.forall` holding its
producer of the accumulator (fill, bias broadcast), the contraction tile and its consumer.

Contract with the contraction families (`matmul`, `conv`): `match` records in its problem
whether the op has a fusable `epilogue` (bias, activation, residual add: after
linalg-fuse-elementwise-ops, ONE all-parallel `linalg.generic`) and a fusable `init` producer;
`lines` calls `forall_lines` with the outer tile sizes and the schedules of the inner pieces.

The script roots the tiling at the epilogue when there is one: `transform.structured.fuse
{use_forall}` tiles the epilogue (tile sizes = the contraction's outer tile on the parallel
dims) and fuses the contraction and its init producer into the forall, so that each forall
iteration fills an output tile, accumulates the contraction into it and applies the epilogue
while the tile is hot in cache. That transform fuses every tileable producer it reaches, so it
is used only when those are exactly the contraction and its init (`fusion_plan.fuses_exactly`:
the other operands come from constants, arguments or ops already scheduled into their own loops);
otherwise the forall is built with `tile_using_forall` and `fuse_into_containing_op`, which
costs time in proportion to the size of the function per call (it prints the containing op
into a diagnostic it then discards): ResNet-50's schedule took about 4 s more that way. Before
the script runs, `write_in_place` rewrites the epilogue to take the contraction's result as
its destination, so that the whole tile bufferizes into one buffer (otherwise every iteration
copied its tile into a fresh allocation). Without an
epilogue the contraction itself is tiled by the forall. Either way the forall iterations are
independent: `dlc.compile(num_threads=N)` runs them on N threads (the llvm stage lowers forall
to OpenMP), one thread runs them as a loop.

Fused only: an epilogue that is the single user of the contraction's result, reads it with
the identity map (the whole tile is consumed by the same tile), writes a same-shape f32
result with the identity map, reads its other operands through ordered projections (identity
or broadcast) and has a body of arith/math ops; an init producer that is a `linalg.fill`,
`linalg.broadcast` or such an all-parallel generic, used by the contraction only. The
elementwise family skips ops fused here (`fusion_plan.fused_elsewhere`), so that one op is never
scheduled twice. A contraction below dlc-schedule's `min-volume` keeps its epilogue unscheduled.
(`fuses_exactly` and `fused_elsewhere` ask the contraction families' `match`: they are in
`fusion_plan.py`, above the families, which import this module.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir

from dlc.passes.codegen.predicates import (
    body_is_plain,
    is_byte_lookup,
    is_identity,
    maps,
    ordered_projection,
)
from dlc.passes.codegen.script import ANY, Lines
from dlc.passes.walk import move_body

INITS = ("linalg.fill", "linalg.broadcast", "linalg.generic")
PACKED = "dlc.packed_conv"  # (the attribute of packed_conv's generic, a contraction too)
CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv_2d_nhwc_hwcf",
                "linalg.conv_2d_nchw_fchw", "linalg.depthwise_conv_2d_nhwc_hwc",
                "linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")


def _is_op(owner: object) -> bool:
    return isinstance(owner, ir.Operation | ir.OpView)


def _plain_parallel_generic(op: ir.Operation) -> bool:
    """All-parallel, one result, ordered-projection maps, an arith/math body."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    iterators = ir.ArrayAttr(op.attributes["iterator_types"])
    if not all("parallel" in str(i) for i in iterators):
        return False
    affine_maps = maps(op)
    if not is_identity(affine_maps[-1]) or not all(ordered_projection(m) for m in affine_maps):
        return False
    # (a byte-table lookup, `predicates.is_byte_lookup`, is not fused: the contractions' tiles
    # of it were left naive; the elementwise family vectorizes it on its own)
    return body_is_plain(op) and not any(is_byte_lookup(inner.operation)
                                         for inner in op.regions[0].blocks[0].operations)


def _single_user(value: ir.Value) -> tuple[ir.Operation, int] | None:
    uses = list(value.uses)
    if len(uses) != 1:
        return None
    return uses[0].owner, uses[0].operand_number


def epilogue(op: ir.Operation) -> ir.Operation | None:
    """The fusable elementwise consumer of contraction `op` (see the module docstring)."""
    use = _single_user(op.results[0])
    if use is None:
        return None
    user, index = use
    if not _is_op(user) or not _plain_parallel_generic(user):
        return None
    if index == len(user.operands) - 1:  # updated in place (see `write_in_place`)
        return user.operation if is_identity(maps(user)[index]) else None
    if user.results[0].type != op.results[0].type:
        return None
    if any(_from_contraction(v) for v in user.operands[:index]):
        return None  # (the first contraction an epilogue reads fuses it)
    if _from_contraction(user.operands[-1]):
        # (... and one that updates it in place, `write_in_place`, fused it first: a residual
        # add of two convs, ResNet-D's downsample; both claimed it, the second one's packing
        # rewrote it, and the first one's schedule failed: naive loops)
        return None
    return user.operation if is_identity(maps(user)[index]) else None


def write_in_place(op: ir.Operation) -> ir.Operation | None:
    """Rewrite the epilogue of contraction `op` to update the contraction's result in place.

    `generic ins(c, b...) outs(empty)` whose body ignores its output becomes
    `generic ins(b...) outs(c)`, the body reading the element of c as its output argument. The
    forall then tiles the epilogue's destination, which is the contraction's result, and
    bufferization writes the epilogue into the contraction's tile: without this it saw two
    writers of one destination slice and copied the tile in every iteration (a 1x1 conv with a
    ReLU ran 3.5x slower than without). Returns the new epilogue, or None (left as it was).
    """
    user = epilogue(op)
    if user is None:
        return None
    index = next(u.operand_number for u in op.results[0].uses)
    block = user.regions[0].blocks[0]
    args = list(block.arguments)
    if list(args[-1].uses):
        return None
    _fill_into(op, user.operands[len(user.operands) - 1])
    maps = list(ir.ArrayAttr(user.attributes["indexing_maps"]))
    inputs = [v for i, v in enumerate(list(user.operands)[:-1]) if i != index]
    new_maps = [m for i, m in enumerate(maps[:-1]) if i != index] + [maps[-1]]
    with ir.InsertionPoint(user), user.location:
        new = ir.Operation.create(
            "linalg.generic", results=[op.results[0].type], operands=inputs + [op.results[0]],
            attributes={
                "indexing_maps": ir.ArrayAttr.get(new_maps),
                "iterator_types": user.attributes["iterator_types"],
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(inputs), 1]),
            }, regions=1)
        new_block = new.regions[0].blocks.append(
            *[a.type for i, a in enumerate(args[:-1]) if i != index], args[index].type)
        new_args = list(new_block.arguments)
        others = iter(new_args[:-1])
        for i, arg in enumerate(args[:-1]):
            arg.replace_all_uses_with(new_args[-1] if i == index else next(others))
        for inner in list(block.operations):
            new_block.append(inner)
    user.results[0].replace_all_uses_with(new.results[0])
    user.erase()
    return new


_VIEWS = ("tensor.extract_slice", "tensor.expand_shape", "tensor.collapse_shape")


def _fill_into(op: ir.Operation, dest: ir.Value) -> None:
    """Fill contraction `op`'s accumulator in `dest`, the destination its epilogue drops
    (`write_in_place`), where `dest` is a slice of another tensor (not an empty) and the
    accumulator a zero or bias fill of an empty that only `op` reads: a block of a dynamic
    function (its rows of the function's result) then writes its result where it goes, not
    into a buffer copied there after each block. The views making `dest` (a slice, its
    packed view) move before the fill when their operands allow."""
    acc = op.operands[len(op.operands) - 1]
    fill = acc.owner
    if not _is_op(fill) or fill.name not in ("linalg.fill", "linalg.broadcast") \
            or _single_user(acc) is None or not is_empty(fill.operands[len(fill.operands) - 1]):
        return
    fill = fill.operation
    if dest.type != acc.type or is_empty(dest):
        return
    moved = []  # (the views of `dest` defined after the fill, last first)
    value = dest
    while not _defined_before(value, fill):
        source = value.owner
        if not _is_op(source) or source.name not in _VIEWS:
            return
        source = source.operation
        if source.block != fill.block:
            return
        if not all(_defined_before(v, fill) for v in list(source.operands)[1:]):
            return
        moved.append(source)
        value = source.operands[0]
    if is_empty(value):
        return
    for source in reversed(moved):
        source.move_before(fill)
    fill.operands[len(fill.operands) - 1] = dest


def _defined_before(value: ir.Value, op: ir.Operation) -> bool:
    """`value` is available at `op`: an argument of a block enclosing it, or the result of
    an op before it (or before its ancestor) in a block enclosing it."""
    owner = value.owner
    defining = None if isinstance(owner, ir.Block) else owner.operation
    ancestor = op
    while ancestor is not None:
        if defining is None and ancestor.block == owner:
            return True
        if defining is not None and defining.block == ancestor.block:
            return defining.is_before_in_block(ancestor)
        parent = ancestor.parent
        ancestor = parent.operation if parent is not None else None
    return False


def is_contraction(owner: object) -> bool:
    return _is_op(owner) and (owner.name in CONTRACTIONS or PACKED in owner.attributes)


def _from_contraction(value: ir.Value) -> bool:
    """`value` is a contraction's result, also once packed: packing (`packed_conv.pack`) reads
    its 5-D generic's result back through a collapse_shape or an extract_slice, so that the
    answer of `epilogue` is the same before and after a conv before it was packed (a residual
    add of two convs, MobileNetV2's: the second conv took it as its epilogue only after the
    first was packed, and its packing erased the add, which the elementwise family had taken
    as its own op: a dangling handle, a crash)."""
    owner = value.owner
    if _is_op(owner) and owner.name in ("tensor.collapse_shape", "tensor.extract_slice"):
        owner = owner.operands[0].owner
    return is_contraction(owner)


def init_producer(op: ir.Operation, tag: str | None = None) -> ir.Operation | None:
    """The fusable producer of contraction `op`'s accumulator (fill, bias broadcast); `tag`:
    an attribute whose generics count as contractions too (matmuls packed already)."""
    owner = op.operands[len(op.operands) - 1].owner
    if not _is_op(owner) or owner.name not in INITS or len(owner.results) != 1:
        return None
    if owner.name == "linalg.generic" and not _plain_parallel_generic(owner):
        return None
    if _single_user(owner.results[0]) is None and not _only_contractions_use(owner, tag):
        return None
    # (an init shared by several contractions, CSE's doing, is cloned into each forall: fused
    # into none, its buffer was copied once per contraction by bufferization)
    return owner.operation


def _only_contractions_use(init: ir.Operation, tag: str | None = None) -> bool:
    """Every user of `init` reads it as a contraction's accumulator."""
    return all((is_contraction(use.owner) or (tag is not None and tag in use.owner.attributes))
               and use.operand_number == len(use.owner.operands) - 1
               for use in init.results[0].uses)


@dataclass(frozen=True)
class Outer:
    """How a contraction is tiled by its forall, and which neighbours are fused into it."""

    contraction_sizes: list[int]  # forall tile sizes on the contraction's loops
    epilogue_sizes: list[int]  # the same tile on the epilogue's (parallel) loops
    tile_shape: tuple[int, ...]  # the shape of one output tile
    epilogue: bool
    init: bool
    greedy: bool = False  # `fusion_plan.fuses_exactly`: one transform.structured.fuse builds it
    contraction: str = ""  # how to match the contraction's tile in the forall (default: names)
    # (convs) the forall iterates filter tiles outermost, rows inside: see conv_common.filter_outer
    # (only where one transform.structured.fuse builds the forall: `greedy`)
    filter_outer: bool = False


def _sizes(sizes: list[int]) -> str:
    return ", ".join(map(str, sizes))


def forall_lines(handle: str, outer: Outer, prefix: str, inner: Callable[[str], Lines],
                 elementwise: Callable[[str, tuple[int, ...], str], Lines]) -> Lines:
    """The forall around contraction `handle`; `inner(tile)` schedules the contraction tile,
    `elementwise(op, tile_shape, prefix)` the epilogue and init tiles."""
    ops: list[str] = []
    init = f"%{prefix}_init"
    if outer.init:
        ops.append(f"{init} = transform.get_producer_of_operand {handle}[2] : ({ANY}) -> {ANY}")
    forall, tiled = f"%{prefix}_forall", f"%{prefix}_tile"
    if outer.greedy and (outer.epilogue or outer.init):
        return _greedy_lines(handle, outer, prefix, inner, elementwise)
    if outer.epilogue:
        ops.append(f"%{prefix}_ep = transform.get_consumers_of_result {handle}[0] "
                   f": ({ANY}) -> {ANY}")
        ops.append(f"%{prefix}_eptile, {forall}0 = transform.structured.tile_using_forall "
                   f"%{prefix}_ep tile_sizes [{_sizes(outer.epilogue_sizes)}] "
                   f": ({ANY}) -> ({ANY}, {ANY})")
        ops.append(f"{tiled}, {forall} = transform.structured.fuse_into_containing_op "
                   f"{handle} into {forall}0 : ({ANY}, {ANY}) -> ({ANY}, {ANY})")
    else:
        ops.append(f"{tiled}, {forall} = transform.structured.tile_using_forall {handle} "
                   f"tile_sizes [{_sizes(outer.contraction_sizes)}] : ({ANY}) -> ({ANY}, {ANY})")
    if outer.init:
        ops.append(f"{init}tile, {forall}1 = transform.structured.fuse_into_containing_op "
                   f"{init} into {forall} : ({ANY}, {ANY}) -> ({ANY}, {ANY})")
    result = Lines(ops)
    result += inner(tiled)
    if outer.init:
        result += elementwise(f"{init}tile", outer.tile_shape, f"{prefix}i")
    if outer.epilogue:
        result += elementwise(f"%{prefix}_eptile", outer.tile_shape, f"{prefix}e")
    return result


def _forall_order(outer: Outer, rank: int) -> str:
    """The interchange of a greedy forall: the filter-tile loop (the 4th) outermost when
    `outer.filter_outer`, else none (the loops in order)."""
    return f"interchange [{_sizes([3, 0, 1, 2, *range(4, rank)])}] " if outer.filter_outer else ""


def _greedy_lines(handle: str, outer: Outer, prefix: str, inner: Callable[[str], Lines],
                  elementwise: Callable[[str, tuple[int, ...], str], Lines]) -> Lines:
    """`forall_lines` with one `transform.structured.fuse {use_forall}` (see the docstring)."""
    forall, tiled, init = f"%{prefix}_forall", f"%{prefix}_tile", f"%{prefix}_inittile"
    if outer.epilogue:
        root, sizes = f"%{prefix}_ep", outer.epilogue_sizes
        ops = [f"{root} = transform.get_consumers_of_result {handle}[0] : ({ANY}) -> {ANY}"]
    else:
        root, sizes, ops = handle, outer.contraction_sizes, []
    ops.append(f"{root}tile, {forall} = transform.structured.fuse {root} "
               f"tile_sizes [{_sizes(sizes)}] {_forall_order(outer, len(sizes))}{{use_forall}} "
               f": ({ANY}) -> ({ANY}, {ANY})")
    names = ", ".join(f'"{name}"' for name in CONTRACTIONS)
    which = outer.contraction or f"ops{{[{names}]}}"
    ops.append(f"{tiled} = transform.structured.match {which} in {forall} "
               f": ({ANY}) -> {ANY}")
    if outer.init:  # (the accumulator is the contraction's last operand)
        ops.append(f"{init} = transform.get_producer_of_operand {tiled}[2] : ({ANY}) -> {ANY}")
    result = Lines(ops)
    result += inner(tiled)
    if outer.init:
        result += elementwise(init, outer.tile_shape, f"{prefix}i")
    if outer.epilogue:
        result += elementwise(f"{root}tile", outer.tile_shape, f"{prefix}e")
    return result


def register_fused_lines(handle: str, outer: Outer, register: list[int], reductions: int,
                         match: str, kernel: Callable[[str, str], tuple[list[str], list[str]]],
                         prefix: str, peel: bool = False) -> Lines:
    """The forall of `outer` built by one `transform.structured.fuse {use_forall}` of the
    epilogue (or of the contraction), then register tiles `register` over the epilogue's
    (parallel) loops, the channel-block loop (the 4th) outermost, with the contraction and
    its init fused into them: the accumulator starts from the init in registers and the
    epilogue runs on it before its one store (where the kernel folds its unit dims, as the
    packed ones do; the unpacked conv's kernel reads its accumulator as [1, ow, f], so its init
    is still stored first). Without an epilogue the contraction is the root and its
    `reductions` loops are left whole. `match` finds the contraction's tile
    (`transform.structured.match {match}`); `kernel(handle, prefix)` schedules it (its ops
    and reduction loops, whose accumulators are hoisted).

    `peel` (a width, the 3rd loop, in two parts: conv.ow_register): the width's register
    tile loop runs over the first part and its last iteration, the second part, is peeled off
    (`transform.loop.peel`; canonicalization then makes both tiles static). A split op
    instead (`transform.structured.split`) leaves each part's destination an extract_slice
    of the contraction, which `fuse` does not fuse through: SqueezeNet's stem (OW = 111 =
    13 x 8 + 7) wrote its bias into the whole output tile and applied its ReLU in a second
    pass before."""
    forall = f"%{prefix}_forall"
    if outer.epilogue:
        root, sizes = f"%{prefix}_ep", outer.epilogue_sizes
        ops = [f"{root} = transform.get_consumers_of_result {handle}[0] : ({ANY}) -> {ANY}"]
    else:
        root, sizes, ops = handle, outer.contraction_sizes, []
        register = register + [0] * reductions
    interchange = [3, 0, 1, 2, *range(4, len(register))]
    ops.append(f"{root}tile, {forall} = transform.structured.fuse {root} "
               f"tile_sizes [{_sizes(sizes)}] {_forall_order(outer, len(sizes))}{{use_forall}} "
               f": ({ANY}) -> ({ANY}, {ANY})")
    loops = [f"%{prefix}_r{i}" for i in range(4)]
    ops.append(f"%{prefix}_reg, {', '.join(loops)} = transform.structured.fuse {root}tile "
               f"tile_sizes [{_sizes(register)}] interchange [{_sizes(interchange)}] "
               f": ({ANY}) -> ({', '.join([ANY] * 5)})")
    if peel:
        for_op = '!transform.op<"scf.for">'
        ops += [f"%{prefix}_wfor = transform.cast {loops[3]} : {ANY} to {for_op}",
                (f"%{prefix}_main, %{prefix}_rest = transform.loop.peel %{prefix}_wfor "
                 f": ({for_op}) -> ({ANY}, {ANY})"),
                f"transform.apply_patterns to {loops[0]} {{",  # (the parts' static sizes)
                "  transform.apply_patterns.canonicalization", f"}} : {ANY}"]
    tiled = f"%{prefix}_kernel"
    ops.append(f"{tiled} = transform.structured.match {match} in {loops[0]} "
               f": ({ANY}) -> {ANY}")
    more, hoisted = kernel(tiled, f"{prefix}k")
    ops += more
    # the init and the epilogue (the generics left in the register tiles: the kernel is vectors
    # now) lose their unit dims too before they are vectorized, so that all three read and write
    # the same rank-reduced [ow, 32] slice: the accumulator's read then folds into the init's
    # value and the init's write into the final one (one store per tile; with the init
    # vectorized as [ow, 1, 32], its store stayed: MobileNetV2 0.97x -> 0.93x, SqueezeNet 1.04x
    # -> 1.00x, ResNet-50 1.07x -> 1.05x onnxruntime, Zen 5, same-process A/B)
    ops += [f"transform.apply_patterns to {loops[0]} {{",
            "  transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices",
            f"}} : {ANY}",
            (f"%{prefix}_unfused = transform.structured.match interface{{LinalgOp}} "
             f"in {loops[0]} : ({ANY}) -> {ANY}"),
            f"transform.structured.vectorize %{prefix}_unfused : {ANY}"]
    return Lines(ops, list(reversed(hoisted)))


def rebuilt(op: ir.Operation, operands: list[ir.Value],
             affine_maps: list[ir.AffineMap]) -> ir.Operation:
    """All-parallel generic `op` rebuilt on `operands` with `affine_maps`, its body cloned."""
    clone = op.clone()  # (the body is moved out of a copy: `op` may have other users)
    new = ir.Operation.create(
        "linalg.generic", results=[operands[-1].type], operands=operands,
        attributes={
            "indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in affine_maps]),
            "iterator_types": ir.ArrayAttr.get(
                [ir.Attribute.parse("#linalg.iterator_type<parallel>")]
                * affine_maps[0].n_dims),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(operands) - 1, 1]),
        }, regions=1)
    move_body(clone, new)
    clone.erase()
    return new


def is_empty(value: ir.Value) -> bool:
    """Whether `value` is a `tensor.empty`'s result."""
    return _is_op(value.owner) and value.owner.name == "tensor.empty"
