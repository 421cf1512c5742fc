"""The ONNX backend node test cases through `dlc.backend`, with the suite's own tolerances.

Every in-scope case (see `dlc.testing.conformance.in_scope_cases`) runs; a case listed in
expected_failures.txt must fail and any other case must pass, so the list stays true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dlc.testing.conformance import in_scope_cases, light_model_names, read_expected, run_case

EXPECTED = read_expected(str(Path(__file__).with_name("expected_failures.txt")))
CASES = in_scope_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case):
    outcome = run_case(case)
    if case.name in EXPECTED:
        assert outcome.status != "pass", (
            f"{case.name} passes now: remove it from expected_failures.txt")
        return
    assert outcome.status == "pass", f"{case.name}: {outcome.status}: {outcome.detail}"


def test_expected_failures_name_real_cases():
    unknown = sorted(set(EXPECTED) - {c.name for c in CASES} - set(light_model_names()))
    assert not unknown, f"expected_failures.txt lists unknown cases: {unknown[:10]}"
