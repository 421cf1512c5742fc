"""Progress display of the long commands (compile, fuzz, conformance, bench): a bar or a
spinner redrawn in place on a terminal, and nothing at all in pipes, files, CI logs or on a
dumb terminal, so that the output of `dlc ... | tee log` and of CI stays plain text.

`rich` draws it: a well-kept library that redraws one line in place from any thread, fits the
terminal's width and clears itself when done (`transient`), which hand-written carriage returns
do badly. Set DLC_NO_PROGRESS=1 to turn it off on a terminal too.

    with progress.bar("fuzz", total=2000) as advance:
        advance(1, detail="1985 pass")     # after each case
    with progress.spinner("compiling model.onnx at -O2"):   # shown after one second
        ...
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

from dlc import settings


def enabled(stream: TextIO | None = None) -> bool:
    """Whether to draw progress on `stream` (default stderr): a terminal, not CI, not off."""
    stream = sys.stderr if stream is None else stream
    if settings.NO_PROGRESS.get() or os.environ.get("CI"):
        return False
    if os.environ.get("TERM", "") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def _console(stream: TextIO | None):
    from rich.console import Console

    return Console(file=sys.stderr if stream is None else stream)


@contextlib.contextmanager
def bar(description: str, total: int, stream: TextIO | None = None
        ) -> Iterator[Callable[..., None]]:
    """A progress bar of `total` steps; yields `advance(steps=1, detail="")` (thread-safe)."""
    if not enabled(stream):
        yield lambda steps=1, detail="": None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
               TextColumn("{task.fields[detail]}"))
    with Progress(*columns, console=_console(stream), transient=True) as shown:
        task = shown.add_task(description, total=total, detail="")
        lock = threading.Lock()

        def advance(steps: int = 1, detail: str = "") -> None:
            with lock:
                shown.update(task, advance=steps, detail=detail)

        yield advance


@contextlib.contextmanager
def spinner(description: str, delay: float = 1.0, stream: TextIO | None = None) -> Iterator[None]:
    """A spinner with `description` while the block runs, shown only once it has run `delay`
    seconds (a fast compile prints nothing)."""
    if not enabled(stream):
        yield
        return
    status = _console(stream).status(description)
    lock = threading.Lock()
    state = {"started": False, "done": False}

    def start() -> None:
        with lock:
            if not state["done"]:
                status.start()
                state["started"] = True

    timer = threading.Timer(delay, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["started"]:
                status.stop()
