"""The pass registry and the pipeline parser (`dlc.passes.registry`, `dlc.passes.pipeline`).

Checks that every registered pass is covered by a lit test (a RUN line of a file under
`lit_tests/` names it), and the behaviour of `parse_pipeline` / `build_pass_manager` /
`describe`: nested anchors, dlc passes inside anchors, typed options, and the errors for
unknown passes, unknown options and malformed text. FileCheck tests of the passes themselves
live in `lit_tests/`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlir import ir

from dlc.dialects import make_context
from dlc.passes import (
    OPT_LEVELS,
    ModulePass,
    PipelineError,
    build_pass_manager,
    describe,
    parse_pipeline,
    pipeline,
    registered_passes,
    registry,
)
from dlc.passes.registry import STAGE_FOLDERS, make_pass

LIT_TESTS = Path(__file__).resolve().parents[1] / "lit_tests"


def run_lines() -> list[str]:
    """Every RUN line of every lit test."""
    lines = []
    for path in sorted(LIT_TESTS.rglob("*.mlir")):
        lines += [line for line in path.read_text().splitlines() if "RUN:" in line]
    return lines


# ----------------------------------------------------------------------------- lit coverage


@pytest.mark.parametrize("name", sorted(registered_passes()))
def test_each_pass_has_a_lit_test(name: str) -> None:
    pattern = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    covered = [line for line in run_lines() if pattern.search(line)]
    assert covered, f"no RUN line under {LIT_TESTS} runs the pass '{name}'"


@pytest.mark.parametrize("name", sorted(registered_passes()))
def test_each_pass_lives_in_a_stage_folder_mirrored_by_its_lit_file(name: str) -> None:
    # pass dlc-foo of dlc/passes/STAGE/foo.py <-> lit_tests/passes/STAGE/foo.mlir, or a
    # folder lit_tests/passes/STAGE/dlc-foo/
    module = registered_passes()[name].__module__
    if not module.startswith("dlc."):
        pytest.skip(f"{name} is a plugin's pass ({module})")
    parts = module.split(".")
    assert parts[:2] == ["dlc", "passes"] and len(parts) >= 4 and parts[2] in STAGE_FOLDERS, (
        f"pass '{name}' is defined in {module}, not in a stage folder {STAGE_FOLDERS}")
    short = name.removeprefix("dlc-")
    candidates = [LIT_TESTS / "passes" / parts[2] / f"{n}{suffix}" for n in (name, short)
                  for suffix in (".mlir", "")]
    assert any(c.exists() for c in candidates), (
        f"no lit test named after '{name}': expected one of {[str(c) for c in candidates]}"
    )


def test_every_registered_pass_has_a_description() -> None:
    for name, cls in registered_passes().items():
        assert cls.name == name
        assert cls.description(), f"pass '{name}' has no docstring"


# ----------------------------------------------------------------------------- parsing


def test_parse_unwraps_builtin_module_and_keeps_nesting() -> None:
    elements = parse_pipeline(
        "builtin.module(func.func(canonicalize{max-iterations=3}, cse), dlc-verify)"
    )
    assert [e.name for e in elements] == ["func.func", "dlc-verify"]
    anchor = elements[0]
    assert [c.name for c in anchor.children] == ["canonicalize", "cse"]
    assert anchor.children[0].options == "max-iterations=3"
    assert elements[1].children is None and elements[1].options is None


def test_parse_without_builtin_module() -> None:
    assert [e.name for e in parse_pipeline(" dlc-verify , cse ")] == ["dlc-verify", "cse"]


@pytest.mark.parametrize("text", ["", "builtin.module()"])
def test_empty_pipeline_runs_nothing(text: str) -> None:
    assert describe(text) == "builtin.module()"
    with make_context():
        module = ir.Module.parse("func.func @f() { return }")
        before = str(module)
        build_pass_manager(text).run(module.operation)
        assert str(module) == before


@pytest.mark.parametrize(
    "text, message",
    [
        ("builtin.module(", "expected a pass or op name at column 16"),
        ("builtin.module(dlc-verify", "expected ',' or ')' at column 26"),
        ("dlc-verify,", "expected a pass or op name"),
        ("dlc-verify)", "at column 11"),
        ("canonicalize{max-iterations=3", "unbalanced '{'"),
    ],
)
def test_malformed_pipeline_names_the_column(text: str, message: str) -> None:
    with pytest.raises(PipelineError, match=re.escape(message)):
        parse_pipeline(text)


# ----------------------------------------------------------------------------- nesting


@pytest.mark.parametrize(
    "text, expected",
    [
        # upstream passes keep their anchor
        ("builtin.module(func.func(canonicalize,cse))",
         "builtin.module(func.func(canonicalize,cse))"),
        # a dlc pass inside an anchor runs at module level, in the same position
        ("builtin.module(func.func(dlc-verify,canonicalize))",
         "builtin.module(dlc-verify,func.func(canonicalize))"),
        ("builtin.module(func.func(canonicalize,dlc-verify,cse))",
         "builtin.module(func.func(canonicalize),dlc-verify,func.func(cse))"),
        ("func.func(func.func(dlc-verify))", "builtin.module(dlc-verify)"),
        ("dlc-canonicalize,canonicalize{max-iterations=3}",
         "builtin.module(dlc-canonicalize,canonicalize{max-iterations=3})"),
    ],
)
def test_describe_flattens_dlc_passes_out_of_anchors(text: str, expected: str) -> None:
    assert describe(text) == expected


@pytest.mark.parametrize("level", OPT_LEVELS)
def test_named_pipelines_build_and_describe_back(level: int) -> None:
    text = pipeline(level)
    build_pass_manager(text, make_context())
    assert describe(describe(text)) == describe(text)
    build_pass_manager(describe(text), make_context())


# ----------------------------------------------------------------------------- typed options


RUNS: list[tuple] = []  # what OptionsPass saw, one entry per run


@dataclass(frozen=True)
class OptionsPass(ModulePass):
    """A test pass with one option of each type; records its options in RUNS when it runs."""

    name = "dlc-test-options"
    count: int = 1
    ratio: float = 0.5
    flag: bool = False
    label: str = "none"

    def run(self, module: ir.Operation) -> None:
        RUNS.append((self.count, self.ratio, self.flag, self.label))


@dataclass(frozen=True)
class BrokenPass(ModulePass):
    """A test pass with a bug: it raises."""

    name = "dlc-test-broken"

    def run(self, module: ir.Operation) -> None:
        raise ZeroDivisionError("division by zero")


@pytest.fixture
def test_passes(monkeypatch):
    registered_passes()  # import the real passes first
    monkeypatch.setitem(registry._PASSES, OptionsPass.name, OptionsPass)
    monkeypatch.setitem(registry._PASSES, BrokenPass.name, BrokenPass)
    RUNS.clear()


def test_options_are_typed(test_passes) -> None:
    made = make_pass("dlc-test-options", "count=3 ratio=0.25 flag=true label=abc")
    assert (made.count, made.ratio, made.flag, made.label) == (3, 0.25, True, "abc")
    assert isinstance(made.count, int) and isinstance(made.ratio, float)


def test_option_defaults_and_bare_flag(test_passes) -> None:
    made = make_pass("dlc-test-options", "flag")
    assert (made.count, made.ratio, made.flag, made.label) == (1, 0.5, True, "none")


def test_options_reach_the_pass_when_it_runs(test_passes) -> None:
    with make_context():
        module = ir.Module.parse("func.func @f() { return }")
        pm = build_pass_manager("builtin.module(func.func(dlc-test-options{count=7 flag=false}))")
        pm.run(module.operation)
    assert RUNS == [(7, 0.5, False, "none")]


def test_describe_spells_out_every_option(test_passes) -> None:
    assert describe("dlc-test-options{count=7}") == (
        "builtin.module(dlc-test-options{count=7 ratio=0.5 flag=false label=none})"
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ("count=x", "option 'count' of pass 'dlc-test-options' expects int, got 'x'"),
        ("ratio=fast", "expects float"),
        ("flag=maybe", "expects bool"),
        ("nope=1", "has no option 'nope' (options: count, ratio, flag, label)"),
    ],
)
def test_bad_option_is_a_pipeline_error(test_passes, options: str, message: str) -> None:
    with pytest.raises(PipelineError, match=re.escape(message)):
        build_pass_manager(f"builtin.module(dlc-test-options{{{options}}})", make_context())


def test_unknown_option_of_a_pass_without_options() -> None:
    with pytest.raises(PipelineError, match=re.escape("pass 'dlc-verify' has no option 'x' "
                                                      "(options: none)")):
        build_pass_manager("builtin.module(dlc-verify{x=1})", make_context())


def test_unknown_option_of_an_upstream_pass() -> None:
    with pytest.raises(PipelineError, match="no such option no-such-option"):
        build_pass_manager("builtin.module(canonicalize{no-such-option=1})", make_context())


# ----------------------------------------------------------------------------- unknown passes


@pytest.mark.parametrize("text", ["builtin.module(dlc-nope)", "func.func(dlc-nope)",
                                  "dlc-verify,dlc-nope"])
def test_unknown_pass_is_named_with_the_known_ones(text: str) -> None:
    with pytest.raises(PipelineError) as caught:
        build_pass_manager(text, make_context())
    message = str(caught.value)
    assert "unknown pass 'dlc-nope'" in message
    for name in registered_passes():
        assert name in message
    assert "\n" not in message


MISSPELLED = {
    "dlc pass": ("builtin.module(dlc-canonicalise)", "unknown pass 'dlc-canonicalise'",
                 "dlc-canonicalize"),
    "upstream pass": ("builtin.module(csee)", "unknown pass 'csee'", "cse"),
    "nested upstream pass": ("builtin.module(func.func(cse,canonicalze))",
                             "unknown pass 'canonicalze'", "canonicalize"),
    "anchor": ("builtin.module(fun.func(cse))",
               "'fun.func(...)' in the pipeline names no registered operation", "func.func"),
    "upstream option": ("builtin.module(canonicalize{max-iteratons=3})",
                        "no such option max-iteratons", "max-iterations"),
    "nested upstream option": ("builtin.module(func.func(canonicalize{max-iteratons=3}))",
                               "no such option max-iteratons", "max-iterations"),
    "dlc option": ("builtin.module(dlc-split-functions{min-op=2})",
                   "pass 'dlc-split-functions' has no option 'min-op'", "min-ops"),
}


@pytest.mark.parametrize("text, message, closest", list(MISSPELLED.values()), ids=list(MISSPELLED))
def test_misspelled_name_is_a_pipeline_error_with_the_closest_name(text: str, message: str,
                                                                   closest: str) -> None:
    # the library suggests (not only dlc-opt): `dlc.compile` after `extend_stage`, plugins'
    # pipelines and the tools all report the same one line
    with pytest.raises(PipelineError) as caught:
        build_pass_manager(text, make_context())
    assert message in str(caught.value)
    assert str(caught.value).endswith(f"; did you mean '{closest}'?")
    assert "\n" not in str(caught.value)


def test_no_suggestion_when_nothing_is_close() -> None:
    with pytest.raises(PipelineError, match="unknown pass 'qqqqqq'") as caught:
        build_pass_manager("builtin.module(qqqqqq)", make_context())
    assert "did you mean" not in str(caught.value)


# ----------------------------------------------------------------------------- failures


INVALID_ADD = """
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def test_pass_failure_reports_at_the_op_location() -> None:
    # IRDL accepts the op at parse time; the shape rule is dlc-verify's.
    with make_context():
        module = ir.Module.parse(INVALID_ADD)
        pm = build_pass_manager("builtin.module(dlc-verify)")
        with pytest.raises(ir.MLIRError) as caught:
            pm.run(module.operation)
    (diagnostic,) = caught.value.error_diagnostics
    assert "'dlc.add' op shapes [2x3], [4] are not broadcast-compatible" in diagnostic.message
    assert (diagnostic.location.start_line, diagnostic.location.start_col) == (3, 8)


def test_a_bug_in_a_pass_is_a_diagnostic_not_a_crash(test_passes) -> None:
    with make_context():
        module = ir.Module.parse("func.func @f() { return }")
        pm = build_pass_manager("builtin.module(dlc-test-broken)")
        with pytest.raises(ir.MLIRError) as caught:
            pm.run(module.operation)
    messages = [d.message for d in caught.value.error_diagnostics]
    assert any("internal error in pass 'dlc-test-broken'" in m and "ZeroDivisionError" in m
               for m in messages), messages
