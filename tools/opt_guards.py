"""Guards that keep hostile MLIR input from killing `dlc-opt` (or any process that parses it).

Contract:
- `nesting_problems(text)` is a cheap lexical pre-scan, run before MLIR sees the text. MLIR's
  parser, verifier, printer and passes recurse once per level of nesting, so IR nested a few
  thousand levels deep overflows the C++ stack (SIGSEGV, not an exception). The scan counts the
  open brackets `(`, `[`, `{` and `<` (skipping string literals, `//` comments and the `->` arrow)
  and reports the first place where more than `MAX_NESTING` are open, as (line, column, message).
  A `>` closes only a `<` (so `>=` in an affine set is no bracket); a `)`, `]` or `}` closes its
  opener and any `<` left open inside it. The scan only measures depth: unbalanced brackets are
  the parser's to report.
- `oversized_types(top)` walks every op after parsing: the types of its results, of the
  arguments of the blocks of its regions, and those inside its attributes (type attributes,
  function types, the type of typed attributes, arrays and dictionaries, recursively). A shaped
  type (tensor, memref, vector) whose size in bits does not fit in an int64 is reported at the
  op's location: MLIR computes sizes and strides in int64 and asserts (SIGABRT) or silently
  wraps when they overflow (`one-shot-bufferize` on `tensor<4611686018427387904x4xf32>`).
  Dynamic dimensions count as 1; an element type of unknown size counts as 8 bits.
- Both return a list of problems, empty when the input is safe; neither raises on any input.
"""

from __future__ import annotations

import re

from mlir import ir

MAX_NESTING = 512  # brackets open at once; real IR stays below 50, MLIR crashes past ~3000
MAX_BITS = 2**63 - 1  # the size of a shaped type in bits must fit in an int64

# one token per match: a string literal (to its closing quote or the end of the line), a
# comment, the `->` arrow, or a bracket; everything else is skipped by finditer
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|->|[()\[\]{}<>]')
_OPENER = {")": "(", "]": "[", "}": "{"}


def nesting_problems(text: str) -> list[tuple[int, int, str]]:
    """(line, column, message) where `text` first nests more than MAX_NESTING brackets."""
    stack: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match[0]
        if token in "([{<":
            stack.append(token)
            if len(stack) > MAX_NESTING:
                return [(*_line_col(text, match.start()), _nesting_message())]
            continue
        if token == ">":
            if stack and stack[-1] == "<":
                stack.pop()
            continue
        opener = _OPENER.get(token)
        if opener is None or opener not in stack:
            continue  # a string, a comment, an arrow, or a stray closer for the parser
        while stack.pop() != opener:
            pass
    return []


def _nesting_message() -> str:
    return (f"IR nested more than {MAX_NESTING} brackets deep ('(', '[', '{{', '<' open at "
            "once): refused before parsing, since MLIR's recursive parser would overflow the "
            "stack; flatten the nesting")


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


# ----------------------------------------------------------------------------- type sizes


def oversized_types(top: ir.Operation) -> list[tuple[ir.Location, str]]:
    """(op location, message) for each op in `top` (itself included) with a shaped type too
    large for int64 sizes."""
    problems: list[tuple[ir.Location, str]] = []

    def check(op: ir.Operation) -> ir.WalkResult:
        problem = _op_problem(op)
        if problem:
            problems.append((op.location, f"'{op.name}' op {problem}"))
        return ir.WalkResult.ADVANCE

    top.walk(check, ir.WalkOrder.PRE_ORDER)  # in reading order
    return problems


def _op_problem(op: ir.Operation) -> str | None:
    """What is too large in `op` (its first such type), or None."""
    for i, result in enumerate(op.results):
        found = _too_large(result.type)
        if found:
            return f"result #{i} has {found}"
    for r, region in enumerate(op.regions):
        for block in region.blocks:
            for i, argument in enumerate(block.arguments):
                found = _too_large(argument.type)
                if found:
                    return f"block argument #{i} of region #{r} has {found}"
    attributes = op.attributes
    for name in attributes:  # iterating an op's attributes yields their names
        found = _attribute_too_large(attributes[name])
        if found:
            return f"attribute '{name}' has {found}"
    return None


def _attribute_too_large(attr: ir.Attribute) -> str | None:
    """The description of an oversized type inside `attr` (iterative: arrays nest)."""
    pending = [attr]
    while pending:
        attr = pending.pop().maybe_downcast()
        if isinstance(attr, ir.ArrayAttr):
            pending.extend(attr)
            continue
        if isinstance(attr, ir.DictAttr):
            pending.extend(named.attr for named in attr)
            continue
        kind = attr.value if isinstance(attr, ir.TypeAttr) else attr.type
        found = _too_large(kind)
        if found:
            return found
    return None


def _too_large(kind: ir.Type) -> str | None:
    """`type 'T' of N bits, ...` for the first shaped type in `kind` too large, else None."""
    pending = [kind]
    while pending:
        kind = pending.pop().maybe_downcast()
        if isinstance(kind, ir.FunctionType):
            pending.extend([*kind.inputs, *kind.results])
            continue
        if isinstance(kind, ir.TupleType):
            pending.extend(kind.get_type(i) for i in range(kind.num_types))
            continue
        if not isinstance(kind, ir.ShapedType) or not kind.has_rank:
            continue
        bits = _bits(kind)
        if bits > MAX_BITS:
            return (f"type '{kind}' of {bits // 8} bytes: sizes past 2^63 bits overflow MLIR's "
                    "int64 size arithmetic; use smaller or dynamic ('?') dimensions")
    return None


def _bits(kind: ir.Type) -> int:
    """The size of `kind` in bits, as a Python int (no overflow); unknown scalars are 8 bits."""
    kind = kind.maybe_downcast()
    if isinstance(kind, ir.ShapedType) and kind.has_rank:
        elements = 1
        for dim in kind.shape:
            elements *= max(dim, 1)  # a dynamic dimension is a negative sentinel
        return elements * _bits(kind.element_type)
    if isinstance(kind, ir.ComplexType):
        return 2 * _bits(kind.element_type)
    if isinstance(kind, ir.IndexType):
        return 64
    return max(getattr(kind, "width", 8), 1)
