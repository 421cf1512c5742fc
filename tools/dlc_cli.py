"""`dlc`: compile, run and benchmark an ONNX model from the command line.

    dlc run MODEL.onnx [--input NAME=FILE.npy ...]   run once (random inputs by default)
    dlc compile MODEL.onnx --emit=STAGE             print the IR after a stage (runs no later one)
    dlc compile MODEL.onnx --timings [--json]       where a cold compile's time and memory go
    dlc compile MODEL.onnx --emit=dot --stats       the dlc graph as Graphviz; op counts, memory
    dlc bench MODEL.onnx                            latency of dlc beside onnxruntime
    dlc bench --zoo [--models A,B] [--layers N]     the zoo of real models (benchmarks/zoo.py)
    dlc bisect MODEL.onnx [--opt-levels A,B]        the first node (or pass) that goes wrong
    dlc pipeline [-O N]                             print the pass pipeline of an opt level
    dlc conformance [-k NAME] [-v] [--dynamic]      the ONNX backend node tests, per op
    dlc fuzz [-n COUNT] [--seed S] [--out DIR]      random graphs, dlc against onnxruntime
    dlc explore MODEL.onnx -o PAGE.html [--serve]   the compile as one HTML page
    dlc profile MODEL.onnx [--runs N] [--json]      time per op group, schedule, naive path
    dlc tune MODEL.onnx [--budget MIN] [--ray-address ADDR]   tune schedules into the database

Every error is one line `dlc: error: ...` and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from dlc.tools.cli_args import at_least, cli_advice, load_inputs, parse_shapes

EXIT_ERROR, EXIT_INTERNAL = 1, 2


def time_calls(fn: Callable[[], object], repeat: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def compile_model(args):
    import dlc
    from dlc.tools import progress

    with progress.spinner(f"compiling {args.model} at -O{args.opt_level}"):
        return dlc.compile(args.model, opt_level=args.opt_level,
                           input_shapes=parse_shapes(args.input_shape))


def cmd_run(args) -> int:
    compiled = compile_model(args)
    inputs = load_inputs(compiled, args.input, args.seed)
    outputs = compiled(inputs)
    times = time_calls(lambda: compiled(inputs), args.repeat, warmup=1)
    print(f"compiled in {compiled.compile_seconds * 1e3:.1f} ms (opt level {args.opt_level})")
    for spec, value in zip(compiled.signature.outputs, outputs):
        checksum = float(np.sum(value, dtype=np.float64))
        print(f"{spec.name}: shape={list(value.shape)} dtype={value.dtype} "
              f"checksum={checksum:.6g}")
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.save) / f"{spec.name}.npy", value)
    print(f"run time: median {statistics.median(times) * 1e3:.3f} ms over {len(times)} runs")
    return 0


def optimized_graph(args):
    """(context, module, op counts as imported): the dlc graph after the `dlc` stage."""
    from dlc.compiler import run_stage
    from dlc.dialects import make_context
    from dlc.frontends.onnx_importer import import_model
    from dlc.passes import stage_pipelines
    from dlc.passes.graph.report import op_counts

    context = make_context()
    module = import_model(args.model, context, parse_shapes(args.input_shape)).module
    with context:
        before = op_counts(module.operation)
        run_stage(module, "dlc", stage_pipelines(args.opt_level)["dlc"])
    return context, module, before


def graph_stats(context, module, before) -> str:
    """Op counts before/after the dlc stage and the intermediate memory, as `//` lines."""
    from dlc.passes.graph import report

    with context:
        rows = report.format_counts(before, report.op_counts(module.operation))
        rows += report.format_memory(report.memory_plan(module.operation))
    return "".join(f"// {row}\n" for row in rows)


def cmd_compile(args) -> int:
    """--emit=STAGE (default llvm) lowers through that stage only, no machine code; --timings
    alone compiles to machine code (cache bypassed: a cold compile) and prints only timings."""
    timings = "json" if args.json else "table" if args.timings else None
    if timings and args.emit == "dot":
        raise SystemExit("dlc: error: --timings measures the stages; --emit=dot runs only the "
                         "dlc stage: use --emit=dlc --timings")
    if timings and args.emit is None:
        compiled = compile_cold(args)
        if not hasattr(compiled, "timings"):  # (a DynamicModel: its one compile's, if any)
            one = compiled.function or compiled.row_function
            if one is None:
                raise SystemExit(f"dlc: error: {args.model} has dynamic sizes and compiles per "
                                 f"shape ({compiled.function_reason}): pass --input-shape to "
                                 "time the compile of one")
            compiled = one
        write_timings(compiled.timings, timings, sys.stdout)
        report = compiled.tuning  # (which ops used a tuning record, when there is a database)
        if timings == "table" and report and report.database and Path(report.database).exists():
            print(report.table())
        return 0
    graph = optimized_graph(args) if args.emit == "dot" or args.stats else None
    lowered = None
    if args.emit == "dot":
        from dlc.passes.graph.report import to_dot

        with graph[0]:
            text = to_dot(graph[1].operation)
    else:
        lowered = lower_model(args, args.emit or "llvm", timings is not None)
        text = lowered.ir(large_elements_limit=args.elide)
    to_file = args.output and args.output != "-"
    if to_file:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if args.stats:
        sys.stdout.write(graph_stats(*graph))
    if timings and lowered is not None:  # (beside the IR on stdout: on stderr)
        write_timings(lowered.timings, timings, sys.stdout if to_file else sys.stderr)
    return 0


def lower_model(args, stage: str, timings: bool):
    import dlc

    return dlc.lower(args.model, stage=stage, opt_level=args.opt_level,
                     input_shapes=parse_shapes(args.input_shape), timings=timings)


def compile_cold(args):
    """A whole compile (machine code included), the compile cache bypassed, peak RSS on."""
    import dlc
    from dlc.runtime import cache

    with cache.disabled():
        return dlc.compile(args.model, opt_level=args.opt_level,
                           input_shapes=parse_shapes(args.input_shape), timings=True)


def write_timings(timings, form: str, stream) -> None:
    import json

    if form == "json":
        stream.write(json.dumps(timings.as_json(), indent=1) + "\n")
    else:
        stream.write(timings.table() + "\n")


def alternate_calls(fns: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """Median seconds of each fn, timed alternately (one call of each per round) after warm-up."""
    for fn in fns:
        fn()
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def max_difference(results: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> float:
    return max((float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                if np.size(a) else 0.0 for a, b in zip(results, expected)), default=0.0)


def run_zoo(args) -> int:
    """`dlc bench --zoo`: benchmarks/zoo.py (beside the package's modules: an editable
    install or the repository) with the options given."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "zoo.py"
    if not path.is_file():
        raise ValueError(f"--zoo needs the repository's benchmarks/zoo.py (not found at {path})")
    zoo = sys.modules.get("dlc_zoo")
    if zoo is None:
        spec = importlib.util.spec_from_file_location("dlc_zoo", path)
        zoo = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = zoo  # (its dataclasses look their module up)
        spec.loader.exec_module(zoo)
    argv = ["--models", args.models, "--repeat", str(args.repeat or 5), "--paths", args.paths]
    argv += ["--layers", str(args.layers)] if args.layers else []
    argv += ["--image", str(args.image)] if args.image else []
    return zoo.main(argv + (["--list"] if args.list else []))


def cmd_bench(args) -> int:
    import inspect

    if args.zoo:
        return run_zoo(args)
    if args.model is None:
        raise ValueError("dlc bench needs MODEL.onnx (or --zoo)")
    args.repeat = args.repeat or 100

    import dlc
    from dlc.runtime import cache

    threads = "num_threads" in inspect.signature(dlc.compile).parameters  # (imports dlc first)
    options = {"num_threads": args.threads} if threads else {}
    start = time.perf_counter()
    with cache.disabled() if args.no_cache else contextlib.nullcontext():
        compiled = dlc.compile(args.model, opt_level=args.opt_level,
                               input_shapes=parse_shapes(args.input_shape), **options)
    compile_s = time.perf_counter() - start
    where = "cache disabled" if args.no_cache else "cache enabled: --no-cache for a real compile"
    print(f"dlc compiled in {compile_s:.2f} s (opt level {args.opt_level}; {where})")
    inputs = load_inputs(compiled, args.input, args.seed)
    try:
        import onnxruntime as ort
    except ImportError:
        (dlc_s,) = alternate_calls([lambda: compiled(inputs)], args.repeat)
        print(f"dlc: median {dlc_s * 1e3:.4f} ms over {args.repeat} runs")
        print("onnxruntime is not installed: no peer to compare with")
        return 0
    session_options = ort.SessionOptions()
    session_options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(str(args.model), session_options,
                                   providers=["CPUExecutionProvider"])
    error = max_difference(compiled(inputs), session.run(None, inputs))
    dlc_s, ort_s = alternate_calls([lambda: compiled(inputs), lambda: session.run(None, inputs)],
                                   args.repeat)
    dlc_threads = f"{args.threads} thread(s)" if threads else "single-threaded"
    print(f"dlc ({dlc_threads}): median {dlc_s * 1e3:.4f} ms over {args.repeat} runs")
    print(f"onnxruntime ({args.threads} thread(s)): median {ort_s * 1e3:.4f} ms "
          "(timed alternately with dlc)")
    print(f"dlc / onnxruntime time ratio: {dlc_s / ort_s:.2f} (lower is better); "
          f"max abs difference {error:.3g}")
    return 0


def cmd_pipeline(args) -> int:
    from dlc.compiler import default_threads
    from dlc.passes import pipeline

    threads = default_threads() if args.threads is None else args.threads
    if threads < 1:
        raise ValueError(f"--threads must be at least 1, got {threads}")
    print(pipeline(args.opt_level, num_threads=threads))
    return 0


def cmd_env(args) -> int:
    from dlc import settings

    print(settings.describe())
    return 0


def cmd_conformance(args) -> int:
    from dlc.testing import conformance

    return conformance.run(args)


def cmd_fuzz(args) -> int:
    from dlc.testing import fuzz

    return fuzz.run(args)


def version() -> str:
    """`dlc X` and the MLIR Python bindings' distribution and version (as `dlc-opt --version`)."""
    from dlc.tools.dlc_opt import version as opt_version

    return opt_version().replace("dlc-opt (dlc ", "dlc ", 1).replace(")", "", 1)


def build_parser() -> argparse.ArgumentParser:
    from dlc.passes import STAGES

    parser = argparse.ArgumentParser(prog="dlc", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="store_true",
                        help="print the versions of dlc and of the MLIR bindings, then exit")
    commands = parser.add_subparsers(dest="command", required=True)

    def model_command(name: str, help_text: str, optional: bool = False
                      ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("model", nargs="?" if optional else None,
                         help="the ONNX model file")
        sub.add_argument("-O", "--opt-level", type=int, default=2, choices=range(4))
        sub.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1",
                         help="static shape for an input with symbolic sizes")
        plugin_options(sub)
        return sub

    def plugin_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--load-pass-plugin", action="append", default=[],
                         metavar="FILE.py|MODULE", help="load the passes of a Python file or "
                         "module (repeatable)")
        sub.add_argument("--add-passes", action="append", default=[],
                         metavar="STAGE[@LEVELS]=PASSES",
                         help=f"run PASSES (pipeline text) at the end of STAGE ({', '.join(STAGES)})"
                         " at every opt level, or at LEVELS (2,3) only (repeatable)")

    run = model_command("run", "compile and run once, print each output's checksum")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--repeat", type=at_least(1), default=10, help="runs timed after the first")
    run.add_argument("--save", metavar="DIR", help="save each output as DIR/NAME.npy")
    run.set_defaults(handler=cmd_run)

    emit = model_command("compile", "print the IR after a stage, or where the time goes")
    emit.add_argument("--emit", choices=(*STAGES, "dot"), default=None,
                      help="the IR after a stage (default llvm; no later stage runs, no machine "
                           "code is made), or dot: the dlc graph as Graphviz")
    emit.add_argument("--timings", action="store_true",
                      help="seconds and peak RSS per stage and pass: alone, of a whole cold "
                           "compile (machine code, cache bypassed); with --emit, of the stages "
                           "run (on stderr beside the IR on stdout)")
    emit.add_argument("--json", action="store_true",
                      help="the timings as JSON (implies --timings; also --timings=json)")
    emit.add_argument("--stats", action="store_true",
                      help="print dlc op counts before/after the dlc stage and the "
                           "intermediate memory (sum, peak live, planned arena)")
    emit.add_argument("-o", "--output", help="write to this file instead of stdout")
    emit.add_argument("--elide", type=at_least(0), default=None, metavar="N",
                      help="elide constants with more than N elements (not re-parseable)")
    emit.set_defaults(handler=cmd_compile)

    bench = model_command("bench", "median latency of dlc and of onnxruntime, side by side",
                          optional=True)
    bench.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--repeat", type=at_least(1), default=None,
                       help="timed runs (default 100; with --zoo, best of 5)")
    bench.add_argument("--threads", type=at_least(1), default=1,
                       help="onnxruntime intra-op threads (and dlc's, where it has threads)")
    bench.add_argument("--no-cache", action="store_true",
                       help="compile with the compile cache disabled (a real compile time)")
    zoo = bench.add_argument_group("the zoo (--zoo, instead of MODEL.onnx)")
    zoo.add_argument("--zoo", action="store_true", help="run benchmarks/zoo.py: real models "
                     "(torchvision, transformers, timm) beside onnxruntime, one thread")
    zoo.add_argument("--models", default="all", help="the zoo's models (comma-separated)")
    zoo.add_argument("--layers", type=at_least(1), default=None,
                     help="layers of its transformers models")
    zoo.add_argument("--image", type=at_least(1), default=None,
                     help="image size of its vision models")
    zoo.add_argument("--paths", default="onnx,module,dynamo",
                     help="the ways into dlc: onnx (beside onnxruntime), module "
                     "(dlc.compile(nn.Module)) and dynamo (torch.compile), beside eager PyTorch")
    zoo.add_argument("--list", action="store_true", help="list the zoo's models")
    bench.set_defaults(handler=cmd_bench)

    from dlc.tools import bisect

    bis = model_command("bisect", "the first node (or pass, --opt-levels A,B) whose result "
                        "differs from onnxruntime's; a one-node reproducer")
    bisect.add_arguments(bis)
    bis.set_defaults(handler=bisect.run)

    pipe = commands.add_parser("pipeline", help="print the pass pipeline of an opt level")
    pipe.add_argument("-O", "--opt-level", type=int, default=2, choices=range(4))
    pipe.add_argument("--threads", type=at_least(1), default=None, metavar="N",
                      help="the threads of the compile (default: what `dlc run` uses on this "
                      "machine: $DLC_NUM_THREADS, else the cores this process may use)")
    plugin_options(pipe)
    pipe.set_defaults(handler=cmd_pipeline)

    env = commands.add_parser("env", help="dlc's environment variables: their values here "
                              "and what each does")
    env.set_defaults(handler=cmd_env)

    conf = commands.add_parser("conformance", help="run the ONNX backend node tests per op")
    from dlc.testing.conformance import add_arguments as conformance_arguments

    conformance_arguments(conf)  # (the suite's own options, one list)
    conf.add_argument("-j", "--jobs", type=at_least(1), default=2)
    conf.set_defaults(handler=cmd_conformance)

    from dlc.testing.fuzz import make_parser as fuzz_parser

    fuzz = commands.add_parser("fuzz", parents=[fuzz_parser(add_help=False)],
                               help="random graphs through dlc -O0/-O3 against onnxruntime")
    fuzz.set_defaults(handler=cmd_fuzz)

    from dlc.tools import explore

    exp = model_command("explore", "one self-contained HTML page: the graph, every stage's IR, "
                        "every pass's diff and time (--serve: on 127.0.0.1)")
    explore.add_arguments(exp)
    exp.set_defaults(handler=explore.run)

    from dlc.tools import export as export_command

    export_command.add_parser(commands, model_command)

    from dlc.tools import profile_cli

    profile_cli.add_parser(commands, model_command)

    from dlc.tools import tune_cli

    tune_cli.add_parser(commands, model_command)
    return parser


def extend_pipelines(args) -> None:
    """Load `--load-pass-plugin`s, then add `--add-passes` to the opt levels' stages."""
    from dlc.passes import extend_stage, load_plugin

    for plugin in getattr(args, "load_pass_plugin", []):
        load_plugin(plugin)
    for item in getattr(args, "add_passes", []):
        where, eq, passes = item.partition("=")
        stage, at, levels = where.partition("@")
        try:
            opt_levels = [int(x) for x in levels.split(",")] if at else [0, 1, 2, 3]
        except ValueError:
            opt_levels = []
        if not eq or not passes.strip() or not opt_levels:
            raise ValueError(f"--add-passes {item!r}: expected STAGE[@LEVELS]=PASSES, e.g. "
                             "dlc=my-pass,dlc-canonicalize or linalg@2,3=my-pass")
        extend_stage(stage.strip(), passes, opt_levels)


def main(argv: Sequence[str] | None = None) -> int:
    # --timings=json / --timings=table: spelled as flags (an optional value of --timings would
    # swallow the model path in `dlc compile --timings model.onnx`)
    argv = list(sys.argv[1:] if argv is None else argv)
    argv = [{"--timings=json": "--json", "--timings=table": "--timings"}.get(a, a) for a in argv]
    if argv[:1] == ["--version"]:  # (before the parser, which requires a command)
        print(version())
        return 0
    args = build_parser().parse_args(argv)
    from dlc.errors import DlcError

    try:
        extend_pipelines(args)
        return args.handler(args)
    except (DlcError, ValueError) as error:
        print(f"dlc: error: {cli_advice(str(error))}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as error:  # a file or folder the user named: unreadable, unwritable
        print(f"dlc: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # a bug in dlc: one line, not a traceback
        print(f"dlc: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
