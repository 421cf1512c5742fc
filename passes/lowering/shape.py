"""Lowering of data-movement dlc ops: constant, reshape, transpose."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.dialects import ops
from dlc.passes.lowering.builders import as_value, empty_like, reshaped, sizes_of
from dlc.passes.lowering.storage import storage_elements


def lower_constant(op: ir.OpView, rewriter) -> None:
    # dlc.constant {value} -> arith.constant {value}
    with rewriter.ip, op.location:
        value = storage_elements(op.attributes["value"])
        rewriter.replace_op(op, [arith.ConstantOp(op.results[0].type, value).result])


# A reshape feeding one of these (through elementwise ops, `_feeds_contraction`), or reading one's result (through the elementwise epilogue
# after it), is a tensor.reshape (`builders.reshaped`): the fusion pass would fold
# collapse_shape/expand_shape into the named contraction, making it a generic that no schedule
# matches, with its elementwise producer fused into the reduction (MobileNetV2's average pool
# -> Flatten -> Gemm: a scalar loop dividing each of the 1280 x 1000 products; GPT-2's Conv1D,
# Gemm [128, 768] x [768, 2304] + bias -> Reshape [1, 128, 2304]: the expand_shape propagated
# up through the bias add into the matmul, a naive 4-loop generic, 130x slower than
# onnxruntime).
CONTRACTIONS = ("dlc.matmul", "dlc.gemm", "linalg.matmul", "linalg.batch_matmul")
EPILOGUE_DEPTH = 6  # elementwise ops between a contraction and the reshape of its result (a
# static-QDQ matmul: its integer product, two casts, the scale, a QuantizeLinear, a DequantizeLinear)
TRANSPOSES = ("dlc.transpose", "linalg.transpose")  # (lowered before or after the reshape)


def lower_reshape(op: ir.OpView, rewriter) -> None:
    # dlc.reshape(x) -> tensor.collapse_shape to 1-D, then tensor.expand_shape to the target
    # (a tensor.reshape when it feeds a contraction, see CONTRACTIONS)
    (x,) = op.operands
    result_type = op.results[0].type
    with rewriter.ip, op.location:
        if (_feeds_contraction(op.results[0], EPILOGUE_DEPTH)
                or _contraction_result(x, EPILOGUE_DEPTH)):
            value = reshaped(x, list(result_type.shape))
        elif not result_type.has_static_shape or not x.type.has_static_shape:
            groups = dynamic_groups(list(x.type.shape), list(result_type.shape))
            value = reshaped(x, list(result_type.shape)) if groups is None else \
                _regrouped(x, result_type, groups)
        else:
            value = _from_rank1(_to_rank1(x), result_type)
        rewriter.replace_op(op, [as_value(value)])


def dynamic_groups(source: list[int], target: list[int]
                   ) -> list[tuple[list[int], list[int]]] | None:
    """The dimensions of `source` and `target` in consecutive groups of the same size, where
    every dynamic size is the function's one run-time size (`builders.sizes_of`): a group's
    static sizes have the same product on both sides and it holds as many dynamic sizes on
    each (GPT-2's [1, S, 768] -> [1, S, 12, 64]: [0]-[0], [1]-[1], [2]-[2, 3]); a size-1
    dimension left over joins the last group. None where no such grouping is found (a static
    size 0, or sizes that do not line up): the reshape then stays a `tensor.reshape`."""
    if 0 in source or 0 in target or not source or not target:
        return None

    def key(shape: list[int], dims: list[int]) -> tuple[int, int]:
        dynamic = sum(ir.ShapedType.is_dynamic_size(shape[d]) for d in dims)
        return dynamic, _product([shape[d] for d in dims
                                  if not ir.ShapedType.is_dynamic_size(shape[d])])

    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(source) and j < len(target):
        left, right = [i], [j]
        i, j = i + 1, j + 1
        while key(source, left) != key(target, right):
            if key(source, left) < key(target, right) and i < len(source):
                left.append(i)
                i += 1
            elif key(target, right) < key(source, left) and j < len(target):
                right.append(j)
                j += 1
            else:
                return None
        groups.append((left, right))
    if any(source[d] != 1 for d in range(i, len(source))) or \
            any(target[d] != 1 for d in range(j, len(target))):
        return None
    groups[-1][0].extend(range(i, len(source)))
    groups[-1][1].extend(range(j, len(target)))
    return groups


def _regrouped(x: ir.Value, result_type: ir.RankedTensorType,
               groups: list[tuple[list[int], list[int]]]) -> ir.Value:
    """x reshaped to `result_type` along `groups` (`dynamic_groups`): each group of several
    source dimensions collapsed into one, then each expanded into its target dimensions
    (views of a strided slice where they can be: GPT-2's q, k and v, which a
    `tensor.reshape` copied into a buffer of their own)."""
    source, target = list(x.type.shape), list(result_type.shape)
    dynamic = ir.ShapedType.get_dynamic_size()
    middle = []
    for left, _ in groups:
        sizes = [source[d] for d in left]
        middle.append(dynamic if any(ir.ShapedType.is_dynamic_size(s) for s in sizes)
                      else _product(sizes))
    if len(middle) != len(source):
        middle_type = ir.RankedTensorType.get(middle, x.type.element_type)
        x = tensor.CollapseShapeOp(middle_type, x,
                                   _reassociation([left for left, _ in groups])).result
    if len(middle) == len(target):
        return x
    expansion = _reassociation([right for _, right in groups])
    sizes = sizes_of(target)
    return tensor.ExpandShapeOp(result_type, x, expansion,
                                [d for d in sizes if isinstance(d, ir.Value)],
                                [dynamic if isinstance(d, ir.Value) else d for d in sizes]
                                ).result


def _feeds_contraction(value: ir.Value, depth: int) -> bool:
    """value is an operand of a contraction, or reaches one through up to `depth` ops of its
    shape or transposes (DeBERTa's keys: reshape [1, 12, 512, 64] -> [12, 512, 64], then a
    transpose into the batch matmul: the collapse_shape propagated through the transpose into
    the matmul, a 4-D naive generic, 12x onnxruntime; a quantized model's QuantizeLinear ->
    DequantizeLinear after its Flatten: the collapse_shape propagated down through them into
    the Gemm, a naive generic with the quantization recomputed for each product, ResNet-50
    QDQ's fc 17 ms)."""
    shape = list(value.type.shape)
    for use in value.uses:
        owner = use.owner
        if owner.name in CONTRACTIONS:
            return True
        if depth > 0 and len(owner.results) == 1 and \
                isinstance(owner.results[0].type, ir.RankedTensorType) and \
                (list(owner.results[0].type.shape) == shape or owner.name in TRANSPOSES) \
                and _feeds_contraction(owner.results[0], depth - 1):
            return True
    return False


def _contraction_result(x: ir.Value, depth: int) -> bool:
    """x is a contraction's result, or computed from one by up to `depth` ops of x's shape
    (its bias add, activation, residual add: the ops the fusion pass would expand with it)."""
    if not isinstance(x, ir.OpResult):
        return False
    owner = x.owner
    if owner.name in CONTRACTIONS:
        return True
    if depth == 0:
        return False
    shape = list(x.type.shape)
    return any(isinstance(v.type, ir.RankedTensorType) and list(v.type.shape) == shape
               and _contraction_result(v, depth - 1) for v in owner.operands)


def _to_rank1(x: ir.Value) -> ir.Value:
    shape = list(x.type.shape)
    flat = ir.RankedTensorType.get([_product(shape)], x.type.element_type)
    if len(shape) == 1:
        return x
    if not shape:
        return tensor.ExpandShapeOp(flat, x, ir.ArrayAttr.get([]), [], [1]).result
    return tensor.CollapseShapeOp(flat, x, _reassociation([list(range(len(shape)))])).result


def _from_rank1(flat: ir.Value, result_type: ir.RankedTensorType) -> ir.Value:
    shape = list(result_type.shape)
    if len(shape) == 1:
        return flat
    if not shape:
        return tensor.CollapseShapeOp(result_type, flat, ir.ArrayAttr.get([])).result
    groups = _reassociation([list(range(len(shape)))])
    return tensor.ExpandShapeOp(result_type, flat, groups, [], shape).result


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups]
    )


def _product(shape: list[int]) -> int:
    size = 1
    for d in shape:
        size *= d
    return size


def lower_transpose(op: ir.OpView, rewriter) -> None:
    # dlc.transpose(x) {perm} -> linalg.transpose
    perm = [int(p) for p in ir.DenseI64ArrayAttr(op.attributes["perm"])]
    with rewriter.ip, op.location:
        init = empty_like(op.results[0].type)
        value = linalg.transpose(op.operands[0], outs=[init], permutation=perm)
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {ops.CONSTANT: lower_constant, ops.RESHAPE: lower_reshape,
            ops.TRANSPOSE: lower_transpose}
DYNAMIC_OPS = (ops.RESHAPE, ops.TRANSPOSE)
