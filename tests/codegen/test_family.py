"""The schedule families' protocol (issue 19: families behind a typed protocol, not duck typing):
every module of `codegen.family.FAMILIES` is a `Family`, with the signatures it names, and the
table is the precedence `dlc-schedule` tries them in."""

from __future__ import annotations

import inspect

from dlc.passes.codegen import family as families
from dlc.passes.codegen import int8_matmul, matmul


def test_every_family_module_is_a_family_with_its_signatures():
    for module, threshold in families.FAMILIES:
        assert isinstance(module, families.Family), module.__name__
        assert isinstance(threshold, families.Threshold)
        for function, arity in (("match", 1), ("volume", 1), ("prepare", 1), ("lines", 3)):
            parameters = [p for p in inspect.signature(getattr(module, function)).parameters
                          .values() if p.default is inspect.Parameter.empty]
            assert len(parameters) == arity, f"{module.__name__}.{function}"


def test_a_module_without_the_four_functions_is_no_family():
    assert not isinstance(inspect, families.Family)


def test_the_integer_kernel_is_tried_before_the_f32_matmul():
    order = [module for module, _ in families.FAMILIES]
    assert order.index(int8_matmul) < order.index(matmul)
    assert len(set(order)) == len(order)
    assert [families.name(m) for m in order][:2] == ["int8_matmul", "matmul"]
