"""dlc-pad-in-place: a padded buffer is created before the producer of its interior.

The lowering pads a conv's or a pool's input as `insert_slice %x into fill(empty)`, the fill
and its empty created right before the conv. `eliminate-empty-tensors` (the first step of
bufferization at -O2) can make the producer of %x write straight into the padded buffer's
interior, but only where the padded buffer dominates the `tensor.empty` the producer's result
starts from; otherwise the interior is copied, a whole extra pass over the activation (1.7 ms
of a 2.5 ms stride-2 depthwise conv on 112x112x96).

This pass (end of the linalg stage, -O2/-O3) moves each such fill, with its `tensor.empty`,
right before the `tensor.empty` at the root of %x's destination chain (through linalg ops,
`scf.for`/`scf.forall` results and insert_slices, in the same block): the padded buffer is then
live from the producer on, no longer, and the copy is gone after bufferization.

Destination chains through a reshape (the packed convs of codegen/packed_conv.py compute a
[N, H, W, F/32, 32] view of their NHWC result and collapse it) need two more steps, since
eliminate-empty-tensors follows same-type chains only: `uncollapse` roots each collapsed chain
in an empty of the collapsed (NHWC) shape, viewed through an expand_shape, so that a returned
result is its own out-parameter after bufferization; `write_into_destinations` then does
eliminate-empty-tensors' work for them: the root becomes the slice of the padded buffer or
concat the result is inserted into (the concat's empty and earlier inserts moved up where
needed). Identical destinations CSE shared between chains (one fill for two convs of one
shape) are cloned first (`own_chain`).

Last, each padded buffer's fill is cut down to its border (`fill_borders`): the interior is
overwritten whole, so the fill of the whole buffer was one more pass over the activation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import func, linalg, tensor

from dlc.passes.registry import ModulePass, register


def _is_op(owner: object) -> bool:
    return isinstance(owner, ir.Operation | ir.OpView)


def _top_level(function: ir.Operation, name: str) -> list[ir.Operation]:
    """The ops named `name` in the function's body (a snapshot: the caller rewrites them)."""
    return [op.operation for op in function.regions[0].blocks[0].operations
            if op.operation.name == name]


REPLACES_EMPTY = "dlc.replaces_empty"  # an interior extract_slice standing for a tensor.empty


def root_empty(value: ir.Value) -> ir.Operation | None:
    """The tensor.empty whose buffer `value` is computed in, following destinations."""
    found = root_use(value)
    return found[0] if found is not None else None


def root_use(value: ir.Value) -> tuple[ir.Operation, ir.Operation, int] | None:
    """(the tensor.empty at the root of `value`'s destination chain, the op using it in the
    chain, the operand number of that use)."""
    steps = _chain(value)
    if not steps:
        return None
    user, number = steps[-1]
    return user.operands[number].owner.operation, user, number


def _step(value: ir.Value) -> tuple[ir.Operation, int] | None:
    """(the op computing `value` into a destination, the operand number of that destination);
    None when `value` is not computed into one (or comes from a tensor.empty)."""
    owner = value.owner
    if not _is_op(owner):
        return None
    owner = owner.operation
    index = ir.OpResult(value).result_number
    if owner.name == "scf.for":
        return owner, 3 + index
    if owner.name == "scf.forall" or (owner.name.startswith("linalg.")
                                      and len(owner.regions) == 1):
        return owner, len(owner.operands) - len(owner.results) + index  # (the inits last)
    if owner.name == "tensor.insert_slice":
        return owner, 1
    if owner.name in ("tensor.collapse_shape", "tensor.expand_shape"):
        return owner, 0
    return None


def _is_empty(value: ir.Value) -> bool:
    return _is_op(value.owner) and value.owner.operation.name == "tensor.empty"


def _chain(value: ir.Value) -> list[tuple[ir.Operation, int]] | None:
    """The (op, destination operand number) steps from `value` back to the tensor.empty it is
    computed in; None when it is not."""
    steps: list[tuple[ir.Operation, int]] = []
    for _ in range(64):
        if _is_empty(value):
            return steps or None
        step = _step(value)
        if step is None:
            return None
        steps.append(step)
        value = step[0].operands[step[1]]
    return None


def _fill_of(insert: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """(fill, its empty) when the insert's destination is a fill whose users are all
    insert_slices into it: a `linalg.fill`, a generic without inputs (a generalized fill) or
    the loop nest dlc-schedule vectorized either into."""
    fill = insert.operands[1].owner
    if not _is_op(fill) or fill.name not in ("linalg.fill", "linalg.generic", "scf.for"):
        return None
    if fill.name == "linalg.generic" and len(fill.operands) != 1:
        return None
    if len(fill.results) != 1:
        return None
    for use in fill.results[0].uses:
        if use.owner.name != "tensor.insert_slice" or use.operand_number != 1:
            return None
    empty = root_empty(fill.results[0])
    if empty is None or len(list(empty.results[0].uses)) != 1:
        return None
    return fill.operation, empty


def _own_fill(insert: ir.Operation, fill: ir.Operation,
              empty: ir.Operation) -> tuple[ir.Operation, ir.Operation]:
    """A copy of the fill (and its empty) for `insert` alone, right before it. CSE merges the
    identical padded buffers of several convs into one fill; bufferization then copies the
    filled buffer for each of them, and no producer can write into a shared buffer."""
    point = ir.InsertionPoint(insert)
    new_empty = empty.clone(ip=point)
    new_fill = fill.clone(ip=point)
    for index, operand in enumerate(fill.operands):
        if operand == empty.results[0]:
            new_fill.operands[index] = new_empty.results[0]
    insert.operands[1] = new_fill.results[0]
    return new_fill, new_empty


_CLONABLE = ("tensor.empty", "linalg.fill", "tensor.expand_shape", "tensor.collapse_shape")


def own_chain(value: ir.Value) -> bool:
    """Make `value`'s destination chain its own: CSE shares identical empties and fills
    between the chains of several ops (two convs of one shape start from one fill); each
    shared destination on the chain is cloned for this chain (cheap pure ops only). False
    when a shared destination cannot be cloned (the chain is left as it was)."""
    for _ in range(64):
        if _is_empty(value):
            return True
        step = _step(value)
        if step is None:
            return False
        op, number = step
        destination = op.operands[number]
        if len(list(destination.uses)) > 1:
            producer = destination.owner
            if not _is_op(producer) or producer.operation.name not in _CLONABLE:
                return False
            clone = producer.operation.clone(ip=ir.InsertionPoint(op))
            op.operands[number] = clone.results[0]
        value = op.operands[number]
    return False


def _reshaped(value: ir.Value) -> bool:
    """A collapse or expand on `value`'s destination chain (eliminate-empty-tensors stops
    there: it follows same-type destinations only)."""
    return any(op.name in ("tensor.collapse_shape", "tensor.expand_shape")
               for op, _ in _chain(value) or [])


def write_into_destinations(function: ir.Operation) -> int:
    """Where a destination chain holds a collapse or expand (eliminate-empty-tensors stops at
    those: it follows same-type destinations only), do its work: the chain's root empty
    becomes the slice of the destination its result is inserted into (a padded buffer, a
    concat), so that the producer writes there in place. How many were rewritten."""
    block = function.regions[0].blocks[0]
    done = 0
    for insert in _top_level(function, "tensor.insert_slice"):
        source, destination = insert.operands[0], insert.operands[1]
        if not _reshaped(source):
            continue

        def interior(user: ir.Operation, insert=insert, source=source,
                     destination=destination) -> ir.Value | None:
            if not _make_available(destination, user):
                return None
            extract = tensor.ExtractSliceOp(
                source.type, destination, [], [], [], insert.attributes["static_offsets"],
                insert.attributes["static_sizes"], insert.attributes["static_strides"])
            extract.operation.attributes[REPLACES_EMPTY] = ir.UnitAttr.get()
            return extract.result

        done += _reroot(source, source.type, block, interior)
    return done


def _reroot(value: ir.Value, root_type: ir.Type, block: ir.Block,
            build: Callable[[ir.Operation], ir.Value | None]) -> bool:
    """Replace the root empty of `value`'s destination chain (made this chain's own first)
    by `build(user)`, built right before the op using it, when the root has `root_type`, the
    user is in `block` and `build` gives a value (None: left as it was). The root is erased
    when nothing else uses it. Whether the chain was re-rooted."""
    if not own_chain(value):
        return False
    found = root_use(value)
    if found is None:
        return False
    root, user, number = found
    if root.results[0].type != root_type or user.block != block:
        return False
    with ir.InsertionPoint(user), root.location:
        replacement = build(user)
    if replacement is None:
        return False
    user.operands[number] = replacement
    if not list(root.results[0].uses):
        root.erase()
    return True


def _make_available(value: ir.Value, op: ir.Operation, depth: int = 8) -> bool:
    """Whether `value` is defined before `op` in its block, after moving its producer there
    if that is an operand-free tensor.empty or an insert_slice (a concat's chain) whose
    operands can be made available likewise (both pure: moving them up changes nothing)."""
    if _defined_before(value, op):
        return True
    owner = value.owner
    if depth == 0 or not _is_op(owner) or owner.operation.block != op.block:
        return False
    owner = owner.operation
    if owner.name == "tensor.empty" and not list(owner.operands):
        owner.move_before(op)
        return True
    if owner.name != "tensor.insert_slice":
        return False
    if not all(_make_available(v, op, depth - 1) for v in owner.operands):
        return False
    owner.move_before(op)
    return True


def _defined_before(value: ir.Value, op: ir.Operation) -> bool:
    owner = value.owner
    if not _is_op(owner):
        return True  # (a block argument of the function)
    owner = owner.operation
    return owner.block == op.block and owner.is_before_in_block(op)


def hoist(function: ir.Operation) -> int:
    """Give each padded insert its own fill, moved before the interior's producer; how many
    fills were moved."""
    block = function.regions[0].blocks[0]
    moved = 0
    shared: list[tuple[ir.Operation, ir.Operation]] = []
    for insert in _top_level(function, "tensor.insert_slice"):
        found = _fill_of(insert)
        if found is None:
            continue
        fill, empty = found
        if len(list(fill.results[0].uses)) > 1:
            if not any(fill == seen for seen, _ in shared):
                shared.append((fill, empty))
            fill, empty = _own_fill(insert, fill, empty)
        root = root_empty(insert.operands[0])
        if root is None or root.block != block or not root.is_before_in_block(empty):
            continue  # (no producer to write into it, or already before it)
        if not all(_defined_before(v, root) for v in fill.operands if v != empty.results[0]):
            continue
        empty.move_before(root)
        fill.move_before(root)
        moved += 1
    for fill, empty in shared:
        if not list(fill.results[0].uses):
            fill.erase()
            empty.erase()
    return moved


def uncollapse(function: ir.Operation) -> int:
    """Root the destination chain of each collapsed tensor in an empty of the collapsed shape:
    `collapse_shape(... empty(5-D))` becomes `collapse_shape(... expand_shape(empty(4-D)))`
    (packed_conv's [N, H, W, F/32, 32] outputs, seen as NHWC by their users). Bufferization
    then folds the collapse of the expand away: the 4-D buffer is the one a padded consumer's
    interior replaces (eliminate-empty-tensors matches types) or a function result hoisted to
    an out-parameter; otherwise either was copied. How many roots were rewritten."""
    block = function.regions[0].blocks[0]
    done = 0
    for collapse in _top_level(function, "tensor.collapse_shape"):
        source, collapsed = collapse.operands[0], collapse.results[0].type
        if not collapsed.has_static_shape:
            continue  # (a dynamic size: its empty would need the size's value)

        def expanded(user: ir.Operation, collapse=collapse, source=source,
                     collapsed=collapsed) -> ir.Value:
            flat = tensor.EmptyOp(list(collapsed.shape), collapsed.element_type).result
            return tensor.ExpandShapeOp(source.type, flat, collapse.attributes["reassociation"],
                                        [], list(source.type.shape)).result

        done += _reroot(source, source.type, block, expanded)  # (same-shape chains only)
    return done


def _static(op: ir.Operation, name: str) -> list[int] | None:
    values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
    return None if any(v == ir.ShapedType.get_dynamic_size() for v in values) else values


def _interior(fill: ir.Operation) -> tuple[list[int], list[int]] | None:
    """(offsets, sizes) of the one padded insert_slice into `fill`'s result (unit strides,
    static), when every other use extracts that same interior in place of a tensor.empty
    (`write_into_destinations`: what it holds is never read). Any other use may read the
    filled interior (a split accumulator's part): None."""
    regions, inserts = set(), 0
    for use in fill.results[0].uses:
        user = use.owner
        if user.name == "tensor.insert_slice" and use.operand_number == 1:
            inserts += 1
        elif user.name != "tensor.extract_slice" or REPLACES_EMPTY not in user.attributes:
            return None
        offsets, sizes = _static(user, "static_offsets"), _static(user, "static_sizes")
        if offsets is None or sizes is None or set(_static(user, "static_strides") or [0]) != {1}:
            return None
        regions.add((tuple(offsets), tuple(sizes)))
    if inserts != 1 or len(regions) != 1:
        return None
    offsets, sizes = regions.pop()
    return list(offsets), list(sizes)


def border_slabs(shape: list[int], offsets: list[int],
                 sizes: list[int]) -> list[tuple[list[int], list[int]]]:
    """(offsets, sizes) of the slabs covering `shape` outside the box (offsets, sizes): per
    dim, the part before and after the box, within the box along the dims before it and
    whole along those after it (for an NHWC padding: top and bottom rows, then the left and
    right columns of the interior rows)."""
    slabs = []
    for d, (extent, start, size) in enumerate(zip(shape, offsets, sizes, strict=True)):
        for begin, length in ((0, start), (start + size, extent - start - size)):
            if length > 0:
                slabs.append((offsets[:d] + [begin] + [0] * (len(shape) - d - 1),
                              sizes[:d] + [length] + shape[d + 1:]))
    return slabs


BORDER_MIN = 512 * 1024  # bytes of a padded buffer from which only its border is filled: each
# border fill is 4 loop nests for LLVM (all of ResNet-50's: +3-4 s of code generation), the
# whole buffer's fill one memset (~25 us per 512 KiB)


def fill_borders(function: ir.Operation, border_min: int = BORDER_MIN) -> int:
    """A padded buffer's fill (`insert_slice %x into fill(empty)`) writes only the border:
    the interior is overwritten whole by %x, so filling it first was one more pass over the
    activation (17 MiB of memset per MobileNetV2 call). The fill becomes fills of the border
    slabs (`border_slabs`), each inserted into the empty in turn, for buffers of `border_min`
    bytes or more. How many were rewritten."""
    done = 0
    for fill in _top_level(function, "linalg.fill"):
        if len(fill.results) != 1:  # (a fill of a buffer)
            continue
        box = _interior(fill)
        destination = fill.operands[1]
        if box is None or not _is_empty(destination):
            continue
        tensor_type = destination.type
        if np.prod(tensor_type.shape) * tensor_type.element_type.width // 8 < border_min:
            continue
        slabs = border_slabs(list(tensor_type.shape), *box)
        with ir.InsertionPoint(fill), fill.location:
            value = destination
            for offsets, sizes in slabs:
                empty = tensor.EmptyOp(sizes, tensor_type.element_type).result
                filled = linalg.fill(fill.operands[0], outs=[empty])
                value = tensor.InsertSliceOp(
                    filled if isinstance(filled, ir.Value) else filled.results[0], value,
                    [], [], [], offsets, sizes, [1] * len(sizes)).result
        fill.results[0].replace_all_uses_with(value)
        fill.erase()
        done += 1
    return done


@register
@dataclass(frozen=True)
class PadInPlace(ModulePass):
    """Move the fill of a padded buffer before the producer of its interior (no copy); write
    reshaped destination chains into their padded buffer, concat or result in place."""

    name = "dlc-pad-in-place"
    border_min: int = BORDER_MIN  # bytes of a padded buffer from which only its border is filled

    def run(self, module: ir.Operation) -> None:
        for top in module.regions[0].blocks[0].operations:
            if isinstance(top, func.FuncOp) and top.regions[0].blocks:
                uncollapse(top.operation)
                hoist(top.operation)
                write_into_destinations(top.operation)
                fill_borders(top.operation, self.border_min)
