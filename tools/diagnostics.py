"""Diagnostics of `dlc-opt` as mlir-opt prints them, and `--verify-diagnostics`' expectations.

- `Diagnostic`, `Position`, `Collector`: every diagnostic of one input chunk, from MLIRError
  exceptions and from the context's handler, with its file position resolved from its MLIR
  location (`resolve`); `format_diagnostic` prints `file:line:col: severity: message` with
  the source line and a caret, as mlir-opt.
- `Expectation`, `parse_expectations`, `check_expectations`: the `// expected-error {{text}}`
  comments (also `-warning`, `-remark`, `-note`; `@above`, `@below`, `@+N`, `@-N`,
  `@unknown`; `-re` for `{{regex}}` parts) and their check against the diagnostics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlir import ir

_CURRENT_OPERATION_NOTE = "see current operation:"


# ----------------------------------------------------------------------------- diagnostics


@dataclass(frozen=True)
class Position:
    """Where a diagnostic points: a file position, a bare location name, or nowhere."""

    file: str | None = None
    line: int = 0
    col: int = 0
    name: str | None = None

    def render(self, display_name: str) -> str:
        if self.file is not None:
            file = display_name if self.file == "-" else self.file
            return f"{file}:{self.line}:{self.col}"
        return self.name or display_name


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error", "warning", "remark" or "note"
    message: str
    position: Position


def resolve(location: ir.Location) -> Position:
    """The first file position in `location` (through names, call sites and fusions)."""
    if location.is_a_file():
        return Position(location.filename, location.start_line, location.start_col)
    if location.is_a_name():
        inner = resolve(location.child_loc)
        return inner if inner.file is not None else Position(name=location.name_str)
    if location.is_a_callsite():
        inner = resolve(location.callee)
        return inner if inner.file is not None else resolve(location.caller)
    if location.is_a_fused():
        positions = [resolve(loc) for loc in location.locations]
        return next((p for p in positions if p.file is not None), Position())
    return Position()


def severity_name(severity) -> str:
    return str(severity).rsplit(".", 1)[-1].lower()


def diagnostics_of(info, skip_operation_notes: bool) -> list[Diagnostic]:
    """A diagnostic (ir.Diagnostic or ir.DiagnosticInfo) and its notes, flattened."""
    found = [Diagnostic(severity_name(info.severity), info.message, resolve(info.location))]
    for note in info.notes:
        if skip_operation_notes and note.message.startswith(_CURRENT_OPERATION_NOTE):
            continue
        found.extend(diagnostics_of(note, skip_operation_notes))
    return found


@dataclass
class Collector:
    """Every diagnostic of one chunk: from MLIRError exceptions and from the context handler."""

    skip_operation_notes: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def handler(self, diagnostic) -> bool:
        self.diagnostics.extend(diagnostics_of(diagnostic, self.skip_operation_notes))
        return True

    def add_error(self, error: ir.MLIRError) -> None:
        """The diagnostics of an `ir.MLIRError`, or its message when it carries none."""
        for info in error.error_diagnostics:
            self.diagnostics.extend(diagnostics_of(info, self.skip_operation_notes))
        if not error.error_diagnostics:
            self.diagnostics.append(Diagnostic("error", str(error), Position()))

    def add(self, location: ir.Location, message: str) -> None:
        self.diagnostics.append(Diagnostic("error", message, resolve(location)))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


def format_diagnostic(diag: Diagnostic, display_name: str, source_lines: list[str]) -> str:
    """`file:line:col: severity: message`, then the source line and a caret (as mlir-opt)."""
    text = f"{diag.position.render(display_name)}: {diag.severity}: {diag.message}"
    position = diag.position
    if diag.severity == "note" or position.file != "-":
        return text
    if not 0 < position.line <= len(source_lines):
        return text
    line = source_lines[position.line - 1]
    caret = " " * max(position.col - 1, 0) + "^"
    return f"{text}\n{line}\n{caret}"


# ----------------------------------------------------------------------------- expectations


# `expected-error @+1 {{`: the text runs to the last `}}` before the next designator (or the end
# of the line), so that `-re` texts may hold `{{regex}}` parts and a line may hold several.
_DESIGNATOR = re.compile(
    r"expected-(?P<severity>error|warning|remark|note)(?P<regex>-re)?"
    r"[ \t]*(?:@(?P<where>[+-][0-9]+|above|below|unknown))?[ \t]*\{\{"
)


@dataclass
class Expectation:
    severity: str
    text: str
    is_regex: bool
    line: int  # the line the diagnostic must point at; 0 for @unknown
    comment_line: int
    comment_col: int
    matched: bool = False

    def matches(self, diag: Diagnostic) -> bool:
        if self.matched or diag.severity != self.severity:
            return False
        if expected_line(diag.position) != self.line:
            return False
        if not self.is_regex:
            return self.text in diag.message
        return re.search(expectation_regex(self.text), diag.message) is not None


def expected_line(position: Position) -> int | None:
    """The line an expectation names for `position`: 0 is `@unknown`, None never matches."""
    if position.file is None:
        return 0
    return position.line if position.file == "-" else None


def expectation_regex(text: str) -> str:
    """mlir-opt's `-re` syntax: literal text with `{{regex}}` parts."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return "".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts))


def parse_expectations(text: str) -> list[Expectation]:
    """The `expected-*` comments of `text` (line numbers are 1-based lines of `text`)."""
    expectations: list[Expectation] = []
    pending_below: list[Expectation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found = list(_DESIGNATOR.finditer(line))
        if not found:
            for expectation in pending_below:
                expectation.line = number
            pending_below.clear()
            continue
        ends = [m.start() for m in found[1:]] + [len(line)]
        for match, end in zip(found, ends, strict=True):
            body = line[match.end():end].rstrip()
            if not body.endswith("}}"):
                continue  # no closing braces: not an expectation
            expectation = make_expectation(match, body[:-2], number)
            expectations.append(expectation)
            if match["where"] == "below":
                pending_below.append(expectation)
    return expectations


def make_expectation(match: re.Match, text: str, number: int) -> Expectation:
    where = match["where"]
    line = number
    if where == "above":
        line = number - 1
    elif where == "unknown":
        line = 0
    elif where and where[0] in "+-":
        line = number + int(where)
    return Expectation(match["severity"], text, bool(match["regex"]), line, number,
                       match.start() + 1)


def check_expectations(
    diagnostics: list[Diagnostic], expectations: list[Expectation], display_name: str
) -> list[str]:
    """The mismatches between `diagnostics` and `expectations`, as error lines."""
    problems = []
    for diag in diagnostics:
        expectation = next((e for e in expectations if e.matches(diag)), None)
        if expectation is None:
            where = diag.position.render(display_name)
            problems.append(f"{where}: error: unexpected {diag.severity}: {diag.message}")
            continue
        expectation.matched = True
    for e in expectations:
        if not e.matched:
            problems.append(
                f"{display_name}:{e.comment_line}:{e.comment_col}: error: expected "
                f"{e.severity} \"{e.text}\" was not produced"
            )
    return problems
