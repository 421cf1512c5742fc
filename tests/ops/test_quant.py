"""Quantization ops against onnx.reference: QuantizeLinear, DequantizeLinear (per tensor, per
axis, blocked; every integer type; opsets 10 to 23), MatMulInteger, QLinearMatMul, ConvInteger,
QLinearConv, DynamicQuantizeLinear and BitCast, plus the errors of their shape rules."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import dlc
from tests.conftest import make_model, node_model, random_array, run_both

QUANTIZED = [np.uint8, np.int8, np.uint16, np.int16]


def _x(shape, dtype=np.float32, seed=0) -> np.ndarray:
    """Values that hit ties (k + 0.5 after division by 0.5), saturation and both signs."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-600, 600, size=shape) * 0.25).astype(dtype)


def _zero_point(dtype, shape=()) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.full(shape, (int(info.min) + int(info.max)) // 3, dtype=dtype)


# ----------------------------------------------------------------------------- QuantizeLinear


@pytest.mark.parametrize("dtype", QUANTIZED)
def test_quantize_per_tensor(dtype):
    inputs = [_x([3, 4]), np.array(0.5, np.float32), _zero_point(dtype)]
    run_both(node_model("QuantizeLinear", inputs, opset=21), inputs)


@pytest.mark.parametrize("xtype", [np.float16, np.float64])
def test_quantize_float_types(xtype):
    x = _x([2, 5], xtype)
    scale = np.array([0.75], xtype)  # a one-element 1-D scale is per tensor
    run_both(node_model("QuantizeLinear", [x, scale, np.array([3], np.int8)], opset=19),
             [x, scale, np.array([3], np.int8)])


@pytest.mark.parametrize("opset", [10, 13])
def test_quantize_without_zero_point_is_uint8(opset):
    x = _x([6])
    scale = np.array(0.5, np.float32)
    run_both(node_model("QuantizeLinear", [x, scale], opset=opset), [x, scale])


def test_quantize_output_dtype():
    x = _x([2, 3])
    scale = np.array(0.5, np.float32)
    model = node_model("QuantizeLinear", [x, scale], opset=21, output_dtype=TensorProto.INT16)
    run_both(model, [x, scale])


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_quantize_per_axis(axis):
    x = _x([3, 4, 5])
    size = x.shape[axis]
    scale = np.linspace(0.25, 2.0, size).astype(np.float32)
    zero_point = np.arange(size, dtype=np.uint8) * 7
    model = node_model("QuantizeLinear", [x, scale, zero_point], opset=13, axis=axis)
    run_both(model, [x, scale, zero_point])


@pytest.mark.parametrize("block_size", [2, 3])
def test_quantize_blocked(block_size):
    x = _x([3, 7])  # 7 is not a multiple of the block size: the last block is partial
    blocks = -(-7 // block_size)
    scale = np.linspace(0.25, 2.0, 3 * blocks).astype(np.float32).reshape(3, blocks)
    zero_point = random_array([3, blocks], np.int8, seed=4)
    model = node_model("QuantizeLinear", [x, scale, zero_point], opset=21, axis=1,
                       block_size=block_size)
    run_both(model, [x, scale, zero_point])


# ----------------------------------------------------------------------------- DequantizeLinear


@pytest.mark.parametrize("dtype", [*QUANTIZED, np.int32])
def test_dequantize_per_tensor(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, 0, 3, info.max - 1, info.max], dtype=dtype)
    zero_point = np.array(0 if dtype == np.int32 else _zero_point(dtype), dtype=dtype)
    scale = np.array(0.125, np.float32)
    run_both(node_model("DequantizeLinear", [x, scale, zero_point], opset=21),
             [x, scale, zero_point])


def test_dequantize_without_zero_point_f16_scale():
    x = random_array([2, 3], np.int8, low=-128, high=128)
    scale = np.array(0.5, np.float16)
    run_both(node_model("DequantizeLinear", [x, scale], opset=19), [x, scale])


def test_dequantize_per_axis():
    x = random_array([2, 3, 4], np.uint8, low=0, high=256)
    scale = np.array([2, 4, 0.5], np.float32)
    zero_point = np.array([84, 24, 196], np.uint8)
    run_both(node_model("DequantizeLinear", [x, scale, zero_point], opset=19),
             [x, scale, zero_point])


def test_dequantize_blocked():
    x = random_array([5, 2], np.int16, low=-1000, high=1000)
    scale = np.array([[1.5, 2.0], [0.5, 0.25]], np.float32)
    zero_point = np.array([[1, -2], [3, 0]], np.int16)
    model = node_model("DequantizeLinear", [x, scale, zero_point], opset=21, axis=0,
                       block_size=3)
    run_both(model, [x, scale, zero_point])


def test_dequantize_output_dtype():
    x = random_array([4], np.uint8, low=0, high=256)
    scale = np.array(0.5, np.float32)
    model = node_model("DequantizeLinear", [x, scale], opset=23,
                       output_dtype=TensorProto.FLOAT16)
    run_both(model, [x, scale])


# ----------------------------------------------------------------------------- integer matmul/conv


@pytest.mark.parametrize("dtype,a_zero,b_zero", [
    (np.uint8, np.array(12, np.uint8), np.array(0, np.uint8)),
    (np.int8, np.array(-3, np.int8), np.array([4, 5, -6, 7], np.int8)),  # per column of B
    (np.uint8, None, None),
])
def test_matmul_integer(dtype, a_zero, b_zero):
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max + 1
    a = random_array([3, 5], dtype, seed=1, low=low, high=high)
    b = random_array([5, 4], dtype, seed=2, low=low, high=high)
    inputs = [a, b] + ([a_zero, b_zero] if a_zero is not None else [])
    run_both(node_model("MatMulInteger", inputs, opset=10), inputs)


def test_matmul_integer_per_row():
    # (onnx.reference broadcasts a 1-D a_zero_point along A's columns, not its rows)
    a = random_array([3, 5], np.int8, seed=1, low=-128, high=128)
    b = random_array([5, 2], np.int8, seed=2, low=-128, high=128)
    a_zero = np.array([1, -2, 3], np.int8)
    (actual,) = dlc.compile(node_model("MatMulInteger", [a, b, a_zero], opset=10))(
        a, b, a_zero)
    expected = (a.astype(np.int32) - a_zero[:, None]) @ b.astype(np.int32)
    np.testing.assert_array_equal(actual, expected)


def test_matmul_integer_batched():
    a = random_array([2, 3, 4], np.uint8, seed=1, low=0, high=256)
    b = random_array([4, 2], np.uint8, seed=2, low=0, high=256)
    zero = np.array(128, np.uint8)
    run_both(node_model("MatMulInteger", [a, b, zero, zero], opset=10), [a, b, zero, zero])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("scale_type", [np.float32, np.float16])
@pytest.mark.parametrize("a_shape,b_shape", [([2, 4], [4, 3]), ([2, 2, 4], [2, 4, 3])])
def test_qlinear_matmul(dtype, scale_type, a_shape, b_shape):
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max + 1
    a = random_array(a_shape, dtype, seed=1, low=low, high=high)
    b = random_array(b_shape, dtype, seed=2, low=low, high=high)
    scalar = lambda v, t: np.array([v], t)
    inputs = [a, scalar(0.0066, scale_type), scalar(3, dtype), b, scalar(0.00705, scale_type),
              scalar(-2 if dtype == np.int8 else 114, dtype), scalar(0.0107, scale_type),
              scalar(1 if dtype == np.int8 else 118, dtype)]
    run_both(node_model("QLinearMatMul", inputs, opset=21), inputs)


@pytest.mark.parametrize("attributes,w_zero", [
    ({}, np.array(0, np.uint8)),
    ({"pads": [1, 1, 1, 1], "strides": [2, 1]}, np.array([1, 2, 3], np.uint8)),
    ({"auto_pad": "SAME_UPPER", "dilations": [1, 2]}, np.array(5, np.uint8)),
])
def test_conv_integer(attributes, w_zero):
    x = random_array([1, 2, 5, 6], np.uint8, seed=1, low=0, high=256)
    w = random_array([3, 2, 3, 3], np.uint8, seed=2, low=0, high=256)
    inputs = [x, w, np.array(100, np.uint8), w_zero]
    run_both(node_model("ConvInteger", inputs, opset=10, **attributes), inputs)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_channel,bias", [(False, False), (True, True)])
def test_qlinear_conv(dtype, per_channel, bias):
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max + 1
    x = random_array([1, 2, 5, 5], dtype, seed=1, low=low, high=high)
    w = random_array([3, 2, 3, 3], dtype, seed=2, low=low, high=high)
    w_scale = np.array([0.004, 0.005, 0.003] if per_channel else 0.004, np.float32)
    w_zero = np.array([0, 1, 2] if per_channel else 1, dtype)
    inputs = [x, np.array(0.02, np.float32), np.array(3, dtype), w, w_scale, w_zero,
              np.array(0.05, np.float32), np.array(7, dtype)]
    if bias:
        inputs.append(np.array([100, -200, 300], np.int32))
    run_both(node_model("QLinearConv", inputs, opset=10, pads=[1, 0, 1, 0]), inputs)


# ----------------------------------------------------------------------------- dynamic, bitcast


@pytest.mark.parametrize("x", [
    np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32),
    np.array([[-1.0, -2.1, -1.3], [-2.5, -3.34, -4.0]], np.float32),  # all negative
    np.array([1.5, 1.5, 1.5], np.float32),  # max == min after clipping to 0? no: 0 and 1.5
    np.zeros([2, 2], np.float32),  # max == min: scale 1 / 255
])
def test_dynamic_quantize_linear(x):
    run_both(node_model("DynamicQuantizeLinear", [x], opset=11, n_outputs=3), [x])


@pytest.mark.parametrize("source,target", [
    (np.float32, np.int32), (np.int32, np.float32), (np.float64, np.int64),
    (np.uint16, np.int16), (np.float16, np.uint16), (np.int8, np.uint8), (np.uint64, np.float64),
])
def test_bitcast(source, target):
    x = np.array([[0, 1, 2], [100, 7, 3]], dtype=source)
    if np.dtype(source).kind == "f":
        x = np.array([[0.0, -1.5, np.inf], [1e-3, 3.25, -0.0]], dtype=source)
    else:
        x = np.array([[0, 1, 2], [np.iinfo(source).max, 7, np.iinfo(source).min]], dtype=source)
    model = node_model("BitCast", [x], opset=26, to=helper.np_dtype_to_tensor_dtype(
        np.dtype(target)))
    run_both(model, [x])


def test_bitcast_bool():
    x = np.array([True, False, True])
    model = node_model("BitCast", [x], opset=26, to=TensorProto.UINT8)
    run_both(model, [x])


# ----------------------------------------------------------------------------- errors


def test_quantize_rejects_a_wrong_per_axis_scale():
    x, scale = np.zeros([2, 3], np.float32), np.ones([2], np.float32)
    model = node_model("QuantizeLinear", [x, scale], opset=13, axis=1)
    with pytest.raises(dlc.DlcError, match=r"per-axis scale must be \[3\]"):
        dlc.compile(model)


def test_bitcast_rejects_different_widths():
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT16)
    model = make_model([node], {"x": (np.float32, [2])}, {"y": (np.int16, [2])}, opset=26,
                       check=False)
    with pytest.raises(dlc.DlcError, match="the widths must be equal"):
        dlc.compile(model)
