"""The recurrent `dlc` op: one direction of an RNN, GRU or LSTM layer as a loop over time.

- `dlc.recurrence {kind, reverse, activations, params, clip, input_forget}(x_gates, weights,
  initial, extra?) -> (y, final)`: the recurrence of one direction of a layer whose input
  projection is already done. `x_gates` [T, B, G·H] holds X_t·Wᵀ plus the biases that can be
  folded into it (all of them but GRU's Rbh), `weights` [H, G·H] is Rᵀ, `initial` [S, B, H]
  the initial states (S = 2 for an LSTM: h then c; 1 otherwise), `extra` an LSTM's peepholes
  [3·H] (i, o, f) or a GRU's Rbh [H]. Gates are in ONNX order (LSTM: i, o, f, c; GRU: z, r,
  h); a GRU is the linear-before-reset form, h~ = g(Xh + r ⊙ (H·Rhᵀ + Rbh)). `activations`
  names the layer's activations (`ACTIVATIONS`, comma-separated, as many as the kind uses:
  1, 2 or 3), `params` their alpha/beta parameters in that order, `clip` the cell clip ([] for
  none), `reverse` runs from the last step to the first. `y` [T, B, H] is every step's hidden
  state in time order, `final` [S, B, H] the last step's states.

The importer (`frontends/onnx_ops/recurrent.py`) builds one per direction; the lowering
(`passes/lowering/recurrent.py`) is an scf.for over the steps whose body is the step's matmul
and one elementwise generic, so the IR and the compile time do not grow with T.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import TensorTypes, is_float, shape_str, tensor

# ONNX activation name -> (the dlc.unary fn computing it, names of its parameters, defaults);
# Affine and ScaledTanh are arithmetic, not unary fns
ACTIVATIONS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...]]] = {
    "Relu": ("relu", (), ()),
    "Tanh": ("tanh", (), ()),
    "Sigmoid": ("sigmoid", (), ()),
    "LeakyRelu": ("leaky_relu", ("alpha",), (0.01,)),
    "ThresholdedRelu": ("thresholded_relu", ("alpha",), (1.0,)),
    "HardSigmoid": ("hard_sigmoid", ("alpha", "beta"), (0.2, 0.5)),
    "Elu": ("elu", ("alpha",), (1.0,)),
    "Softsign": ("softsign", (), ()),
    "Softplus": ("softplus", (), ()),
    "Affine": ("affine", ("alpha", "beta"), (1.0, 0.0)),
    "ScaledTanh": ("scaled_tanh", ("alpha", "beta"), (1.0, 1.0)),
}

# kind -> (gates, activations, states)
KINDS: dict[str, tuple[int, int, int]] = {"rnn": (1, 1, 1), "gru": (3, 2, 1), "lstm": (4, 3, 2)}


def activation_list(attrs: dict[str, Any]) -> list[tuple[str, list[float]]]:
    """The (name, parameters) of each activation of a recurrence's attributes."""
    names = [a for a in attrs["activations"].split(",") if a]
    params = list(attrs["params"])
    result = []
    for name in names:
        if name not in ACTIVATIONS:
            raise ShapeError(f"recurrence: unknown activation '{name}' "
                             f"(known: {', '.join(ACTIVATIONS)})")
        count = len(ACTIVATIONS[name][1])
        if len(params) < count:
            raise ShapeError(f"recurrence: activation {name} needs {count} parameters")
        result.append((name, params[:count]))
        params = params[count:]
    if params:
        raise ShapeError(f"recurrence: {len(params)} parameters left over after the "
                         f"activations {names}")
    return result


def infer_recurrence(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    if len(types) not in (3, 4):
        raise ShapeError(f"recurrence takes 3 or 4 operands, got {len(types)}")
    x, w, initial = types[:3]
    kind = attrs["kind"]
    if kind not in KINDS:
        raise ShapeError(f"recurrence: unknown kind '{kind}' (known: {', '.join(KINDS)})")
    gates, activations, states = KINDS[kind]
    if attrs["reverse"] not in (0, 1) or attrs["input_forget"] not in (0, 1):
        raise ShapeError("recurrence: reverse and input_forget must be 0 or 1")
    if attrs["input_forget"] and kind != "lstm":
        raise ShapeError("recurrence: input_forget is an LSTM attribute")
    if len(attrs["clip"]) > 1 or any(not c > 0 for c in attrs["clip"]):
        raise ShapeError(f"recurrence: clip must be [] or one positive value, got "
                         f"{attrs['clip']}")
    if len(activation_list(attrs)) != activations:
        raise ShapeError(f"recurrence: a {kind} takes {activations} activations, got "
                         f"'{attrs['activations']}'")
    element = x.element_type
    if not is_float(element) or any(t.element_type != element for t in types):
        raise ShapeError("recurrence: every operand must have the same float element type")
    if x.rank != 3 or w.rank != 2 or initial.rank != 3:
        raise ShapeError(f"recurrence expects x_gates [T, B, G*H], weights [H, G*H] and "
                         f"initial [S, B, H], got [{shape_str(x.shape)}], "
                         f"[{shape_str(w.shape)}], [{shape_str(initial.shape)}]")
    steps, batch, width = x.shape
    hidden = w.shape[0]
    if width != gates * hidden or w.shape[1] != width:
        raise ShapeError(f"recurrence: a {kind} of hidden size {hidden} needs x_gates and "
                         f"weights {gates * hidden} wide, got {width} and {w.shape[1]}")
    if list(initial.shape) != [states, batch, hidden]:
        raise ShapeError(f"recurrence: initial must be [{states}x{batch}x{hidden}], got "
                         f"[{shape_str(initial.shape)}]")
    if len(types) == 4:
        extra = {"lstm": 3 * hidden, "gru": hidden}.get(kind)
        if extra is None or list(types[3].shape) != [extra]:
            raise ShapeError(f"recurrence: extra is an LSTM's peepholes [3*H] or a GRU's Rbh "
                             f"[H], got [{shape_str(types[3].shape)}] for a {kind}")
    return [tensor([steps, batch, hidden], element), initial]


RECURRENCE = define(OpDef(
    "recurrence", ("x_gates", "weights", "initial", "extra?"), infer_recurrence,
    {"kind": "str", "reverse": "int", "activations": "str", "params": "floats",
     "clip": "floats", "input_forget": "int"},
    "one direction of an RNN, GRU (linear before reset) or LSTM over its input projection",
    results=("y", "final")))
