"""The tuning database: one sqlite file of the best parameters found per op and machine.

A record's key is (op key, cpu, dlc version): the op's structural hash (`keys.py`), the CPU it
was measured on (`cpu_id`: model name, the schedules' target and a digest of the feature
flags) and dlc's version. Its value: the schedule family, a description of the op, the best
parameters (JSON of the family's record), their measured seconds, the heuristic's seconds on
the same machine, and the trials the search spent. `merge` folds databases from many machines
into one (the faster record of a key wins); `dlc tune --merge`.

The file is `$DLC_TUNING_DB`, else `~/.cache/dlc/tuning.db` (`$XDG_CACHE_HOME/dlc`, like the
compile cache's folder); `DLC_TUNING_DB=off` disables records. Reading never fails a compile: a
file that is not a database, or a table of another shape, is a `TuningWarning` and no
records; each record's parameters are checked against its family's space where it is used.
"""

from __future__ import annotations

import hashlib
import platform
import sqlite3
import time
import warnings
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from dlc import settings
from dlc.passes.codegen import target

SCHEMA = """CREATE TABLE IF NOT EXISTS records (
    key TEXT NOT NULL, cpu TEXT NOT NULL, version TEXT NOT NULL, family TEXT NOT NULL,
    op TEXT NOT NULL, params TEXT NOT NULL, seconds REAL NOT NULL,
    default_seconds REAL NOT NULL, trials INTEGER NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (key, cpu, version))"""
COLUMNS = ("key", "cpu", "version", "family", "op", "params", "seconds", "default_seconds",
           "trials", "updated")


class TuningWarning(UserWarning):
    """A tuning database or record that cannot be used (dlc then uses its heuristics)."""


@dataclass(frozen=True)
class Record:
    key: str
    cpu: str
    version: str
    family: str
    op: str
    params: str  # JSON of the family's parameter record
    seconds: float
    default_seconds: float
    trials: int
    updated: float = 0.0


def default_path() -> Path | None:
    """$DLC_TUNING_DB, else ~/.cache/dlc/tuning.db; None when set to off (or 0, or empty)."""
    return settings.TUNING_DB.get()


def version() -> str:
    try:
        return metadata.version("dlc")
    except metadata.PackageNotFoundError:
        return "unknown"


@cache
def cpu_id() -> str:
    """This machine's CPU as a record key: model name, schedule target, digest of its flags."""
    from dlc import host

    model, flags = host.model_name() or platform.machine(), " ".join(sorted(host.flags()))
    digest = hashlib.sha256(flags.encode()).hexdigest()[:12]
    return f"{model} | {target.current().name} | {digest}"


class Database:
    """A tuning database file (created on the first write)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30)
        connection.execute(SCHEMA)
        return connection

    def records(self, cpu: str | None = None, version_: str | None = None,
                strict: bool = False) -> list[Record]:
        """Every record (of `cpu` and `version_` when given); [] and a TuningWarning when the
        file is unreadable (`strict`: a ValueError); [] when it does not exist."""
        if not self.path.exists():
            return []
        query, args = f"SELECT {', '.join(COLUMNS)} FROM records", []
        if cpu is not None:
            query += " WHERE cpu = ? AND version = ?"
            args = [cpu, version_ or version()]
        try:
            connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
            try:
                rows = connection.execute(query, args).fetchall()
            finally:
                connection.close()
            return [Record(*row) for row in rows if _well_typed(row)]
        except sqlite3.Error as error:
            if strict:
                raise ValueError(f"tuning database {self.path} is unreadable ({error})"
                                 ) from None
            warnings.warn(f"tuning database {self.path} is unreadable ({error}): compiling "
                          "with the heuristics; remove it or set DLC_TUNING_DB",
                          TuningWarning, stacklevel=2)
            return []

    def put(self, record: Record) -> bool:
        """Store `record` unless a record of its key, cpu and version is faster; whether it
        was stored."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._connect()
        try:
            with connection:
                row = connection.execute(
                    "SELECT seconds FROM records WHERE key = ? AND cpu = ? AND version = ?",
                    (record.key, record.cpu, record.version)).fetchone()
                if row is not None and isinstance(row[0], float) and row[0] <= record.seconds:
                    return False
                values = [getattr(record, c) for c in COLUMNS]
                values[COLUMNS.index("updated")] = record.updated or time.time()
                connection.execute(f"INSERT OR REPLACE INTO records ({', '.join(COLUMNS)}) "
                                   f"VALUES ({', '.join('?' * len(COLUMNS))})", values)
            return True
        finally:
            connection.close()


def _well_typed(row: tuple) -> bool:
    types = (str,) * 6 + (float, float, int, float)
    return all(isinstance(v, t) or (t is float and isinstance(v, int)) for v, t in zip(row, types))


def merge(destination: str | Path, *sources: str | Path) -> int:
    """Fold the records of `sources` into `destination` (the faster record of a key wins);
    the number of records stored. A missing or unreadable source is an error, before any
    record is stored."""
    found: list[Record] = []
    for source in sources:
        if not Path(source).exists():
            raise ValueError(f"tuning database {source} does not exist")
        found += Database(source).records(strict=True)
    database = Database(destination)
    return sum(database.put(record) for record in found)


def digest(path: Path | None) -> str:
    """A digest of the database file's bytes ("" when there is none): the compile cache's key
    includes it, so that a model compiled before tuning is compiled again after."""
    if path is None:
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""
