"""The Python API: dlc.compile's model sources and opt levels, CompiledModel and its IR stages."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import helper

import dlc
from dlc.passes import STAGES
from tests.conftest import MATMUL_TOLERANCES, make_model, random_array, run_both


def test_public_names():
    assert set(dlc.__all__) >= {"compile", "CompiledModel", "DlcError", "FrontendError",
                                "UnsupportedOpsError", "CompileError"}
    for error in (dlc.FrontendError, dlc.UnsupportedOpsError, dlc.CompileError):
        assert issubclass(error, dlc.DlcError)


def test_compile_from_proto_bytes_and_paths(tmp_path, mlp_model):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model, path)
    x = random_array([4, 32], np.float32)
    expected = dlc.compile(mlp_model)(x)[0]
    for source in (mlp_model.SerializeToString(), path, str(path)):
        np.testing.assert_array_equal(dlc.compile(source)(x)[0], expected)


def test_compiled_model_describes_itself(mlp_model):
    compiled = dlc.compile(mlp_model, opt_level=1)
    assert compiled.input_names == ["input"]
    assert compiled.output_names == ["logits"]
    assert str(compiled.signature) == "(input: float32[4, 32]) -> (logits: float32[4, 8])"
    assert repr(compiled) == ("CompiledModel(input: float32[4, 32]) -> (logits: float32[4, 8]) "
                              "(opt_level=1)")
    assert compiled.opt_level == 1
    assert compiled.compile_seconds > 0
    assert compiled.pipeline == dlc.pipeline(1)
    assert compiled.pipeline.startswith("builtin.module(") and "dlc-to-linalg" in compiled.pipeline


def rich_model() -> onnx.ModelProto:
    """Every supported op at least once, with foldable and duplicate parts."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
        helper.make_node("Transpose", ["xt"], ["xtt"], perm=[1, 0]),  # folds away (opt >= 1)
        helper.make_node("MatMul", ["xtt", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("Relu", ["hb"], ["r_twin"]),  # merged with r (opt >= 1)
        helper.make_node("Sub", ["r", "r_twin"], ["zero"]),
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("Mul", ["r", "two"], ["r2"]),
        helper.make_node("Div", ["r2", "two"], ["r3"]),
        helper.make_node("Add", ["r3", "zero"], ["r4"]),
        helper.make_node("Reshape", ["r4", "shape"], ["rs"]),
        helper.make_node("Flatten", ["rs"], ["fl"], axis=1),
        helper.make_node("Identity", ["fl"], ["fi"]),
        helper.make_node("Gemm", ["fi", "w2", "b2"], ["y"], transB=1, alpha=0.5, beta=2.0),
    ]
    initializers = {
        "w1": rng.standard_normal([6, 8]).astype(np.float32),
        "b1": rng.standard_normal([8]).astype(np.float32),
        "shape": np.array([4, 2, -1], np.int64),
        "w2": rng.standard_normal([5, 8]).astype(np.float32),
        "b2": rng.standard_normal([1, 5]).astype(np.float32),
    }
    return make_model(nodes, {"x": (np.float32, [4, 6])}, ["y", "r"], initializers=initializers)


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_every_opt_level_gives_the_reference_results(opt_level):
    x = random_array([4, 6], np.float32)
    run_both(rich_model(), [x], opt_level, tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_every_opt_level_on_the_mlp(opt_level, mlp_model):
    run_both(mlp_model, [random_array([4, 32], np.float32)], opt_level,
             tolerances=MATMUL_TOLERANCES)


STAGE_CONTENTS = {
    # stage: (patterns that must appear, patterns that must not)
    # (-O2 fuses MatMul + Add into a gemm: dlc-fuse-matmul-add)
    "dlc": ([r'"dlc\.gemm"', r'"dlc\.add"', r'"dlc\.relu"', r'"dlc\.constant"',
             r"func\.func @main\(%arg0: tensor<4x6xf32>"],
            [r"linalg\.", r"memref", r"llvm\.func"]),
    "linalg": ([r"linalg\.matmul", r"linalg\.generic", r"tensor<"],
               [r'"dlc\.', r"memref", r"llvm\.func"]),
    "bufferized": ([r"memref<", r"linalg\.", r"func\.func @main\(%arg0: memref<4x6xf32>"],
                   [r'"dlc\.', r"tensor\.empty", r"llvm\.func"]),
    "llvm": ([r"llvm\.func @main\(", r"llvm\.func @_mlir_ciface_main\("],
             [r'"dlc\.', r"linalg\.", r"memref\.", r"func\.func"]),
}


@pytest.fixture(scope="module")
def compiled_rich_model() -> dlc.CompiledModel:
    return dlc.compile(rich_model(), opt_level=2)


@pytest.mark.parametrize("stage", STAGES)
def test_ir_of_each_stage(compiled_rich_model, stage):
    text = compiled_rich_model.ir(stage)
    present, absent = STAGE_CONTENTS[stage]
    for pattern in present:
        assert re.search(pattern, text), f"{pattern!r} not in the {stage} IR:\n{text}"
    for pattern in absent:
        assert not re.search(pattern, text), f"{pattern!r} in the {stage} IR:\n{text}"


def test_ir_is_a_snapshot(compiled_rich_model):
    assert compiled_rich_model.ir("dlc") == compiled_rich_model.ir("dlc")
    assert compiled_rich_model.ir() == compiled_rich_model.ir("dlc")


def test_ir_large_elements_limit(compiled_rich_model):
    assert "dense_resource" not in compiled_rich_model.ir("dlc")
    elided = compiled_rich_model.ir("dlc", large_elements_limit=4)
    assert len(elided) < len(compiled_rich_model.ir("dlc"))


def test_graph_optimizations_depend_on_the_opt_level():
    level0 = dlc.compile(rich_model(), opt_level=0).ir("dlc")
    level1 = dlc.compile(rich_model(), opt_level=1).ir("dlc")
    assert level0.count('"dlc.transpose"') == 2 and level0.count('"dlc.relu"') == 2
    assert level1.count('"dlc.transpose"') == 0 and level1.count('"dlc.relu"') == 1
    # Reshape [4, 8] -> [4, 2, 4], then Flatten back to [4, 8]: the chain folds away
    assert level0.count('"dlc.reshape"') == 2 and level1.count('"dlc.reshape"') == 0
    # the unused Reshape shape initializer is dropped by DCE
    assert "tensor<3xi64>" in level0 and "tensor<3xi64>" not in level1


def test_elementwise_fusion_at_opt_level_2():
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    model = make_model(nodes, {"a": (np.float32, [2, 3]), "b": (np.float32, [3])}, ["y"])
    assert dlc.compile(model, opt_level=1).ir("linalg").count("linalg.generic") == 2
    assert dlc.compile(model, opt_level=2).ir("linalg").count("linalg.generic") == 1


def test_two_compiled_models_are_independent(mlp_model):
    first = dlc.compile(mlp_model)
    second = dlc.compile(rich_model())
    x = random_array([4, 32], np.float32)
    expected = first(x)[0]
    second(random_array([4, 6], np.float32))
    np.testing.assert_array_equal(first(x)[0], expected)
