"""dlc-lower-vectors: lower the vector ops a schedule left, on memrefs, to 1-D vector code.

Runs at the start of the llvm stage (after bufferization), on every function: hoists redundant
transfer pairs out of loops, then lowers masks, contractions (outer products: FMA), multi-
reductions, transposes, broadcasts and shape casts, and transfers to rank 1 with full unrolling
(PERF.md's recipe, step 5), so that `convert-vector-to-llvm` sees only 1-D vectors. A module
without vector ops is left as it is (the script is skipped).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects.transform import interpreter

from dlc.passes.registry import ModulePass, PassFailure, register

SCRIPT = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f0 = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f0 : !transform.any_op
    %f = transform.structured.hoist_redundant_vector_transfers %f0
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.split_transfer_full_partial
          split_transfer_strategy = "vector-transfer"
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_broadcast
    } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f : !transform.any_op
    transform.yield
  }
}
"""


def has_vector_ops(module: ir.Operation) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if op.name.startswith("vector."):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


@register
@dataclass(frozen=True)
class LowerVectors(ModulePass):
    """Lower vector ops on memrefs to unrolled 1-D vectors and FMAs (after bufferization)."""

    name = "dlc-lower-vectors"

    def run(self, module: ir.Operation) -> None:
        if not has_vector_ops(module):
            return
        script = ir.Module.parse(SCRIPT)
        try:
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
        except (ValueError, ir.MLIRError) as error:
            raise PassFailure(f"dlc-lower-vectors: transform script failed: {error}") from None
