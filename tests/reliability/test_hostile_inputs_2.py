"""Hostile inputs found by hand-written probes: each gave a wrong answer, a raw exception or a
crash before its fix, and gets a clear error or the right answer now."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from tests.conftest import make_model

F32, I32, I64 = np.float32, np.int32, np.int64


def folded_and_computed(op_type: str, a: np.ndarray, b: np.ndarray, **attrs):
    """`op_type` on a and b folded at import (initializers) and computed by compiled code."""
    node = helper.make_node(op_type, ["a", "b"], ["c"], **attrs)
    elem = helper.np_dtype_to_tensor_dtype(a.dtype)
    computed = make_model([node], {"a": (a.dtype, list(a.shape)), "b": (b.dtype, list(b.shape))},
                          {"c": (a.dtype, list(a.shape))})
    # a Where on a runtime condition keeps one op the folder cannot evaluate
    folded = make_model([node, helper.make_node("Where", ["keep", "c", "c"], ["y"])],
                        {"keep": (np.bool_, [])}, {"y": (a.dtype, list(a.shape))},
                        initializers={"a": a, "b": b}, check=False)
    folded.graph.output[0].type.tensor_type.elem_type = elem
    (at_run_time,) = dlc.compile(computed)({"a": a, "b": b})
    (at_import,) = dlc.compile(folded)({"keep": np.array(True)})
    return at_import, at_run_time


@pytest.mark.parametrize("dtype", [I64, I32, np.uint8])
def test_folded_integer_division_is_the_compiled_division(dtype):
    # the folder divided in float64 (losing the low bits of int64s beyond 2**53) and gave x for
    # x / 0 where the compiled code gives 0
    info = np.iinfo(dtype)
    a = np.array([7, 7, info.max, info.min, info.max - 2, 0], dtype)
    b = np.array([0, 2, 1, 1, 3, 5], dtype)
    if info.min < 0:
        a = np.append(a, [info.min, -7, -7, 2**62 + 1 if dtype is I64 else -9]).astype(dtype)
        b = np.append(b, [-1, 2, -2, 1 if dtype is I64 else 4]).astype(dtype)
    folded, computed = folded_and_computed("Div", a, b)
    np.testing.assert_array_equal(folded, computed)
    assert folded[0] == 0 and folded[1] == 3
    if dtype is I64:
        assert folded[-1] == 2**62 + 1


@pytest.mark.parametrize("fmod", [0, 1])
def test_folded_float_mod_by_zero_is_nan(fmod):
    # the folder replaced a 0 divisor by 1 for floats too: 1.5 mod 0 gave 0.5 instead of NaN
    a, b = np.array([1.5, -7.5, 2.0], F32), np.array([0.0, 2.0, 0.0], F32)
    folded, computed = folded_and_computed("Mod", a, b, fmod=fmod)
    np.testing.assert_array_equal(folded, computed)
    assert np.isnan(folded[0]) and np.isnan(folded[2])


def test_folded_integer_mod_by_zero_is_the_compiled_mod():
    a, b = np.array([-7, 7, 5], I64), np.array([0, -3, 0], I64)
    folded, computed = folded_and_computed("Mod", a, b)
    np.testing.assert_array_equal(folded, computed)


@pytest.mark.parametrize("op_type", ["GatherElements", "ScatterElements"])
def test_elements_indices_larger_than_the_data_off_the_axis(op_type):
    # indices [1, 5] into data [2, 3] along axis 0: the other axis of indices (5) is beyond the
    # data's (3); GatherElements read past the data (garbage values), ScatterElements wrote past
    # it (SIGSEGV)
    inputs = {"x": (F32, [2, 3]), "i": (I64, [1, 5])}
    names = ["x", "i"]
    if op_type == "ScatterElements":
        inputs["u"] = (F32, [1, 5])
        names.append("u")
    model = make_model([helper.make_node(op_type, names, ["y"], axis=0, name="elements")],
                       inputs, {"y": (F32, [2, 3] if op_type == "ScatterElements" else [1, 5])},
                       check=False)
    with pytest.raises(dlc.FrontendError,
                       match=rf"node 'elements' \({op_type}\): indices \[1x5\] are larger than "
                             r"the data \[2x3\] on axis 1"):
        dlc.compile(model)


def test_elements_indices_smaller_than_the_data_still_compile():
    model = make_model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
                       {"x": (F32, [3, 4]), "i": (I64, [2, 6])}, {"y": (F32, [2, 6])})
    x = np.arange(12, dtype=F32).reshape(3, 4)
    i = np.array([[0, 1, 2, 3, 3, 0], [3, 2, 1, 0, -1, -4]], I64)
    (y,) = dlc.compile(model)({"x": x, "i": i})
    np.testing.assert_array_equal(y, np.take_along_axis(x[:2], i % 4, axis=1))


def resize_model(scales=None, shape=(1, 1, 2, 2), **attrs):
    inputs = ["x", "roi", "scales"]
    initializers = {"roi": np.array([], F32), "scales": np.asarray(scales, F32)}
    return make_model([helper.make_node("Resize", inputs, ["y"], name="resize", **attrs)],
                      {"x": (F32, list(shape))}, ["y"], initializers, check=False)


@pytest.mark.parametrize("scales, message", [
    # int(nan) and int(inf) escaped as ValueError / OverflowError
    ([1, 1, np.nan, 2], r"scales \[1.0, 1.0, nan, 2.0\] must be finite and > 0"),
    ([1, 1, np.inf, 2], r"scales \[1.0, 1.0, inf, 2.0\] must be finite and > 0"),
    # an output axis of size 0 from a non-empty one: a numpy reshape error
    ([1, 1, 1e-30, 1], r"scales \[.*\] resize axis 2 of size 2 to 0"),
])
def test_resize_scales_that_give_no_size(scales, message):
    with pytest.raises(dlc.FrontendError, match=r"node 'resize' \(Resize\): " + message):
        dlc.compile(resize_model(scales))


def test_resize_to_more_than_memory():
    # numpy's "Maximum allowed size exceeded" (a ValueError) building the coordinate table
    with pytest.raises(dlc.FrontendError, match=r"node 'resize' \(Resize\) computes a result "
                                                r"that has shape \[1, 1, 2\d+, 2\]"):
        dlc.compile(resize_model([1, 1, 1e30, 1]))


@pytest.mark.parametrize("attribute, value", [
    ("nearest_mode", "sideways"),  # a KeyError, only where a position fell between two pixels
    ("coordinate_transformation_mode", "sideways"),  # a ValueError from a helper
])
def test_resize_unknown_mode_attribute(attribute, value):
    with pytest.raises(dlc.FrontendError,
                       match=rf"node 'resize' \(Resize\): {attribute} 'sideways' is not one of"):
        dlc.compile(resize_model([1, 1, 2, 2], **{attribute: value}))


def test_resize_of_an_empty_input_is_empty():
    # a numpy reshape error building the table of an axis resized from 0 to 0
    model = resize_model([1, 1, 2, 2], shape=(1, 1, 0, 2))
    (y,) = dlc.compile(model)({"x": np.zeros((1, 1, 0, 2), F32)})
    assert y.shape == (1, 1, 0, 4) and y.dtype == F32


U8 = np.uint8


def test_qlinear_matmul_of_mismatched_operands():
    # a numpy reshape error while chunking the constant B ([4, 2] against A's K of 3)
    initializers = {"sa": np.array(1, F32), "za": np.array(0, U8), "b": np.ones((4, 2), U8),
                    "sb": np.array(1, F32), "zb": np.array(0, U8), "sy": np.array(1, F32),
                    "zy": np.array(0, U8)}
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"],
                            ["y"], name="qmm")
    model = make_model([node], {"a": (U8, [2, 3])}, {"y": (U8, [2, 2])}, initializers,
                       check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'qmm' \(QLinearMatMul\): contracting "
                                                r"dimensions differ: \[2x3\] x \[4x2\]"):
        dlc.compile(model)


def test_matmul_integer_constant_zero_point_of_the_wrong_size():
    # numpy's broadcasting error subtracting the constant zero point from the constant B
    initializers = {"b": np.ones((3, 2), U8), "za": np.array(0, U8), "zb": np.zeros(5, U8)}
    node = helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"], name="mmi")
    model = make_model([node], {"a": (U8, [2, 3])}, {"y": (I32, [2, 2])}, initializers,
                       check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'mmi' \(MatMulInteger\): B's zero point "
                                                r"of shape \[5\] does not broadcast"):
        dlc.compile(model)


def test_conv_integer_weight_zero_point_of_the_wrong_size():
    # a numpy reshape error: 7 zero points for 2 output channels
    initializers = {"w": np.ones((2, 1, 2, 2), U8), "zx": np.array(0, U8),
                    "zw": np.zeros(7, U8)}
    node = helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], name="ci")
    model = make_model([node], {"x": (U8, [1, 1, 3, 3])}, {"y": (I32, [1, 2, 2, 2])},
                       initializers, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'ci' \(ConvInteger\): the weight's zero "
                                                r"point of shape \[7\] must be a scalar or hold "
                                                r"one value per output channel \(2\)"):
        dlc.compile(model)


def test_window_larger_than_memory():
    # a raw MemoryError from numpy's arange of 2**40 positions
    model = make_model([helper.make_node("HannWindow", ["n"], ["y"], name="window")], {},
                       {"y": (F32, None)}, {"n": np.array(2**40, I64)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'window' \(HannWindow\) computes a "
                                                r"result that has shape \[1099511627776\]"):
        dlc.compile(model)


def affine_grid(size, align_corners=0):
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], name="grid",
                            align_corners=align_corners)
    return make_model([node], {"theta": (F32, [1, 2, 3])}, ["y"],
                      {"size": np.array(size, I64)}, opset=20, check=False)


def test_affine_grid_of_negative_or_huge_size():
    # numpy's "negative dimensions are not allowed" (a ValueError)
    with pytest.raises(dlc.FrontendError, match=r"node 'grid' \(AffineGrid\): size \[1, 1, -2, "
                                                r"2\] must hold sizes >= 0"):
        dlc.compile(affine_grid([1, 1, -2, 2]))
    with pytest.raises(dlc.FrontendError, match=r"node 'grid' \(AffineGrid\) computes a result "
                                                r"that has shape"):
        dlc.compile(affine_grid([1, 1, 2**31, 2**31]))


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_of_an_empty_size(align_corners):
    # a ZeroDivisionError (2 / 0) or a numpy stacking error building the base grid
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], F32)
    (y,) = dlc.compile(affine_grid([1, 1, 0, 2], align_corners))({"theta": theta})
    assert y.shape == (1, 0, 2, 2)


def test_dft_of_a_length_beyond_memory():
    # a raw MemoryError from numpy building the [4, 2^41] DFT matrix of dft_length 2^40
    node = helper.make_node("DFT", ["x", "length"], ["y"], name="dft")
    model = make_model([node], {"x": (F32, [1, 4, 1])}, {"y": (F32, None)},
                       {"length": np.array(2**40, I64)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'dft' \(DFT\) computes a result that "
                                                r"has shape \[4, 2199023255552\] of double"):
        dlc.compile(model)


def test_dft_errors_name_the_node_once():
    node = helper.make_node("DFT", ["x", "length"], ["y"], name="dft")
    model = make_model([node], {"x": (F32, [1, 4, 1])}, {"y": (F32, None)},
                       {"length": np.array(0, I64)}, check=False)
    with pytest.raises(dlc.FrontendError) as info:
        dlc.compile(model)
    assert str(info.value) == "node 'dft' (DFT): dft_length 0 must be positive"


def test_stft_of_more_frames_than_memory():
    # a raw MemoryError from numpy building the [1044481, 4096] frame indices
    node = helper.make_node("STFT", ["x", "step", "window"], ["y"], name="stft")
    model = make_model([node], {"x": (F32, [1, 2**20, 1])}, {"y": (F32, None)},
                       {"step": np.array(1, I64), "window": np.ones(4096, F32)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'stft' \(STFT\) computes a result that "
                                                r"has shape \[1044481, 4096\] of int64"):
        dlc.compile(model)


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                         shape)


def test_if_of_an_empty_constant_condition():
    # an IndexError reading the first element of the empty condition
    then_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "then", [],
                                    [_vi("a", F32, [2])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "else", [],
                                    [_vi("b", F32, [2])])
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_branch,
                            else_branch=else_branch)
    model = make_model([node], {"x": (F32, [2])}, {"y": (F32, [2])},
                       {"c": np.zeros(0, np.bool_)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'branch' \(If\): the condition must "
                                                r"hold one value, got shape \[0\]"):
        dlc.compile(model)


def scan_model(**attrs):
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "e"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"])],
        "body", [_vi("s", F32, [2]), _vi("e", F32, [2])], [_vi("s2", F32, [2]), _vi("o", F32, [2])])
    node = helper.make_node("Scan", ["init", "xs"], ["final", "ys"], name="scan", body=body,
                            **attrs)
    return make_model([node], {"init": (F32, [2]), "xs": (F32, [3, 2])},
                      {"final": (F32, [2]), "ys": (F32, [3, 2])}, check=False)


@pytest.mark.parametrize("attrs, message", [
    # an IndexError indexing the input's shape
    ({"num_scan_inputs": 1, "scan_input_axes": [5]},
     r"scan_input_axes \[5\]: axis 5 is out of range \[-2, 2\) for a rank-2 input"),
    # "scan inputs have different sequence lengths [2, 3]" (states taken for scan inputs)
    ({"num_scan_inputs": 7}, r"num_scan_inputs 7 must be in \[1, 2\]"),
    ({"num_scan_inputs": -1}, r"num_scan_inputs -1 must be in \[1, 2\]"),
    # silently taken as "reverse"
    ({"num_scan_inputs": 1, "scan_input_directions": [2]},
     r"scan_input_directions \[2\] must hold 1 values, each 0 \(forward\) or 1 \(reverse\)"),
    ({"num_scan_inputs": 1, "scan_output_axes": [0, 1]},
     r"scan_output_axes \[0, 1\] must hold 1 values"),
])
def test_scan_attributes_out_of_range(attrs, message):
    with pytest.raises(dlc.FrontendError, match=r"node 'scan' \(Scan\): " + message):
        dlc.compile(scan_model(**attrs))


def test_scan_with_valid_negative_axes_still_compiles():
    model = scan_model(num_scan_inputs=1, scan_input_axes=[-2], scan_output_axes=[-2])
    init, xs = np.ones(2, F32), np.arange(6, dtype=F32).reshape(3, 2)
    final, ys = dlc.compile(model)({"init": init, "xs": xs})
    np.testing.assert_array_equal(ys, init + np.cumsum(xs, axis=0))
    np.testing.assert_array_equal(final, ys[-1])


# ----------------------------------------------------------------------------- the command line


@pytest.fixture
def relu_file(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [2])},
                       {"y": (F32, [2])})
    path = tmp_path / "relu.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def run_cli(argv, capsys) -> tuple[int, str]:
    from dlc.tools.dlc_cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # SystemExit("dlc: error: ..."): Python prints it, exit 1
        return (1 if isinstance(exit_.code, str) else exit_.code), str(exit_.code)
    return code, capsys.readouterr().err


def test_cli_input_from_an_npz(relu_file, tmp_path, capsys):
    # np.load reads a .npz as a mapping: "internal error: AttributeError: 'NpzFile' object has
    # no attribute 'shape'"
    np.savez(tmp_path / "x.npz", x=np.ones(2, F32))
    code, err = run_cli(["run", relu_file, "--input", f"x={tmp_path / 'x.npz'}"], capsys)
    assert code == 1 and "internal error" not in err
    assert "cannot read input 'x'" in err and "several arrays" in err


def test_cli_profile_input_that_does_not_exist(relu_file, tmp_path, capsys):
    # dlc profile read its --input without the error handling of dlc run: FileNotFoundError
    code, err = run_cli(["profile", relu_file, "--input", f"x={tmp_path / 'none.npy'}"], capsys)
    assert code == 1 and "internal error" not in err
    assert "cannot read input 'x'" in err and "No such file" in err


@pytest.mark.parametrize("where", ["save", "output"])
def test_cli_unwritable_paths_are_errors(relu_file, tmp_path, capsys, where):
    # FileExistsError / NotADirectoryError reported as dlc's own bug ("internal error", exit 2)
    blocker = tmp_path / "file"
    blocker.write_text("")
    argv = ["run", relu_file, "--save", blocker] if where == "save" else \
        ["compile", relu_file, "-o", blocker / "ir.mlir"]
    code, err = run_cli(argv, capsys)
    assert code == 1 and "internal error" not in err, err
    assert str(blocker) in err


def test_cli_elide_beyond_int64(relu_file, capsys):
    # get_asm's TypeError for a limit beyond int64
    code, err = run_cli(["compile", relu_file, "--emit", "llvm", "--elide", str(2**70)], capsys)
    assert code == 0, err


def test_ir_large_elements_limit_is_checked():
    model = dlc.lower(make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [2])},
                                 {"y": (F32, [2])}))
    assert model.ir("dlc", large_elements_limit=2**70) == model.ir("dlc")
    with pytest.raises(dlc.ArgumentError, match="large_elements_limit must be None or an "
                                                "integer >= 0, got -1"):
        model.ir("dlc", large_elements_limit=-1)


def test_pass_plugin_file_without_a_py_suffix(tmp_path):
    # spec_from_file_location finds no loader for such a name: "AttributeError: 'NoneType'
    # object has no attribute 'loader'"
    from dlc.passes.plugins import PluginError, load_plugin

    garbage = tmp_path / "weights.bin"
    garbage.write_bytes(b"\x93NUMPY\x00\xff")
    with pytest.raises(PluginError, match=r"pass plugin '.*weights\.bin' failed to load: "
                                          r"SyntaxError"):
        load_plugin(garbage)
    source = tmp_path / "passes.txt"
    source.write_text("def f(:\n")
    with pytest.raises(PluginError, match=r"failed to load \(line 1 of .*passes\.txt\)"):
        load_plugin(source)


def test_torch_tensors_numpy_cannot_hold_are_input_errors():
    # a sparse tensor was torch's TypeError, a bfloat16 or quantized one torch's TypeError
    # ("Got unsupported ScalarType"), a tensor on another device a plain ValueError
    torch = pytest.importorskip("torch")
    model = dlc.compile(make_model([helper.make_node("Relu", ["x"], ["y"])],
                                   {"x": (F32, [3])}, {"y": (F32, [3])}))
    assert torch.equal(model(torch.ones(3))[0], torch.ones(3))
    for tensor, message in [
            (torch.ones(3).to_sparse(), r"input 0 is a torch\.sparse_coo tensor"),
            (torch.ones(3, dtype=torch.bfloat16), r"input 0 of dtype torch\.bfloat16 has no"),
            (torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8),
             r"input 0 of dtype torch\.qint8"),
            (torch.ones(3, device="meta"), r"dlc runs on the CPU; input 0 is a tensor on meta")]:
        with pytest.raises(dlc.InputError, match=message):
            model(tensor)
    with pytest.raises(dlc.InputError, match=r"input 'x' is a torch\.sparse_coo tensor"):
        model({"x": torch.ones(3).to_sparse()})


def _segment(name: str) -> onnx.TensorProto:
    tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=[2],
                              float_data=[1, 2])
    tensor.segment.begin, tensor.segment.end = 0, 1
    return tensor


def test_tensor_segments_are_refused_by_name():
    # onnx's numpy_helper.to_array: a bare "ValueError: Currently not supporting loading
    # segments", from an initializer, a Constant's value or a body's initializer
    initializer = make_model([helper.make_node("Add", ["x", "w"], ["y"])], {"x": (F32, [2])},
                             {"y": (F32, [2])}, check=False)
    initializer.graph.initializer.append(_segment("w"))
    constant = make_model([helper.make_node("Constant", [], ["w"], name="c", value=_segment("v")),
                           helper.make_node("Add", ["x", "w"], ["y"])], {"x": (F32, [2])},
                          {"y": (F32, [2])}, check=False)
    body = helper.make_graph([helper.make_node("Add", ["x", "w"], ["b"])], "then", [],
                             [_vi("b", F32, [2])], initializer=[_segment("w")])
    branch = make_model([helper.make_node("If", ["k"], ["y"], name="if", then_branch=body,
                                          else_branch=body)], {"x": (F32, [2])},
                        {"y": (F32, [2])}, {"k": np.array(True)}, check=False)
    for model, message in [
            (initializer, r"initializer 'w' is a segment \[0, 1\) of a larger tensor"),
            (constant, r"node 'c' \(Constant\): attribute 'value' is a segment"),
            (branch, r"node 'if' \(If\): initializer 'w' of its body 'then' is a segment")]:
        with pytest.raises(dlc.FrontendError, match=message):
            dlc.compile(model)


@pytest.mark.parametrize("dtype", [F32, np.float16])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_log_sum_exp_of_rows_without_a_finite_value(dtype, opt_level):
    # the shift by the largest finite value was -inf for such rows: -inf - (-inf) and
    # log(inf) + (-inf) are NaN, where numpy, PyTorch and onnxruntime give -inf and inf
    x = np.array([[-np.inf, -np.inf], [np.inf, np.inf], [np.inf, -np.inf], [-np.inf, 0.0],
                  [1.0, 2.0], [np.nan, -np.inf]], dtype)
    node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=0)
    model = make_model([node], {"x": (dtype, [6, 2])}, {"y": (dtype, [6])}, opset=13)
    (y,) = dlc.compile(model, opt_level=opt_level)({"x": x})
    with np.errstate(all="ignore"):
        want = np.log(np.exp(x.astype(np.float64)).sum(axis=1)).astype(dtype)
    np.testing.assert_allclose(y, want, rtol=1e-3)  # (-inf, inf, inf, 0, 2.31, nan)


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_orders_nan_above_every_number(largest):
    # ordered comparisons left a NaN wherever the insertion sort met it: TopK(largest) of
    # [1, nan, 3, -1] gave [3, 1], and the smallest 2 of [nan, nan, 0, 5] gave [nan, nan];
    # onnxruntime, PyTorch and numpy's sort put NaN above every number (as dlc.runtime_topk)
    x = np.array([[1.0, np.nan, 3.0, -1.0], [np.nan, np.nan, 0.0, 5.0]], F32)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)
    model = make_model([node], {"x": (F32, [2, 4])}, {"v": (F32, [2, 2]), "i": (I64, [2, 2])},
                       {"k": np.array([2], I64)})
    values, indices = dlc.compile(model)({"x": x})
    # largest: NaNs first (in index order), then the numbers; smallest: NaNs never picked
    want = np.array([[1, 2], [0, 1]]) if largest else np.array([[3, 0], [2, 3]])
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want, axis=1))


def _add_model():
    return make_model([helper.make_node("Add", ["x", "z"], ["y"])],
                      {"x": (F32, [2, 3]), "z": (F32, [2, 3])}, {"y": (F32, [2, 3])})


@pytest.mark.parametrize("shapes, message", [
    # 2.5 was truncated to 2 and True taken for 1, silently; "2,3" raised int()'s ValueError,
    # None its TypeError, a list "unknown inputs [2]"
    ({"x": [2.5, 3]}, r"input_shapes\['x'\] must be a sequence of integer sizes, got \[2\.5, 3\]"),
    ({"x": [True, 3]}, r"input_shapes\['x'\] must be a sequence of integer sizes"),
    ({"x": "2,3"}, r"input_shapes\['x'\] must be a sequence of integer sizes, got '2,3'"),
    ({"x": [None, 3]}, r"input_shapes\['x'\] must be a sequence of integer sizes"),
    ([[2, 3]], r"input_shapes must be a mapping of input names to shapes, got list"),
])
def test_input_shapes_of_the_wrong_kind(shapes, message):
    with pytest.raises(dlc.ArgumentError, match=message):
        dlc.compile(_add_model(), input_shapes=shapes)


def test_input_shapes_of_numpy_integers_are_accepted():
    model = dlc.compile(_add_model(), input_shapes={"x": np.array([2, 3])})
    assert model.signature.inputs[0].shape == (2, 3)


@pytest.mark.parametrize("constants, message", [
    # a float64 array (or a list, read as int64) for a float32 input failed in the Add,
    # naming neither the input nor the cause; a wrong shape likewise
    ({"z": np.ones((2, 3))}, r"graph input 'z' an array of dtype float64; it is declared f"),
    ({"z": [[1, 2, 3], [4, 5, 6]]}, r"graph input 'z' an array of dtype int64"),
    ({"z": np.ones((3, 3), F32)}, r"'z' an array of shape \[3, 3\]; it is declared \[2, 3\]"),
])
def test_constants_that_contradict_the_declared_input(constants, message):
    with pytest.raises(dlc.FrontendError, match=message):
        dlc.compile(_add_model(), constants=constants)


def test_constants_of_the_wrong_kind():
    # dict() of a list: "TypeError: cannot convert dictionary update sequence element #0"
    with pytest.raises(dlc.ArgumentError, match="constants must be a mapping"):
        dlc.compile(_add_model(), constants=[1, 2])
    model = dlc.compile(_add_model(), constants={"z": np.ones((2, 3), F32)})
    np.testing.assert_array_equal(model(np.ones((2, 3), F32))[0], np.full((2, 3), 2, F32))


def test_more_threads_than_openmp_can_start(monkeypatch):
    # num_threads=100000 compiled, then OpenMP aborted the process (SIGABRT) at the first call
    # of a model with a parallel loop ("System unable to allocate necessary resources")
    from dlc.options import MAX_THREADS, CompileOptions

    with pytest.raises(dlc.ArgumentError, match=rf"num_threads must be at most {MAX_THREADS}, "
                                                r"got 100000"):
        dlc.compile(_add_model(), num_threads=100_000)
    monkeypatch.setenv("DLC_NUM_THREADS", "100000")  # (a default, not an argument: capped)
    assert CompileOptions().resolve().num_threads == MAX_THREADS


def _dynamic_model():
    return dlc.compile(make_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                                  {"x": (F32, ["batch", "seq", 4])},
                                  {"y": (F32, ["batch", "seq", 3])}, {"w": np.ones((4, 3), F32)},
                                  check=False))


def test_dynamic_model_arguments_of_the_wrong_kind(monkeypatch):
    model = _dynamic_model()
    # int("a"): a raw ValueError
    with pytest.raises(dlc.ArgumentError, match=r"input_shapes\['x'\] must be a sequence of "
                                                r"integer sizes, got 'abc'"):
        model.specialize({"x": "abc"})
    with pytest.raises(dlc.InputError, match=r"missing \['x'\]"):
        model.specialize({})
    assert "tensor<1x?x4xf32>" in model.ir("dlc")  # (its row function: batch 1, every seq)
    # a plain ValueError
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")  # (no one compile: per shape)
    with pytest.raises(dlc.ArgumentError, match="has no specialization yet"):
        _dynamic_model().ir("dlc")


def test_dynamic_model_input_whose_copy_is_larger_than_memory():
    # a broadcast view of 2^60 floats (2^62 bytes: no machine maps them, overcommit or not):
    # numpy's MemoryError making it contiguous
    x = np.broadcast_to(np.ones(1, F32), (2**29, 2**29, 4))
    with pytest.raises(dlc.InputError, match=r"input 'x' of shape \[536870912, 536870912, 4\] "
                                             r"is not contiguous and its copy \(4\.295e\+09 GiB\)"):
        _dynamic_model()(x)


@pytest.mark.parametrize("runs", [0, -1, 2.5, "3"])
def test_profile_runs_out_of_range(runs):
    # 0 and -1 profiled nothing and answered; 2.5 and "3" were TypeErrors
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [2])},
                       {"y": (F32, [2])})
    with pytest.raises(dlc.ArgumentError, match=r"runs must be an integer >= 1"):
        dlc.profile(model, None, runs=runs)


@pytest.mark.parametrize("manifest, message", [
    (b"{not json", r"cannot read the manifest .*m\.json: Expecting property name"),  # JSONDecodeError
    (b"\xff\xfe\x00", r"cannot read the manifest .*m\.json: 'utf-8' codec"),  # UnicodeDecodeError
    (b"[1, 2]", r"m\.json is not a dlc export manifest"),  # TypeError
    (b"{}", r"m\.json is not a dlc export manifest"),  # KeyError
    (b'{"library": 5, "name": null}', r"m\.json is not a dlc export manifest"),  # TypeError
    (b'{"library": "libfake.so", "name": "fake"}', r"cannot load .*libfake\.so: .*file too short"),
])
def test_loading_an_export_that_is_not_one(tmp_path, manifest, message):
    # (raw JSONDecodeError, TypeError, KeyError, ctypes' OSError before; the loader's own
    # errors are LoadErrors)
    from dlc.runtime.loader import LoadError, load

    (tmp_path / "libfake.so").write_bytes(b"not an ELF file")
    (tmp_path / "m.json").write_bytes(manifest)
    with pytest.raises(LoadError, match=message):
        load(tmp_path / "m.json")


def test_loading_a_library_that_is_no_export(tmp_path):
    # ctypes' AttributeError for the missing NAME_missing_cpu_feature symbol
    import _ctypes  # (a shared object that loads anywhere Python runs)

    from dlc.runtime.loader import LoadError, load

    if not getattr(_ctypes, "__file__", None):
        pytest.skip("_ctypes is built into this Python")
    (tmp_path / "m.json").write_text(f'{{"library": "{_ctypes.__file__}", "name": "m"}}')
    with pytest.raises(LoadError, match=r"is not a dlc export named 'm': it has no "
                                        r"m_missing_cpu_feature"):
        load(tmp_path / "m.json")


@pytest.mark.parametrize("options, message", [
    # each ran the graph eagerly with a DlcFallbackWarning, as if dlc could not compile it
    ({"opt_level": 9}, r"opt_level must be one of \(0, 1, 2, 3\), got 9"),
    ({"num_threads": 0}, r"num_threads must be at least 1, got 0"),
    ({"freeze": "yes"}, r"freeze option is True or False, got 'yes'"),
    # a TypeError ("'str' object is not a mapping")
    ("fast", r"the dlc backend's options must be a dict, got str"),
])
def test_torch_compile_backend_options_out_of_range(options, message):
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    torch._dynamo.reset()
    try:
        compiled = torch.compile(Net().eval(), backend="dlc", options=options)
        with torch.no_grad(), pytest.raises(Exception, match=message) as info:
            compiled(torch.ones(3))
    finally:
        torch._dynamo.reset()
    # (Dynamo wraps a backend's exception in its BackendCompilerFailed)
    cause = info.value if isinstance(info.value, dlc.DlcError) else info.value.__cause__ or \
        getattr(info.value, "inner_exception", None)
    assert isinstance(cause, dlc.ArgumentError), repr(info.value)


def test_dlc_opt_gather_of_i128_indices(tmp_path, capsys):
    # the verifier took i128 for a signed index type: the lowering's arith.extsi to i64 failed,
    # "'arith.extsi' op operand type 'i128' and result type 'i64' are cast incompatible"
    from dlc.tools.dlc_opt import main

    path = tmp_path / "in.mlir"
    path.write_text(
        "func.func @main(%a: tensor<4xf32>, %i: tensor<2xi128>) -> tensor<2xf32> {\n"
        '  %0 = "dlc.gather"(%a, %i) {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi128>) '
        "-> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
    assert main([str(path), "-O", "0"]) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert re.search(r"in\.mlir:2:8: error: 'dlc\.gather' op indices must be signed integers "
                     r"\(i32 or i64\), got i128", first), first


def test_causal_lm_arguments_out_of_range():
    # plain ValueErrors; a NaN temperature passed `<= 0` and numpy's choice failed on NaN
    # probabilities ("probabilities contain NaN"); 2.5 as max_length was accepted
    from dlc.llm import CausalLM, _choose

    for kwargs in ({"max_length": 1}, {"max_length": 2.5}, {"chunk": 0}, {"batch": True}):
        with pytest.raises(dlc.ArgumentError, match="must be an integer of at least"):
            CausalLM(b"", **kwargs)
    logits = np.array([[0.1, 0.5, 0.2]], F32)
    rng = np.random.default_rng(0)
    for temperature in (0.0, -1.0, float("nan"), float("inf"), "hot"):
        with pytest.raises(dlc.ArgumentError, match="temperature must be a positive number"):
            _choose(logits, 2, temperature, rng)
    assert _choose(logits, 2, 1e-3, rng).tolist() == [1]
    lm = CausalLM.__new__(CausalLM)  # (generate checks its arguments before the model runs)
    lm.max_length = 16
    for count in (0, "5", 2.5):  # ("5" < 1: a TypeError)
        with pytest.raises(dlc.ArgumentError, match="max_new_tokens must be an integer"):
            lm.generate(np.zeros((1, 2), I64), count)


def _wide_signature(outputs: int):
    from dlc.runtime.signature import Signature, TensorSpec

    spec = TensorSpec("x", (1,), np.dtype(F32))
    return Signature((spec,), tuple(TensorSpec(f"o{i}", (1,), np.dtype(F32))
                                    for i in range(outputs)))


def test_models_of_more_than_1024_inputs_and_outputs_stay_off_shared_objects(cache_dir):
    # a Split into 2000 outputs (its main split in parts: the parallel native codegen) compiled
    # and then every call raised ctypes.ArgumentError "too many arguments (2001), maximum is
    # 1024": a shared object's entry point takes an argument per input and output, and ctypes
    # calls at most 1024 (a disk cache entry of it failed the same way when loaded). Such a
    # model now stays on the JIT's packed entry point (one argument), and is not cached on
    # disk. (An end-to-end case compiles for over a minute: the parts are checked here.)
    from dlc.runtime import cache
    from dlc.runtime.jit import MAX_CALL_ARGUMENTS, SharedObjectFunction

    with pytest.raises(RuntimeError, match=rf"2001 inputs and outputs: a shared object's "
                                           rf"entry point takes at most {MAX_CALL_ARGUMENTS}"):
        SharedObjectFunction(cache_dir / "model.so", _wide_signature(2000))

    dumped = []

    class Wide:
        signature = _wide_signature(2000)
        checks = ()

        def dump_object(self, path):
            dumped.append(path)

    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.save("0" * 64, Wide()) is False
    # (not attempted: before, the object was dumped in a forked child and the write failed
    # with a CacheWarning)
    assert dumped == [] and caught == [] and not cache_dir.exists()


def test_tensors_of_rank_above_64():
    # an output of rank 72 compiled, then each call raised numpy's ValueError ("maximum
    # supported dimension for an ndarray is currently 64"); a rank-1000 input took 94 s to
    # compile (and a rank-1000 Expand 132 s)
    unsqueeze = make_model([helper.make_node("Unsqueeze", ["x", "a"], ["y"], name="up")],
                           {"x": (F32, [2, 3])}, ["y"], {"a": np.arange(70, dtype=I64)},
                           check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'up' \(Unsqueeze\) computes a result "
                                                r"that has rank 72: dlc, like numpy, takes "
                                                r"tensors of rank at most 64"):
        dlc.compile(unsqueeze)
    wide = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [1] * 1000)},
                      {"y": (F32, [1] * 1000)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"graph input 'x' has rank 1000"):
        dlc.compile(wide)
    at_the_limit = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [1] * 64)},
                              {"y": (F32, [1] * 64)})
    (y,) = dlc.compile(at_the_limit)(np.full([1] * 64, -1, F32))
    assert y.shape == (1,) * 64 and y.item() == 0


def test_constant_nodes_with_ambiguous_values():
    # a ConstantOfShape whose value holds 2 elements filled the result with the first (the
    # checker accepts it, onnxruntime refuses it); a Constant of two value attributes took one
    fill = helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill",
                            value=helper.make_tensor("v", onnx.TensorProto.FLOAT, [2], [1, 2]))
    model = make_model([fill], {}, {"y": (F32, [2])}, {"s": np.array([2], I64)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'fill' \(ConstantOfShape\): attribute "
                                                r"'value' must hold one element, got shape \[2\]"):
        dlc.compile(model)
    both = helper.make_node("Constant", [], ["y"], name="c", value_float=1.0, value_int=2)
    model = make_model([both], {}, {"y": (F32, [])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'c' \(Constant\): has 2 value attributes "
                                                r"\['value_float', 'value_int'\]"):
        dlc.compile(model)


@pytest.mark.parametrize("folded", [False, True])
def test_split_of_more_parts_than_outputs(folded):
    # split [2, 2, 2] with 2 outputs: the third part was dropped silently (onnxruntime and the
    # checker's shape inference refuse it), folded at import or computed
    node = helper.make_node("Split", ["x", "s"], ["a", "b"], name="split", axis=0)
    outputs = {"a": (F32, [2]), "b": (F32, [2])}
    if folded:
        model = make_model([node, helper.make_node("Add", ["a", "z"], ["c"])],
                           {"z": (F32, [2])}, {"c": (F32, [2]), "b": (F32, [2])},
                           {"x": np.arange(6, dtype=F32), "s": np.array([2, 2, 2], I64)},
                           check=False)
    else:
        model = make_model([node], {"x": (F32, [6])}, outputs,
                           {"s": np.array([2, 2, 2], I64)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'split' \(Split\): split.* gives 3 parts "
                                                r"but the node has 2 outputs"):
        dlc.compile(model)


@pytest.mark.parametrize("constant", [False, True])
def test_if_branches_of_other_output_counts(constant):
    # then_branch of 1 output and else_branch of 2 under an If of 1: zip() dropped the extra
    # output (and a constant condition took its branch's count as the node's)
    then_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "then", [],
                                    [_vi("a", F32, [2])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["b"]),
                                     helper.make_node("Abs", ["x"], ["c"])], "else", [],
                                    [_vi("b", F32, [2]), _vi("c", F32, [2])])
    node = helper.make_node("If", ["k"], ["y"], name="branch", then_branch=then_branch,
                            else_branch=else_branch)
    inputs = {"x": (F32, [2])} if constant else {"x": (F32, [2]), "k": (np.bool_, [])}
    model = make_model([node], inputs, {"y": (F32, [2])},
                       {"k": np.array(True)} if constant else None, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'branch' \(If\): then_branch has 1 "
                                                r"outputs and else_branch 2; the node has 1"):
        dlc.compile(model)


def test_loop_and_scan_bodies_of_too_few_outputs():
    # "graph outputs ['y'] are produced by no node": the node's missing outputs, far from it
    body = helper.make_graph([helper.make_node("Identity", ["cin"], ["cout"])], "body",
                             [_vi("i", I64, []), _vi("cin", np.bool_, []), _vi("v", F32, [2])],
                             [_vi("cout", np.bool_, [])])
    loop = make_model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="loop",
                                        body=body)],
                      {"x": (F32, [2])}, {"y": (F32, [2])},
                      {"M": np.array(3, I64), "cond": np.array(True)}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'loop' \(Loop\): the body has 1 outputs, "
                                                r"expected at least 2"):
        dlc.compile(loop)
    step = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s2"])], "step",
                             [_vi("s", F32, [2]), _vi("e", F32, [2])], [_vi("s2", F32, [2])])
    scan = make_model([helper.make_node("Scan", ["init", "xs"], ["final", "ys"], name="scan",
                                        body=step, num_scan_inputs=1)],
                      {"init": (F32, [2]), "xs": (F32, [3, 2])},
                      {"final": (F32, [2]), "ys": (F32, [3, 2])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"node 'scan' \(Scan\): the node has 2 outputs, "
                                                r"but its body gives 1 final values and 0 scan"):
        dlc.compile(scan)


@pytest.mark.parametrize("declared, kind", [
    (helper.make_tensor_sequence_value_info("y", onnx.TensorProto.FLOAT, [2]), "sequence"),
    (helper.make_value_info("y", helper.make_map_type_proto(
        onnx.TensorProto.INT64, helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [2]))),
     "map"),
])
def test_graph_output_declared_as_no_tensor(declared, kind):
    # a tensor was returned for it, silently
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (F32, [2])},
                       {"y": (F32, [2])}, check=False)
    model.graph.output[0].CopyFrom(declared)
    with pytest.raises(dlc.FrontendError, match=rf"graph output 'y' is declared a {kind}, but "
                                                r"dlc computes tensors"):
        dlc.compile(model)


def test_nested_loops_that_unroll_to_a_million_bodies():
    # a Loop of 1,000 iterations around another of 1,000: each loop is within the unrolling
    # bound, but together they imported 10^6 bodies (the compile ran for hours)
    from dlc.frontends.onnx_importer import MAX_BODIES

    inner = helper.make_graph(
        [helper.make_node("Identity", ["c1"], ["c1o"]), helper.make_node("Add", ["w", "w"], ["wo"])],
        "inner", [_vi("j", I64, []), _vi("c1", np.bool_, []), _vi("w", F32, [2])],
        [_vi("c1o", np.bool_, []), _vi("wo", F32, [2])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["c0"], ["c0o"]),
         helper.make_node("Loop", ["M", "T", "v"], ["vo"], name="inner_loop", body=inner)],
        "outer", [_vi("i", I64, []), _vi("c0", np.bool_, []), _vi("v", F32, [2])],
        [_vi("c0o", np.bool_, []), _vi("vo", F32, [2])])
    model = make_model([helper.make_node("Loop", ["M", "T", "x"], ["y"], body=outer)],
                       {"x": (F32, [2])}, {"y": (F32, [2])},
                       {"M": np.array(1000, I64), "T": np.array(True)}, check=False)
    with pytest.raises(dlc.FrontendError, match=rf"node 'inner_loop' \(Loop\): the model's "
                                                rf"control flow imports more than {MAX_BODIES} "
                                                r"bodies"):
        dlc.compile(model)
