"""num_threads=2 on the transpose schedule (passes/codegen/transpose.py): a part of at least
THREAD_MIN elements has its rows in an scf.forall (OpenMP at 2 threads); exact against numpy
for block dimensions that 8 does and does not divide, and below the threshold (serial)."""

from __future__ import annotations

import numpy as np
import pytest

import dlc
from dlc.passes.codegen.reduction import THREAD_MIN
from tests.codegen.test_transpose import transpose_model

RNG = np.random.default_rng(23)

# NCHW -> NHWC of 112 rows (one forall), NHWC -> NCHW with 28 = 24 + 4 (the parts: a forall
# each where large enough), attention's [seq, heads, dim] -> [heads, dim, seq] with 197 rows,
# a small one (serial)
CASES = [([1, 32, 112, 112], [0, 2, 3, 1]), ([1, 28, 28, 96], [0, 3, 1, 2]),
         ([197, 12, 64], [1, 2, 0]), ([1, 16, 16, 16], [0, 2, 3, 1])]


@pytest.mark.parametrize("shape, perm", CASES, ids=str)
def test_transpose_on_two_threads(shape, perm) -> None:
    model = transpose_model(shape, perm)
    compiled = dlc.compile(model, num_threads=2)
    x = (RNG.standard_normal(shape) * 1000).astype(np.float32)
    for _ in range(3):  # (a race would show as differing results)
        np.testing.assert_array_equal(compiled(x)[0], np.transpose(x, perm))
    assert ("omp.parallel" in compiled.ir("llvm")) == (np.prod(shape) >= THREAD_MIN)
