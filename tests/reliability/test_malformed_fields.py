"""Malformed fields of an ONNX model (the fuzzer's `--mutate` finds) are specific errors.

- A string field that is not UTF-8 (a flipped byte in a node name): protobuf hands it back as
  bytes, and the importer once failed with a TypeError far from the cause.
- An empty name for a required input ("" omits optional inputs only), or for a graph input
  or output; an element type the op's schema does not allow at the model's opset.
- A flag attribute outside {0, 1}: onnxruntime reads keepdims=2 as false but transA=2 as true;
  dlc refuses both rather than guess.
- The checker's errors name the node (its own context names only the op type).
- Graph inputs and outputs without a shape or type, which onnxruntime accepts and onnx's checker
  refuses, compile (an input's shape from `input_shapes`), and the caller's proto is unchanged.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import dlc
from dlc.frontends.validate import ModelValidationError

F32 = np.float32


def model(nodes, inputs, outputs, opset: int = 18) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def tensor(name: str, shape, elem_type: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def relu(**attributes) -> onnx.ModelProto:
    node = helper.make_node("Relu", ["x"], ["y"], **attributes)
    return model([node], [tensor("x", [2, 3])], [tensor("y", [2, 3])])


def test_undecodable_node_name():
    data = relu(name="relu_node").SerializeToString()
    at = data.find(b"relu_node")
    data = data[:at] + b"\xff\xfe" + data[at + 2:]
    with pytest.raises(ModelValidationError,
                       match=r"graph 'g', node #0 \(Relu\): field 'name' holds "
                             r"b'\\xff\\xfelu_node', "
                             r"which is not UTF-8"):
        dlc.compile(data)


def test_undecodable_attribute_string():
    node = helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="tanh")
    data = model([node], [tensor("x", [4])], [tensor("y", [4])], opset=20).SerializeToString()
    at = data.find(b"tanh")
    data = data[:at] + b"\xc3" + data[at + 1:]
    with pytest.raises(ModelValidationError, match=r"node 'gelu' \(Gelu\): attribute "
                                                   r"'approximate' holds b'\\xc3anh'"):
        dlc.compile(data)


def test_empty_name_for_a_required_input():
    node = helper.make_node("Max", ["x", ""], ["y"], name="mx")
    with pytest.raises(ModelValidationError,
                       match=r"node 'mx' \(Max\): input 1 \('data_0' of Max\) is empty"):
        dlc.compile(model([node], [tensor("x", [2])], [tensor("y", [2])]))


def test_empty_name_for_an_optional_input_still_compiles():
    node = helper.make_node("Clip", ["x", "", "hi"], ["y"], name="clip")
    hi = helper.make_tensor("hi", TensorProto.FLOAT, [], [0.5])
    graph = helper.make_graph([node], "g", [tensor("x", [3])], [tensor("y", [3])], [hi])
    compiled = dlc.compile(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    x = np.array([-1.0, 0.25, 2.0], F32)
    np.testing.assert_array_equal(compiled(x)[0], np.minimum(x, 0.5))


@pytest.mark.parametrize("op_type, attribute, value", [
    ("ReduceSum", "keepdims", 2), ("ReduceMax", "keepdims", -1),
    ("ArgMax", "select_last_index", 3), ("Gemm", "transA", 2),
])
def test_flag_outside_0_and_1(op_type, attribute, value):
    inputs = ["x", "x"] if op_type == "Gemm" else ["x"]
    node = helper.make_node(op_type, inputs, ["y"], name="n", **{attribute: value})
    with pytest.raises(ModelValidationError,
                       match=rf"node 'n' \({op_type}\): attribute '{attribute}' is {value}; it "
                             r"is a flag and must be 0 or 1"):
        dlc.compile(model([node], [tensor("x", [3, 3])], [onnx.ValueInfoProto(name="y")]))


def test_flag_in_a_loop_body():
    body_node = helper.make_node("ReduceSum", ["v"], ["w"], name="inner", keepdims=5)
    body = helper.make_graph([body_node], "body", [tensor("v", [2])], [tensor("w", [])])
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=body,
                            else_branch=body)
    with pytest.raises(ModelValidationError, match=r"node 'inner' \(ReduceSum\): attribute "
                                                   r"'keepdims' is 5"):
        dlc.compile(model([node], [tensor("c", [], TensorProto.BOOL)], [tensor("y", [])]))


def test_checker_errors_name_the_node():
    with pytest.raises(ModelValidationError,
                       match=r"node 'Relu_0' \(Relu\): Unrecognized attribute: alpha"):
        dlc.compile(relu(alpha=1.0))
    node = helper.make_node("Relu", ["x", "x"], ["y"], name="two")
    with pytest.raises(ModelValidationError, match=r"node 'two' \(Relu\): .*input size 2"):
        dlc.compile(model([node], [tensor("x", [2])], [tensor("y", [2])]))


@pytest.mark.parametrize("where", ["input", "output"])
def test_graph_value_with_an_empty_name(where):
    node = helper.make_node("Relu", ["x"], ["y"])
    inputs = [tensor("" if where == "input" else "x", [2])]
    outputs = [tensor("" if where == "output" else "y", [2])]
    with pytest.raises(ModelValidationError, match=rf"graph {where} #0 has an empty name"):
        dlc.compile(model([node], inputs, outputs))


def test_type_the_opset_does_not_allow():
    node = helper.make_node("Max", ["x", "x"], ["y"], name="mx")
    ints = [tensor("x", [2], TensorProto.INT32)], [tensor("y", [2], TensorProto.INT32)]
    with pytest.raises(ModelValidationError,
                       match=r"node 'mx' \(Max\): input 'x' \('data_0' of Max\) is int32, but "
                             r"Max of opset 8 takes float16, float, double only"):
        dlc.compile(model([node], *ints, opset=8))
    compiled = dlc.compile(model([node], *ints, opset=13))  # (integer Max since opset 12)
    np.testing.assert_array_equal(compiled(np.array([3, -4], np.int32))[0], [3, -4])


def test_output_of_no_element_type():
    node = helper.make_node("Relu", ["x"], ["y"])
    with pytest.raises(ModelValidationError,
                       match=r"graph output 'y' is a tensor of no element type"):
        dlc.compile(model([node], [tensor("x", [2])], [tensor("y", [2], elem_type=0)]))


def test_inputs_and_outputs_without_shape_or_type():
    node = helper.make_node("Relu", ["x"], ["y"])
    shapeless = model([node], [tensor("x", None)], [onnx.ValueInfoProto(name="y")])
    before = shapeless.SerializeToString()
    with pytest.raises(dlc.FrontendError, match=r"graph input 'x' has no shape; pass "
                                                r"input_shapes"):
        dlc.compile(shapeless)
    compiled = dlc.compile(shapeless, input_shapes={"x": [2, 2]})
    assert shapeless.SerializeToString() == before  # the caller's proto is as it was
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], F32)
    np.testing.assert_array_equal(compiled(x)[0], np.maximum(x, 0))
    unshaped_output = model([node], [tensor("x", [2])], [tensor("y", None)])
    np.testing.assert_array_equal(dlc.compile(unshaped_output)(x[0])[0], np.maximum(x[0], 0))


def test_wrong_inputs_are_input_errors():
    compiled = dlc.compile(relu())
    x = np.zeros((2, 3), F32)
    for args, message in [((x.astype(np.float64),), "has dtype float64, expected float32"),
                          ((x[:1],), r"has shape \[1, 3\], expected \[2, 3\]"),
                          ((x, x), "expected 1 inputs, got 2"),
                          (({"z": x},), r"missing \['x'\], unknown \['z'\]")]:
        with pytest.raises(dlc.InputError, match=message) as caught:
            compiled(*args)
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, dlc.DlcError)


@pytest.mark.parametrize("op_type, since", [("Add", 7), ("Greater", 7), ("Max", 8)])
def test_no_broadcasting_before_its_opset(op_type, since):
    node = helper.make_node(op_type, ["x", "w"], ["y"], name="n")
    inputs = [tensor("x", [4]), tensor("w", [2, 4])]
    with pytest.raises(dlc.FrontendError,
                       match=rf"node 'n' \({op_type}\): inputs of shapes \[\[4\], \[2, 4\]\] "
                             rf"differ, but {op_type} of opset {since - 1} does not broadcast"):
        dlc.compile(model([node], inputs, [onnx.ValueInfoProto(name="y")], opset=since - 1))
    dlc.compile(model([node], inputs, [onnx.ValueInfoProto(name="y")], opset=since))


def test_checker_errors_name_the_graph_value():
    value = tensor("x", [2])
    value.type.tensor_type.ClearField("elem_type")  # a shape, but no element type
    node = helper.make_node("Relu", ["x"], ["y"])
    with pytest.raises(ModelValidationError, match=r"graph input 'x': Field 'elem_type' of "
                                                   r"'type' is required but missing"):
        dlc.compile(model([node], [value], [tensor("y", [2])]))
