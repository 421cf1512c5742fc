"""dlc-eliminate-empty-tensors (issue 20): upstream eliminate-empty-tensors, skipped when no
subset insertion's source may alias a tensor.empty. Its output is upstream's on every case
(those it skips and those it runs), and it skips the transformers' linalg IR."""

from __future__ import annotations

import pytest
from mlir import ir
from mlir.passmanager import PassManager

from dlc.dialects import make_context
from dlc.passes.buffer import eliminate_empty_tensors as eet
from dlc.passes.pipeline import build_pass_manager

MAP = "affine_map<(d0, d1) -> (d0, d1)>"
NEG = (f"{{indexing_maps = [{MAP}, {MAP}], iterator_types = [\"parallel\", \"parallel\"]}}")

CASES = {
    # (name: (IR, whether upstream may change it))
    "fill_inserted": ("""
func.func @f(%dest: tensor<4x16xf32>, %x: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = tensor.insert_slice %f into %dest[0, 8] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", True),
    "through_a_loop": ("""
func.func @f(%dest: tensor<4x16xf32>, %x: f32) -> tensor<4x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %l = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %e) -> tensor<4x8xf32> {
    %f = linalg.fill ins(%x : f32) outs(%t : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %f : tensor<4x8xf32>
  }
  %r = tensor.insert_slice %l into %dest[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", True),
    "through_a_branch": ("""
func.func @f(%dest: tensor<4x16xf32>, %x: f32, %c: i1, %b: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %r0 = scf.if %c -> tensor<4x8xf32> {
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%x : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %f : tensor<4x8xf32>
  } else {
    scf.yield %b : tensor<4x8xf32>
  }
  %r = tensor.insert_slice %r0 into %dest[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", True),
    "in_a_forall": (f"""
func.func @f(%a: tensor<8x8xf32>, %out: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> tensor<8x8xf32> {{
    %k = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
    %s = tensor.extract_slice %a[%k, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
    %e = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {NEG} ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {{
    ^bb0(%in: f32, %init: f32):
      %n = arith.negf %in : f32
      linalg.yield %n : f32
    }} -> tensor<4x8xf32>
    scf.forall.in_parallel {{
      tensor.parallel_insert_slice %g into %o[%k, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
    }}
  }}
  return %r : tensor<8x8xf32>
}}""", True),
    "empty_is_an_input_only": (f"""
func.func @f(%dest: tensor<4x16xf32>, %b: tensor<4x8xf32>) -> tensor<4x16xf32> {{
  %e = tensor.empty() : tensor<4x16xf32>
  %s = tensor.extract_slice %e[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %g = linalg.generic {NEG} ins(%s : tensor<4x8xf32>) outs(%b : tensor<4x8xf32>) {{
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }} -> tensor<4x8xf32>
  %r = tensor.insert_slice %g into %dest[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}}""", False),
    # the destination is computed after the empty's first use: upstream moves it before
    "destination_after_the_use": ("""
func.func @f(%x: f32, %y: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %d = linalg.fill ins(%y : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = tensor.insert_slice %f into %d[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", True),
    # ... computed after the empty but before its first use
    "destination_before_the_use": ("""
func.func @f(%x: f32, %y: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %d = linalg.fill ins(%y : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = tensor.insert_slice %f into %d[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", True),
    # ... computed from the empty's user (MobileBERT's embedding concat: a slice of the
    # gathered embeddings is inserted into the destination first): nothing to move it before
    "destination_from_the_user": ("""
func.func @f(%x: f32, %y: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %s = tensor.extract_slice %f[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %d = tensor.insert_slice %s into %e2[0, 12] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<4x16xf32>
  %r = tensor.insert_slice %f into %d[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", False),
    # an empty of another shape on the chain (through a reshape): upstream matches types
    "other_type": ("""
func.func @f(%dest: tensor<4x16xf32>, %x: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<32xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %x2 = tensor.expand_shape %f [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %r = tensor.insert_slice %x2 into %dest[0, 8] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}""", False),
    # reshapes on both sides of the fill: the types along the chain change
    "through_reshapes": ("""
func.func @f(%dest: tensor<64xf32>, %x: f32) -> tensor<64xf32> {
  %e = tensor.empty() : tensor<32xf32>
  %x2 = tensor.expand_shape %e [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %f = linalg.fill ins(%x : f32) outs(%x2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = tensor.collapse_shape %f [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %r = tensor.insert_slice %c into %dest[8] [32] [1] : tensor<32xf32> into tensor<64xf32>
  return %r : tensor<64xf32>
}""", False),
    "no_insertion": (f"""
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {{
  %e = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {NEG} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {{
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }} -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}}""", False),
}


def _run(text: str, pipeline: str) -> str:
    with make_context():
        module = ir.Module.parse(text)
        build_pass_manager(f"builtin.module({pipeline})").run(module.operation)
        return str(module)


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_is_upstreams(name: str) -> None:
    text, changes = CASES[name]
    with make_context():
        assert eet.has_candidates(ir.Module.parse(text).operation) == changes
    ours = _run(text, "dlc-eliminate-empty-tensors")
    assert ours == _run(text, "eliminate-empty-tensors")
    if changes:  # (these cases are ones upstream does change)
        with make_context():
            assert ours != str(ir.Module.parse(text))


def test_upstream_is_not_run_without_candidates(monkeypatch) -> None:
    calls = []

    class Counting:
        @staticmethod
        def parse(text: str):
            calls.append(text)
            return PassManager.parse(text)

    monkeypatch.setattr(eet, "PassManager", Counting)
    _run(CASES["no_insertion"][0], "dlc-eliminate-empty-tensors")
    _run(CASES["empty_is_an_input_only"][0], "dlc-eliminate-empty-tensors")
    assert calls == []
    _run(CASES["fill_inserted"][0], "dlc-eliminate-empty-tensors")
    assert len(calls) == 1
