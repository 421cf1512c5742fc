"""dlc-external-weights: large constant globals leave the object code; they are bound at load.

A model's weights reach the `llvm` stage as `llvm.mlir.global private constant` ops holding
dense elements. Translated to LLVM IR they are copied into LLVM constants, and LLVM's code
generator writes a float constant one element at a time into the object file, which the JIT
copies once more: for BERT-base (435 MB of weights) that was half of the 31 s of machine code
and four copies of the weights at the compile's peak (issue 20). This pass (on the llvm
dialect, just before code generation: `compile_imported` runs it on its own module after the
`llvm` snapshot, so `ir("llvm")`, `dlc-opt` and exports keep the weights in their globals)
makes each constant global of at least `min-bytes` bytes a pointer: the global holds the
address of the weight's data (zero until bound), each function that used the data's address
loads it from there (an invariant load), and the value moves, in order, into the module
attribute `dlc.weights` (an array of dense elements). One external global,
`_mlir_dlc_weights`, holds the addresses of these pointers in the same order: the loader
(`bind`) reads it, from the JIT (`raw_lookup("dlc_weights")`) or from a shared object, and
points each at its weight's memory.

The weights' memory is not the compiled code's: `bind` takes it from a process-wide table of
read-only arrays keyed by their bytes' sha256 (`share`), so that the specializations of one
model (a decoder's prefill chunk and decode step, the shapes of a `DynamicModel`), and two
compiles of it, hold one copy of each weight; an array lives as long as a compiled function
points at it. (Before, each compiled model's .bss held a copy: a decoder's two specializations
held its weights twice; the copy per model is gone too.)

The code reads every weight from 64-byte-aligned memory (a cache line: `MIN_ALIGNMENT`). A
compile binds the values' own storage in its MLIR context (`take`'s views, read-only; each
keeps the context alive, which the compiled model keeps anyway for `ir()`) where that storage
is so aligned, and a 64-byte-aligned copy of the others (MLIR aligns it to 8 or 16 bytes: most
weights of a model). The price is memory: the context's storage and the copy (GPT-2 small:
1044 -> 1432 MiB resident after a compile). Aligned is faster where the CPU splits a vector
load across two cache lines: on the Intel Xeon (AVX-512, 2 MiB L2) of issue 25, GPT-2's
static compile at 128 tokens ran 192.3 ms with its weights at offsets 0, 16, 32 and 48 from a
line, 176.9 ms aligned (-8 %; onnxruntime 179.5 ms), a GPT-2 MLP block 10.5-10.9 -> 9.3-9.5
ms (three alternated runs each); on the AMD Zen 4 of earlier sessions BERT-base, GPT-2 and
ResNet-50 ran as fast at offsets 4, 16 and 32 as at 0, so the copy was not made then. A model
that lets its IR go (`CompiledModel.release_ir`: the specializations of a DynamicModel) first
makes its weights its own (`own`: aligned copies, which then become the shared ones), so that
no context outlives its IR; the disk cache's mapped weights.bin is aligned.

The pointers stay private: only the table names them, and since their addresses escape into
it, LLVM cannot assume that they stay zero. Globals under `min-bytes` stay constants that LLVM
may fold. Element types that are not whole bytes (i1) or that numpy cannot view are left
alone.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.passes.registry import ModulePass, register
from dlc.passes.walk import ops_where

TABLE = "_mlir_dlc_weights"  # (ExecutionEngine.raw_lookup adds the `_mlir_` prefix)
TABLE_LOOKUP = TABLE.removeprefix("_mlir_")
ATTRIBUTE = "dlc.weights"


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
    """Make the constant globals of at least min_bytes pointers to their data (loaded where
    their address was taken), their values the module's `dlc.weights`, the pointers' addresses
    the table `_mlir_dlc_weights`; how many."""
    body = module.regions[0].blocks[0]
    moved: list[tuple[str, ir.Attribute]] = []
    from mlir.dialects import llvm  # (not imported by a cache hit: 30 ms)

    pointer = llvm.PointerType.get()
    for op in list(body.operations):
        op = op.operation
        if op.name != "llvm.mlir.global" or "constant" not in op.attributes \
                or "value" not in op.attributes:
            continue
        value = op.attributes["value"]
        size = _bytes(value)
        if size is None or size < min_bytes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        with ir.InsertionPoint(op), op.location:
            slot = llvm.GlobalOp(pointer, name, ir.Attribute.parse("#llvm.linkage<private>"),
                                 alignment=8)
            with ir.InsertionPoint(slot.regions[0].blocks.append()):
                llvm.ReturnOp(arg=llvm.ZeroOp(pointer).result)
        op.erase()
        moved.append((name, value))
    if not moved:
        return 0
    _load_through_slots(module, {name for name, _ in moved})
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


def _load_through_slots(module: ir.Operation, names: set[str]) -> None:
    """Each `llvm.mlir.addressof @name` in a function (the data's address, before) becomes the
    address loaded from the pointer global @name."""
    found = ops_where(module, lambda op: op.name == "llvm.mlir.addressof" and
                      ir.FlatSymbolRefAttr(op.attributes["global_name"]).value in names)
    from mlir.dialects import llvm  # (not imported by a cache hit: 30 ms)

    pointer = llvm.PointerType.get()
    for op in found:
        with ir.InsertionPoint.after(op), op.location:
            loaded = llvm.LoadOp(pointer, op.result, alignment=8, invariant=True)
        op.result.replace_all_uses_except(loaded.result, loaded.operation)


class Taken(list):
    """The weights `take` returned (views of the context's storage), whose sha256 digests (the
    keys of the process's shared copies, `share`) a thread computes meanwhile, while LLVM
    generates the code (hashlib releases the GIL); `shared` waits for them."""

    def __init__(self, values: Sequence[np.ndarray]):
        super().__init__(values)
        self._digests: list[bytes] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._hash, name="dlc-hash-weights",
                                        daemon=True)
        self._thread.start()

    def _hash(self) -> None:
        try:
            self._digests = [hashlib.sha256(_raw(weight)).digest() for weight in self]
        except BaseException as error:  # noqa: BLE001 (raised again by `shared`, in the caller's thread)
            self._error = error

    def shared(self) -> list[np.ndarray]:
        """The process's shared array of each weight, in order: one another compiled function
        holds, else the weight's own storage (borrowed: `share(..., adopt=True)`)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return [share(weight, digest, adopt=True)
                for weight, digest in zip(self, self._digests or [], strict=True)]


def take(module: ir.Operation) -> list[np.ndarray]:
    """The values `externalize` moved, in table order (read-only views of the context's
    attributes: the arrays keep it alive), their digests computed meanwhile by a thread
    (`Taken`); the module attribute is removed (LLVM does not see it)."""
    if ATTRIBUTE not in module.attributes:
        return []
    values = [np.asarray(ir.DenseElementsAttr(v)) for v in ir.ArrayAttr(module.attributes[ATTRIBUTE])]
    del module.attributes[ATTRIBUTE]
    return Taken(values)


_SHARED: weakref.WeakValueDictionary[tuple[bytes, int], np.ndarray] = \
    weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()
ALIGNMENT = 64  # (dlc's own copies)
MIN_ALIGNMENT = 64  # an array adopted as it is must be aligned to this (a cache line: above)


def aligned_empty(nbytes: int) -> np.ndarray:
    """Uninitialized bytes ([nbytes] uint8) whose first byte is ALIGNMENT-aligned."""
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes]


def _raw(weight: np.ndarray) -> memoryview:
    """The bytes of `weight` (C-contiguous: a view; else a contiguous copy)."""
    return memoryview(np.ascontiguousarray(weight)).cast("B")


def _copy(data: memoryview) -> np.ndarray:
    copy = aligned_empty(data.nbytes)
    copy[:] = np.frombuffer(data, np.uint8)
    copy.flags.writeable = False
    return copy


def share(weight: np.ndarray, digest: bytes | None = None, adopt: bool = False
          ) -> np.ndarray:
    """The process's read-only copy of `weight`'s bytes ([nbytes] uint8): the same array for
    every weight of the same bytes (`digest`: their sha256, when known) while some compiled
    function holds it. `adopt`: `weight` itself (its bytes, viewed as uint8: the caller may
    not write it afterwards) becomes that copy when there is none yet, if it is C-contiguous
    and aligned to MIN_ALIGNMENT; else (or without `adopt`) a 64-byte-aligned copy does."""
    data = _raw(weight)
    key = (digest or hashlib.sha256(data).digest(), data.nbytes)
    with _SHARED_LOCK:
        held = _SHARED.get(key)
        if held is not None:
            return held
        if adopt and weight.flags.c_contiguous and \
                weight.ctypes.data % MIN_ALIGNMENT == 0:
            copy = weight.reshape(-1).view(np.uint8)
            copy.flags.writeable = False
        else:
            copy = _copy(data)
        _SHARED[key] = copy
        return copy


def shared_bytes() -> int:
    """The bytes of the weights compiled functions of this process hold (each once)."""
    with _SHARED_LOCK:
        return sum(array.nbytes for array in _SHARED.values())


def digests_of(arrays: Sequence[np.ndarray]) -> list[bytes | None]:
    """For each array, the sha256 under which it is the process's shared copy (`share`: the
    digest of its bytes), else None (the disk cache's save hashes no weight twice)."""
    with _SHARED_LOCK:
        known = {id(held): digest for (digest, _), held in _SHARED.items()}
    return [known.get(id(array)) for array in arrays]


def pins_context(array: np.ndarray) -> bool:
    """Whether `array` views an MLIR attribute's storage (it keeps that context alive)."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return type(base).__module__.startswith("mlir.")


def _bind_slots(table: int, held: Sequence[np.ndarray]) -> None:
    slots = (ctypes.c_void_p * len(held)).from_address(table)
    for slot, array in zip(slots, held, strict=True):
        ctypes.c_void_p.from_address(slot).value = array.ctypes.data


def bind(table: int | None, weights: Sequence[np.ndarray],
         digests: Sequence[bytes] | None = None, adopt: bool = False) -> list[np.ndarray]:
    """Point each pointer of the table at `table` (the address of `_mlir_dlc_weights` in
    loaded code) at the shared copy (`share`, `adopt` passed on) of the weight at the same
    position; the arrays the code now reads, which its function must keep. `take`'s weights
    are bound to their own storage where no other function shares them (`Taken.shared`)."""
    if not weights:
        return []
    if not table:
        raise RuntimeError(f"the compiled module has no weight table ({TABLE})")
    if isinstance(weights, Taken) and digests is None and not adopt:
        held = weights.shared()
    else:
        held = [share(w, digests[i] if digests else None, adopt) for i, w in enumerate(weights)]
    _bind_slots(table, held)
    return held


def own(table: int | None, held: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The weights a function reads (`held`, bound at `table`) with each that views an MLIR
    context's storage (`pins_context`) replaced by a 64-byte-aligned copy, the pointers moved
    to the copies: the context can then be freed. Each copy becomes the shared one of its
    bytes, so functions bound later share it (not the view); functions that already hold the
    view keep it. Called before any call of the function (its code must not be running)."""
    if not held or not any(pins_context(array) for array in held):
        return list(held)
    if not table:
        raise RuntimeError(f"the compiled module has no weight table ({TABLE})")
    owned = []
    for array, digest in zip(held, digests_of(held), strict=True):
        if not pins_context(array):
            owned.append(array)
            continue
        # (not the shared one: hashed to find or make that)
        key = (digest or hashlib.sha256(_raw(array)).digest(), array.nbytes)
        with _SHARED_LOCK:
            current = _SHARED.get(key)
        if current is None or pins_context(current):
            copy = _copy(_raw(array))
            with _SHARED_LOCK:  # (another thread may have made one meanwhile)
                current = _SHARED.get(key)
                if current is None or pins_context(current):
                    _SHARED[key] = current = copy
        owned.append(current)
    _bind_slots(table, owned)
    return owned


@register
@dataclass(frozen=True)
class ExternalWeights(ModulePass):
    """Move large constant globals' values out of the llvm dialect module, into the module
    attribute dlc.weights, bound at load time through the table _mlir_dlc_weights."""

    name = "dlc-external-weights"
    min_bytes: int = 16384

    def run(self, module: ir.Operation) -> None:
        externalize(module, self.min_bytes)
