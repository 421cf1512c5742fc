"""`dlc conformance`: the ONNX backend node tests run through `dlc.backend`, op by op.

The cases are those shipped in the `onnx` package (`collect_testcases`) whose graph inputs and
outputs are tensors of the dtypes ONNX models ship (float16/32/64, int8…int64, uint8…uint64,
bool), in the default domain. Each case runs in a worker process, so a case that crashes the
process is recorded as a crash and cannot hide the others. Outcomes:
pass, fail (wrong result or error), unsupported (UnsupportedOpsError), crash.

`--dynamic` runs each case with every size of its graph inputs made dynamic (unnamed, as
onnx-mlir's dynamic backend tests do): the model then compiles per call shape
(`dlc.specialize.DynamicModel`), from inputs whose shapes the importer learns at the call.
`--dynamic-rows` makes the leading size of the inputs that share the first input's one dynamic
size instead: a case whose ops take it compiles once for every size (`DynamicModel.function`,
`dynamic` in the outcome's detail) and is checked at the case's shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import warnings
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from dlc.tools import progress

TENSOR_DTYPES = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13}  # onnx.TensorProto data types


@dataclass
class Outcome:
    name: str
    op: str
    status: str
    detail: str = ""


def _cases():
    warnings.filterwarnings("ignore")
    from onnx.backend.test.case.node import collect_testcases

    return collect_testcases("")


def _tensor_io(model) -> bool:
    for value in [*model.graph.input, *model.graph.output]:
        if not value.type.HasField("tensor_type"):
            return False
        if value.type.tensor_type.elem_type not in TENSOR_DTYPES:
            return False
    return all(n.domain in ("", "ai.onnx") for n in model.graph.node)


def in_scope_cases() -> list:
    """The node test cases in scope (tensor inputs/outputs of the dtypes above)."""
    return [c for c in _cases() if c.model is not None and _tensor_io(c.model)]


def make_dynamic(model):
    """A copy of `model` whose graph inputs (initializers excepted) have unknown sizes."""
    dynamic = model.__class__()
    dynamic.CopyFrom(model)
    initializers = {t.name for t in dynamic.graph.initializer}
    for value in dynamic.graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            dim.Clear()
    return dynamic


def dynamic_case(case):
    """`case` with its model's input sizes made dynamic (`make_dynamic`)."""
    import dataclasses

    return dataclasses.replace(case, model=make_dynamic(case.model))


def make_dynamic_rows(model):
    """A copy of `model` whose graph inputs of rank >= 1 with the first such input's leading
    size have that axis dynamic, one name (`n`): the model compiles once for every `n` where
    its ops take the size (`DynamicModel.function`)."""
    rows = model.__class__()
    rows.CopyFrom(model)
    initializers = {t.name for t in rows.graph.initializer}
    leading = None
    for value in rows.graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if not dims or not dims[0].HasField("dim_value"):
            continue
        if leading is None:
            leading = dims[0].dim_value
        if dims[0].dim_value == leading:
            dims[0].Clear()
            dims[0].dim_param = "n"
    for value in rows.graph.output:  # (computed: a declared size may be the leading one)
        if value.type.HasField("tensor_type"):
            value.type.tensor_type.ClearField("shape")
    return rows


def dynamic_rows_case(case):
    """`case` with its inputs' leading size one dynamic size (`make_dynamic_rows`)."""
    import dataclasses

    return dataclasses.replace(case, model=make_dynamic_rows(case.model))


def op_of(case) -> str:
    """The op a case tests: its single node's type, else the op its name starts with."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    import onnx

    schemas = {s.name.lower(): s.name for s in onnx.defs.get_all_schemas()}
    tokens = case.name.removeprefix("test_").split("_")
    for end in range(len(tokens), 0, -1):
        name = schemas.get("".join(tokens[:end]))
        if name:
            return f"{name} (expanded)" if "expanded" in case.name else name
    return nodes[0].op_type


LIGHT_RTOL, LIGHT_ATOL = 1e-3, 1e-7  # onnx's backend test runner's defaults
OPT_LEVEL = 2  # the opt level cases compile at (--opt-level; workers get it on their command)


def light_models_dir():
    from pathlib import Path

    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def light_model_names() -> list[str]:
    return sorted(p.stem for p in light_models_dir().glob("light_*.onnx"))


def run_light_model(name: str) -> None:
    """Run a light model-zoo model on the runner's dummy data; AssertionError on mismatch."""
    import numpy as np
    import onnx
    from onnx.backend.test.runner import Runner

    import dlc.backend

    folder = light_models_dir()
    model = onnx.load(str(folder / f"{name}.onnx"))
    initializers = {t.name for t in model.graph.initializer}
    feeds = [Runner.generate_dummy_data(x, seed=0, name=name, random=False)
             for x in model.graph.input if x.name not in initializers]
    outputs = dlc.backend.prepare(model, opt_level=OPT_LEVEL).run(feeds)
    for i, actual in enumerate(outputs):
        tensor = onnx.TensorProto()
        tensor.ParseFromString((folder / f"{name}_output_{i}.pb").read_bytes())
        expected = onnx.numpy_helper.to_array(tensor)
        np.testing.assert_array_equal(actual.shape, expected.shape)
        np.testing.assert_allclose(actual, expected, rtol=LIGHT_RTOL, atol=LIGHT_ATOL)


def run_light(name: str) -> Outcome:
    from dlc.frontends.onnx_importer import UnsupportedOpsError

    try:
        run_light_model(name)
    except UnsupportedOpsError as error:
        return Outcome(name, "light model", "unsupported", str(error).split(". Supported")[0])
    except Exception as error:  # the failure's reason is the report's content
        detail = " ".join(str(error).split()) or type(error).__name__
        return Outcome(name, "light model", "fail", f"{type(error).__name__}: {detail}"[:300])
    return Outcome(name, "light model", "pass")


def run_case(case) -> Outcome:
    import numpy as np
    import onnx

    import dlc.backend
    from dlc.frontends.onnx_importer import UnsupportedOpsError

    op = op_of(case)
    try:
        rep = dlc.backend.prepare(case.model, opt_level=OPT_LEVEL)
        for inputs, expected in case.data_sets:
            outputs = rep.run(inputs)
            if len(outputs) != len(expected):
                return Outcome(case.name, op, "fail", "wrong number of outputs")
            for got, want in zip(outputs, expected):
                if isinstance(want, onnx.TensorProto):
                    want = onnx.numpy_helper.to_array(want)
                if got.dtype != want.dtype:
                    return Outcome(case.name, op, "fail", f"dtype {got.dtype}, want {want.dtype}")
                np.testing.assert_array_equal(got.shape, want.shape)
                np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)
        if any(getattr(c, "function", None) is not None for c in rep._compiled.values()):
            return Outcome(case.name, op, "pass", "dynamic")  # (one compile for every size)
    except UnsupportedOpsError as error:
        return Outcome(case.name, op, "unsupported", str(error).split(". Supported")[0])
    except Exception as error:  # the failure's reason is the report's content
        first = " ".join(str(error).split()) or type(error).__name__
        return Outcome(case.name, op, "fail", f"{type(error).__name__}: {first}"[:300])
    return Outcome(case.name, op, "pass")


def _worker(cases_file: str, names: list[str]) -> None:
    """Run the named cases of the pickled list, one JSON line per finished case."""
    with open(cases_file, "rb") as f:
        cases = {c.name: c for c in pickle.load(f)}
    for name in names:
        outcome = run_light(name) if name.startswith("light_") else run_case(cases[name])
        print(json.dumps(outcome.__dict__), flush=True)


def _run_chunk(cases_file: str, names: list[str]) -> list[Outcome]:
    """Run cases in a child process; restart past a case that kills it (a crash)."""
    outcomes: list[Outcome] = []
    remaining = list(names)
    while remaining:
        process = subprocess.run(
            [sys.executable, "-m", "dlc.testing.conformance", "--cases-file", cases_file,
             "--opt-level", str(OPT_LEVEL), "--worker", *remaining],
            capture_output=True, text=True,
        )
        done = [Outcome(**json.loads(line)) for line in process.stdout.splitlines()
                if line.startswith("{")]
        outcomes += done
        remaining = remaining[len(done):]
        if remaining:
            crashed = remaining.pop(0)
            reason = f"process died (exit code {process.returncode})"
            outcomes.append(Outcome(crashed, "?", "crash", reason))
    return outcomes


def run_all(cases: list, jobs: int) -> list[Outcome]:
    """Run `cases` in `jobs` worker processes (the cases reach them pickled in a file)."""
    names = [c if isinstance(c, str) else c.name for c in cases]
    chunks = [c for c in (names[i::jobs * 4] for i in range(jobs * 4)) if c]
    with tempfile.TemporaryDirectory() as folder:
        cases_file = os.path.join(folder, "cases.pkl")
        with open(cases_file, "wb") as f:
            pickle.dump([c for c in cases if not isinstance(c, str)], f)
        with progress.bar("conformance", total=len(names)) as advance, \
                ThreadPoolExecutor(jobs) as pool:

            def run_chunk(chunk: list[str]) -> list[Outcome]:
                outcomes = _run_chunk(cases_file, chunk)
                advance(len(chunk))
                return outcomes

            results = list(pool.map(run_chunk, chunks))
    ops = {c.name: op_of(c) for c in cases if not isinstance(c, str)}
    outcomes = [o for chunk in results for o in chunk]
    for outcome in outcomes:
        outcome.op = ops.get(outcome.name, outcome.op)
    return sorted(outcomes, key=lambda o: o.name)


def report(outcomes: list[Outcome], verbose: bool) -> str:
    per_op: dict[str, Counter] = defaultdict(Counter)
    for outcome in outcomes:
        per_op[outcome.op][outcome.status] += 1
    lines = ["| op | pass | fail | unsupported | crash |", "|---|---:|---:|---:|---:|"]
    for op, counts in sorted(per_op.items()):
        lines.append(f"| {op} | {counts['pass']} | {counts['fail']} | "
                     f"{counts['unsupported']} | {counts['crash']} |")
    total = Counter(o.status for o in outcomes)
    share = 100 * total["pass"] / max(1, len(outcomes))
    lines.append(f"| **all {len(outcomes)} cases** | {total['pass']} ({share:.1f}%) | "
                 f"{total['fail']} | {total['unsupported']} | {total['crash']} |")
    once = sum(o.status == "pass" and o.detail == "dynamic" for o in outcomes)
    if once:
        lines.append(f"\n{once} of the passes compiled once for every size "
                     "(`DynamicModel.function`)")
    if verbose:
        lines.append("")
        lines += [f"{o.status.upper():<12} {o.name}: {o.detail}" for o in outcomes
                  if o.status != "pass"]
    return "\n".join(lines)


EXPECTED_HEADER = """\
# ONNX backend node test cases that dlc is expected to fail, one per line: NAME  # reason.
# tests/onnx_backend/test_node_suite.py fails on a listed case that passes (remove its line)
# and on an unlisted case that fails. Regenerate after a change with:
#   .venv/bin/python -m dlc.testing.conformance --write-expected tests/onnx_backend/expected_failures.txt
"""


def write_expected(path: str, outcomes: list[Outcome]) -> None:
    lines = [f"{o.name}  # {o.status}: {' '.join(o.detail.split())}" for o in outcomes
             if o.status != "pass"]
    with open(path, "w") as out:
        out.write(EXPECTED_HEADER + "\n".join(lines) + "\n")


def read_expected(path: str) -> dict[str, str]:
    """The expected failures of a list written by `write_expected`: name -> reason."""
    expected = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, _, reason = line.partition("#")
                expected[name.strip()] = reason.strip()
    return expected


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The suite's options but -j (`dlc conformance` checks its own): `main`'s and the CLI's."""
    parser.add_argument("-k", "--filter", default="", help="only cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="list each non-pass case")
    parser.add_argument("--json", metavar="FILE", help="write every outcome to FILE")
    parser.add_argument("--light", action="store_true",
                        help="also run the 9 light model-zoo models (slow)")
    parser.add_argument("--write-expected", metavar="FILE",
                        help="write the expected-failures list (every non-pass case and why)")
    parser.add_argument("-O", "--opt-level", type=int, default=2, choices=range(4),
                        help="compile every case at this opt level (default 2)")
    parser.add_argument("--dynamic", action="store_true",
                        help="make every size of the cases' graph inputs dynamic")
    parser.add_argument("--dynamic-rows", action="store_true",
                        help="make the inputs' leading size one dynamic size (one compile for "
                             "every size where the ops take it)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dlc conformance", description=__doc__.split("\n")[0])
    add_arguments(parser)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--cases-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        global OPT_LEVEL
        OPT_LEVEL = args.opt_level
        _worker(args.cases_file, args.worker)
        return 0
    return run(args)


def run(args: argparse.Namespace) -> int:
    """The suite with `main`'s options (`add_arguments`, and `jobs`)."""
    global OPT_LEVEL
    OPT_LEVEL = args.opt_level
    cases = [c for c in in_scope_cases() if args.filter in c.name]
    if args.dynamic:
        cases = [dynamic_case(c) for c in cases]
    if args.dynamic_rows:
        cases = [dynamic_rows_case(c) for c in cases]
    if args.light:
        cases += [n for n in light_model_names() if args.filter in n]
    outcomes = run_all(cases, max(1, args.jobs))
    print(report(outcomes, args.verbose))
    if args.write_expected:
        write_expected(args.write_expected, outcomes)
    if args.json:
        with open(args.json, "w") as out:
            json.dump([o.__dict__ for o in outcomes], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
