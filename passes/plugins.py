"""Pass plugins: passes written outside dlc, in a user's own file, module or installed package.

A plugin is any Python file or module whose import registers `ModulePass` subclasses with
`@dlc.passes.register` (see the README's tutorial). It is loaded by:
- `load_plugin("my_passes.py")` or `load_plugin("my_project.passes")` (what `dlc-opt
  --load-pass-plugin=...` and `dlc run/compile/bench --load-pass-plugin ...` call);
- the entry-point group `dlc.passes` of installed packages (`[project.entry-points."dlc.passes"]
  my_passes = "my_project.passes"` in their pyproject), loaded with dlc's own passes by
  `registered_passes()`; a plugin that fails to import is a `PluginWarning`, not a crash.
A plugin's passes run in the pipeline text (`dlc-opt -p 'builtin.module(my-pass)'`) and in the
opt levels' pipelines through `dlc.passes.extend_stage` (`dlc.compile`, `dlc run`, `dlc-opt -O`).
Loading the same file twice imports it once; a plugin that fails to import, or registers a name
that is taken, is a `PluginError` naming the plugin and the reason.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import re
import sys
import traceback
import warnings
from pathlib import Path

from dlc.errors import DlcError
import dlc.passes.registry as registry

ENTRY_POINT_GROUP = "dlc.passes"

_LOADED: dict[str, list[str]] = {}  # plugin (resolved path or module name) -> its pass names


class PluginError(DlcError):
    """A pass plugin could not be loaded."""


class PluginWarning(UserWarning):
    """An installed pass plugin (entry point) could not be loaded; dlc goes on without it."""


def load_plugin(spec: str | Path) -> list[str]:
    """Import the plugin `spec` (a `.py` file or a module name); the names of its passes."""
    path = Path(spec)
    is_file = str(spec).endswith(".py") or path.is_file()
    key = str(path.resolve()) if is_file else str(spec)
    if key in _LOADED:
        return list(_LOADED[key])
    registry.registered_passes()  # dlc's own first: a plugin may not take their names
    before = set(registry._PASSES)
    if is_file:
        if not path.is_file():
            raise PluginError(f"pass plugin '{spec}': no such file")
        name = "dlc_plugin_" + re.sub(r"\W", "_", path.stem) + "_" + \
            hashlib.sha256(key.encode()).hexdigest()[:8]
        # Python source whatever the file's suffix (spec_from_file_location alone finds no
        # loader for a name not ending in .py, and returns None)
        loader = importlib.machinery.SourceFileLoader(name, str(path))
        module_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        _import(spec, lambda: module_spec.loader.exec_module(module), name)
    else:
        _import(spec, lambda: importlib.import_module(str(spec)), None)
    names = sorted(set(registry._PASSES) - before)
    _LOADED[key] = names
    return list(names)


def _import(spec, run, module_name: str | None) -> None:
    try:
        run()
    except Exception as error:  # noqa: BLE001 (the user's code: any failure is a PluginError)
        if module_name is not None:
            sys.modules.pop(module_name, None)
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if "importlib" not in f.filename]
        where = f" (line {frames[-1].lineno} of {frames[-1].filename})" if frames else ""
        if isinstance(error, SyntaxError):  # the plugin's own line, not the importer's
            where = f" (line {error.lineno} of {error.filename})" if error.filename else ""
        detail = "".join(traceback.format_exception_only(error)).strip()
        raise PluginError(f"pass plugin '{spec}' failed to load{where}: {detail}") from None


_ENTRY_POINTS_READ = False


def load_entry_points() -> None:
    """Load (once) the plugins installed packages declare in the `dlc.passes` group."""
    global _ENTRY_POINTS_READ
    if _ENTRY_POINTS_READ:
        return
    _ENTRY_POINTS_READ = True
    import importlib.metadata  # (here: 30 ms of a cache hit's imports otherwise)

    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.value in _LOADED:
            continue
        try:
            load_plugin(entry.value)
        except PluginError as error:
            _LOADED[entry.value] = []
            warnings.warn(f"{error} (entry point '{entry.name}' of group "
                          f"'{ENTRY_POINT_GROUP}')", PluginWarning, stacklevel=2)


def source_digest(names: list[str]) -> str:
    """A digest of the source files defining the passes `names` that are not dlc's own (the
    compile cache keys on it: an edited plugin recompiles)."""
    digest = hashlib.sha256()
    for name in sorted(names):
        cls = registry._PASSES.get(name)
        if cls is None or cls.__module__.startswith("dlc."):
            continue
        try:
            digest.update(Path(inspect.getsourcefile(cls)).read_bytes())
        except (OSError, TypeError):
            digest.update(f"{cls.__module__}.{cls.__qualname__}".encode())
    return digest.hexdigest()
