"""dlc-profile: time every top-level op group of `main`; and the naive-path check.

The per-op profiler (`CompiledModel.profile`, `dlc profile`) compiles a model once more with
the module attribute `dlc.profile` set. Then:

- `dlc-schedule` records which schedule family took each op (`record_families`: the module
  attribute `dlc.profile_families`, node name -> family), before it rewrites them;
- `dlc-profile`, added at the end of the bufferized stage, cuts the top-level ops of `main`
  into segments (consecutive work ops at the same location: a scheduled tile loop nest with
  its fused epilogue, a naive linalg op, a copy) and stores a timestamp (`rtclock`, from the
  MLIR C runner utils the JIT loads) before each segment and before the return into the
  public global `_mlir_dlc_profile` (f64 seconds); the runtime reads it after each call.
  What each segment is (its ONNX node names, its ops, its families, whether a linalg op of
  it is still at the top level, i.e. runs as naive loops) is the module attribute
  `dlc.profile_segments` (one JSON string per segment).

Without `dlc.profile` nothing of this runs: the IR of a normal compile is unchanged.

`naive_ops(module, min_volume)` (run by `dlc-schedule` after scheduling) finds the large ops
left on the naive loop path: top-level linalg ops with a reduction (a contraction, a conv, a
pool, a reduction) of at least `min_volume` iterations, and elementwise generics (all loops
parallel, a body of arith and math ops only: the elementwise family's form, which vectorizes)
of at least `min_volume` elements (a squeeze-and-excitation product of 1x28x28x120, 94,080
elements, ran as naive loops unnamed: LLVM vectorizes such a loop's innermost dimension at
best, on one thread); dlc-schedule warns about each with a
`NaivePathWarning` naming the op, its node and its shape.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from math import prod

from mlir import ir
from mlir.dialects import arith, func, memref
from mlir.passmanager import PassManager

from dlc.dialects.ops import shape_str
from dlc.passes.registry import ModulePass, register

MODE = "dlc.profile"
FAMILIES = "dlc.profile_families"
SEGMENTS = "dlc.profile_segments"
BUFFER = "_mlir_dlc_profile"  # (the runtime's raw_lookup("dlc_profile") adds the `_mlir_`)
CLOCK = "rtclock"  # seconds as f64 (libmlir_c_runner_utils)

# top-level ops that do no work of their own: they stay in the segment before them
_CHEAP = {
    "arith.constant", "ub.poison", "memref.get_global", "memref.view", "memref.subview",
    "memref.alloc", "memref.alloca", "memref.dealloc", "memref.expand_shape",
    "memref.collapse_shape", "memref.cast", "memref.reinterpret_cast",
    "memref.extract_strided_metadata", "memref.assume_alignment", "func.return",
}
_COMPUTING = ("arith.", "math.", "vector.fma", "vector.contract", "vector.reduction",
              "vector.multi_reduction", "linalg.")
# linalg ops whose naive loops are no performance cliff (no reduction, memory-bound)
_NOT_WORK = ("linalg.fill", "linalg.copy", "linalg.transpose", "linalg.broadcast",
             "linalg.yield", "linalg.index")


class NaivePathWarning(UserWarning):
    """A large op (above dlc-schedule's thresholds) runs as naive loops: a performance cliff."""


def node_names(location: ir.Location) -> list[str]:
    """The node names in a location: loc("a"), loc(fused["a", "b"]), loc("a"(...))."""
    text = str(location)
    names, i = [], 0
    while (start := text.find('"', i)) >= 0:
        end = text.find('"', start + 1)
        if end < 0:
            break
        names.append(text[start + 1:end])
        i = end + 1
    return [n for n in dict.fromkeys(names) if n]


def _functions(module: ir.Operation) -> list[ir.Operation]:
    return [op for op in module.regions[0].blocks[0].operations
            if isinstance(op, func.FuncOp) and op.regions[0].blocks]


def _family_name(family: object) -> str:
    return getattr(family, "__name__", str(family)).rsplit(".", 1)[-1]


def record_families(module: ir.Operation, found: list[tuple]) -> None:
    """In a profile compile (`dlc.profile` set), record each scheduled op's family by node."""
    if MODE not in module.attributes:
        return
    families: dict[str, str] = {}
    for op, family, _ in found:
        for name in node_names(op.location):
            families.setdefault(name, _family_name(family))
    module.attributes[FAMILIES] = ir.StringAttr.get(json.dumps(families))


# ---------------------------------------------------------------------------- naive-path check


def _is_structured(op: ir.Operation) -> bool:
    name = op.name
    return name.startswith("linalg.") and name not in _NOT_WORK and bool(op.regions)


def _loop_sizes(op: ir.Operation) -> tuple[list[int], list[str]] | None:
    """The static iteration space of a linalg.generic (sizes, iterator kinds), or None."""
    if "indexing_maps" not in op.attributes or "iterator_types" not in op.attributes:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    kinds = ["reduction" if "reduction" in str(i) else "parallel"
             for i in ir.ArrayAttr(op.attributes["iterator_types"])]
    sizes = [0] * len(kinds)
    for value, affine_map in zip(op.operands, maps):
        if not isinstance(value.type, ir.ShapedType) or not value.type.has_static_shape:
            return None
        for extent, expr in zip(value.type.shape, affine_map.results):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[ir.AffineDimExpr(expr).position] = extent
    return sizes, kinds


@dataclass(frozen=True)
class NaiveOp:
    """A large op left on the naive loop path."""

    op: str
    nodes: tuple[str, ...]
    shapes: tuple[str, ...]
    volume: int
    element_type: str
    elementwise: bool = False  # all loops parallel, arith/math body (the elementwise family's)

    def message(self, min_volume: int) -> str:
        nodes = ", ".join(f"'{n}'" for n in self.nodes) or "(no node name)"
        why = (f"its element type is {self.element_type} (the schedules take f32)"
               if self.element_type != "f32" and not self.elementwise else
               "no schedule family matches its form (layout, indexing maps or body), or its "
               "schedule failed")
        return (f"{self.op} of node {nodes} ({' x '.join(self.shapes)}, {self.volume:,} "
                f"iterations, at least {min_volume:,}) runs as naive loops: {why}; a "
                f"performance cliff (`dlc profile` shows its time)")


def naive_ops(module: ir.Operation, min_volume: int) -> list[NaiveOp]:
    """The top-level linalg ops with a reduction, or elementwise generics (`_elementwise`),
    of at least `min_volume` iterations."""
    tops = [op for f in _functions(module) for op in f.regions[0].blocks[0].operations]
    chosen = [i for i, op in enumerate(tops)
              if _is_structured(op.operation) and _bound(op.operation) >= min_volume]
    if not chosen:
        return []
    spaces = {i: _loop_sizes(tops[i].operation) for i in chosen}
    if any(space is None for space in spaces.values()):  # named ops: their generic form's
        spaces = _generalized_spaces(module, chosen, len(tops))
    found = []
    for i in chosen:
        op, space = tops[i], spaces[i]
        elementwise = space is not None and "reduction" not in space[1]
        if space is None or elementwise and not _elementwise(op.operation):
            continue
        if not elementwise and _vectorized_naive(op.operation, space[1]):
            continue
        volume = prod(space[0])
        if volume < min_volume:
            continue
        shapes = tuple("x".join(str(d) for d in v.type.shape) or "scalar"
                       for v in op.operation.operands if isinstance(v.type, ir.ShapedType))
        element = str(op.operation.results[0].type.element_type) if op.operation.results else "?"
        found.append(NaiveOp(op.operation.name, tuple(node_names(op.location)), shapes, volume,
                             element, elementwise))
    return found


def _vectorized_naive(op: ir.Operation, kinds: list[str]) -> bool:
    """A reduction over outer axes whose innermost loop is parallel and reads and writes every
    operand contiguously, with an arith/math body (a mean over tokens or over an NHWC image:
    `x.mean(1)` of [1, 49, 768], Sequencer's [1, 16, 16, 384] -> [1, 384]): its naive loop
    nest accumulates whole rows, which LLVM vectorizes along that innermost loop (0.13-0.5x
    onnxruntime's time in the third sweep's repros), so it is no performance cliff."""
    if kinds[-1] != "parallel" or not _elementwise(op):
        return False
    innermost = len(kinds) - 1
    for attr in ir.ArrayAttr(op.attributes["indexing_maps"]):
        results = list(ir.AffineMapAttr(attr).value.results)
        if not results or not isinstance(results[-1], ir.AffineDimExpr):
            return False
        if ir.AffineDimExpr(results[-1]).position != innermost:
            return False
    return True


def _elementwise(op: ir.Operation) -> bool:
    """A linalg.generic whose body is arith and math ops only (no gather, no linalg.index)."""
    if op.name != "linalg.generic":
        return False
    return all(inner.operation.name.startswith(("arith.", "math.", "linalg.yield"))
               for inner in op.regions[0].blocks[0].operations)


def _bound(op: ir.Operation) -> int:
    """An upper bound of the op's iterations (its result's elements times its largest
    operand's: a matmul's M*N*K, a conv's outputs times C*KH*KW are below it), so that only
    ops that may be large are looked at closely."""
    sizes = [prod(v.type.shape) for v in op.operands
             if isinstance(v.type, ir.ShapedType) and v.type.has_static_shape]
    results = [prod(r.type.shape) for r in op.results
               if isinstance(r.type, ir.ShapedType) and r.type.has_static_shape]
    return max(results or sizes or [0]) * max(sizes or [1])


def _generalized_spaces(module: ir.Operation, chosen: list[int], count: int) -> dict:
    """The iteration spaces of the top-level ops at `chosen`, read on a generalized clone."""
    clone = module.clone()
    try:
        PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(clone)
        tops = [op for f in _functions(clone) for op in f.regions[0].blocks[0].operations]
        if len(tops) != count:
            return dict.fromkeys(chosen)
        return {i: _loop_sizes(tops[i].operation) for i in chosen}
    finally:
        clone.erase()


def warn_naive(module: ir.Operation, min_volume: int) -> None:
    """Warn (NaivePathWarning) about each large op left on the naive path, and each of a
    dynamic size (whose size is unknown: any may be large)."""
    for naive in naive_ops(module, min_volume):
        warnings.warn(naive.message(min_volume), NaivePathWarning, stacklevel=2)
    for op in dynamic_naive_ops(module):
        nodes = ", ".join(f"'{n}'" for n in node_names(op.location)) or "(no node name)"
        shapes = " x ".join(shape_str(v.type.shape) for v in op.operands
                            if isinstance(v.type, ir.ShapedType))
        warnings.warn(f"{op.name} of node {nodes} ({shapes}) has a dynamic size (?) that "
                      "dlc-block-dynamic did not cut into static blocks (two reductions over "
                      "it, or the size inside an index expression): it runs as naive loops, a performance cliff "
                      "when the size is large", NaivePathWarning, stacklevel=2)


def dynamic_naive_ops(module: ir.Operation) -> list[ir.Operation]:
    """The top-level linalg ops of a function compiled with a dynamic size that still have
    it (no schedule family takes them: the naive path)."""
    found = []
    for function in _functions(module):
        for op in function.regions[0].blocks[0].operations:
            op = op.operation
            shaped = [v.type for v in [*op.operands, *op.results]
                      if isinstance(v.type, ir.ShapedType)]
            if _is_structured(op) and op.name != "linalg.fill" and any(
                    not t.has_static_shape for t in shaped) and not any(
                    d == 0 for t in shaped for d in t.shape):  # (size 0: no work)
                found.append(op)
    return found


# ---------------------------------------------------------------------------- instrumentation


def _main(module: ir.Operation) -> ir.Operation | None:
    functions = _functions(module)
    for function in functions:
        if "llvm.emit_c_interface" in function.attributes:
            return function
    return functions[0] if functions else None


def _segments(block: ir.Block) -> list[list[ir.Operation]]:
    """The work ops of `block`, cut where the location changes."""
    segments: list[list[ir.Operation]] = []
    last = None
    for op in block.operations:
        if op.operation.name in _CHEAP:
            continue
        where = str(op.location)
        if segments and where == last:
            segments[-1].append(op)
        else:
            segments.append([op])
        last = where
    return segments


def _describe(ops: list[ir.Operation], families: dict[str, str], outer: set[str]) -> dict:
    """A segment's node names (its ops' and those nested in them, first seen first), its
    top-level op kinds, families and whether a linalg op of it runs as naive loops."""
    names: dict[str, None] = {}

    def visit(inner: ir.Operation) -> ir.WalkResult:
        # (the names of computing ops only: a CSE'd constant or a hoisted read keeps the
        # location of another node)
        if inner.name.startswith(_COMPUTING) and inner.name != "arith.constant":
            names.update(dict.fromkeys(node_names(inner.location)))
        return ir.WalkResult.ADVANCE

    for op in ops:
        names.update(dict.fromkeys(node_names(op.location)))
        if not op.operation.name.startswith("linalg."):  # (a loop nest: what it computes)
            op.operation.walk(visit)
    for name in outer:  # (the graph's own name: ops the lowering made without a node)
        names.pop(name, None)
    kinds = list(dict.fromkeys(op.operation.name for op in ops))
    naive = [op.operation.name for op in ops if _is_structured(op.operation)]
    family = list(dict.fromkeys(families[n] for n in names if n in families))
    return {"nodes": list(names), "ops": kinds, "families": family, "naive": naive}


@register
@dataclass(frozen=True)
class Profile(ModulePass):
    """Time each top-level op group of main (a timestamp before each into _mlir_dlc_profile)."""

    name = "dlc-profile"

    def run(self, module: ir.Operation) -> None:
        main = _main(module)
        if main is None:
            return
        families = {}
        if FAMILIES in module.attributes:
            families = json.loads(ir.StringAttr(module.attributes[FAMILIES]).value)
        block = main.regions[0].blocks[0]
        segments = [s for s in _segments(block) if s[0].operation.name != "func.return"]
        outer = set(node_names(main.location))
        labels = [json.dumps(_describe(s, families, outer)) for s in segments]
        f64, index = ir.F64Type.get(), ir.IndexType.get()
        buffer_type = ir.MemRefType.get([len(segments) + 1], f64, loc=module.location)
        body = module.regions[0].blocks[0]
        with ir.InsertionPoint(body), module.location:
            clock = func.FuncOp(CLOCK, ([], [f64]), visibility="private")
            memref.GlobalOp(sym_name=BUFFER, type_=ir.TypeAttr.get(buffer_type),
                            initial_value=ir.UnitAttr.get())
        del clock
        stops = [s[0] for s in segments] + [block.operations[len(block.operations) - 1]]
        for position, op in enumerate(stops):
            with ir.InsertionPoint(op), op.location:
                now = func.CallOp([f64], ir.FlatSymbolRefAttr.get(CLOCK), []).result
                buffer = memref.get_global(buffer_type, BUFFER)
                memref.store(now, buffer, [arith.ConstantOp(index, position).result])
        module.attributes[SEGMENTS] = ir.ArrayAttr.get([ir.StringAttr.get(t) for t in labels])


def segments(module: ir.Operation) -> list[dict]:
    """What `dlc-profile` recorded about each segment of `module` (empty when it did not run)."""
    if SEGMENTS not in module.attributes:
        return []
    return [json.loads(ir.StringAttr(a).value) for a in ir.ArrayAttr(module.attributes[SEGMENTS])]
