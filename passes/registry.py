"""The registry of dlc's Python passes.

A pass is a frozen dataclass deriving from `ModulePass`: `name` is its pipeline argument, its
fields are its typed options (`dlc-foo{bar=1}`), the first line of its docstring is its
description. `@register` adds it to the registry; `registered_passes()` lists them all.
Every pass runs on the `builtin.module` and walks the functions it needs: the MLIR Python API
cannot nest a Python pass under another anchor.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import pkgutil
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from mlir import ir

from dlc.errors import DlcError


class PassFailure(DlcError):
    """Raised by a pass to fail with a diagnostic at `location` (the module's when None); a
    DlcError, since one that escapes a pass manager is dlc telling the user something."""

    def __init__(self, message: str, location: ir.Location | None = None):
        super().__init__(message)
        self.problems: list[tuple[ir.Location | None, str]] = [(location, message)]

    @classmethod
    def many(cls, problems: list[tuple[ir.Location, str]]) -> PassFailure:
        """One failure reporting each (location, message), in order."""
        failure = cls(problems[0][1], problems[0][0])
        failure.problems = list(problems)
        return failure


class PipelineError(DlcError, ValueError):
    """A pass pipeline text names an unknown pass or option, or does not parse."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'x'?` with the candidate closest to a misspelled `name`, else ''."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


@dataclass(frozen=True)
class ModulePass:
    """Base class of dlc's Python passes."""

    name: ClassVar[str] = ""

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    @classmethod
    def description(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    @classmethod
    def options(cls) -> dict[str, dataclasses.Field]:
        return {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)}

    def pipeline_text(self) -> str:
        values = [f"{o}={_format(getattr(self, f.name))}" for o, f in self.options().items()]
        return f"{self.name}{{{' '.join(values)}}}" if values else self.name

    def add_to(self, pm: Any) -> None:
        """Add this pass to an `mlir.passmanager.PassManager` anchored on builtin.module."""
        pm.add(self._callback, self.name, argument=self.name,
               description=self.description())

    def _callback(self, op: ir.Operation, pass_: Any) -> None:
        try:
            self.run(op)
        except PassFailure as failure:
            for location, message in failure.problems:
                (location or op.location).emit_error(message)
            pass_.signal_pass_failure()
        except Exception as error:  # noqa: BLE001 (a bug in a pass must not take the process down)
            detail = "".join(traceback.format_exception_only(error)).strip()
            op.location.emit_error(f"internal error in pass '{self.name}': {detail}")
            pass_.signal_pass_failure()


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_PASSES: dict[str, type[ModulePass]] = {}


def register(cls: type[ModulePass]) -> type[ModulePass]:
    if not cls.name:
        raise ValueError(f"pass class {cls.__name__} has no pipeline name")
    if cls.name in _PASSES and _PASSES[cls.name] is not cls:
        raise ValueError(f"pass {cls.name} registered twice")
    _PASSES[cls.name] = cls
    return cls


# dlc's passes, by the stage they run in: one folder each (importing a module registers its
# passes; the GPU backend's package registers its own on import)
STAGE_FOLDERS = ("graph", "linalg", "buffer", "llvm", "gpu")


@functools.cache
def _import_stage_folders() -> None:
    """Import each module of the stage folders, once per process (listing the folders again
    for each pass of a pipeline was 0.09 s of ResNet-50's compile)."""
    for folder in STAGE_FOLDERS:
        package = importlib.import_module(f"{__package__}.{folder}")
        for module in pkgutil.iter_modules(package.__path__):
            if not module.ispkg:
                importlib.import_module(f"{__package__}.{folder}.{module.name}")


def registered_passes() -> dict[str, type[ModulePass]]:
    """Every pass by pipeline name: dlc's (importing each module of the stage folders of
    `dlc.passes`, `STAGE_FOLDERS`, registers it), installed plugins' and those of plugins
    loaded with `dlc.passes.load_plugin`."""
    _import_stage_folders()
    from dlc.passes.plugins import load_entry_points

    load_entry_points()  # (installed plugins: the `dlc.passes` entry-point group)
    return dict(sorted(_PASSES.items()))


def make_pass(name: str, options_text: str | None) -> ModulePass:
    cls = registered_passes()[name]
    fields = cls.options()
    values: dict[str, Any] = {}
    for item in _split_options(options_text or ""):
        key, _, raw = item.partition("=")
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise PipelineError(f"pass '{name}' has no option '{key}' (options: {known})"
                                f"{did_you_mean(key, fields)}")
        values[fields[key].name] = _convert(name, key, fields[key], raw if _ else "true")
    return cls(**values)


def _split_options(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        depth += char in "{[(" and 1 or 0
        depth -= char in "}])" and 1 or 0
        if char.isspace() and depth == 0:
            if current:
                items.append(current)
            current = ""
            continue
        current += char
    if current:
        items.append(current)
    return items


def _convert(pass_name: str, key: str, field: dataclasses.Field, raw: str) -> Any:
    kind = field.type if isinstance(field.type, type) else {
        "int": int, "float": float, "bool": bool, "str": str
    }.get(str(field.type), str)
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1")
        return kind(raw)
    except ValueError:
        raise PipelineError(
            f"option '{key}' of pass '{pass_name}' expects {kind.__name__}, got '{raw}'"
        ) from None
