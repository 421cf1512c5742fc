"""dlc-gpu-split-reductions: long reductions split in two, for the GPU.

The GPU mapping gives each output of a linalg op one thread, its reduction a serial loop of
dependent loads. Two shapes of that are slow:

- a row reduction with few outputs (a layer norm's mean over [128, 768]: 128 threads reading
  768 elements each, 768 floats apart, with thousands of threads idle), and
- a long contraction (BERT's FFN output, [128, 3072] x [3072, 768]: 98,304 threads, each a
  chain of 3,072 dependent loads: 1 ms on an H200).

This pass rewrites such a reduction (on tensors, linalg stage), K = R * K1, as a partial
reduction with R times more threads and chains R times shorter, and a short final one:

    out[p] = combine_k f(x[p, k])
      ->  partial[., p] = combine_k1 f(x[p, k(k1, r)])      (init: combine's neutral element)
          out[p]        = combine_r partial[., p]            (init: the op's own)

*interleaved* (k = k1 * R + r, r the innermost parallel loop: neighbouring threads read
neighbouring addresses) when the reduction runs along the inputs' last dimension and no input
is contiguous along the op's innermost parallel loop (row reductions), else *chunked*
(k = r * K1 + k1, r the outermost loop: the threads' order, hence coalescing, is the op's
own; matmuls). R is 32, 16 or 8 for interleaved splits of at most `max-outputs` outputs; for
chunked ones, the power of two that brings chains near `chain` iterations (at most 32).

Applies to a linalg op (generic or named: matmul, batch_matmul) with one result, one
reduction loop and plain-index maps -- with `convolutions=true` also to ops whose longest
reduction loop every input reads as a plain index (a convolution's input channels; its window
loops stay whole in the partial: checked on the CPU JIT, not yet on a GPU, hence opt-in) --,
and a body ending in `combine(value, out)`
with `combine` associative and commutative (add, mul, max, min: floats are re-associated, as
every parallel reduction does); max and min need the op's init to be a `linalg.fill` (their
partials start from it: they are idempotent). K must be a multiple of R, and the serial work
of one output (every reduction loop) at least `min-size`. Row reductions split interleaved
only when they have one reduction loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.passes.registry import ModulePass, register
from dlc.passes.walk import move_body

# combiner op -> its neutral element (None: idempotent, partials start from the op's fill)
_COMBINERS: dict[str, float | None] = {
    "arith.addf": 0.0, "arith.addi": 0, "arith.mulf": 1.0, "arith.muli": 1,
    "arith.maximumf": None, "arith.minimumf": None, "arith.maxnumf": None,
    "arith.minnumf": None, "arith.maxsi": None, "arith.minsi": None, "arith.maxui": None,
    "arith.minui": None,
}
_PARTS = (32, 16, 8)
_THREADS = 1 << 18  # (a chunked split keeps at least this many threads busy)


def _owner(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _maps(op: ir.Operation) -> list[ir.AffineMap] | None:
    """The indexing maps of a linalg structured op (named ops' implicit ones included)."""
    maps = linalg.get_indexing_maps(op)
    return None if maps is None else [ir.AffineMapAttr(a).value for a in maps]


def _dims(affine_map: ir.AffineMap) -> list[int] | None:
    """The loop of each result of a projected-permutation map, else None."""
    found = []
    for result in affine_map.results:
        if not isinstance(result, ir.AffineDimExpr):
            return None
        found.append(result.position)
    return found


def _operands(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    operands = list(op.operands)
    if "operandSegmentSizes" in op.attributes:
        count = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[0]
        return operands[:count], operands[count:]
    return operands[:-1], operands[-1:]


def _fill_scalar(value: ir.Value) -> ir.Value | None:
    fill = _owner(value)
    if fill is None or fill.name != "linalg.fill":
        return None
    return fill.operands[0]


@dataclass
class _Plan:
    op: ir.Operation
    loops: list[int]  # extents
    reductions: list[int]  # the reduction loops
    reduction: int  # the one split
    parts: int  # R
    interleaved: bool
    combiner: str
    neutral: float | None  # (None: the partials start from `fill`)
    fill: ir.Value | None


def _uses_dim(expr: ir.AffineExpr, dim: int) -> bool:
    return re.search(rf"\bd{dim}\b", str(expr)) is not None


def _plan(op: ir.Operation, min_size: int, max_outputs: int, chain: int,
          convolutions: bool = False) -> _Plan | None:
    if not op.name.startswith("linalg.") or len(op.results) != 1 or len(op.regions) != 1:
        return None
    inputs, outputs = _operands(op)
    maps = _maps(op)
    if maps is None or len(outputs) != 1 or len(maps) != len(inputs) + 1:
        return None
    if any(not isinstance(v.type, ir.RankedTensorType) or not v.type.has_static_shape
           for v in (*inputs, *outputs)):
        return None
    rank = maps[0].n_dims
    out_dims = _dims(maps[-1])
    if out_dims is None or sorted(out_dims) != out_dims:
        return None
    extents: list[int | None] = [None] * rank
    for value, affine_map in zip((*inputs, *outputs), maps, strict=True):
        for position, result in enumerate(affine_map.results):
            if isinstance(result, ir.AffineDimExpr):
                extents[result.position] = value.type.shape[position]
    reductions = [d for d in range(rank) if d not in out_dims]
    if not reductions or any(extents[d] is None for d in range(rank)):
        return None
    if not convolutions and (len(reductions) != 1 or any(_dims(m) is None for m in maps)):
        return None  # (several reduction loops, index expressions: opt-in, see the pass)
    # the loop to split: the longest reduction loop that every input reads as a plain index
    candidates = [d for d in reductions if not any(
        not isinstance(result, ir.AffineDimExpr) and _uses_dim(result, d)
        for affine_map in maps[:-1] for result in affine_map.results)]
    if not candidates:
        return None
    reduction = max(candidates, key=lambda d: (extents[d], -d))
    size = extents[reduction]
    total = 1  # (the serial chain of one output: every reduction loop)
    for d in reductions:
        total *= extents[d]
    if total < min_size or size < 8:
        return None
    block = op.regions[0].blocks[0]
    accumulator = block.arguments[len(block.arguments) - 1]
    terminator = block.operations[len(block.operations) - 1]
    combine = _owner(terminator.operands[0]) if len(terminator.operands) == 1 else None
    if combine is None or combine.name not in _COMBINERS or len(combine.operands) != 2:
        return None
    uses = list(accumulator.uses)
    if len(uses) != 1 or _owner_of_use(uses[0]) != combine:
        return None
    neutral = _COMBINERS[combine.name]
    fill = _fill_scalar(outputs[0])
    if neutral is None and fill is None:
        return None
    outputs_count = 1
    for loop in out_dims:
        outputs_count *= extents[loop]
    # interleaved: the reduction runs along the last dimension of the inputs that read it,
    # and no input is contiguous along the innermost (non-trivial) parallel loop
    lasts = [m.results[len(m.results) - 1] for m in maps[:-1] if len(m.results)]
    inner = [d for d in out_dims if extents[d] > 1]
    contiguous = bool(inner) and any(
        isinstance(last, ir.AffineDimExpr) and last.position == inner[-1] for last in lasts)
    # (inputs that read the reduction read every loop, in order: a row reduction's rows)
    along_last = all(_dims(m) == list(range(rank))
                     for m in maps[:-1] if any(_uses_dim(r, reduction) for r in m.results))
    if along_last and not contiguous and reductions == [rank - 1]:
        if outputs_count > max_outputs:
            return None
        parts = next((p for p in _PARTS if size % p == 0 and size // p >= 2), None)
        interleaved = True
    else:
        parts = 1
        while parts < 32 and total // (parts * 2) >= chain and size % (parts * 2) == 0 \
                and size // (parts * 2) >= 4 and outputs_count * parts < 16 * _THREADS:
            parts *= 2
        interleaved = False
    if parts is None or parts == 1:
        return None
    return _Plan(op, extents, reductions, reduction, parts, interleaved, combine.name, neutral,
                 fill)


def _owner_of_use(use) -> ir.Operation:
    owner = use.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _parallel() -> ir.Attribute:
    return ir.Attribute.parse("#linalg.iterator_type<parallel>")


def _reduction() -> ir.Attribute:
    return ir.Attribute.parse("#linalg.iterator_type<reduction>")


def _split(plan: _Plan) -> None:
    op, parts, k = plan.op, plan.parts, plan.reduction
    rank = len(plan.loops)
    chunks = plan.loops[k] // parts
    inputs, (output,) = _operands(op)
    maps = _maps(op)
    result_type = ir.RankedTensorType(op.results[0].type)
    element = result_type.element_type
    out_dims = _dims(maps[-1])
    # new loops: interleaved (k, the last loop, is the only reduction: the parallel loops,
    # then r, then k1: k = k1 * R + r); chunked (r first, then the old loops with k -> k1:
    # k = r * K1 + k1). Every loop that reduced still reduces (a convolution's window too).
    if plan.interleaved:
        r, positions = rank - 1, [*range(rank - 1), rank]
    else:
        r, positions = 0, [d + 1 for d in range(rank)]

    def new(d: int) -> ir.AffineExpr:
        return ir.AffineDimExpr.get(positions[d])

    with ir.InsertionPoint(op), op.location:
        new_inputs, new_maps = [], []
        shifted = ir.AffineMap.get(rank + 1, 0, [new(d) for d in range(rank)])
        for value, affine_map in zip(inputs, maps, strict=False):
            results = list(affine_map.results)
            plain = [r.position if isinstance(r, ir.AffineDimExpr) else None for r in results]
            exprs = []
            if k in plain:  # that dimension of the input splits in two
                j = plain.index(k)
                shape = list(value.type.shape)
                pair = [chunks, parts] if plan.interleaved else [parts, chunks]
                expanded = [*shape[:j], *pair, *shape[j + 1:]]
                reassociation = [[i] for i in range(j)] + [[j, j + 1]] + [
                    [i + 1] for i in range(j + 1, len(shape))]
                value = tensor.expand_shape(
                    ir.RankedTensorType.get(expanded, value.type.element_type), value,
                    reassociation, [], expanded)
            for d, result in zip(plain, results, strict=True):
                if d != k:
                    exprs.append(result.compose(shifted))
                elif plan.interleaved:
                    exprs += [new(k), ir.AffineDimExpr.get(r)]
                else:
                    exprs += [ir.AffineDimExpr.get(r), new(k)]
            new_inputs.append(value)
            new_maps.append(ir.AffineMap.get(rank + 1, 0, exprs))
        out_shape = list(result_type.shape)
        if plan.interleaved:
            partial_shape = [*out_shape, parts]
            partial_exprs = [*(new(d) for d in out_dims), ir.AffineDimExpr.get(r)]
        else:
            partial_shape = [parts, *out_shape]
            partial_exprs = [ir.AffineDimExpr.get(r), *(new(d) for d in out_dims)]
        new_maps.append(ir.AffineMap.get(rank + 1, 0, partial_exprs))
        partial_type = ir.RankedTensorType.get(partial_shape, element)
        if plan.neutral is None:
            start = plan.fill
        elif isinstance(element, ir.IntegerType):
            start = arith.ConstantOp(element, int(plan.neutral)).result
        else:
            start = arith.ConstantOp(element, float(plan.neutral)).result
        partial_init = linalg.fill(start, outs=[tensor.empty(partial_shape, element)])
        iterators = [_parallel()] * (rank + 1)
        for d in plan.reductions:
            iterators[positions[d]] = _reduction()
        partial = linalg.GenericOp([partial_type], new_inputs, [partial_init],
                                   ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
                                   ir.ArrayAttr.get(iterators))
        move_body(op, partial.operation)
        # out[p] = combine_r partial[., p], into the op's own init: loops (p..., r)
        count = len(out_shape)
        p = [ir.AffineDimExpr.get(i) for i in range(count)]
        rr = ir.AffineDimExpr.get(count)
        final_maps = [ir.AffineMap.get(count + 1, 0, [*p, rr] if plan.interleaved else [rr, *p]),
                      ir.AffineMap.get(count + 1, 0, p)]
        final = linalg.GenericOp([result_type], [partial.result], [output],
                                 ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in final_maps]),
                                 ir.ArrayAttr.get([_parallel()] * count + [_reduction()]))
        block = final.regions[0].blocks.append(element, element)
        with ir.InsertionPoint(block):
            combined = ir.Operation.create(plan.combiner, results=[element],
                                           operands=[block.arguments[0], block.arguments[1]])
            linalg.YieldOp([combined.result])
    op.results[0].replace_all_uses_with(final.result)
    op.erase()


@register
@dataclass(frozen=True)
class GpuSplitReductions(ModulePass):
    """Split long reductions into a partial and a final reduction (see the module's doc)."""

    name = "dlc-gpu-split-reductions"
    min_size: int = 128  # (shorter reductions stay one loop)
    max_outputs: int = 32768  # (interleaved splits: more outputs already fill the GPU)
    chain: int = 192  # (chunked splits: the partial chains' target length)
    # ops with several reduction loops or index expressions (convolutions): correct on the
    # CPU JIT (tests/gpu/test_split_reductions.py), not yet run on a GPU: opt-in
    convolutions: bool = False

    def run(self, module: ir.Operation) -> None:
        plans: list[_Plan] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            plan = _plan(op, self.min_size, self.max_outputs, self.chain, self.convolutions)
            if plan is not None:
                plans.append(plan)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for plan in plans:
            _split(plan)
