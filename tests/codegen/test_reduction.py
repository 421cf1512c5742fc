"""The row schedule (passes/codegen/reduction.py): softmax, layernorm and reductions along the
last axis against onnx.reference, for rows and row lengths that do and do not divide the
R x L = 8 x 16 partial tile, rows shorter than L, and the ops broadcasting the row results."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen.reduction import rows_dim
from tests.conftest import MATMUL_TOLERANCES, make_model, run_both

RNG = np.random.default_rng(0)

# rows x row: both divide; 5 spare rows and a row of 62 * 16 + 8; a row of 16 + 4; a row of
# exactly 16 (one partial tile: reduced whole) and of 16 + 1; rows of 2 and 2 * 16 + 1 tiles;
# 3-D (rows: the middle loop); ViT's attention rows (12 * 197 of 12 * 16 + 5)
SHAPES = [[64, 768], [37, 1000], [512, 20], [300, 16], [300, 17], [300, 32], [200, 33],
          [4, 33, 70], [12, 197, 197]]


def scheduled(model: dlc.CompiledModel) -> bool:
    text = model.ir("linalg")
    return "linalg.generic" not in text and "vector.multi_reduction" in text


def one_node(node, shape: list[int], initializers=None):
    return make_model([node], {"x": (np.float32, shape)}, ["y"], initializers=initializers)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_rows(shape: list[int]) -> None:
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=-1), shape)
    assert scheduled(dlc.compile(model))
    x = RNG.standard_normal(shape).astype(np.float32) * 4
    run_both(model, [x])


@pytest.mark.parametrize("shape", [[16, 768], [50, 300], [4, 33, 70]], ids=str)
def test_layernorm_rows(shape: list[int]) -> None:
    width = shape[-1]
    inits = {"g": RNG.standard_normal(width).astype(np.float32),
             "b": RNG.standard_normal(width).astype(np.float32)}
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)
    model = one_node(node, shape, inits)
    assert scheduled(dlc.compile(model))
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    run_both(model, [x], tolerances=MATMUL_TOLERANCES)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceSum", "ReduceMean", "ReduceMin"])
def test_reductions_along_the_last_axis(op: str) -> None:
    shape = [96, 130]
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)  # (opset 18: axes input)
    model = make_model([node], {"x": (np.float32, shape)}, ["y"],
                       initializers={"axes": np.array([1], np.int64)}, opset=18)
    assert "vector.multi_reduction" in dlc.compile(model).ir("linalg")
    run_both(model, [RNG.standard_normal(shape).astype(np.float32)],
             tolerances=MATMUL_TOLERANCES)


def test_small_rows_keep_the_naive_path() -> None:
    model = one_node(helper.make_node("Softmax", ["x"], ["y"], axis=-1), [8, 16])
    assert "vector." not in dlc.compile(model).ir("linalg")


@pytest.mark.parametrize("shape, dim", [((128, 1, 768), 0), ((4, 33, 70), 1), ((1, 1, 9), 1)])
def testrows_dim_is_the_innermost_long_parallel_loop(shape, dim: int) -> None:
    assert rows_dim(shape) == dim


# integer rows (an integer output, f32 or integer inputs): timm attention's any() over a
# boolean mask is a max of i8 flags; ONNX's integer ReduceMax/Min/Sum; rows and row lengths
# that do and do not divide the 8 x 32 partial tile
INTEGER_CASES = [("ReduceMax", np.int32, [96, 130]), ("ReduceMin", np.int64, [37, 1000]),
                 ("ReduceSum", np.int32, [200, 33]), ("ReduceMax", np.int8, [300, 32]),
                 ("ReduceMin", np.uint8, [64, 70])]


@pytest.mark.parametrize("op,dtype,shape", INTEGER_CASES, ids=str)
def test_integer_reductions_along_the_last_axis(op: str, dtype, shape: list[int]) -> None:
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)
    model = make_model([node], {"x": (dtype, shape)}, ["y"],
                       initializers={"axes": np.array([-1], np.int64)}, opset=18)
    assert scheduled(dlc.compile(model))
    info = np.iinfo(dtype)
    low, high = (-1000, 1000) if op == "ReduceSum" else (info.min, info.max)
    x = RNG.integers(max(low, info.min), min(high, info.max), shape, endpoint=True).astype(dtype)
    outputs = run_both(model, [x], tolerances=MATMUL_TOLERANCES)
    np.testing.assert_array_equal(outputs[0], getattr(np, op[6:].lower())(x, -1, keepdims=True))


def test_any_over_a_mask_is_scheduled() -> None:
    """x.any(-1) of a comparison (torch: extui i1 -> i8, maxui): no naive loops, exact."""
    torch = pytest.importorskip("torch")

    class AnyRow(torch.nn.Module):
        def forward(self, x):
            return (x > 1.5).any(dim=-1, keepdim=True).to(torch.float32)

    x = torch.from_numpy(RNG.standard_normal([4, 4, 100, 70]).astype(np.float32))
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(AnyRow().eval(), example_inputs=(x,))
    assert not [w for w in caught if issubclass(w.category, dlc.NaivePathWarning)]
    assert "vector.multi_reduction" in compiled.ir("linalg")
    np.testing.assert_array_equal(compiled(x.numpy())[0], AnyRow()(x).numpy())


def test_partial_tiles_are_one_vector_a_row() -> None:
    # 8 x 16 partial results (one AVX-512 vector a row), not 8 x 32: merging an 8 x 32 tile per
    # 8 rows took most of the time of short rows (ReduceMax of rows of 192 1.45x -> 1.16x
    # onnxruntime, Softmax of ViT's rows of 197 -5 %)
    model = dlc.compile(one_node(helper.make_node("Softmax", ["x"], ["y"], axis=-1),
                                 [12, 197, 197]))
    text = model.ir("linalg")
    assert "vector<8x1x16xf32>" in text and "x32xf32>" not in text


@pytest.mark.parametrize("op, fill", [("ReduceMax", -np.inf), ("ReduceMin", np.inf)])
def test_max_and_min_rows_propagate_nan(op: str, fill: float) -> None:
    # (maximumf / minimumf with no signed zeros: NaN still wins, in the partial tiles' loop and
    # in the remainder of a row)
    shape = [20, 197]
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)
    model = make_model([node], {"x": (np.float32, shape)}, ["y"],
                       initializers={"axes": np.array([1], np.int64)}, opset=18)
    x = RNG.standard_normal(shape).astype(np.float32)
    x[3, 5] = x[11, 195] = x[19, 0] = np.nan
    x[7] = fill
    (result,) = dlc.compile(model)(x)
    expected = np.max(x, axis=1) if op == "ReduceMax" else np.min(x, axis=1)
    np.testing.assert_array_equal(result, expected)
