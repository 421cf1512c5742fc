"""The data-tiled (packed) matmul: A and B copied into the order the register tile reads them
(codegen/matmul.py, "data tiling"; the host's tile, `codegen/target.py`: 8 x 32 on AVX-512,
4 x 16 on AVX2, "8" and "32" below), a constant B packed at compile time.

Numbers against numpy across shapes that do and do not divide the packing transposes' tiles
(K = 1000 and 130), outer tiles that are not powers of two (M = 264), a constant B read plainly
or transposed (Gemm transB = 1) with a bias and ReLU after it, and threads; and the decision
itself: small, short or ragged matmuls keep the plain schedule (an M that is not a multiple
of 8 packs padded from PACK_PAD_M rows on: test_matmul_padded_rows.py).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen.matmul import PACK_PAD_M, PACK_VOLUME, pack_tile
from tests.conftest import make_model

RNG = np.random.default_rng(7)


def random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def packed(model: dlc.CompiledModel) -> bool:
    """The packed kernel: contracting multiply-adds on 8 x 32 register tiles (or fewer rows,
    `matmul.packed_row_tile`), no matmul."""
    text = model.ir("linalg")
    mr, nr = pack_tile()
    return ("linalg.matmul" not in text and "arith.mulf" in text
            and re.search(rf"fastmath<contract> : vector<[1-{mr}]x{nr}xf32>", text) is not None)


def check(model: dlc.CompiledModel, inputs: list[np.ndarray], expected: np.ndarray) -> None:
    (result,) = model(*inputs)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5 * scale)


def matmul_model(m: int, n: int, k: int):
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    return make_model([node], {"a": (np.float32, [m, k]), "b": (np.float32, [k, n])}, ["y"])


# (M, N, K): the smallest packed size; M = 264 (outer tile 88 rows); K = 1000 (A packed in
# 8-wide k tiles, kc = 250) and 130 (2-wide, kc = all of K); N of one outer tile (96, 32)
PACKED_SHAPES = [(256, 256, 256), (264, 96, 1000), (1024, 160, 130), (1024, 32, 512)]


@pytest.mark.parametrize("m, n, k", PACKED_SHAPES, ids=str)
def test_packed_matmul_matches_numpy(m: int, n: int, k: int) -> None:
    model = dlc.compile(matmul_model(m, n, k))
    assert packed(model)
    a, b = random(m, k), random(k, n)
    check(model, [a, b], a @ b)


@pytest.mark.parametrize("trans_b", [0, 1])
def test_constant_weight_is_packed_at_compile_time(trans_b: int) -> None:
    m, n, k = 128, 384, 512
    weight = random(n, k) if trans_b else random(k, n)
    bias = random(n)
    nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["g"], transB=trans_b),
             helper.make_node("Relu", ["g"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [m, k])}, ["y"],
                       initializers={"w": weight, "bias": bias})
    compiled = dlc.compile(model)
    assert packed(compiled)
    linalg = compiled.ir("linalg")
    mr, nr = pack_tile()
    assert f"vector<1x{mr}x16xf32> to vector<1x16x{mr}xf32>" in linalg  # A is packed per call,
    assert f"vector<8x1x{nr}xf32> to vector<1x8x{nr}xf32>" not in linalg  # B at compile time
    x = random(m, k)
    check(compiled, [x], np.maximum(x @ (weight.T if trans_b else weight) + bias, 0))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m", [128, 197])
def test_packed_epilogue_is_fused_into_the_output_tiles(m: int, threads: int) -> None:
    """A packed product's elementwise consumer (bias, GELU-like tanh, residual add) runs in
    its forall, over the output tiles viewed [M/8, 8, N/32, 32]: no loop nest of its own
    (a padded M, 197 rows, keeps it separate: its result's first rows are sliced first)."""
    n, k = 384, 256
    weight, bias = random(k, n), random(n)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "bias"], ["hb"]),
             helper.make_node("Tanh", ["hb"], ["t"]),
             helper.make_node("Add", ["t", "r"], ["y"])]
    model = make_model(nodes, {"x": (np.float32, [m, k]), "r": (np.float32, [m, n])}, ["y"],
                       initializers={"w": weight, "bias": bias})
    compiled = dlc.compile(model, num_threads=threads)
    assert packed(compiled)
    linalg = compiled.ir("linalg")
    mr, nr = pack_tile()
    tiled = re.search(rf"scf\.forall [^\n]*-> \(tensor<\d+x{mr}x\d+x{nr}xf32>\)", linalg)
    assert (tiled is not None) == (m % mr == 0)
    if m % mr == 0:  # (one forall: the product, then its epilogue, in each tile)
        assert linalg.count("scf.forall (") == 1
    x, r = random(m, k), random(m, n)
    check(compiled, [x, r], np.tanh(x @ weight + bias) + r)


def test_packed_matmul_on_two_threads() -> None:
    m, n, k = 512, 256, 256
    model = dlc.compile(matmul_model(m, n, k), num_threads=2)
    assert packed(model)
    a, b = random(m, k), random(k, n)
    check(model, [a, b], a @ b)


@pytest.mark.parametrize("m, n, k", [(512, 512, 64),  # K too short to pay for packing
                                     (62, 1024, 512),  # M < PACK_PAD_M, not of 8 or 4
                                     (256, 250, 512),  # N not a multiple of 32
                                     (128, 128, 128)],  # below PACK_VOLUME
                         ids=str)
def test_other_matmuls_keep_the_plain_schedule(m: int, n: int, k: int) -> None:
    mr, nr = pack_tile()
    assert m * n * k < PACK_VOLUME or k < 128 or (m % mr and m < PACK_PAD_M) or n % nr
    model = dlc.compile(matmul_model(m, n, k))
    assert not packed(model) and "vector.fma" in model.ir("linalg")
    a, b = random(m, k), random(k, n)
    check(model, [a, b], a @ b)


@pytest.mark.parametrize("transposed", [False, True])
def test_constant_packing_layout(transposed: bool) -> None:
    """_packed_operand packs a constant [K, rows] (or [rows, K]) into [rows/tile, K, tile]:
    element [r, k, i] is row r*tile + i, column k (the copy reads the attribute in place)."""
    from mlir import ir
    from mlir.dialects import arith, func

    from dlc.dialects import make_context
    from dlc.passes.codegen.matmul import _packed_operand

    rows, k, tile = 64, 24, 16
    rng = np.random.default_rng(3)
    plain = rng.standard_normal((rows, k)).astype(np.float32)  # [rows, K]
    stored = plain if transposed else np.ascontiguousarray(plain.T)
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("f", ([], []))
        with ir.InsertionPoint(function.add_entry_block()):
            value = arith.ConstantOp(ir.RankedTensorType.get(list(stored.shape), ir.F32Type.get()),
                                     ir.DenseElementsAttr.get(stored)).result
            packed = _packed_operand(value, rows, tile, transposed)
            got = np.array(ir.DenseElementsAttr(packed.owner.attributes["value"]))
    want = plain.reshape(rows // tile, tile, k).transpose(0, 2, 1)
    assert got.shape == (rows // tile, k, tile)
    np.testing.assert_array_equal(got, want)
