"""`dlc bisect`: find where dlc's results go wrong, by node and by pass.

    dlc bisect MODEL.onnx [--against onnxruntime|reference] [-O N] [-o DIR]
    dlc bisect MODEL.onnx --opt-levels 0,2

By node (the default): every value a node of the top-level graph computes becomes a graph
output; dlc (at -O N) and the oracle (onnxruntime, or onnx's reference evaluator) run the model
on the same inputs (random from --seed, or --input NAME=FILE.npy), and the first node, in graph
order, whose output differs beyond the fuzzer's tolerance is reported with its error. Its
inputs (the oracle's values) are saved with a one-node model (`DIR/reproducer.onnx`, its
graph inputs in `DIR/NAME.npy`; inputs that are constants of the model stay initializers),
which fails on its own: `dlc bisect DIR/reproducer.onnx --input ...` (the command printed).
Exposing every value can hide a bug of a pass that needs the values fused away: when the final
outputs differ but no exposed value does, bisect says so; use --opt-levels.

By pass (--opt-levels A,B, A < B): the pipeline of -O B is -O A's with passes added (checked:
-O A's passes are a subsequence of -O B's). Bisect compiles the pipelines in between, adding
-O B's extra passes one by one in order, compares each final result with the oracle, and
reports the first pass whose addition makes the results differ (a range, when pipelines in
between do not compile on their own: a pass that needs a later one, such as dlc-schedule's
vectors and dlc-lower-vectors).
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dlc.testing.fuzz import compare


@dataclass
class NodeResult:
    index: int
    node: onnx.NodeProto
    output: str
    problem: str


# ----------------------------------------------------------------------------- oracle


def oracle_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray], against: str,
                   names: list[str]) -> dict[str, np.ndarray]:
    """The values `names` (graph outputs of `model`) as the oracle computes them."""
    if against == "reference":
        from onnx.reference import ReferenceEvaluator

        values = ReferenceEvaluator(model).run(names, inputs)
    else:
        from dlc.testing.fuzz import ort_session

        values = ort_session(model).run(names, inputs)
    return {n: np.asarray(v) for n, v in zip(names, values)}


# ----------------------------------------------------------------------------- by node


def exposed(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[tuple[int, str]]]:
    """`model` with every node output of the top-level graph a graph output (untyped: dlc and
    onnxruntime compute the types); the (node index, value name) pairs, in graph order."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    declared = {o.name for o in graph.output}
    values = []
    for index, node in enumerate(graph.node):
        for name in node.output:
            if not name:
                continue
            values.append((index, name))
            if name not in declared:
                graph.output.append(onnx.ValueInfoProto(name=name))
                declared.add(name)
    return copy, values


def first_divergence(model: onnx.ModelProto, inputs: dict[str, np.ndarray], opt_level: int,
                     against: str, input_shapes=None) -> tuple[NodeResult | None, dict, dict]:
    """The first node whose output differs, and the dlc and oracle values by name."""
    import dlc

    wide, values = exposed(model)
    compiled = dlc.compile(wide, opt_level=opt_level, input_shapes=input_shapes)
    got = dict(zip(compiled.output_names, compiled(inputs)))
    want = oracle_outputs(wide, inputs, against, compiled.output_names)
    for index, name in values:
        problem = compare(got[name], want[name])
        if problem is not None:
            return NodeResult(index, model.graph.node[index], name, problem), got, want
    return None, got, want


def constants_of(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Values known without running the model: initializers and Constant nodes' outputs."""
    known = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
             "value_ints": np.int64}
    for node in model.graph.node:
        if node.op_type != "Constant" or not node.output or len(node.attribute) != 1:
            continue
        attribute = node.attribute[0]
        value = helper.get_attribute_value(attribute)
        if attribute.name == "value":
            known[node.output[0]] = numpy_helper.to_array(value)
        elif attribute.name in kinds:
            known[node.output[0]] = np.asarray(value, kinds[attribute.name])
    return known


def write_reproducer(model: onnx.ModelProto, found: NodeResult, values: dict[str, np.ndarray],
                     inputs: dict[str, np.ndarray], folder: Path) -> list[str]:
    """Save the node of `found` as a one-node model with its inputs; the `--input` items."""
    folder.mkdir(parents=True, exist_ok=True)
    node = found.node
    constants = constants_of(model)
    graph_inputs, initializers, items = [], [], []
    for name in dict.fromkeys(n for n in node.input if n):
        value = constants.get(name)
        if value is not None:
            initializers.append(numpy_helper.from_array(value, name))
            continue
        value = inputs[name] if name in inputs else values[name]
        elem = helper.np_dtype_to_tensor_dtype(value.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, elem, list(value.shape)))
        path = folder / f"{_file_name(name)}.npy"
        np.save(path, value)
        items.append(f"{name}={path}")
    outputs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
    graph = helper.make_graph([node], "reproducer", graph_inputs, outputs, initializers)
    repro = helper.make_model(graph, opset_imports=list(model.opset_import))
    repro.ir_version = model.ir_version
    onnx.save(repro, folder / "reproducer.onnx")
    return items


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "value"


# ----------------------------------------------------------------------------- by pass


@dataclass
class Step:
    stage: str
    text: str
    extra: bool  # added by the higher opt level
    # the lower level's options of the same pass (`dlc-split-functions{min-ops=0}` at -O0,
    # without options at -O2): run until this step is added, which swaps in `text`
    replaces: str | None = None

    def chosen(self, added: bool) -> str | None:
        """The pass text this step runs, with the step added or not (None: not at all)."""
        if added or not self.extra:
            return self.text
        return self.replaces


def pipeline_steps(low: int, high: int, num_threads: int = 1) -> list[Step]:
    """-O high's pipeline as steps, those not in -O low's marked extra."""
    from dlc.passes import STAGES, parse_pipeline, stage_pipelines

    lows, highs = stage_pipelines(low, num_threads), stage_pipelines(high, num_threads)
    steps = []
    for stage in STAGES:
        base = [e.text() for e in parse_pipeline(lows[stage])]
        at = 0
        for element in parse_pipeline(highs[stage]):
            text = element.text()
            if at < len(base) and base[at] == text:
                steps.append(Step(stage, text, False))
                at += 1
            elif at < len(base) and _name(base[at]) == _name(text):  # (other options)
                steps.append(Step(stage, text, True, replaces=base[at]))
                at += 1
            else:
                steps.append(Step(stage, text, True))
        if at != len(base):
            raise ValueError(f"-O{low}'s {stage} stage is not a part of -O{high}'s "
                             f"({lows[stage]!r} vs {highs[stage]!r}): cannot bisect them")
    return steps


def _name(text: str) -> str:
    """A pass's name without its options (`dlc-split-functions{min-ops=0}` ->
    `dlc-split-functions`)."""
    return text.split("{", 1)[0].strip()


def compile_steps(model, steps: list[tuple[Step, str]], input_shapes=None):
    """A callable of `model` compiled by the pipeline of `steps`, or the CompileError."""
    from dlc.compiler import compile_imported
    from dlc.dialects import make_context
    from dlc.frontends.onnx_importer import import_model
    from dlc.options import CompileOptions
    from dlc.passes import STAGES

    context = make_context()
    imported = import_model(model, context, input_shapes)
    pipelines = {stage: ",".join(text for step, text in steps if step.stage == stage)
                 for stage in STAGES}
    return compile_imported(context, imported, CompileOptions(num_threads=1, pipelines=pipelines))


def bisect_passes(model: onnx.ModelProto, inputs: dict[str, np.ndarray], low: int, high: int,
                  against: str, input_shapes=None, log=print) -> dict:
    """The first of -O high's extra passes whose addition makes the results differ."""
    from dlc.errors import DlcError

    steps = pipeline_steps(low, high)
    extras = [i for i, s in enumerate(steps) if s.extra]
    want = None
    last_good = None  # (count of extras added, description)
    for count in range(len(extras) + 1):
        chosen = [(s, text) for i, s in enumerate(steps)
                  if (text := s.chosen(i in extras[:count])) is not None]
        added = steps[extras[count - 1]] if count else None
        label = f"+ {added.text} ({added.stage})" if added else f"-O{low}"
        try:
            function = compile_steps(model, chosen, input_shapes)
        except DlcError as error:
            log(f"  {label}: does not compile alone ({str(error).splitlines()[0][:100]})")
            continue
        got = function(inputs)
        if want is None:
            want = list(oracle_outputs(model, inputs, against,
                                       [o.name for o in model.graph.output]).values())
        problems = [p for p in (compare(g, w) for g, w in zip(got, want)) if p]
        log(f"  {label}: {'differs: ' + problems[0] if problems else 'matches'}")
        if problems:
            if count == 0:
                return {"culprit": None, "problem": problems[0],
                        "message": f"-O{low} already differs from {against}: bisect by node"}
            culprits = [steps[i].text for i in extras[(last_good or 0):count]]
            return {"culprit": culprits[-1] if len(culprits) == 1 else culprits,
                    "problem": problems[0], "stage": added.stage,
                    "message": ("pass " + culprits[0] if len(culprits) == 1 else
                                "one of the passes " + ", ".join(culprits))
                    + f" (stage {added.stage}) makes the results differ: {problems[0]}"}
        last_good = count
    return {"culprit": None, "problem": None,
            "message": f"every pipeline from -O{low} to -O{high} matches {against}"}


# ----------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--against", choices=("onnxruntime", "reference"), default="onnxruntime",
                        help="the oracle (default onnxruntime)")
    parser.add_argument("--opt-levels", metavar="A,B",
                        help="bisect the passes -O B adds to -O A instead of the nodes")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("-o", "--output", default="bisect", metavar="DIR",
                        help="folder of the reproducer (default ./bisect)")


@dataclass
class _Imported:
    """What `cli_args.load_inputs` reads of a model: its signature (imported, not compiled)."""

    signature: object

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.signature.inputs]


def signature(model: onnx.ModelProto, shapes) -> _Imported:
    from dlc.compiler import signature_of
    from dlc.dialects import make_context
    from dlc.frontends.onnx_importer import import_model

    context = make_context()
    imported = import_model(model, context, shapes)
    with context:
        main = imported.module.body.operations[0]
        return _Imported(signature_of(main, imported.input_names, imported.output_names))


def run(args) -> int:
    from dlc.frontends.onnx_importer import load_model
    from dlc.tools.cli_args import load_inputs, parse_shapes

    model = load_model(args.model)
    shapes = parse_shapes(args.input_shape)
    inputs = load_inputs(signature(model, shapes), args.input, args.seed)
    if args.opt_levels:
        try:
            low, high = (int(x) for x in args.opt_levels.split(","))
        except ValueError:
            raise ValueError(f"--opt-levels expects A,B (two opt levels), got "
                             f"{args.opt_levels!r}") from None
        if not low < high:
            raise ValueError(f"--opt-levels {args.opt_levels}: the first must be lower")
        print(f"bisecting the passes -O{high} adds to -O{low}, against {args.against}:")
        result = bisect_passes(model, inputs, low, high, args.against, shapes)
        print(result["message"])
        return 1 if result["problem"] else 0
    found, got, want = first_divergence(model, inputs, args.opt_level, args.against, shapes)
    finals = [o.name for o in model.graph.output]
    if found is None:
        bad = [n for n in finals if n in got and compare(got[n], want[n])]
        if bad:
            print(f"the outputs {bad} differ from {args.against}, but no value does when every "
                  "value is an output: a pass that fuses values away is the likely cause; try "
                  f"--opt-levels 0,{args.opt_level}")
            return 1
        print(f"every value of the {len(model.graph.node)} nodes matches {args.against} at "
              f"-O{args.opt_level}")
        return 0
    node = found.node
    name = node.name or f"{node.op_type}_{found.index}"
    print(f"first divergence: node '{name}' ({node.op_type}, #{found.index}), output "
          f"'{found.output}': {found.problem}")
    folder = Path(args.output)
    items = write_reproducer(model, found, want, inputs, folder)
    command = ["dlc", "bisect", str(folder / "reproducer.onnx"), "-O", str(args.opt_level),
               "--against", args.against] + [a for item in items for a in ("--input", item)]
    command += [a for p in getattr(args, "load_pass_plugin", []) for a in ("--load-pass-plugin", p)]
    command += [a for p in getattr(args, "add_passes", []) for a in ("--add-passes", p)]
    print(f"reproducer: {folder / 'reproducer.onnx'} (one node; its inputs beside it)")
    print(f"  {shlex.join(command)}")
    return 1
