"""What `dlc compile --stats` and `--emit=dot` report (`dlc.passes.graph.report`, the CLI)."""

from __future__ import annotations

import re

import onnx
from mlir import ir

from dlc.dialects import make_context
from dlc.passes.graph.report import memory_plan, op_counts, to_dot
from dlc.tools.dlc_cli import main
from tests.conftest import make_mlp

CHAIN = """
func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %c = "dlc.constant"() {value = dense<1.0> : tensor<256xf32>} : () -> tensor<256xf32>
  %0 = "dlc.relu"(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %1 = "dlc.add"(%0, %c) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %2 = "dlc.relu"(%1) : (tensor<256xf32>) -> tensor<256xf32>
  %3 = "dlc.relu"(%2) : (tensor<256xf32>) -> tensor<256xf32>
  return %3 : tensor<256xf32>
}
"""


def test_memory_plan_reuses_dead_buffers() -> None:
    # %0, %1, %2 are intermediates (1 KiB each; %3 is the output); at most two live at once
    context = make_context()
    with context:
        module = ir.Module.parse(CHAIN)
        plan = memory_plan(module.operation)
        assert op_counts(module.operation) == {"dlc.constant": 1, "dlc.relu": 3, "dlc.add": 1}
    assert plan.total_bytes == 3 * 1024
    assert plan.peak_bytes == 2 * 1024
    assert plan.arena_bytes == 2 * 1024
    assert plan.offsets[0] == plan.offsets[2] != plan.offsets[1]  # %2 reuses %0's buffer


def test_dot_labels_ops_with_shapes() -> None:
    context = make_context()
    with context:
        dot = to_dot(ir.Module.parse(CHAIN).operation)
    assert dot.startswith("digraph dlc {")
    assert 'label="dlc.add\\n256\\nconst 256"' in dot  # the constant in its user's label ...
    assert "dlc.constant" not in dot and "f0_op0" not in dot  # ... not a node with long edges
    assert re.search(r"f0_op1 -> f0_op2;", dot)  # relu -> add


def test_dot_names_and_groups_ops_by_onnx_module_path() -> None:
    named = CHAIN.replace('(tensor<256xf32>) -> tensor<256xf32>\n  %1',
                          '(tensor<256xf32>) -> tensor<256xf32> loc("/layer1/layer1.0/relu/Relu")'
                          '\n  %1')
    named = named.replace('(tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>\n',
                          '(tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> '
                          'loc("/layer1/layer1.0/add/Add")\n')
    context = make_context()
    with context:
        dot = to_dot(ir.Module.parse(named).operation)
    assert 'f0_op1 [label="/layer1/layer1.0/relu/Relu\\ndlc.relu\\n256"];' in dot
    assert 'subgraph cluster_f0_1 { label="/layer1/layer1.0"; style=dashed; f0_op1; f0_op2; }' \
        in dot


def test_cli_stats_and_dot(tmp_path, capsys) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(make_mlp(batch=2, sizes=(16, 8, 4), seed=0), path)
    assert main(["compile", str(path), "--emit=dlc", "-O3", "--stats"]) == 0
    out = capsys.readouterr().out
    assert '"dlc.gemm"' in out and '"dlc.matmul"' not in out
    before, after = map(int, re.search(r"^// total\s+(\d+)\s+(\d+)$", out, re.MULTILINE).groups())
    assert after < before
    assert re.search(r"^// peak live intermediate bytes: .*\((\d+) bytes\)$", out, re.MULTILINE)
    dot = tmp_path / "mlp.dot"
    assert main(["compile", str(path), "--emit=dot", "-o", str(dot)]) == 0
    assert dot.read_text().startswith("digraph dlc {") and "dlc.gemm" in dot.read_text()
