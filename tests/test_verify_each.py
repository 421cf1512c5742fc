"""The compiler's verification (issue 20): after each of dlc's own (Python) passes and once at
the end of a stage; after every upstream pass too only with $DLC_VERIFY_EACH=1."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from mlir import ir

from dlc.compiler import CompileError, run_stage, verify_each
from dlc.dialects import make_context
from dlc.passes import ModulePass, registry
from dlc.timings import Timer

TEXT = """
func.func @main(%x: i32) -> i32 {
  %c = arith.constant 1 : i32
  %y = arith.addi %x, %c : i32
  return %y : i32
}
"""


def break_signature(module: ir.Operation) -> None:
    """Make `main` claim an i64 result while it returns an i32: the IR no longer verifies."""
    main = module.regions[0].blocks[0].operations[0]
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([i32], [i64]))


@dataclass(frozen=True)
class BreakSignature(ModulePass):
    """test: leaves IR that does not verify"""

    name = "test-break-signature"

    def run(self, module: ir.Operation) -> None:
        break_signature(module)


@pytest.fixture
def breaking_pass(monkeypatch):
    monkeypatch.setitem(registry._PASSES, BreakSignature.name, BreakSignature)


def test_verify_each_reads_the_environment(monkeypatch):
    monkeypatch.delenv("DLC_VERIFY_EACH", raising=False)
    assert not verify_each()
    monkeypatch.setenv("DLC_VERIFY_EACH", "0")
    assert not verify_each()
    monkeypatch.setenv("DLC_VERIFY_EACH", "1")
    assert verify_each()


def test_invalid_ir_left_by_an_upstream_pass_is_caught_at_the_end_of_the_stage(monkeypatch):
    # (the upstream pass runs on IR that already does not verify, as if it had broken it)
    monkeypatch.delenv("DLC_VERIFY_EACH", raising=False)
    timer = Timer()
    with make_context():
        module = ir.Module.parse(TEXT)
        break_signature(module.operation)
        with timer.active(), pytest.raises(CompileError, match=(
                r"(?s)stage 'linalg' failed: its IR does not verify:.*type of return operand")):
            run_stage(module, "linalg", "cse,canonicalize", timer)
    # both passes ran unverified, then the stage's one verification failed
    names = [r.name for r in timer.result().records]
    assert names[-3:] == ["cse", "canonicalize", "(verify)"], names


def test_verify_each_verifies_after_an_upstream_pass(monkeypatch):
    monkeypatch.setenv("DLC_VERIFY_EACH", "1")
    timer = Timer()
    with make_context():
        module = ir.Module.parse(TEXT)
        break_signature(module.operation)
        with timer.active(), pytest.raises(CompileError) as caught:
            run_stage(module, "linalg", "cse,canonicalize", timer)
    assert "does not verify" not in str(caught.value)
    assert "type of return operand" in str(caught.value)
    # (canonicalize changes the IR and is verified after it: MLIR skips the verification
    # after a pass that preserved everything, cse here)
    names = [r.name for r in timer.result().records]
    assert names[-1] == "canonicalize" and "(verify)" not in names, names


def test_a_dlc_pass_is_verified_right_after_it_runs(monkeypatch, breaking_pass):
    monkeypatch.delenv("DLC_VERIFY_EACH", raising=False)
    timer = Timer()
    with make_context():
        module = ir.Module.parse(TEXT)
        with timer.active(), pytest.raises(CompileError) as caught:
            run_stage(module, "dlc", f"{BreakSignature.name},cse", timer)
    assert "type of return operand" in str(caught.value)
    assert "does not verify" not in str(caught.value)  # (reported by its own pass manager)
    names = [r.name for r in timer.result().records]
    assert "cse" not in names, names  # the next pass never saw the broken IR


def test_a_valid_stage_is_verified_once(monkeypatch):
    monkeypatch.delenv("DLC_VERIFY_EACH", raising=False)
    timer = Timer()
    with make_context():
        module = ir.Module.parse(TEXT)
        with timer.active():
            run_stage(module, "linalg", "cse,canonicalize", timer)
    names = [r.name for r in timer.result().records]
    assert names.count("(verify)") == 1 and names[-1] == "(verify)", names
