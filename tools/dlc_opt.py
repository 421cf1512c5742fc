"""`dlc-opt`: parse, verify, transform and print MLIR that contains `dlc` ops, like mlir-opt.

    dlc-opt [FILE | -] [-o OUT] [-p PIPELINE | -O N [--until STAGE] | --PASS[="OPTS"] ...]
            [--split-input-file] [--verify-diagnostics] [--allow-unregistered-dialect]
            [--no-implicit-module] [--verify-each[=0|1]] [--mlir-disable-threading]
            [--mlir-print-ir-before-all] [--mlir-print-ir-after-all] [--mlir-timing]
            [--mlir-elide-elementsattrs-if-larger N] [--mlir-print-debuginfo]
            [--mlir-pretty-debuginfo] [--mlir-print-local-scope] [--mlir-print-op-generic]
            [--dump-pass-pipeline] [--no-dlc-verify]
    dlc-opt --list-passes | --version

Contract:
- Input is one file (or stdin: `-` or no argument). The IR is parsed in a Context from
  `dlc.dialects.make_context()` and verified twice: by MLIR (IRDL counts and types) and by
  `dlc.dialects.verify` (the shape rules IRDL cannot express; `--no-dlc-verify` skips them, to
  test the `dlc-verify` pass), then the pipeline runs and the result is printed. With no
  pipeline, dlc-opt only parses, verifies and prints.
- The pipeline is MLIR pipeline text mixing dlc's Python passes with upstream passes; it goes
  through `dlc.passes.build_pass_manager`, the only pipeline parser. `-O N` runs the named
  pipeline `dlc.passes.pipeline(N)` (cut after `--until STAGE`).
- Diagnostics print as `file:line:col: severity: message`, with the input's file name (`<stdin>`
  for stdin) in place of the parser's `-`. Name locations without a file position print as
  `name: severity: message`. Exit status: 0 success, 1 invalid input, pipeline or failed pass,
  2 a bug in dlc (one line `dlc-opt: internal error: ...`, never a traceback) or, from argparse,
  a bad command line.
- The command line is mlir-opt's: every long option may be written with one dash
  (`-split-input-file`, `-pass-pipeline=...`), and any dlc pass or upstream pass (as listed by
  `mlir-opt --help`) may be given as a flag, `-cse` or `--canonicalize="max-iterations=2"`;
  such flags form the pipeline in their order (an upstream pass restricted to `func.func` is
  nested in it, as mlir-opt nests implicitly) and exclude `-p` and `-O`.
- On upstream-only input the output and exit status are mlir-opt's (tests/tools/
  test_mlir_opt_parity.py runs both): each printed op is followed by an empty line, and with
  `--split-input-file` the chunks' outputs are joined by `// -----` lines, a failed chunk
  printing nothing. Printed locations name the input file (`<stdin>` for stdin).
- Hostile input is refused before MLIR can crash on it (`dlc.tools.opt_guards`): nesting deeper
  than 512 brackets, and shaped types whose size overflows int64.
- `--split-input-file` cuts the input at lines `// -----`, processes each chunk in its own
  Context (line numbers stay those of the whole file).
- `--verify-diagnostics` checks the diagnostics against `// expected-error {{text}}` comments
  (also `-warning`, `-remark`, `-note`; `@above`, `@below`, `@+N`, `@-N`, `@unknown`; `-re`
  for `{{regex}}` parts), as mlir-opt does: it fails on any unexpected diagnostic and on any
  expectation not met, and succeeds otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TextIO

from mlir import ir

from dlc.dialects import make_context, verify
from dlc.errors import DlcError
from dlc.passes import (
    OPT_LEVELS,
    STAGES,
    PipelineError,
    PluginError,
    build_pass_manager,
    describe,
    load_plugin,
    pipeline,
    registered_passes,
)
from dlc.passes.pipeline import nesting_hint, upstream_passes
from dlc.tools.diagnostics import (
    Collector,
    Diagnostic,
    Position,
    check_expectations,
    format_diagnostic,
    parse_expectations,
)
from dlc.tools.opt_guards import nesting_problems, oversized_types

EXIT_OK, EXIT_ERROR, EXIT_INTERNAL = 0, 1, 2
PROG = "dlc-opt"
SPLIT_MARKER = "// -----"
_SPLIT_LINE = re.compile(r"^[ \t]*//[ \t]*-----[ \t]*$")


class UsageError(DlcError):
    """Bad input the user can fix (unreadable file, invalid pipeline): one line, exit 1."""


# ----------------------------------------------------------------------------- processing


@dataclass(frozen=True)
class Chunk:
    """A part of the input, preceded by newlines so that line numbers are the file's."""

    text: str
    origin: str = "0:0"  # where mlir-opt's buffer for it starts: after the `// -----`


def split_input(text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text)]
    chunks, current, start, origin = [], [], 0, "0:0"
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if _SPLIT_LINE.match(line):
            chunks.append(Chunk("\n" * start + "".join(current), origin))
            current, start = [], number + 1
            origin = f"{number + 1}:{line.index('-----') + 6}"
            continue
        current.append(line)
    chunks.append(Chunk("\n" * start + "".join(current), origin))
    return chunks


@dataclass
class Result:
    output: str | None  # the printed IR; None when the chunk failed
    diagnostics: list[Diagnostic]


def process_chunk(chunk: Chunk, pass_pipeline: str | None, args: argparse.Namespace) -> Result:
    """Parse, verify, transform and print one chunk in a fresh Context."""
    collector = Collector(skip_operation_notes=args.verify_diagnostics)
    context = make_context()
    context.allow_unregistered_dialects = args.allow_unregistered_dialect
    if args.disable_threading:
        context.enable_multithreading(False)
    handler = context.attach_diagnostic_handler(collector.handler)
    try:
        with context, ir.Location.unknown():
            output = transform(chunk, pass_pipeline, args, collector)
    finally:
        handler.detach()
    if collector.has_errors:
        output = None
    return Result(output, collector.diagnostics)


def transform(
    chunk: Chunk, pass_pipeline: str | None, args: argparse.Namespace, collector: Collector
) -> str | None:
    unsafe = unsafe_arrays(chunk.text) + [
        Diagnostic("error", message, Position("-", line, col))
        for line, col, message in nesting_problems(chunk.text)
    ]
    collector.diagnostics.extend(unsafe)
    if unsafe:
        return None
    try:
        top = parse_top(chunk.text, args.no_implicit_module)
    except ir.MLIRError as error:
        collector.add_error(error)
        return None
    oversized = oversized_types(top)
    for location, message in oversized:
        collector.add(location, message)
    if oversized:
        return None
    problems = [] if args.no_dlc_verify else verify(top)
    for location, message in problems:
        collector.add(location, message)
    if problems:
        return None
    if pass_pipeline:
        pm = build_pass_manager(pass_pipeline)
        configure(pm, args)
        sys.stderr.flush()
        try:
            pm.run(top)
        except ir.MLIRError as error:
            collector.add_error(error)
            hint = nesting_hint(pass_pipeline, str(error))
            if hint:
                collector.diagnostics.append(Diagnostic("note", hint.lstrip("; "), Position()))
            return None
        finally:
            del pm  # the timing report prints when the PassManager goes away
    return top.get_asm(
        large_elements_limit=args.elide_limit,
        enable_debug_info=args.print_debuginfo,
        pretty_debug_info=args.pretty_debuginfo,
        print_generic_op_form=args.print_op_generic,
        use_local_scope=args.print_local_scope,
    )


def parse_top(text: str, no_implicit_module: bool) -> ir.Operation:
    """The top-level op of `text`: a builtin.module (wrapping the ops unless the text is one
    module), or with `--no-implicit-module` the single op the text must hold (as mlir-opt)."""
    if no_implicit_module:
        return ir.Operation.parse(text)
    return ir.Module.parse(text).operation


# MLIR (this build, with assertions) aborts the process on a dense array of a type that is not
# an integer or a float (`array<index: 0>`: parsing it, printing it or casting it): refuse first
_ARRAY = re.compile(r"(?<![\w.])array<\s*([^\s:>]+)")  # (not !llvm.array<2 x f32>, a type)
_INT_OR_FLOAT = re.compile(r"(?:[su]?i[0-9]+|bf16|tf32|f(?:16|32|64|80|128)|f[4-8]E\w+)")


def unsafe_arrays(text: str) -> list[Diagnostic]:
    """An error at each dense array literal whose element type would abort MLIR."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = line.split("//", 1)[0]
        for match in _ARRAY.finditer(code):
            element = match[1]
            if _INT_OR_FLOAT.fullmatch(element):
                continue
            found.append(Diagnostic(
                "error", f"dense array of '{element}': the element type of an array<...> "
                "must be an integer or float type", Position("-", number, match.start() + 1)))
    return found


def configure(pm, args: argparse.Namespace) -> None:
    if args.print_ir_before_all or args.print_ir_after_all:
        pm.enable_ir_printing(
            print_before_all=args.print_ir_before_all,
            print_after_all=args.print_ir_after_all,
            large_elements_limit=args.elide_limit,
        )
    if args.timing:
        pm.enable_timing()
    pm.enable_verifier(args.verify_each)


def chosen_pipeline(args: argparse.Namespace) -> str | None:
    """The pipeline to run, checked once up front (PipelineError -> UsageError)."""
    text = args.pass_pipeline
    if args.opt_level is not None:
        text = pipeline(args.opt_level, until=args.until or STAGES[-1])
    if args.pass_flags and text:
        raise UsageError("'-pass-pipeline' option can't be used with individual pass options")
    if args.pass_flags:
        text = f"builtin.module({','.join(nest_implicitly(args.pass_flags))})"
    if not text:
        return None
    try:
        context = make_context()
        build_pass_manager(text, context)
        if args.dump_pass_pipeline:
            print(describe(text), file=sys.stderr)
    except PipelineError as error:
        raise UsageError(str(error)) from None  # (with its did-you-mean)
    return text


_RESTRICTED = re.compile(r"restricted to '([\w.$-]+)'")


def nest_implicitly(passes: list[str]) -> list[str]:
    """Pass flags as pipeline elements; an upstream pass restricted to an op (`func.func`) is
    nested in that op, as mlir-opt's implicit nesting does for passes given as flags."""
    elements = []
    for element in passes:
        name = element.split("{", 1)[0]
        if name in registered_passes():
            elements.append(element)
            continue
        try:
            build_pass_manager(f"builtin.module({element})", make_context())
        except PipelineError as error:
            anchor = _RESTRICTED.search(str(error))
            if anchor:
                element = f"{anchor[1]}({element})"
        elements.append(element)
    return elements


def read_input(path: str) -> tuple[str, str]:
    """(text, display name) of the input file, or of stdin for `-`."""
    try:
        if path == "-":
            return sys.stdin.buffer.read().decode(), "<stdin>"
        return Path(path).read_text(encoding="utf-8"), path
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        name = "<stdin>" if path == "-" else f"'{path}'"
        raise UsageError(f"cannot read {name}: {reason}") from None


def run(args: argparse.Namespace) -> int:
    pass_pipeline = chosen_pipeline(args)
    text, display_name = read_input(args.input)
    source_lines = text.splitlines()
    outputs, failed = [], False
    for chunk in split_input(text, args.split_input_file):
        result = process_chunk(chunk, pass_pipeline, args)
        # as mlir-opt: each op printed is followed by an empty line, a failed chunk prints nothing
        output = result.output
        if output is not None and args.print_debuginfo and chunk.origin != "0:0":
            output = _IMPLICIT_MODULE.sub(chunk.origin, output)  # (the only line 0)
        outputs.append(f"{output}\n" if output is not None else "")
        if args.verify_diagnostics:
            problems = check_expectations(
                result.diagnostics, parse_expectations(chunk.text), display_name
            )
            for problem in problems:
                print(problem, file=sys.stderr)
            failed |= bool(problems)
            continue
        for diag in result.diagnostics:
            print(format_diagnostic(diag, display_name, source_lines), file=sys.stderr)
        failed |= result.output is None
    output = f"{SPLIT_MARKER}\n".join(outputs)
    if args.print_debuginfo:
        output = name_source_file(output, display_name)
    write_output(args.output, output)
    return EXIT_ERROR if failed else EXIT_OK


_IMPLICIT_MODULE = re.compile(r'(?<=loc\("-":)0:0(?=\))|(?<=[ (]-:)0:0\b')
_PARSER_FILE = re.compile(r'(?<=loc\()"-"(?=:\d+:\d+)|(?<=[ (])-(?=:\d+:\d+)')


def name_source_file(text: str, display_name: str) -> str:
    """Printed locations name the input file as mlir-opt's do: the bindings' module parser
    takes no source name and calls every file `-`."""
    quoted = display_name.replace("\\", "\\\\").replace('"', '\\"')
    return _PARSER_FILE.sub(
        lambda match: f'"{quoted}"' if match.group().startswith('"') else display_name, text)


def write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write '{path}': {error.strerror or error}") from None


# ----------------------------------------------------------------------------- --list-passes


_DESCRIPTION_INDENT = 23


def list_passes(out: TextIO) -> None:
    out.write("dlc passes (any upstream MLIR pass may be mixed with them):\n")
    for name, cls in registered_passes().items():
        # the whole first paragraph of the docstring, wrapped (its first line may stop
        # mid-sentence)
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n", 1)[0].split())
        head = f"  {name:<20} "
        if len(head) > _DESCRIPTION_INDENT:
            out.write(head.rstrip() + "\n")
            head = ""
        out.write(textwrap.fill(doc, width=100, initial_indent=head.ljust(_DESCRIPTION_INDENT),
                                subsequent_indent=" " * _DESCRIPTION_INDENT,
                                break_on_hyphens=False) + "\n")
        out.writelines(f"    {option}={_type_name(spec.type)} (default {spec.default!r})\n"
                       for option, spec in cls.options().items())
    out.write("\nnamed pipelines (-O N):\n")
    out.writelines(f"  -O{level}  {pipeline(level)}\n" for level in OPT_LEVELS)


def _type_name(annotation) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "?")


# ----------------------------------------------------------------------------- command line


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Parse, verify, transform and print MLIR with dlc ops. Every "
        "long option may also be written with one dash (-split-input-file), as in mlir-opt; "
        "any dlc or upstream pass may be given as a flag (-canonicalize='max-iterations=2').",
        allow_abbrev=False,  # mlir-opt has no abbreviations: --verify is not --verify-each
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file (default stdin)")
    parser.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("-p", "--pass-pipeline", metavar="PIPELINE",
                        help="pipeline text, e.g. 'builtin.module(dlc-canonicalize,cse)'")
    chosen.add_argument("-O", "--opt-level", type=int, choices=OPT_LEVELS,
                        help="run the named pipeline of this opt level")
    parser.add_argument("--until", choices=STAGES,
                        help=f"with -O: stop after this stage (default: {STAGES[-1]})")
    parser.add_argument("--list-passes", action="store_true",
                        help="list dlc's passes and named pipelines, then exit")
    parser.add_argument("--split-input-file", action="store_true",
                        help=f"process each chunk between '{SPLIT_MARKER}' lines on its own")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against 'expected-error {{...}}' comments")
    parser.add_argument("--no-dlc-verify", action="store_true",
                        help="skip the dlc shape rules after parsing (to test dlc-verify)")
    parser.add_argument("--dump-pass-pipeline", action="store_true",
                        help="print the pipeline (dlc pass options spelled out) to stderr")
    parser.add_argument("--mlir-print-ir-before-all", dest="print_ir_before_all",
                        action="store_true", help="print the IR before each pass (stderr)")
    parser.add_argument("--mlir-print-ir-after-all", dest="print_ir_after_all",
                        action="store_true", help="print the IR after each pass (stderr)")
    parser.add_argument("--mlir-timing", dest="timing", action="store_true",
                        help="print the time of each pass (stderr)")
    parser.add_argument("--mlir-elide-elementsattrs-if-larger", dest="elide_limit", type=count,
                        metavar="N", help="elide elements attributes with more than N elements")
    parser.add_argument("--mlir-print-debuginfo", dest="print_debuginfo", action="store_true",
                        help="print locations")
    parser.add_argument("--mlir-print-op-generic", dest="print_op_generic", action="store_true",
                        help="print every op in generic form")
    parser.add_argument("--mlir-pretty-debuginfo", dest="pretty_debuginfo", action="store_true",
                        help="print locations, in pretty form")
    parser.add_argument("--mlir-print-local-scope", dest="print_local_scope",
                        action="store_true", help="print types and attributes inline (no aliases)")
    parser.add_argument("--mlir-disable-threading", dest="disable_threading",
                        action="store_true", help="run passes on one thread")
    parser.add_argument("--allow-unregistered-dialect", action="store_true",
                        help="accept ops of unknown dialects (kept as generic ops)")
    parser.add_argument("--no-implicit-module", action="store_true",
                        help="the input is one top-level op, not wrapped in a builtin.module")
    parser.add_argument("--verify-each", type=boolean, nargs="?", const=True, default=True,
                        metavar="BOOL", help="verify the IR after each pass (default 1)")
    parser.add_argument("--version", action="store_true",
                        help="print the versions of dlc and of the MLIR bindings, then exit")
    parser.add_argument("--cpu-target", choices=("host", "avx512", "avx2"), default="host",
                        help="the CPU dlc-schedule's register tiles are for (default: this "
                        "host's; avx512: 8 x 32 matmul tiles, avx2: 4 x 16)")
    parser.add_argument("--load-pass-plugin", action="append", default=[],
                        metavar="FILE.py|MODULE",
                        help="load the passes of a Python file or module (repeatable); they "
                        "can then be named in pipelines and given as flags")
    return parser


def boolean(text: str) -> bool:
    """An argparse type: an LLVM command-line boolean (1/0, true/false)."""
    value = {"1": True, "true": True, "0": False, "false": False}.get(text.lower())
    if value is None:
        raise ValueError(text)
    return value


def normalize(argv: Sequence[str], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """(argv with mlir-opt spellings made argparse's, the pass flags as pipeline elements).

    `-split-input-file` becomes `--split-input-file`; `--cse` and `-canonicalize="opt=1"` (any
    dlc pass, or upstream pass `mlir-opt --help` lists) become `cse` and `canonicalize{opt=1}`,
    in the order given. The value after an option that takes one is left alone."""
    options = parser._option_string_actions  # argparse has no public lookup
    load_plugins(argv)  # (first: a plugin's passes may be given as flags)
    out: list[str] = []
    passes: list[str] = []
    arguments = iter(argv)
    for arg in arguments:
        name, eq, value = arg.lstrip("-").partition("=")
        dashes = len(arg) - len(arg.lstrip("-"))
        is_long = f"--{name}" in options
        is_short = dashes == 1 and f"-{name[:1]}" in options  # -O3, -oFILE, -p TEXT
        if dashes == 1 and len(name) > 1 and (is_long or not is_short and is_pass(name)):
            arg, dashes = f"-{arg}", 2
        if dashes == 2 and not is_long and is_pass(name):
            passes.append(f"{name}{{{value.strip()}}}" if eq else name)
            continue
        action = options.get(arg)
        if action is not None and action.nargs == "?" and not eq:
            arg = f"{arg}=1"  # a bare LLVM boolean flag never takes the next argument
        out.append(arg)
        if action is not None and action.nargs is None and not eq:
            out.append(next(arguments, ""))  # the option's value, whatever it looks like
    return out, passes


def load_plugins(argv: Sequence[str]) -> None:
    """Load every `--load-pass-plugin` of `argv` (either spelling, `=VALUE` or `VALUE`)."""
    for index, arg in enumerate(argv):
        name, eq, value = arg.lstrip("-").partition("=")
        if name != "load-pass-plugin" or not arg.startswith("-"):
            continue
        if not eq:
            value = argv[index + 1] if index + 1 < len(argv) else ""
        if not value:
            raise UsageError("--load-pass-plugin needs a Python file or module name")
        try:
            load_plugin(value)
        except PluginError as error:
            raise UsageError(str(error)) from None


def is_pass(name: str) -> bool:
    return name in registered_passes() or name in upstream_passes()


def version() -> str:
    """`dlc-opt (dlc X)` and the MLIR Python bindings' distribution and version."""
    lines = [f"{PROG} (dlc {_version('dlc')})"]
    for dist in sorted(set(metadata.packages_distributions().get("mlir", []))):
        lines.append(f"MLIR Python bindings: {dist} {_version(dist)}")
    return "\n".join(lines)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "(not installed as a distribution)"


def count(text: str) -> int:
    """An argparse type: an integer >= 0 (at most int64's largest: MLIR's printer limits)."""
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return min(value, 2**63 - 1)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = make_parser()
    argv, passes = normalize(sys.argv[1:] if argv is None else argv, parser)
    args = parser.parse_args(argv)
    args.pass_flags = passes
    if args.until is not None and args.opt_level is None:
        parser.error("--until needs -O N")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        if args.list_passes:
            list_passes(sys.stdout)
            return EXIT_OK
        if args.version:
            print(version())
            return EXIT_OK
        from dlc.passes.codegen import target

        with target.use(args.cpu_target):
            return run(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # the reader went away (`dlc-opt ... | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001  (a bug in dlc: one line, never a traceback)
        detail = str(error).strip().splitlines()
        reason = f"{type(error).__name__}: {detail[0]}" if detail else type(error).__name__
        print(f"{PROG}: internal error: {reason}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
