"""The transform script runs every schedule's lines up to its fuse_into_containing_op first,
then the rest of each (codegen/script.fusion_prefix, issue 20): fuse_into_containing_op's
cost grew with the module each earlier schedule had vectorized. The scheduled IR is the
same as in schedule order."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

import dlc
from dlc.passes.codegen import script
from dlc.passes.codegen.script import Lines, fusion_prefix, transform_script
from tests.conftest import make_model

FUSE = "%t, %f = transform.structured.fuse_into_containing_op %i into %f0 : (a) -> (b)"


def test_prefix_ends_at_the_last_top_level_fusion() -> None:
    ops = ["%a = tile", FUSE, "%b = tile", FUSE, "vectorize %b"]
    assert fusion_prefix(ops) == (ops[:4], ops[4:])
    assert fusion_prefix(["%a = tile", "vectorize %a"]) == ([], ["%a = tile", "vectorize %a"])
    nested = ["transform.foreach %l : any {", "^bb0(%x: any):", FUSE, "}", "vectorize %x"]
    assert fusion_prefix(nested) == ([], nested)  # (never a cut inside a block)


def test_prefixes_run_before_the_rests() -> None:
    first, second = Lines(["%p0 = tile", FUSE, "rest0"]), Lines(["%p1 = tile", FUSE, "rest1"])
    text = transform_script([first, second], "tag", lower=False)
    order = [text.index(s) for s in ("%op0 =", "%p0", "%op1 =", "%p1", "rest0", "rest1")]
    assert order == sorted(order)
    alone = transform_script([first, second], "tag", only=1, lower=False)
    assert "%p0" not in alone and alone.index("%p1") < alone.index("rest1")


def two_matmuls() -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    weights = {f"w{i}": rng.standard_normal((256, 256)).astype(np.float32) for i in range(2)}
    weights["b"] = rng.standard_normal(256).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w1"], ["y"])]
    return make_model(nodes, {"x": (np.float32, [256, 256])}, ["y"], initializers=weights)


def test_scheduled_ir_is_the_same_as_in_schedule_order(monkeypatch) -> None:
    monkeypatch.setenv("DLC_CACHE", "0")
    two_phase = dlc.lower(two_matmuls(), "linalg", num_threads=1).ir("linalg")
    assert "scf.forall" in two_phase
    monkeypatch.setattr(script, "fusion_prefix", lambda ops: ([], ops))
    assert dlc.lower(two_matmuls(), "linalg", num_threads=1).ir("linalg") == two_phase
