"""Hostile models and user passes are refused with a DlcError naming the culprit, never a crash.

- Size: a Concat of 10,000 inputs and a chain of 20,000 nodes go through import, the graph
  passes and `dlc-to-linalg` with no recursion as deep as the graph.
- Computed shapes are checked like declared ones: an Expand to [2^32, 2^32] (memory), an empty
  tensor whose other axes overflow int64 sizes.
- Models onnxruntime refuses (pools whose pads reach the kernel, Pads that crop below size 0, a
  graph without outputs) and declared output shapes the graph contradicts are refused.
- A user rule (`dlc.passes.graph.match`) returning a wrong replacement is a `RuleError` naming
  the rule and the op; before, MLIR asserted and the process aborted, so those cases run in a
  subprocess.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.compiler import run_stage
from dlc.dialects import ShapeError, make_context
from dlc.errors import DlcError
from dlc.frontends.onnx_importer import import_model
from dlc.frontends.validate import ModelValidationError
from dlc.passes import PipelineError, build_pass_manager, stage_pipelines
from tests.conftest import make_model

F32 = np.float32


def lower(model: onnx.ModelProto, opt_level: int = 2) -> ir.Module:
    """Import `model`, run the dlc stage of `opt_level`, then `dlc-to-linalg` alone."""
    context = make_context()
    imported = import_model(model, context)
    with context:
        run_stage(imported.module, "dlc", stage_pipelines(opt_level)["dlc"])
        run_stage(imported.module, "linalg", "dlc-to-linalg")
    return imported.module


# ----------------------------------------------------------------------------- graph size


def test_concat_of_10000_inputs():
    count = 10_000
    node = helper.make_node("Concat", ["x"] * count, ["y"], name="wide", axis=0)
    module = lower(make_model([node], {"x": (F32, [2])}, {"y": (F32, [2 * count])},
                              check=False), opt_level=0)
    text = str(module)
    assert text.count("tensor.insert_slice") == count
    assert "dlc.concat" not in text


@pytest.mark.parametrize("op_type", ["Sum", "Max"])
def test_variadic_node_of_10000_inputs(op_type):
    count = 10_000
    node = helper.make_node(op_type, ["x"] * count, ["y"], name="wide")
    module = lower(make_model([node], {"x": (F32, [2])}, {"y": (F32, [2])}, check=False),
                   opt_level=0)
    assert "dlc." not in str(module)


def test_chain_of_20000_nodes():
    count = 20_000
    names = ["x", *(f"v{i}" for i in range(1, count)), "y"]
    nodes = [helper.make_node("Neg" if i % 2 else "Relu", [names[i]], [names[i + 1]],
                              name=f"n{i}") for i in range(count)]
    module = lower(make_model(nodes, {"x": (F32, [2])}, {"y": (F32, [2])}, check=False))
    assert "dlc." not in str(module)


# ----------------------------------------------------------------------------- computed sizes

COMPILE_PROGRAM = """
import sys

import dlc

try:
    dlc.compile(sys.argv[1], opt_level=int(sys.argv[2]))
    print("compiled")
except dlc.DlcError as error:
    print(f"{type(error).__name__}: {error}")
"""


def refusal(tmp_path, model: onnx.ModelProto, opt_level: int = 0) -> str:
    """`ErrorType: message` of compiling `model` in a subprocess (MLIR used to abort on it)."""
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    run = subprocess.run([sys.executable, "-c", COMPILE_PROGRAM, str(path), str(opt_level)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    return run.stdout.strip()



def expand(shape: list[int], constant_input: bool = False) -> onnx.ModelProto:
    initializers = {"s": np.array(shape, np.int64)}
    inputs = {"x": (F32, [1])}
    if constant_input:  # Expand of constants: folded at import, where numpy would allocate
        initializers["x"], inputs = np.ones(1, F32), {"z": (F32, [1])}
    return make_model([helper.make_node("Expand", ["x", "s"], ["y"], name="grow")], inputs,
                      {"y": (F32, ["d"] * len(shape))}, initializers=initializers, check=False)


@pytest.mark.parametrize("constant_input", [False, True], ids=["input", "constant"])
@pytest.mark.parametrize("opt_level", [0, 2])
def test_expand_beyond_memory(tmp_path, constant_input, opt_level):
    message = (r"ModelValidationError: invalid ONNX model: node 'grow' \(Expand\) computes a "
               r"result that has shape \[4294967296, 4294967296\] of float, 6\.872e\+10 GiB: "
               r"more than this machine's memory")
    assert re.match(message, refusal(tmp_path, expand([2**32, 2**32], constant_input),
                                      opt_level))


@pytest.mark.parametrize("constant_input", [False, True], ids=["input", "constant"])
def test_empty_expand_beyond_64_bit_sizes(tmp_path, constant_input):
    message = (r"ModelValidationError: invalid ONNX model: node 'grow' \(Expand\) computes a "
               r"result that has shape \[0, 1099511627776, 1099511627776\] of float: its "
               r"non-empty axes span 1\.209e\+24 elements, more than 64-bit size arithmetic "
               r"allows")
    assert re.match(message, refusal(tmp_path, expand([0, 2**40, 2**40], constant_input)))


def test_empty_graph_input_beyond_64_bit_sizes(tmp_path):
    shape = [0, 2**40, 2**40]
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                       {"x": (F32, shape)}, {"y": (F32, shape)}, check=False)
    assert re.match(r"ModelValidationError: invalid ONNX model: graph input 'x' has shape "
                    r"\[0, 1099511627776, 1099511627776\] of float: its non-empty axes span",
                    refusal(tmp_path, model))


@pytest.mark.parametrize("op_type, inputs, message", [
    ("ConstantOfShape", {"s": np.array([2**20, 2**20, 2**10], np.int64)},
     (r"node 'make' \(ConstantOfShape\) computes a result that has shape \[1048576, 1048576, "
     r"1024\] of float, 4\.194e\+06 GiB")),
    ("Range", {"a": np.array(0, np.int64), "b": np.array(2**60, np.int64),
               "c": np.array(1, np.int64)},
     (r"node 'make' \(Range\) computes a result that has shape \[1152921504606846976\] of "
     r"int64")),
], ids=["ConstantOfShape", "Range"])
def test_constant_generators_beyond_memory(tmp_path, op_type, inputs, message):
    node = helper.make_node(op_type, list(inputs), ["y"], name="make")
    model = make_model([node], {}, {"y": (F32 if op_type == "ConstantOfShape" else np.int64,
                                          ["d"] * (3 if op_type == "ConstantOfShape" else 1))},
                       initializers=inputs, check=False)
    assert re.match(rf"ModelValidationError: invalid ONNX model: {message}",
                    refusal(tmp_path, model))


# ----------------------------------------------------------------------------- what onnxruntime refuses


def pool(op_type: str, pads: list[int]) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"], name="pool", kernel_shape=[2, 2], pads=pads)
    return make_model([node], {"x": (F32, [1, 1, 4, 4])}, {"y": (F32, [1, 1, "h", "w"])},
                      check=False)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool", "LpPool"])
def test_pool_pads_as_large_as_the_kernel(op_type):
    message = (rf"node 'pool' \({op_type}\): pads \[0, 0, 0, 2\]: the end pad 2 of spatial axis "
               r"1 is not smaller than the kernel size 2 .* a window would cover only padding")
    with pytest.raises(dlc.FrontendError, match=message):
        dlc.compile(pool(op_type, [0, 0, 0, 2]), opt_level=0)


def test_pool_pads_smaller_than_the_kernel_still_compile():
    compiled = dlc.compile(pool("MaxPool", [1, 1, 1, 1]), opt_level=0)
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    assert compiled(x)[0].shape == (1, 1, 5, 5)


def pad(pads: list[int]) -> onnx.ModelProto:
    return make_model([helper.make_node("Pad", ["x", "p"], ["y"], name="crop")],
                      {"x": (F32, [4])}, {"y": (F32, ["n"])},
                      initializers={"p": np.array(pads, np.int64)}, check=False)


@pytest.mark.parametrize("pads, message", [
    ([-3, -3], (r"pads \[-3, -3\] leave axis 0 \(size 4\) with -2 elements; a result size "
               r"must be >= 0")),
    ([-5, 3], (r"pads \[-5, 3\]: the begin pad -5 of axis 0 removes 5 elements, but the axis "
              r"has 4")),
], ids=["negative result", "crop past the axis"])
def test_pad_cropping_more_than_the_axis(pads, message):
    with pytest.raises(dlc.FrontendError, match=rf"node 'crop' \(Pad\): {message}"):
        dlc.compile(pad(pads), opt_level=0)


def test_pad_cropping_the_whole_axis_still_compiles():
    compiled = dlc.compile(pad([-2, -2]), opt_level=0)
    assert compiled(np.ones(4, F32))[0].shape == (0,)


def test_graph_without_outputs():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                       {"x": (F32, [2])}, {}, check=False)
    with pytest.raises(ModelValidationError, match=r"the graph has no outputs"):
        dlc.compile(model, opt_level=0)


def test_declared_output_shape_contradicts_the_graph():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                       {"x": (F32, [2, 3])}, {"y": (F32, [3, 2])}, check=False)
    with pytest.raises(ModelValidationError,
                       match=r"graph output 'y' is declared with shape \[3, 2\], but node 'act' "
                             r"\(Relu\) computes it as \[2, 3\]"):
        dlc.compile(model, opt_level=0)


def test_declared_output_shape_of_another_specialization_is_accepted():
    # input_shapes changes a static input size: the declared output sizes no longer apply
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                       {"x": (F32, [1, 3])}, {"y": (F32, [1, 3])}, check=False)
    compiled = dlc.compile(model, opt_level=0, input_shapes={"x": [4, 3]})
    assert compiled(np.ones((4, 3), F32))[0].shape == (4, 3)


# ----------------------------------------------------------------------------- user rules

RULE_PROGRAM = """
import sys
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.compiler import CompileError, run_stage
from dlc.dialects import make_context, ops
from dlc.passes import ModulePass, register
from dlc.passes.graph.match import RuleError, apply_rules, constant


def twice(op):
    return [op.operands[0], op.operands[0]]


def wrong_type(op):
    return [constant(np.zeros(3, np.float32), ir.F32Type.get(), op.location)]


def itself(op):
    return [op.results[0]]


def one_value(op):
    return op.operands[0]


def broken(op):
    return [op.operands[7]]


RULE = {f.__name__: f for f in (twice, wrong_type, itself, one_value, broken)}[sys.argv[1]]


@register
@dataclass(frozen=True)
class UserPass(ModulePass):
    name = "user-pass"

    def run(self, module):
        apply_rules(module, {ops.RELU: [RULE]})


TEXT = '''
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "dlc.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
'''
with make_context():
    module = ir.Module.parse(TEXT)
    try:  # called directly: the RuleError itself
        apply_rules(module.operation, {ops.RELU: [RULE]})
    except RuleError as error:
        print("direct:", error)
    try:  # in a pipeline: reported at the op's location
        run_stage(ir.Module.parse(TEXT), "dlc", "user-pass")
    except CompileError as error:
        print("pipeline:", error)
"""


@pytest.mark.parametrize("rule, message", [
    ("twice", r"returned 2 replacement value\(s\) for an op with 1 result\(s\)"),
    ("wrong_type", (r"replacement 0 has type tensor<3xf32> but result 0 of the op has type "
                   r"tensor<2xf32>")),
    ("itself", r"replaces the op by its own result 0"),
    ("one_value", r"returned a BlockArgument; a rule returns a list of values"),
    ("broken", r"failed: IndexError"),
])
def test_user_rule_with_a_wrong_replacement(rule, message):
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(RULE_PROGRAM), rule],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert len(lines) >= 2, run.stdout + run.stderr[-2000:]
    what = rf"rule '{rule}' on 'dlc.relu' at loc\(\"-\":3:8\)"
    assert re.search(rf"^direct: {what}.*{message}", lines[0]), lines[0]
    assert re.search(rf'loc\("-":3:8\): error: {what}.*{message}', run.stdout), run.stdout


# ----------------------------------------------------------------------------- error types


def test_shape_and_pipeline_errors_are_dlc_errors():
    with make_context(), pytest.raises(PipelineError) as pipeline_error:
        build_pass_manager("builtin.module(dlc-no-such-pass)")
    assert isinstance(pipeline_error.value, DlcError)
    assert isinstance(pipeline_error.value, ValueError)
    assert issubclass(ShapeError, DlcError)
    assert issubclass(ShapeError, ValueError)
