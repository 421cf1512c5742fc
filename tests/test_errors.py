"""What a user sees when something is wrong: an exception with a clear message, never a crash.

Compile time: malformed or unsupported models raise `dlc.FrontendError` (a `dlc.DlcError`)
naming the node and what to change. Call time: inputs that do not match the compiled signature
raise ValueError naming the input and the expected signature, before any native code runs.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.compiler import run_stage
from dlc.dialects import make_context
from tests.conftest import make_model, node_model, random_array

# ----------------------------------------------------------------------------- call time


@pytest.fixture(scope="module")
def add_model() -> dlc.CompiledModel:
    """y = a + b, a: float32[2, 3], b: float32[3]."""
    node = helper.make_node("Add", ["a", "b"], ["y"])
    return dlc.compile(make_model([node], {"a": (np.float32, [2, 3]), "b": (np.float32, [3])},
                                  ["y"]))


SIGNATURE_TEXT = re.escape("(a: float32[2, 3], b: float32[3]) -> (y: float32[2, 3])")
A, B = np.ones((2, 3), np.float32), np.ones(3, np.float32)

BAD_CALLS = {
    "wrong shape": ((np.ones((3, 2), np.float32), B),
                    rf"input 'a' has shape \[3, 2\], expected \[2, 3\].*{SIGNATURE_TEXT}"),
    "wrong rank": ((A, np.ones((1, 3), np.float32)), rf"input 'b' has shape.*{SIGNATURE_TEXT}"),
    "wrong dtype": ((A, np.ones(3, np.float64)),
                    rf"input 'b' has dtype float64, expected float32.*{SIGNATURE_TEXT}"),
    "int instead of float": ((A.astype(np.int32), B), r"input 'a' has dtype int32"),
    "too few": ((A,), rf"expected 2 inputs, got 1.*{SIGNATURE_TEXT}"),
    "too many": ((A, B, B), rf"expected 2 inputs, got 3.*{SIGNATURE_TEXT}"),
    "none": ((), rf"expected 2 inputs, got 0.*{SIGNATURE_TEXT}"),
    "a list": ((A.tolist(), B),
               r"input 'a' must be a numpy array, got list; expected a: float32\[2, 3\]"),
    "a python float": ((A, 1.0), r"input 'b' must be a numpy array, got float"),
    "None": ((A, None), r"input 'b' must be a numpy array, got NoneType"),
    "a string": (("a", B), r"input 'a' must be a numpy array, got str"),
    "dict missing a name": (({"a": A},), rf"{SIGNATURE_TEXT}: missing \['b'\], unknown \[\]"),
    "dict with an unknown name": (({"a": A, "b": B, "c": B},), r"unknown \['c'\]"),
}


@pytest.mark.parametrize("args, message", list(BAD_CALLS.values()), ids=list(BAD_CALLS))
def test_bad_call_raises_value_error(add_model, args, message):
    with pytest.raises(ValueError, match=message):
        add_model(*args)
    np.testing.assert_array_equal(add_model(A, B)[0], A + B)  # and the model still works


def test_keyword_call_errors(add_model):
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        add_model(a=A)
    with pytest.raises(ValueError, match="either positionally or by name"):
        add_model(A, b=B)


# ----------------------------------------------------------------------------- unsupported ops


def bernoulli_node(name: str, x: str, y: str) -> onnx.NodeProto:
    """A random op: nobody plans to import it."""
    return helper.make_node("Bernoulli", [x], [y], name=name)


def test_unsupported_op_is_named_with_its_node():
    model = make_model([bernoulli_node("coin", "x", "h")], {"x": (np.float32, [5, 1, 3])},
                       ["h"])
    with pytest.raises(dlc.UnsupportedOpsError, match=r"unsupported ONNX op: Bernoulli \(node "
                                                      r"'coin'\)") as info:
        dlc.compile(model)
    assert info.value.unsupported == {"Bernoulli": ["coin"]}
    assert "Supported ops: " in str(info.value) and "MatMul" in str(info.value)  # what is
    assert isinstance(info.value, dlc.FrontendError) and isinstance(info.value, dlc.DlcError)


def test_every_unsupported_op_is_listed_in_one_error():
    nodes = [
        bernoulli_node("coin_a", "x", "h"),
        helper.make_node("Reshape", ["h", "shape"], ["h2"], name="flat"),
        helper.make_node("RandomNormalLike", ["h2"], ["s"], name="random_1"),
        bernoulli_node("coin_b", "x", "h3"),
        helper.make_node("RandomUniformLike", ["h3"], ["g"]),  # unnamed: named by position
    ]
    weights = {"shape": np.array([5, 3], np.int64)}
    model = make_model(nodes, {"x": (np.float32, [5, 1, 3])}, ["s", "g"], initializers=weights)
    with pytest.raises(dlc.UnsupportedOpsError) as info:
        dlc.compile(model)
    message = str(info.value)
    assert message.startswith("unsupported ONNX ops: ")
    for expected in ("Bernoulli (nodes 'coin_a', 'coin_b')", "RandomNormalLike (node 'random_1')",
                     "RandomUniformLike (node '#4')"):
        assert expected in message
    assert "Reshape (" not in message
    assert info.value.unsupported == {"Bernoulli": ["coin_a", "coin_b"],
                                      "RandomNormalLike": ["random_1"],
                                      "RandomUniformLike": ["#4"]}


def test_op_of_another_domain_is_unsupported():
    node = helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="com.example")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info("y", 1, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    with pytest.raises(dlc.UnsupportedOpsError, match=r"com\.example\.Relu \(node 'custom_relu'"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- malformed models


@pytest.fixture
def model_bytes() -> bytes:
    x = np.zeros([2, 3], np.float32)
    return node_model("Relu", [x]).SerializeToString()


def test_random_bytes(tmp_path):
    data = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    with pytest.raises(dlc.FrontendError, match="not a valid ONNX model|not an ONNX model"):
        dlc.compile(data)
    path = tmp_path / "random.onnx"
    path.write_bytes(data)
    with pytest.raises(dlc.FrontendError, match=re.escape(str(path))):
        dlc.compile(path)


def test_truncated_file(tmp_path, model_bytes):
    path = tmp_path / "truncated.onnx"
    path.write_bytes(model_bytes[: len(model_bytes) // 2])
    with pytest.raises(dlc.FrontendError, match=f"'{re.escape(str(path))}' is not"):
        dlc.compile(str(path))


def test_empty_file(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(dlc.FrontendError, match="it has no graph"):
        dlc.compile(path)


def test_missing_file(tmp_path):
    with pytest.raises(dlc.FrontendError, match="no ONNX model at .*missing.onnx"):
        dlc.compile(tmp_path / "missing.onnx")


def test_directory_instead_of_a_file(tmp_path):
    with pytest.raises(dlc.FrontendError, match="no ONNX model at"):
        dlc.compile(tmp_path)


@pytest.mark.parametrize("value", [42, None, [1, 2]], ids=["int", "None", "list"])
def test_not_a_model(value):
    with pytest.raises(dlc.FrontendError, match="expected an ONNX ModelProto or a path"):
        dlc.compile(value)


def test_node_consuming_an_undefined_value():
    node = helper.make_node("Add", ["x", "ghost"], ["y"], name="haunted_add")
    model = make_model([node], {"x": (np.float32, [2])}, {"y": (np.float32, [2])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"invalid ONNX model: node 'haunted_add' \(Add\): "
                                                r"input 'ghost' is produced by no node"):
        dlc.compile(model)


def test_graph_output_produced_by_no_node():
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], {"x": (np.float32, [2])}, {"nowhere": (np.float32, [2])},
                       check=False)
    with pytest.raises(dlc.FrontendError, match="graph output 'nowhere' is produced by no node"):
        dlc.compile(model)


INCONSISTENT = {
    "Add [2,3] + [4,3]": ("Add", {"a": [2, 3], "b": [4, 3]}, {},
                          r"node 'bad' \(Add\): shapes \[2x3\], \[4x3\] are not broadcast"),
    "Mul [3] * [4]": ("Mul", {"a": [3], "b": [4]}, {}, r"\[3\], \[4\] are not broadcast"),
    "MatMul [2,3] x [4,3]": ("MatMul", {"a": [2, 3], "b": [4, 3]}, {},
                             r"node 'bad' \(MatMul\): contracting dimensions differ"),
    "MatMul batch [2,3,4] x [3,4,5]": ("MatMul", {"a": [2, 3, 4], "b": [3, 4, 5]}, {},
                                       "not broadcast-compatible"),
    "Gemm [2,3] x [2,3]": ("Gemm", {"a": [2, 3], "b": [2, 3]}, {},
                           r"node 'bad' \(Gemm\): contracting dimensions differ"),
    "Gemm 3-D": ("Gemm", {"a": [1, 2, 3], "b": [3, 2]}, {}, "must be 2-D"),
    "Gemm C [3,3]": ("Gemm", {"a": [2, 3], "b": [3, 4], "c": [3, 3]}, {},
                     r"C of shape \[3x3\] does not broadcast to \[2x4\]"),
}


@pytest.mark.parametrize("op, shapes, attributes, message", list(INCONSISTENT.values()),
                         ids=list(INCONSISTENT))
def test_inconsistent_shapes(op, shapes, attributes, message):
    node = helper.make_node(op, list(shapes), ["y"], name="bad", **attributes)
    inputs = {name: (np.float32, shape) for name, shape in shapes.items()}
    model = make_model([node], inputs, {"y": (np.float32, [2, 3])}, check=False)
    with pytest.raises(dlc.FrontendError, match=message):
        dlc.compile(model)


def test_mixed_element_types():
    node = helper.make_node("Add", ["a", "b"], ["y"], name="mixed")
    model = make_model([node], {"a": (np.float32, [2]), "b": (np.int32, [2])},
                       {"y": (np.float32, [2])}, check=False)
    with pytest.raises(dlc.FrontendError, match="node 'mixed' .* input 'b' is int32 but input "
                                                "'a' is float; both are 'T' of Add"):
        dlc.compile(model)


@pytest.mark.parametrize("dtype, name", [(np.complex64, "COMPLEX64"),
                                         (np.complex128, "COMPLEX128")])
def test_unsupported_input_element_type(dtype, name):
    node = helper.make_node("Identity", ["x"], ["y"])
    model = make_model([node], {"x": (dtype, [3])}, ["y"])
    with pytest.raises(dlc.FrontendError, match=f"graph input 'x' has element type {name}, "
                                                "which dlc does not support yet"):
        dlc.compile(model)


def test_unsupported_constant_element_type():
    node = helper.make_node("Identity", ["mask"], ["y"])
    model = make_model([node], {}, ["y"], initializers={"mask": np.array([1j, 2], np.complex64)})
    with pytest.raises(dlc.FrontendError, match="initializer 'mask': .*complex64"):
        dlc.compile(model)


def test_legacy_broadcast_attribute():
    node = helper.make_node("Add", ["a", "b"], ["y"], name="old_add", broadcast=1)
    model = make_model([node], {"a": (np.float32, [2, 3]), "b": (np.float32, [3])},
                       {"y": (np.float32, [2, 3])}, opset=6)
    with pytest.raises(dlc.FrontendError, match="old_add.*legacy broadcast"):
        dlc.compile(model)


# ----------------------------------------------------------------------------- shapes


@pytest.fixture
def symbolic_model() -> onnx.ModelProto:
    node = helper.make_node("Add", ["x", "b"], ["y"])
    return make_model([node], {"x": (np.float32, ["batch", 3])}, ["y"],
                      initializers={"b": np.arange(3, dtype=np.float32)})


def test_symbolic_dims_need_input_shapes_to_lower(symbolic_model, monkeypatch):
    # (dlc.compile compiles it per call shape: tests/test_dynamic.py; with its one size
    # compiled once, dlc.lower shows that IR: tests/test_dynamic_function.py)
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")
    with pytest.raises(dlc.FrontendError, match=r"graph input 'x' has a dynamic size 'batch' "
                                                r"at axis 0.*input_shapes=\{'x': \[\.\.\.\]\}"):
        dlc.lower(symbolic_model, "dlc")


@pytest.mark.parametrize("batch", [1, 5])
def test_symbolic_dims_with_input_shapes(symbolic_model, batch):
    compiled = dlc.compile(symbolic_model, input_shapes={"x": [batch, 3]})
    assert compiled.signature.inputs[0].shape == (batch, 3)
    x = random_array([batch, 3], np.float32)
    np.testing.assert_array_equal(compiled(x)[0], x + np.arange(3, dtype=np.float32))
    with pytest.raises(ValueError, match=r"input 'x' has shape \[7, 3\], expected"):
        compiled(random_array([7, 3], np.float32))


@pytest.mark.parametrize("shapes, message", [
    ({"x": [2]}, r"graph input 'x' has rank 2, but input_shapes gives \[2\]"),
    ({"x": [-1, 3]}, r"sizes must be >= 0"),
    ({"z": [2, 3]}, r"input_shapes or constants name unknown inputs \['z'\]; inputs are \['x'\]"),
    ({"b": [3]}, r"unknown inputs \['b'\]"),  # an initializer is no input
])
def test_bad_input_shapes(symbolic_model, shapes, message):
    with pytest.raises(dlc.FrontendError, match=message):
        dlc.compile(symbolic_model, input_shapes=shapes)


@pytest.fixture
def shapeless_model() -> onnx.ModelProto:
    node = helper.make_node("Relu", ["x"], ["y"])
    return make_model([node], {"x": (np.float32, None)}, {"y": (np.float32, [2])}, check=False)


def test_input_without_a_shape(shapeless_model):
    with pytest.raises(dlc.FrontendError, match="shape"):
        dlc.compile(shapeless_model)


def test_input_without_a_shape_with_input_shapes(shapeless_model):
    compiled = dlc.compile(shapeless_model, input_shapes={"x": [2]})
    np.testing.assert_array_equal(compiled(np.array([-1, 1], np.float32))[0], [0, 1])


def test_output_without_a_shape():
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], {"x": (np.float32, [2])}, {"y": (np.float32, None)}, check=False)
    compiled = dlc.compile(model)
    np.testing.assert_array_equal(compiled(np.array([-1, 1], np.float32))[0], [0, 1])


# ----------------------------------------------------------------------------- API misuse


@pytest.mark.parametrize("opt_level", [-1, 4, 7, "2"])
def test_bad_opt_level(opt_level):
    with pytest.raises(dlc.ArgumentError, match=r"opt_level must be one of \(0, 1, 2, 3\), got"):
        dlc.compile(node_model("Relu", [np.zeros(2, np.float32)]), opt_level=opt_level)


BAD_ARGUMENTS = {
    "num_threads=0": (lambda model: dlc.compile(model, num_threads=0),
                      "num_threads must be at least 1, got 0"),
    "lower: opt_level=7": (lambda model: dlc.lower(model, "dlc", opt_level=7),
                           "opt_level must be one of"),
    "lower: unknown stage": (lambda model: dlc.lower(model, "tiled"), "unknown stage 'tiled'"),
    "pipeline: opt_level=5": (lambda model: dlc.pipeline(5), "opt_level must be one of"),
}


@pytest.mark.parametrize("call, message", list(BAD_ARGUMENTS.values()), ids=list(BAD_ARGUMENTS))
def test_bad_argument_is_an_argument_error(call, message):
    with pytest.raises(dlc.ArgumentError, match=message) as caught:
        call(node_model("Relu", [np.zeros(2, np.float32)]))
    assert isinstance(caught.value, dlc.DlcError) and isinstance(caught.value, ValueError)


def test_unknown_stage(add_model):
    with pytest.raises(dlc.ArgumentError, match="unknown stage 'tiled'; stages are dlc, linalg"):
        add_model.ir("tiled")


# every module of the package imported in a fresh process (importing them all here would leave
# plugins, torch and the tools loaded in the suite's workers); prints module, class, is-DlcError
_EXCEPTION_CLASSES = """
import importlib, inspect, pkgutil
import dlc
from dlc.errors import DlcError
SKIPPED = ("dlc.tests", "dlc.benchmarks", "dlc.examples", "dlc.docs", "dlc.lit_tests",
           "dlc.build")
for info in pkgutil.walk_packages(dlc.__path__, "dlc."):
    if info.name.startswith(SKIPPED):
        continue
    module = importlib.import_module(info.name)
    for name, value in vars(module).items():
        if (inspect.isclass(value) and issubclass(value, BaseException)
                and value.__module__ == module.__name__):
            print(module.__name__, name, issubclass(value, DlcError),
                  issubclass(value, Warning))
"""


def test_every_exception_class_of_the_package_is_a_dlc_error():
    # the README's promise: `except dlc.DlcError` catches every error dlc raises on purpose
    # (ThreadsUnavailable, PassFailure and dlc-opt's UsageError were plain exceptions)
    out = subprocess.run([sys.executable, "-c", _EXCEPTION_CLASSES], capture_output=True,
                         text=True, check=True, timeout=300).stdout
    classes = [line.split() for line in out.splitlines()]
    names = {name for _, name, _, _ in classes}
    assert {"ShapeError", "PipelineError", "ThreadsUnavailable", "CompileError",
            "FrontendError", "PassFailure"} <= names  # (the walk found the package)
    strays = [f"{module}.{name}" for module, name, is_dlc, is_warning in classes
              if is_dlc == "False" and is_warning == "False" and not name.startswith("_")]
    assert strays == []


def test_failing_stage_raises_compile_error_with_the_location():
    # an op the importer would never build: verify reports it at its location
    text = """
    func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
      %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("n1")
      return %0 : tensor<2x3xf32>
    }"""
    context = make_context()
    with context:
        module = ir.Module.parse(text)
        with pytest.raises(dlc.CompileError, match=r"(?s)stage 'dlc' failed:.*n1.*error: "
                                                   r"'dlc.add' op shapes"):
            run_stage(module, "dlc", "builtin.module(dlc-verify)")
