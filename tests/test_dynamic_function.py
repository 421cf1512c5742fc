"""One compile for every value of a model's one dynamic size (issue 22): the ONNX import with
the size dynamic (`?`), its lowering (`tensor.dim`, dynamic `tensor.empty`), dlc-block-dynamic
(static blocks, a one-row or padded tail), and the runtime's descriptors set per call."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.errors import InputError

RNG = np.random.default_rng(7)


def mlp(dims=(48, 40, 24, 10), batch="batch", transpose=False):
    """x [batch, 48] -> MatMul/Add/Relu x2 -> Gemm -> Softplus: every op takes the size."""
    nodes, inits, x = [], [], "x"
    weights = []
    for i, (a, b) in enumerate(itertools.pairwise(dims)):
        w = (RNG.standard_normal((a, b)) * 0.2).astype(np.float32)
        bias = RNG.standard_normal(b).astype(np.float32)
        weights.append((w, bias))
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(bias, f"b{i}")]
        if i == len(dims) - 2:
            nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], ["g"]))
            nodes.append(helper.make_node("Softplus", ["g"], ["y"]))
        else:
            nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                      helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                      helper.make_node("Relu", [f"a{i}"], [f"h{i}"])]
            x = f"h{i}"
    if transpose:
        nodes.append(helper.make_node("Transpose", ["y"], ["t"], perm=[1, 0]))
    outputs = [helper.make_tensor_value_info("t" if transpose else "y", TensorProto.FLOAT,
                                             None)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, dims[0]])],
        outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), weights


def reference(x, weights):
    for w, b in weights[:-1]:
        x = np.maximum(x @ w + b, 0)
    w, b = weights[-1]
    return np.log1p(np.exp(x @ w + b))


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("DLC_CACHE", "0")


def test_one_compile_runs_every_batch_size():
    proto, weights = mlp()
    model = dlc.compile(proto, num_threads=1)
    assert model.function is not None, model.function_reason
    assert model.compiles == 1
    assert str(model.signature) == "(x: float32[batch, 48]) -> (y: float32[batch, 10])"
    # every path of the blocks: none, one row, a padded tail, whole tail blocks, whole
    # 64-row blocks and both
    for batch in (0, 1, 2, 7, 8, 9, 15, 63, 64, 65, 71, 130):
        x = RNG.standard_normal((batch, 48)).astype(np.float32)
        (y,) = model(x)
        assert y.shape == (batch, 10)
        np.testing.assert_allclose(y, reference(x, weights), rtol=2e-5, atol=2e-5)
    assert model.compiles == 1 and model.specializations == []
    assert "one compile for every size" in repr(model)


def test_calls_are_checked_against_the_signature():
    proto, _ = mlp()
    model = dlc.compile(proto, num_threads=1)
    with pytest.raises(InputError, match="expected"):
        model(np.zeros((3, 47), np.float32))
    with pytest.raises(InputError, match="dtype"):
        model(np.zeros((3, 48), np.float64))
    with pytest.raises(InputError):
        model(np.zeros((3, 48, 1), np.float32))


def test_the_code_is_static_blocks():
    proto, _ = mlp()
    model = dlc.compile(proto, num_threads=1)
    linalg = model.ir("linalg")
    assert "tensor<?x48xf32>" in linalg
    # the products run as static blocks: [64, 48] x [48, 40], one row, a padded tail of 8
    assert "linalg.matmul ins(%" in linalg or "vector.fma" in linalg
    assert "scf.if" in linalg
    for line in linalg.splitlines():
        if "linalg.matmul" in line or "linalg.generic" in line:
            assert "?x" not in line.split("->")[0], line  # (no product of a dynamic size)


def test_the_same_model_gives_the_same_code():
    proto, _ = mlp()
    first = dlc.compile(proto, num_threads=1).ir("llvm")
    again = dlc.compile(proto, num_threads=1).ir("llvm")
    assert first == again


def test_two_dynamic_sizes_compile_per_shape():
    proto, weights = mlp()
    proto.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "features"
    model = dlc.compile(proto, num_threads=1)
    assert model.function is None
    assert "2 dynamic sizes (batch, features)" in model.function_reason
    x = RNG.standard_normal((3, 48)).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], reference(x, weights), rtol=2e-5, atol=2e-5)


def test_an_op_without_a_dynamic_form_compiles_per_shape():
    proto, weights = mlp(transpose=True)
    model = dlc.compile(proto, num_threads=1)
    assert model.function is None
    assert "Transpose" in model.function_reason
    x = RNG.standard_normal((5, 48)).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], reference(x, weights).T, rtol=2e-5, atol=2e-5)


def test_the_setting_turns_it_off(monkeypatch):
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")
    model = dlc.compile(mlp()[0], num_threads=1)
    assert model.function is None and "DLC_DYNAMIC_FUNCTION" in model.function_reason


def test_an_unnamed_size_is_one_size():
    proto, weights = mlp(batch=None)
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param = ""
    model = dlc.compile(proto, num_threads=1)
    assert model.function is not None, model.function_reason
    x = RNG.standard_normal((11, 48)).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], reference(x, weights), rtol=2e-5, atol=2e-5)


def test_inputs_sharing_the_size_must_agree():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 16])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "z"], ["y"])], "mul", [x, z], [y])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = dlc.compile(proto, num_threads=1)
    assert model.function is not None, model.function_reason
    a = RNG.standard_normal((70, 16)).astype(np.float32)
    b = RNG.standard_normal((70, 16)).astype(np.float32)
    np.testing.assert_allclose(model(a, b)[0], a * b)
    with pytest.raises(InputError, match="disagree on the dynamic size 'n'"):
        model(a, b[:3])


def test_the_compile_cache_keeps_it(monkeypatch, tmp_path):
    monkeypatch.setenv("DLC_CACHE", "1")
    monkeypatch.setenv("DLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DLC_CACHE_MIN_SECONDS", "0")
    from collections import OrderedDict

    from dlc.runtime import cache
    from dlc.runtime.jit import SharedObjectFunction

    proto, weights = mlp()
    dlc.compile(proto, num_threads=1)
    monkeypatch.setattr(cache, "_MEMORY", OrderedDict())  # (from the disk, then)
    model = dlc.compile(proto, num_threads=1)
    assert model.function is not None
    assert isinstance(model.function._function, SharedObjectFunction)  # (its entry's names)
    x = RNG.standard_normal((66, 48)).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], reference(x, weights), rtol=2e-5, atol=2e-5)


def test_block_sizes_are_checked():
    from mlir import ir

    from dlc.dialects import make_context
    from dlc.passes.linalg.block_dynamic import BlockDynamic
    from dlc.passes.registry import PassFailure

    with make_context(), pytest.raises(PassFailure, match="multiple"):
        BlockDynamic(block=60, tail=8).run(ir.Module.parse("").operation)


def test_saved_model_file_runs(tmp_path):
    proto, weights = mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(proto, path)
    model = dlc.compile(str(path), num_threads=1)
    x = RNG.standard_normal((3, 48)).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], reference(x, weights), rtol=2e-5, atol=2e-5)
