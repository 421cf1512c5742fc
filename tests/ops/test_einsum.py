"""Einsum against onnx.reference: contractions, transposes, diagonals, sums, ellipses (with
broadcasting), implicit outputs, three operands and integer types."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from tests.conftest import MATMUL_TOLERANCES, make_model, node_model, random_array, run_both

# name -> (equation, operand shapes)
EINSUMS = {
    "matmul": ("ij,jk->ik", [[3, 4], [4, 5]]),
    "batch matmul": ("bij, bjk -> bik", [[2, 3, 4], [2, 4, 5]]),
    "transpose": ("ij->ji", [[3, 4]]),
    "sum all": ("ij->", [[3, 4]]),
    "row sums": ("ij->i", [[3, 4]]),
    "inner product": ("i,i", [[5], [5]]),
    "outer product": ("i,j->ij", [[3], [4]]),
    "trace": ("ii", [[4, 4]]),
    "batch diagonal": ("...ii->...i", [[2, 3, 3]]),
    "implicit output": ("ba,cb", [[3, 4], [2, 3]]),
    "ellipsis broadcast": ("...ij,...jk->...ik", [[2, 1, 3, 4], [1, 5, 4, 2]]),
    "ellipsis in the middle": ("i...k,k->...i", [[2, 3, 4], [4]]),
    "three operands": ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]]),
    "three operands implicit": ("ab,bc,cd", [[2, 3], [3, 4], [4, 2]]),
}


@pytest.mark.parametrize("case", list(EINSUMS.values()), ids=list(EINSUMS))
def test_einsum(case):
    equation, shapes = case
    inputs = [random_array(s, np.float32, seed=i) for i, s in enumerate(shapes)]
    outputs = run_both(node_model("Einsum", inputs, opset=12, equation=equation), inputs,
                       tolerances=MATMUL_TOLERANCES)
    expected = np.einsum(equation.replace(" ", ""), *inputs)
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_einsum_dtypes(dtype):
    inputs = [random_array([2, 3], dtype, seed=1), random_array([3, 2], dtype, seed=2)]
    tolerances = {**MATMUL_TOLERANCES, np.dtype(np.float16): (2e-2, 2e-2)}
    run_both(node_model("Einsum", inputs, equation="ij,jk->ik"), inputs, tolerances=tolerances)


def test_einsum_letter_size_mismatch_names_the_node():
    node = helper.make_node("Einsum", ["a", "b"], ["y"], name="bad_einsum", equation="ij,jk->ik")
    model = make_model([node], {"a": (np.float32, [2, 3]), "b": (np.float32, [4, 5])},
                       {"y": (np.float32, [2, 5])}, check=False)
    with pytest.raises(dlc.FrontendError, match=r"bad_einsum.*letter 'j' has sizes 3 and 4"):
        dlc.compile(model)


def test_einsum_term_count_mismatch():
    node = helper.make_node("Einsum", ["a"], ["y"], name="bad_terms", equation="ij,jk->ik")
    model = make_model([node], {"a": (np.float32, [2, 3])}, {"y": (np.float32, [2, 3])},
                       check=False)
    with pytest.raises(dlc.FrontendError, match=r"bad_terms.*2 input terms for 1 operands"):
        dlc.compile(model)
