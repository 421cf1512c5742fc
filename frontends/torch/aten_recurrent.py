"""Converters of the ATen recurrent layers: aten.lstm, aten.gru, aten.rnn_tanh, aten.rnn_relu.

torch.export keeps `nn.LSTM`, `nn.GRU` and `nn.RNN` as one node each, and dlc asks
`run_decompositions` to keep them (`KEPT`): decomposed, a layer is unrolled into a few ops per
time step, so its IR and compile time grow with the sequence. Each layer and direction
becomes the input projection of the whole sequence (one `dlc.gemm`, both biases folded in
but GRU's b_hn) and one `dlc.recurrence` (`dialects/recurrent.py`, lowered to a loop over the
steps), the gates reordered from torch's order to ONNX's (LSTM i f g o -> i o f c, GRU r z n
-> z r n; PyTorch's GRU is ONNX's linear-before-reset form). Float16 and bfloat16 layers run in
float32. LSTM projections (`proj_size`) are refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.movement import CONCAT
from dlc.dialects.recurrent import RECURRENCE
from dlc.frontends.torch.aten_movement import slice_along
from dlc.frontends.torch.aten_node import AtenNode, Converter, torch_dtype

Value = ir.Value

aten = torch.ops.aten
KEPT = (aten.lstm.input, aten.gru.input, aten.rnn_tanh.input, aten.rnn_relu.input)

# kind -> (gates, torch's gate blocks in ONNX order, activations)
KINDS = {
    "lstm": (4, [0, 3, 1, 2], "Sigmoid,Tanh,Tanh"),
    "gru": (3, [1, 0, 2], "Sigmoid,Tanh"),
    "rnn_tanh": (1, [0], "Tanh"),
    "rnn_relu": (1, [0], "Relu"),
}


def _concat(n: AtenNode, values: list[Value], axis: int) -> Value:
    result = values[0]
    for value in values[1:]:
        result = n.build(CONCAT, [result, value], {"axis": axis})
    return result


def _onnx_order(n: AtenNode, value: Value, order: list[int], hidden: int) -> Value:
    """The gate blocks (axis 0, `hidden` rows each) of `value` in ONNX's order."""
    if order == sorted(order):
        return value
    return _concat(n, [slice_along(n, value, 0, g * hidden, hidden) for g in order], 0)


def _layer_direction(n: AtenNode, kind: str, x: Value, weights: Sequence[Value],
                     initial: list[Value], reverse: bool) -> tuple[Value, Value]:
    """One layer's direction over x [T, B, I]: (y [T, B, H], final [S, B, H])."""
    gates, order, activations = KINDS[kind]
    steps, batch, size = x.type.shape
    w_ih, w_hh = weights[:2]
    hidden = w_hh.type.shape[1]
    w_ih, w_hh = (_onnx_order(n, w, order, hidden) for w in (w_ih, w_hh))
    bias = extra = None
    if len(weights) == 4:
        b_ih, b_hh = (_onnx_order(n, b, order, hidden) for b in weights[2:])
        if kind == "gru":  # b_hn goes with the reset gate: the recurrence adds it
            extra = slice_along(n, b_hh, 0, 2 * hidden, hidden)
            zeros = n.constant([0.0] * hidden, torch_dtype(b_hh.type.element_type))
            b_hh = _concat(n, [slice_along(n, b_hh, 0, 0, 2 * hidden), zeros], 0)
        bias = n.build(ops.ADD, [b_ih, b_hh])
    flat = n.reshape(x, [steps * batch, size])
    attrs = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1}
    projected = n.build(ops.GEMM, [flat, w_ih] + ([bias] if bias is not None else []), attrs)
    x_gates = n.reshape(projected, [steps, batch, gates * hidden])
    r_t = n.build(ops.TRANSPOSE, [w_hh], {"perm": [1, 0]})
    states = _concat(n, [n.reshape(s, [1, batch, hidden]) for s in initial], 0)
    operands = [x_gates, r_t, states] + ([extra] if extra is not None else [])
    y = n.build(RECURRENCE, operands, {
        "kind": "rnn" if kind.startswith("rnn") else kind, "reverse": int(reverse),
        "activations": activations, "params": [], "clip": [], "input_forget": 0})
    return y, y.owner.results[1]


def _recurrent(kind: str, n: AtenNode, x: Value, hx: Value | Sequence[Value],
               params: Sequence[Value], has_biases: bool, num_layers: int, dropout: float,
               train: bool, bidirectional: bool, batch_first: bool) -> tuple[Value, ...]:
    if train and dropout:
        raise n.error("dropout between layers in training mode: dlc compiles inference "
                      "graphs (call model.eval())")
    directions = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if len(params) != num_layers * directions * per:
        raise n.error(f"has {len(params)} weights for {num_layers} layers x {directions} "
                      f"directions: an LSTM with proj_size (projection weights) is not "
                      f"supported")
    hx = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    out_dtype = n.out[0].dtype
    work = out_dtype if out_dtype in (torch.float32, torch.float64) else torch.float32
    x, hx, params = n.cast(x, work), [n.cast(h, work) for h in hx], [n.cast(p, work)
                                                                      for p in params]
    if x.type.rank != 3:
        raise n.error(f"expects a batched [T, B, I] input (rank 3), got rank {x.type.rank}")
    if batch_first:  # [B, T, I] -> [T, B, I]
        x = n.build(ops.TRANSPOSE, [x], {"perm": [1, 0, 2]})
    finals: list[list[Value]] = [[] for _ in hx]
    for layer in range(num_layers):
        ys = []
        for d in range(directions):
            k = layer * directions + d
            initial = [slice_along(n, h, 0, k, 1) for h in hx]
            y, final = _layer_direction(n, kind, x, params[k * per:(k + 1) * per], initial,
                                        reverse=d == 1)
            ys.append(y)
            for s in range(len(hx)):
                finals[s].append(slice_along(n, final, 0, s, 1))
        x = _concat(n, ys, 2)  # [T, B, D*H]: the next layer's input
    if batch_first:
        x = n.build(ops.TRANSPOSE, [x], {"perm": [1, 0, 2]})
    results = [x] + [_concat(n, f, 0) for f in finals]
    return tuple(n.cast(r, out_dtype) for r in results)


def _converter(kind: str) -> Converter:
    def convert(n: AtenNode, *args) -> tuple[Value, ...]:
        return _recurrent(kind, n, *args)
    return convert


ATEN: dict[str, Converter] = {
    "aten.lstm.input": _converter("lstm"),
    "aten.gru.input": _converter("gru"),
    "aten.rnn_tanh.input": _converter("rnn_tanh"),
    "aten.rnn_relu.input": _converter("rnn_relu"),
}
