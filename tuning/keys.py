"""The structural key of a scheduled op: what a tuning record is for.

A key is the sha256 (24 hex digits) of a canonical text naming the schedule family, the op,
its indexing maps (a named conv: its strides and dilations), the types of its operands and
results, which operands are constants (dense or splat: a constant B is transposed or packed at
compile time), the op that makes its accumulator (fill, bias broadcast) and the fused
elementwise consumer (its body's op names and its operands' types). Nothing in it depends on
SSA names, locations or the rest of the model: the same layer in two models, or in its one-op
module (`extract.py`), has one key. The CPU and dlc's version are the database's other key
columns (`database.py`).
"""

from __future__ import annotations

import hashlib
import json

from mlir import ir

from dlc.passes.codegen.fusion import epilogue, init_producer

# the attributes that tell two ops of the same types apart: a named conv's strides and
# dilations are not in its types (3x3 on 30 x 30 -> 14 x 14: stride 2, or dilation 8)
ATTRIBUTES = ("indexing_maps", "iterator_types", "strides", "dilations")


def _operand_kind(value: ir.Value) -> str:
    owner = value.owner
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "arith.constant":
        attr = owner.attributes["value"]
        return "splat" if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat else "const"
    return "value"


def _structure(op: ir.Operation | None) -> dict | None:
    """An op's name, maps, iterator types, operand/result types and body op names."""
    if op is None:
        return None
    op = op.operation
    body: list[str] = []
    for region in op.regions:
        for block in region.blocks:
            body += [o.name for o in block.operations]
    attributes = {name: str(op.attributes[name]) for name in ATTRIBUTES if name in op.attributes}
    return {"op": op.name, "attributes": attributes,
            "operands": [f"{v.type} {_operand_kind(v)}" for v in op.operands],
            "results": [str(r.type) for r in op.results], "body": body}


def structural_key(op: ir.Operation, family: str) -> str:
    """The key of scheduled op `op` of schedule family `family` (see the module docstring)."""
    text = json.dumps({"family": family, "op": _structure(op),
                       "init": _structure(init_producer(op)),
                       "epilogue": _structure(epilogue(op))}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def describe(op: ir.Operation) -> str:
    """A short human name: `linalg.matmul 128x768 * 768x3072 +fill +epilogue(7 ops)`."""
    op = op.operation
    shapes = " * ".join("x".join(str(d) for d in v.type.shape) for v in op.operands[:-1]
                        if isinstance(v.type, ir.ShapedType))
    text = f"{op.name} {shapes}"
    init = init_producer(op)
    if init is not None:
        text += f" +{init.name.removeprefix('linalg.')}"
    consumer = epilogue(op)
    if consumer is not None:
        count = sum(len(list(b.operations)) for r in consumer.regions for b in r.blocks)
        text += f" +epilogue({count} ops)"
    return text
