"""Textual pass pipelines mixing dlc's Python passes with upstream MLIR passes.

`build_pass_manager(text)` is the only way dlc builds a PassManager (dlc-opt and the Python API
both use it). It accepts standard MLIR pipeline text, e.g.
`builtin.module(dlc-canonicalize,dlc-to-linalg,func.func(linalg-fuse-elementwise-ops))`.
`PassManager.parse` does not know Python passes, so the text is parsed here: dlc passes become
Python callbacks, every other element goes to MLIR as text (MLIR reports unknown names).
A dlc pass written inside a nested anchor (`func.func(dlc-x)`) runs at module level, on every
function, in the same position of the sequence.

Hostile text is refused with a PipelineError, never a crash: anchors nest at most
`MAX_PIPELINE_DEPTH` deep (the parser recurses once per level, and so does MLIR's), and every
anchor must name a registered operation (`builtin.module`, `func.func`, `gpu.module`, any
`dialect.op` of a dialect registered in the context) or be `any`; a misspelled anchor would
otherwise be accepted and its passes silently never run. A misspelled anchor, pass (dlc's or
upstream's) or option gets the closest name as a suggestion (`; did you mean 'cse'?`), the
upstream names as `mlir-opt --help` lists them (`upstream_passes()`).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import mlir
from mlir import ir
from mlir.passmanager import PassManager

from dlc.passes.registry import (
    ModulePass,
    PipelineError,
    did_you_mean,
    make_pass,
    registered_passes,
)

MAX_PIPELINE_DEPTH = 64  # nested anchors; real pipelines use 2 or 3
KNOWN_ANCHORS = ("builtin.module", "func.func", "gpu.module", "gpu.func", "llvm.func",
                 "spirv.module", "spirv.func", "any")


@dataclass
class Element:
    """One pipeline element: a pass `name{options}` or an anchor `name(children)`."""

    name: str
    options: str | None = None
    children: list[Element] | None = None

    def text(self) -> str:
        if self.children is not None:
            return f"{self.name}({','.join(c.text() for c in self.children)})"
        return f"{self.name}{{{self.options}}}" if self.options is not None else self.name


@dataclass
class _Parser:
    text: str
    pos: int = 0
    depth: int = 0  # anchors open at `pos`
    elements: list[Element] = field(default_factory=list)

    def error(self, message: str) -> PipelineError:
        shown = self.text if len(self.text) <= 200 else f"{self.text[:200]}..."
        return PipelineError(f"{message} at column {self.pos + 1} of pipeline '{shown}'")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def parse_list(self, closing: str | None) -> list[Element]:
        elements: list[Element] = []
        while True:
            self.skip_space()
            if closing and self.peek() == closing and not elements:
                self.pos += 1
                return elements
            elements.append(self.parse_element())
            self.skip_space()
            char = self.peek()
            if char == ",":
                self.pos += 1
                continue
            if char == closing:
                if closing:
                    self.pos += 1
                return elements
            raise self.error(f"expected ',' or {closing!r}" if closing else "expected ','")

    def peek(self) -> str | None:
        return self.text[self.pos] if self.pos < len(self.text) else None

    def parse_element(self) -> Element:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or
                                              self.text[self.pos] in "-_."):
            self.pos += 1
        name = self.text[start:self.pos]
        if not name:
            raise self.error("expected a pass or op name")
        if self.peek() == "{":
            return Element(name, options=self.parse_braced())
        if self.peek() != "(":
            return Element(name)
        if self.depth == MAX_PIPELINE_DEPTH:
            raise self.error(f"anchors nested more than {MAX_PIPELINE_DEPTH} deep")
        self.pos += 1
        self.depth += 1
        children = self.parse_list(")")
        self.depth -= 1
        return Element(name, children=children)

    def parse_braced(self) -> str:
        depth, start = 0, self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            depth += char == "{"
            depth -= char == "}"
            self.pos += 1
            if depth == 0:
                return self.text[start + 1:self.pos - 1].strip()
        raise self.error("unbalanced '{'")


def parse_pipeline(text: str) -> list[Element]:
    """The module-level elements of `text` (an outer `builtin.module(...)` is unwrapped)."""
    parser = _Parser(text.strip())
    if not parser.text:
        return []
    elements = parser.parse_list(None)
    if parser.pos != len(parser.text):
        raise parser.error("unexpected text")
    (first, *rest) = elements
    if not rest and first.name == "builtin.module" and first.children is not None:
        return first.children
    return elements


Segment = ModulePass | str


def _segments(elements: list[Element], passes: dict[str, type[ModulePass]]) -> list[Segment]:
    """Flatten into module-level segments: dlc passes, and MLIR pipeline text."""
    out: list[Segment] = []
    for element in elements:
        if element.children is None and element.name in passes:
            out.append(make_pass(element.name, element.options))
            continue
        if element.children is None:
            out.append(element.text())
            continue
        run: list[str] = []
        for segment in _segments(element.children, passes):
            if isinstance(segment, str):
                run.append(segment)
                continue
            if run:
                out.append(f"{element.name}({','.join(run)})")
                run = []
            out.append(segment)
        if run or not element.children:
            out.append(f"{element.name}({','.join(run)})")
    return out


_UNKNOWN_PASS = re.compile(r"'([^']+)' does not refer to a registered pass or pass pipeline")
_NO_OPTION = re.compile(r"no such option ([\w-]+).*?failed to add `([\w.-]+)`", re.DOTALL)


@cache
def upstream_passes() -> dict[str, list[str]]:
    """Upstream pass and pipeline names with their options, from `mlir-opt --help` ({} if
    the tool is missing: suggestions are a courtesy)."""
    tool = Path(mlir.__path__[0]) / "bin" / "mlir-opt"
    try:
        text = subprocess.run([str(tool), "--help"], capture_output=True, text=True,
                              timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    passes: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        found = re.match(r"^( {6}| {8})--([\w.-]+)", line)
        if not found:
            continue
        if len(found[1]) == 6:
            current = passes.setdefault(found[2], [])
        else:
            current.append(found[2])
    return passes


def _upstream_error(joined: str, message: str) -> PipelineError:
    """One line out of MLIR's multi-line pipeline error (whose caret points into `joined`),
    with the closest pass or option name when one is misspelled."""
    unknown = _UNKNOWN_PASS.search(message)
    if unknown:
        known = ", ".join(registered_passes())
        hint = did_you_mean(unknown[1], [*registered_passes(), *upstream_passes()])
        return PipelineError(
            f"unknown pass '{unknown[1]}': neither a dlc pass ({known}) "
            f"nor a registered MLIR pass or pass pipeline{hint}"
        )
    lines = [line.strip() for line in message.splitlines()]
    lines = [line for line in lines if line and line != "^" and line != joined]
    no_option = _NO_OPTION.search(message)
    hint = did_you_mean(no_option[1], upstream_passes().get(no_option[2], [])) if no_option else ""
    return PipelineError(f"invalid pipeline '{joined}': {'; '.join(lines)}{hint}")


_UNSCHEDULABLE = re.compile(r"unable to schedule pass '(\w+)' on a PassManager intended to run on "
                            r"'builtin\.module'")


def nesting_hint(text: str, message: str) -> str:
    """For MLIR's "unable to schedule pass 'X' on a PassManager intended to run on
    'builtin.module'" (a pass of functions written at module level, which `mlir-opt` refuses
    too: its implicit nesting leaves interface passes where they are), the pipeline written
    with each such pass nested in `func.func(...)`, as a hint; "" for any other message.

    Which passes are the culprits is found by running each module-level upstream pass of
    `text` alone on an empty module (cheap, and only once the pipeline has failed)."""
    if not _UNSCHEDULABLE.search(message):
        return ""
    try:
        elements = parse_pipeline(text)
    except PipelineError:
        return ""
    dlc_passes = registered_passes()
    nested, changed = [], False
    with ir.Context():
        for element in elements:
            if element.children is None and element.name not in dlc_passes and \
                    not _schedules_on_module(element.text()):
                nested.append(f"func.func({element.text()})")
                changed = True
            else:
                nested.append(element.text())
    if not changed:
        return ""
    return (f"; a pass of functions must be nested in the functions: "
            f"'builtin.module({','.join(nested)})'")


def _schedules_on_module(text: str) -> bool:
    try:
        PassManager.parse(f"builtin.module({text})").run(ir.Module.parse("module {}").operation)
    except (ValueError, ir.MLIRError) as error:
        return not _UNSCHEDULABLE.search(str(error))
    return True


def check_anchors(elements: list[Element], context: ir.Context) -> None:
    """PipelineError unless every `op(...)` of the pipeline names an operation registered in
    `context` (or is `any`): MLIR accepts any name and never runs the passes nested in it."""
    pending = list(elements)
    while pending:
        element = pending.pop(0)
        if element.children is None:
            continue
        pending[:0] = element.children  # depth first, so the first bad anchor is reported
        if element.name == "any" or context.is_registered_operation(element.name):
            continue
        raise PipelineError(
            f"'{element.name}(...)' in the pipeline names no registered operation: the passes "
            f"nested in it would never run{did_you_mean(element.name, KNOWN_ANCHORS)}"
        )


def build_pass_manager(text: str, context: ir.Context | None = None) -> PassManager:
    """A PassManager on builtin.module running the pipeline `text`; PipelineError if invalid.

    Without `context`, the current Context (`with context:`) is used, as PassManager does."""
    elements = parse_pipeline(text)
    pm = PassManager("builtin.module", context=context)
    context = context or ir.Context.current
    if context is not None:
        check_anchors(elements, context)
    segments = _segments(elements, registered_passes())
    pending: list[str] = []

    def flush() -> None:
        if not pending:
            return
        joined = ",".join(pending)
        pending.clear()
        try:
            pm.add(joined)
        except (ValueError, ir.MLIRError) as error:
            raise _upstream_error(joined, str(error)) from None

    for segment in segments:
        if isinstance(segment, str):
            pending.append(segment)
            continue
        flush()
        segment.add_to(pm)
    flush()
    return pm


def describe(text: str) -> str:
    """The pipeline as canonical text (dlc passes with their options spelled out)."""
    segments = _segments(parse_pipeline(text), registered_passes())
    parts = [s if isinstance(s, str) else s.pipeline_text() for s in segments]
    return f"builtin.module({','.join(parts)})"
