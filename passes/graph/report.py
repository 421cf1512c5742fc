"""What `dlc compile --stats` and `--emit=dot` show of a dlc graph.

- `op_counts(module)`: how many of each dlc op (a `Counter` by op name).
- `memory_plan(module)`: the intermediate tensors of each function (results of non-constant
  dlc ops that are not returned: outputs live in caller-allocated buffers), their live ranges
  in program order, and three figures: the sum of their sizes (one buffer each, nothing
  reused), the peak of the bytes live at once (what reusing dead buffers can reach at best),
  and the arena a static planner needs: each tensor gets an offset, first fit, largest first,
  never overlapping a tensor live at the same time (TFLite's and TVM's greedy arena planning).
  bool tensors count one byte per element, as dlc stores them.
- `to_dot(module)`: a Graphviz picture of the graph (node labels: op, result shape).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import op_def, ops
from dlc.passes.graph.match import dtype_of, functions


def op_counts(module: ir.Operation) -> Counter:
    counts: Counter = Counter()
    for block in functions(module):
        for op in block.operations:
            if op_def(op) is not None:
                counts[op.operation.name] += 1
    return counts


def format_counts(before: Counter, after: Counter) -> list[str]:
    """Rows `op  before  after` (every op of either), then the totals."""
    rows = [f"{'op':<24}{'before':>8}{'after':>8}"]
    for name in sorted(set(before) | set(after), key=lambda n: (-before[n], n)):
        rows.append(f"{name:<24}{before[name]:>8}{after[name]:>8}")
    rows.append(f"{'total':<24}{sum(before.values()):>8}{sum(after.values()):>8}")
    return rows


@dataclass(frozen=True)
class Buffer:
    nbytes: int
    first: int  # index of the op that defines it
    last: int  # index of the last op that reads it


@dataclass(frozen=True)
class MemoryPlan:
    buffers: list[Buffer]
    total_bytes: int  # no reuse: one buffer per intermediate tensor
    peak_bytes: int  # the most bytes live at once
    arena_bytes: int  # the planned arena (first fit, largest first)
    offsets: list[int]


def nbytes(t: ir.Type) -> int:
    """The bytes of a static shaped type (tensor or memref); 8 per element of a type numpy
    has no dtype for (index)."""
    dtype = dtype_of(t.element_type)
    itemsize = 8 if dtype is None else max(1, dtype.itemsize)
    return int(np.prod(t.shape, dtype=np.int64)) * itemsize


def _buffers(block: ir.Block) -> list[Buffer]:
    operations = [op.operation for op in block.operations]
    last_use: dict = {}
    for i, op in enumerate(operations):
        for value in op.operands:
            last_use[value] = i
    returned = set(operations[-1].operands) if operations else set()
    buffers = []
    for i, op in enumerate(operations):
        if op_def(op) is None or op.name == ops.CONSTANT.name:
            continue
        for result in op.results:
            if result in returned or not isinstance(result.type, ir.RankedTensorType):
                continue
            buffers.append(Buffer(nbytes(result.type), i, max(i, last_use.get(result, i))))
    return buffers


def _overlap(a: Buffer, b: Buffer) -> bool:
    return a.first <= b.last and b.first <= a.last


def plan(buffers: list[Buffer]) -> list[int]:
    """An offset per buffer: first fit in order of decreasing size, live buffers disjoint."""
    offsets = [0] * len(buffers)
    placed: list[int] = []
    for i in sorted(range(len(buffers)), key=lambda k: -buffers[k].nbytes):
        taken = sorted((offsets[j], offsets[j] + buffers[j].nbytes) for j in placed
                       if _overlap(buffers[i], buffers[j]))
        offset = 0
        for start, end in taken:
            if offset + buffers[i].nbytes <= start:
                break
            offset = max(offset, end)
        offsets[i] = offset
        placed.append(i)
    return offsets


def memory_plan(module: ir.Operation) -> MemoryPlan:
    """The intermediate buffers of every function of `module` and their static plan."""
    buffers = [b for block in functions(module) for b in _buffers(block)]
    steps = max((b.last for b in buffers), default=-1) + 1
    live = np.zeros(steps + 1, dtype=np.int64)
    for b in buffers:
        live[b.first:b.last + 1] += b.nbytes
    offsets = plan(buffers)
    arena = max((o + b.nbytes for o, b in zip(offsets, buffers)), default=0)
    return MemoryPlan(buffers, sum(b.nbytes for b in buffers), int(live.max(initial=0)),
                      arena, offsets)


def format_memory(memory: MemoryPlan) -> list[str]:
    def mib(n: int) -> str:
        return f"{n / 2**20:.2f} MiB ({n} bytes)"

    return [f"intermediate tensors: {len(memory.buffers)}",
            f"sum of intermediate tensors (no reuse): {mib(memory.total_bytes)}",
            f"peak live intermediate bytes: {mib(memory.peak_bytes)}",
            f"static plan (arena, first fit): {mib(memory.arena_bytes)}"]


def _label(op: ir.Operation) -> str:
    name = op.name
    if "fn" in op.attributes:
        name += f" {ir.StringAttr(op.attributes['fn']).value}"
    shapes = ", ".join("x".join(str(d) for d in r.type.shape) or "scalar" for r in op.results)
    return f"{name}\\n{shapes}"


_NAME = re.compile(r'^loc\("([^"]*)"(?!:)')  # a name location, not a file:line:col one


def _node_name(op: ir.Operation) -> str:
    """The ONNX node name of an op's location (`loc("name")`, `loc("name"(...))`), or ""."""
    match = _NAME.match(str(op.location))
    return match[1] if match else ""


def _group(name: str) -> str:
    """The cluster of an ONNX node name: the first two parts of a module path
    (`/layer1/layer1.0/conv1/Conv` -> `/layer1/layer1.0`), "" for flat names."""
    parts = name.split("/")
    return "/".join(parts[:3]) if name.startswith("/") and len(parts) > 3 else ""


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(module: ir.Operation) -> str:
    """The dlc graph of each function as Graphviz text, readable on real models: each op
    labelled with its ONNX node name and result shapes, top to bottom; constants not drawn as
    nodes (whose edges would cross the graph) but listed in their users' labels; ops of one
    module path (`/layer1/layer1.0/...`) in one cluster."""
    lines = ["digraph dlc {", "  rankdir=TB; newrank=true;",
             "  node [shape=box, style=rounded, fontname=monospace, fontsize=10];"]
    names: dict = {}
    constants: dict = {}
    for f, block in enumerate(functions(module)):
        clusters: dict[str, list[str]] = {}
        for a, argument in enumerate(block.arguments):
            names[argument] = f"f{f}_arg{a}"
            shape = "x".join(str(d) for d in argument.type.shape)
            lines.append(f'  f{f}_arg{a} [shape=ellipse, style=solid, '
                         f'label="input {a}\\n{shape}"];')
        for i, op in enumerate(block.operations):
            op = op.operation
            if op.name == ops.CONSTANT.name:
                shape = "x".join(str(d) for d in op.results[0].type.shape) or "scalar"
                constants[op.results[0]] = f"const {shape}"
                continue
            node = f"f{f}_op{i}"
            label = _label(op) if op_def(op) is not None else op.name
            name = _node_name(op)
            if name:
                label = f"{_quote(name)}\\n{label}"
            operands = [constants[v] for v in op.operands if v in constants]
            if operands:
                label += "\\n" + ", ".join(operands[:3]) + (" ..." if len(operands) > 3 else "")
            if op.name == "func.return":
                lines.append(f'  {node} [shape=ellipse, style=solid, label="outputs"];')
            else:
                lines.append(f'  {node} [label="{label}"];')
            clusters.setdefault(_group(name), []).append(node)
            for value in op.operands:
                if value in names:
                    lines.append(f"  {names[value]} -> {node};")
            for result in op.results:
                names[result] = node
        for c, (group, members) in enumerate(sorted(clusters.items())):
            if group and len(members) > 1:
                lines.append(f'  subgraph cluster_f{f}_{c} {{ label="{_quote(group)}"; '
                             f'style=dashed; {"; ".join(members)}; }}')
    lines.append("}")
    return "\n".join(lines) + "\n"
