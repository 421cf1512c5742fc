"""TensorScatter (the KV-cache update) against onnx.reference: modes, axes, write indices."""

from __future__ import annotations

import numpy as np
import pytest

import dlc
from tests.conftest import node_model, random_array, run_both


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [-2, 2])
def test_tensor_scatter(mode, axis):
    past = random_array([2, 3, 6, 4], np.float32, seed=1)
    update = random_array([2, 3, 3, 4], np.float32, seed=2)
    # linear mode writes inside the cache; circular wraps around its end
    starts = np.array([1, 3] if mode == "linear" else [4, 5], dtype=np.int64)
    run_both(node_model("TensorScatter", [past, update, starts], opset=24, mode=mode,
                        axis=axis), [past, update, starts])


def test_tensor_scatter_without_write_indices_writes_at_zero():
    past = random_array([2, 5, 3], np.float32, seed=3)
    update = random_array([2, 2, 3], np.float32, seed=4)
    run_both(node_model("TensorScatter", [past, update], opset=24, axis=1), [past, update])


def test_tensor_scatter_update_longer_than_the_cache_is_a_clear_error():
    past, update = np.zeros([1, 2, 3], np.float32), np.zeros([1, 4, 3], np.float32)
    with pytest.raises(dlc.DlcError, match="does not fit past_cache"):
        dlc.compile(node_model("TensorScatter", [past, update], opset=24, axis=1))
