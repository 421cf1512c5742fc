"""Auto-tuning of the conv family (`conv_params.py`, `tuning/families.py`'s CONV): the record
and its space, the heuristic's point giving the heuristic's IR, every one-knob neighbour of
the heuristic's point compiling to right results, records used and missed, and the convs of a
small CNN extracted as one-op tasks (their constant filters cloned, so that they still pack)."""

from __future__ import annotations

import json
import random

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.dialects import make_context
from dlc.passes.codegen import conv_common, conv_params, packed_conv
from dlc.passes.codegen.conv_common import Conv
from dlc.passes.codegen.matmul import UNPACKED
from dlc.tuning import Database, TuningWarning, database, families
from dlc.tuning.extract import tasks
from dlc.tuning.tune import problem_of
from tests.conftest import make_model, run_both


@pytest.fixture(autouse=True)
def _direct_convs(monkeypatch):
    """The direct conv schedules are what these tests check: no Winograd (dlc-winograd)."""
    monkeypatch.setenv("DLC_WINOGRAD", "0")


# 288-term sums (3 x 3 x 32) of products of unit normals and scaled weights
CONV_TOLERANCES = {np.dtype(np.float32): (1e-4, 1e-4)}


def cnn() -> onnx.ModelProto:
    """A packed 3x3 conv (32 -> 64, bias and ReLU fused), an unpacked 1x1 (64 -> 24: no
    block divides 24) and an unpacked strided 3x3 (24 -> 48, stride 2, bias)."""
    rng = np.random.default_rng(0)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]),
             helper.make_node("Conv", ["c2", "w3", "b3"], ["y"], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    return make_model(nodes, {"x": (np.float32, [1, 32, 28, 28])}, ["y"],
                      {"w1": weight(64, 32, 3, 3), "b1": weight(64), "w2": weight(24, 64, 1, 1),
                       "w3": weight(48, 24, 3, 3), "b3": weight(48)})


def inputs_of(compiled: dlc.CompiledModel) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s.shape).astype(s.dtype) for s in compiled.signature.inputs]


def put(path, records: dict[str, dict]) -> None:
    for key, params in records.items():
        Database(path).put(database.Record(key, database.cpu_id(), database.version(), "conv",
                                           "op", json.dumps(params), 1e-3, 2e-3, 1))


# ----------------------------------------------------------------------------- the space


def test_record_round_trips_and_its_space_holds_the_default():
    default = conv_common.default_params()
    assert conv_params.ConvParams.from_dict(json.loads(json.dumps(default.as_dict()))) == default
    assert conv_params.from_point(conv_params.to_point(default)) == default
    for problem in (Conv(1, 28, 28, 64, 32, 3, 3, True, True, packed=True),
                    Conv(1, 14, 14, 48, 24, 3, 3), Conv(1, 7, 7, 1000, 512, 1, 1, init=True)):
        space = families.CONV.space(problem)
        conv_params.check(default, space)
        assert all(len(values) == len(set(values)) for values in space.values())
        assert (len(space["min_tiles"]) > 1) == problem.packed
        assert space["pack"] == ([False, True] if problem.packed else [True])
        assert (len(space["register_fusion"]) > 1) == (problem.init or problem.epilogue)


@pytest.mark.parametrize("change", [
    {"outer_bytes": None}, {"outer_bytes": 1.5}, {"ow_max": 0}, {"min_tiles": True},
    {"register_fusion": 1}, {"order": "diagonal"}, {"pack": 0}, {"extra": 1},
])
def test_malformed_records_are_rejected(change):
    good = conv_common.default_params().as_dict()
    older = {k: v for k, v in good.items() if k != "pack"}  # (a record from before `pack`)
    assert conv_params.ConvParams.from_dict(older).pack is True
    data = {k: v for k, v in {**good, **change}.items() if v is not None}
    with pytest.raises(ValueError):
        conv_params.ConvParams.from_dict(data)
    with pytest.raises(ValueError):
        conv_params.ConvParams.from_dict([1, 2])


def test_default_record_gives_the_heuristic_schedule():
    for problem in (Conv(1, 28, 28, 64, 32, 3, 3, True, True, packed=True),
                    Conv(1, 111, 111, 64, 3, 3, 3, True, True, greedy=True),
                    Conv(1, 13, 13, 1024, 512, 1, 1, init=True, greedy=True, packed=True)):
        heuristic = "\n".join(families.CONV.module.lines("%op", problem, "s").ops)
        with_record = families.CONV.module.lines(
            "%op", families.CONV.apply(object(), problem, conv_common.default_params()), "s")
        assert "\n".join(with_record.ops) == heuristic


# ----------------------------------------------------------------------------- extraction


def test_the_convs_of_a_small_cnn_are_one_op_tasks():
    found = tasks(cnn())
    assert [t.family for t in found] == ["conv"] * 3
    assert found[0].volume == 28 * 28 * 64 * 32 * 9 and found[0].weight > found[1].weight
    problems = [problem_of(t) for t in found]
    assert [p.packed for p in problems] == [True, False, False]
    for task in found:
        with make_context():
            text = str(ir.Module.parse(task.module))
        # the filter is cloned as a constant (it packs as in the model), the input an argument
        assert text.count("func.func @main(%arg0") == 1 and "%arg1" not in text
        assert "arith.constant dense" in text or "dense_resource" in text


# ----------------------------------------------------------------------------- records


def test_default_records_give_the_heuristics_ir(db, monkeypatch):
    model = cnn()
    monkeypatch.setenv("DLC_TUNING_DB", "off")
    plain = dlc.compile(model)
    monkeypatch.setenv("DLC_TUNING_DB", str(db))
    put(db, {t.key: conv_common.default_params().as_dict() for t in tasks(model)})
    tuned = dlc.compile(model)
    assert [c.source for c in tuned.tuning.choices] == ["record"] * 3
    for stage in ("linalg", "llvm"):
        assert tuned.ir(stage) == plain.ir(stage), stage


def _neighbours(problem: Conv) -> list[dict]:
    """The heuristic's point with one knob changed, one per distinct schedule."""
    tunable = families.CONV
    default = tunable.to_point(tunable.default(problem))
    seen = {tunable.signature(problem, tunable.from_point(default))}
    points = []
    for knob, values in tunable.space(problem).items():
        for value in values:
            point = dict(default, **{knob: value})
            signature = tunable.signature(problem, tunable.from_point(point))
            if signature not in seen:
                seen.add(signature)
                points.append(tunable.from_point(point).as_dict())
    return points


def test_every_one_knob_neighbour_compiles_and_is_right(db):
    """Each conv's distinct one-knob changes of the heuristic's point (a record each, all
    three convs changed at once), compiled and compared with the reference evaluator."""
    model = cnn()
    found = tasks(model)
    neighbours = {t.key: _neighbours(problem_of(t)) for t in found}
    assert all(len(points) >= 3 for points in neighbours.values()), neighbours
    inputs = None
    for i in range(max(len(points) for points in neighbours.values())):
        db.unlink(missing_ok=True)
        put(db, {key: points[i] for key, points in neighbours.items() if i < len(points)})
        compiled = dlc.compile(model)
        assert compiled.tuning.used and not compiled.tuning.missed
        inputs = inputs or inputs_of(compiled)
        run_both(model, inputs, tolerances=CONV_TOLERANCES)


def test_random_points_compile_and_are_right(db):
    """Points with every knob drawn at random (the knobs' interplay: a wide OW tile with
    register fusion off, the packed forall's limits with the rows outermost, ...)."""
    model = cnn()
    found = tasks(model)
    spaces = {t.key: families.CONV.space(problem_of(t)) for t in found}
    rng = random.Random(0)
    inputs = None
    for _ in range(4):
        db.unlink(missing_ok=True)
        put(db, {key: families.CONV.from_point(
            {knob: rng.choice(values) for knob, values in space.items()}).as_dict()
            for key, space in spaces.items()})
        compiled = dlc.compile(model)
        assert len(compiled.tuning.used) == 3
        inputs = inputs or inputs_of(compiled)
        run_both(model, inputs, tolerances=CONV_TOLERANCES)


def test_a_record_changes_the_schedule_and_is_reported(db):
    model = cnn()
    before = dlc.compile(model)
    first = tasks(model)[0]
    put(db, {first.key: dict(conv_common.default_params().as_dict(), ow_max=4,
                             register_fusion=False, filter_bytes=32 * 1024)})
    after = dlc.compile(model)
    assert [c.source for c in after.tuning.choices].count("record") == 1
    (used,) = after.tuning.used
    assert used.key == first.key and '"ow_max": 4' in used.detail
    assert after.ir("linalg") != before.ir("linalg")
    run_both(model, inputs_of(after), tolerances=CONV_TOLERANCES)


def test_a_record_can_unpack_a_packed_conv(db):
    model = cnn()
    block = packed_conv.block_of(64)
    packed_filter = f"tensor<{64 // block}x3x3x32x{block}xf32>"  # (the first conv's, packed)
    before = dlc.compile(model)
    assert packed_filter in before.ir("linalg")
    first = tasks(model)[0]
    put(db, {first.key: dict(conv_common.default_params().as_dict(), pack=False)})
    run_both(model, inputs_of(before), tolerances=CONV_TOLERANCES)
    after = dlc.compile(model)
    assert [c.source for c in after.tuning.choices] == ["record", "heuristic", "heuristic"]
    text = after.ir("linalg")
    assert packed_filter not in text and UNPACKED not in text


def test_a_record_outside_the_space_is_a_visible_miss(db):
    model = cnn()
    unpacked = tasks(model)[1]  # (min_tiles is the packed schedule's knob)
    put(db, {unpacked.key: dict(conv_common.default_params().as_dict(), min_tiles=2)})
    with pytest.warns(TuningWarning, match=r"min_tiles=2 is not in this op's space"):
        compiled = dlc.compile(model)
    assert [c.source for c in compiled.tuning.choices].count("miss") == 1
    assert "1 missed" in compiled.tuning.summary()
    run_both(model, inputs_of(compiled), tolerances=CONV_TOLERANCES)


def test_strides_and_dilations_are_in_the_key():
    """3x3 on 30 x 30 -> 14 x 14 by stride 2 or by dilation 8: the same types, two keys."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], strides=[2, 2]),
             helper.make_node("Conv", ["x", "w"], ["b"], dilations=[8, 8])]
    model = make_model(nodes, {"x": (np.float32, [1, 16, 30, 30])}, ["a", "b"], {"w": weight})
    found = tasks(model)
    assert [t.count for t in found] == [1, 1] and found[0].key != found[1].key
    assert found[0].op == found[1].op  # (their descriptions are the same)
