"""dlc-einsum-matmul: two-operand f32 einsums that are matrix products run as one dlc.matmul
(the matmul schedule, no NaivePathWarning), with numpy's numbers; the einsums it must leave
keep their `dlc.einsum` (and stay correct)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.passes.buffer.profile import NaivePathWarning
from tests.conftest import make_model


def _einsum(equation: str, a_shape: list[int], b_shape: list[int] | None):
    names = ["a"] + (["b"] if b_shape is not None else [])
    shapes = {"a": (np.float32, a_shape)}
    if b_shape is not None:
        shapes["b"] = (np.float32, b_shape)
    model = make_model([helper.make_node("Einsum", names, ["y"], equation=equation)], shapes,
                       ["y"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dlc.compile(model, num_threads=1)
    naive = [w for w in caught if issubclass(w.category, NaivePathWarning)]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(shapes[n][1]).astype(np.float32) for n in names]
    (y,) = compiled(*inputs)
    expected = np.einsum(equation, *[x.astype(np.float64) for x in inputs])
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    return compiled.ir("dlc"), naive


@pytest.mark.parametrize("equation, a, b", [
    ("ik,kj->ij", [128, 256], [256, 96]),                       # a matmul
    ("ij,kj->ik", [64, 80], [48, 80]),                          # B transposed
    ("ki,kj->ij", [80, 64], [80, 48]),                          # A transposed
    ("bik,bkj->bij", [8, 64, 64], [8, 64, 64]),                 # batched
    ("bhid,bhjd->bhij", [1, 16, 49, 32], [1, 16, 49, 32]),      # attention scores
    ("bhij,bhjd->bhid", [1, 16, 49, 49], [1, 16, 49, 32]),      # attention values
    ("bnhid,bnhjd->bnhij", [1, 64, 2, 49, 32], [1, 64, 2, 49, 32]),  # MaxViT's 5-D form
    ("ijk,jkl->il", [16, 8, 12], [8, 12, 24]),                  # two summed letters
    ("bij,jk->bik", [4, 30, 40], [40, 50]),                     # batch on one side only: M
    ("...ij,...jk->...ik", [2, 3, 20, 30], [2, 3, 30, 10]),     # ellipsis batch
    ("abc,cbd->dab", [6, 5, 7], [7, 5, 9]),                     # output reordered
    ("i,i->", [300], [300]),                                    # a dot product
])
def test_matrix_products_become_one_matmul(equation, a, b):
    text, naive = _einsum(equation, a, b)
    assert '"dlc.einsum"' not in text and text.count('"dlc.matmul"') == 1
    assert not naive


@pytest.mark.parametrize("why, equation, a, b", [
    ("one operand", "ij->ji", [16, 24], None),
    ("a diagonal", "ii,ij->ij", [16, 16], [16, 24]),
    ("an outer product: no summed letter", "i,j->ij", [16], [24]),
    ("a letter summed in one operand only", "ik,kj->j", [16, 24], [24, 8]),
    ("a broadcast size-1 ellipsis axis", "...ij,...jk->...ik", [1, 8, 16], [3, 16, 8]),
])
def test_other_einsums_stay_einsums(why, equation, a, b):
    text, _ = _einsum(equation, a, b)
    assert '"dlc.einsum"' in text, why
