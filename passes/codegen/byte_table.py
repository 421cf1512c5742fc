"""Lookups in a 256-entry byte table as AVX-512 VBMI byte permutes (`dlc-qdq-lut`'s tables).

`dlc-qdq-lut` turns a QDQ model's 8-bit -> 8-bit elementwise chains into a gather from a
constant table of 256 bytes indexed by a byte q (its lowering: `tensor.extract table[i]` with
i = safe_index(q), q's bits as an unsigned number); dlc-schedule vectorizes it with the rest of
the fused chain (`predicates.is_byte_lookup`) into a `vector.gather` of N lanes, which LLVM
would lower to N scalar loads. On a CPU with AVX-512 VBMI, `lower_byte_tables` (run by
dlc-lower-vectors, after bufferization) makes it 4 loads of the table (64 bytes each, loop
invariant: hoisted) and, per 64 lanes, two `vpermi2b` (`llvm.x86.avx512.vpermi2var.qi.512`:
bits 0-6 of each index byte select one of 128 table bytes in two registers) and a blend on
bit 7: about 3 instructions per 64 lookups. Elsewhere the gather stays (correct, slower).
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, llvm, vector

from dlc.passes.codegen import target
from dlc.passes.walk import ops_where

INTRINSIC = "llvm.x86.avx512.vpermi2var.qi.512"
LANES = 64  # bytes of a zmm register


def enabled() -> bool:
    """Whether the permutes may be used: the AVX-512 target on a CPU with AVX-512 VBMI."""
    return target.current().name == "avx512" and target.vbmi()


def _is(value: ir.Value, name: str) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == name:
        return owner.operation
    return None


def _splat(value: ir.Value) -> int | bool | None:
    owner = _is(value, "arith.constant")
    if owner is None:
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    one = attr.get_splat_value()
    if isinstance(one, ir.BoolAttr):
        return one.value
    return ir.IntegerAttr(one).value if isinstance(one, ir.IntegerAttr) else None


def byte_index(index: ir.Value) -> ir.Value | None:
    """The 1-D i8 vector q when `index` (a vector of indices) is `indexing.safe_index` of
    index_cast(q) for a table of 256 entries: max(min(q < 0 ? q + 256 : q, 255), 0), which is
    q's bits as an unsigned number; None for anything else."""
    while (owner := _is(index, "vector.broadcast") or _is(index, "vector.shape_cast")):
        index = owner.operands[0]
    top = _is(index, "arith.maxsi")
    low = _is(top.operands[0], "arith.minsi") if top is not None else None
    if low is None or _splat(top.operands[1]) != 0 or _splat(low.operands[1]) != 255:
        return None
    chosen = _is(low.operands[0], "arith.select")
    if chosen is None:
        return None
    test, wrapped, raw = chosen.operands
    compare, add, cast = _is(test, "arith.cmpi"), _is(wrapped, "arith.addi"), \
        _is(raw, "arith.index_cast")
    if compare is None or add is None or cast is None:
        return None
    predicate = ir.IntegerAttr(compare.attributes["predicate"]).value
    if predicate != 2 or compare.operands[0] != raw or _splat(compare.operands[1]) != 0:
        return None  # (2: slt)
    if add.operands[0] != raw or _splat(add.operands[1]) != 256:
        return None
    q = cast.operands[0]
    if not isinstance(q.type, ir.VectorType) or q.type.rank != 1 \
            or str(q.type.element_type) != "i8":
        return None
    return q


def _lookup(tables: list[ir.Value], q: ir.Value) -> ir.Value:
    """table[q's bits] for a vector<64xi8> q: two 128-byte permutes, blended on bit 7."""
    lo = llvm.call_intrinsic(q.type, INTRINSIC, [tables[0], q, tables[1]], [], [])
    hi = llvm.call_intrinsic(q.type, INTRINSIC, [tables[2], q, tables[3]], [], [])
    zero = arith.constant(q.type, ir.DenseElementsAttr.get_splat(
        q.type, ir.IntegerAttr.get(q.type.element_type, 0)))
    return arith.select(arith.cmpi(arith.CmpIPredicate.slt, q, zero), hi, lo)


def _rewrite(gather: ir.Operation) -> bool:
    base, offsets = gather.operands[0], list(gather.operands[1:-3])
    index, mask = gather.operands[-3], gather.operands[-2]
    result = gather.results[0].type
    if str(base.type) != "memref<256xi8>" or len(offsets) != 1:
        return False
    if any(_constant_index(o) != 0 for o in offsets) or _splat(mask) is not True:
        return False
    q = byte_index(index)
    lanes = q.type.shape[0] if q is not None else 0
    if q is None or lanes != int(np.prod(result.shape)):
        return False
    i8 = q.type.element_type
    with ir.InsertionPoint(gather), gather.location:
        full = ir.VectorType.get([LANES], i8)
        tables = [vector.load(full, base, [arith.constant(ir.IndexType.get(), k * LANES)])
                  for k in range(4)]
        parts = []
        for start in range(0, lanes, LANES):
            count = min(LANES, lanes - start)
            if count == LANES and lanes == LANES:
                chunk = q
            elif count == LANES:
                chunk = vector.extract_strided_slice(full, q, [start], [LANES], [1])
            else:  # (fewer lanes: padded with the first one's copies, then dropped)
                chunk = vector.shuffle(q, q, list(range(start, start + count))
                                       + [start] * (LANES - count))
            looked = _lookup(tables, chunk)
            if count < LANES:
                looked = vector.shuffle(looked, looked, list(range(count)))
            parts.append(looked)
        value = parts[0]
        if len(parts) > 1:
            flat = ir.VectorType.get([lanes], i8)
            value = arith.constant(flat, ir.DenseElementsAttr.get_splat(
                flat, ir.IntegerAttr.get(i8, 0)))
            for k, part in enumerate(parts):
                value = vector.insert_strided_slice(part, value, [k * LANES], [1])
        if value.type != result:
            value = vector.shape_cast(result, value)
    gather.results[0].replace_all_uses_with(value)
    gather.erase()
    return True


def _constant_index(value: ir.Value) -> int | None:
    owner = _is(value, "arith.constant")
    if owner is None or not isinstance(owner.attributes["value"], ir.IntegerAttr):
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def lower_byte_tables(module: ir.Operation) -> int:
    """Each `vector.gather` from a 256-byte memref indexed by `byte_index` -> byte permutes
    (where `enabled`). How many."""
    if not enabled():
        return 0
    found = ops_where(module, lambda op: op.name == "vector.gather")
    return sum(_rewrite(op) for op in found)
