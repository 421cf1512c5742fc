"""dlc.einsum: ONNX Einsum (numpy einsum) of one or two operands of one numeric type.

(Two at most: IRDL gives a variadic operand one type constraint, which would force all operands
to the same shape; the importer chains Einsums of more operands pairwise.)

The `equation` is ONNX's: comma-separated input terms of letters, at most one `...` per term
(the broadcast batch axes, numpy rules), an optional `-> output term`; without it the output is
`...` followed by the letters used exactly once, in alphabetical order. A letter repeated inside
one term reads that term's diagonal. Every letter not in the output is summed over.

`plan(equation, shapes)` resolves an equation against operand shapes into loop indices; the
shape inference and the lowering (one linalg.generic) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlir import ir

from dlc.dialects.core import OpDef, ShapeError, define
from dlc.dialects.ops import TensorTypes, broadcast_shapes, numeric_element_type, tensor


@dataclass(frozen=True)
class Plan:
    """Loop indices: `inputs[i][axis]` is operand i's loop index (None: a broadcast size-1
    axis read at 0), `output` the result's, `sizes` each loop's extent (output loops first)."""

    inputs: list[list[int | None]]
    output: list[int]
    sizes: list[int]


def _terms(equation: str, count: int) -> tuple[list[str], str | None]:
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        raise ShapeError(f"equation '{equation}' has {len(terms)} input terms for "
                         f"{count} operands")
    for term in [*terms, rhs]:
        rest = term.replace("...", "", 1)
        if not all(c.isalpha() for c in rest):
            raise ShapeError(f"term '{term}' of equation '{equation}' must be letters and at "
                             "most one '...'")
    return terms, (rhs if arrow else None)


def plan(equation: str, shapes: list[list[int]]) -> Plan:
    terms, output = _terms(equation, len(shapes))
    sizes: dict[str, int] = {}
    ellipses: list[list[int]] = []
    for term, shape in zip(terms, shapes):
        letters = term.replace("...", "")
        ellipsis_rank = len(shape) - len(letters)
        if ellipsis_rank < 0 or ("..." not in term and ellipsis_rank):
            raise ShapeError(f"term '{term}' does not match an operand of rank {len(shape)}")
        start = term.find("...")
        explicit = shape if start < 0 else shape[:start] + shape[start + ellipsis_rank:]
        ellipses.append(shape[start:start + ellipsis_rank] if start >= 0 else [])
        for letter, size in zip(letters, explicit):
            if sizes.setdefault(letter, size) != size:
                raise ShapeError(f"letter '{letter}' has sizes {sizes[letter]} and {size}")
    batch = broadcast_shapes(*ellipses) if any(ellipses) else []
    if output is None:
        once = sorted(c for c in sizes if "".join(terms).count(c) == 1)
        output = ("..." if batch else "") + "".join(once)
    out_letters = output.replace("...", "")
    if len(set(out_letters)) != len(out_letters) or any(c not in sizes for c in out_letters):
        raise ShapeError(f"output term '{output}' must use distinct letters of the inputs")
    if batch and "..." not in output:
        raise ShapeError("an equation with '...' inputs needs '...' in its output term")
    # loops: output axes (batch axes where '...' stands), then the summed letters
    batch_loops = [f"...{i}" for i in range(len(batch))]
    start = output.find("...")
    out_names = list(out_letters) if start < 0 else \
        list(output[:start]) + batch_loops + list(output[start + 3:])
    names = out_names + sorted(set(sizes) - set(out_letters))
    index = {name: i for i, name in enumerate(names)}
    extent = {**sizes, **dict(zip(batch_loops, batch))}
    inputs = []
    for term, shape, ell in zip(terms, shapes, ellipses):
        start = term.find("...")
        offset = len(batch) - len(ell)
        ell_loops = [None if size == 1 and batch[offset + i] != 1 else index[f"...{offset + i}"]
                     for i, size in enumerate(ell)]
        if start < 0:
            inputs.append([index[c] for c in term])
        else:
            inputs.append([index[c] for c in term[:start]] + ell_loops
                          + [index[c] for c in term[start + 3:]])
    return Plan(inputs, list(range(len(out_names))), [extent[n] for n in names])


def infer_einsum(types: TensorTypes, attrs: dict[str, Any]) -> list[ir.Type]:
    if not types:
        raise ShapeError("needs at least one operand")
    element = numeric_element_type(types)
    p = plan(attrs["equation"], [list(t.shape) for t in types])
    return [tensor([p.sizes[i] for i in p.output], element)]


EINSUM = define(OpDef("einsum", ("a", "b?"), infer_einsum, {"equation": "str"},
                      "numpy einsum: products of the operands summed over unlisted letters"))
