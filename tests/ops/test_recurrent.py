"""RNN, GRU and LSTM against onnx.reference and onnxruntime: directions, layouts, activations
with parameters, clip, biases, initial states, peepholes, sequence_lens; the loop form
(dlc.recurrence) and the unrolled one (float16, unequal lengths, GRU's linear_before_reset=0)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model, random_array, run_both

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
TOLERANCES = {np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-10, 1e-10)}


def layer_model(op: str, steps: int = 3, batch: int = 2, size: int = 4, hidden: int = 5,
                directions: int = 1, bias: bool = True, initial: bool = False,
                peephole: bool = False, lengths: np.ndarray | None = None, layout: int = 0,
                dtype=np.float32, **attrs):
    """A one-node model and its feeds; sequence_lens, when given, is an initializer."""
    g = GATES[op]
    x_shape = [batch, steps, size] if layout else [steps, batch, size]
    feeds = {"X": random_array(x_shape, dtype, seed=1),
             "W": random_array([directions, g * hidden, size], dtype, seed=2) * 0.5,
             "R": random_array([directions, g * hidden, hidden], dtype, seed=3) * 0.5}
    names = ["X", "W", "R"]
    if bias or initial or peephole or lengths is not None:
        names.append("B" if bias else "")
    if bias:
        feeds["B"] = random_array([directions, 2 * g * hidden], dtype, seed=4)
    initializers = {}
    if initial or peephole or lengths is not None:
        names.append("L" if lengths is not None else "")
        if lengths is not None:
            initializers["L"] = lengths.astype(np.int32)
    state_shape = [batch, directions, hidden] if layout else [directions, batch, hidden]
    if initial or peephole:
        names.append("H0" if initial else "")
        if initial:
            feeds["H0"] = random_array(state_shape, dtype, seed=5)
    if op == "LSTM" and (initial or peephole):
        names.append("C0" if initial else "")
        if initial:
            feeds["C0"] = random_array(state_shape, dtype, seed=6)
        if peephole:
            names.append("P")
            feeds["P"] = random_array([directions, 3 * hidden], dtype, seed=7)
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outputs, hidden_size=hidden, layout=layout, **attrs)
    specs = {k: (v.dtype, list(v.shape)) for k, v in feeds.items()}
    model = make_model([node], specs, outputs, initializers=initializers, opset=14)
    return model, feeds


def run_against_onnxruntime(model, feeds) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = dlc.compile(model)(feeds)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions(op, direction):
    model, feeds = layer_model(op, directions=2 if direction == "bidirectional" else 1,
                               initial=True, direction=direction)
    run_both(model, feeds, tolerances=TOLERANCES)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_linear_before_reset_directions(direction):
    # (the form PyTorch exports: a loop; the default linear_before_reset=0 is unrolled)
    model, feeds = layer_model("GRU", directions=2 if direction == "bidirectional" else 1,
                               initial=True, direction=direction, linear_before_reset=1)
    run_both(model, feeds, tolerances=TOLERANCES)


def _dlc_ops(model) -> list[str]:
    text = dlc.compile(model).ir("dlc")
    return [line.split('"')[1] for line in text.splitlines() if '"dlc.' in line]


@pytest.mark.parametrize("op", ["RNN", "LSTM"])
def test_layer_is_one_loop_whatever_the_sequence_length(op):
    # the IR of a bidirectional layer has the same ops at 3 steps and at 40: one
    # dlc.recurrence per direction (unrolled, 40 steps were hundreds of ops)
    short, _ = layer_model(op, steps=3, directions=2, initial=True, direction="bidirectional")
    long, _ = layer_model(op, steps=40, directions=2, initial=True, direction="bidirectional")
    assert _dlc_ops(short) == _dlc_ops(long)
    assert _dlc_ops(long).count("dlc.recurrence") == 2


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_sequence_longer_than_the_unroll_limit(op):
    # 1,500 steps (the unrolled form refuses more than 1,024): against onnxruntime
    model, feeds = layer_model(op, steps=1500, batch=2, size=3, hidden=4, initial=True,
                               direction="bidirectional", directions=2,
                               **({"linear_before_reset": 1} if op == "GRU" else {}))
    for name in ("W", "R"):  # small recurrent weights: a stable 1,500-step recurrence
        feeds[name] = feeds[name] * 0.5
    run_against_onnxruntime(model, feeds)


def test_float16_layer_is_unrolled_and_close_to_float32():
    model32, feeds = layer_model("LSTM", steps=4, initial=True)
    model16, _ = layer_model("LSTM", steps=4, initial=True, dtype=np.float16)
    feeds16 = {k: v.astype(np.float16) for k, v in feeds.items()}
    assert "dlc.recurrence" not in dlc.compile(model16).ir("dlc")
    for a, e in zip(dlc.compile(model16)(feeds16), dlc.compile(model32)(feeds)):
        np.testing.assert_allclose(a.astype(np.float32), e, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_batch_first_layout_without_bias(op):
    model, feeds = layer_model(op, bias=False, initial=True, layout=1)
    run_both(model, feeds, tolerances=TOLERANCES)


def test_gru_linear_before_reset_float64():
    model, feeds = layer_model("GRU", dtype=np.float64, linear_before_reset=1)
    run_both(model, feeds, tolerances=TOLERANCES)


def test_lstm_peepholes():
    model, feeds = layer_model("LSTM", peephole=True)
    run_both(model, feeds, tolerances=TOLERANCES)


def test_lstm_clip_and_input_forget():
    # onnx.reference ignores clip and input_forget: onnxruntime is the oracle here
    model, feeds = layer_model("LSTM", peephole=True, clip=0.7, input_forget=1)
    run_against_onnxruntime(model, feeds)


@pytest.mark.parametrize("op,activations,alpha,beta", [
    ("RNN", ["LeakyRelu"], [0.3], []),
    ("GRU", ["HardSigmoid", "ScaledTanh"], [0.3, 0.8], [0.4, 1.2]),
    ("LSTM", ["Sigmoid", "Affine", "Softsign"], [0.5], [0.1]),
])
def test_activations_with_parameters(op, activations, alpha, beta):
    # onnx.reference ignores GRU/LSTM activations: onnxruntime is the oracle here
    params = {k: v for k, v in (("activation_alpha", alpha), ("activation_beta", beta)) if v}
    model, feeds = layer_model(op, activations=activations, **params)
    run_against_onnxruntime(model, feeds)


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_sequence_lens_hold_state_and_zero_outputs(op):
    # onnx.reference ignores sequence_lens: onnxruntime is the oracle here
    model, feeds = layer_model(op, steps=4, batch=3, lengths=np.array([4, 2, 1]))
    run_against_onnxruntime(model, feeds)


def test_reverse_with_unequal_lengths_is_a_clear_error():
    model, _ = layer_model("RNN", lengths=np.array([3, 1]), direction="reverse")
    with pytest.raises(dlc.DlcError, match="sequence_lens .* forward direction only"):
        dlc.compile(model)


def test_unknown_activation_is_a_clear_error():
    model, _ = layer_model("RNN", activations=["Gaussian"])
    with pytest.raises(dlc.DlcError, match="activation 'Gaussian' is not supported"):
        dlc.compile(model)
