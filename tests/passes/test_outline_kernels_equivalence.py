"""dlc-outline-kernels' deduplication (issue 20): kernels equal but for their names and
locations are one function; kernels that differ in anything else (an attribute, a type, a
constant, the order of operands) are not merged. Each case is a loop over a view of the arena
that the pass outlines, in a `main` of several of them; what is checked is which kernel each
call calls."""

from __future__ import annotations

import re

import pytest
from mlir import ir

from dlc.dialects import make_context
from dlc.passes import build_pass_manager

# the body of a loop reading %a (x[i]) and %b (w[i]) and storing %s; the variants differ from
# ADD in one thing each
ADD = "%s = arith.addf %a, %b : f32"
BODIES = {
    "add": ADD,
    "attribute": "%s = arith.addf %a, %b fastmath<fast> : f32",
    "type": "%e = arith.fptosi %a : f32 to i64\n    %s = arith.sitofp %e : i64 to f32",
    "type'": "%e = arith.fptosi %a : f32 to i32\n    %s = arith.sitofp %e : i32 to f32",
    "constant": "%s = arith.mulf %a, %one : f32",
    "constant'": "%s = arith.mulf %a, %two : f32",
    "order": "%s = arith.subf %a, %b : f32",
    "order'": "%s = arith.subf %b, %a : f32",
}


def function(name: str, bodies: list[str]) -> str:
    """func `name` of one loop per body, each writing a view of the arena of its own (at
    another offset: the arguments differ, the kernels may not)."""
    lines = [f"func.func @{name}(%x: memref<4xf32>, %w: memref<4xf32>) {{",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             "  %c4 = arith.constant 4 : index",
             "  %one = arith.constant 1.0 : f32", "  %two = arith.constant 2.0 : f32",
             "  %arena = memref.get_global @arena : memref<64xi8>"]
    for k, body in enumerate(bodies):
        lines += [f"  %o{k} = arith.constant {16 * k} : index",
                  f"  %y{k} = memref.view %arena[%o{k}][] : memref<64xi8> to memref<4xf32>",
                  "  scf.for %i = %c0 to %c4 step %c1 {",
                  "    %a = memref.load %x[%i] : memref<4xf32>",
                  "    %b = memref.load %w[%i] : memref<4xf32>",
                  f"    {body}",
                  f"    memref.store %s, %y{k}[%i] : memref<4xf32>",
                  "  }"]
    return "\n".join([*lines, "  return", "}"])


def outline(*functions: tuple[str, list[str]], extra: str = "") -> str:
    """The module of `functions` (name, bodies) after dlc-outline-kernels, verified."""
    text = "\n".join(['memref.global "private" @arena : memref<64xi8> = uninitialized', extra,
                      *(function(name, [BODIES[b] for b in bodies])
                        for name, bodies in functions)])
    with make_context():
        module = ir.Module.parse(text)
        build_pass_manager("builtin.module(dlc-outline-kernels)").run(module.operation)
        module.operation.verify()
        return str(module)


def calls(text: str, name: str) -> list[str]:
    """The kernels function `name` calls, in order."""
    body = text[text.index(f"func.func @{name}("):]
    body = body[:body.index("\n  }\n")]
    return re.findall(r"call @(\w+)\(", body)


def defined(text: str) -> list[str]:
    """The kernels the module defines (not declares), in order."""
    return re.findall(r"^  func\.func private @(\w+__kernel\d+)\(.*\{$", text, re.MULTILINE)


def test_identical_kernels_are_one() -> None:
    text = outline(("main", ["add", "add", "add"]))
    assert calls(text, "main") == ["main__kernel0"] * 3
    assert defined(text) == ["main__kernel0"]


@pytest.mark.parametrize("variant", ["attribute", "type", "constant", "order"])
def test_a_kernel_that_differs_in_one_thing_is_another(variant: str) -> None:
    text = outline(("main", ["add", variant, "add", variant]))
    assert calls(text, "main") == ["main__kernel0", "main__kernel1"] * 2
    assert defined(text) == ["main__kernel0", "main__kernel1"]


@pytest.mark.parametrize("first, second", [("type", "type'"), ("constant", "constant'"),
                                           ("order", "order'")])
def test_kernels_of_the_same_ops_differing_in_one_thing_are_two(first: str,
                                                                second: str) -> None:
    text = outline(("main", [first, second, second, first]))
    assert calls(text, "main") == ["main__kernel0", "main__kernel1", "main__kernel1",
                                   "main__kernel0"]


def test_kernels_are_numbered_in_order_of_first_occurrence_skipping_taken_names() -> None:
    taken = "func.func private @main__kernel1()"
    text = outline(("main", ["order", "add", "order", "attribute", "add"]), extra=taken)
    assert calls(text, "main") == ["main__kernel0", "main__kernel2", "main__kernel0",
                                   "main__kernel3", "main__kernel2"]
    assert defined(text) == ["main__kernel0", "main__kernel2", "main__kernel3"]


def test_a_kernel_of_another_function_is_shared() -> None:
    text = outline(("main", ["add", "order"]), ("other", ["order", "attribute"]))
    assert calls(text, "main") == ["main__kernel0", "main__kernel1"]
    assert calls(text, "other") == ["main__kernel1", "other__kernel0"]
    assert defined(text) == ["main__kernel0", "main__kernel1", "other__kernel0"]
