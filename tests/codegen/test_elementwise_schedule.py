"""The elementwise schedule (passes/codegen/elementwise.py): vectorized fused chains against
numpy, for sizes that do and do not divide the vector widths, with and without broadcasting."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.codegen.elementwise import thread_tile, vector_width
from tests.conftest import make_model

RNG = np.random.default_rng(0)

# (shape of a, shape of b): flattened identity cases (divisible by 64, by 16 only, not at all:
# split), broadcast rows whose inner size divides, is small, or must be split
SHAPES = [
    ([64, 128], [64, 128]),
    ([4097], [4097]),
    ([3, 1000, 7], [3, 1000, 7]),
    ([64, 96], [96]),
    ([300, 50], [50]),
    ([5, 1000], [1000]),
    ([4, 1, 3000], [4, 7, 1]),  # size-1 broadcasts (maps with constant 0s): sliced, vectorized
    ([256, 520], [256, 520]),  # large: a forall of 4 tiles (for the threads), then vectors
    ([4, 16400], [4, 16400]),  # ... of 2 tiles of 32800 (vectors of 32)
    ([1024, 96], [96]),  # ... of 2 x 512 rows (broadcast: not flattened)
]


@pytest.mark.parametrize("a_shape, b_shape", SHAPES, ids=lambda v: str(v))
def test_fused_chain_matches_numpy(a_shape: list[int], b_shape: list[int]) -> None:
    # tanh((a - b) * a) + sigmoid(b): one generic, vectorized
    nodes = [helper.make_node("Sub", ["a", "b"], ["d"]), helper.make_node("Mul", ["d", "a"], ["m"]),
             helper.make_node("Tanh", ["m"], ["t"]), helper.make_node("Sigmoid", ["b"], ["s"]),
             helper.make_node("Add", ["t", "s"], ["y"])]
    model = dlc.compile(make_model(nodes, {"a": (np.float32, a_shape),
                                           "b": (np.float32, b_shape)}, ["y"]))
    text = model.ir("linalg")
    # sigmoid(b) of a broadcast b may stay its own small loop (dlc-fuse-elementwise: fused, it
    # would run once per element of the result); the chain itself is scheduled
    b_type = f"tensor<{'x'.join(map(str, b_shape))}xf32>"
    left = [t for t in re.findall(r"linalg\.generic .*? outs\(%\w+ : (tensor<[^>]*>)\)", text)
            if t != b_type or b_shape == a_shape]
    scheduled = "vector.transfer_write" in text and not left
    assert scheduled
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    expected = np.tanh((a - b) * a) + 1 / (1 + np.exp(-b))
    np.testing.assert_allclose(model(a, b)[0], expected, rtol=1e-5, atol=1e-6)


def test_small_ops_keep_the_naive_path() -> None:
    node = helper.make_node("Relu", ["a"], ["y"])
    model = dlc.compile(make_model([node], {"a": (np.float32, [8, 16])}, ["y"]))
    assert "linalg.generic" in model.ir("linalg") and "vector." not in model.ir("linalg")


@pytest.mark.parametrize("size, width", [(128, 64), (96, 32), (48, 16), (50, 50), (1000, None)])
def test_vector_width(size: int, width: int | None) -> None:
    assert vector_width(size) == width


def test_thread_tiles_of_large_ops() -> None:
    # (dimension, tile): an op of at least 32 Ki elements, its outermost dimension longer
    # than 1 in 4 (else 2) tiles of at least 8 Ki elements, a multiple of 16 when it is the
    # vectorized dimension
    assert thread_tile((4194304,)) == (0, 1048576)
    assert thread_tile((1, 128, 768)) == (1, 32)
    assert thread_tile((65600,)) == (0, 16400)
    assert thread_tile((1, 128, 256)) == (1, 32) and thread_tile((8, 4097)) == (0, 2)
    assert thread_tile((3, 16384)) is None  # (3 tiles: neither 4 nor 2)
    assert thread_tile((1, 64, 256)) is None and thread_tile((16000,)) is None  # (< 32 Ki)
    assert thread_tile((65552,)) is None  # (65552 / 4 and / 2 are not multiples of 16)


def test_two_threads_compute_what_one_does() -> None:
    nodes = [helper.make_node("Sub", ["a", "b"], ["d"]), helper.make_node("Tanh", ["d"], ["y"])]
    model = make_model(nodes, {"a": (np.float32, [256, 520]), "b": (np.float32, [256, 520])},
                       ["y"])
    a = RNG.standard_normal((256, 520)).astype(np.float32)
    b = RNG.standard_normal((256, 520)).astype(np.float32)
    threaded = dlc.compile(model, num_threads=2)
    assert "omp.parallel" in threaded.ir("llvm")
    np.testing.assert_array_equal(threaded(a, b)[0], dlc.compile(model, num_threads=1)(a, b)[0])


LOOP = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: tensor<1x512xf32>, %init: tensor<1x512xf32>) -> tensor<1x512xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant TRIPS : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<1x512xf32>) {
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<1x512xf32>) outs(%acc : tensor<1x512xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<1x512xf32>
    scf.yield %y : tensor<1x512xf32>
  }
  return %r : tensor<1x512xf32>
}
"""


@pytest.mark.parametrize("trips, scheduled", [(1, False), (7, False), (8, True), (100, True)])
def test_an_op_in_a_loop_counts_its_work_times_the_trips(trips: int, scheduled: bool) -> None:
    # a recurrent layer's step ([B, H] elementwise) runs T times: 512 elements x 8 trips reach
    # the 4096-element threshold, as one op of 4096 elements does
    from mlir import ir

    from dlc.dialects import make_context
    from dlc.passes.linalg.schedule import candidates

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(LOOP.replace("TRIPS", str(trips)))
        found = candidates(module.operation, 32 ** 3, 4096)
    assert bool(found) == scheduled
