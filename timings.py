"""Where a compile's time and memory go: per stage, per pass, and per step inside a pass.

A `Timer` records nested spans (`with timer.span(name):`): a stage (import, dlc, linalg, ...,
machine code, cache save) holds its passes, a pass may hold steps (dlc-schedule's transform
script). `Timer.result()` is a `Timings`: `table()` (stage / pass / seconds / share / peak RSS
MiB), `as_json()`, the records themselves. Passes report inner steps with the module-level
`step(name)`, which records into the timer of the running compile and does nothing outside one.

Seconds are wall-clock (`time.perf_counter`). Peak RSS is measured only when the timer is made
with `memory=True`, since on Linux it resets the process's resident-set high-water mark (writes
5 to /proc/self/clear_refs) before each span and reads VmHWM after it: the process's earlier peak
is lost to whoever measures it around the compile (benchmarks/bench_models.py does). Where the
mark cannot be reset, the figure is `ru_maxrss`, the process's peak so far, and the table says so.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")


@dataclass
class Record:
    """One span: `path` is its name and its parents' (stage first), `depth` len(path) - 1."""

    path: tuple[str, ...]
    seconds: float = 0.0
    peak_rss_mib: float | None = None

    @property
    def depth(self) -> int:
        return len(self.path) - 1

    @property
    def name(self) -> str:
        return self.path[-1]


@dataclass
class Timings:
    """The spans of one compile, parents before their children, in the order they ran."""

    records: list[Record] = field(default_factory=list)
    memory: str = "off"  # "VmHWM" (peak per span), "ru_maxrss" (process peak so far) or "off"

    @property
    def total_seconds(self) -> float:
        return sum(r.seconds for r in self.records if r.depth == 0)

    def seconds(self, *path: str) -> float:
        """The seconds of the span at `path` (e.g. "linalg", "dlc-schedule"); KeyError if none."""
        for record in self.records:
            if record.path == path:
                return record.seconds
        raise KeyError(f"no span {'/'.join(path)!r}; spans: {self.names()}")

    def names(self) -> list[str]:
        return ["/".join(r.path) for r in self.records]

    def table(self) -> str:
        """A fixed-width table: stage, pass (steps indented), seconds, share, peak RSS MiB."""
        total = self.total_seconds or 1.0
        width = max([len("pass")] + [len(r.name) + 2 * (r.depth - 1)
                                     for r in self.records if r.depth])
        stage_width = max([len("stage")] + [len(r.name) for r in self.records if not r.depth])
        peak = {"VmHWM": "peak RSS MiB", "ru_maxrss": "max RSS MiB*"}.get(self.memory, "")
        lines = [f"{'stage':<{stage_width}}  {'pass':<{width}}  {'seconds':>8}  {'share':>6}"
                 f"  {peak}".rstrip()]
        for r in self.records:
            stage = r.name if r.depth == 0 else ""
            name = "  " * (r.depth - 1) + r.name if r.depth else ""
            rss = f"{r.peak_rss_mib:12.1f}" if r.peak_rss_mib is not None and peak else ""
            lines.append(f"{stage:<{stage_width}}  {name:<{width}}  {r.seconds:8.3f}  "
                         f"{r.seconds / total:6.1%}  {rss}".rstrip())
        lines.append(f"{'total':<{stage_width}}  {'':<{width}}  {self.total_seconds:8.3f}  "
                     f"{1:6.1%}")
        if self.memory == "ru_maxrss":
            lines.append("* the process's peak RSS so far (this system cannot reset the mark)")
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """{"total_seconds", "memory", "records": [{"path", "seconds", "peak_rss_mib"}...]}."""
        return {"total_seconds": self.total_seconds, "memory": self.memory,
                "records": [asdict(r) | {"path": list(r.path)} for r in self.records]}

    def __str__(self) -> str:
        return self.table()


_CURRENT: ContextVar[Timer | None] = ContextVar("dlc_timer", default=None)


class Timer:
    """Records nested spans of one compile (see the module's docstring)."""

    def __init__(self, memory: bool = False):
        self.memory = _memory_source() if memory else "off"
        self._records: list[Record] = []
        self._open: list[Record] = []

    @contextmanager
    def active(self) -> Iterator[Timer]:
        """Make this the timer that `step` records into (in this thread or task)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    @contextmanager
    def span(self, name: str) -> Iterator[None]:
        """Time the block as a child of the innermost open span (a stage at the top)."""
        parent = self._open[-1].path if self._open else ()
        record = Record((*parent, name))
        self._records.append(record)  # (a parent is listed before its children)
        self._fold_peak(reset=True)
        self._open.append(record)
        start = time.perf_counter()
        try:
            yield
        finally:
            record.seconds = time.perf_counter() - start
            self._fold_peak(reset=False)
            self._open.pop()

    def _fold_peak(self, reset: bool) -> None:
        """Fold the peak since the last reset into every open span, then reset the mark (a
        child's reset must not lose its parent's peak so far)."""
        if self.memory == "off":
            return
        peak = _peak_rss_mib(self.memory)
        for record in self._open:
            record.peak_rss_mib = max(record.peak_rss_mib or 0.0, peak)
        if reset and self.memory == "VmHWM":
            _reset_peak()

    def result(self) -> Timings:
        return Timings(list(self._records), self.memory)


@contextmanager
def step(name: str) -> Iterator[None]:
    """A span inside the running pass (of the compile's timer); nothing outside a compile."""
    timer = _CURRENT.get()
    if timer is None or not timer._open:
        yield
        return
    with timer.span(name):
        yield


def current() -> Timer | None:
    """The timer of the running compile, if any."""
    return _CURRENT.get()


def _reset_peak() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def _vm_hwm_mib() -> float | None:
    try:
        status = _STATUS.read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def _memory_source() -> str:
    """VmHWM where the mark can be reset and read (Linux), else ru_maxrss."""
    if _vm_hwm_mib() is not None and _reset_peak():
        return "VmHWM"
    return "ru_maxrss"


def _peak_rss_mib(source: str) -> float:
    if source == "VmHWM":
        return _vm_hwm_mib() or 0.0
    import resource  # (Unix only: imported where used)

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024  # (bytes vs KiB)
