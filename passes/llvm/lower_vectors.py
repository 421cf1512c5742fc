"""dlc-lower-vectors: lower the vector ops a schedule left, on memrefs, to 1-D vector code.

Runs at the start of the llvm stage (after bufferization), on every function: hoists redundant
transfer pairs out of loops, then lowers masks, contractions (outer products: FMA), multi-
reductions, transposes, broadcasts and shape casts, and transfers to rank 1 with full unrolling
(PERF.md's recipe, step 5), and turns the integer matmul kernel's pairs of 16-bit products
into `vpmaddwd` (`codegen/int8_matmul.py`) and the VNNI kernel's quads of byte products into
`vpdpbusd` (`codegen/int8_vnni.py`), so that `convert-vector-to-llvm` sees only 1-D vectors. A module
without vector ops is left as it is (the script is skipped).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import vector
from mlir.dialects.transform import interpreter

from dlc.passes.codegen.byte_table import lower_byte_tables
from dlc.passes.codegen.int8_matmul import lower_pairs
from dlc.passes.codegen.int8_vnni import lower_quads
from dlc.passes.registry import ModulePass, PassFailure, register
from dlc.passes.walk import ops_where

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


def broadcast_rows(module: ir.Operation) -> int:
    """`transpose(broadcast(v : vector<N>) : vector<MxN>, [1, 0])` -> `broadcast(v as
    vector<Nx1>) : vector<NxM>`: row i is v[i] splat (the linalg vectorizer's form of an
    operand broadcast along the inner dim, e.g. the packed kernels' x[ow] against 32
    channels). The transpose lowering flattened it into a 256-lane shufflevector, correct but
    slow to compile (ResNet-50's packed convs: 3 s of JIT); a stretched broadcast lowers to one
    splat per row. How many were rewritten."""
    found = ops_where(module, lambda op: op.name == "vector.transpose")
    done = 0
    for op in found:
        source = op.operands[0].owner
        if not isinstance(source, ir.Operation | ir.OpView) or source.name != "vector.broadcast":
            continue
        permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        value = source.operands[0]
        if permutation != [1, 0] or not isinstance(value.type, ir.VectorType) \
                or value.type.rank != 1:
            continue
        result = ir.VectorType(op.results[0].type)
        with ir.InsertionPoint(op), op.location:
            column = ir.VectorType.get([value.type.shape[0], 1], value.type.element_type)
            rows = vector.BroadcastOp(result, vector.ShapeCastOp(column, value).result).result
        op.results[0].replace_all_uses_with(rows)
        op.erase()
        if not list(source.results[0].uses):
            source.erase()
        done += 1
    return done


@register
@dataclass(frozen=True)
class LowerVectors(ModulePass):
    """Lower vector ops on memrefs to unrolled 1-D vectors and FMAs (after bufferization)."""

    name = "dlc-lower-vectors"

    def run(self, module: ir.Operation) -> None:
        if not has_vector_ops(module):
            return
        broadcast_rows(module)
        lower_pairs(module)  # (the integer matmul kernel's pairs of products: vpmaddwd)
        lower_quads(module)  # (the VNNI kernel's quads of byte products: vpdpbusd)
        lower_byte_tables(module)  # (dlc-qdq-lut's tables: vpermi2b on AVX-512 VBMI)
        script = ir.Module.parse(SCRIPT)
        try:
            interpreter.apply_named_sequence(module, script.body.operations[0], script)
        except (ValueError, ir.MLIRError) as error:
            raise PassFailure(f"dlc-lower-vectors: transform script failed: {error}") from None
