"""`dlc explore`: one self-contained HTML page showing how dlc compiles a model.

`collect(model)` imports the model and runs the stages of an opt level element by element (the
same pipeline text as `dlc.compile`, each element by a PassManager of its own, as
`compiler.run_stage` does), keeping the IR after every stage, the unified diff of every pass
that changed the IR (texts gzipped, `unpack` reads them) and every pass's seconds. It also
records the graph of the dlc stage (one node per op, named from its location, i.e. the ONNX
node name; its result types; edges from SSA uses), the linalg ops just before `dlc-schedule` (their locations survive lowering and
fusion, so each links back to its ONNX nodes) and the schedule `dlc-schedule` picks for each.
`render(data)` writes the page: the data as JSON, the vendored layout library (dagre, MIT,
`explore_assets/dagre.min.js`), the page's script and style, all inline, so that it needs no
network when viewed. `serve(html, port)` serves it on 127.0.0.1.

Per-op runtimes come from dlc's profiler (`dlc.profiler.profile`, a separate instrumented
compile run `runs` times): with `collect(..., profile=True)` the page shows every op group's
time, share and schedule family, and each node's time (`Profile.seconds_by_node`: a group's
time split evenly among its ONNX nodes); without it the page says "no profile".
"""

from __future__ import annotations

import base64
import difflib
import gzip
import http.server
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from mlir import ir

from dlc import frontends
from dlc.dialects import make_context
from dlc.options import CompileOptions
from dlc.passes import build_pass_manager, parse_pipeline, stage_pipelines
from dlc.timings import Timer

ASSETS = Path(__file__).parent / "explore_assets"
ELIDE = 16  # constants with more elements are printed elided
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def collect(model, opt_level: int = 2, input_shapes: Mapping[str, Sequence[int]] | None = None,
            profile: bool = False, runs: int = 10) -> dict:
    """Everything the page shows, as JSON-ready data (see the module docstring)."""
    timer = Timer()
    started = time.perf_counter()
    context = make_context()
    with timer.span("import"):
        imported = frontends.load(model, context, CompileOptions(input_shapes=input_shapes))
    data: dict = {"opt_level": opt_level, "stages": [], "passes": [], "linalg": [],
                  "inputs": imported.input_names, "outputs": imported.output_names,
                  "import_seconds": timer.result().seconds("import")}
    with context:
        module = imported.module
        main = module.body.operations[0]
        main.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        text = _asm(module)
        data["stages"].append({"name": "import", **_pack(text)})
        for stage, pipeline_text in stage_pipelines(opt_level).items():
            for element in parse_pipeline(pipeline_text):
                if element.name == "dlc-schedule":
                    data["linalg"] = _linalg_ops(module, schedules=True)
                name = element.text() if element.children is not None else element.name
                pm = build_pass_manager(element.text())
                start = time.perf_counter()
                pm.run(module.operation)
                seconds = time.perf_counter() - start
                after = _asm(module)
                data["passes"].append({"stage": stage, "name": name, "seconds": seconds,
                                       "diff": _diff(text, after, name)})
                text = after
            data["stages"].append({"name": stage, **_pack(text)})
            if stage == "dlc":
                data["graph"] = _graph(module, imported.input_names)
            if stage == "linalg" and not data["linalg"]:  # (-O0, -O1: nothing scheduled)
                data["linalg"] = _linalg_ops(module, schedules=False)
    data["op_times"] = data["profile"] = None
    if profile:
        from dlc.profiler import profile as run_profile

        result = run_profile(model, None, runs, opt_level, input_shapes)
        data["op_times"] = result.seconds_by_node()
        data["profile"] = result.as_json()
    data["seconds"] = time.perf_counter() - started
    return data


def _asm(module: ir.Module) -> str:
    return module.operation.get_asm(large_elements_limit=ELIDE)


def _diff(before: str, after: str, name: str) -> dict | None:
    """The unified diff of a pass (None when it changed nothing): its counts of added and
    removed lines, and its text gzipped in base64 (`gz`), which the page inflates when the
    diff is opened (DecompressionStream): ResNet-50's diffs are 26 MB as text, mostly the
    conversions to llvm that rewrite every line."""
    if before == after:
        return None
    lines = _unified_diff(before, after, "before " + name, "after " + name)
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    return {"added": added, "removed": removed, **_pack("\n".join(lines))}


def _unified_diff(before: str, after: str, old: str, new: str) -> list[str]:
    """Unified diff lines (2 lines of context) by GNU diff, whose Myers algorithm takes 1.5 s
    for ResNet-50's 36 changed passes where difflib's takes 100 s (the conversions to llvm
    leave few common lines); difflib where there is no `diff` program."""
    program = shutil.which("diff")
    if program is None:
        return list(difflib.unified_diff(before.splitlines(), after.splitlines(), old, new,
                                         n=2, lineterm=""))
    with tempfile.TemporaryDirectory(prefix="dlc-explore-") as folder:
        a, b = Path(folder, "a"), Path(folder, "b")
        a.write_text(before + "\n")
        b.write_text(after + "\n")
        done = subprocess.run([program, "-U2", "--label", old, "--label", new, str(a), str(b)],
                              capture_output=True, text=True, check=False)
    if done.returncode > 1:
        raise RuntimeError(f"diff failed: {done.stderr.strip()}")
    return done.stdout.splitlines()


def _pack(text: str) -> dict:
    """Text as the page stores it: gzipped in base64 (`gz`), with its size in lines."""
    data = gzip.compress(text.encode(), compresslevel=6, mtime=0)
    return {"lines": text.count("\n") + 1, "chars": len(text),
            "gz": base64.b64encode(data).decode()}


def unpack(packed: dict) -> str:
    """The text of a stage's IR or a pass's diff as `collect` stores it."""
    return gzip.decompress(base64.b64decode(packed["gz"])).decode()


def _names(location: ir.Location) -> list[str]:
    """The names in a location: an ONNX node name, or several for a fused location."""
    return list(dict.fromkeys(_QUOTED.findall(str(location))))


def _type(value: ir.Value) -> str:
    return str(value.type)


def _graph(module: ir.Module, input_names: list[str]) -> dict:
    """The dlc-stage graph: a node per op (and per argument), edges from SSA uses."""
    block = module.body.operations[0].regions[0].blocks[0]
    nodes: list[dict] = []
    edges: list[tuple[int, int]] = []
    producer: dict[str, int] = {}
    state = ir.AsmState(module.body.operations[0])  # (names values once, not per call)
    for index, arg in enumerate(block.arguments):
        producer[arg.get_name(state)] = len(nodes)
        name = input_names[index] if index < len(input_names) else f"input {index}"
        nodes.append({"op": "input", "names": [name], "types": [_type(arg)], "group": "inputs"})
    for op in block.operations:
        node = len(nodes)
        for operand in op.operands:
            source = producer.get(operand.get_name(state))
            if source is not None and (source, node) not in edges:
                edges.append((source, node))
        for result in op.results:
            producer[result.get_name(state)] = node
        names = _names(op.location)
        nodes.append({"op": op.name.removeprefix("dlc."), "names": names,
                      "types": [_type(r) for r in op.results],
                      "group": "outputs" if op.name == "func.return" else _group(names)})
    return {"nodes": nodes, "edges": edges}


def _group(names: list[str]) -> str | None:
    """The collapsible group of an op: its ONNX name's module path, at most two levels
    (`/layer1/layer1.0/conv1/Conv`: `/layer1/layer1.0`, without the module and op type);
    None for names without a path (`Conv_0`)."""
    for name in names:
        parts = [p for p in name.split("/") if p][:-2]
        if parts:
            return "/" + "/".join(parts[:2])
    return None


def _linalg_ops(module: ir.Module, schedules: bool) -> list[dict]:
    """Every linalg op (before `dlc-schedule` when it runs): its names, types and schedule."""
    chosen: list[tuple[ir.Operation, str, str]] = []
    if schedules:
        from dlc.passes.linalg.schedule import Schedule, candidates

        default = Schedule()
        chosen = [(op, family.__name__.rsplit(".", 1)[-1], repr(problem))
                  for op, family, problem in candidates(module.operation, default.min_volume,
                                                        default.min_elements)]
    found: list[dict] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if not op.name.startswith("linalg.") or op.name in ("linalg.yield", "linalg.index"):
            return ir.WalkResult.ADVANCE
        schedule = next(({"family": family, "problem": problem}
                         for other, family, problem in chosen if other == op), None)
        found.append({"op": op.name, "names": _names(op.location),
                      "types": [_type(r) for r in op.results], "schedule": schedule})
        return ir.WalkResult.SKIP

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def render(data: dict) -> str:
    """The page: template, vendored dagre, script, style and the data, all inline."""
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    page = (ASSETS / "template.html").read_text()
    for key, content in (("STYLE", (ASSETS / "explore.css").read_text()),
                         ("DAGRE", (ASSETS / "dagre.min.js").read_text()),
                         ("SCRIPT", (ASSETS / "explore.js").read_text()),
                         ("DATA", blob)):
        page = page.replace(f"/*{key}*/", content, 1)
    return page


def make_server(html: str, port: int = 8000) -> http.server.ThreadingHTTPServer:
    """An HTTP server of the page on 127.0.0.1 only (port 0: any free port)."""
    body = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # (quiet)
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)


def serve(html: str, port: int = 8000) -> None:
    """Serve the page on http://127.0.0.1:PORT/ until interrupted."""
    server = make_server(html, port)
    print(f"dlc explore: serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)",
          flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def add_arguments(parser) -> None:
    from dlc.tools.cli_args import at_least

    parser.add_argument("-o", "--output", default="explore.html", help="the page to write")
    parser.add_argument("--serve", action="store_true",
                        help="also serve the page on http://127.0.0.1:PORT/")
    parser.add_argument("--port", type=at_least(0), default=8000)
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="no per-op runtimes (the profile is a second, instrumented "
                        "compile and RUNS runs)")
    parser.add_argument("--runs", type=at_least(1), default=10, help="runs the profile averages")


def run(args) -> int:
    from dlc.tools.cli_args import parse_shapes

    shapes = parse_shapes(args.input_shape) or None
    data = collect(args.model, args.opt_level, shapes, profile=args.profile, runs=args.runs)
    html = render(data)
    Path(args.output).write_text(html)
    print(f"dlc explore: wrote {args.output} ({len(html) / 1e6:.1f} MB, "
          f"{len(data['graph']['nodes'])} graph nodes, {len(data['passes'])} passes) "
          f"in {data['seconds']:.1f} s")
    if args.serve:
        serve(html, args.port)
    return 0
