"""dlc-fuse-elementwise: `linalg-fuse-elementwise-ops` with fused bodies of bounded size.

Upstream's elementwise fusion fuses a producer into its consumer whenever the producer has
one use, and every fusion clones the producer's whole body into the new op: a chain of N
fusable generics becomes one op after N fusions whose bodies grow 1, 2, ..., N ops, i.e.
N²/2 cloned ops (a 4k-node Relu chain: 18 s of a 23 s -O2 compile, issue 20). This pass
first walks the generics in block order and estimates the body each would get from the
single-use, all-parallel generics feeding it (its own ops plus its fusable producers'
estimates); where that would exceed `max-ops`, the largest producers are cut off: a
temporary second use (`bufferization.dealloc_tensor`, an op of unknown effects that the
fusion driver neither fuses nor erases) makes them multi-use, which upstream does not fuse.
Then the upstream pass runs on every function and the barriers are erased. Each fused body
stays within ~`max-ops` ops, so fusion costs O(N · max-ops); groups under the bound (every
benchmark model's) fuse exactly as before, the same IR. `max-ops=0`: no bound (upstream).

A producer of transcendental functions (exp, tanh, erf, log, pow: each a 20-40 op polynomial
after dlc-polynomial-math, or a libm call) that its consumer broadcasts (fewer elements than one
of the consumer's operands: the sigmoid of a squeeze-and-excitation scale, [1, 1, 1, C],
multiplying [1, H, W, C]) gets a barrier too, bound or not: fused, its body would run once per
element of the consumer, not once per element of its own (EfficientNet-B0's SE sigmoids ran
H·W times each: 2.4 ms for one 56x56x144 block); unfused it is a loop over its C elements.
Cheap producers (a layernorm's rsqrt(var + eps), a mean's division) still fuse: the reduction
family's schedules expect them fused, and recomputing them costs about what a load would.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mlir import ir
from mlir.dialects import bufferization
from mlir.passmanager import PassManager

from dlc.passes.registry import ModulePass, register

FUSION = "builtin.module(func.func(linalg-fuse-elementwise-ops))"
BARRIER = "dlc.fusion_barrier"  # (unit attribute naming the pass's own barriers)


def _body_ops(generic: ir.Operation) -> int:
    """Ops in a generic's body, its terminator excluded."""
    return max(0, len(generic.regions[0].blocks[0].operations) - 1)


def _all_parallel(generic: ir.Operation) -> bool:
    kinds = ir.ArrayAttr(generic.attributes["iterator_types"])
    return all("parallel" in str(kind) for kind in kinds)


def _single_use(value: ir.Value) -> bool:
    uses = iter(value.uses)
    return next(uses, None) is not None and next(uses, None) is None


def _elements(value: ir.Value) -> int:
    return prod(value.type.shape) if isinstance(value.type, ir.ShapedType) else 1


TRANSCENDENTAL = {"math.exp", "math.tanh", "math.erf", "math.log", "math.powf", "math.exp2",
                  "math.log1p", "math.expm1", "math.sin", "math.cos", "math.atan", "math.atan2"}


def _transcendental(generic: ir.Operation) -> bool:
    return any(op.operation.name in TRANSCENDENTAL
               for op in generic.regions[0].blocks[0].operations)


def _broadcast(value: ir.Value, consumer: ir.Operation) -> bool:
    """Whether `consumer` reads `value` broadcast: another operand is larger (static shapes)."""
    types = [v.type for v in consumer.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return False
    return _elements(value) < max(_elements(v) for v in consumer.operands)


def plan_barriers(block: ir.Block, max_ops: int) -> list[ir.Value]:
    """The producer results of `block` to keep unfused (each its group's last op), so that
    no fused body would exceed `max_ops` ops (0: no bound) and none is recomputed per element
    of a broadcast (`_broadcast`); linear in the block's ops."""
    size: dict[ir.Operation, int] = {}  # a generic -> its fused body's estimated ops
    cut: list[ir.Value] = []
    for op in block.operations:
        op = op.operation
        if op.name != "linalg.generic":
            continue
        own = _body_ops(op)
        producers: list[tuple[int, ir.Value]] = []
        seen: set[ir.Operation] = set()
        for value in op.operands:
            if not isinstance(value, ir.OpResult):
                continue
            producer = value.owner.operation
            if producer in size and producer not in seen and _single_use(value) and \
                    _all_parallel(producer) and len(producer.results) == 1:
                seen.add(producer)
                if _transcendental(producer) and _broadcast(value, op):
                    cut.append(value)  # (fused, it would run once per broadcast element)
                    continue
                producers.append((size[producer], value))
        total = own + sum(s for s, _ in producers)
        # (largest first; ties in operand order: deterministic)
        for s, value in sorted(producers, key=lambda item: -item[0]):
            if max_ops <= 0 or total <= max_ops:
                break
            cut.append(value)
            total -= s
        size[op] = total
    return cut


@register
@dataclass(frozen=True)
class FuseElementwise(ModulePass):
    """Fuse elementwise linalg generics (linalg-fuse-elementwise-ops), each fused body
    bounded to about max-ops ops (0: unbounded)."""

    name = "dlc-fuse-elementwise"
    max_ops: int = 256

    def run(self, module: ir.Operation) -> None:
        barriers: list[ir.Operation] = []
        for function in module.regions[0].blocks[0].operations:
            if function.operation.name != "func.func":
                continue
            for region in function.regions:
                for block in region.blocks:
                    for value in plan_barriers(block, self.max_ops):
                        producer = value.owner.operation
                        with ir.InsertionPoint.after(producer), producer.location:
                            barrier = bufferization.DeallocTensorOp(value).operation
                        barrier.attributes[BARRIER] = ir.UnitAttr.get()
                        barriers.append(barrier)
        PassManager.parse(FUSION).run(module)
        for barrier in barriers:
            barrier.erase()
