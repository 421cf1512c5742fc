"""Run an exported model (`dlc export`, `dlc.runtime.export`) from Python without the compiler.

`load(path)` takes the export folder, its manifest `NAME.json` or the library `libNAME.so` and
returns a callable with `CompiledModel`'s call signature and input checks (the same
`Signature.bind`): numpy arrays in, fresh numpy arrays out. It imports numpy and ctypes only:
not mlir, not onnx (tests/runtime/test_export.py checks `sys.modules`). The signature comes from
the library itself (its `NAME_input`/`NAME_output` functions), not from the manifest.
"""

from __future__ import annotations

import ctypes
import json
import threading
from pathlib import Path

import numpy as np

from dlc.errors import DlcError, IndexOutOfRangeError, InputError
from dlc.runtime.signature import Signature, TensorSpec, address

_DTYPES = {1: "float16", 2: "float32", 3: "float64", 4: "bool", 5: "int8", 6: "int16",
           7: "int32", 8: "int64", 9: "uint8", 10: "uint16", 11: "uint32", 12: "uint64"}
_CODES = {np.dtype(name): code for code, name in _DTYPES.items()}
E_COUNT, E_DTYPE, E_SHAPE, E_INDEX, E_CPU = 2, 3, 4, 5, 6


class LoadError(DlcError):
    """An exported library that cannot be used here (missing, CPU features it lacks)."""


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


def _library_path(path: Path) -> tuple[Path, str]:
    """The shared object of an export folder, manifest or library path, and its NAME."""
    if path.is_dir():
        manifests = sorted(path.glob("*.json"))
        if len(manifests) != 1:
            raise LoadError(f"{path} should hold one manifest NAME.json, found {len(manifests)}")
        path = manifests[0]
    if path.suffix == ".json":
        try:
            manifest = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise LoadError(f"cannot read the manifest {path}: {error}") from None
        if not isinstance(manifest, dict) or not all(
                isinstance(manifest.get(key), str) and manifest[key]
                for key in ("library", "name")):
            raise LoadError(f"{path} is not a dlc export manifest: it needs the \"library\" "
                            "and \"name\" strings that `dlc export` writes")
        return path.parent / manifest["library"], manifest["name"]
    if not (path.name.startswith("lib") and path.suffix == ".so"):
        raise LoadError(f"{path} is not an exported model (libNAME.so, NAME.json or a folder)")
    return path, path.name[3:-3]


class ExportedModel:
    """An exported model loaded with ctypes: `model(*arrays)` or `model({name: array})`."""

    def __init__(self, path: str | Path):
        library_path, self.name = _library_path(Path(path))
        if not library_path.is_file():
            raise LoadError(f"{library_path} does not exist")
        try:
            self._library = ctypes.CDLL(str(library_path.resolve()))
        except OSError as error:  # (not a shared object, or of another machine)
            raise LoadError(f"cannot load {library_path}: {error}") from None
        prefix = self.name
        function = self._function
        if not hasattr(self._library, f"{prefix}_missing_cpu_feature"):
            raise LoadError(f"{library_path} is not a dlc export named {prefix!r}: it has no "
                            f"{prefix}_missing_cpu_feature")
        missing = function("missing_cpu_feature", ctypes.c_char_p)()
        if missing:
            raise LoadError(f"{library_path} was compiled for a CPU with {missing.decode()}, "
                            "which this CPU lacks: export it again for --target=native")
        self.signature = Signature(self._specs("input"), self._specs("output"))
        # (a model with dynamic sizes: one signature per specialization, by input shapes)
        count = self._function("num_specializations", ctypes.c_size_t)() if hasattr(
            self._library, f"{prefix}_num_specializations") else 1
        self.specializations = [
            Signature(self._specs("input", k), self._specs("output", k)) for k in range(count)
        ] if count > 1 else [self.signature]
        session = ctypes.c_void_p()
        message = ctypes.c_char_p()
        code = function("session_create", ctypes.c_int)(ctypes.byref(session),
                                                        ctypes.byref(message))
        if code:
            raise LoadError(f"{prefix}_session_create: {(message.value or b'').decode()}")
        self._session = session
        self._lock = threading.Lock()
        self._destroy = function("session_destroy", None)
        self._run = function("run", ctypes.c_int)
        self._message = function("error_message", ctypes.c_char_p)
        # (converted once per specialization: each call passes the same session and tensors)
        self._calls = {tuple(s.shape for s in sig.inputs): (sig, self._arguments(sig))
                       for sig in self.specializations}

    def _arguments(self, signature: Signature) -> tuple:
        """The `run` arguments for calls of `signature` (the tensors' data set per call)."""
        specs = (*signature.inputs, *signature.outputs)
        shapes = [(ctypes.c_int64 * max(len(s.shape), 1))(*s.shape) for s in specs]
        tensors = (Tensor * len(specs))(*[Tensor(_CODES[s.dtype], len(s.shape), shape, None)
                                          for s, shape in zip(specs, shapes)])
        n = len(signature.inputs)
        inputs = ctypes.cast(tensors, ctypes.POINTER(Tensor))
        outputs = ctypes.cast(ctypes.byref(tensors, n * ctypes.sizeof(Tensor)),
                              ctypes.POINTER(Tensor))
        return (tensors, shapes), (self._session, inputs, ctypes.c_size_t(n), outputs,
                                   ctypes.c_size_t(len(signature.outputs)))

    def _function(self, name: str, restype):
        function = getattr(self._library, f"{self.name}_{name}")
        function.restype = restype
        return function

    def _specs(self, kind: str, specialization: int | None = None) -> tuple[TensorSpec, ...]:
        """The signature's inputs or outputs (`kind`), of one specialization when given; a
        size that differs between specializations (-1) is dynamic, `?`."""
        count = self._function(f"num_{kind}s", ctypes.c_size_t)()
        specs = []
        for index in range(count):
            tensor, name = Tensor(), ctypes.c_char_p()
            if specialization is None:
                self._function(kind, ctypes.c_int)(
                    ctypes.c_size_t(index), ctypes.byref(tensor), ctypes.byref(name))
            else:
                self._function(f"specialization_{kind}", ctypes.c_int)(
                    ctypes.c_size_t(specialization), ctypes.c_size_t(index),
                    ctypes.byref(tensor), ctypes.byref(name))
            shape = tuple(tensor.shape[i] if tensor.shape[i] >= 0 else "?"
                          for i in range(tensor.rank))
            specs.append(TensorSpec(name.value.decode(), shape, np.dtype(_DTYPES[tensor.dtype])))
        return tuple(specs)

    def __call__(self, *args, **kwargs) -> list[np.ndarray]:
        if len(self.specializations) == 1:
            signature, ((tensors, _), arguments) = next(iter(self._calls.values()))
            inputs = signature.bind(args, kwargs)
        else:
            inputs = self.signature.check_dtypes(args, kwargs)
            self.signature.bind_symbols([a.shape for a in inputs])  # (ranks, fixed sizes)
            found = self._calls.get(tuple(a.shape for a in inputs))
            if found is None:
                shown = "; ".join(", ".join(f"{s.name}: {list(s.shape)}" for s in sig.inputs)
                                  for sig in self.specializations)
                raise InputError(f"no specialization of {self.name} takes inputs of shapes "
                                 f"{[list(a.shape) for a in inputs]}; it was exported for: "
                                 f"{shown}")
            signature, ((tensors, _), arguments) = found
        outputs = [np.empty(s.shape, s.dtype) for s in signature.outputs]
        with self._lock:  # (one session, one thread at a time: the header's contract)
            for tensor, array in zip(tensors, (*inputs, *outputs)):
                tensor.data = address(array)
            code = self._run(*arguments)
            message = (self._message(self._session) or b"").decode() if code else ""
        if code:
            error = {E_INDEX: IndexOutOfRangeError, E_COUNT: InputError, E_DTYPE: InputError,
                     E_SHAPE: InputError}.get(code, DlcError)
            raise error(message)
        return signature.trim(outputs)  # (bounded outputs cut to their counts)

    def __del__(self) -> None:
        session = getattr(self, "_session", None)
        if session:
            self._destroy(session)
            self._session = None

    def __repr__(self) -> str:
        return f"<dlc exported model {self.name} {self.signature}>"


def load(path: str | Path) -> ExportedModel:
    """The exported model at `path` (its folder, manifest or library), ready to call."""
    return ExportedModel(path)
