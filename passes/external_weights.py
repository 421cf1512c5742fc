"""dlc-external-weights: large constant globals leave the object code; they are bound at load.

A model's weights reach the `llvm` stage as `llvm.mlir.global private constant` ops holding
dense elements. Translated to LLVM IR they are copied into LLVM constants, and LLVM's code
generator writes a float constant one element at a time into the object file, which the JIT
copies once more: for BERT-base (435 MB of weights) that was half of the 31 s of machine code
and four copies of the weights at the compile's peak (issue 20). This pass (on the llvm
dialect, just before the JIT: `compile_imported` runs it on its own module after the `llvm`
snapshot, so `ir("llvm")`, `dlc-opt` and exports keep the weights in their globals) makes each
constant global of at least `min-bytes` bytes a mutable zero-initialized one (LLVM puts it in
`.bss`: no bytes in the object) and moves its value, in order, into the module attribute
`dlc.weights` (an array of dense elements). One external global, `_mlir_dlc_weights`, holds
their addresses in the same order: the loader (`bind`) reads it, from the JIT
(`raw_lookup("dlc_weights")`) or from a shared object, and copies each value into place.

The globals stay private: only the table names them, and since their addresses escape into
it, LLVM cannot assume that they stay zero. (Mutable rather than constant memory did not slow
ResNet-50 down: its kernels keep weights in registers, not behind loads LLVM would hoist.)
Globals under `min-bytes` stay constants that LLVM may fold. Element types that are not whole
bytes (i1) or that numpy cannot view are left alone.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import llvm

from dlc.passes.registry import ModulePass, register

TABLE = "_mlir_dlc_weights"  # (ExecutionEngine.raw_lookup adds the `_mlir_` prefix)
TABLE_LOOKUP = TABLE.removeprefix("_mlir_")
ATTRIBUTE = "dlc.weights"


def _zero(tensor_type: ir.RankedTensorType) -> ir.Attribute | None:
    """A splat zero of `tensor_type` (whole-byte integers and floats only), else None."""
    element = tensor_type.element_type
    if isinstance(element, ir.IntegerType) and element.width % 8 == 0:
        return ir.DenseElementsAttr.get_splat(tensor_type, ir.IntegerAttr.get(element, 0))
    if isinstance(element, ir.FloatType) and element.width % 8 == 0:
        return ir.DenseElementsAttr.get_splat(tensor_type, ir.FloatAttr.get(element, 0.0))
    return None


def _bytes(value: ir.Attribute) -> int | None:
    """The size of a non-splat dense value numpy can view without a copy, else None."""
    if not isinstance(value, ir.DenseElementsAttr) or value.is_splat:
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, RuntimeError):  # (an element type numpy has no view of)
        return None
    element = ir.ShapedType(value.type).element_type
    if array.dtype.itemsize * 8 != getattr(element, "width", 0):
        return None
    return array.nbytes


def externalize(module: ir.Operation, min_bytes: int) -> int:
    """Make the constant globals of at least min_bytes zero-initialized and mutable, their
    values the module's `dlc.weights`, their addresses the table `_mlir_dlc_weights`; how many."""
    body = module.regions[0].blocks[0]
    moved: list[tuple[str, ir.Attribute]] = []
    for op in body.operations:
        op = op.operation
        if op.name != "llvm.mlir.global" or "constant" not in op.attributes \
                or "value" not in op.attributes:
            continue
        value = op.attributes["value"]
        size = _bytes(value)
        with op.location:
            zero = _zero(ir.RankedTensorType(value.type)) if size is not None else None
        if size is None or size < min_bytes or zero is None:
            continue
        op.attributes["value"] = zero
        del op.attributes["constant"]
        moved.append((ir.StringAttr(op.attributes["sym_name"]).value, value))
    if not moved:
        return 0
    pointer = llvm.PointerType.get()
    table_type = ir.Type.parse(f"!llvm.array<{len(moved)} x ptr>")
    with ir.InsertionPoint(body), module.location:
        table = llvm.GlobalOp(table_type, TABLE, ir.Attribute.parse("#llvm.linkage<external>"),
                              alignment=8)
        init = table.regions[0].blocks.append()
        with ir.InsertionPoint(init):
            array = llvm.UndefOp(table_type).result
            for i, (name, _) in enumerate(moved):
                address = llvm.AddressOfOp(pointer, ir.FlatSymbolRefAttr.get(name)).result
                array = llvm.InsertValueOp(array, address, [i]).result
            llvm.ReturnOp(arg=array)
    module.attributes[ATTRIBUTE] = ir.ArrayAttr.get([value for _, value in moved])
    return len(moved)


def take(module: ir.Operation) -> list[np.ndarray]:
    """The values `externalize` moved, in table order (views of the context's attributes: the
    arrays keep it alive); the module attribute is removed (LLVM does not see it)."""
    if ATTRIBUTE not in module.attributes:
        return []
    values = [np.asarray(ir.DenseElementsAttr(v)) for v in ir.ArrayAttr(module.attributes[ATTRIBUTE])]
    del module.attributes[ATTRIBUTE]
    return values


def bind(table: int | None, weights: Sequence[np.ndarray],
         fill: Callable[[int, np.ndarray], None] | None = None) -> None:
    """Copy each weight to the address at the same position of the table at `table` (the
    address of `_mlir_dlc_weights` in loaded code); `fill(address, weight)` replaces the copy."""
    if not weights:
        return
    if not table:
        raise RuntimeError(f"the compiled module has no weight table ({TABLE})")
    addresses = (ctypes.c_void_p * len(weights)).from_address(table)
    for address, weight in zip(addresses, weights, strict=True):
        if fill is not None:
            fill(address, weight)
        else:
            ctypes.memmove(address, weight.ctypes.data, weight.nbytes)


@register
@dataclass(frozen=True)
class ExternalWeights(ModulePass):
    """Move large constant globals' values out of the llvm dialect module, into the module
    attribute dlc.weights, bound at load time through the table _mlir_dlc_weights."""

    name = "dlc-external-weights"
    min_bytes: int = 16384

    def run(self, module: ir.Operation) -> None:
        externalize(module, self.min_bytes)
