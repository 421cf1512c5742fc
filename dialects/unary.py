"""`dlc.unary`: every elementwise function of one tensor, named by its `fn` attribute.

One op for all unary math and activations (as TOSA groups them), so that the dialect stays
small and each function is one entry of `FUNCTIONS`: the element kinds it accepts, the names
of its float parameters (`params`, in that order) and whether its result is bool.

    %y = "dlc.unary"(%x) {fn = "elu", params = array<f64: 1.0>}
           : (tensor<2x3xf32>) -> tensor<2x3xf32>

The result has the operand's type, except for the predicates (`isnan`, `isinf`): bool (i1)
of the operand's shape. Element kinds: float (f16, bf16, f32, f64), signed (signless iN),
unsigned (uiN), bool (i1). Semantics are ONNX's; the lowering is in `passes/lowering/unary.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import is_bool, is_float, is_unsigned, tensor

TensorTypes = list[ir.RankedTensorType]

FLOAT = frozenset({"float"})
SIGNED = frozenset({"signed"})
UNSIGNED = frozenset({"unsigned"})
BOOL = frozenset({"bool"})
INTEGER = SIGNED | UNSIGNED
NUMERIC = FLOAT | INTEGER


@dataclass(frozen=True)
class Function:
    """What `dlc.unary {fn}` accepts: element kinds, parameter names, bool result or not."""

    kinds: frozenset[str]
    params: tuple[str, ...] = ()
    predicate: bool = False  # the result is bool (i1)


FUNCTIONS: dict[str, Function] = {
    # arithmetic
    "abs": Function(NUMERIC),
    "neg": Function(FLOAT | SIGNED),
    "sign": Function(NUMERIC),
    "reciprocal": Function(FLOAT),
    "floor": Function(FLOAT),
    "ceil": Function(FLOAT),
    "round": Function(FLOAT),  # half to even
    # exponential, logarithm, roots
    "exp": Function(FLOAT),
    "log": Function(FLOAT),
    "sqrt": Function(FLOAT),
    "erf": Function(FLOAT),
    # trigonometric and hyperbolic
    "sin": Function(FLOAT),
    "cos": Function(FLOAT),
    "tan": Function(FLOAT),
    "asin": Function(FLOAT),
    "acos": Function(FLOAT),
    "atan": Function(FLOAT),
    "sinh": Function(FLOAT),
    "cosh": Function(FLOAT),
    "tanh": Function(FLOAT),
    "asinh": Function(FLOAT),
    "acosh": Function(FLOAT),
    "atanh": Function(FLOAT),
    # activations
    "sigmoid": Function(FLOAT),
    "hard_sigmoid": Function(FLOAT, ("alpha", "beta")),
    "hard_swish": Function(FLOAT),
    "elu": Function(FLOAT, ("alpha",)),
    "selu": Function(FLOAT, ("alpha", "gamma")),
    "celu": Function(FLOAT, ("alpha",)),
    "leaky_relu": Function(FLOAT, ("alpha",)),
    "thresholded_relu": Function(FLOAT, ("alpha",)),
    "softplus": Function(FLOAT),
    "softsign": Function(FLOAT),
    "mish": Function(FLOAT),
    "gelu": Function(FLOAT),
    "gelu_tanh": Function(FLOAT),
    "swish": Function(FLOAT, ("alpha",)),
    "shrink": Function(NUMERIC, ("bias", "lambd")),
    # logic and bits
    "not": Function(BOOL),
    "bitwise_not": Function(INTEGER),
    # predicates
    "isnan": Function(FLOAT, predicate=True),
    "isinf": Function(FLOAT, ("detect_positive", "detect_negative"), predicate=True),
}


def element_kind(element: ir.Type) -> str | None:
    """float, signed, unsigned or bool; None for any other element type (index, complex...)."""
    if is_float(element):
        return "float"
    if is_bool(element):
        return "bool"
    if is_unsigned(element):
        return "unsigned"
    if isinstance(element, ir.IntegerType):
        return "signed"
    return None


def infer_unary(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    (x,) = types
    name, params = attrs["fn"], attrs["params"]
    if name not in FUNCTIONS:
        raise ShapeError(f"unknown fn '{name}' (known: {', '.join(sorted(FUNCTIONS))})")
    function = FUNCTIONS[name]
    if len(params) != len(function.params):
        wanted = ", ".join(function.params) or "none"
        raise ShapeError(f"fn '{name}' takes {len(function.params)} params ({wanted}), "
                         f"got {len(params)}")
    if element_kind(x.element_type) not in function.kinds:
        kinds = sorted(function.kinds)
        kinds = " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
        raise ShapeError(f"fn '{name}' expects a {kinds} element type, got {x.element_type}")
    if function.predicate:
        return [tensor(x.shape, ir.IntegerType.get_signless(1))]
    return [x]


UNARY = define(
    OpDef("unary", ("x",), infer_unary, {"fn": "str", "params": "floats"},
          "fn(x) elementwise: unary math and activations (see FUNCTIONS)")
)
