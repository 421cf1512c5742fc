"""Tuning records at compile time: which scheduled ops take a record's parameters.

`dlc.compile` and `dlc.lower` run their stages inside a `session`: `dlc-schedule` asks
`choose` for each op it schedules, which looks the op's structural key up (this CPU, this dlc
version) and gives the problem the record's parameters when they are in the family's space.
Every decision goes into the session's `Report` (`CompiledModel.tuning`): `record`,
`heuristic` (no record), or `miss` (a record whose parameters no longer apply: a
`TuningWarning` as well, never silent). Outside a session (`dlc-opt`, the lit tests) the
schedules are the heuristics', untouched.

`overrides` (op key -> parameters as a dict) replace the database: the tuner measures a
candidate by compiling its one-op module with an override.
"""

from __future__ import annotations

import contextvars
import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from mlir import ir

from dlc.tuning import database
from dlc.tuning.database import TuningWarning
from dlc.tuning.keys import describe, structural_key


@dataclass(frozen=True)
class Choice:
    """How one scheduled op was scheduled: source is record, heuristic or miss."""

    key: str
    op: str
    source: str
    detail: str = ""


@dataclass
class Report:
    """The choices of one compile, in schedule order."""

    choices: list[Choice] = field(default_factory=list)
    database: str | None = None  # the database file consulted (None: none)

    def of(self, source: str) -> list[Choice]:
        return [c for c in self.choices if c.source == source]

    @property
    def used(self) -> list[Choice]:
        return self.of("record")

    @property
    def missed(self) -> list[Choice]:
        return self.of("miss")

    @property
    def heuristic(self) -> list[Choice]:
        return self.of("heuristic")

    def summary(self) -> str:
        return (f"tuning records: {len(self.used)} ops used a record, {len(self.heuristic)} "
                f"the heuristic, {len(self.missed)} missed (database {self.database})")

    def table(self) -> str:
        lines = [self.summary()]
        lines += [f"  {c.source:9} {c.op}  [{c.key}] {c.detail}".rstrip() for c in self.choices]
        return "\n".join(lines)


class _Session:
    def __init__(self, path: Path | None, overrides: Mapping[str, Any] | None):
        self.path = path
        self.overrides = dict(overrides or {})
        self.report = Report(database=str(path) if path is not None else None)
        self._records: dict[str, database.Record] | None = None

    def record(self, key: str) -> database.Record | None:
        if self._records is None:
            self._records = {}
            if self.path is not None:
                found = database.Database(self.path).records(database.cpu_id(),
                                                             database.version())
                self._records = {r.key: r for r in found}
        return self._records.get(key)


_SESSION: contextvars.ContextVar[_Session | None] = contextvars.ContextVar(
    "dlc_tuning_session", default=None)


@contextmanager
def session(path: Path | str | None | bool = True, overrides: Mapping[str, Any] | None = None
            ) -> Iterator[Report]:
    """Use tuning records in the compiles inside (path True: `database.default_path()`;
    None or False: no database, only `overrides`). Nested in another session, the outer one
    stays in charge (its report collects the choices)."""
    outer = _SESSION.get()
    if outer is not None:
        yield outer.report
        return
    if path is True:
        path = database.default_path()
    chosen = Path(path) if path else None
    token = _SESSION.set(_Session(chosen, overrides))
    try:
        yield _SESSION.get().report
    finally:
        _SESSION.reset(token)


def cache_key() -> str:
    """What the records change in a compile, for the compile cache's key ("" without a
    database file)."""
    token = database.digest(database.default_path())
    return f" tuning={token}" if token else ""


def choose(op: ir.Operation, family: ModuleType, problem: Any) -> Any:
    """`problem` with the parameters of `op`'s record, or unchanged (see the module doc)."""
    from dlc.tuning import families  # (the codegen modules: not imported by a cache hit)

    active = _SESSION.get()
    tunable = families.of(family)
    if active is None or tunable is None or not hasattr(problem, "params"):
        return problem
    key = structural_key(op, tunable.name)
    data, where = active.overrides.get(key), "override"
    if data is None:
        record = active.record(key)
        if record is None:
            active.report.choices.append(Choice(key, describe(op), "heuristic"))
            return problem
        data, where = record.params, f"record of {active.path}"
    try:
        params = tunable.record.from_dict(json.loads(data) if isinstance(data, str) else data)
        tunable.check(params, tunable.space(problem))
    except (ValueError, TypeError, KeyError) as error:
        name = describe(op)
        warnings.warn(f"tuning {where} for {name} [{key}] no longer applies ({error}): "
                      "scheduled by the heuristic; run `dlc tune` again", TuningWarning,
                      stacklevel=2)
        active.report.choices.append(Choice(key, name, "miss", str(error)))
        return problem
    active.report.choices.append(Choice(key, describe(op), "record", json.dumps(
        params.as_dict(), sort_keys=True)))
    return tunable.apply(op, problem, params)
