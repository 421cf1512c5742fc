"""dlc-gpu-split-reductions: long reductions with few outputs split in two, for the GPU.

The GPU mapping gives each output of a linalg op one thread, its reduction a serial loop. A
layer norm's mean over [128, 768] is then 128 threads reading 768 elements each, one after
the other, at addresses 768 floats apart: a few hundred microseconds on a GPU that has
thousands of threads idle. This pass rewrites such a reduction (on tensors, linalg stage)

    out[p] = combine_k f(x[p, k])                    (K = K1 * R)

into a partial reduction with R times more threads, whose neighbours read neighbouring
addresses, and a short final one:

    partial[p, r] = combine_k1 f(x[p, k1 * R + r])   (init: the reduction's own fill)
    out[p]        = combine_r partial[p, r]

Applies to a `linalg.generic` with one result, its only reduction loop last, every input
indexed by the identity map or by a map without the reduction loop, its output indexed by
the parallel loops, its body ending in `combine(value, out)` with `combine` associative and
commutative (add, mul, max, min: floats are re-associated, as every parallel reduction
does), and an output produced by a `linalg.fill` of combine's neutral element (any value for
max and min). K must be at least `min-size` and a multiple of R (32, 16 or 8); the outputs
at most `max-outputs` (more outputs already fill the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from dlc.passes.registry import ModulePass, register

# combiner op -> its neutral element (None: idempotent, any fill value is fine)
_COMBINERS: dict[str, float | None] = {
    "arith.addf": 0.0, "arith.addi": 0, "arith.mulf": 1.0, "arith.muli": 1,
    "arith.maximumf": None, "arith.minimumf": None, "arith.maxnumf": None,
    "arith.minnumf": None, "arith.maxsi": None, "arith.minsi": None, "arith.maxui": None,
    "arith.minui": None,
}
_PARTS = (32, 16, 8)


def _owner(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _iterators(op: ir.Operation) -> list[str]:
    return [str(a).split("<")[-1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _dims(affine_map: ir.AffineMap) -> list[int] | None:
    """The loop of each result of a projected-permutation map, else None."""
    found = []
    for result in affine_map.results:
        if not isinstance(result, ir.AffineDimExpr):
            return None
        found.append(result.position)
    return found


def _fill_value(value: ir.Value) -> ir.Attribute | None:
    fill = _owner(value)
    if fill is None or fill.name != "linalg.fill":
        return None
    scalar = _owner(fill.operands[0])
    if scalar is None or scalar.name != "arith.constant":
        return None
    return scalar.attributes["value"]


def _is_neutral(value: ir.Attribute, neutral: float | None) -> bool:
    if neutral is None:
        return True
    if isinstance(value, ir.FloatAttr | ir.IntegerAttr):
        return float(value.value) == float(neutral)
    return False


@dataclass
class _Plan:
    op: ir.Operation
    rank: int  # loops
    size: int  # K
    parts: int  # R
    combiner: str
    fill: ir.Value  # the fill op's result (the original output)


def _plan(op: ir.Operation, min_size: int, max_outputs: int) -> _Plan | None:
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    iterators = _iterators(op)
    rank = len(iterators)
    if iterators.count("reduction") != 1 or iterators[-1] != "reduction":
        return None
    maps = _maps(op)
    inputs, output = list(op.operands)[:-1], op.operands[len(op.operands) - 1]
    if len(maps) != len(inputs) + 1 or _dims(maps[-1]) != list(range(rank - 1)):
        return None
    size = None
    for value, affine_map in zip(inputs, maps, strict=False):
        dims = _dims(affine_map)
        if dims is None or not isinstance(value.type, ir.RankedTensorType):
            return None
        if rank - 1 in dims:
            if dims != list(range(rank)):
                return None
            size = value.type.shape[-1]
    output_type = ir.RankedTensorType(op.results[0].type)
    if size is None or size < min_size or not output_type.has_static_shape:
        return None
    outputs = 1
    for extent in output_type.shape:
        outputs *= extent
    if outputs > max_outputs:
        return None
    parts = next((p for p in _PARTS if size % p == 0 and size // p >= 2), None)
    if parts is None:
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
    value = _fill_value(output)
    if value is None or not _is_neutral(value, _COMBINERS[combine.name]):
        return None
    return _Plan(op, rank, size, parts, combine.name, output)


def _owner_of_use(use) -> ir.Operation:
    owner = use.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _split(plan: _Plan) -> None:
    op, rank, parts = plan.op, plan.rank, plan.parts
    chunks = plan.size // parts
    context = op.context
    maps = _maps(op)
    inputs = list(op.operands)[:-1]
    result_type = ir.RankedTensorType(op.results[0].type)
    element = result_type.element_type
    iterator = ir.Attribute.parse
    with ir.InsertionPoint(op), op.location:
        new_inputs, new_maps = [], []
        for value, affine_map in zip(inputs, maps, strict=False):
            dims = _dims(affine_map)
            if rank - 1 in dims:  # identity: [..., K] -> [..., K1, R], read at (k1, r)
                shape = list(value.type.shape)
                expanded = [*shape[:-1], chunks, parts]
                reassociation = [[i] for i in range(len(shape) - 1)]
                reassociation.append([len(shape) - 1, len(shape)])
                value = tensor.expand_shape(
                    ir.RankedTensorType.get(expanded, value.type.element_type), value,
                    reassociation, [], expanded)
                exprs = [*(ir.AffineDimExpr.get(d) for d in range(rank - 1)),
                         ir.AffineDimExpr.get(rank), ir.AffineDimExpr.get(rank - 1)]
            else:
                exprs = [ir.AffineDimExpr.get(d) for d in dims]
            new_inputs.append(value)
            new_maps.append(ir.AffineMap.get(rank + 1, 0, exprs))
        # loops (p..., r, k1): r parallel and innermost of the parallel ones (neighbouring
        # threads), k1 the reduction
        partial_type = ir.RankedTensorType.get([*result_type.shape, parts], element)
        fill = _owner(plan.fill)
        init = tensor.empty([*result_type.shape, parts], element)
        partial_init = linalg.fill(fill.operands[0], outs=[init])
        new_maps.append(ir.AffineMap.get(rank + 1, 0,
                                         [ir.AffineDimExpr.get(d) for d in range(rank)]))
        iterators = [iterator("#linalg.iterator_type<parallel>")] * rank + [
            iterator("#linalg.iterator_type<reduction>")]
        partial = linalg.GenericOp([partial_type], new_inputs, [partial_init],
                                   ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
                                   ir.ArrayAttr.get(iterators))
        old_block = op.regions[0].blocks[0]
        new_block = partial.regions[0].blocks.append(*[a.type for a in old_block.arguments])
        for old, new in zip(old_block.arguments, new_block.arguments, strict=True):
            old.replace_all_uses_with(new)
        for inner in list(old_block.operations):
            new_block.append(inner)
        # out[p] = combine_r partial[p, r]
        final_maps = [ir.AffineMap.get_identity(rank),
                      ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d)
                                                 for d in range(rank - 1)])]
        final_iterators = [iterator("#linalg.iterator_type<parallel>")] * (rank - 1) + [
            iterator("#linalg.iterator_type<reduction>")]
        final = linalg.GenericOp([result_type], [partial.result], [plan.fill],
                                 ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in final_maps]),
                                 ir.ArrayAttr.get(final_iterators))
        block = final.regions[0].blocks.append(element, element)
        with ir.InsertionPoint(block):
            combined = ir.Operation.create(plan.combiner, results=[element],
                                           operands=[block.arguments[0], block.arguments[1]])
            linalg.YieldOp([combined.result])
    del context
    op.results[0].replace_all_uses_with(final.result)
    op.erase()


@register
@dataclass(frozen=True)
class GpuSplitReductions(ModulePass):
    """Split long reductions with few outputs into a partial and a final reduction."""

    name = "dlc-gpu-split-reductions"
    min_size: int = 128  # (shorter reductions stay one loop)
    max_outputs: int = 32768  # (more outputs already fill the GPU)

    def run(self, module: ir.Operation) -> None:
        plans: list[_Plan] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            plan = _plan(op, self.min_size, self.max_outputs)
            if plan is not None:
                plans.append(plan)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for plan in plans:
            _split(plan)
