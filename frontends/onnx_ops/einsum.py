"""Importer of Einsum (opset 12+) onto dlc.einsum.

One or two operands: the equation is passed through unchanged. More operands: the equation gets
its explicit output term, then operands are contracted pairwise, left to right; each partial
result keeps `...` and the letters that a later term or the output still uses.
"""

from __future__ import annotations

from mlir import ir

from dlc.dialects import einsum as einsum_ops
from dlc.frontends.onnx_node import Importer, NodeContext


def import_einsum(n: NodeContext) -> list[ir.Value]:
    equation = n.attr("equation")
    if equation is None:
        raise n.error("needs the equation attribute")
    equation = equation.decode() if isinstance(equation, bytes) else str(equation)
    operands = [v for v in n.inputs if v is not None]
    if len(operands) <= 2:
        return [n.build(einsum_ops.EINSUM, operands, {"equation": equation})]
    # einsum(a, b, c, ...) -> einsum(einsum(a, b), c, ...), keeping the letters still needed
    terms, output = _explicit(equation.replace(" ", ""))
    if len(terms) != len(operands):
        raise n.error(f"equation '{equation}' has {len(terms)} input terms for "
                      f"{len(operands)} operands")
    value, term = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = "".join(terms[i + 1:]) + output
        letters = dict.fromkeys(c for c in term + terms[i] if c.isalpha() and c in later)
        ellipsis = "..." if "..." in term + terms[i] else ""
        partial = output if i == len(operands) - 1 else ellipsis + "".join(letters)
        step = f"{term},{terms[i]}->{partial}"
        value, term = n.build(einsum_ops.EINSUM, [value, operands[i]], {"equation": step}), partial
    return [value]


def _explicit(equation: str) -> tuple[list[str], str]:
    """(input terms, output term): the implicit output is `...` and the once-used letters."""
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if arrow:
        return terms, rhs
    letters = "".join(terms).replace("...", "")
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return terms, ("..." if "..." in lhs else "") + "".join(once)


IMPORTERS: dict[str, Importer] = {"Einsum": import_einsum}
