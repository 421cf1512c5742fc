"""dlc-lower-copies: a strided `memref.copy` becomes a loop of contiguous row copies.

Bufferization turns every `tensor.insert_slice` (the padded input of a conv or a pooling, each
input of a concat) into a `memref.copy` into a strided subview. `finalize-memref-to-llvm`
lowers a copy to `llvm.memcpy` only when both sides are contiguous; any other copy becomes a
call to the runtime's generic `memrefCopy`, which walks the elements one by one with index
arithmetic: the padding copy of a 3x3 depthwise conv on 1x112x112x32 took 3.9 of its 4.9 ms.

This pass (at -O2/-O3, after bufferization) rewrites each copy that is not contiguous
on both sides but whose innermost dimensions are (or that has a dynamic size, which the runtime
copies element by element even when contiguous; the block is then the static sizes after the
last dynamic one): `scf.for` loops over the leading dimensions
and, inside, one copy of the contiguous inner block (its leading dimensions sliced to 1), which
lowers to `llvm.memcpy`. The inner block is the longest suffix of dimensions that is
row-major contiguous in both layouts; a copy whose innermost stride is not 1 on either side is
left to the runtime. Rows shorter than `min-row` elements are left too (a loop of tiny
memcpys is no faster).

A copy of a dynamic size or stride (in a function compiled for any size) that neither way
makes a memcpy (a dynamic innermost size, a dynamic stride: the padded column pieces of
attention's [S, S] blocks, a partial block of rows) becomes a call of a private function of
ours, one per element type, rank and vector width (`_row_copy`), on views of its operands
without their unit axes: loops over the axes but the last, around a loop of 64-byte vector
loads and stores along the last and a loop of single elements for the rest of the row;
element by element when that axis is not at stride 1 (`_rewrite_rows`). A Softmax over
[1, 12, S, S], S dynamic, against its static compile: S = 100 5.9 -> 2.0-2.35x, S = 40
8.3 -> 2.0-2.35x (the runtime's copy spends a call of `memcpy` and an index update on each
element); loops inline at each copy instead of the calls cost GPT-2's compile 12-19 %.
Static copies are left as above.

A copy onto itself (`same_memory`: both sides reshapes, casts or equal subviews of one view)
is erased. Bufferization leaves one where an op computed in place into a collapsed view of its
destination and the result is inserted back through the expanded view (the blocks of an
elementwise op of a dynamic size: GPT-2's GELU wrote each 64-row block and then memcpy'd it
onto itself, 768 KiB a block).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from dlc.passes.registry import ModulePass, register

# the prefix of the row-copy functions' names: a call of one only reads its first operand and
# writes its second (dlc-plan-buffers plans the buffers it copies as those of a memref.copy)
ROW_COPY = "dlc_copy_rows_"


def contiguous_suffix(shape: list[int], strides: list[int]) -> int:
    """How many innermost dimensions are row-major contiguous (0: the innermost stride is
    not 1)."""
    expected, count = 1, 0
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1 and stride != expected:
            break
        expected *= size
        count += 1
    return count


def _layout(memref_type: ir.MemRefType) -> list[int] | None:
    """The strides of `memref_type`, None when one is dynamic at a dimension of a size
    other than 1 (a unit dimension's stride is never used: 0 stands for it)."""
    strides, _ = memref_type.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if any(stride == dynamic and size != 1
           for size, stride in zip(memref_type.shape, strides, strict=True)):
        return None
    return [0 if stride == dynamic else stride for stride in strides]


def _unit_dynamic_stride(memref_type: ir.MemRefType) -> bool:
    strides, _ = memref_type.get_strides_and_offset()
    return ir.ShapedType.get_dynamic_stride_or_offset() in strides


def inner_block(op: ir.Operation) -> int | None:
    """The number of inner dimensions copied whole per iteration, or None (leave `op`)."""
    source, target = (ir.MemRefType(v.type) for v in op.operands)
    if source.rank < 2:
        return None
    shape = list(source.shape)
    layouts = [_layout(source), _layout(target)]
    if any(layout is None for layout in layouts):
        return None
    # (a dynamic size, in a function compiled with one, is looped over: the block is made
    # of the static sizes after the last dynamic one; a wholly contiguous copy of dynamic
    # size is not a memcpy either: the runtime copies it element by element)
    dynamic = [axis for axis, size in enumerate(shape) if ir.ShapedType.is_dynamic_size(size)]
    static = shape[dynamic[-1] + 1:] if dynamic else shape
    block = min(contiguous_suffix(static, layout[len(shape) - len(static):])
                for layout in layouts)
    if block == 0 or (block == source.rank and not dynamic):
        return None  # (not row-contiguous: runtime copy; wholly contiguous: memcpy already)
    return block


# views that keep the elements of their source in the same (row-major) order: a copy between
# two of them of one memref, at the same shape, copies each element onto itself
_RESHAPES = ("memref.collapse_shape", "memref.expand_shape", "memref.cast", "memref.reshape")


def _view_key(value: ir.Value) -> tuple:
    """What `value` views, through reshapes and subviews: (the base value) or (the subview's
    source key, static offsets/sizes/strides, dynamic operands)."""
    while True:
        owner = value.owner
        if not isinstance(owner, ir.Operation | ir.OpView):
            return (value,)
        owner = owner.operation
        if owner.name in _RESHAPES:
            value = owner.operands[0]
            continue
        if owner.name == "memref.subview":
            return (_view_key(owner.operands[0]),
                    *(str(owner.attributes[name]) for name in (
                        "static_offsets", "static_sizes", "static_strides")),
                    *owner.operands[1:])
        return (value,)


def same_memory(op: ir.Operation) -> bool:
    """Whether copy `op` copies each element onto itself (`_view_key`: its source and target
    are reshapes of one view; the copy's shapes are equal, so element i is at one linear
    position of both)."""
    return _view_key(op.operands[0]) == _view_key(op.operands[1])


def _runtime_copy(memref_type: ir.MemRefType) -> bool:
    """Whether a copy from or to `memref_type` is the runtime's (finalize-memref-to-llvm
    copies with `llvm.memcpy` only between identity layouts or static contiguous ones)."""
    if memref_type.affine_map == ir.AffineMap.get_identity(memref_type.rank):
        return False
    if not memref_type.has_static_shape:
        return True
    strides, _ = memref_type.get_strides_and_offset()
    return contiguous_suffix(list(memref_type.shape), strides) != memref_type.rank


def row_axis(op: ir.Operation) -> int | None:
    """The axis along which `_rewrite_rows` copies a copy of a dynamic size or stride (a
    function compiled for any size) that would be the runtime's: its last axis of a size
    other than 1; None to leave `op` (a static copy: `inner_block`'s rows or the runtime's,
    as in every static function; a copy `llvm.memcpy` does; no axis of a size other than
    1)."""
    types = [ir.MemRefType(v.type) for v in op.operands]
    if not any(_runtime_copy(t) for t in types) or any(t.memory_space for t in types):
        return None  # (a memcpy; another memory space: a device's copies are not ours)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    shape = list(types[0].shape)
    if all(t.has_static_shape and dynamic not in [
            stride for size, stride in zip(shape, t.get_strides_and_offset()[0], strict=True)
            if size != 1] for t in types):
        return None
    axes = [axis for axis, size in enumerate(shape) if size != 1]
    return axes[-1] if axes else None


def _lanes(element: ir.Type, unit_stride: bool) -> int:
    """The elements of one vector load and store of a row copy (64 bytes): 1 (element by
    element) when the rows are not at stride 1 on both sides or the element is not an
    integer or float of whole bytes."""
    if isinstance(element, ir.IntegerType):
        bits = ir.IntegerType(element).width
    elif isinstance(element, ir.FloatType):
        bits = ir.FloatType(element).width
    else:
        return 1
    return max(1, 512 // bits) if unit_stride and not bits % 8 else 1


def _rewrite_rows(op: ir.Operation, axis: int, helpers: dict[str, func.FuncOp]) -> None:
    """Replace copy `op` by a call of the row-copy function of its element type and number
    of axes of a size other than 1 (`_row_copy`), on views of its operands without the
    others (an axis of size 1 after `axis` would make rows of one element). One function
    per kind, not loops at each copy: LLVM compiles it once (inline loops at each copy cost
    GPT-2's one-layer compile 12-19 %)."""
    with op.location:
        source, target = op.operands
        memref_type = ir.MemRefType(source.type)
        shape = list(memref_type.shape)
        keep = [at for at, extent in enumerate(shape) if extent != 1]
        element = memref_type.element_type
        unit = all(ir.MemRefType(v.type).get_strides_and_offset()[0][axis] == 1
                   for v in op.operands)
        lanes = _lanes(element, unit)
        index = ir.IndexType.get()
        dynamic = ir.ShapedType.get_dynamic_size()
        stride = ir.ShapedType.get_dynamic_stride_or_offset()
        kind = ir.MemRefType.get([dynamic] * len(keep), element,
                                 layout=ir.StridedLayoutAttr.get(stride, [stride] * (
                                     len(keep) - 1) + [1 if lanes > 1 else stride]))
        callee = _row_copy(op, kind, lanes, helpers)
        with ir.InsertionPoint(op):
            sizes = [memref.dim(source, arith.ConstantOp(index, at).result)
                     for at, extent in enumerate(shape) if ir.ShapedType.is_dynamic_size(extent)
                     ] if len(keep) < len(shape) else []
            views = []
            for value in (source, target):
                view_type = ir.MemRefType(value.type)
                if len(keep) < len(shape):
                    strides, offset = view_type.get_strides_and_offset()
                    reduced = ir.MemRefType.get(
                        [shape[at] for at in keep], element, layout=ir.StridedLayoutAttr.get(
                            offset, [strides[at] for at in keep]),
                        memory_space=view_type.memory_space)
                    value = memref.SubViewOp(reduced, value, [], sizes, [], [0] * len(shape),
                                             shape, [1] * len(shape)).result
                views.append(memref.CastOp(kind, value).result)
            func.CallOp([], ir.FlatSymbolRefAttr.get(callee.name.value), views)
        op.erase()


def _row_copy(op: ir.Operation, kind: ir.MemRefType, lanes: int,
              helpers: dict[str, func.FuncOp]) -> func.FuncOp:
    """The private function copying one memref of type `kind` (every size dynamic) into
    another: loops over its axes but the last, around a loop of `lanes`-element vector loads
    and stores along the last and a loop of single elements for the rest of the row."""
    name = re.sub(r"\W", "_", f"{ROW_COPY}{kind.element_type}_{kind.rank}d_{lanes}")
    if name in helpers:
        return helpers[name]
    module = op.parent
    while module.name != "builtin.module":
        module = module.parent
    index = ir.IndexType.get()
    location = ir.Location.name("dlc-lower-copies")
    with location, ir.InsertionPoint(module.regions[0].blocks[0]):
        helper = func.FuncOp(name, ([kind, kind], []), visibility="private")
        helper.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
        # (not inlined into the kernels that call it: compiled once, as the point of it)
        helper.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
    helpers[name] = helper
    entry = helper.add_entry_block()
    source, target = entry.arguments
    with location, ir.InsertionPoint(entry):
        def const(value: int) -> ir.Value:
            return arith.ConstantOp(index, value).result

        sizes = [memref.dim(source, const(at)) for at in range(kind.rank)]
        zero, one = const(0), const(1)
        step = const(lanes) if lanes > 1 else one
        whole = arith.muli(arith.divui(sizes[-1], step), step) if lanes > 1 else zero
        row_type = ir.VectorType.get([lanes], kind.element_type)
        point = ir.InsertionPoint(entry)
        indices = []
        for at in range(kind.rank - 1):
            with point:
                loop = scf.ForOp(zero, sizes[at], one)
                with ir.InsertionPoint(loop.body):
                    scf.YieldOp([])
            indices.append(loop.induction_variable)
            point = ir.InsertionPoint.at_block_terminator(loop.body)
        for start, stop, stride in ((zero, whole, step), (whole, sizes[-1], one)):
            if start is stop:
                continue  # (lanes == 1: the element loop only)
            with point:
                loop = scf.ForOp(start, stop, stride)
                with ir.InsertionPoint(loop.body):
                    at = [*indices, loop.induction_variable]
                    if stride is not one:
                        vector.store(vector.load(row_type, source, at), target, at)
                    else:
                        memref.store(memref.load(source, at), target, at)
                    scf.YieldOp([])
        func.ReturnOp([])
    return helper


def _row_elements(op: ir.Operation, block: int) -> int:
    row = 1
    for size in list(ir.MemRefType(op.operands[0].type).shape)[-block:]:
        row *= size
    return row


def _rewrite(op: ir.Operation, block: int) -> None:
    source, target = op.operands
    shape = list(ir.MemRefType(source.type).shape)
    outer = len(shape) - block
    index = ir.IndexType.get()
    with ir.InsertionPoint(op), op.location:
        zero = arith.ConstantOp(index, 0).result
        one = arith.ConstantOp(index, 1).result
        ivs: list[ir.Value] = []
        point = ir.InsertionPoint(op)
        for axis, size in enumerate(shape[:outer]):
            with point:
                bound = memref.dim(source, arith.ConstantOp(index, axis).result) \
                    if ir.ShapedType.is_dynamic_size(size) else arith.ConstantOp(index, size).result
                loop = scf.ForOp(zero, bound, one)
            point = ir.InsertionPoint(loop.body)
            with point:
                scf.YieldOp([])
            point = ir.InsertionPoint.at_block_terminator(loop.body)
            ivs.append(loop.induction_variable)
        with point:
            offsets = ivs + [0] * block
            sizes = [1] * outer + shape[outer:]
            strides = [1] * len(shape)
            if any(_unit_dynamic_stride(v.type) for v in (source, target)):
                rows = [_inner(v, ivs, shape[outer:]) for v in (source, target)]
            else:
                rows = [memref.subview(v, offsets, sizes, strides) for v in (source, target)]
            memref.CopyOp(rows[0], rows[1])
    op.erase()


def _inner(value: ir.Value, ivs: list[ir.Value], block: list[int]) -> ir.Value:
    """The contiguous block of `value` at `ivs` (its leading dimensions), rank-reduced to the
    block's own dimensions: a memref with a dynamic stride at a unit dimension (the slice of
    a [1, ?, 2304] tensor, in a function of a dynamic size) keeps it in a subview that keeps
    the dimension, and a copy of that is the runtime's element by element."""
    memref_type = ir.MemRefType(value.type)
    layout = _layout(memref_type)[-len(block):]
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    result = ir.MemRefType.get(block, memref_type.element_type,
                               layout=ir.StridedLayoutAttr.get(dynamic, layout),
                               memory_space=memref_type.memory_space)
    rank = memref_type.rank
    return memref.SubViewOp(result, value, ivs, [], [],
                            [dynamic] * len(ivs) + [0] * len(block),
                            [1] * len(ivs) + block, [1] * rank).result


@register
@dataclass(frozen=True)
class LowerCopies(ModulePass):
    """Rewrite strided memref.copy ops as loops of contiguous row copies (llvm.memcpy)."""

    name = "dlc-lower-copies"
    min_row: int = 8

    def run(self, module: ir.Operation) -> None:
        found: list[tuple[ir.Operation, int]] = []
        rows: list[tuple[ir.Operation, int]] = []
        erased: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "memref.copy" and same_memory(op):
                erased.append(op)
            elif op.name == "memref.copy":
                block = inner_block(op)
                if block is not None and _row_elements(op, block) >= self.min_row:
                    found.append((op, block))
                elif (axis := row_axis(op)) is not None:
                    rows.append((op, axis))
            return ir.WalkResult.ADVANCE

        for top in module.regions[0].blocks[0].operations:
            if isinstance(top, func.FuncOp):
                top.operation.walk(visit)
        for op in erased:
            op.erase()
        for op, block in found:
            _rewrite(op, block)
        helpers: dict[str, func.FuncOp] = {}
        for op, axis in rows:
            _rewrite_rows(op, axis, helpers)
