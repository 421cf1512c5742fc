"""`dlc-opt` on broken input: a diagnostic and exit status 1, never a traceback; and the
mutation fuzzer that looks for the exceptions (testing/opt_fuzz.py; long run in the README)."""

from __future__ import annotations

import numpy as np
import pytest

from dlc.testing import opt_fuzz
from dlc.tools import dlc_opt

GOOD = """func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""

BAD_INPUTS = {
    "truncated": (GOOD[:70], [], r"error: "),
    "unknown dlc op": (GOOD.replace("dlc.relu", "dlc.frobnicate"), [],
                       r"dlc\.frobnicate"),
    "unknown dialect": (GOOD.replace("dlc.relu", "zork.relu"), ["-O0"], r"zork\.relu"),
    "wrong result type": (GOOD.replace(") -> tensor<2x3xf32>\n  return",
                                       ") -> tensor<3x2xf32>\n  return"), [], r"error: "),
    "empty function body": ("func.func @f() {\n}\n", ["-O3"], r"error: "),
    "binary garbage": ("\x00\x01\x02 }}}", [], r"error: "),
}


@pytest.mark.parametrize("text, argv, message", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_bad_input_is_a_diagnostic(tmp_path, capsys, text, argv, message):
    path = tmp_path / "in.mlir"
    path.write_text(text)
    assert dlc_opt.main([str(path), *argv]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    assert __import__("re").search(message, err), err


BAD_PIPELINES = {
    "misspelled dlc pass": ("builtin.module(dlc-canonicalise)",
                            "did you mean 'dlc-canonicalize'?"),
    "misspelled upstream pass": ("builtin.module(func.func(cse,canonicalise))",
                                 "did you mean 'canonicalize'?"),
    "bad dlc option": ("builtin.module(dlc-canonicalize{nope=1})",
                       "pass 'dlc-canonicalize' has no option 'nope'"),
    "bad upstream option": ("builtin.module(canonicalize{max-iteratons=2})",
                            "did you mean 'max-iterations'?"),
    "misspelled anchor": ("builtin.module(func.fun(cse))", "did you mean 'func.func'?"),
    "unbalanced": ("builtin.module(cse", "expected ',' or ')'"),
}


@pytest.mark.parametrize("pipeline, message", list(BAD_PIPELINES.values()),
                         ids=list(BAD_PIPELINES))
def test_bad_pipeline_is_one_line(tmp_path, capsys, pipeline, message):
    path = tmp_path / "in.mlir"
    path.write_text(GOOD)
    assert dlc_opt.main([str(path), "-p", pipeline]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dlc-opt: error: ") and err.count("\n") == 1
    assert message in err


def test_mutations_are_seeded():
    files = opt_fuzz.corpus()
    assert len(files) > 20
    first = opt_fuzz.mutant(5, 17, files)
    assert opt_fuzz.mutant(5, 17, files) == first
    assert opt_fuzz.mutant(5, 18, files) != first


@pytest.mark.parametrize("mutation", opt_fuzz.MUTATIONS, ids=lambda m: m.__name__)
def test_each_mutation_changes_the_text(mutation):
    changed = sum(mutation(GOOD, np.random.default_rng(i)) != GOOD for i in range(20))
    assert changed >= 10


def test_the_corpus_is_any_folder(tmp_path, capsys):
    # (an installed dlc has no lit_tests beside it: the harness reads a checkout's, or any)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "one.mlir").write_text(GOOD)
    assert opt_fuzz.main(["-n", "4", "-j", "1", "--corpus", str(tmp_path / "corpus"),
                          "--out", str(tmp_path / "out")]) == 0
    assert "0 internal, 0 crash, 0 hang" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        opt_fuzz.main(["-n", "1", "--corpus", str(tmp_path / "missing")])
    assert "no .mlir file under" in capsys.readouterr().err


def test_a_short_seeded_run_flags_nothing(tmp_path, capsys):
    assert opt_fuzz.main(["-n", "40", "-j", "2", "--seed", "11", "--out",
                          str(tmp_path)]) == 0
    assert "0 internal, 0 crash, 0 hang" in capsys.readouterr().out
