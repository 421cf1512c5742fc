"""Models with dynamic input sizes (dlc.specialize.DynamicModel): the symbolic signature, the
checks of a call against it, one specialization per distinct call shape, bounded."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
import dlc.backend
from dlc.specialize import DynamicModel
from dlc.testing import conformance
from dlc.tools import dlc_cli

RNG = np.random.default_rng(7)
W = RNG.standard_normal([8, 4]).astype(np.float32)


@pytest.fixture(autouse=True)
def per_shape(monkeypatch):
    """The specializations this module tests: the models here compile once otherwise (one
    dynamic size, or batch 1 for every sequence: tests/test_dynamic_function.py)."""
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")


def encoder_like(input_dims=("batch", "seq", 8), mask_dims=("batch", "seq", 1)):
    """y = (x @ W) * mask: two inputs that share the dynamic sizes batch and seq."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(input_dims))
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, list(mask_dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 4])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Mul", ["t", "mask"], ["y"])],
        "encoder_like", [x, mask], [y], [numpy_helper.from_array(W, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def inputs(batch: int, seq: int) -> tuple[np.ndarray, np.ndarray]:
    return (RNG.standard_normal([batch, seq, 8]).astype(np.float32),
            RNG.standard_normal([batch, seq, 1]).astype(np.float32))


def test_signature_names_the_dynamic_sizes():
    model = dlc.compile(encoder_like(mask_dims=("batch", None, 1)))
    assert isinstance(model, DynamicModel)
    assert str(model.signature) == ("(x: float32[batch, seq, 8], mask: float32[batch, ?, 1]) "
                                    "-> (y: float32[batch, seq, 4])")
    assert model.input_names == ["x", "mask"] and model.specializations == []


@pytest.mark.parametrize("shapes", [[(1, 1), (2, 5), (3, 16)], [(1, 0), (4, 3)]])
def test_each_call_shape_runs_its_specialization(shapes):
    model = dlc.compile(encoder_like())
    for batch, seq in [*shapes, *shapes]:  # (the second round reuses them)
        x, mask = inputs(batch, seq)
        (y,) = model(x, mask)
        assert y.shape == (batch, seq, 4)
        np.testing.assert_allclose(y, (x @ W) * mask, rtol=1e-5, atol=1e-6)
    assert model.compiles == len(shapes)
    assert model.specializations == [{"x": (b, s, 8), "mask": (b, s, 1)} for b, s in shapes]


def test_inputs_sharing_a_size_must_agree():
    model = dlc.compile(encoder_like())
    x, _ = inputs(2, 5)
    _, mask = inputs(2, 4)
    with pytest.raises(ValueError, match=r"inputs 'x' and 'mask' disagree on the dynamic size "
                                         r"'seq': 5 \(axis 1 of 'x'\) and 4 \(axis 1 of 'mask'\)"):
        model(x, mask)
    assert model.compiles == 0


@pytest.mark.parametrize("x, message", [
    (np.zeros([2, 5, 7], np.float32), r"input 'x' has shape \[2, 5, 7\], expected \['batch', 'seq', 8\]"),
    (np.zeros([2, 5], np.float32), r"input 'x' has shape \[2, 5\], expected"),
    (np.zeros([2, 5, 8], np.float64), r"input 'x' has dtype float64, expected float32"),
    ([[1.0]], r"input 'x' must be a numpy array"),
])
def test_bad_inputs_are_clear_errors(x, message):
    model = dlc.compile(encoder_like())
    with pytest.raises(dlc.InputError, match=message):
        model(x, np.zeros([2, 5, 1], np.float32))


def test_by_name_and_torch_tensors():
    torch = pytest.importorskip("torch")
    model = dlc.compile(encoder_like())
    x, mask = inputs(2, 3)
    (by_name,) = model({"mask": mask, "x": x})
    (tensor,) = model(torch.from_numpy(x), torch.from_numpy(mask))
    assert isinstance(tensor, torch.Tensor)
    np.testing.assert_array_equal(tensor.numpy(), by_name)


def test_specializations_are_bounded_least_recently_used_first(monkeypatch):
    monkeypatch.setenv("DLC_MAX_SPECIALIZATIONS", "2")
    model = dlc.compile(encoder_like())
    for seq in (1, 2, 1, 3):
        model(*inputs(1, seq))
    assert [s["x"][1] for s in model.specializations] == [1, 3]
    assert model.compiles == 3


@pytest.mark.parametrize("value", ["0", "many"])
def test_bad_bound_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv("DLC_MAX_SPECIALIZATIONS", value)
    with pytest.raises(ValueError, match=r"\$DLC_MAX_SPECIALIZATIONS=.* is not an integer >= 1"):
        dlc.compile(encoder_like())


def test_input_shapes_fix_some_inputs():
    model = dlc.compile(encoder_like(mask_dims=("batch", "seq", 1)),
                        input_shapes={"mask": [2, 3, 1]})
    assert str(model.signature).startswith("(x: float32[batch, seq, 8], mask: float32[2, 3, 1])")
    with pytest.raises(ValueError, match="expected \\[2, 3, 1\\]"):
        model(*inputs(1, 3))
    (y,) = model(*inputs(2, 3))
    assert y.shape == (2, 3, 4)
    static = dlc.compile(encoder_like(), input_shapes={"x": [2, 3, 8], "mask": [2, 3, 1]})
    assert isinstance(static, dlc.CompiledModel)


def test_specialize_and_its_ir():
    model = dlc.compile(encoder_like())
    with pytest.raises(ValueError, match="no specialization yet"):
        model.ir("dlc")
    assert "tensor<2x3x8xf32>" in model.ir("dlc", input_shapes={"x": [2, 3, 8], "mask": [2, 3, 1]})
    with pytest.raises(ValueError, match="disagree on the dynamic size 'batch'"):
        model.specialize({"x": [2, 3, 8], "mask": [1, 3, 1]})
    with pytest.raises(ValueError, match=r"missing \['mask'\]"):
        model.specialize({"x": [2, 3, 8]})
    compiled = model.specialize({"x": [1, 4, 8], "mask": [1, 4, 1]})
    assert compiled.signature.inputs[0].shape == (1, 4, 8)
    assert "tensor<1x4x8xf32>" in model.ir("linalg")  # (the one used last)


def test_backend_runs_a_dynamic_model_at_several_shapes():
    rep = dlc.backend.prepare(encoder_like())
    for batch, seq in [(1, 2), (3, 1)]:
        x, mask = inputs(batch, seq)
        (y,) = rep.run([x, mask])
        np.testing.assert_allclose(y, (x @ W) * mask, rtol=1e-5, atol=1e-6)


def test_cli_runs_a_dynamic_model_with_given_inputs(tmp_path, capsys):
    path = tmp_path / "model.onnx"
    onnx.save(encoder_like(), path)
    x, _ = inputs(2, 6)
    np.save(tmp_path / "x.npy", x)
    assert dlc_cli.main(["run", str(path), "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    assert "y: shape=[2, 6, 4]" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"input 'x' has dynamic sizes .*--input-shape x="):
        dlc_cli.main(["run", str(path)])


def test_conformance_makes_every_input_size_dynamic():
    model = conformance.make_dynamic(encoder_like(input_dims=(2, 3, 8)))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert len(dims) == 3 and not any(d.HasField("dim_value") or d.dim_param for d in dims)
    assert str(dlc.compile(model).signature).startswith("(x: float32[?, ?, ?]")


def test_threads_share_a_dynamic_model(monkeypatch):
    # calls of known shapes go on while another thread compiles; the LRU bound holds
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("DLC_MAX_SPECIALIZATIONS", "3")
    model = dlc.compile(encoder_like())
    cases = [inputs(1 + i % 2, 2 + i % 5) for i in range(40)]

    def run(case):
        x, mask = case
        (y,) = model(x, mask)
        return np.allclose(y, (x @ W) * mask, rtol=1e-5, atol=1e-6)

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, cases))
    assert len(model.specializations) <= 3 and model.compiles >= 5


def test_profile_of_a_dynamic_model_takes_the_shapes_of_its_inputs():
    x, mask = inputs(2, 5)
    report = dlc.profile(encoder_like(), {"x": x, "mask": mask}, runs=2)
    assert sorted(n for o in report.ops for n in o.nodes) == ["MatMul_0", "Mul_1"]
    with pytest.raises(dlc.FrontendError, match="dynamic size 'batch'"):
        dlc.profile(encoder_like(), None, runs=1)  # (random inputs: no shapes to take)


def test_cli_errors_give_cli_advice(tmp_path, capsys):
    path = tmp_path / "model.onnx"
    onnx.save(encoder_like(), path)
    assert dlc_cli.main(["compile", str(path), "--emit=dlc"]) == 1
    error = capsys.readouterr().err
    assert "dynamic size 'batch'" in error and "--input-shape x=D0,D1,..." in error
    assert "input_shapes=" not in error and "dlc.compile" not in error
