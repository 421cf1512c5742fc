"""The compile cache: compiled models kept in memory and, as native shared objects, on disk.

A compile is keyed by the model's bytes, the opt level, the input shapes and constants it is
specialized to, dlc's version and source digest, the pinned MLIR bindings' version, the host
CPU (object code targets the host's vector extensions) and the CPU the schedules' register
tiles are for (`dlc.passes.codegen.target`: the host's unless a caller pins another). The
same key in the same process returns the same `CompiledModel` (`remember`/`recall`).
`DLC_CACHE=0` disables both levels.

On disk, an entry is a folder `<DLC_CACHE_DIR or ~/.cache/dlc>/<key>/` holding `model.so` (the
ExecutionEngine's object code, dumped with `dump_to_object_file` and linked with the system's
`cc`), `weights.bin` (the values of the large constant globals the object code reads through
pointers, `dlc.passes.llvm.external_weights`: each padded to 64 bytes; mapped read-only after
the dlopen, each weight the process's one copy of its bytes unless another compiled model
holds one already, which the pointers are bound to) and `entry.json`: the format, the full
key, the shared object's sha256, each weight's sha256 and size, the signature, the runtime
checks' descriptions and an HMAC-SHA256 over all of them under the directory's secret
(`<root>/.secret`, 32 random bytes, mode 0600). Nothing on disk is trusted:

- `load` dlopens a shared object only when its entry's MAC proves the key asked for, the
  signature and the checks, and the file's sha256 matches; its weights are used only if
  weights.bin has exactly the proved size, the padding is zeros and each weight has its
  proved sha256 (the same digest keys the process's shared copy): hashed from the mapping, on
  a few threads, unless the file is still in the identity and state the entry proves it was
  written in (device, inode, size, modification and change times: any write, copy or
  replacement changes them; BERT-base: 0.25 s less per load). Anything else (an entry copied
  from another key or directory, an edited entry.json, a planted .so, metadata of any shape
  that is not exactly the expected one, missing files, links) is a miss: removed, then
  recompiled.
- The root folder (0700) and an entry's folder must belong to this user and be writable by no
  one else (the secret: readable by no one else); otherwise the directory is refused with a
  `CacheWarning` that says why and how to fix it (chmod, or DLC_CACHE_DIR), and the compile
  goes on without the disk cache. (The folders above the root are not checked.)
- `save` writes an entry into a private temporary folder (files 0600) and renames it into
  place: readers see a whole entry or none. The object file is written by a forked child,
  since LLVM ends the process on a failed write (a full disk, a file size limit); a failed
  write or link is a `CacheWarning` and the model, compiled, works without being cached.
- A model file's sha256 (its part of the key) is memoized in `<root>/.digests/` by the file's
  identity and state, under the same secret (`file_digest`): a forged, copied or stale memo
  is ignored and the file hashed.

The threat model: the cache defends against other users (a directory they own or could write
is refused; they cannot read the secret) and against files in the cache directory that dlc
did not write there for that key and state (copied, restored, edited, damaged, truncated,
planted): each is a miss or is ignored, never loaded. It does not defend against code running
as the same user, which can read the secret (and change dlc itself); and a weights.bin that
such code truncates or rewrites in place while a model that mapped it runs changes or ends
that process (dlc itself never writes an entry's files after the rename, and removing an
entry leaves its mapping whole). Since an unchanged weights.bin is not hashed again, a
change that leaves a file's times as they were (the storage's own silent corruption, or the
root user's clock) is not seen: as it is not in the model file the cache key came from.

Only compiles slower than `DLC_CACHE_MIN_SECONDS` (0.25 s) are written to disk; without a C
compiler driver (`cc`) on PATH, or without `os.fork`, nothing is.

The disk level is bounded: after a write, when the entries together exceed `DLC_CACHE_MAX_MB`
(1024 MB), the least recently used ones (by the time stamp `load` refreshes) are removed until
they take at most 3/4 of it. A source change makes every older entry unreachable, so without the
bound a developer's cache only grows.
"""
from __future__ import annotations

import ctypes
import gc
import hashlib
import hmac
import json
import mmap
import os
import platform
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from dlc import settings
from dlc.passes.llvm import external_weights
from dlc.runtime.jit import (
    SharedObjectFunction,
    Signature,
    TensorSpec,
    callable_from_shared_object,
)

FORMAT = 5  # bump when the layout of an entry changes (4: a digest per weight; 5: the
# identity and state of weights.bin)
MEMORY_ENTRIES = 32
_MEMORY: OrderedDict[str, Any] = OrderedDict()


_DISABLED = threading.local()


def enabled() -> bool:
    return settings.CACHE.get() and not getattr(_DISABLED, "depth", 0)


def max_bytes() -> int:
    """The disk level's bound (DLC_CACHE_MAX_MB, 1024 MB; 0 keeps nothing on disk)."""
    return int(settings.CACHE_MAX_MB.get() * 2**20)


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
    return settings.CACHE_MIN_SECONDS.get()


def cache_dir() -> Path:
    return settings.CACHE_DIR.get()


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
    from dlc import host

    return f"{platform.machine()} flags: {' '.join(host.flags())}"


def model_key(model_bytes: bytes | None, opt_level: int,
              input_shapes: Mapping[str, Sequence[int]] | None,
              constants: Mapping[str, np.ndarray] | None, options: str = "",
              model_digest: bytes | None = None) -> str:
    """The cache key of one compile (hex sha256); the model as its bytes or their sha256
    (`model_digest`, from `file_digest`)."""
    from dlc.passes.codegen import target  # (the register tiles' CPU: the host's or pinned)

    digest = hashlib.sha256()
    for part in (f"format {FORMAT}", _source_digest(), _version("xtc-mlir-python-bindings"),
                 _host(), f"cpu-target {target.current().name}", f"O{opt_level}", options):
        digest.update(part.encode() + b"\0")
    for name, shape in sorted((input_shapes or {}).items()):
        digest.update(f"shape {name} {list(shape)}\0".encode())
    for name, value in sorted((constants or {}).items()):
        array = np.ascontiguousarray(value)
        digest.update(f"const {name} {array.dtype} {array.shape}\0".encode())
        digest.update(array.tobytes())
    digest.update(model_digest if model_digest is not None
                  else hashlib.sha256(model_bytes).digest())
    return digest.hexdigest()


_FILE_DIGESTS: OrderedDict[tuple, bytes] = OrderedDict()
_FILE_DIGESTS_LOCK = threading.Lock()


def file_digest(path: str | Path) -> bytes:
    """The sha256 of a file's bytes, read in blocks (a model of hundreds of MB is not held
    whole), remembered by the file's identity and state (its resolved path, device, inode,
    size, modification and change times in ns): in this process, and across processes in a
    memo of the disk cache (`_recall_digest`; BERT-base: 0.25 s of hashing 440 MB per new
    process). A model compiled again (a specialization of a DynamicModel, a recompile, the
    same model in the next process) is not read and hashed again unless the file changed.
    OSError if unreadable."""
    status = os.stat(path)
    identity = _identity(Path(path).resolve(), status)
    with _FILE_DIGESTS_LOCK:
        if identity in _FILE_DIGESTS:
            _FILE_DIGESTS.move_to_end(identity)
            return _FILE_DIGESTS[identity]
    value = _recall_digest(identity)
    if value is None:
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            before = _identity(Path(identity[0]), os.fstat(file.fileno()))
            for block in iter(lambda: file.read(1 << 22), b""):
                digest.update(block)
            after = _identity(Path(identity[0]), os.fstat(file.fileno()))
        value = digest.digest()
        if not before == after == identity:  # (changed while it was read: remembered by none)
            return value
        _memo_digest(identity, value)
    with _FILE_DIGESTS_LOCK:
        _FILE_DIGESTS[identity] = value
        while len(_FILE_DIGESTS) > 64:
            _FILE_DIGESTS.popitem(last=False)
    return value


def _identity(resolved: Path, status: os.stat_result) -> tuple:
    return (str(resolved), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns,
            status.st_ctime_ns)


# The memo of model files' digests on disk: `<root>/.digests/<sha256 of the path>`, one small
# JSON file per model path (the newest state hashed), {"identity": [path, device, inode, size,
# mtime_ns, ctime_ns], "sha256": hex, "mac": HMAC-SHA256 under the cache directory's secret
# over both}. A memo is used only when its MAC checks out and its identity is the file's now:
# anything else (forged, copied from another directory or machine, damaged, stale) is ignored
# and the file is hashed (then the memo rewritten): a memo can save a hash, never give a digest
# that was not computed by dlc, for this file in this state. A file changed in the last
# RACY_SECONDS is not memoized on disk: a write within the same tick of the file system's clock
# would leave its times as they were (git's "racily clean" rule).
DIGESTS = ".digests"  # (hidden: `prune` leaves it alone)
DIGEST_MEMOS = 1024  # at most this many memos; the oldest half is removed past it
RACY_SECONDS = 2.0
_MEMO_LIMIT = 4096  # a memo larger than this is damaged, not parsed


def _digest_mac(secret: bytes, identity: tuple, sha256: str) -> str:
    text = json.dumps(["dlc file digest 1", list(identity), sha256], separators=(",", ":"))
    return hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()


def _private_dir(path: Path) -> bool:
    """Whether `path` is a folder (not a link) of this user that no one else may write (the
    checks of `_root`, without its warning: a refused cache warns where it is used)."""
    try:
        status = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == _user() \
        and not stat.S_IMODE(status.st_mode) & 0o022


def _memo_folder(create: bool) -> tuple[Path, bytes] | None:
    """The memo folder and the cache directory's secret, if both may be trusted (None: the
    cache disabled, refused, without a secret and not `create`, or anything unexpected)."""
    if not enabled() or max_bytes() == 0:
        return None
    try:
        root = cache_dir().resolve()
        if create:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private_dir(root):
            return None
        with suppress(FileNotFoundError):
            status = (root / SECRET).lstat()
            if not stat.S_ISREG(status.st_mode) or status.st_uid != _user() \
                    or stat.S_IMODE(status.st_mode) & 0o077:
                return None  # (`_secret` would refuse it, with a warning: `load`'s to give)
        secret = _secret(root, create)
        folder = root / DIGESTS
        if create:
            with suppress(FileExistsError):
                folder.mkdir(mode=0o700)
        if secret is None or not _private_dir(folder):
            return None
    except (OSError, _Refused):
        return None
    return folder, secret


def _memo_path(folder: Path, resolved: str) -> Path:
    return folder / hashlib.sha256(resolved.encode(errors="surrogateescape")).hexdigest()


def _recall_digest(identity: tuple) -> bytes | None:
    """The digest the disk memo proves for a file of `identity`, else None (never raises)."""
    found = _memo_folder(create=False)
    if found is None:
        return None
    folder, secret = found
    file = _open_private(_memo_path(folder, identity[0]))
    if file is None:
        return None
    with file:
        try:
            text = file.read(_MEMO_LIMIT + 1)
        except OSError:
            return None
    try:
        memo = json.loads(text) if len(text) <= _MEMO_LIMIT else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(memo, dict) or set(memo) != {"identity", "sha256", "mac"}:
        return None
    sha256, mac = memo["sha256"], memo["mac"]
    if memo["identity"] != list(identity) or not isinstance(sha256, str) \
            or not _KEY.fullmatch(sha256) or not isinstance(mac, str):
        return None
    if not hmac.compare_digest(_digest_mac(secret, identity, sha256), mac):
        return None
    return bytes.fromhex(sha256)


def _memo_digest(identity: tuple, digest: bytes) -> None:
    """Write the disk memo of a file of `identity` (unless it changed too recently, or the
    cache directory may not be used); failures are ignored (the memo only saves time)."""
    newest = max(identity[4], identity[5]) / 1e9
    if time.time() - newest < RACY_SECONDS:
        return
    found = _memo_folder(create=True)
    if found is None:
        return
    folder, secret = found
    sha256 = digest.hex()
    memo = {"identity": list(identity), "sha256": sha256,
            "mac": _digest_mac(secret, identity, sha256)}
    temporary = folder / f".{secrets.token_hex(8)}"
    try:
        _write_private(temporary, json.dumps(memo).encode())
        os.replace(temporary, _memo_path(folder, identity[0]))
        memos = [p for p in folder.iterdir() if not p.name.startswith(".")]
        if len(memos) > DIGEST_MEMOS:  # (oldest first: one per model path ever compiled)
            memos.sort(key=lambda p: p.stat().st_mtime)
            for old in memos[:len(memos) // 2]:
                old.unlink(missing_ok=True)
    except OSError:
        with suppress(OSError):
            temporary.unlink()


# ----------------------------------------------------------------------------- in memory


def recall(key: str) -> Any | None:
    if not enabled() or key not in _MEMORY:
        return None
    _MEMORY.move_to_end(key)
    return _MEMORY[key]


def memory_bytes() -> int:
    """The weight bytes the in-memory level may hold: `DLC_CACHE_MEMORY_MB` (2048 MB)."""
    return int(settings.CACHE_MEMORY_MB.get() * 2**20)


def _weight_bytes(value: Any) -> int:
    """The bytes of the weights a compiled model holds (bound after the JIT), 0 if unknown."""
    function = getattr(value, "_function", None)
    if isinstance(getattr(function, "weight_bytes", None), int):  # (loaded from the disk)
        return function.weight_bytes
    weights = getattr(function, "weights", None) or []
    return sum(int(getattr(w, "nbytes", 0)) for w in weights)


def remember(key: str, value: Any) -> None:
    """Keep `value` for `recall`: the most recently used 32 compiled models, fewer when their
    weights pass `memory_bytes()` (the newest is kept whatever its size)."""
    if not enabled():
        return
    _MEMORY[key] = value
    _MEMORY.move_to_end(key)
    limit = memory_bytes()
    while len(_MEMORY) > 1 and (len(_MEMORY) > MEMORY_ENTRIES or sum(
            _weight_bytes(v) for v in _MEMORY.values()) > limit):
        _MEMORY.popitem(last=False)


def forget_all() -> None:
    """Empty the in-memory level (the disk level stays)."""
    _MEMORY.clear()


# ----------------------------------------------------------------------------- on disk

SECRET = ".secret"  # (hidden: `prune` leaves names with a leading dot alone)
SECRET_BYTES = 32
WEIGHT_ALIGNMENT = 64  # (weights.bin pads each weight to this)
ENTRY_JSON_LIMIT = 16 << 20  # an entry.json larger than this is damaged, not parsed
MAX_EXTENT = 1 << 40
DUMP_SECONDS = 120.0  # a child writing the object file for longer than this is stuck
LINK_SECONDS = 300.0
_KEY = re.compile(r"[0-9a-f]{64}")
_DTYPES = frozenset(np.dtype(t).str for t in (
    np.float16, np.float32, np.float64, np.bool_, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64))


class CacheWarning(UserWarning):
    """The disk cache was not used (a directory refused, a write that failed); the compile
    itself went on and its model works, only without being cached on disk."""


class _Refused(Exception):
    """A cache directory or secret that may not be trusted (a CacheWarning was issued)."""


class _WriteFailed(Exception):
    """Writing an entry failed; the message says why."""


def _warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=4)


def _user() -> int:
    return os.geteuid()


def _check_private(path: Path, status: os.stat_result, what: str, others: int = 0o022) -> None:
    """Raise _Refused (with a warning that says why and what to do) unless `path` is this
    user's own and its mode has none of the bits `others` (group/others write by default):
    whoever can write a cache folder can plant code that dlc would load."""
    mode = stat.S_IMODE(status.st_mode)
    if status.st_uid != _user():
        reason = f"it is owned by uid {status.st_uid}, not by this user (uid {_user()})"
        fix = "remove it"
    elif mode & others:
        access = "writable" if others == 0o022 else "readable or writable"
        users = " and ".join(w for w, bits in (("group", 0o070), ("others", 0o007))
                             if mode & others & bits)
        reason = f"it is {access} by {users} (mode {mode:o})"
        fix = f"`chmod go-{'w' if others == 0o022 else 'rwx'} {path}`"
    else:
        return
    _warn(f"dlc's compile cache refuses the {what} {path}: {reason}, so someone else could "
          f"plant code that dlc would load. Compiling without the disk cache; to use it, {fix} "
          "or set DLC_CACHE_DIR to a folder of your own")
    raise _Refused(str(path))


def _root(create: bool) -> Path | None:
    """The cache directory, checked (None if absent and not `create`d); _Refused if not ours."""
    root = cache_dir().resolve()
    if create:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        status = root.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(status.st_mode):
        _warn(f"dlc's compile cache {root} is not a folder; compiling without the disk cache "
              "(remove it or set DLC_CACHE_DIR)")
        raise _Refused(str(root))
    _check_private(root, status, "cache directory")
    return root


def _open_private(path: Path) -> BinaryIO | None:
    """`path` opened for reading if it is a regular file (not a link) of this user that no one
    else may write, else None."""
    try:
        file = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")
    except OSError:
        return None
    status = os.fstat(file.fileno())
    if (not stat.S_ISREG(status.st_mode) or status.st_uid != _user()
            or status.st_mode & 0o022):
        file.close()
        return None
    return file


def _write_private(path: Path, data: bytes) -> None:
    """Create `path` (mode 0600; it must not exist) holding `data`."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600),
                   "wb") as file:
        file.write(data)


def _secret(root: Path, create: bool) -> bytes | None:
    """The cache directory's secret, the key of every entry's HMAC (None: none yet, or damaged;
    with `create`, a new one is made). It is written whole under a temporary name and linked
    into place, so readers never see a partial one and concurrent writers agree on one."""
    path = root / SECRET
    for _ in range(2):
        try:
            status = path.lstat()
        except FileNotFoundError:
            status = None
        if status is not None and stat.S_ISREG(status.st_mode):
            _check_private(path, status, "secret", 0o077)
            file = _open_private(path)
            if file is not None:
                with file:
                    secret = file.read(SECRET_BYTES + 1)
                if len(secret) == SECRET_BYTES:
                    return secret
        if not create:
            return None
        if status is not None:  # damaged (or not a file): every entry signed with it is lost
            _remove(path)
        temporary = root / f"{SECRET}-{secrets.token_hex(8)}"
        try:
            _write_private(temporary, secrets.token_bytes(SECRET_BYTES))
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made one first: that one is read on the next round
        finally:
            temporary.unlink(missing_ok=True)
    return None


def _remove(path: Path) -> None:
    """Remove a damaged entry (a folder, or a file or link where an entry belongs)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
        return
    with suppress(OSError):
        path.unlink()


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


def _spec(data: Any) -> TensorSpec | None:
    """The TensorSpec of an entry's JSON, or None unless it has exactly the expected types."""
    if not isinstance(data, dict):
        return None
    name, shape, dtype = data.get("name"), data.get("shape"), data.get("dtype")
    if not isinstance(name, str) or not isinstance(shape, list) or dtype not in _DTYPES:
        return None
    if not all((type(d) is int and 0 <= d <= MAX_EXTENT)  # (not bool, not float)
               or (type(d) is str and 0 < len(d) <= 256) for d in shape):  # (a dynamic size)
        return None
    return TensorSpec(name, tuple(shape), np.dtype(dtype))


def _specs(data: Any) -> tuple[TensorSpec, ...] | None:
    if not isinstance(data, list):
        return None
    specs = tuple(_spec(item) for item in data)
    return None if None in specs else specs


def _mac(secret: bytes, key: str, sha256: str, signature: Signature,
         checks: Sequence[str], weights: dict) -> str:
    """The HMAC-SHA256 that proves an entry was written by dlc into this directory for `key`:
    over the format, the key, the shared object's digest, the weights' digest and sizes, the
    signature and the checks."""
    proved = {"format": FORMAT, "key": key, "sha256": sha256, "checks": list(checks),
              "weights": weights,
              "inputs": [_spec_json(s) for s in signature.inputs],
              "outputs": [_spec_json(s) for s in signature.outputs]}
    text = json.dumps(proved, sort_keys=True, separators=(",", ":"))
    return hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()


def _read_entry(folder: Path, key: str, secret: bytes
                ) -> tuple[str, Signature, tuple[str, ...], dict] | None:
    """The digest, signature, checks and weights (sha256, sizes) of the entry in `folder` if
    its MAC proves them for `key`; None if the entry is damaged, forged, or of another key
    (never an exception)."""
    file = _open_private(folder / "entry.json")
    if file is None:
        return None
    with file:
        text = file.read(ENTRY_JSON_LIMIT + 1)
    try:
        entry = json.loads(text) if len(text) <= ENTRY_JSON_LIMIT else None
    except (ValueError, RecursionError):  # (deep nesting, huge numbers, not UTF-8, not JSON)
        return None
    if not isinstance(entry, dict):
        return None
    sha256, mac, checks = entry.get("sha256"), entry.get("mac"), entry.get("checks")
    inputs, outputs = _specs(entry.get("inputs")), _specs(entry.get("outputs"))
    weights = _weights_json(entry.get("weights"))
    if (entry.get("format") != FORMAT or entry.get("key") != key or not isinstance(sha256, str)
            or not isinstance(mac, str) or inputs is None or outputs is None or weights is None
            or not isinstance(checks, list) or not all(isinstance(c, str) for c in checks)):
        return None
    signature = Signature(inputs, outputs)
    if not hmac.compare_digest(_mac(secret, key, sha256, signature, checks, weights), mac):
        return None
    return sha256, signature, tuple(checks), weights


def _weights_json(data: Any) -> dict | None:
    """An entry's {"digests": [sha256 hex of each weight...], "sizes": [bytes...], "file":
    weights.bin's [device, inode, size, mtime_ns, ctime_ns] as written, or null}, or None
    unless exactly that."""
    if not isinstance(data, dict) or set(data) != {"digests", "sizes", "file"}:
        return None
    digests, sizes, file = data["digests"], data["sizes"], data["file"]
    if not isinstance(digests, list) or not isinstance(sizes, list) or \
            len(digests) != len(sizes) or \
            not all(isinstance(d, str) and _KEY.fullmatch(d) for d in digests) or \
            not all(type(s) is int and 0 <= s <= MAX_EXTENT for s in sizes):
        return None
    if file is not None and not (isinstance(file, list) and len(file) == 5 and all(
            type(n) is int and 0 <= n < 1 << 64 for n in file)):
        return None
    return {"digests": digests, "sizes": sizes, "file": file}


def _file_state(status: os.stat_result) -> list[int]:
    """A file's identity and state: device, inode, size, modification and change times (ns).
    Writing the file, or replacing it, changes them (the change time cannot be set back)."""
    return [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns,
            status.st_ctime_ns]


def _padding(size: int) -> int:
    return -size % WEIGHT_ALIGNMENT


def _write_weights(path: Path, weights: Sequence[np.ndarray]) -> dict:
    """Write the weights one after the other (each padded with zeros to 64 bytes) to a new
    file 0600 (none if there are no weights): their {"digests", "sizes", "file"}, each
    weight's sha256 (the key `external_weights.share` keeps it under: a load hashes no weight
    again to share it) and the file's identity and state once written (`_file_state`: a load
    that finds them unchanged does not hash the weights again to prove them)."""
    if not weights:
        return {"digests": [], "sizes": [], "file": None}
    digests = []
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600),
                   "wb") as file:
        # (a compiled function's weights are the process's shared copies, whose digests are
        # known: not hashed again)
        for weight, known in zip(weights, external_weights.digests_of(weights), strict=True):
            data = memoryview(np.ascontiguousarray(weight)).cast("B")
            digests.append(known.hex() if known is not None else hashlib.sha256(data).hexdigest())
            file.write(data)
            file.write(bytes(_padding(len(data))))
    return {"digests": digests, "sizes": [int(w.nbytes) for w in weights],
            "file": _file_state(os.stat(path))}


def _read_weights(folder: Path, function: SharedObjectFunction, weights: dict) -> bool:
    """Map weights.bin and point the loaded shared object at its weights (the table
    `_mlir_dlc_weights` says where; each weight the process's one copy of those bytes,
    `external_weights.share`: a weight no compiled function holds yet is the mapped file
    itself, read-only, 64-byte-aligned: no copy, and its pages are the page cache's, shared
    by every process that loads the entry); False if the file is not exactly the proved one:
    its size the sum of the padded sizes, the padding zeros, and each weight's sha256 the one
    its entry proves. The weights are hashed (from the mapping, on a few threads) only when
    the file is not in the identity and state the entry proves it was written in
    (`_file_state`: same device, inode, size, modification and change times): a file copied,
    restored, replaced or written since (its change time moved) is hashed in full; the
    unchanged file of an entry whose MAC checks out is the one dlc wrote and hashed (BERT-base:
    0.25 s of hashing less per load)."""
    sizes = weights["sizes"]
    function.weight_bytes = sum(int(size) for size in sizes)  # (the memory level's bound)
    if not sizes:
        function.weights = []
        return True
    file = _open_private(folder / "weights.bin")
    if file is None:
        return False
    with file:
        try:
            table = ctypes.addressof(ctypes.c_void_p.in_dll(function._library,
                                                              external_weights.TABLE))
        except ValueError:
            return False
        offsets, end = [], 0
        for size in sizes:
            offsets.append(end)
            end += size + _padding(size)
        status = os.fstat(file.fileno())
        if status.st_size != end:  # (missing bytes, or bytes after the last)
            return False
        data = _map(file, end)
        if data is None:
            return False
    values = [data[offset:offset + size] for offset, size in zip(offsets, sizes, strict=True)]
    if any(data[offset + size:offset + size + _padding(size)].any()
           for offset, size in zip(offsets, sizes, strict=True)):
        return False
    if weights["file"] is not None and _file_state(status) == weights["file"]:
        digests = [bytes.fromhex(proved) for proved in weights["digests"]]
    else:
        digests = _digests(values)
        if not all(hmac.compare_digest(digest.hex(), proved)
                   for digest, proved in zip(digests, weights["digests"], strict=True)):
            return False
    # (the mapped weights become the shared copies: not copied)
    function.weights = external_weights.bind(table, values, digests, adopt=True)
    return True


def _map(file: BinaryIO, size: int) -> np.ndarray | None:
    """The `size` bytes of `file`, read-only: mapped (the mapping outlives the descriptor, and
    the entry's removal: an unlinked file stays while it is mapped), else (a file system that
    cannot map files) read into dlc's own aligned memory; None if they cannot be read."""
    if not size:
        return np.empty(0, np.uint8)
    try:
        return np.frombuffer(mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ), np.uint8)
    except (OSError, ValueError):
        pass
    data = external_weights.aligned_empty(size)
    target = memoryview(data)
    try:
        file.seek(0)
        while target:
            count = file.readinto(target[:1 << 24])
            if not count:
                return None
            target = target[count:]
    except OSError:
        return None
    data.flags.writeable = False
    return data


HASH_THREADS = 4  # at most; the weights of an entry are hashed on min(this, cores) threads


def _digests(values: Sequence[np.ndarray]) -> list[bytes]:
    """The sha256 of each array, largest first on a few threads (hashlib releases the GIL)."""
    def digest(value: np.ndarray) -> bytes:
        return hashlib.sha256(value).digest()

    threads = min(HASH_THREADS, len(values), len(os.sched_getaffinity(0))
                  if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if threads < 2 or sum(v.nbytes for v in values) < 1 << 24:
        return [digest(value) for value in values]
    order = sorted(range(len(values)), key=lambda i: -values[i].nbytes)
    with ThreadPoolExecutor(threads, thread_name_prefix="dlc-cache-hash") as pool:
        found = dict(zip(order, pool.map(lambda i: digest(values[i]), order), strict=True))
    return [found[i] for i in range(len(values))]


def _dump_object(dump_object: Callable[[str], None], path: Path) -> None:
    """Run `dump_object(path)` in a forked child: LLVM reports a failed write (a full disk, a
    file size limit) with a fatal error that ends the process, which must not be the caller's.
    _WriteFailed (with the child's stderr) when the child fails, is killed or is stuck."""
    if not hasattr(os, "fork"):
        raise _WriteFailed("this platform cannot fork, and writing the object file in-process "
                           "could end it on a write error")
    errors_out, errors_in = os.pipe()
    # (frozen, the parent's objects are not the child's GC's to collect: a garbage MLIR
    # context destroyed in the child joins threads that only exist in the parent, a segfault
    # seen after many compiles in one process)
    gc.freeze()
    pid = -1
    try:
        with warnings.catch_warnings():  # (3.12+ warns of fork in a multi-threaded process:
            warnings.simplefilter("ignore", DeprecationWarning)  # the child only writes, exits)
            pid = os.fork()
    finally:
        if pid != 0:
            gc.unfreeze()
    if pid == 0:
        code = 1
        try:
            os.close(errors_out)
            os.dup2(errors_in, 2)
            dump_object(str(path))
            code = 0
        except BaseException as error:  # noqa: BLE001 (reported to the parent, then _exit)
            os.write(2, f"{type(error).__name__}: {error}".encode(errors="replace"))
        finally:
            os._exit(code)
    os.close(errors_in)
    status, errors = _wait(pid, errors_out, DUMP_SECONDS)
    if status != 0:
        why = f"exit status {status}" if status > 0 else f"signal {-status}"
        raise _WriteFailed(f"writing the object file failed ({why}): {errors or 'no message'}")
    if not path.is_file() or path.stat().st_size == 0:
        raise _WriteFailed("writing the object file left no object file")


def _wait(pid: int, errors: int, seconds: float) -> tuple[int, str]:
    """The exit code of child `pid` (negative: the signal that ended it) and the end of what
    it wrote to the pipe `errors` (closed here); a child still running after `seconds` is
    killed."""
    deadline, output = time.monotonic() + seconds, b""
    try:
        while True:
            if select.select([errors], [], [], 0.05)[0]:
                output = (output + os.read(errors, 4096))[-2000:]
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                os.set_blocking(errors, False)
                with suppress(OSError):
                    output = (output + os.read(errors, 4096))[-2000:]
                return os.waitstatus_to_exitcode(status), output.decode(errors="replace").strip()
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return -signal.SIGKILL, f"stuck for {seconds:.0f} s, killed"
    finally:
        os.close(errors)


def _write_entry(work: Path, key: str, function: Any, secret: bytes, linker: str) -> None:
    """Write the entry of `key` into the private folder `work`: model.so and entry.json."""
    obj, library = work / "model.o", work / "model.so"
    _dump_object(function.dump_object, obj)
    try:
        linked = subprocess.run([linker, "-shared", "-o", str(library), str(obj), "-lm"],
                                check=False, capture_output=True, timeout=LINK_SECONDS)
    except (OSError, subprocess.SubprocessError) as error:
        raise _WriteFailed(f"the linker {linker} failed: {error}") from None
    if linked.returncode != 0 or not library.is_file():
        message = linked.stderr.decode(errors="replace").strip()[-2000:] or "no message"
        why = (f"exit status {linked.returncode}" if linked.returncode >= 0
               else f"signal {-linked.returncode}")  # (SIGXFSZ past a file size limit)
        raise _WriteFailed(f"the linker {linker} failed ({why}): {message}")
    obj.unlink()
    library.chmod(0o600)  # (dlopen needs only read access)
    sha256 = _sha256(library)
    weights = _write_weights(work / "weights.bin", getattr(function, "weights", None) or [])
    entry = {"format": FORMAT, "key": key, "sha256": sha256, "weights": weights,
             "inputs": [_spec_json(s) for s in function.signature.inputs],
             "outputs": [_spec_json(s) for s in function.signature.outputs],
             "checks": list(function.checks),
             "mac": _mac(secret, key, sha256, function.signature, function.checks, weights)}
    _write_private(work / "entry.json", json.dumps(entry).encode())


def save(key: str, function: Any, seconds: float = float("inf")) -> bool:
    """Write the entry of `key` for a compiled `function` (its `signature`, `checks` and
    `dump_object(path)`). True if written; False if not: disabled, no linker, a compile faster
    than `min_seconds()` (not worth the disk and the link), an entry already there, or a
    refused directory or failed write (both with a CacheWarning). Never raises for the disk.
    """
    linker = _linker()
    if not enabled() or linker is None or seconds < min_seconds() or not _KEY.fullmatch(key):
        return False
    if not callable_from_shared_object(function.signature):  # (its entry could not be loaded)
        return False
    try:
        root = _root(create=True)
        final = root / key
        if os.path.lexists(final):
            return False
        secret = _secret(root, create=True)
        if secret is None:
            raise _WriteFailed(f"its secret {root / SECRET} could not be made")
        work = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=root))  # (mode 0700)
    except _Refused:
        return False
    except (OSError, _WriteFailed) as error:
        _warn(f"dlc's compile cache cannot write to {cache_dir()}: {error}. The model is "
              "compiled, without being cached on disk")
        return False
    try:
        _write_entry(work, key, function, secret, linker)
        os.rename(work, final)  # atomic: readers see a whole entry or none
    except (OSError, _WriteFailed) as error:
        shutil.rmtree(work, ignore_errors=True)
        if os.path.lexists(final):
            return False  # another process wrote the entry first
        _warn(f"dlc's compile cache could not write {final}: {error}. The model is compiled, "
              "without being cached on disk")
        return False
    with suppress(OSError):
        prune(root, max_bytes())
    return final.exists()


def load(key: str) -> SharedObjectFunction | None:
    """The cached function of `key`, or None: absent, disabled, a refused directory (with a
    CacheWarning), or an entry that does not prove itself with its MAC (then removed). A
    shared object is dlopen'ed only once its entry's MAC and its sha256 check out."""
    if not enabled() or not _KEY.fullmatch(key):
        return None
    try:
        root = _root(create=False)
        if root is None:
            return None
        folder = root / key
        status = folder.lstat()
    except (_Refused, OSError):  # (FileNotFoundError: no such entry)
        return None
    try:
        function = None
        if stat.S_ISDIR(status.st_mode):  # (a link or a file where an entry belongs: damaged)
            _check_private(folder, status, "cache entry")
            function = _load_entry(root, folder, key)
    except _Refused:
        return None
    except OSError:  # (unreadable: damaged)
        function = None
    if function is None:
        _remove(folder)
    return function


def _load_entry(root: Path, folder: Path, key: str) -> SharedObjectFunction | None:
    secret = _secret(root, create=False)
    proved = _read_entry(folder, key, secret) if secret is not None else None
    if proved is None:
        return None
    sha256, signature, checks, weights = proved
    library = _open_private(folder / "model.so")
    if library is None:
        return None
    with library:
        digest = hashlib.sha256()
        for block in iter(lambda: library.read(1 << 20), b""):
            digest.update(block)
    if not hmac.compare_digest(digest.hexdigest(), sha256):
        return None
    try:
        function = SharedObjectFunction(folder / "model.so", signature, checks=checks)
    except (OSError, AttributeError, RuntimeError):  # (no entry point, no status global)
        return None
    if not _read_weights(folder, function, weights):
        return None
    with suppress(OSError):  # (a read-only cache still serves its entries)
        os.utime(folder / "entry.json")  # recently used: pruned last
    return function


def prune(root: Path, limit: int) -> None:
    """Remove the least recently used entries of `root` while they exceed `limit` bytes, down
    to 3/4 of it (an entry's use time is its entry.json's mtime; half-written work folders,
    whose names start with a dot, are left to their writers)."""
    entries, total = [], 0
    for folder in root.iterdir():
        if folder.name.startswith(".") or folder.is_symlink():  # (a link is `load`'s to remove)
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
