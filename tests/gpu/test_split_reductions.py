"""dlc-gpu-split-reductions: which reductions it splits, and that the split computes the same.

The numbers are checked without a GPU: the nvptx pipeline's linalg stage (the split included)
is followed by the CPU's later stages and run by the CPU JIT, against onnxruntime.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

from dlc.compiler import compile_imported
from dlc.dialects import make_context
from dlc.frontends.onnx_importer import import_model
from dlc.options import CompileOptions
from dlc.passes.gpu.pipelines import stage_pipelines as gpu_stage_pipelines
from dlc.passes.pipelines import stage_pipelines
from tests.conftest import make_model


@pytest.fixture(autouse=True)
def _direct_convs(monkeypatch):
    """The direct conv schedules are what these tests check: no Winograd (dlc-winograd)."""
    monkeypatch.setenv("DLC_WINOGRAD", "0")


ort = pytest.importorskip("onnxruntime")

# (nodes, input shape, the partial reductions' R expected: None when nothing is split)
CASES = {
    "layernorm_softmax": ([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1),
                           helper.make_node("Softmax", ["y"], ["z"], axis=-1)], [1, 128, 768], 32),
    "reduce_max": ([helper.make_node("ReduceMax", ["x"], ["z"], axes=[-1], keepdims=0)],
                   [3, 5, 256], 32),
    "reduce_sum_k1000": ([helper.make_node("ReduceSum", ["x", "axes"], ["z"], keepdims=1)],
                         [4, 1000], 8),
    "reduce_min_keepdims": ([helper.make_node("ReduceMin", ["x"], ["z"], axes=[2], keepdims=1)],
                            [2, 3, 144], 16),
    "short_reduction_kept": ([helper.make_node("ReduceSum", ["x", "axes"], ["z"], keepdims=0)],
                             [8, 64], None),
    "prime_length_kept": ([helper.make_node("ReduceSum", ["x", "axes"], ["z"], keepdims=0)],
                          [8, 251], None),
    "many_outputs_kept": ([helper.make_node("ReduceSum", ["x", "axes"], ["z"], keepdims=0)],
                          [40000, 128], None),
    # contractions: chunked splits (k = r * K1 + k1), R bringing chains near 192
    "matmul_k3072": ([helper.make_node("MatMul", ["x", "w"], ["z"])], [128, 3072], 16),
    "matmul_k768_bias": ([helper.make_node("Gemm", ["x", "w", "c"], ["z"])], [128, 768], 4),
    "batch_matmul_k1024": ([helper.make_node("MatMul", ["x", "wb"], ["z"])], [4, 64, 1024], 4),
    "matmul_k128_kept": ([helper.make_node("MatMul", ["x", "w"], ["z"])], [64, 128], None),
    "matmul_transposed_b": ([helper.make_node("Gemm", ["x", "wt", "c"], ["z"], transB=1)],
                            [1, 2048], 8),
    # convolutions (opt-in, `convolutions=true`: "+" in the name): the input channels split
    # (chunked), the 3x3 window stays in the partial; by default they stay whole
    "conv3x3_c512+": ([helper.make_node("Conv", ["x", "wc"], ["z"], pads=[1, 1, 1, 1])],
                      [1, 512, 7, 7], 16),
    "conv3x3_c64_bias+": ([helper.make_node("Conv", ["x", "wc", "cc"], ["z"],
                                            pads=[1, 1, 1, 1])], [1, 64, 14, 14], 2),
    "conv3x3_c512_kept": ([helper.make_node("Conv", ["x", "wc"], ["z"], pads=[1, 1, 1, 1])],
                          [1, 512, 7, 7], None),
}


def model(nodes, shape):
    rng = np.random.default_rng(0)
    weights = {"g": rng.standard_normal(shape[-1]).astype(np.float32),
               "b": rng.standard_normal(shape[-1]).astype(np.float32),
               "axes": np.array([-1], np.int64),
               "w": rng.standard_normal([shape[-1], 96]).astype(np.float32),
               "c": rng.standard_normal([96]).astype(np.float32),
               "wb": rng.standard_normal([shape[0], shape[-1], 32]).astype(np.float32),
               "wc": rng.standard_normal([24, shape[1], 3, 3]).astype(np.float32) * 0.1,
               "cc": rng.standard_normal([24]).astype(np.float32),
               "wt": rng.standard_normal([96, shape[-1]]).astype(np.float32)}
    used = {name for node in nodes for name in node.input}
    return make_model(nodes, {"x": (np.float32, shape)}, ["z"],
                      {k: v for k, v in weights.items() if k in used})


def partial_sizes(linalg_ir: str) -> set[int]:
    """The R of each partial reduction: its result is [..., R] (interleaved) or [R, ...]
    (chunked), the input of a final generic whose only loop not in its output reduces it."""
    found = set()
    for partial in re.findall(r"linalg\.fill .* -> tensor<([0-9x]+)xf32>", linalg_ir):
        sizes = [int(s) for s in partial.split("x")]
        pattern = rf"ins\(%\w+ : tensor<{partial}xf32>\) outs\(%\w+ : tensor<([0-9x]+)xf32>\)"
        for out in re.findall(pattern, linalg_ir):
            out_sizes = [int(s) for s in out.split("x")]
            if out_sizes == sizes[:-1]:
                found.add(sizes[-1])
            elif out_sizes == sizes[1:]:
                found.add(sizes[0])
    return found


def assert_loops_consistent(compiled) -> None:
    """In every linalg generic, a loop the output does not index is a reduction, the others
    are parallel and come first (on the GPU a `parallel` loop is a thread: a reduction loop marked parallel
    is a race; on the CPU it runs serially and would go unnoticed)."""
    from mlir import ir
    from mlir.dialects import linalg

    with make_context():
        module = ir.Module.parse(compiled.ir("linalg"))

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "linalg.generic":
                maps = [ir.AffineMapAttr(a).value for a in linalg.get_indexing_maps(op)]
                indexed = {r.position for r in maps[-1].results}
                iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
                for loop, iterator in enumerate(iterators):
                    kind = "parallel" if loop in indexed else "reduction"
                    assert kind in iterator, f"loop {loop} of {op}"
                # parallel loops first: the GPU maps the outer parallel band to threads, a
                # parallel loop inside a reduction would run serially in each thread
                kinds = ["reduction" in i for i in iterators]
                assert kinds == sorted(kinds), f"a parallel loop after a reduction in {op}"
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)


@pytest.mark.parametrize("name", CASES)
def test_split_reduction_matches_onnxruntime(name: str) -> None:
    nodes, shape, parts = CASES[name]
    proto = model(nodes, shape)
    x = (np.random.default_rng(1).standard_normal(shape) * 3 + 1).astype(np.float32)
    expected = ort.InferenceSession(proto.SerializeToString()).run(None, {"x": x})[0]
    pipelines = dict(stage_pipelines(2))
    pipelines["linalg"] = gpu_stage_pipelines(2)["linalg"]
    if name.endswith("+"):
        pipelines["linalg"] = pipelines["linalg"].replace(
            "dlc-gpu-split-reductions", "dlc-gpu-split-reductions{convolutions=true}")
    context = make_context()
    compiled = compile_imported(context, import_model(proto, context, None, None),
                                CompileOptions(num_threads=1, pipelines=pipelines))
    linalg_ir = compiled.ir("linalg")
    if parts is None:
        assert not partial_sizes(linalg_ir)
    else:
        assert parts in partial_sizes(linalg_ir), linalg_ir[:3000]
    assert_loops_consistent(compiled)
    got = compiled({"x": x})[0]
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * scale)
