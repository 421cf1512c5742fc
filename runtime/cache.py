"""The compile cache: compiled models kept in memory and, as native shared objects, on disk.

A compile is keyed by the model's bytes, the opt level, the input shapes and constants it is
specialized to, dlc's version and source digest, the pinned MLIR bindings' version and the
host CPU (object code targets the host's vector extensions). The same key in the same process
returns the same `CompiledModel` (`remember`/`recall`). On disk, an entry is a folder
`<DLC_CACHE_DIR or ~/.cache/dlc>/<key>/` holding `model.so` (the ExecutionEngine's object
code, dumped with `dump_to_object_file` and linked with the system's `cc`) and `entry.json`
(the signature and the shared object's sha256). `load` checks the digest before loading, so
a truncated or corrupted entry is a miss (and is removed), never a crash. `DLC_CACHE=0`
disables both levels. Only compiles slower than `DLC_CACHE_MIN_SECONDS` (0.25 s) are written
to disk; without a C compiler driver (`cc`) on PATH nothing is.

The disk level is bounded: after a write, when the entries together exceed `DLC_CACHE_MAX_MB`
(1024 MB), the least recently used ones (by the time stamp `load` refreshes) are removed until
they take at most 3/4 of it. A source change makes every older entry unreachable, so without the
bound a developer's cache only grows.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from dlc.runtime.jit import SharedObjectFunction, Signature, TensorSpec

FORMAT = 1  # bump when the layout of an entry changes
MEMORY_ENTRIES = 32
_MEMORY: OrderedDict[str, Any] = OrderedDict()


_DISABLED = threading.local()


def enabled() -> bool:
    return os.environ.get("DLC_CACHE", "1") != "0" and not getattr(_DISABLED, "depth", 0)


def max_bytes() -> int:
    """The disk level's bound (DLC_CACHE_MAX_MB, 1024 MB; 0 keeps nothing on disk)."""
    try:
        return max(0, int(float(os.environ.get("DLC_CACHE_MAX_MB", "1024")) * 2**20))
    except ValueError:
        return 2**30


@contextmanager
def disabled() -> Iterator[None]:
    """Compiles inside the block neither read nor write the cache (in this thread)."""
    _DISABLED.depth = getattr(_DISABLED, "depth", 0) + 1
    try:
        yield
    finally:
        _DISABLED.depth -= 1


def min_seconds() -> float:
    """Compiles faster than this are not written to disk (DLC_CACHE_MIN_SECONDS, 0.25 s)."""
    try:
        return float(os.environ.get("DLC_CACHE_MIN_SECONDS", "0.25"))
    except ValueError:
        return 0.25


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dlc"
    return Path(os.environ.get("DLC_CACHE_DIR", default))


@cache
def _source_digest() -> str:
    """dlc's version and a digest of its Python sources (a code change is a new key)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(_version("dlc").encode())
    for path in sorted(_package_sources(root)):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


_NOT_SOURCES = {"tests", "benchmarks", "lit_tests", "examples", "docs", "build", "__pycache__"}


def _package_sources(root: Path) -> list[Path]:
    """The .py files of the package (hidden folders, .venv, tests... are not walked)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in _NOT_SOURCES
                         and not d.endswith(".egg-info")]
        found += [Path(folder) / f for f in files if f.endswith(".py")]
    return found


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


@cache
def _host() -> str:
    """The host CPU: architecture and its feature flags (code is compiled for them)."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = line
                break
    except OSError:
        pass
    return f"{platform.machine()} {flags}"


def model_key(model_bytes: bytes, opt_level: int,
              input_shapes: Mapping[str, Sequence[int]] | None,
              constants: Mapping[str, np.ndarray] | None, options: str = "") -> str:
    """The cache key of one compile (hex sha256)."""
    digest = hashlib.sha256()
    for part in (f"format {FORMAT}", _source_digest(), _version("xtc-mlir-python-bindings"),
                 _host(), f"O{opt_level}", options):
        digest.update(part.encode() + b"\0")
    for name, shape in sorted((input_shapes or {}).items()):
        digest.update(f"shape {name} {list(shape)}\0".encode())
    for name, value in sorted((constants or {}).items()):
        array = np.ascontiguousarray(value)
        digest.update(f"const {name} {array.dtype} {array.shape}\0".encode())
        digest.update(array.tobytes())
    digest.update(hashlib.sha256(model_bytes).digest())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- in memory


def recall(key: str) -> Any | None:
    if not enabled() or key not in _MEMORY:
        return None
    _MEMORY.move_to_end(key)
    return _MEMORY[key]


def remember(key: str, value: Any) -> None:
    if not enabled():
        return
    _MEMORY[key] = value
    _MEMORY.move_to_end(key)
    while len(_MEMORY) > MEMORY_ENTRIES:
        _MEMORY.popitem(last=False)


def forget_all() -> None:
    """Empty the in-memory level (the disk level stays)."""
    _MEMORY.clear()


# ----------------------------------------------------------------------------- on disk


def _linker() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _spec_json(spec: TensorSpec) -> dict:
    return {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype.str}


def _spec(data: dict) -> TensorSpec:
    return TensorSpec(str(data["name"]), tuple(int(d) for d in data["shape"]),
                      np.dtype(data["dtype"]))


def save(key: str, dump_object, signature: Signature, seconds: float = float("inf")) -> bool:
    """Write an entry: `dump_object(path)` writes the object file. False if not written.

    A compile that took less than `min_seconds()` is not worth the disk (and the link).
    """
    linker = _linker()
    if not enabled() or linker is None or seconds < min_seconds():
        return False
    root = cache_dir()
    final = root / key
    if final.exists():
        return True
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=root))
        dump_object(str(work / "model.o"))
        linked = subprocess.run([linker, "-shared", "-o", str(work / "model.so"),
                                 str(work / "model.o"), "-lm"], capture_output=True)
        (work / "model.o").unlink()
        if linked.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            return False
        entry = {"format": FORMAT, "sha256": _sha256(work / "model.so"),
                 "inputs": [_spec_json(s) for s in signature.inputs],
                 "outputs": [_spec_json(s) for s in signature.outputs]}
        (work / "entry.json").write_text(json.dumps(entry))
        os.rename(work, final)  # atomic: readers see a whole entry or none
        prune(root, max_bytes())
        return final.exists()
    except OSError:
        shutil.rmtree(locals().get("work", root / ".none"), ignore_errors=True)
        return False


def load(key: str) -> SharedObjectFunction | None:
    """The cached function of `key`, or None (absent, disabled, or invalid: then removed)."""
    if not enabled():
        return None
    folder = cache_dir() / key
    if not folder.is_dir():
        return None
    try:
        entry = json.loads((folder / "entry.json").read_text())
        if entry.get("format") != FORMAT or _sha256(folder / "model.so") != entry["sha256"]:
            raise ValueError("stale or corrupted cache entry")
        signature = Signature(tuple(_spec(s) for s in entry["inputs"]),
                              tuple(_spec(s) for s in entry["outputs"]))
        function = SharedObjectFunction(folder / "model.so", signature)
        os.utime(folder / "entry.json")  # recently used: pruned last
        return function
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        shutil.rmtree(folder, ignore_errors=True)
        return None


def prune(root: Path, limit: int) -> None:
    """Remove the least recently used entries of `root` while they exceed `limit` bytes, down
    to 3/4 of it (an entry's use time is its entry.json's mtime; half-written work folders,
    whose names start with a dot, are left to their writers)."""
    entries, total = [], 0
    for folder in root.iterdir():
        if folder.name.startswith("."):
            continue
        try:
            used = (folder / "entry.json").stat().st_mtime
            size = sum(f.stat().st_size for f in folder.iterdir())
        except OSError:  # (being removed by another process)
            continue
        entries.append((used, size, folder))
        total += size
    if total <= limit:
        return
    for _, size, folder in sorted(entries):
        shutil.rmtree(folder, ignore_errors=True)
        total -= size
        if total <= limit * 3 // 4:
            return
