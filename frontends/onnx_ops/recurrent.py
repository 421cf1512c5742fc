"""Importers of the ONNX recurrent layers RNN, GRU and LSTM.

Each direction's input projection is one `dlc.matmul` of the whole input sequence by the input
weights (X·Wᵀ for every step at once, plus the biases). The recurrence itself is one
`dlc.recurrence` op per direction (`dialects/recurrent.py`), lowered to a loop over the steps,
so the IR does not grow with the sequence length. Three cases are unrolled instead, as a
straight-line chain of dlc ops per step (a `dlc.matmul` of the hidden state by the recurrence
weights, slices of the gates, the activations and the state update): float16 layers, unequal
`sequence_lens` and GRU's linear_before_reset=0 form (two dependent matmuls per step).
Every attribute is handled: direction (forward, reverse, bidirectional), activations with
activation_alpha/beta, clip, layout, GRU's linear_before_reset, LSTM's input_forget and
peepholes. `sequence_lens` must be a constant; steps past a batch entry's length keep its
state and output zeros (forward direction; a reverse direction with unequal lengths is refused
with a clear message).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, SELECT
from dlc.dialects.movement import CONCAT, SLICE
from dlc.dialects.recurrent import ACTIVATIONS, RECURRENCE
from dlc.dialects.unary import UNARY
from dlc.frontends.onnx_node import NodeContext, dense
from dlc.frontends.onnx_ops.normalization import constant

MAX_STEPS = 1024  # unrolling beyond this would make the IR (and compile time) explode

@dataclass(frozen=True)
class Activation:
    name: str
    params: tuple[float, ...]


@dataclass(frozen=True)
class Layer:
    """What a recurrent layer's attributes and inputs fix before unrolling."""

    kind: str  # RNN, GRU or LSTM
    gates: int
    hidden: int
    steps: int
    batch: int
    directions: list[str]  # "forward" and/or "reverse", in output order
    activations: list[Activation]  # per direction, the layer's activations in order
    clip: float | None
    lengths: np.ndarray | None  # per batch entry, None when every entry runs all steps


# ----------------------------------------------------------------------------- building blocks


def _slice(n: NodeContext, x: ir.Value, axis: int, start: int, size: int) -> ir.Value:
    shape = list(x.type.shape)
    starts = [0] * len(shape)
    sizes = list(shape)
    starts[axis], sizes[axis] = start, size
    return n.build(SLICE, [x], {"starts": starts, "sizes": sizes, "steps": [1] * len(shape)})


def _reshape(n: NodeContext, x: ir.Value, shape: list[int]) -> ir.Value:
    if list(x.type.shape) == shape:
        return x
    return n.build(ops.RESHAPE, [x], {"shape": shape})


def _transpose(n: NodeContext, x: ir.Value, perm: list[int]) -> ir.Value:
    return n.build(ops.TRANSPOSE, [x], {"perm": perm})


def _add(n: NodeContext, a: ir.Value, b: ir.Value | None) -> ir.Value:
    return a if b is None else n.build(ops.ADD, [a, b])


def _mul(n: NodeContext, a: ir.Value, b: ir.Value) -> ir.Value:
    return n.build(ops.MUL, [a, b])


def _concat(n: NodeContext, values: list[ir.Value], axis: int) -> ir.Value:
    result = values[0]
    for value in values[1:]:
        result = n.build(CONCAT, [result, value], {"axis": axis})
    return result


def _activate(n: NodeContext, f: Activation, x: ir.Value) -> ir.Value:
    fn, _, _ = ACTIVATIONS[f.name]
    if fn == "affine":  # alpha * x + beta
        alpha, beta = f.params
        return n.build(ops.ADD, [_mul(n, x, constant(n, alpha, x)), constant(n, beta, x)])
    if fn == "scaled_tanh":  # alpha * tanh(beta * x)
        alpha, beta = f.params
        inner = n.build(UNARY, [_mul(n, x, constant(n, beta, x))], {"fn": "tanh", "params": []})
        return _mul(n, inner, constant(n, alpha, x))
    if fn == "relu":
        return n.build(ops.RELU, [x])
    return n.build(UNARY, [x], {"fn": fn, "params": list(f.params)})


def _clip(n: NodeContext, layer: Layer, x: ir.Value) -> ir.Value:
    # clip(x) = min(max(x, -clip), clip), applied to every activation's input
    if layer.clip is None:
        return x
    low = n.build(BINARY, [x, constant(n, -layer.clip, x)], {"fn": "max"})
    return n.build(BINARY, [low, constant(n, layer.clip, x)], {"fn": "min"})


def _gate(n: NodeContext, gates: ir.Value, index: int, hidden: int) -> ir.Value:
    return _slice(n, gates, 1, index * hidden, hidden)


# ----------------------------------------------------------------------------- the layer


def _string(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _activations(n: NodeContext, kind: str, count: int, directions: int) -> list[Activation]:
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
    names = [_string(a) for a in n.attr("activations", [])] or defaults[kind] * directions
    if len(names) == count:  # one list shared by both directions
        names = names * directions
    if len(names) != count * directions:
        raise n.error(f"expects {count * directions} activations, got {len(names)}")
    alphas = list(n.attr("activation_alpha", []))
    betas = list(n.attr("activation_beta", []))
    result = []
    for name in names:
        canonical = next((a for a in ACTIVATIONS if a.lower() == name.lower()), None)
        if canonical is None:
            raise n.error(f"activation '{name}' is not supported "
                          f"(supported: {', '.join(ACTIVATIONS)})")
        _, params, defaults_ = ACTIVATIONS[canonical]
        values = []
        for param, default in zip(params, defaults_):
            source = alphas if param == "alpha" else betas
            values.append(float(source.pop(0)) if source else default)
        result.append(Activation(canonical, tuple(values)))
    return result


def _layer(n: NodeContext, kind: str, gates: int) -> Layer:
    x, w = n.inputs[0], n.inputs[1]
    if x.type.rank != 3 or w.type.rank != 3:
        raise n.error(f"X and W must be 3-D, got ranks {x.type.rank} and {w.type.rank}")
    layout = n.attr("layout", 0)
    steps, batch = (x.type.shape[1], x.type.shape[0]) if layout else x.type.shape[:2]
    direction = _string(n.attr("direction", "forward"))
    directions = {"forward": ["forward"], "reverse": ["reverse"],
                  "bidirectional": ["forward", "reverse"]}.get(direction)
    if directions is None:
        raise n.error(f"unknown direction '{direction}'")
    hidden = n.attr("hidden_size", w.type.shape[1] // gates)
    if w.type.shape[0] != len(directions) or w.type.shape[1] != gates * hidden:
        raise n.error(f"W has shape {list(w.type.shape)}, expected "
                      f"[{len(directions)}, {gates * hidden}, {x.type.shape[2]}]")
    lengths = None
    if len(n.inputs) > 4 and n.inputs[4] is not None:
        lengths = n.constant_input(4, "sequence_lens").astype(np.int64).reshape(-1)
        if (lengths == steps).all():
            lengths = None
        elif "reverse" in directions:
            raise n.error("sequence_lens shorter than the sequence are supported in the "
                          "forward direction only")
    clip = n.attr("clip", None)
    activations = _activations(n, kind, {"RNN": 1, "GRU": 2, "LSTM": 3}[kind], len(directions))
    return Layer(kind, gates, hidden, steps, batch, directions, activations,
                 None if clip is None else float(clip), lengths)


def _input(n: NodeContext, index: int) -> ir.Value | None:
    return n.inputs[index] if len(n.inputs) > index else None


def _direction_input(n: NodeContext, index: int, d: int) -> ir.Value | None:
    # input [directions, ...] -> its slice for direction d, without the leading axis
    value = _input(n, index)
    if value is None:
        return None
    if index in STATE_INPUTS.values() and n.attr("layout", 0):  # [B, D, H] -> [D, B, H]
        value = _transpose(n, value, [1, 0, 2])
    shape = list(value.type.shape)
    return _reshape(n, _slice(n, value, 0, d, 1), shape[1:])


def _zeros_tensor(n: NodeContext, like: ir.Value, shape: list[int]) -> ir.Value:
    dtype = np.float16 if isinstance(like.type.element_type, ir.F16Type) else (
        np.float64 if isinstance(like.type.element_type, ir.F64Type) else np.float32)
    return n.build(ops.CONSTANT, [], {"value": dense(np.zeros(shape, dtype), n)})


@dataclass
class Direction:
    """The weights of one direction, arranged for its steps."""

    x_gates: ir.Value  # X · Wᵀ + Wb (+ Rb) for every step, [steps * batch, gates * hidden]
    r_t: ir.Value  # Rᵀ, [hidden, gates * hidden]
    r_bias: ir.Value | None  # GRU's Rbh [hidden], which goes with the reset gate
    peephole: ir.Value | None  # P, [3 * hidden]

    def at(self, n: NodeContext, layer: Layer, t: int) -> ir.Value:
        """Step t's X_t · Wᵀ + biases, [batch, gates * hidden]."""
        return _slice(n, self.x_gates, 0, t * layer.batch, layer.batch)


def _direction(n: NodeContext, layer: Layer, x_steps: ir.Value, d: int) -> Direction:
    size = layer.gates * layer.hidden
    w = _direction_input(n, 1, d)  # [G*H, I]
    r = _direction_input(n, 2, d)  # [G*H, H]
    b = _direction_input(n, 3, d)  # [2*G*H]
    # X · Wᵀ for all steps at once: [T*B, I] x [I, G*H]
    xw = n.build(ops.MATMUL, [x_steps, _transpose(n, w, [1, 0])])
    bias = r_bias = None
    if b is not None:
        w_bias, r_bias = _slice(n, b, 0, 0, size), _slice(n, b, 0, size, size)
        if layer.kind == "GRU":  # the h gate's Rbh goes with the reset gate: keep it apart
            h = layer.hidden
            rzr = _slice(n, r_bias, 0, 0, 2 * h)
            bias = n.build(ops.ADD, [w_bias, _concat(n, [rzr, _zeros_tensor(n, b, [h])], 0)])
            r_bias = _slice(n, r_bias, 0, 2 * h, h)
        else:
            bias, r_bias = n.build(ops.ADD, [w_bias, r_bias]), None
    return Direction(_add(n, xw, bias), _transpose(n, r, [1, 0]), r_bias,
                     _direction_input(n, 7, d))


def _rnn_step(n: NodeContext, layer: Layer, acts: list[Activation], wd: Direction,
              t: int, state: dict[str, ir.Value]) -> dict[str, ir.Value]:
    # H = f(X·Wᵀ + H·Rᵀ + Wb + Rb)
    pre = n.build(ops.ADD, [wd.at(n, layer, t), n.build(ops.MATMUL, [state["h"], wd.r_t])])
    return {"h": _activate(n, acts[0], _clip(n, layer, pre))}


def _gru_step(n: NodeContext, layer: Layer, acts: list[Activation], wd: Direction,
              t: int, state: dict[str, ir.Value]) -> dict[str, ir.Value]:
    f, g = acts
    h_prev, hid = state["h"], layer.hidden
    xg = wd.at(n, layer, t)
    r_z_r = _slice(n, wd.r_t, 1, 0, 2 * hid)
    r_h = _slice(n, wd.r_t, 1, 2 * hid, hid)
    zr = n.build(ops.ADD, [_slice(n, xg, 1, 0, 2 * hid),
                           n.build(ops.MATMUL, [h_prev, r_z_r])])
    z = _activate(n, f, _clip(n, layer, _gate(n, zr, 0, hid)))
    r = _activate(n, f, _clip(n, layer, _gate(n, zr, 1, hid)))
    rbh = wd.r_bias
    if n.attr("linear_before_reset", 0):  # h~ = g(Xh + r ⊙ (H·Rhᵀ + Rbh))
        recurrent = _mul(n, r, _add(n, n.build(ops.MATMUL, [h_prev, r_h]), rbh))
    else:  # h~ = g(Xh + (r ⊙ H)·Rhᵀ + Rbh)
        recurrent = _add(n, n.build(ops.MATMUL, [_mul(n, r, h_prev), r_h]), rbh)
    pre = n.build(ops.ADD, [_gate(n, xg, 2, hid), recurrent])
    candidate = _activate(n, g, _clip(n, layer, pre))
    # H = (1 - z) ⊙ h~ + z ⊙ H_prev = h~ + z ⊙ (H_prev - h~)
    h = n.build(ops.ADD, [candidate, _mul(n, z, n.build(ops.SUB, [h_prev, candidate]))])
    return {"h": h}


def _lstm_step(n: NodeContext, layer: Layer, acts: list[Activation], wd: Direction,
               t: int, state: dict[str, ir.Value]) -> dict[str, ir.Value]:
    f, g, h_act = acts
    hid, c_prev = layer.hidden, state["c"]
    pre = n.build(ops.ADD, [wd.at(n, layer, t), n.build(ops.MATMUL, [state["h"], wd.r_t])])
    p = wd.peephole

    def peep(value: ir.Value, index: int, cell: ir.Value) -> ir.Value:
        if p is None:
            return value
        return n.build(ops.ADD, [value, _mul(n, _slice(n, p, 0, index * hid, hid), cell)])

    i = _activate(n, f, _clip(n, layer, peep(_gate(n, pre, 0, hid), 0, c_prev)))
    if n.attr("input_forget", 0):  # f = 1 - i
        forget = n.build(ops.SUB, [constant(n, 1.0, i), i])
    else:
        forget = _activate(n, f, _clip(n, layer, peep(_gate(n, pre, 2, hid), 2, c_prev)))
    cell = _activate(n, g, _clip(n, layer, _gate(n, pre, 3, hid)))
    c = n.build(ops.ADD, [_mul(n, forget, c_prev), _mul(n, i, cell)])
    o = _activate(n, f, _clip(n, layer, peep(_gate(n, pre, 1, hid), 1, c)))
    return {"h": _mul(n, o, _activate(n, h_act, c)), "c": c}


STEPS = {"RNN": (1, _rnn_step), "GRU": (3, _gru_step), "LSTM": (4, _lstm_step)}
STATE_INPUTS = {"h": 5, "c": 6}  # the index of initial_h and initial_c


def _masked(n: NodeContext, layer: Layer, t: int, new: ir.Value,
            old: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(the next state, the step's output) with batch entries past their length held/zeroed."""
    if layer.lengths is None:
        return new, new
    active = (layer.lengths > t).reshape(layer.batch, 1)
    if active.all():
        return new, new
    mask = n.build(ops.CONSTANT, [], {"value": dense(active, n)})
    zeros = _zeros_tensor(n, new, [layer.batch, layer.hidden])
    return (n.build(SELECT, [mask, new, old]), n.build(SELECT, [mask, new, zeros]))


def _start(n: NodeContext, layer: Layer, x_steps: ir.Value,
           d: int) -> tuple[list[Activation], Direction, dict[str, ir.Value]]:
    """Direction d's activations, weights and initial states ([batch, hidden]: h, and an
    LSTM's c; zeros where the node has none)."""
    per_direction = len(layer.activations) // len(layer.directions)
    acts = layer.activations[d * per_direction:(d + 1) * per_direction]
    wd = _direction(n, layer, x_steps, d)
    state = {}
    for key in ["h", "c"] if layer.kind == "LSTM" else ["h"]:
        initial = _direction_input(n, STATE_INPUTS[key], d)
        state[key] = initial if initial is not None else _zeros_tensor(
            n, x_steps, [layer.batch, layer.hidden])
    return acts, wd, state


def _run_direction(n: NodeContext, layer: Layer, x_steps: ir.Value,
                   d: int) -> tuple[list[ir.Value], dict[str, ir.Value]]:
    """The per-step outputs [batch, hidden] in time order and the final states."""
    _, step = STEPS[layer.kind]
    acts, wd, state = _start(n, layer, x_steps, d)
    keys = list(state)
    order = range(layer.steps)
    if layer.directions[d] == "reverse":
        order = reversed(order)
    outputs: dict[int, ir.Value] = {}
    for t in order:
        new = step(n, layer, acts, wd, t, state)
        for key in keys:
            state[key], out = _masked(n, layer, t, new[key], state[key])
            if key == "h":
                outputs[t] = out
    return [outputs[t] for t in range(layer.steps)], state


def _looped(n: NodeContext, layer: Layer, x: ir.Value) -> bool:
    """Whether the layer runs as `dlc.recurrence` loops (the unrolled form stays for float16,
    per-entry sequence lengths and GRU's reset-before-linear form, whose step has two
    dependent matmuls)."""
    element = x.type.element_type
    return (isinstance(element, (ir.F32Type, ir.F64Type)) and layer.lengths is None
            and (layer.kind != "GRU" or n.attr("linear_before_reset", 0)))


def _loop_direction(n: NodeContext, layer: Layer, x_steps: ir.Value,
                    d: int) -> tuple[ir.Value, dict[str, ir.Value]]:
    """One direction as a dlc.recurrence: its outputs [T, 1, B, H] and final states."""
    acts, wd, initial = _start(n, layer, x_steps, d)
    keys = list(initial)
    x_gates = _reshape(n, wd.x_gates, [layer.steps, layer.batch, layer.gates * layer.hidden])
    extra = wd.peephole if layer.kind == "LSTM" else wd.r_bias
    attrs = {"kind": layer.kind.lower(), "reverse": int(layer.directions[d] == "reverse"),
             "activations": ",".join(a.name for a in acts),
             "params": [p for a in acts for p in a.params],
             "clip": [] if layer.clip is None else [layer.clip],
             "input_forget": int(bool(n.attr("input_forget", 0))) if layer.kind == "LSTM" else 0}
    stacked = _concat(n, [_reshape(n, v, [1, layer.batch, layer.hidden])
                          for v in initial.values()], 0)
    operands = [x_gates, wd.r_t, stacked] + ([extra] if extra is not None else [])
    y, final = n.build(RECURRENCE, operands, attrs).owner.results
    states = {key: _reshape(n, _slice(n, final, 0, k, 1), [layer.batch, layer.hidden])
              for k, key in enumerate(keys)}
    return _reshape(n, y, [layer.steps, 1, layer.batch, layer.hidden]), states


def _import_recurrent(n: NodeContext, kind: str) -> list[ir.Value]:
    gates, _ = STEPS[kind]
    layer = _layer(n, kind, gates)
    x = n.inputs[0]
    layout = n.attr("layout", 0)
    if layout:  # [B, T, I] -> [T, B, I]
        x = _transpose(n, x, [1, 0, 2])
    x_steps = _reshape(n, x, [layer.steps * layer.batch, x.type.shape[2]])
    looped = _looped(n, layer, x)
    if not looped and layer.steps > MAX_STEPS:
        raise n.error(f"a sequence of {layer.steps} steps is longer than the {MAX_STEPS} dlc "
                      "unrolls (float16, unequal sequence_lens or a GRU with "
                      "linear_before_reset=0)")
    ys, finals = [], {"h": [], "c": []}
    for d in range(len(layer.directions)):
        if looped:
            stacked, state = _loop_direction(n, layer, x_steps, d)
        else:
            outputs, state = _run_direction(n, layer, x_steps, d)
            # [T, B, H] for this direction, as [T, 1, B, H]
            stacked = _concat(n, [_reshape(n, o, [1, 1, layer.batch, layer.hidden])
                                  for o in outputs], 0)
        ys.append(stacked)
        for key, value in state.items():
            finals[key].append(_reshape(n, value, [1, layer.batch, layer.hidden]))
    y = _concat(n, ys, 1)  # [T, D, B, H]
    results = [y] + [_concat(n, finals[key], 0) for key in ("h", "c") if finals[key]]
    if layout:  # Y [B, T, D, H], Y_h/Y_c [B, D, H]
        results = [_transpose(n, results[0], [2, 0, 1, 3])] + [
            _transpose(n, r, [1, 0, 2]) for r in results[1:]]
    return results


def import_rnn(n: NodeContext) -> list[ir.Value]:
    return _import_recurrent(n, "RNN")


def import_gru(n: NodeContext) -> list[ir.Value]:
    return _import_recurrent(n, "GRU")


def import_lstm(n: NodeContext) -> list[ir.Value]:
    return _import_recurrent(n, "LSTM")


IMPORTERS = {"RNN": import_rnn, "GRU": import_gru, "LSTM": import_lstm}
