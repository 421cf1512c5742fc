"""The rule driver of `dlc.passes.graph.match`: what a rule sees of the graph while it runs.

A rule that replaces an op can leave that op's producers unused; the driver erases them as it
goes, so that a later rule counting uses (`single_use`) sees live consumers only.
"""

from __future__ import annotations

from mlir import ir

from dlc.dialects import make_context, ops
from dlc.passes.graph.match import apply_rules, producer, single_use

# add(transpose(transpose(relu(a))), a): once the transposes cancel, the relu has one use
CHAIN = """
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = "dlc.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t1 = "dlc.transpose"(%r) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t2 = "dlc.transpose"(%t1) {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %s = "dlc.add"(%t2, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
"""


def test_a_rule_counts_live_uses_only() -> None:
    seen: list[bool] = []

    def cancel_transposes(op: ir.OpView) -> list[ir.Value] | None:
        # transpose(transpose(x, p), p) -> x   (p = [1, 0] here)
        inner = producer(op.operands[0], ops.TRANSPOSE)
        return None if inner is None else [inner.operands[0]]

    def look_at_relu(op: ir.OpView) -> list[ir.Value] | None:
        # (no rewrite: what single_use says of the relu each time the add is visited)
        if producer(op.operands[0], ops.RELU) is not None:
            seen.append(single_use(op.operands[0]))
        return None

    with make_context():
        module = ir.Module.parse(CHAIN)
        apply_rules(module.operation, {ops.TRANSPOSE: [cancel_transposes],
                                       ops.ADD: [look_at_relu]})
        text = str(module)
    assert "dlc.transpose" not in text
    # the add is visited again once it reads the relu: one use, not two with the first
    # transpose, which cancelling the second left unused
    assert seen and all(seen)
