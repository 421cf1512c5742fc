"""dlc-schedule runs its transform script with MLIR's `--mlir-print-assume-verified` on
(schedule.printing_assumes_verified, issue 20): fuse_into_containing_op prints its producer and
containing op into a diagnostic before every fusion, and printing verified the whole enclosing
function first (44 % of BERT-base's script). The option changes printing only: the scheduled IR
is the same with it, and it is off again after the script."""

from __future__ import annotations

import threading

from mlir import ir

import dlc
from dlc.dialects import make_context
from dlc.passes.linalg import schedule
from tests.codegen.test_fusion_prefix import two_matmuls

VALID = """
func.func @f() -> memref<4xf32> {
  %0 = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  return %0 : memref<4xf32>
}
"""


def _printed_generic() -> bool:
    """Whether MLIR prints a function that does not verify (an alignment of 3) in the generic
    form, as it does when it verifies before printing."""
    with make_context():
        module = ir.Module.parse(VALID)
        function = module.body.operations[0]
        alloc = function.regions[0].blocks[0].operations[0]
        alloc.attributes["alignment"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 3)
        return str(function).lstrip().startswith('"func.func"')


def test_the_option_is_on_inside_and_off_after() -> None:
    if schedule._command_line() is None:  # (bindings without the exports: nothing to test)
        return
    assert _printed_generic()
    with schedule.printing_assumes_verified():
        assert not _printed_generic()
        with schedule.printing_assumes_verified():  # (nested: still on at the inner exit)
            pass
        assert not _printed_generic()
    assert _printed_generic()


def test_threads_keep_it_on_while_one_runs() -> None:
    if schedule._command_line() is None:
        return
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with schedule.printing_assumes_verified():
            entered.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    entered.wait(10)
    with schedule.printing_assumes_verified():
        pass
    assert not _printed_generic()  # (the other thread's script still runs)
    release.set()
    other.join()
    assert _printed_generic()


def test_scheduled_ir_is_the_same_without_it(monkeypatch) -> None:
    monkeypatch.setenv("DLC_CACHE", "0")
    fast = dlc.lower(two_matmuls(), "linalg", num_threads=1).ir("linalg")
    assert "scf.forall" in fast
    monkeypatch.setattr(schedule, "_command_line", lambda: None)
    assert dlc.lower(two_matmuls(), "linalg", num_threads=1).ir("linalg") == fast
