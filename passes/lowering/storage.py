"""Storage types: what dlc-to-linalg does with bool and unsigned tensors.

linalg and arith work on signless integers, and a memref of i1 cannot be lowered to LLVM.
So before its patterns run, dlc-to-linalg records each dlc op's element types as the program
wrote them (`dlc.types`, read back with `source_types`) and retypes every value to its storage
type: `i1` (bool) -> `i8` holding 0 or 1, as numpy stores bool; `uiN` -> `iN`, same bits.
Patterns choose signed or unsigned arithmetic from `source_types`, not from the storage types.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import func

from dlc.dialects import op_def

TYPES_ATTR = "dlc.types"


def storage_element(element: ir.Type) -> ir.Type:
    if not isinstance(element, ir.IntegerType):
        return element
    if element.width == 1:
        return ir.IntegerType.get_signless(8)
    if element.is_unsigned or element.is_signed:
        return ir.IntegerType.get_signless(element.width)
    return element


def storage_type(t: ir.Type) -> ir.Type:
    if not isinstance(t, ir.RankedTensorType):
        return t
    element = storage_element(t.element_type)
    if element == t.element_type:
        return t
    return ir.RankedTensorType.get(list(t.shape), element, loc=ir.Location.unknown())


def source_types(op: ir.Operation | ir.OpView) -> tuple[list[ir.Type], list[ir.Type]]:
    """The (operand, result) element types of a dlc op as written before retyping."""
    op = op.operation
    if TYPES_ATTR in op.attributes:
        recorded = [ir.TypeAttr(a).value for a in ir.ArrayAttr(op.attributes[TYPES_ATTR])]
        count = len(op.operands)
        return recorded[:count], recorded[count:]
    return ([v.type.element_type for v in op.operands],
            [r.type.element_type for r in op.results])


def storage_elements(attr: ir.DenseElementsAttr) -> ir.DenseElementsAttr:
    """A constant's value with its storage element type (bool -> i8, uiN -> iN)."""
    t = attr.type
    target = storage_type(t)
    if target == t:
        return attr
    if attr.is_splat:  # (np.array of a splat attribute reads past its single value)
        value = np.array(ir.DenseElementsAttr.get_splat(
            ir.RankedTensorType.get([1], t.element_type), attr.get_splat_value())).reshape(())
        value = int(value.astype(np.int8) if value.dtype == np.bool_ else value.astype(np.uint64)
                    .astype(np.int64) if value.dtype.kind == "u" else value)
        return ir.DenseElementsAttr.get_splat(target, ir.IntegerAttr.get(
            target.element_type, _wrap(value, target.element_type.width)))
    array = np.array(attr)
    array = array.astype(np.int8) if array.dtype == np.bool_ else \
        array.view(np.dtype(f"i{array.dtype.itemsize}"))
    return ir.DenseElementsAttr.get(np.ascontiguousarray(array).reshape(array.shape), type=target)


def _wrap(value: int, width: int) -> int:
    """`value` as a signed integer of `width` bits (two's complement)."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >= 1 << (width - 1) else value


def retype_to_storage(module: ir.Operation) -> None:
    """Record each dlc op's element types, then give every value its storage type."""
    for op in module.regions[0].blocks[0].operations:
        if not isinstance(op, func.FuncOp) or not op.regions[0].blocks:
            continue
        dlc_ops = [inner.operation for block in op.regions[0].blocks
                   for inner in block.operations if op_def(inner) is not None]
        for inner in dlc_ops:  # record every op's types before any value is retyped
            elements = [v.type.element_type for v in (*inner.operands, *inner.results)]
            inner.attributes[TYPES_ATTR] = ir.ArrayAttr.get([ir.TypeAttr.get(t) for t in elements])
        for block in op.regions[0].blocks:
            for argument in block.arguments:
                argument.set_type(storage_type(argument.type))
        for inner in dlc_ops:
            for result in inner.results:
                result.set_type(storage_type(result.type))
        function_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [storage_type(t) for t in function_type.inputs],
            [storage_type(t) for t in function_type.results]))
