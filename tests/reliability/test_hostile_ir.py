"""Hostile input never kills `dlc-opt`: deep nesting, types too large for int64 sizes and deep
or misspelled pipeline anchors are one located error and exit status 1, never a signal.

dlc-opt runs in a subprocess, since the defects these tests pin were crashes of the process
(SIGSEGV in MLIR's recursive parser, SIGABRT on an MLIR assertion) that no in-process test
survives.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dlc.dialects import make_context
from dlc.passes import PipelineError, build_pass_manager
from dlc.tools.opt_guards import MAX_NESTING

HUGE = "tensor<4611686018427387904x4xf32>"  # 2^64 elements: the byte size overflows int64


def dlc_opt(tmp_path, text: str, *argv: str) -> subprocess.CompletedProcess:
    path = tmp_path / "in.mlir"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "dlc.tools.dlc_opt", str(path), *argv],
                          capture_output=True, text=True, timeout=120, check=False)


def assert_located_error(result: subprocess.CompletedProcess, line: int, message: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert re.match(rf".*in\.mlir:{line}:\d+: error: ", first), first[:300]
    assert re.search(message, first), first[:300]


def test_regions_nested_5000_deep(tmp_path):
    text = "module {\n" * 5000 + "}\n" * 5000
    result = dlc_opt(tmp_path, text)
    assert_located_error(result, MAX_NESTING + 1, rf"nested more than {MAX_NESTING} brackets")


def test_attribute_brackets_nested_100000_deep(tmp_path):
    text = "func.func @f() attributes {a = " + "[" * 100_000 + "]" * 100_000 + "} {\n  return\n}\n"
    result = dlc_opt(tmp_path, text)
    assert_located_error(result, 1, rf"nested more than {MAX_NESTING} brackets")
    assert f"1:{len('func.func @f() attributes {a = ') + MAX_NESTING}:" in result.stderr


def test_nesting_in_strings_and_comments_is_not_counted(tmp_path):
    brackets = "[" * 2000
    text = (f'// {brackets}\nfunc.func @f() attributes {{a = "{brackets}"}} {{\n'
            "  return\n}\n")
    result = dlc_opt(tmp_path, text)
    assert result.returncode == 0, result.stderr
    assert brackets in result.stdout


def test_nesting_at_the_limit_is_accepted(tmp_path):
    depth = MAX_NESTING - 1  # the module's own region is one more
    text = "module {\n" * depth + "}\n" * depth
    result = dlc_opt(tmp_path, text, "-p", "builtin.module(canonicalize,cse)")
    assert result.returncode == 0, result.stderr[-2000:]


def test_huge_tensor_through_one_shot_bufferize(tmp_path):
    text = (f"func.func @f() -> {HUGE} {{\n  %0 = tensor.empty() : {HUGE}\n"
            f"  return %0 : {HUGE}\n}}\n")
    pipeline = "builtin.module(one-shot-bufferize{bufferize-function-boundaries})"
    result = dlc_opt(tmp_path, text, "-p", pipeline)
    assert_located_error(result, 1, r"'func\.func' op attribute 'function_type' has type "
                                    r"'tensor<4611686018427387904x4xf32>' of \d+ bytes")
    assert re.search(r"in\.mlir:2:8: error: 'tensor\.empty' op result #0", result.stderr)


OVERSIZED = {
    "block argument": (f"func.func @f(%a: {HUGE}) {{\n  return\n}}\n", 1,
                       r"'func\.func' op block argument #0 of region #0"),
    "vector result": (("func.func @f() {\n  %0 = arith.constant dense<1.0> : "
                       "vector<4611686018427387904x4xf32>\n  return\n}\n"), 2,
                      r"'arith\.constant' op result #0 has type 'vector<"),
    "memref in a nested attribute": (
        ('func.func @f() {\n  "func.return"() {t = [[tuple<i32, memref<4611686018427387904x4xf32>>'
         ']]} : () -> ()\n}\n'), 2, r"'func\.return' op attribute 't' has type 'memref<"),
    "overflow next to a dynamic dimension": (
        "func.func private @g(memref<?x4611686018427387904xf32>)\n", 1, r"memref<\?x"),
}


@pytest.mark.parametrize("text, line, message", list(OVERSIZED.values()), ids=list(OVERSIZED))
def test_types_too_large_for_int64(tmp_path, text, line, message):
    assert_located_error(dlc_opt(tmp_path, text), line, message)


def test_large_but_representable_types_are_accepted(tmp_path):
    text = ("func.func private @g(tensor<1073741824x1073741824xi4>, tensor<*xf32>, "
            "complex<f64>, vector<[4]xf32>, memref<?x?xf32>)\n")
    result = dlc_opt(tmp_path, text)
    assert result.returncode == 0, result.stderr


def test_pipeline_anchors_nested_3000_deep(tmp_path):
    pipeline = "builtin.module(" * 3000 + "cse" + ")" * 3000
    result = dlc_opt(tmp_path, "module {\n}\n", "-p", pipeline)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.startswith("dlc-opt: error: anchors nested more than 64 deep")
    assert result.stderr.count("\n") == 1


def test_build_pass_manager_refuses_deep_anchors():
    with pytest.raises(PipelineError, match="anchors nested more than 64 deep at column"):
        build_pass_manager("builtin.module(" * 3000 + "cse" + ")" * 3000, make_context())


@pytest.mark.parametrize("anchor", ["fun.func", "func.fnuc"])
def test_build_pass_manager_refuses_misspelled_anchor(anchor):
    with pytest.raises(PipelineError, match=rf"'{anchor}\(\.\.\.\)' in the pipeline names no "
                                            r"registered operation.*did you mean 'func\.func'"):
        build_pass_manager(f"builtin.module({anchor}(cse))", make_context())


def test_build_pass_manager_uses_the_current_context_for_anchors():
    with make_context(), pytest.raises(PipelineError, match="'fun.func"):
        build_pass_manager("builtin.module(fun.func(cse))")


def test_build_pass_manager_accepts_registered_anchors():
    text = "builtin.module(func.func(cse),gpu.module(canonicalize),any(cse))"
    assert "gpu.module(canonicalize{" in str(build_pass_manager(text, make_context()))


def test_dense_array_of_index_is_refused_not_an_abort(tmp_path):
    text = 'func.func @f() attributes {a = array<index: 0>} {\n  return\n}\n'
    assert_located_error(dlc_opt(tmp_path, text), 1, r"dense array of 'index'")


def test_llvm_array_types_are_not_dense_arrays(tmp_path):
    # (!llvm.array<2 x f32> is a type: the dense-array guard took its "2" for an element type)
    text = ("llvm.mlir.global internal constant @g(dense<[1.0, 2.0]> : tensor<2xf32>) "
            ": !llvm.array<2 x f32>\n")
    result = dlc_opt(tmp_path, text)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "!llvm.array<2 x f32>" in result.stdout
