"""Importers of the ONNX control-flow ops If, Loop and Scan, resolved at compile time.

Shapes are static, so dlc compiles control flow by specializing it at import time:
- If with a condition known at compile time imports only the branch taken; with a runtime
  condition both branches are imported and each output is a `dlc.select` between them (both
  are side-effect free), which requires the branches to give the same types.
- Loop needs a trip count (or a condition) known at compile time and is unrolled: each
  iteration imports the body with the iteration number and the condition as constants. A
  condition the body computes at run time is refused with a clear message.
- Scan is unrolled over its sequence axis (opset 8's batch axis too): each step imports the
  body on slices of the scan inputs; scan outputs are stacked with `dlc.concat`.
Unrolling is bounded by MAX_ITERATIONS so that a huge loop is an error, not a hang.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.binary import SELECT
from dlc.dialects.movement import CONCAT, SLICE
from dlc.frontends.onnx_importer import Body, import_subgraph
from dlc.frontends.onnx_node import NodeContext, dense

MAX_ITERATIONS = 1024


def _slice_at(n: NodeContext, x: ir.Value, axis: int, index: int) -> ir.Value:
    # x[..., index, ...] along axis, the axis dropped
    shape = list(x.type.shape)
    starts, sizes = [0] * len(shape), list(shape)
    starts[axis], sizes[axis] = index, 1
    part = n.build(SLICE, [x], {"starts": starts, "sizes": sizes, "steps": [1] * len(shape)})
    return n.build(ops.RESHAPE, [part], {"shape": shape[:axis] + shape[axis + 1:]})


def _stack(n: NodeContext, values: list[ir.Value], axis: int) -> ir.Value:
    # values [...] -> [..., len(values) at axis, ...]
    expanded = []
    for value in values:
        shape = list(value.type.shape)
        expanded.append(n.build(ops.RESHAPE, [value], {"shape": shape[:axis] + [1] +
                                                       shape[axis:]}))
    result = expanded[0]
    for value in expanded[1:]:
        result = n.build(CONCAT, [result, value], {"axis": axis})
    return result


def _constant(n: NodeContext, array: np.ndarray) -> ir.Value:
    return n.build(ops.CONSTANT, [], {"value": dense(array, n)})


def _check_body_outputs(n: NodeContext, body, fixed: int, what: str) -> None:
    """The body gives at least its `fixed` outputs (`what`), then scan outputs; the node has
    as many outputs as it gives past the first `fixed - len(states)` (Loop's condition)."""
    given = len(body.output)
    if given < fixed:
        raise n.error(f"the body has {given} outputs, expected at least {fixed} ({what})")
    states = fixed - 1 if n.node.op_type == "Loop" else fixed
    if len(n.node.output) > given - (fixed - states):
        raise n.error(f"the node has {len(n.node.output)} outputs, but its body gives "
                      f"{states} final values and {given - fixed} scan outputs")


def _single(n: NodeContext, value, what: str):
    """The one element of a constant condition or count (any shape of one element)."""
    array = np.asarray(value)
    if array.size != 1:
        raise n.error(f"{what} must hold one value, got shape {list(array.shape)}")
    return array.reshape(-1)[0]


def _body_names(graph) -> list[str]:
    return [v.name for v in graph.input]


# ----------------------------------------------------------------------------- If


def import_if(n: NodeContext) -> list[ir.Value]:
    cond = n.inputs[0]
    branches = {"then": n.attr("then_branch"), "else": n.attr("else_branch")}
    if any(b is None for b in branches.values()):
        raise n.error("needs both then_branch and else_branch")
    counts = {k: len(b.output) for k, b in branches.items()}
    if any(count != len(n.node.output) for count in counts.values()):
        # (zip() dropped the outputs one branch has and the other has not)
        raise n.error(f"then_branch has {counts['then']} outputs and else_branch "
                      f"{counts['else']}; the node has {len(n.node.output)}")
    name = n.node.input[0]
    if name in n.constants:  # import only the branch taken
        taken = "then" if bool(_single(n, n.constants[name], "the condition")) else "else"
        body = import_subgraph(branches[taken], n, {})
        for output, known in zip(n.node.output, body.constants):
            if output and known is not None:  # later shape math may fold through the If
                n.constants[output] = known
        return body.values
    then_values = import_subgraph(branches["then"], n, {}).values
    else_values = import_subgraph(branches["else"], n, {}).values
    results = []
    for i, (a, b) in enumerate(zip(then_values, else_values)):
        if a.type != b.type:
            raise n.error(f"output {i} is {a.type} in then_branch and {b.type} in else_branch; "
                          "with a condition known only at run time dlc needs equal types")
        flag = n.build(ops.RESHAPE, [cond], {"shape": [1] * a.type.rank}) \
            if cond.type.rank != a.type.rank else cond
        results.append(n.build(SELECT, [flag, a, b]))
    return results


# ----------------------------------------------------------------------------- Loop


def _trip_count(n: NodeContext) -> int | None:
    if not n.node.input or not n.node.input[0]:
        return None
    count = int(_single(n, n.constant_input(0, "trip count M"), "the trip count M"))
    if count > MAX_ITERATIONS:
        raise n.error(f"a trip count of {count} is more than the {MAX_ITERATIONS} iterations "
                      "dlc unrolls")
    return max(count, 0)


def _initial_condition(n: NodeContext) -> bool:
    if len(n.node.input) < 2 or not n.node.input[1]:
        return True
    return bool(_single(n, n.constant_input(1, "condition"), "the condition"))


def import_loop(n: NodeContext) -> list[ir.Value]:
    body = n.attr("body")
    names = _body_names(body)
    carried = list(n.inputs[2:])
    if len(names) != 2 + len(carried):
        raise n.error(f"the body takes {len(names)} inputs, expected {2 + len(carried)} "
                      "(iteration number, condition, loop-carried values)")
    _check_body_outputs(n, body, 1 + len(carried), "the condition and the loop-carried values")
    count = _trip_count(n)
    condition = _initial_condition(n)
    if count is None and not condition:
        count = 0
    scans: list[list[ir.Value]] = []
    i = 0
    while condition and (count is None or i < count):
        if i >= MAX_ITERATIONS:
            raise n.error(f"the loop runs more than the {MAX_ITERATIONS} iterations dlc unrolls")
        number = np.array(i, dtype=np.int64)
        flag = np.array(True)
        bindings = {names[0]: _constant(n, number), names[1]: _constant(n, flag)}
        bindings.update(zip(names[2:], carried))
        result: Body = import_subgraph(body, n, bindings, {names[0]: number, names[1]: flag})
        known = result.constants[0]
        if known is None:
            raise n.error("the body computes its condition at run time; dlc unrolls loops "
                          "whose condition is known at compile time")
        condition = bool(_single(n, known, "the body's condition output"))
        carried = result.values[1:1 + len(carried)]
        scans.append(result.values[1 + len(carried):])
        i += 1
    n_scans = len(body.output) - 1 - len(carried)
    if n_scans and not scans:
        raise n.error("a loop with scan outputs must run at least once (the shape of its "
                      "empty scan outputs is unknown)")
    stacked = [_stack(n, [step[k] for step in scans], 0) for k in range(n_scans)]
    return carried + stacked


# ----------------------------------------------------------------------------- Scan


def _axes(n: NodeContext, name: str, count: int, ranks: list[int]) -> list[int]:
    """Attribute `name`: one axis per scan input or output (default 0), made non-negative."""
    values = [int(a) for a in n.attr(name, [])] or [0] * count
    if len(values) != count:
        raise n.error(f"{name} {values} must hold {count} values, one per scan "
                      f"{'input' if 'input' in name else 'output'}")
    for a, r in zip(values, ranks):
        if not -r <= a < r:
            raise n.error(f"{name} {values}: axis {a} is out of range [{-r}, {r}) for a "
                          f"rank-{r} {'input' if 'input' in name else 'output'}")
    return [a + r if a < 0 else a for a, r in zip(values, ranks)]


def _directions(n: NodeContext, name: str, count: int) -> list[int]:
    """Attribute `name`: 0 (forward) or 1 (reverse) per scan input or output."""
    values = [int(d) for d in n.attr(name, [])] or [0] * count
    if len(values) != count or any(d not in (0, 1) for d in values):
        raise n.error(f"{name} {values} must hold {count} values, each 0 (forward) or 1 "
                      "(reverse)")
    return values


def _scan_input_count(n: NodeContext, available: int) -> int:
    m = int(n.attr("num_scan_inputs"))
    if not 1 <= m <= available:
        raise n.error(f"num_scan_inputs {m} must be in [1, {available}] (the node has "
                      f"{available} state and scan inputs)")
    return m


def _scan_steps(n: NodeContext, states: list[ir.Value], inputs: list[ir.Value],
                in_axes: list[int], in_dirs: list[int], body) -> tuple[list, list]:
    """Run the body over the scan steps: the final states and each step's scan outputs."""
    names = _body_names(body)
    lengths = {x.type.shape[a] for x, a in zip(inputs, in_axes)}
    if len(lengths) != 1:
        raise n.error(f"scan inputs have different sequence lengths {sorted(lengths)}")
    length = lengths.pop()
    if length > MAX_ITERATIONS:
        raise n.error(f"a sequence of {length} steps is more than the {MAX_ITERATIONS} "
                      "dlc unrolls")
    steps = []
    for t in range(length):
        slices = [_slice_at(n, x, a, length - 1 - t if d else t)
                  for x, a, d in zip(inputs, in_axes, in_dirs)]
        bindings = dict(zip(names, states + slices))
        values = import_subgraph(body, n, bindings).values
        states = values[:len(states)]
        steps.append(values[len(states):])
    return states, steps


def _scan_outputs(n: NodeContext, steps: list, n_outputs: int) -> list[ir.Value]:
    if not steps:
        raise n.error("a scan over an empty sequence is not supported")
    out_axes = _axes(n, "scan_output_axes", n_outputs,
                     [steps[0][k].type.rank + 1 for k in range(n_outputs)])
    out_dirs = _directions(n, "scan_output_directions", n_outputs)
    results = []
    for k in range(n_outputs):
        elements = [step[k] for step in steps]
        if out_dirs[k]:
            elements = elements[::-1]
        results.append(_stack(n, elements, out_axes[k]))
    return results


def _scan9(n: NodeContext) -> list[ir.Value]:
    body = n.attr("body")
    m = _scan_input_count(n, len(n.inputs))
    states, inputs = list(n.inputs[:len(n.inputs) - m]), list(n.inputs[len(n.inputs) - m:])
    in_axes = _axes(n, "scan_input_axes", m, [x.type.rank for x in inputs])
    in_dirs = _directions(n, "scan_input_directions", m)
    _check_body_outputs(n, body, len(states), "the final state values")
    final, steps = _scan_steps(n, states, inputs, in_axes, in_dirs, body)
    return final + _scan_outputs(n, steps, len(body.output) - len(states))


def _scan8(n: NodeContext) -> list[ir.Value]:
    # opset 8: inputs (sequence_lens?, states [B, ...], scans [B, T, ...]); per batch entry
    body = n.attr("body")
    m = _scan_input_count(n, len(n.inputs) - 1)
    if n.node.input[0]:
        lens = np.asarray(n.constant_input(0, "sequence_lens")).reshape(-1)
        steps_axis = n.inputs[-1].type.shape[1]
        if (lens != steps_axis).any():
            raise n.error("sequence_lens shorter than the sequence are not supported")
    rest = list(n.inputs[1:])
    states, inputs = rest[:len(rest) - m], rest[len(rest) - m:]
    batch = inputs[0].type.shape[0]
    in_dirs = _directions(n, "directions", m)
    _check_body_outputs(n, body, len(states), "the final state values")
    finals, outs = [], []
    for b in range(batch):
        s = [_slice_at(n, x, 0, b) for x in states]
        xs = [_slice_at(n, x, 0, b) for x in inputs]
        final, steps = _scan_steps(n, s, xs, [0] * m, in_dirs, body)
        n_outputs = len(body.output) - len(states)
        finals.append(final)
        outs.append([_stack(n, [step[k] for step in steps], 0) for k in range(n_outputs)])
    return ([_stack(n, [f[k] for f in finals], 0) for k in range(len(states))] +
            [_stack(n, [o[k] for o in outs], 0) for k in range(len(outs[0]))])


def import_scan(n: NodeContext) -> list[ir.Value]:
    if n.attr("body") is None or n.attr("num_scan_inputs") is None:
        raise n.error("needs its body and num_scan_inputs attributes")
    return _scan8(n) if n.opset < 9 else _scan9(n)


IMPORTERS = {"If": import_if, "Loop": import_loop, "Scan": import_scan}
