"""dlc's environment variables: each one is declared here, with its default, what it accepts and
what it does, and read here only (`NUM_THREADS.get()`), so that a bad value is one clear
`SettingError` naming the variable, everywhere, and `dlc env` (or `describe()`) lists them all.

A variable that is unset or blank takes its default. `override(...)` sets values for the
current thread (and the tasks it starts with `contextvars`) without touching `os.environ`:
tuning measures candidates with `override(STRICT_SCHEDULE=True)`.

What does not belong here: options of one call (`dlc.compile`'s arguments), and variables read
by other programs (OpenMP's `KMP_*`, `OMP_*`): dlc sets `KMP_BLOCKTIME` before it loads OpenMP
(`runtime/jit.configure_openmp`), and only when the user has not.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from dlc.errors import ArgumentError

T = TypeVar("T")


class SettingError(ArgumentError):
    """An environment variable of dlc's holds a value it does not accept."""


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _integer(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise ValueError
        return value
    return parse


def _count_or_off(text: str) -> int:
    return 0 if text.lower() in _FALSE else _integer(0)(text)


def _number(low: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text)
        if not value >= low or value == float("inf"):  # (NaN too)
            raise ValueError
        return value
    return parse


def _flag(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError


def _path_or_off(text: str) -> Path | None:
    return None if text.lower() in ("0", "off", "none") else Path(text)


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache")


_OVERRIDES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "dlc_settings", default=None)


@dataclass(frozen=True)
class Setting(Generic[T]):
    name: str  # the environment variable
    parse: Callable[[str], T]  # raises ValueError on a value it does not accept
    default: T | Callable[[], T]  # a callable is called each time (defaults from the machine)
    accepts: str  # for the error, "an integer >= 1"
    doc: str
    blank_is_value: bool = False  # DLC_TUNING_DB="" means off, not unset

    def get(self) -> T:
        overrides = _OVERRIDES.get() or {}
        if self.name in overrides:
            return overrides[self.name]
        text = os.environ.get(self.name)
        if text is None or (not text.strip() and not self.blank_is_value):
            return self.default() if callable(self.default) else self.default
        try:
            return self.parse(text.strip()) if text.strip() else self.parse("off")
        except (ValueError, OverflowError):
            raise SettingError(
                f"${self.name}={text!r} is not {self.accepts} ({self.doc})") from None


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


NUM_THREADS = Setting("DLC_NUM_THREADS", _integer(1), _cores, "an integer >= 1",
                      "the threads of compiled code when num_threads is not given; "
                      "default: the cores this process may run on")
PARALLEL_CODEGEN = Setting("DLC_PARALLEL_CODEGEN", _count_or_off, _cores,
                           "an integer >= 0 or off",
                           "processes generating machine code (0: the JIT, in this process); "
                           "default: the cores this process may run on")
VERIFY_EACH = Setting("DLC_VERIFY_EACH", _flag, False, "0 or 1",
                      "verify the IR after every pass, not only after dlc's and each stage")
STRICT_SCHEDULE = Setting("DLC_STRICT_SCHEDULE", _flag, False, "0 or 1",
                          "a schedule that fails to apply is an error, not the naive path")
CACHE = Setting("DLC_CACHE", _flag, True, "0 or 1", "the compile cache (memory and disk)")
CACHE_DIR = Setting("DLC_CACHE_DIR", Path, lambda: _cache_home() / "dlc", "a path",
                    "the disk cache's folder; default: $XDG_CACHE_HOME/dlc or ~/.cache/dlc")
CACHE_MAX_MB = Setting("DLC_CACHE_MAX_MB", _number(0), 1024.0, "a number >= 0",
                       "the disk cache's bound in MB (0 keeps nothing on disk)")
CACHE_MIN_SECONDS = Setting("DLC_CACHE_MIN_SECONDS", _number(0), 0.25, "a number >= 0",
                            "compiles faster than this are not written to the disk cache")
CACHE_MEMORY_MB = Setting("DLC_CACHE_MEMORY_MB", _number(0), 2048.0, "a number >= 0",
                          "the weight MB the in-memory cache level may hold")
MAX_SPECIALIZATIONS = Setting("DLC_MAX_SPECIALIZATIONS", _integer(1), 8, "an integer >= 1",
                              "static specializations a DynamicModel keeps (least recently "
                              "used dropped first)")
DYNAMIC_FUNCTION = Setting("DLC_DYNAMIC_FUNCTION", _flag, True, "0 or 1",
                           "one compile for every value of a model's one dynamic size, where "
                           "its ops take it (else a compile per call shape)")
BATCH_ROWS = Setting("DLC_BATCH_ROWS", _flag, True, "0 or 1",
                     "a DynamicModel whose only dynamic size is a separable batch runs its "
                     "batch-1 code per row (one compile for every batch); 0: per shape")
TUNING_DB = Setting("DLC_TUNING_DB", _path_or_off, lambda: _cache_home() / "dlc" / "tuning.db",
                    "a path, or off", "the tuning database (off, 0, none or blank: no records); "
                    "default: ~/.cache/dlc/tuning.db", blank_is_value=True)
def _winograd(text: str) -> int:
    """The largest Winograd output tile: 4 (on), 2, or 0 (off)."""
    if text in ("2", "4"):
        return int(text)
    return 4 if _flag(text) else 0


WINOGRAD = Setting("DLC_WINOGRAD", _winograd, 4, "0, 1, 2 or 4",
                   "3x3 stride-1 convs run as Winograd at -O2/-O3 (dlc-winograd): 1 or 4 "
                   "(default) F(4x4, 3x3) where a conv has enough 4x4 tiles, else F(2x2, 3x3); "
                   "2: F(2x2, 3x3) only (about 10x less rounding error); 0: every conv direct")
NO_PROGRESS = Setting("DLC_NO_PROGRESS", _flag, False, "0 or 1",
                      "no progress display (also off under $CI and on a dumb terminal)")

ALL: tuple[Setting, ...] = (NUM_THREADS, PARALLEL_CODEGEN, VERIFY_EACH, STRICT_SCHEDULE, CACHE,
                            CACHE_DIR, CACHE_MAX_MB, CACHE_MIN_SECONDS, CACHE_MEMORY_MB,
                            MAX_SPECIALIZATIONS, BATCH_ROWS, TUNING_DB, WINOGRAD, NO_PROGRESS)


@contextmanager
def override(**values: Any) -> Iterator[None]:
    """Settings by their Python names (`override(STRICT_SCHEDULE=True)`) for this context."""
    known = {name: globals().get(name) for name in values}
    unknown = [name for name, s in known.items() if not isinstance(s, Setting)]
    if unknown:
        raise ArgumentError(f"no dlc setting named {', '.join(unknown)}; settings are "
                            f"{', '.join(n for n, v in globals().items() if v in ALL)}")
    merged = dict(_OVERRIDES.get() or {})
    merged.update({known[name].name: value for name, value in values.items()})
    token = _OVERRIDES.set(merged)
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


def describe() -> str:
    """Every setting: the variable, its value here (or why it is invalid) and what it does."""
    lines = []
    for setting in ALL:
        try:
            value = setting.get()
        except SettingError as error:
            value = f"invalid: {error}"
        where = "set" if os.environ.get(setting.name, "").strip() else "default"
        lines.append(f"{setting.name}={value}  ({where})\n    {setting.doc}")
    return "\n".join(lines)
