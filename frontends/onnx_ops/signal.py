"""Importers of the signal-processing ops: HannWindow, HammingWindow, BlackmanWindow, DFT, STFT
and MelWeightMatrix (opsets 17+), decomposed into foundation dlc ops; no dedicated dlc op.

Complex tensors follow ONNX: a trailing axis of 2 (real, imaginary), or of 1 for real input.
- Windows: `a0 - a1 * cos(2 pi n / N) + a2 * cos(4 pi n / N)` (N = size when periodic, size - 1
  otherwise) computed in f64 by dlc ops on a constant index tensor `n`, then cast to
  `output_datatype`. `size` must be a constant.
- DFT: a matmul with a constant matrix built at compile time, like weights. The signal axis is
  moved next to the complex axis and both are flattened, so one `[batch, N * C_in] x
  [N * C_in, K * C_out]` product computes real and imaginary parts: the matrix holds the cos and
  sin blocks, zero rows for samples past `dft_length` (truncation), no rows for missing ones
  (zero padding), `1/L` for the inverse and only `L // 2 + 1` columns when one-sided. An inverse
  one-sided DFT (IRFFT, real output) uses Hermitian symmetry: bins 1 .. L/2 - 1 count twice and
  the imaginary parts of the DC and Nyquist bins are ignored, as numpy's irfft does. `axis` is
  an attribute before opset 20 (default 1), an optional constant input since (default -2);
  `dft_length` must be a constant.
- STFT: frames are gathered with a constant index tensor [frames, frame_length], multiplied by
  the window (a runtime input, broadcast), then transformed as DFT along the frame axis.
- MelWeightMatrix: the filter edges (integer frequency bins) are computed from the constant
  inputs as ONNX's reference does (they play the role of the window's index tensor); the
  triangular weights are built by dlc ops on a constant bin index tensor.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.indexing import GATHER
from dlc.dialects.unary import UNARY
from dlc.element_types import numpy_dtype
from dlc.frontends.onnx_node import FrontendError, Importer, NodeContext, dense, element_type

FLOAT = 1  # onnx.TensorProto.FLOAT, the default output_datatype

# window op -> (a0, a1, a2) of a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
WINDOWS: dict[str, tuple[float, float, float]] = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25.0 / 46.0, 21.0 / 46.0, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


def _input(n: NodeContext, index: int) -> ir.Value | None:
    return n.inputs[index] if index < len(n.inputs) else None


def _present(n: NodeContext, index: int) -> bool:
    return index < len(n.node.input) and bool(n.node.input[index])


def _int_input(n: NodeContext, index: int, what: str) -> int:
    value = n.constant_input(index, what).reshape(-1)
    if value.size != 1:
        raise n.error(f"{what} must be a scalar, got {value.size} values")
    return int(value[0])


def _constant(n: NodeContext, array: np.ndarray) -> ir.Value:
    return n.build(ops.CONSTANT, [], {"value": dense(np.asarray(array), n)})


def _f64(n: NodeContext, array) -> ir.Value:
    return _constant(n, np.asarray(array, dtype=np.float64))


def _cast(n: NodeContext, x: ir.Value, to: ir.Type) -> ir.Value:
    return x if x.type.element_type == to else n.build(CAST, [x], {"to": to})


def _output_type(n: NodeContext, name: str) -> ir.Type:
    try:
        return element_type(int(n.attr(name, FLOAT)), name)
    except FrontendError as error:
        raise n.error(str(error)) from None


def _unary(n: NodeContext, fn: str, x: ir.Value) -> ir.Value:
    return n.build(UNARY, [x], {"fn": fn, "params": []})


# ----------------------------------------------------------------------------- windows


def _window(coefficients: tuple[float, float, float]) -> Importer:
    def import_window(n: NodeContext) -> list[ir.Value]:
        # HannWindow(size) -> cast(0.5 - 0.5 * cos(iota * 2 pi / N))
        size = _int_input(n, 0, "size")
        if size < 0:
            raise n.error(f"size {size} must be non-negative")
        n.check_shape([size], np.float64)  # (computed in f64, before numpy's arange)
        periodic = int(n.attr("periodic", 1))
        with np.errstate(divide="ignore", invalid="ignore"):  # size 1, symmetric: NaN
            step = np.float64(2 * math.pi) / np.float64(size if periodic else size - 1)
        a0, a1, a2 = coefficients
        angle = n.build(ops.MUL, [_f64(n, np.arange(size)), _f64(n, step)])
        value = n.build(ops.SUB, [_f64(n, a0),
                                  n.build(ops.MUL, [_f64(n, a1), _unary(n, "cos", angle)])])
        if a2:
            double = n.build(ops.MUL, [angle, _f64(n, 2.0)])
            value = n.build(ops.ADD, [value,
                                      n.build(ops.MUL, [_f64(n, a2), _unary(n, "cos", double)])])
        return [_cast(n, value, _output_type(n, "output_datatype"))]

    return import_window


# ----------------------------------------------------------------------------- DFT


def dft_matrix(samples: int, parts_in: int, length: int, inverse: bool, onesided: bool
               ) -> np.ndarray:
    """The f64 matrix [samples * parts_in, bins * parts_out] of a DFT of `length` points."""
    if inverse and onesided:
        return _irfft_matrix(samples, parts_in, length)
    bins = length // 2 + 1 if onesided and not inverse else length
    angle = _angles(samples, bins, length)
    cos, sin = _cos_sin(angle)
    sign = 1.0 if inverse else -1.0  # e^{sign i theta}
    valid = (np.arange(samples) < length)[:, None]  # samples past dft_length are dropped
    cos, sin = cos * valid, sin * valid
    blocks = np.zeros((samples, parts_in, bins, 2))
    blocks[:, 0, :, 0], blocks[:, 0, :, 1] = cos, sign * sin  # real input part
    if parts_in == 2:
        blocks[:, 1, :, 0], blocks[:, 1, :, 1] = -sign * sin, cos  # imaginary input part
    if inverse:
        blocks /= length
    return blocks.reshape(samples * parts_in, bins * 2)


def _irfft_matrix(bins_in: int, parts_in: int, length: int) -> np.ndarray:
    # x[n] = 1/L sum_k c_k (Re X_k cos - Im X_k sin), c_k = 2 but for the DC and Nyquist bins
    used = min(bins_in, length // 2 + 1)
    angle = _angles(bins_in, length, length)
    cos, sin = _cos_sin(angle)
    weight = np.where(np.arange(bins_in) < used, 2.0, 0.0)
    weight[0] = 1.0
    if length % 2 == 0 and length // 2 < bins_in:
        weight[length // 2] = 1.0
    blocks = np.zeros((bins_in, parts_in, length, 1))
    blocks[:, 0, :, 0] = weight[:, None] * cos / length
    if parts_in == 2:
        imaginary = -weight[:, None] * sin / length
        imaginary[0] = 0  # numpy ignores the imaginary parts of the DC and Nyquist bins
        if length % 2 == 0 and length // 2 < bins_in:
            imaginary[length // 2] = 0
        blocks[:, 1, :, 0] = imaginary
    return blocks.reshape(bins_in * parts_in, length)


def _angles(rows: int, columns: int, length: int) -> np.ndarray:
    """2 pi (i * j mod length) / length: reduced exactly before the float product."""
    product = np.arange(rows)[:, None] * np.arange(columns)[None, :]
    return 2 * np.pi * (product % max(length, 1)) / max(length, 1)


def _cos_sin(angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # exact zeros where cos or sin vanish (pi/2, pi multiples), as an FFT computes them
    cos, sin = np.cos(angle), np.sin(angle)
    cos[np.abs(cos) < 1e-15] = 0
    sin[np.abs(sin) < 1e-15] = 0
    return cos, sin


def dft(n: NodeContext, x: ir.Value, axis: int, length: int, inverse: bool,
        onesided: bool) -> ir.Value:
    """The DFT of x ([..., signal, ..., 1 or 2]) along `axis`, as one matmul."""
    shape = list(x.type.shape)
    rank = len(shape)
    parts = shape[-1]
    if parts not in (1, 2):
        raise n.error(f"the last axis must hold 1 (real) or 2 (complex) values, got {parts}")
    if not 0 <= axis < rank - 1:
        raise n.error(f"axis {axis} must be a signal axis, in [0, {rank - 1})")
    if length < 1:
        raise n.error(f"dft_length {length} must be positive")
    perm = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    moved = x if perm == list(range(rank)) else \
        n.build(ops.TRANSPOSE, [x], {"perm": perm})
    batch = [shape[d] for d in perm[:-2]]
    samples = shape[axis]
    dtype = np.dtype({16: np.float16, 32: np.float32, 64: np.float64}[_width(n, x)])
    # the f64 matrix and the result must fit in memory (checked before numpy builds them)
    columns = length if inverse and onesided else \
        2 * (length // 2 + 1 if onesided and not inverse else length)
    n.check_shape([samples * parts, columns], np.float64)
    n.check_shape([*batch, columns], dtype)
    matrix = dft_matrix(samples, parts, length, inverse, onesided)
    flat = n.build(ops.RESHAPE, [moved], {"shape": [math.prod(batch), samples * parts]})
    product = n.build(ops.MATMUL, [flat, _constant(n, matrix.astype(dtype))])
    parts_out = 1 if inverse and onesided else 2
    bins = matrix.shape[1] // parts_out
    result = n.build(ops.RESHAPE, [product], {"shape": [*batch, bins, parts_out]})
    if perm == list(range(rank)):
        return result
    inverse_perm = [perm.index(d) for d in range(rank)]
    return n.build(ops.TRANSPOSE, [result], {"perm": inverse_perm})


def _width(n: NodeContext, x: ir.Value) -> int:
    element = x.type.element_type
    widths = {ir.F16Type: 16, ir.F32Type: 32, ir.F64Type: 64}
    if type(element) not in widths:
        raise n.error(f"the signal must be f16, f32 or f64, got {element}")
    return widths[type(element)]


def import_dft(n: NodeContext) -> list[ir.Value]:
    # DFT(x) -> reshape(matmul(reshape(transpose(x)), constant cos/sin matrix))
    x = n.inputs[0]
    rank = x.type.rank
    if n.opset >= 20:
        axis = _int_input(n, 2, "axis") if _present(n, 2) else -2
    else:
        axis = int(n.attr("axis", 1))
    if not -rank <= axis < rank:
        raise n.error(f"axis {axis} is out of range for a rank-{rank} input")
    axis %= rank
    inverse, onesided = bool(n.attr("inverse", 0)), bool(n.attr("onesided", 0))
    if axis == rank - 1:
        raise n.error(f"axis {axis} is the complex axis; the signal axis must come before it")
    if _present(n, 1):
        length = _int_input(n, 1, "dft_length")
    elif inverse and onesided:
        length = 2 * (x.type.shape[axis] - 1)
    else:
        length = x.type.shape[axis]
    return [dft(n, x, axis, length, inverse, onesided)]


# ----------------------------------------------------------------------------- STFT


def import_stft(n: NodeContext) -> list[ir.Value]:
    # STFT(x) -> DFT(gather(x, frame indices) * window) along the frame axis
    x = n.inputs[0]
    if x.type.rank != 3:
        raise n.error(f"signal must be [batch, length, 1 or 2], got rank {x.type.rank}")
    signal_length = x.type.shape[1]
    step = _int_input(n, 1, "frame_step")
    window = _input(n, 2)
    frame_length = _int_input(n, 3, "frame_length") if _present(n, 3) else None
    if window is not None:
        if window.type.rank != 1:
            raise n.error(f"window must be 1-D, got rank {window.type.rank}")
        if frame_length is not None and frame_length != window.type.shape[0]:
            raise n.error(f"window length {window.type.shape[0]} differs from frame_length "
                          f"{frame_length}")
        frame_length = window.type.shape[0]
    frame_length = signal_length if frame_length is None else frame_length
    if step < 1 or not 1 <= frame_length <= signal_length:
        raise n.error(f"frame_step {step} must be positive and frame_length {frame_length} in "
                      f"[1, {signal_length}]")
    frames = 1 + (signal_length - frame_length) // step
    # the frames (and their gather indices) must fit in memory, before numpy builds them
    n.check_shape([frames, frame_length], np.int64)
    n.check_shape([x.type.shape[0], frames, frame_length, x.type.shape[2]],
                  numpy_dtype(x.type.element_type))
    indices = np.arange(frames)[:, None] * step + np.arange(frame_length)[None, :]
    framed = n.build(GATHER, [x, _constant(n, indices.astype(np.int64))], {"axis": 1})
    if window is not None:
        weights = n.build(ops.RESHAPE, [_cast(n, window, x.type.element_type)],
                          {"shape": [frame_length, 1]})
        framed = n.build(ops.MUL, [framed, weights])
    onesided = bool(n.attr("onesided", 1))
    return [dft(n, framed, 2, frame_length, False, onesided)]


# ----------------------------------------------------------------------------- MelWeightMatrix


def mel_edges(mel_bins: int, dft_length: int, sample_rate, low_hertz, high_hertz) -> np.ndarray:
    """The mel_bins + 2 filter edges as spectrogram bin indices (ONNX's reference formula)."""
    bins = np.arange(0, mel_bins + 2)
    low_mel = 2595 * np.log1p(low_hertz / 700) / np.log(10)
    high_mel = 2595 * np.log1p(high_hertz / 700) / np.log(10)
    step = (high_mel - low_mel) / bins.shape[0]
    hertz = 700 * np.expm1((bins * step + low_mel) / 2595 * np.log(10))
    return (((dft_length + 1) * hertz) // sample_rate).astype(np.int64)


def import_mel_weight_matrix(n: NodeContext) -> list[ir.Value]:
    # weight[j, i] = (j - lo_i) / (c_i - lo_i) on [lo_i, c_i], (hi_i - j) / (hi_i - c_i) on
    # (c_i, hi_i), 0 elsewhere: compares and selects on a constant bin index column j
    mel_bins = _int_input(n, 0, "num_mel_bins")
    dft_length = _int_input(n, 1, "dft_length")
    rate, low, high = (n.constant_input(i, what).reshape(()) for i, what in
                       ((2, "sample_rate"), (3, "lower_edge_hertz"), (4, "upper_edge_hertz")))
    if mel_bins < 1 or dft_length < 1 or rate <= 0:
        raise n.error(f"num_mel_bins {mel_bins}, dft_length {dft_length} and sample_rate "
                      f"{rate} must be positive")
    edges = mel_edges(mel_bins, dft_length, rate, low, high)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    rise = np.where(center > lower, center - lower, 1)  # a zero-width rise is 1 at the center
    fall = np.where(upper > center, upper - center, 1)
    j = _f64(n, np.arange(dft_length // 2 + 1)[:, None])

    def row(values: np.ndarray) -> ir.Value:
        return _f64(n, values[None, :])

    def compare(fn: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return n.build(COMPARE, [lhs, rhs], {"fn": fn})

    def both(a: ir.Value, b: ir.Value) -> ir.Value:
        return n.build(BINARY, [a, b], {"fn": "and"})

    rising = n.build(ops.DIV, [n.build(ops.SUB, [j, row(center - rise)]), row(rise)])
    falling = n.build(ops.DIV, [n.build(ops.SUB, [row(upper), j]), row(fall)])
    in_rise = both(compare("ge", j, row(lower)), compare("le", j, row(center)))
    in_fall = both(compare("gt", j, row(center)), compare("lt", j, row(upper)))
    zero = _f64(n, 0.0)
    weights = n.build(SELECT, [in_rise, rising, n.build(SELECT, [in_fall, falling, zero])])
    return [_cast(n, weights, _output_type(n, "output_datatype"))]


IMPORTERS: dict[str, Importer] = {
    **{op_type: _window(coefficients) for op_type, coefficients in WINDOWS.items()},
    "DFT": import_dft,
    "STFT": import_stft,
    "MelWeightMatrix": import_mel_weight_matrix,
}
