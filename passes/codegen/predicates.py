"""What the schedule families ask of a linalg op (its indexing maps, the shape of its body, its
window attributes, its constant filter), and the reassociation attribute their reshapes take."""

from __future__ import annotations

from mlir import ir


def maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def is_identity(affine_map: ir.AffineMap) -> bool:
    return affine_map == ir.AffineMap.get_identity(affine_map.n_dims)


def ordered_projection(affine_map: ir.AffineMap) -> bool:
    """The map selects loop dims in increasing order (identity or broadcast, no transpose)."""
    dims = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return False
        dims.append(ir.AffineDimExpr(expr).position)
    return dims == sorted(set(dims))


def strided_slice(value: ir.Value) -> bool:
    """Whether `value` is a `tensor.extract_slice` whose elements are not one contiguous run
    of its source's (row-major): a slice of the channels of an NHWC tensor, say (DenseNet's
    concat prefixes). Flattening such a value to 1-D copies it when it is bufferized."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "tensor.extract_slice":
        return False
    source = list(owner.operands[0].type.shape)
    sizes = list(value.type.shape)
    if len(sizes) != len(source):  # (rank-reducing: its unit dims dropped)
        return True
    if any(int(s) != 1 for s in ir.DenseI64ArrayAttr(owner.attributes["static_strides"])):
        return True
    cut = [i for i, (size, whole) in enumerate(zip(sizes, source)) if size != whole]
    # contiguous: one dim cut, every dim before it of size 1 (those after it are whole)
    return bool(cut) and (len(cut) > 1 or any(sizes[i] != 1 for i in range(cut[0])))


def body_is_plain(op: ir.Operation) -> bool:
    """Only arith and math ops in the body (no linalg.index, no tensor.extract gathers but
    lookups in a byte table, `is_byte_lookup`)."""
    for inner in op.regions[0].blocks[0].operations:
        name = inner.operation.name
        if not (name.startswith(("arith.", "math.")) or name == "linalg.yield"
                or is_byte_lookup(inner.operation)):
            return False
    return True


def is_byte_lookup(op: ir.Operation) -> bool:
    """A `tensor.extract` from a constant table of 256 bytes (`dlc-qdq-lut`'s gathers): it
    vectorizes to a `vector.gather`, which dlc-lower-vectors makes byte permutes
    (`codegen/byte_table.py`)."""
    if op.name != "tensor.extract" or len(op.operands) != 2:
        return False
    table = op.operands[0]
    owner = table.owner
    return isinstance(owner, ir.Operation | ir.OpView) and owner.name == "arith.constant" \
        and str(table.type) in ("tensor<256xi8>",)


def window(op: ir.Operation, name: str) -> list[int]:
    """A conv's `strides` or `dilations` ([1, 1] when absent)."""
    if name not in op.attributes:
        return [1, 1]
    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]


def reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    """The reassociation attribute of a tensor.expand_shape / collapse_shape."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in group])
                             for group in groups])


def constant_filter(op: ir.Operation) -> ir.DenseElementsAttr | None:
    """The value of a convolution's filter (operand 1) when an arith.constant produces it."""
    owner = op.operands[1].owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return attr if isinstance(attr, ir.DenseElementsAttr) else None
