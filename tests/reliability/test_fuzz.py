"""`dlc fuzz`: its graphs are valid and reproducible, a short seeded run finds nothing, and the
driver survives workers that die or hang; `--index-values` cases reach every gather and scatter
with in-range and out-of-range runtime indices and agree with onnxruntime; `--mutate` mutants are
refused by name. (The long runs are in the README's reliability section.)
"""

from __future__ import annotations

import collections
import re

import numpy as np
import onnx
import pytest

from dlc.errors import IndexOutOfRangeError
from dlc.frontends.onnx_node import FrontendError
from dlc.testing import fuzz, fuzz_index, fuzz_mutate

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
                        "detail": "no result after 0.001 s (in dlc)"}
        worker.timeout = 60
        assert worker.run({"seed": SEED, "index": 0, "max_depth": 1})["status"] == "pass"
    finally:
        worker.stop()


def test_a_death_in_onnxruntime_is_no_crash_of_dlc():
    """onnxruntime 1.x segfaults on a Min whose second input is "" (a mutant): no oracle."""
    worker = fuzz.Worker(timeout=60, module="dlc.tests.reliability.fuzz_dying_worker")
    try:
        outcome = worker.run({"seed": SEED, "index": 0, "max_depth": 1})
    finally:
        worker.stop()
    assert outcome == {"status": "skip", "detail": "onnxruntime killed the worker (signal 11)"}


@pytest.mark.parametrize("argv, message", [
    (["--max-depth", "0"], "--max-depth must be >= 1"),
    (["-n", "-1"], "--count >= 0"),
    (["--index-values", "1.5"], "fraction in \\[0, 1\\]"),
    (["--mutate", "-0.1"], "fraction in \\[0, 1\\]"),
])
def test_bad_arguments(argv, message):
    with pytest.raises(SystemExit, match=message):
        fuzz.main(argv)


# ----------------------------------------------------------------------------- --index-values


def _bounds(node: onnx.NodeProto, shapes: dict) -> list[int]:
    """The size that bounds each column of the node's indices (one size: every value)."""
    data = shapes[node.input[0]]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type in ("GatherND", "ScatterND"):
        batch_dims = attrs.get("batch_dims", 0)
        return list(data[batch_dims:batch_dims + shapes[node.input[1]][-1]])
    return [data[attrs.get("axis", 0)]]


def test_index_value_cases_are_valid_and_reach_every_op():
    seen: collections.Counter = collections.Counter()
    for index in range(60):
        model, feeds, spoilt = fuzz_index.generate(SEED, index)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, check_type=True)
        shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in
                  [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]}
        assert len(feeds) == fuzz_index.FEEDS and not spoilt[0]
        for node in model.graph.node:
            if node.op_type not in fuzz_index.INDEX_OPS:
                continue
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            seen[node.op_type, attrs.get("reduction", attrs.get("batch_dims"))] += 1
            bounds = np.array(_bounds(node, shapes))
            for feed, bad in zip(feeds, spoilt):
                values = feed[node.input[1]].astype(np.int64)
                if node.op_type in ("GatherND", "ScatterND"):  # rows of coordinates
                    values = values.reshape(-1, len(bounds))
                inside = (values >= -bounds) & (values < bounds)
                seen["negative in range"] += int(np.any(inside & (values < 0)))
                seen["out of range"] += int(not inside.all())
                assert bad or inside.all(), f"case {index}: {node.name} {values}"
                if attrs.get("reduction") == b"none" and node.op_type == "ScatterND":
                    rows = np.where(values < 0, values + bounds, values)  # distinct targets
                    assert len({tuple(r) for r in rows}) == len(rows) or not inside.all()
    for key in [("Gather", None), ("GatherElements", None), ("GatherND", 0), ("GatherND", 1),
                ("ScatterElements", b"none"), ("ScatterElements", b"add"),
                ("ScatterND", b"none"), ("ScatterND", b"add"), "negative in range",
                "out of range"]:
        assert seen[key] > 0, f"60 cases and no {key}: {seen}"


def test_the_classifier_flags_answers_where_onnxruntime_refused():
    refusal = RuntimeError("INVALID_ARGUMENT : Status Message: indices element out of data "
                           "bounds, idx=4 must be within the inclusive range [-4,3]")
    answer = [np.array([1.0, 2.0], np.float32)]
    names, outputs = {"Gather", "Gather_v2"}, ["y"]
    bounds_error = IndexOutOfRangeError("dlc.gather of node 'Gather_v2': index 4 is out of range")

    def status(expected, got):
        return fuzz_index.classify(expected, got, names, outputs)[:2]

    assert status(refusal, bounds_error) == ("refused", "")
    assert status(refusal, FrontendError("node 'Gather_v2' (Gather): index 4")) == ("refused", "")
    # dlc returned numbers (the old clamping) where onnxruntime refused: a wrong answer
    assert status(refusal, answer) == ("mismatch", "answered")
    assert status(refusal, FrontendError("something failed")) == ("mismatch", "unnamed")
    assert status(answer, bounds_error) == ("mismatch", "refused")
    assert status(answer, [answer[0] + 1]) == ("mismatch", "values")
    assert status(answer, [answer[0].copy()]) == ("pass", "")
    assert status(refusal, IndexError("list index out of range")) == ("internal", "IndexError")


def test_a_short_index_value_run_finds_nothing(tmp_path, capsys):
    """12 cases of 3 feeds at -O0 and -O3, in a worker process, through the CLI's code."""
    code = fuzz.main(["-n", "12", "--seed", str(SEED), "-j", "1", "--index-values",
                      "--max-depth", "4", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    compared, refused = map(int, re.search(r"(\d+) calls compared with onnxruntime, (\d+) "
                                           r"refused by both", out).groups())
    assert compared >= 30 and refused >= 4, out  # in-range and out-of-range feeds both ran
    assert "--index-values 1: " in out and " 0 mismatch, 0 error, 0 internal" in out


def test_feeds_round_trip(tmp_path):
    feeds = [{"x": np.arange(3), "i": np.array([1])}, {"x": np.arange(3), "i": np.array([9])}]
    for group in (feeds, feeds[:1]):
        fuzz.save_feeds(tmp_path / "f.npz", group)
        again = fuzz.load_feeds(tmp_path / "f.npz")
        assert [sorted(f) for f in again] == [sorted(f) for f in group]
        assert all(np.array_equal(a[k], b[k]) for a, b in zip(again, group) for k in a)


# ----------------------------------------------------------------------------- --mutate


def test_a_short_mutant_run_is_refused_by_name(tmp_path, capsys):
    """40 invalid mutants: each is refused with a DlcError that names what is wrong (or, where
    onnxruntime runs it, answered like onnxruntime); no crash, no internal exception."""
    code = fuzz.main(["-n", "40", "--seed", str(SEED), "-j", "1", "--mutate",
                      "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mutants: 40 cases" in out and re.search(r"\d+ rejected", out), out
    categories = re.findall(r"^    \w[\w ]*: ", out, re.MULTILINE)
    assert len(categories) >= 12, out  # many kinds of mutation ran


def test_mutant_verdicts():
    names = ["Gather_v2", "in1", "axis"]
    rejected = fuzz_mutate.judge_error(FrontendError("node 'Gather_v2': axis 9"), "compile",
                                       names)
    assert rejected["status"] == "pass" and rejected["verdict"] == "rejected"
    assert fuzz_mutate.judge_error(FrontendError("invalid model"), "compile",
                                   names)["status"] == "vague"
    assert fuzz_mutate.judge_error(KeyError("in1"), "compile", names)["status"] == "internal"
    assert fuzz_mutate.names_something("opset 10000 is not supported", [])
    assert not fuzz_mutate.names_something("input v12 missing", ["v1"])  # (a word, not a prefix)


def test_every_mutation_applies_and_changes_the_model():
    base = next(m for m, _ in (fuzz.generate(SEED, i, fuzz_mutate.MAX_DEPTH) for i in range(50))
                if len(m.graph.node) >= 3 and m.graph.initializer and
                any(n.attribute for n in m.graph.node))
    for category, mutation in fuzz_mutate.MUTATIONS.items():
        applied = 0
        for attempt in range(30):
            mutant = onnx.ModelProto()
            mutant.CopyFrom(base)
            if mutation(mutant, np.random.default_rng(attempt)) is not None:
                applied += 1
                assert mutant.SerializeToString() != base.SerializeToString(), category
        assert applied, f"{category} never applies to a {len(base.graph.node)}-node graph"


def test_a_saved_mutant_replays(tmp_path, capsys):
    args = fuzz.make_parser().parse_args(["--out", str(tmp_path)])
    outcome = {"status": "vague", "detail": "(a made-up failure)", "signature": "vague"}
    path = fuzz.save_failure(SEED, 5, outcome, args, worker=None, mode="mutate")
    assert path.name == f"{SEED}-5-mutate-vague.onnx"
    assert "mutation: " in path.with_suffix(".txt").read_text()
    assert fuzz.replay(str(path)) == 0  # (the mutant itself is refused by name: it passes)
    assert capsys.readouterr().out.startswith("pass: ")


@pytest.mark.parametrize("index_values, mutate, modes", [
    (0, 0, {"graph"}), (1, 0, {"index"}), (0, 1, {"mutate"}), (1, 1, {"index", "mutate"}),
    (0.3, 0.3, {"graph", "index", "mutate"}),
])
def test_case_modes(index_values, mutate, modes):
    assert {fuzz.case_mode(SEED, i, index_values, mutate) for i in range(100)} == modes
