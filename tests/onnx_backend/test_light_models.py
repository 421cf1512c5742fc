"""The 9 'light' model-zoo models shipped in the onnx package, through `dlc.backend`.

Inputs come from `Runner.generate_dummy_data(x, seed=0, random=False)`, as in onnx's own
backend test runner; outputs must match the stored `<model>_output_0.pb` within the runner's
default tolerances (rtol 1e-3, atol 1e-7). A model listed in expected_failures.txt must fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dlc.testing.conformance import light_model_names, read_expected, run_light

MODELS = light_model_names()
EXPECTED = read_expected(str(Path(__file__).with_name("expected_failures.txt")))


def test_all_nine_light_models_are_found():
    assert len(MODELS) == 9, MODELS


@pytest.mark.parametrize("name", MODELS)
def test_light_model(name):
    outcome = run_light(name)
    if name in EXPECTED:
        assert outcome.status != "pass", f"{name} passes now: remove it from the list"
        return
    assert outcome.status == "pass", f"{name}: {outcome.status}: {outcome.detail}"
