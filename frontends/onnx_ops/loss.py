"""Importers of the ONNX losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both decompose into general dlc ops; neither has an op of its own. For an input x of shape
[N, C, d1..dk] (scores per class C) and integer targets t of shape [N, d1..dk]:

- NegativeLogLikelihoodLoss: loss = -x[n, t[n, d..], d..] (`dlc.gather_elements` along axis 1
  of t reshaped to [N, 1, d..]), times the class weight w[t] (`dlc.gather`) when a weight is
  given. With `ignore_index`, targets equal to it give a loss and a weight of 0 (`dlc.compare`
  and `dlc.select`), and are replaced by class 0 before indexing, so that an out-of-range
  ignore_index never reaches a gather. reduction "none" keeps the [N, d..] losses, "sum" adds
  them, "mean" divides their sum by the sum of the applied weights (1 per target without a
  weight, 0 for ignored ones): a mean over nothing is NaN, as ONNX's reference gives.
- SoftmaxCrossEntropyLoss: log_softmax of x over axis 1 (x - max, minus the logsumexp of
  that), then the NLL above; its optional second output is that log_softmax.

Both exist from opset 12; opset 13 and 22 only widened the element types.
"""

from __future__ import annotations

from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import COMPARE, SELECT
from dlc.dialects.indexing import GATHER, GATHER_ELEMENTS
from dlc.dialects.reduction import REDUCE
from dlc.dialects.unary import UNARY
from dlc.frontends.onnx_node import Importer, NodeContext
from dlc.frontends.onnx_ops.normalization import constant

REDUCTIONS = ("none", "sum", "mean")


def _reduction(n: NodeContext) -> str:
    reduction = n.attr("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction not in REDUCTIONS:
        raise n.error(f"reduction '{reduction}' is not one of {', '.join(REDUCTIONS)}")
    return reduction


def _check_shapes(n: NodeContext, x: ir.Value, target: ir.Value) -> None:
    shape, target_shape = list(x.type.shape), list(target.type.shape)
    if len(shape) < 2:
        raise n.error(f"input must have shape [N, C, d1..dk], got rank {len(shape)}")
    if target_shape != [shape[0], *shape[2:]]:
        raise n.error(f"target {target_shape} must have the input's shape {shape} without "
                      "its class axis 1")


def _sum_all(n: NodeContext, x: ir.Value) -> ir.Value:
    axes = list(range(x.type.rank))
    return n.build(REDUCE, [x], {"fn": "sum", "axes": axes, "keepdims": 0})


def nll(n: NodeContext, x: ir.Value, target: ir.Value, weight: ir.Value | None) -> ir.Value:
    """The negative log-likelihood loss of scores x at target classes (see the docstring)."""
    _check_shapes(n, x, target)
    reduction = _reduction(n)
    ignore_index = n.attr("ignore_index")
    ignored = None
    if ignore_index is not None:
        # t == ignore_index: loss and weight 0, index the safe class 0 instead
        ignored = n.build(COMPARE, [target, constant(n, ignore_index, target)], {"fn": "eq"})
        target = n.build(SELECT, [ignored, constant(n, 0, target), target])
    shape = list(target.type.shape)
    index = n.build(ops.RESHAPE, [target], {"shape": [shape[0], 1, *shape[1:]]})
    picked = n.build(GATHER_ELEMENTS, [x, index], {"axis": 1})
    picked = n.build(ops.RESHAPE, [picked], {"shape": shape})
    loss = n.build(UNARY, [picked], {"fn": "neg", "params": []})
    zero = constant(n, 0, x)
    applied = None  # the weight of each target, None where every weight is 1
    if weight is not None:
        applied = n.build(GATHER, [weight, target], {"axis": 0})
    if ignored is not None:
        loss = n.build(SELECT, [ignored, zero, loss])
        kept = constant(n, 1, x) if applied is None else applied
        applied = n.build(SELECT, [ignored, zero, kept])
    if weight is not None:
        loss = n.build(ops.MUL, [loss, applied])
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _sum_all(n, loss)
    if applied is None:
        return n.build(REDUCE, [loss], {"fn": "mean", "axes": list(range(len(shape))),
                                        "keepdims": 0})
    return n.build(ops.DIV, [_sum_all(n, loss), _sum_all(n, applied)])


def _weight(n: NodeContext) -> ir.Value | None:
    return n.inputs[2] if len(n.inputs) > 2 else None


def import_nll_loss(n: NodeContext) -> list[ir.Value]:
    # nll(x, t, w) = reduce(-gather_elements(x, t, axis 1) * gather(w, t))
    return [nll(n, n.inputs[0], n.inputs[1], _weight(n))]


def log_softmax_classes(n: NodeContext, x: ir.Value) -> ir.Value:
    # log_softmax(x, axis 1) = d - logsumexp(d), d = x - max(x)
    if x.type.rank < 2:
        raise n.error(f"input must have shape [N, C, d1..dk], got rank {x.type.rank}")
    peak = n.build(REDUCE, [x], {"fn": "max", "axes": [1], "keepdims": 1})
    d = n.build(ops.SUB, [x, peak])
    lse = n.build(REDUCE, [d], {"fn": "logsumexp", "axes": [1], "keepdims": 1})
    return n.build(ops.SUB, [d, lse])


def import_softmax_cross_entropy(n: NodeContext) -> list[ir.Value]:
    # sce(x, t, w) = nll(log_softmax(x, axis 1), t, w), log_softmax as the 2nd output
    log_prob = log_softmax_classes(n, n.inputs[0])
    return [nll(n, log_prob, n.inputs[1], _weight(n)), log_prob]


IMPORTERS: dict[str, Importer] = {
    "NegativeLogLikelihoodLoss": import_nll_loss,
    "SoftmaxCrossEntropyLoss": import_softmax_cross_entropy,
}
