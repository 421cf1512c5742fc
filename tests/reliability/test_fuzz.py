"""`dlc fuzz`: its graphs are valid and reproducible, a short seeded run finds nothing, and the
driver survives workers that die or hang. (The long run is in the README's reliability section.)
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest

from dlc.tools import fuzz

SEED = 7


def test_graphs_are_valid_and_reproducible():
    ops: collections.Counter = collections.Counter()
    for index in range(150):
        model, inputs = fuzz.generate(SEED, index)
        # the generator's own shapes and types are the ones ONNX infers
        onnx.shape_inference.infer_shapes(model, strict_mode=True, check_type=True)
        assert 1 <= len(model.graph.node)
        ops.update(n.op_type for n in model.graph.node)
        # periodic functions only of bounded values (seed 20261203, case 4654: cos(~800)
        # turned a float32 summation-order ulp into a 4e-4 "mismatch")
        producers = {out: n.op_type for n in model.graph.node for out in n.output}
        for n in model.graph.node:
            if n.op_type in fuzz.PERIODIC:
                assert producers.get(n.input[0]) == "Tanh", onnx.printer.to_text(model.graph)
    again, inputs_again = fuzz.generate(SEED, 149)
    assert again.SerializeToString() == model.SerializeToString()
    assert all(np.array_equal(inputs[k], inputs_again[k]) for k in inputs)
    for op in ("MatMul", "Gemm", "Conv", "MaxPool", "ReduceSum", "Softmax", "Transpose",
               "Reshape", "Concat", "Slice", "Cast", "Where", "Add"):
        assert ops[op] > 0, f"150 graphs and no {op}"


def test_a_short_seeded_run_finds_nothing(monkeypatch):
    """Each graph compiles twice (-O0, -O3) at ~0.3 s a compile: 20 graphs of depth <= 8."""
    monkeypatch.setenv("DLC_CACHE", "0")
    outcomes = collections.Counter()
    for index in range(20):
        model, inputs = fuzz.generate(SEED, index, max_depth=8)
        outcome = fuzz.run_case(model, inputs)
        assert outcome["status"] in ("pass", "skip"), f"case {index}: {outcome}"
        outcomes[outcome["status"]] += 1
    assert outcomes["pass"] >= 15


def test_compare():
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert fuzz.compare(a, a.copy()) is None
    assert "1 of 3 elements differ" in fuzz.compare(a, np.array([1.1, np.nan, np.inf], np.float32))
    assert "dtype float64" in fuzz.compare(a.astype(np.float64), a)
    assert "shape [3]" in fuzz.compare(a, a[None])
    assert "1 of 2 elements differ" in fuzz.compare(np.array([1, 2]), np.array([1, 3]))


def test_dropping_a_node_keeps_a_valid_model():
    model, inputs = next(fuzz.generate(SEED, i) for i in range(50)
                         if len(fuzz.generate(SEED, i)[0].graph.node) >= 4)
    before = len(model.graph.node)
    smaller, feeds = fuzz.without_node(model, 0, inputs, np.random.default_rng(0))
    onnx.checker.check_model(smaller, full_check=True)
    assert len(smaller.graph.node) < before
    assert set(feeds) == {v.name for v in smaller.graph.input}


def test_worker_crash_and_hang_are_caught(tmp_path):
    worker = fuzz.Worker(timeout=60)
    try:
        crashed = worker.run({"path": str(tmp_path / "missing.onnx"), "inputs": "none.npz"})
        assert crashed["status"] == "crash" and "worker died" in crashed["detail"]
        worker.timeout = 0.001  # any case takes longer than this
        hung = worker.run({"seed": SEED, "index": 0, "max_depth": 1})
        assert hung == {"status": "hang", "signature": "hang",
                        "detail": "no result after 0.001 s"}
        worker.timeout = 60
        assert worker.run({"seed": SEED, "index": 0, "max_depth": 1})["status"] == "pass"
    finally:
        worker.stop()


@pytest.mark.parametrize("argv, message", [
    (["--max-depth", "0"], "--max-depth must be >= 1"),
    (["-n", "-1"], "--count >= 0"),
])
def test_bad_arguments(argv, message):
    with pytest.raises(SystemExit, match=message):
        fuzz.main(argv)
