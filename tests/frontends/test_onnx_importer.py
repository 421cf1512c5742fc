"""The ONNX importer: one dlc op per node, located at the node's name; ONNX conveniences."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.dialects import make_context
from dlc.frontends.onnx_importer import ImportedModel, import_model, load_model
from dlc.frontends.onnx_ops import importers
from tests.conftest import make_mlp, make_model, node_model, random_array, run_both


def imported(model: onnx.ModelProto, **kwargs) -> tuple[ImportedModel, str]:
    """The imported model and its IR text with locations."""
    result = import_model(model, make_context(), **kwargs)
    with result.module.context:
        return result, result.module.operation.get_asm(enable_debug_info=True,
                                                       use_local_scope=True)


def test_supported_op_set_includes_the_foundation_ops():
    assert set(importers()) >= {"Add", "Sub", "Mul", "Div", "Relu", "MatMul", "Gemm", "Reshape",
                                "Flatten", "Transpose", "Constant", "Identity"}


def test_mlp_imports_one_op_per_node_at_its_name():
    result, text = imported(make_mlp(batch=2, sizes=(8, 4, 3)))
    assert result.input_names == ["input"]  # initializers are no inputs
    assert result.output_names == ["logits"]
    assert result.opset == 17
    assert set(result.constants) == {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"}
    for op, location in [("dlc.matmul", "fc0.matmul"), ("dlc.add", "fc0.bias"),
                         ("dlc.relu", "relu0"), ("dlc.gemm", "fc1"),
                         ("dlc.constant", "fc0.weight")]:
        assert any(f'"{op}"' in line and f'loc("{location}")' in line
                   for line in text.splitlines()), f"no {op} at loc({location!r}) in\n{text}"
    assert text.count('"dlc.constant"') == 4
    assert "func.func @main(%arg0: tensor<2x8xf32>" in text
    assert "-> tensor<2x3xf32>" in text


def test_onnx_defaults_are_materialized_as_attributes():
    x, w = np.zeros([2, 3], np.float32), np.zeros([4, 3], np.float32)
    _, text = imported(node_model("Gemm", [x, w], transB=1))
    assert "alpha = 1.000000e+00 : f32" in text and "beta = 1.000000e+00 : f32" in text
    assert "transA = 0 : i64" in text and "transB = 1 : i64" in text
    _, text = imported(node_model("Transpose", [np.zeros([2, 3, 4], np.float32)]))
    assert "perm = array<i64: 2, 1, 0>" in text


def test_conveniences_need_no_op_of_their_own():
    nodes = [helper.make_node("Identity", ["x"], ["i"]),
             helper.make_node("Flatten", ["i"], ["f"], axis=2),
             helper.make_node("Reshape", ["f", "shape"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [2, 3, 4])}, ["y"],
                       initializers={"shape": np.array([0, -1], np.int64)})
    _, text = imported(model)
    assert "Identity" not in text and "dlc.identity" not in text
    assert "dlc.flatten" not in text
    # Flatten(axis=2) -> reshape [6, 4]; Reshape [0, -1] resolves 0 from the input: [6, -1]
    assert text.count('"dlc.reshape"') == 2
    assert "shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>" in text
    assert "shape = array<i64: 6, -1>} : (tensor<6x4xf32>) -> tensor<6x4xf32>" in text


def test_unnamed_nodes_get_a_name_without_changing_the_model():
    model = node_model("Relu", [np.zeros(3, np.float32)])
    model.graph.node[0].name = ""
    before = model.SerializeToString()
    _, text = imported(model)
    assert 'loc("Relu_0")' in text
    assert model.SerializeToString() == before


def test_import_does_not_change_the_model():
    model = make_mlp(batch=1, sizes=(4, 3, 2))
    before = model.SerializeToString()
    dlc.compile(model)
    assert model.SerializeToString() == before


def test_initializer_listed_as_graph_input_is_a_constant():
    # models of IR version < 4 list initializers among the graph inputs too
    node = helper.make_node("Add", ["x", "b"], ["y"])
    model = make_model([node], {"x": (np.float32, [3]), "b": (np.float32, [3])}, ["y"],
                       initializers={"b": np.array([1, 2, 3], np.float32)})
    compiled = dlc.compile(model)
    assert compiled.input_names == ["x"]
    x = random_array([3], np.float32)
    np.testing.assert_array_equal(compiled(x)[0], x + np.array([1, 2, 3], np.float32))


def test_graph_inputs_keep_their_order():
    node = helper.make_node("Sub", ["b", "a"], ["y"])
    model = make_model([node], {"a": (np.float32, [2]), "b": (np.float32, [2])}, ["y"])
    compiled = dlc.compile(model)
    assert compiled.input_names == ["a", "b"]
    a, b = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    np.testing.assert_array_equal(compiled(a, b)[0], b - a)
    np.testing.assert_array_equal(compiled({"b": b, "a": a})[0], b - a)


def test_load_model_accepts_path_str_bytes_and_proto(tmp_path):
    model = node_model("Relu", [np.zeros(3, np.float32)])
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    for source in (model, model.SerializeToString(), path, str(path)):
        assert load_model(source).graph.node[0].op_type == "Relu"


def test_several_outputs_in_graph_order():
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]),
             helper.make_node("Sub", ["a", "b"], ["difference"]),
             helper.make_node("Mul", ["a", "b"], ["product"])]
    model = make_model(nodes, {"a": (np.float32, [2, 3]), "b": (np.float32, [3])},
                       ["product", "sum", "difference"])
    a, b = random_array([2, 3], np.float32), random_array([3], np.float32, seed=1)
    outputs = run_both(model, [a, b])
    assert dlc.compile(model).output_names == ["product", "sum", "difference"]
    np.testing.assert_allclose(outputs[0], a * b, rtol=1e-6)
    np.testing.assert_allclose(outputs[1], a + b, rtol=1e-6)


def test_outputs_of_several_dtypes_and_shapes():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Transpose", ["i"], ["t"]),
             helper.make_node("Flatten", ["x"], ["f"], axis=0)]
    model = make_model(nodes, {"x": (np.float64, [2, 3]), "i": (np.int32, [3, 4])},
                       ["t", "r", "f"])
    run_both(model, [random_array([2, 3], np.float64), random_array([3, 4], np.int32)])


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_output_that_is_an_input(opt_level):
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], {"x": (np.float32, [2, 3])}, ["y", "x"])
    x = random_array([2, 3], np.float32)
    outputs = run_both(model, [x], opt_level)
    np.testing.assert_array_equal(outputs[1], x)
    assert not np.shares_memory(outputs[1], x)


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_output_that_is_a_constant(opt_level):
    nodes = [helper.make_node("Constant", [], ["c"], value_floats=[1.0, -2.0]),
             helper.make_node("Add", ["x", "c"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [2])}, ["c", "y", "w"],
                       initializers={"w": np.array([[5, 6]], np.int64)})
    outputs = run_both(model, [np.ones(2, np.float32)], opt_level)
    np.testing.assert_array_equal(outputs[0], [1.0, -2.0])
    np.testing.assert_array_equal(outputs[2], [[5, 6]])


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_outputs_that_are_one_value(opt_level):
    # the same value returned twice (through Identity, or merged by CSE and folds) gets a
    # buffer per output; this once crashed the process in buffer-results-to-out-params
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Identity", ["r"], ["r_again"]),
             helper.make_node("Relu", ["x"], ["r_twin"]),  # CSE merges it with r
             helper.make_node("Reshape", ["r", "same"], ["r_reshaped"]),  # folded into r
             helper.make_node("Reshape", ["r", "flat"], ["r_flat"]),  # a view of r's buffer
             helper.make_node("Identity", ["x"], ["x_again"])]
    model = make_model(nodes, {"x": (np.float32, [2, 3])},
                       ["r", "r_again", "r_twin", "r_reshaped", "r_flat", "x_again", "x"],
                       initializers={"same": np.array([2, 3]), "flat": np.array([6])})
    x = random_array([2, 3], np.float32)
    outputs = run_both(model, [x], opt_level)
    for i, first in enumerate(outputs):
        for second in outputs[i + 1:]:
            assert not np.shares_memory(first, second)


# ----------------------------------------------------------------------------- the checker


def big_weight_model(**node_attributes) -> onnx.ModelProto:
    """x [4, 1024] + w (a 16 KiB initializer), a node with `node_attributes`."""
    w = np.arange(4 * 1024, dtype=np.float32).reshape(4, 1024)
    return make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add", **node_attributes)],
                      {"x": (np.float32, [4, 1024])}, {"y": (np.float32, [4, 1024])},
                      initializers={"w": w}, check=False)


def test_the_checker_sees_large_initializers_as_stand_ins():
    from dlc.frontends import onnx_importer

    model = big_weight_model()
    skeleton = onnx_importer._skeleton(model)
    (stub,) = skeleton.graph.initializer
    assert (stub.name, stub.data_type, list(stub.dims)) == ("w", onnx.TensorProto.FLOAT, [0])
    assert not stub.HasField("raw_data")
    assert skeleton.ByteSize() < 1024 < model.ByteSize() // 16
    # everything else is the model's
    del model.graph.initializer[:]
    del skeleton.graph.initializer[:]
    assert skeleton.SerializeToString() == model.SerializeToString()


def test_the_checker_still_rejects_a_bad_node_beside_large_initializers():
    from dlc.frontends.onnx_node import ModelValidationError

    with pytest.raises(ModelValidationError, match=r"node 'add'.*Unrecognized attribute"):
        load_model(big_weight_model(bogus=1))


def test_a_large_initializer_of_the_wrong_size_is_still_rejected():
    from dlc.frontends.onnx_node import ModelValidationError

    model = big_weight_model()
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-4]
    with pytest.raises(ModelValidationError, match=r"initializer 'w' declares shape \[4, 1024\] "
                                                   r"of float \(16384 bytes\) but holds 16380"):
        load_model(model)


def test_checking_does_not_change_the_model():
    model = big_weight_model()
    model.graph.output[0].ClearField("type")  # (the checker's copy gets a type, not the model)
    before = model.SerializeToString()
    load_model(model)
    assert model.SerializeToString() == before


def test_large_initializers_are_kept_once_as_views_of_their_attributes():
    big = np.arange(128 * 256, dtype=np.float32).reshape(128, 256)  # 128 KiB
    small = np.arange(4, dtype=np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["p"]),
                        helper.make_node("Add", ["p", "b"], ["y"])],
                       {"x": (np.float32, [2, 128])}, ["y"],
                       initializers={"w": big, "b": np.resize(small, 256)})
    result = import_model(model, make_context())
    w, b = result.constants["w"], result.constants["b"]
    np.testing.assert_array_equal(w, big)
    np.testing.assert_array_equal(b, np.resize(small, 256))
    assert not w.flags.writeable and not w.flags.owndata  # (the attribute's storage)
    with result.module.context:
        constant = next(op for op in result.module.body.operations[0].regions[0].blocks[0]
                        .operations if op.operation.name == "dlc.constant"
                        and ir.ShapedType(op.results[0].type).shape == [128, 256])
        attribute = constant.attributes["value"]
        assert np.asarray(attribute).ctypes.data == w.ctypes.data
    np.testing.assert_allclose(dlc.compile(model)(np.ones((2, 128), np.float32))[0],
                               np.ones((2, 128), np.float32) @ big + np.resize(small, 256),
                               rtol=1e-5)


@pytest.mark.parametrize("root", ["Pow", "Sqrt"])
def test_a_shape_computed_by_pow_of_constants_folds(root):
    # DINOv2's position-embedding grid: Reshape(x, Concat([1], Cast(Pow(1369, 0.5)), [37],
    # [384])) of Constant nodes only (Pow was never folded: NeedsConstantError)
    def constant(name, value):
        return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(
            np.asarray(value)))

    nodes = [constant("n", np.float32(1369.0)), constant("half", np.float32(0.5)),
             constant("one", np.array([1], np.int64)), constant("d", np.array([384], np.int64)),
             constant("ax", np.array([0], np.int64)), constant("s37", np.array([37], np.int64)),
             helper.make_node("Pow", ["n", "half"], ["r"]) if root == "Pow"
             else helper.make_node("Sqrt", ["n"], ["r"]),
             helper.make_node("Cast", ["r"], ["ri"], to=onnx.TensorProto.INT64),
             helper.make_node("Unsqueeze", ["ri", "ax"], ["u"]),
             helper.make_node("Concat", ["one", "u", "s37", "d"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [1, 1369, 384])}, ["y"], opset=17)
    x = random_array([1, 1369, 384], np.float32, seed=0)
    (y,) = dlc.compile(model)(x)
    np.testing.assert_array_equal(y, x.reshape(1, 37, 37, 384))
