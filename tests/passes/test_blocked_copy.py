"""`dlc.passes.blocked_copy`: its copies are numpy's, byte for byte, whatever the view.

The compiled models' weights go through it (filters to HWCF, transposed and packed matmul
weights), so a wrong element would be a wrong answer, and a different byte a different object
(determinism): each case compares the bytes with `np.asarray(view, order="C")`'s.
"""

from __future__ import annotations

import numpy as np
import pytest

from dlc.passes import blocked_copy
from dlc.passes.blocked_copy import contiguous, transposed

DTYPES = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_,
          np.dtype(">f4")]


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def _assert_same(copy: np.ndarray, view: np.ndarray) -> None:
    expected = np.asarray(view, order="C")
    assert copy.flags.c_contiguous
    assert copy.dtype == expected.dtype and copy.shape == expected.shape
    assert copy.tobytes() == expected.tobytes()


@pytest.fixture
def always_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small views take the blocked path too (it is what the cases test)."""
    monkeypatch.setattr(blocked_copy, "SMALL_BYTES", 0)
    monkeypatch.setattr(blocked_copy, "ROW_BYTES", 0)
    monkeypatch.setattr(blocked_copy, "FEW_ROWS", 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_permutations_are_numpys(dtype: np.dtype, always_blocked: None) -> None:
    rng = np.random.default_rng(20)
    for _ in range(40):
        rank = int(rng.integers(1, 6))
        # sizes around the block sizes (4, 8, 16): non-multiples, 1-sized axes, empty ones
        shape = tuple(int(n) for n in rng.choice([0, 1, 1, 2, 3, 5, 7, 8, 9, 16, 17, 33],
                                                 rank))
        array = _random(rng, shape, dtype)
        perm = [int(i) for i in rng.permutation(rank)]
        _assert_same(transposed(array, perm), np.transpose(array, perm))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8], ids=str)
def test_strided_views_are_numpys(dtype: np.dtype, always_blocked: None) -> None:
    # slices, steps and flips of a transposed array: the strides need not be a permutation
    array = _random(np.random.default_rng(1), (13, 6, 19), dtype)
    views = [array.transpose(2, 0, 1)[::2, 1:, ::-3], array[::-1].T, array[:, :, 3:4],
             array.transpose(1, 2, 0)[..., 5:11], array[::2, ::3, ::4]]
    for view in views:
        _assert_same(contiguous(view), view)


@pytest.mark.parametrize("shape, perm, dtype", [((2048, 512, 1, 1), (2, 3, 1, 0), np.float32),
                                                ((1000, 2048), (1, 0), np.float32),
                                                ((67, 35, 3, 3), (2, 3, 1, 0), np.float32),
                                                ((70, 2048, 3), (1, 2, 0), np.float32),
                                                ((2048, 512, 1, 1), (2, 3, 1, 0), np.float16),
                                                ((1000, 2048), (1, 0), np.int8)], ids=str)
def test_weights_take_the_blocked_copy(shape: tuple[int, ...], perm: tuple[int, ...],
                                       dtype: np.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    # the real thresholds: a ResNet-50 filter to HWCF, its classifier transposed, odd sizes
    calls: list[tuple[int, ...]] = []
    copy = blocked_copy._blocked_copy

    def spy(view: np.ndarray) -> np.ndarray:
        calls.append(view.shape)
        return copy(view)

    monkeypatch.setattr(blocked_copy, "_blocked_copy", spy)
    array = _random(np.random.default_rng(2), shape, dtype)
    _assert_same(transposed(array, perm), np.transpose(array, perm))
    assert calls, "a large transposed weight should take the blocked path"


def test_contiguous_arrays_are_not_copied() -> None:
    array = np.arange(1 << 16, dtype=np.float32).reshape(256, 256)
    assert contiguous(array) is array
    scalar = np.float32(2.5).reshape(())  # (0-d stays 0-d: a tensor<f32> constant)
    assert contiguous(scalar).shape == ()
    assert np.shares_memory(transposed(array, (0, 1)), array)


def test_runs_are_left_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    # a packing into panels keeps the source's innermost axis: numpy copies its runs
    monkeypatch.setattr(blocked_copy, "_blocked_copy", None)  # (would raise if called)
    array = np.zeros((1, 1, 512, 2048), np.float32)
    view = array.reshape(512, 128, 16).transpose(1, 0, 2)
    _assert_same(contiguous(view), view)
