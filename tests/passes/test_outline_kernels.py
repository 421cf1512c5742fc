"""dlc-outline-kernels (issue 20): a model's identical layers compile to one kernel function
each, called once per layer, computing what the un-outlined model computes, bit for bit, and
the same IR and object code every time."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest
from mlir import ir
from onnx import helper

import dlc
import dlc.compiler
from dlc.dialects import make_context
from dlc.passes import build_pass_manager
from dlc.passes.pipelines import stage_pipelines
from dlc.runtime import cache, native
from tests.conftest import make_model

ROWS, WIDTH = 32, 64
RNG = np.random.default_rng(20)
# (each 16 KiB weight is external: a pointer bound at load, as a real model's are)
WEIGHTS = [(RNG.standard_normal((WIDTH, WIDTH)) / 8).astype(np.float32) for _ in range(5)]
BIASES = [RNG.standard_normal(WIDTH).astype(np.float32) for _ in range(5)]
X = RNG.standard_normal((ROWS, WIDTH)).astype(np.float32)


def layers(n: int):
    """n residual layers h + relu(h @ W_i + b_i), each with weights of its own, between two
    tanh (as a real model's, the layers read and write intermediate buffers, not its input
    and output)."""
    nodes, inits = [helper.make_node("Tanh", ["x"], ["h0"])], {}
    for i in range(n):
        inits[f"w{i}"], inits[f"b{i}"] = WEIGHTS[i], BIASES[i]
        nodes += [helper.make_node("MatMul", [f"h{i}", f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"]),
                  helper.make_node("Add", [f"h{i}", f"r{i}"], [f"h{i + 1}"])]
    nodes.append(helper.make_node("Tanh", [f"h{n}"], ["y"]))
    return make_model(nodes, {"x": (np.float32, [ROWS, WIDTH])}, ["y"], initializers=inits)


def reference(x: np.ndarray, n: int) -> np.ndarray:
    x = np.tanh(x)
    for i in range(n):
        x = x + np.maximum(x @ WEIGHTS[i] + BIASES[i], 0)
    return np.tanh(x)


def kernels(text: str) -> tuple[set[str], list[str]]:
    """The kernel functions defined in llvm-stage IR, and the kernel calls, in order."""
    defined = set(re.findall(r"llvm\.func internal @(main__kernel\d+)\(", text))
    calls = re.findall(r"llvm\.call @(main__kernel\d+)\(", text)
    return defined, calls


def test_identical_layers_compile_to_one_kernel_each() -> None:
    # (the first layer reads the tanh's buffer, the last one writes where the output's tanh
    # reads: their kernels may differ; the layers between are the same: 3 layers have one
    # between, 5 three)
    three, calls_three = kernels(dlc.lower(layers(3), "llvm", opt_level=2,
                                           num_threads=1).ir("llvm"))
    five, calls = kernels(dlc.lower(layers(5), "llvm", opt_level=2, num_threads=1).ir("llvm"))
    assert three == five and set(calls) == five  # (two more layers: no more kernels)
    per_layer, rest = divmod(len(calls) - len(calls_three), 2)
    assert per_layer >= 1 and rest == 0  # (each layer calls its kernels)
    assert max(calls.count(name) for name in five) >= 3


def test_the_pass_runs_at_o2_and_o3_only() -> None:
    for level in (0, 1):
        assert "dlc-outline-kernels" not in stage_pipelines(level)["llvm"]
    for level in (2, 3):
        assert stage_pipelines(level)["llvm"].startswith("dlc-outline-kernels,")


def compile_without_outlining(monkeypatch, model):
    original = dlc.compiler.stage_pipelines

    def without(*args, **kwargs):
        texts = dict(original(*args, **kwargs))
        texts["llvm"] = texts["llvm"].replace("dlc-outline-kernels,", "")
        return texts

    with monkeypatch.context() as patch:
        patch.setattr(dlc.compiler, "stage_pipelines", without)
        with cache.disabled():
            compiled = dlc.compile(model, opt_level=2, num_threads=1)
    assert "__kernel" not in compiled.ir("llvm")
    return compiled


def test_outlined_kernels_compute_the_same_results_bit_for_bit(monkeypatch) -> None:
    with cache.disabled():
        outlined = dlc.compile(layers(5), opt_level=2, num_threads=1)
    assert "__kernel" in outlined.ir("llvm")
    whole = compile_without_outlining(monkeypatch, layers(5))
    got = outlined(X)[0]
    np.testing.assert_array_equal(got, whole(X)[0])
    np.testing.assert_allclose(got, reference(X, 5), rtol=1e-5, atol=1e-5)


def test_the_ir_and_the_object_code_are_deterministic(tmp_path) -> None:
    texts, digests = [], []
    for k in range(2):
        with cache.disabled():
            compiled = dlc.compile(layers(5), opt_level=2, num_threads=1)
        texts.append(compiled.ir("llvm"))
        path = tmp_path / f"model{k}.o"
        compiled._function.dump_object(str(path))
        digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
    assert texts[0] == texts[1]
    assert digests[0] == digests[1]


def test_a_kernel_that_differs_is_not_merged() -> None:
    # layer 2's Relu is a Sigmoid: its epilogue kernel differs from the other layers'
    model = layers(5)
    next(n for n in model.graph.node if n.output[0] == "r2").op_type = "Sigmoid"
    defined, calls = kernels(dlc.lower(model, "llvm", opt_level=2, num_threads=1).ir("llvm"))
    same, _ = kernels(dlc.lower(layers(5), "llvm", opt_level=2, num_threads=1).ir("llvm"))
    assert len(defined) > len(same)
    # (layers 1 and 3, between the first and the last, still share theirs)
    assert max(calls.count(name) for name in defined) >= 2


def test_each_function_is_outlined_and_verifies() -> None:
    text = dlc.lower(layers(2), "bufferized", opt_level=2, num_threads=1).ir("bufferized")
    with make_context():
        module = ir.Module.parse(text)
        build_pass_manager("builtin.module(dlc-outline-kernels)").run(module.operation)
        module.operation.verify()
        main = next(op for op in module.body.operations
                    if ir.StringAttr(op.attributes["sym_name"]).value == "main")
        # no loop nest left in main: only calls, views, copies and constants
        assert not any(op.operation.regions for op in main.regions[0].blocks[0].operations)


@pytest.mark.parametrize("count, parallel", [(native.MIN_KERNELS - 1, False),
                                             (native.MIN_KERNELS, True)])
def test_a_module_of_many_kernels_is_generated_in_processes(monkeypatch, count,
                                                            parallel) -> None:
    monkeypatch.setenv(native.ENV, "2")
    if native._linker() is None:
        pytest.skip("no C compiler to link with")
    body = "".join(f"llvm.func internal @main__kernel{k}() {{\n llvm.return\n}}\n"
                   for k in range(count))
    with make_context():
        module = ir.Module.parse(body + "llvm.func @main() {\n llvm.return\n}\n")
        assert (native.chunks(module) > 1) == parallel
