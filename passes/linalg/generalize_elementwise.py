"""dlc-generalize-elementwise: named elementwise linalg ops become linalg.generic.

    linalg.add ins(%a, %b) outs(%e)  ->  linalg.generic {parallel...} { arith.addf }

dlc-to-linalg lowers an add, sub, mul, div, max, min or pow of equal shapes to the named linalg
op (readable at the linalg stage), but `linalg-fuse-elementwise-ops` fuses only generics: a
residual add between a conv and its relu would stay a separate pass over the tensor, and the
elementwise schedule (which matches generics) would not vectorize it. At -O2/-O3 this pass runs
right before that fusion. Contractions, convolutions and pooling stay named: the schedules
match them by name. Implemented as a one-op transform script (`transform.structured.generalize`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects.transform import interpreter

from dlc.passes.registry import ModulePass, register

ELEMENTWISE = ("linalg.add", "linalg.sub", "linalg.mul", "linalg.div", "linalg.div_unsigned",
               "linalg.max", "linalg.min", "linalg.powf", "linalg.exp", "linalg.log",
               "linalg.abs", "linalg.ceil", "linalg.floor", "linalg.negf", "linalg.reciprocal",
               "linalg.round", "linalg.sqrt", "linalg.rsqrt", "linalg.square", "linalg.tanh",
               "linalg.erf", "linalg.select", "linalg.elementwise")
ANY = "!transform.any_op"
SCRIPT = f"""
module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}}) {{
    %ops = transform.structured.match ops{{[{", ".join(f'"{n}"' for n in ELEMENTWISE)}]}}
      in %root : ({ANY}) -> {ANY}
    %generic = transform.structured.generalize %ops : ({ANY}) -> {ANY}
    transform.yield
  }}
}}
"""


@register
@dataclass(frozen=True)
class GeneralizeElementwise(ModulePass):
    """Rewrite named elementwise linalg ops (linalg.add, linalg.max...) as linalg.generic."""

    name = "dlc-generalize-elementwise"

    def run(self, module: ir.Operation) -> None:
        script = ir.Module.parse(SCRIPT)
        interpreter.apply_named_sequence(module, script.body.operations[0], script)
