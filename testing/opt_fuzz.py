"""A mutation fuzzer for `dlc-opt`: mutated lit test inputs must never crash it.

    python -m dlc.testing.opt_fuzz [-n COUNT] [--seed S] [-j JOBS] [--out DIR] [--timeout SECONDS]
                                   [--corpus DIR]

Contract:
- The corpus is every `**/*.mlir` (without `Output/`) of `--corpus`, by default the repository's
  `lit_tests/` beside the package (an installed, not editable, dlc has none: name the folder of
  a checkout). Mutant `i` of seed `s` is drawn
  from `numpy.random.default_rng([s, i])`: one lit file, one to three mutations (truncate,
  delete lines, duplicate a line, swap two tokens, change an element type, change a number,
  rename an op, insert stray characters, nest brackets thousands deep, make a dimension so
  large the type's byte size overflows int64) and one invocation (parse only, `-O0`, `-O3`,
  `--until linalg`, a few `-p` pipelines, `--split-input-file` with `--verify-diagnostics`).
- Each mutant runs `dlc.tools.dlc_opt.main` in a worker process; a mutant is *flagged* when the
  worker dies (a signal or abort: `crash`), runs past `--timeout` (`hang`), exits with a status
  other than 0 or 1, or prints a Python traceback or `internal error` (`internal`). Clean
  diagnostics with exit status 1 are the expected answer to broken IR.
- Flagged mutants are saved as `<out>/<seed>-<index>-<kind>.mlir` with the command line and the
  output's last lines beside them (`.txt`). Exit status 1 when any mutant is flagged.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

from dlc.testing.fuzz import Worker

LIT_DIR = Path(__file__).resolve().parents[1] / "lit_tests"
INVOCATIONS = (
    [],
    ["-O0"],
    ["-O3"],
    ["-O2", "--until", "linalg"],
    ["-p", "builtin.module(dlc-canonicalize)"],
    ["-p", "builtin.module(dlc-verify,dlc-to-linalg,canonicalize,cse)"],
    ["-p", "builtin.module(dlc-simplify,dlc-fold-constants,dlc-sink-transpose)"],
    ["--no-dlc-verify", "-p", "builtin.module(dlc-verify)"],
    ["--split-input-file", "--verify-diagnostics"],
    ["--split-input-file", "-O1"],
    ["-p", "builtin.module(one-shot-bufferize{bufferize-function-boundaries})"],
)
TYPES = ("f32", "f16", "f64", "i1", "i8", "i32", "i64", "ui8", "index", "bf16", "none")
_ELEMENT_TYPE = re.compile(r"(?<![A-Za-wyz0-9_])(bf16|f16|f32|f64|i1|i8|i16|i32|i64|ui8|index)\b")
TOKEN = re.compile(r"[%@^#!]?[\w.$-]+|\S")


def corpus(folder: Path = LIT_DIR) -> list[Path]:
    """The .mlir files of `folder` (none when it does not exist)."""
    return sorted(p for p in Path(folder).rglob("*.mlir") if "Output" not in p.parts)


# ----------------------------------------------------------------------------- mutations


def truncate(text: str, rng: np.random.Generator) -> str:
    return text[:int(rng.integers(0, len(text) + 1))]


def delete_lines(text: str, rng: np.random.Generator) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    start = int(rng.integers(len(lines)))
    del lines[start:start + int(rng.integers(1, 4))]
    return "".join(lines)


def duplicate_line(text: str, rng: np.random.Generator) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    line = lines[int(rng.integers(len(lines)))]
    lines.insert(int(rng.integers(len(lines) + 1)), line)
    return "".join(lines)


def swap_tokens(text: str, rng: np.random.Generator) -> str:
    tokens = list(TOKEN.finditer(text))
    if len(tokens) < 2:
        return text
    a, b = sorted(int(i) for i in rng.choice(len(tokens), 2, replace=False))
    first, second = tokens[a], tokens[b]
    return (text[:first.start()] + second.group() + text[first.end():second.start()] +
            first.group() + text[second.end():])


def change_type(text: str, rng: np.random.Generator) -> str:
    found = list(_ELEMENT_TYPE.finditer(text))
    if not found:
        return text
    match = found[int(rng.integers(len(found)))]
    new = TYPES[int(rng.integers(len(TYPES)))]
    return text[:match.start()] + new + text[match.end():]


def change_number(text: str, rng: np.random.Generator) -> str:
    found = list(re.finditer(r"\d+", text))
    if not found:
        return text
    match = found[int(rng.integers(len(found)))]
    new = str(int(rng.choice([0, 1, 2, 3, 7, 64, 4096, 2**31, 2**63, -1])))
    return text[:match.start()] + new + text[match.end():]


def rename_op(text: str, rng: np.random.Generator) -> str:
    names = sorted(set(re.findall(r'"?\b(?:dlc|linalg|tensor|arith|func|math)\.\w+"?', text)))
    if len(names) < 2:
        return text
    a, b = (names[int(i)] for i in rng.choice(len(names), 2, replace=False))
    position = text.find(a)
    return text[:position] + b + text[position + len(a):]


def insert_junk(text: str, rng: np.random.Generator) -> str:
    junk = str(rng.choice(["{", "}", "(", ")", "<", ">", ":", ",", "\"", "%", "loc(", "\0",
                           "\u00e9", "-> ", "x", "?", "#map", "^bb0"]))
    position = int(rng.integers(0, len(text) + 1))
    return text[:position] + junk + text[position:]


def deepen(text: str, rng: np.random.Generator) -> str:
    """Nest brackets thousands deep at one place (MLIR's recursive parser overflows the stack)."""
    opener = str(rng.choice(["(", "[", "{", "<", "module {\n", "tuple<"]))
    closer = {"(": ")", "[": "]", "{": "}", "<": ">", "module {\n": "}\n", "tuple<": "i8>"}
    count = int(rng.choice([600, 3000, 20000]))
    position = int(rng.integers(0, len(text) + 1))
    return text[:position] + opener * count + closer[opener] * count + text[position:]


def huge_dimension(text: str, rng: np.random.Generator) -> str:
    """A shape dimension whose size in bytes overflows int64 (MLIR asserts on it)."""
    found = list(re.finditer(r"(?<=[<x])\d+(?=x)", text))
    if not found:
        return text
    match = found[int(rng.integers(len(found)))]
    new = str(int(rng.choice([2**62, 2**61 + 1, 2**40])))
    return text[:match.start()] + new + text[match.end():]


MUTATIONS = (truncate, delete_lines, duplicate_line, swap_tokens, change_type, change_number,
             rename_op, insert_junk, deepen, huge_dimension)


def mutant(seed: int, index: int, files: list[Path]) -> tuple[str, list[str], str, list[str]]:
    """(text, dlc-opt arguments, source file name, mutations applied) of mutant `index`."""
    rng = np.random.default_rng([seed, index])
    source = files[int(rng.integers(len(files)))]
    text = source.read_text(encoding="utf-8")
    applied = []
    for _ in range(int(rng.integers(1, 4))):
        mutation = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
        text = mutation(text, rng)
        applied.append(mutation.__name__)
    invocation = list(INVOCATIONS[int(rng.integers(len(INVOCATIONS)))])
    return text, invocation, str(source), applied


# ----------------------------------------------------------------------------- worker


def run_dlc_opt(path: str, invocation: list[str]) -> dict:
    """Run dlc-opt's main in this process; flag a traceback, internal error or odd exit."""
    from dlc.tools import dlc_opt

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = dlc_opt.main([path, "-o", os.devnull, *invocation])
        except SystemExit as exit_:  # argparse
            status = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException as error:  # noqa: BLE001  (escaping main is what we look for)
            status, err = -1, io.StringIO(f"Traceback: {type(error).__name__}: {error}")
    message = err.getvalue()
    tail = "\n".join(message.strip().splitlines()[-5:])
    lines = message.splitlines()
    if any(line.startswith(("Traceback (most recent call last)", "dlc-opt: internal error"))
           for line in lines):
        return {"status": "internal", "signature": "internal", "detail": tail}
    if status not in (0, 1):
        return {"status": "internal", "signature": "internal",
                "detail": f"exit status {status}: {tail}"}
    return {"status": "ok" if status == 0 else "rejected", "detail": ""}


def worker() -> int:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    files: dict[str, list[Path]] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mutant.mlir")
        for line in sys.stdin:
            task = json.loads(line)
            found = files.setdefault(task["corpus"], corpus(Path(task["corpus"])))
            text, invocation, _, _ = mutant(task["seed"], task["index"], found)
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as file:
                file.write(text)
            out.write(json.dumps(run_dlc_opt(path, invocation)) + "\n")
            out.flush()
    return 0


# ----------------------------------------------------------------------------- driver

FLAGGED = ("internal", "crash", "hang")


def save(seed: int, index: int, outcome: dict, out: Path, files: list[Path]) -> Path:
    text, invocation, source, applied = mutant(seed, index, files)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{seed}-{index}-{outcome['status']}"
    stem.with_suffix(".mlir").write_text(text, encoding="utf-8", errors="surrogatepass")
    stem.with_suffix(".txt").write_text(
        f"from {source} by {', '.join(applied)}\n"
        f"dlc-opt {stem.with_suffix('.mlir')} {' '.join(repr(a) for a in invocation)}\n"
        f"{outcome['status']}: {outcome['detail']}\n")
    return stem.with_suffix(".mlir")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="opt_fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default="opt-fuzz-failures")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per mutant")
    parser.add_argument("--corpus", type=Path, default=LIT_DIR,
                        help="folder of .mlir files to mutate (default: the repository's "
                             "lit_tests)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker()
    files, counts, saved, lock = corpus(args.corpus), Counter(), [], threading.Lock()
    if not files:
        parser.error(f"no .mlir file under {args.corpus}: --corpus names a folder of MLIR "
                     "inputs, such as a dlc checkout's lit_tests")
    start = time.perf_counter()

    def job(indices: list[int]) -> None:
        runner = Worker(args.timeout, module="dlc.testing.opt_fuzz")
        try:
            for index in indices:
                outcome = runner.run({"seed": args.seed, "index": index,
                                      "corpus": str(args.corpus.resolve())})
                with lock:
                    counts[outcome["status"]] += 1
                    if outcome["status"] in FLAGGED:
                        path = save(args.seed, index, outcome, Path(args.out), files)
                        saved.append(f"{path}: {outcome['detail'].splitlines()[-1:]}")
                        print(f"mutant {index}: {outcome['status']} -> {path}", flush=True)
        finally:
            runner.stop()

    jobs = max(1, args.jobs)
    threads = [threading.Thread(target=job, args=(list(range(j, args.count, jobs)),))
               for j in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    summary = ", ".join(f"{counts[s]} {s}" for s in ("ok", "rejected", *FLAGGED))
    print(f"opt_fuzz --seed {args.seed} -n {args.count}: {summary} in "
          f"{time.perf_counter() - start:.0f} s")
    for line in saved:
        print(f"  {line}")
    return 1 if any(counts[s] for s in FLAGGED) else 0


if __name__ == "__main__":
    sys.exit(main())
