"""Malformed models are refused before import, each with its own message naming the culprit.

Every case here is a model `onnx.checker` would either accept or reject with a less specific
message; `dlc.frontends.validate` names the node or tensor and the problem. (tests/test_errors.py
holds the older cases: unreadable bytes, unsupported ops and dtypes, inconsistent shapes.)
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import dlc
from dlc.frontends.validate import ModelValidationError, memory_limit
from tests.conftest import make_model, value_info

F32 = np.float32
X2 = {"x": (F32, [2])}


def relu(x: str, y: str, name: str) -> onnx.NodeProto:
    return helper.make_node("Relu", [x], [y], name=name)


def add(a: str, b: str, y: str, name: str) -> onnx.NodeProto:
    return helper.make_node("Add", [a, b], [y], name=name)


def unchecked(nodes, inputs=None, outputs=None, **kwargs) -> onnx.ModelProto:
    return make_model(nodes, X2 if inputs is None else inputs,
                      {"y": (F32, [2])} if outputs is None else outputs, check=False, **kwargs)


def assert_invalid(model, message: str, **kwargs) -> None:
    with pytest.raises(ModelValidationError, match=message) as info:
        dlc.compile(model, **kwargs)
    assert str(info.value).startswith("invalid ONNX model: ")
    assert isinstance(info.value, dlc.FrontendError)


# ----------------------------------------------------------------------------- graph structure


def with_initializer(tensor: onnx.TensorProto) -> onnx.ModelProto:
    model = unchecked([add("x", tensor.name, "y", "use")])
    model.graph.initializer.append(tensor)
    return model


def raw_tensor(name: str, dims, data: bytes, dtype=onnx.TensorProto.FLOAT) -> onnx.TensorProto:
    return onnx.TensorProto(name=name, data_type=dtype, dims=dims, raw_data=data)


STRUCTURE = {
    "two-node cycle": (
        unchecked([add("x", "b", "a", "first"), relu("a", "b", "second"),
                   relu("a", "y", "out")]),
        r"the graph has a cycle: node 'first' \(Add\) -> node 'second' \(Relu\) -> "
        r"node 'first' \(Add\)"),
    "self loop": (
        unchecked([add("x", "y", "y", "loop")]),
        r"cycle: node 'loop' \(Add\) -> node 'loop' \(Add\)"),
    "three-node cycle": (
        unchecked([relu("c", "a", "n1"), relu("a", "b", "n2"), add("b", "x", "c", "n3"),
                   relu("c", "y", "n4")]),
        r"cycle: node 'n1' \(Relu\) -> node 'n2' \(Relu\) -> node 'n3' \(Add\) -> node 'n1'"),
    "nodes out of order": (
        unchecked([relu("a", "y", "late"), relu("x", "a", "early")]),
        r"node 'late' \(Relu\) uses 'a' before node 'early' \(Relu\) produces it; ONNX "
        r"requires nodes in topological order"),
    "input nothing produces, deep in a chain": (
        unchecked([relu("x", "a", "n0"), add("a", "phantom", "y", "n1")]),
        r"node 'n1' \(Add\): input 'phantom' is produced by no node, initializer or graph input"),
    "unnamed node with an unknown input": (
        unchecked([helper.make_node("Relu", ["nothing"], ["y"])]),
        r"node 'Relu_0' \(Relu\): input 'nothing'"),
    "two nodes produce one value": (
        unchecked([relu("x", "y", "first"), relu("x", "y", "second")]),
        r"node 'second' \(Relu\): output 'y' is already produced by node 'first' \(Relu\)"),
    "node overwrites a graph input": (
        unchecked([relu("x", "x", "clobber"), relu("x", "y", "out")]),
        r"node 'clobber' \(Relu\): output 'x' is already produced by a graph input"),
    "node overwrites an initializer": (
        unchecked([relu("x", "w", "clobber"), add("x", "w", "y", "out")],
                  initializers={"w": np.ones(2, F32)}),
        r"node 'clobber' \(Relu\): output 'w' is already produced by an initializer"),
    "graph input declared twice": (
        unchecked([relu("x", "y", "n")], inputs={"x": (F32, [2])},
                  outputs={"y": (F32, [2])}),
        r"graph input 'x' is declared twice"),
    "graph output declared twice": (
        unchecked([relu("x", "y", "n")]),
        r"graph output 'y' is declared twice"),
    "initializer declared twice": (
        unchecked([add("x", "w", "y", "n")], initializers={"w": np.ones(2, F32)}),
        r"initializer 'w' is declared twice"),
}
# the duplicates are added after the fact (make_model builds from dicts)
STRUCTURE["graph input declared twice"][0].graph.input.append(value_info("x", F32, [2]))
STRUCTURE["graph output declared twice"][0].graph.output.append(value_info("y", F32, [2]))
STRUCTURE["initializer declared twice"][0].graph.initializer.append(
    numpy_helper.from_array(np.ones(2, F32), "w"))


@pytest.mark.parametrize("model, message", list(STRUCTURE.values()), ids=list(STRUCTURE))
def test_graph_structure(model, message):
    assert_invalid(model, message)


# ----------------------------------------------------------------------------- initializer data

DATA = {
    "raw data too short": (
        raw_tensor("w", [2], b"\0" * 4),
        r"initializer 'w' declares shape \[2\] of float \(8 bytes\) but holds 4 bytes of data"),
    "raw data too long": (
        raw_tensor("w", [2], b"\0" * 12), r"initializer 'w' .* but holds 12 bytes"),
    "float_data count": (
        onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[2],
                         float_data=[1.0, 2.0, 3.0]),
        r"initializer 'w' declares shape \[2\] \(2 values in float_data\) but holds 3 values"),
    "negative size": (
        raw_tensor("w", [-2], b""), r"initializer 'w' has a negative size in its shape \[-2\]"),
    "no data type": (
        onnx.TensorProto(name="w", dims=[2]), r"initializer 'w' has no valid data type"),
}


@pytest.mark.parametrize("tensor, message", list(DATA.values()), ids=list(DATA))
def test_initializer_data(tensor, message):
    assert_invalid(with_initializer(tensor), message)


def test_int64_data_count():
    shape = onnx.TensorProto(name="shape", data_type=onnx.TensorProto.INT64, dims=[2],
                             int64_data=[2, 1, 1])
    model = unchecked([helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")],
                      outputs={"y": (F32, [2, 1])})
    model.graph.initializer.append(shape)
    assert_invalid(model, r"initializer 'shape' declares shape \[2\] \(2 values in int64_data\)")


def test_sparse_initializer():
    model = unchecked([add("x", "w", "y", "n")])
    values = numpy_helper.from_array(np.ones(1, F32), "w")
    indices = numpy_helper.from_array(np.zeros(1, np.int64), "w_indices")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [2]))
    assert_invalid(model, r"sparse initializer 'w': dlc does not support sparse tensors")


# ----------------------------------------------------------------------------- element types

TYPES = {
    "Add of float and int64 initializer": (
        unchecked([add("x", "w", "y", "mixed")], initializers={"w": np.ones(2, np.int64)}),
        r"node 'mixed' \(Add\): input 'w' is int64 but input 'x' is float; both are 'T' of Add "
        r"and must have the same element type"),
    "Reshape with a float shape": (
        unchecked([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")],
                  inputs={"x": (F32, [2]), "s": (F32, [1])}),
        r"node 'reshape' \(Reshape\): input 's' \('shape' of Reshape\) must be int64, "
        r"but it is float"),
    "graph output declared with another type": (
        unchecked([relu("x", "y", "act")], outputs={"y": (np.int64, [2])}),
        r"node 'act' \(Relu\) produces 'y' as float, but the graph declares it int64"),
    "type flows through Cast": (
        unchecked([helper.make_node("Cast", ["x"], ["i"], name="to_int", to=6),
                   add("i", "x", "y", "sum")]),
        r"node 'sum' \(Add\): input 'x' is float but input 'i' is int32"),
    "Where with an int condition": (
        unchecked([helper.make_node("Where", ["c", "x", "x"], ["y"], name="select")],
                  inputs={"c": (np.int32, [2]), "x": (F32, [2])}),
        r"node 'select' \(Where\): input 'c' \('condition' of Where\) must be bool"),
    "Concat of float16 and float": (
        unchecked([helper.make_node("Concat", ["x", "h"], ["y"], name="cat", axis=0)],
                  inputs={"x": (F32, [2]), "h": (np.float16, [2])},
                  outputs={"y": (F32, [4])}),
        r"node 'cat' \(Concat\): input 'h' is float16 but input 'x' is float"),
}


@pytest.mark.parametrize("model, message", list(TYPES.values()), ids=list(TYPES))
def test_element_types(model, message):
    assert_invalid(model, message)


def test_value_info_with_another_type():
    model = unchecked([relu("x", "a", "first"), relu("a", "y", "second")])
    model.graph.value_info.append(value_info("a", np.int8, [2]))
    assert_invalid(model, r"node 'first' \(Relu\) produces 'a' as float, but the graph "
                          r"declares it int8")


# ----------------------------------------------------------------------------- versions


def test_opset_newer_than_supported():
    newest = onnx.defs.onnx_opset_version()
    assert_invalid(unchecked([relu("x", "y", "n")], opset=newest + 5),
                   rf"imports opset {newest + 5} of the default ONNX domain; dlc supports "
                   rf"opsets up to {newest}")


def test_ir_version_newer_than_supported():
    model = unchecked([relu("x", "y", "n")])
    model.ir_version = onnx.IR_VERSION + 1
    assert_invalid(model, rf"IR version {onnx.IR_VERSION + 1} is newer than the newest")


def test_node_in_a_domain_not_imported():
    model = unchecked([helper.make_node("Gadget", ["x"], ["y"], name="gizmo",
                                        domain="com.acme")])
    assert_invalid(model, r"node 'gizmo' \(Gadget\) is in domain 'com.acme', which the "
                          r"model's opset_import does not list \(it lists \[''\]\)")


def test_opset_version_zero():
    model = unchecked([relu("x", "y", "n")])
    model.opset_import.append(helper.make_opsetid("com.acme", 0))
    assert_invalid(model, r"imports version 0 of domain 'com.acme'; versions start at 1")


# ----------------------------------------------------------------------------- sizes

HUGE = [1 << 20, 1 << 20, 1 << 10]  # 4 PiB of float


def test_huge_graph_input():
    model = unchecked([relu("x", "y", "n")], inputs={"x": (F32, HUGE)},
                      outputs={"y": (F32, HUGE)})
    limit = f"{memory_limit() / 2**30:.4g}"
    assert_invalid(model, rf"graph input 'x' has shape \[1048576, 1048576, 1024\] of float, "
                          rf"4\.194e\+06 GiB: more than this machine's memory \({limit} GiB\)")


def test_huge_value_info():
    model = unchecked([relu("x", "a", "first"), relu("a", "y", "second")])
    model.graph.value_info.append(value_info("a", F32, HUGE))
    assert_invalid(model, r"value 'a' has shape \[1048576, 1048576, 1024\] of float")


def test_negative_declared_size():
    model = unchecked([relu("x", "y", "n")], inputs={"x": (F32, [-3])})
    assert_invalid(model, r"graph input 'x' has a negative size in its shape \[-3\]")


def test_huge_input_shapes_argument():
    model = make_model([relu("x", "y", "n")], {"x": (F32, ["n"])}, ["y"])
    assert_invalid(model, r"graph input 'x' has shape \[4398046511104\] of float",
                   input_shapes={"x": [1 << 42]})


# ----------------------------------------------------------------------------- external data

WEIGHTS = np.arange(6, dtype=F32)


def external_model(folder, location: str, offset: int = 0, length: int | None = None,
                   save: bool = True):
    """A model whose initializer 'w' (float[6]) lives in the external file `location`."""
    tensor = numpy_helper.from_array(WEIGHTS, "w")
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    model = make_model([add("x", "w", "y", "n")], {"x": (F32, [6])}, {"y": (F32, [6])},
                       check=False)
    model.graph.initializer.append(tensor)
    path = folder / "model.onnx"
    if save:
        path.write_bytes(model.SerializeToString())
    return path if save else model


def test_external_data_is_loaded(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 8 + WEIGHTS.tobytes())
    compiled = dlc.compile(external_model(tmp_path, "weights.bin", offset=8, length=24))
    x = np.ones(6, F32)
    np.testing.assert_array_equal(compiled(x)[0], x + WEIGHTS)


def test_external_data_path_traversal(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (tmp_path / "secret.bin").write_bytes(WEIGHTS.tobytes())
    path = external_model(model_dir, "../secret.bin")
    assert_invalid(path, r"initializer 'w': external data location '\.\./secret\.bin' points "
                         r"outside the model's folder .* \(refused: path traversal\)")


def test_external_data_absolute_path(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(WEIGHTS.tobytes())
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    path = external_model(model_dir, str(secret))
    assert_invalid(path, r"initializer 'w': external data location '.*secret\.bin' points "
                         r"outside the model's folder")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_external_data_symlink_out_of_the_folder(tmp_path):
    (tmp_path / "secret.bin").write_bytes(WEIGHTS.tobytes())
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "weights.bin").symlink_to(tmp_path / "secret.bin")
    assert_invalid(external_model(model_dir, "weights.bin"), r"refused: path traversal")


def test_external_data_missing_file(tmp_path):
    assert_invalid(external_model(tmp_path, "gone.bin"),
                   r"initializer 'w': external data file 'gone\.bin' does not exist in ")


def test_external_data_beyond_the_file(tmp_path):
    (tmp_path / "weights.bin").write_bytes(WEIGHTS.tobytes())
    assert_invalid(external_model(tmp_path, "weights.bin", offset=16, length=24),
                   r"external data \[offset 16, length 24\] lies outside 'weights\.bin' "
                   r"\(24 bytes\)")


def test_external_data_of_the_wrong_size(tmp_path):
    (tmp_path / "weights.bin").write_bytes(WEIGHTS.tobytes()[:20])
    assert_invalid(external_model(tmp_path, "weights.bin"),
                   r"initializer 'w' declares shape \[6\] of float \(24 bytes\) but its external "
                   r"data in 'weights\.bin' has 20 bytes")


def test_external_data_needs_a_path(tmp_path):
    model = external_model(tmp_path, "weights.bin", save=False)
    message = r"stores its data in the external file 'weights\.bin'.*pass the model as a path"
    assert_invalid(model, message)
    assert_invalid(model.SerializeToString(), message)


# ----------------------------------------------------------------------------- unreadable bytes


@pytest.mark.parametrize("data", [b"\xff" * 64, b"PK\x03\x04" + bytes(100)],
                         ids=["0xff bytes", "a zip header"])
def test_bytes_that_are_not_onnx(data):
    with pytest.raises(dlc.FrontendError, match="the given bytes is not (a valid|an) ONNX model"):
        dlc.compile(data)


def test_every_prefix_of_a_model_fails_cleanly():
    """Truncated at any point: a FrontendError (never another exception, never a crash)."""
    data = make_model([relu("x", "y", "n")], X2, ["y"]).SerializeToString()
    for end in range(len(data)):
        with pytest.raises(dlc.FrontendError):
            dlc.compile(data[:end])
