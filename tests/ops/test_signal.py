"""Signal-processing ops against onnx.reference: the Hann, Hamming and Blackman windows, DFT
(opsets 17 and 20: axis, inverse, onesided, IRFFT, dft_length padding and truncation, real and
complex input), STFT (window, frame_length, onesided) and MelWeightMatrix."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import dlc
from tests.conftest import make_model, random_array, run_both

# a DFT is a matmul: sums of products in another order than the FFT's
SIGNAL_TOLERANCES = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-4, 1e-4),
    np.dtype(np.float64): (1e-10, 1e-10),
}


def _model(op_type: str, inputs: dict, constants: dict, opset: int, **attributes):
    """One `op_type` node; `inputs` are graph inputs, `constants` initializers (None: absent)."""
    names = [*inputs, *constants]
    node = helper.make_node(op_type, [n if not n.startswith("_") else "" for n in names], ["y"],
                            **attributes)
    specs = {n: (a.dtype, list(a.shape)) for n, a in inputs.items()}
    initializers = {n: a for n, a in constants.items() if not n.startswith("_")}
    return make_model([node], specs | {n: (a.dtype, list(a.shape))
                                       for n, a in initializers.items()},
                      ["y"], initializers=initializers, opset=opset)


# ----------------------------------------------------------------------------- windows


@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("size,periodic,output", [
    (10, 1, TensorProto.FLOAT), (7, 0, TensorProto.DOUBLE), (1, 1, TensorProto.FLOAT16)])
def test_window(op_type, size, periodic, output):
    model = _model(op_type, {}, {"size": np.array(size, np.int64)}, 17, periodic=periodic,
                   output_datatype=output)
    run_both(model, {}, tolerances=SIGNAL_TOLERANCES)


# ----------------------------------------------------------------------------- DFT


def _complex(shape, dtype=np.float32, seed=0):
    return random_array(shape, dtype, seed=seed)


DFTS = {
    # name -> (x shape, opset, axis, dft_length, inverse, onesided)
    "real axis 1": ([2, 8, 1], 17, 1, None, 0, 0),
    "complex axis 1": ([2, 8, 2], 17, 1, None, 0, 0),
    "complex axis 0 opset 20": ([6, 3, 2], 20, 0, None, 0, 0),
    "axis -2 opset 20 default": ([2, 3, 5, 2], 20, None, None, 0, 0),
    "onesided real": ([1, 9, 4, 1], 17, 1, None, 0, 1),
    "inverse complex": ([1, 6, 3, 2], 20, 1, None, 1, 0),
    "irfft even": ([2, 5, 2], 20, 1, 8, 1, 1),
    "irfft odd": ([2, 5, 2], 20, 1, 9, 1, 1),
    "irfft default length": ([3, 5, 2], 17, 1, None, 1, 1),
    "zero padded": ([2, 5, 1], 20, 1, 8, 0, 0),
    "truncated": ([2, 9, 1], 20, 1, 6, 0, 1),
    "truncated complex": ([2, 9, 2], 20, 1, 6, 0, 0),
}


@pytest.mark.parametrize("case", list(DFTS.values()), ids=list(DFTS))
def test_dft(case):
    shape, opset, axis, length, inverse, onesided = case
    x = _complex(shape)
    constants = {"_length" if length is None else "dft_length": np.array(length or 0, np.int64)}
    attributes = {"inverse": inverse, "onesided": onesided}
    if opset >= 20 and axis is not None:
        constants["axis"] = np.array(axis, np.int64)
    elif opset < 20:
        attributes["axis"] = axis
    run_both(_model("DFT", {"x": x}, constants, opset, **attributes), [x],
             tolerances=SIGNAL_TOLERANCES)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_dft_dtypes(dtype):
    x = _complex([2, 6, 2], dtype)
    run_both(_model("DFT", {"x": x}, {}, 20), [x], tolerances=SIGNAL_TOLERANCES)


# ----------------------------------------------------------------------------- STFT


@pytest.mark.parametrize("length,step,frame,window,onesided,parts", [
    (16, 4, 8, True, 1, 1),
    (17, 3, 6, False, 0, 1),
    (12, 5, 4, True, 0, 2),
    (10, 2, None, True, 1, 1),  # the window gives the frame length
])
def test_stft(length, step, frame, window, onesided, parts):
    x = _complex([2, length, parts], seed=1)
    inputs = {"x": x}
    constants = {"frame_step": np.array(step, np.int64)}
    window_length = frame or 5
    if window:
        inputs["window"] = np.hanning(window_length).astype(np.float32)
    else:
        constants["_window"] = np.zeros(0)
    if frame is not None:
        constants["frame_length"] = np.array(frame, np.int64)
    # graph inputs first: x, then the window; the node's order is restored by name below
    names = ["x", "frame_step", "window" if window else "", "frame_length" if frame else ""]
    node = helper.make_node("STFT", names, ["y"], onesided=onesided)
    initializers = {n: a for n, a in constants.items() if not n.startswith("_")}
    specs = {n: (a.dtype, list(a.shape)) for n, a in {**inputs, **initializers}.items()}
    model = make_model([node], specs, ["y"], initializers=initializers, opset=17)
    run_both(model, inputs, tolerances=SIGNAL_TOLERANCES)


# ----------------------------------------------------------------------------- MelWeightMatrix


@pytest.mark.parametrize("bins,length,rate,low,high,output", [
    (8, 16, 8192, 0.0, 4096.0, TensorProto.FLOAT),
    (5, 32, 16000, 300.0, 7000.0, TensorProto.DOUBLE),
    (12, 10, 8000, 0.0, 4000.0, TensorProto.FLOAT),  # narrow filters: zero-width rises
])
def test_mel_weight_matrix(bins, length, rate, low, high, output):
    constants = {"num_mel_bins": np.array(bins, np.int64),
                 "dft_length": np.array(length, np.int64),
                 "sample_rate": np.array(rate, np.int64),
                 "lower_edge_hertz": np.array(low, np.float32),
                 "upper_edge_hertz": np.array(high, np.float32)}
    model = _model("MelWeightMatrix", {}, constants, 17, output_datatype=output)
    run_both(model, {}, tolerances=SIGNAL_TOLERANCES)


# ----------------------------------------------------------------------------- errors


def test_dft_rejects_the_complex_axis():
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"])
    model = make_model([node], {"x": (np.float32, [2, 4, 2]), "axis": (np.int64, [])},
                       {"y": (np.float32, [2, 4, 2])},
                       initializers={"axis": np.array(2, np.int64)}, opset=20, check=False)
    with pytest.raises(dlc.DlcError, match="is the complex axis"):
        dlc.compile(model)


def test_window_needs_a_constant_size():
    node = helper.make_node("HannWindow", ["size"], ["y"])
    model = make_model([node], {"size": (np.int64, [])}, {"y": (np.float32, [4])}, opset=17)
    with pytest.raises(dlc.DlcError, match="needs its size input 'size' to be a constant"):
        dlc.compile(model)
