"""The CUDA runtime of dlc's nvptx target: is there a GPU, and calling compiled host code.

No CUDA toolkit is needed, at build time or at run time: only the NVIDIA driver
(`libcuda.so.1`). `unavailable()` says why CUDA cannot run here (None when it can): it loads
the driver with ctypes and asks it for devices (`cuInit`, `cuDeviceGetCount`). `device()`
names device 0 and its compute capability.

`CudaFunction` JIT-compiles the host code of a module lowered by the nvptx pipeline (stage
`llvm`: `gpu.launch_func` lowered to calls of the MLIR CUDA runtime wrappers, `mgpuModuleLoadJIT`
for the PTX of each `gpu.binary`) with MLIR's ExecutionEngine, linked against
`libmlir_cuda_runtime.so` from the pinned MLIR bindings. It is called like the CPU's
`JitFunction`: numpy arrays in (host memory), numpy arrays out; the compiled host code copies
inputs to device buffers, launches the kernels on the default stream, copies the outputs back
and synchronizes. The driver JIT-compiles the PTX for the device on first use.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import mlir
import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from dlc.errors import DlcError
from dlc.runtime.jit import (
    STATUS_SYMBOL,
    NativeFunction,
    Signature,
    _static_descriptor,
    runtime_libraries,
)
from dlc.runtime.signature import TensorSpec

DRIVER = "libcuda.so.1"
WRAPPERS = "libmlir_cuda_runtime.so"


class CudaUnavailableError(DlcError):
    """No usable CUDA driver or device, or no MLIR CUDA runtime wrappers."""


@dataclass(frozen=True)
class Device:
    name: str
    compute_capability: tuple[int, int]

    @property
    def chip(self) -> str:
        """The `sm_XY` name that PTX for this device may target."""
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"


@cache
def _driver() -> ctypes.CDLL | str:
    """The initialized driver library, or why there is none."""
    try:
        library = ctypes.CDLL(DRIVER)
    except OSError as error:
        return f"no CUDA driver ({DRIVER} could not be loaded: {error})"
    status = library.cuInit(0)
    if status != 0:
        return f"the CUDA driver failed to initialize (cuInit returned CUresult {status})"
    count = ctypes.c_int(0)
    status = library.cuDeviceGetCount(ctypes.byref(count))
    if status != 0 or count.value == 0:
        return f"no CUDA device (cuDeviceGetCount: status {status}, {count.value} devices)"
    return library


@cache
def wrappers_library() -> str | None:
    """The MLIR CUDA runtime wrappers (`mgpu*` functions) shipped with the MLIR bindings."""
    for base in mlir.__path__:
        path = Path(base) / "lib" / WRAPPERS
        if path.exists():
            return str(path)
    return None


def unavailable() -> str | None:
    """Why compiled GPU code cannot run in this process, or None when it can."""
    driver = _driver()
    if isinstance(driver, str):
        return driver
    if wrappers_library() is None:
        return f"the MLIR bindings ship no {WRAPPERS} (the MLIR CUDA runtime wrappers)"
    return None


def require() -> ctypes.CDLL:
    """The driver library; CudaUnavailableError saying why when CUDA cannot run here."""
    reason = unavailable()
    if reason is not None:
        raise CudaUnavailableError(f"cannot run on a GPU: {reason}. dlc.gpu.compile still "
                                   "emits PTX (GpuModel.ptx) without one")
    return _driver()  # type: ignore[return-value]


def device(ordinal: int = 0) -> Device:
    """Name and compute capability of device `ordinal` (CudaUnavailableError without one)."""
    library = require()
    handle = ctypes.c_int(0)
    if library.cuDeviceGet(ctypes.byref(handle), ordinal) != 0:
        raise CudaUnavailableError(f"no CUDA device {ordinal}")
    name = ctypes.create_string_buffer(256)
    library.cuDeviceGetName(name, len(name), handle)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76
    library.cuDeviceGetAttribute(ctypes.byref(major), 75, handle)
    library.cuDeviceGetAttribute(ctypes.byref(minor), 76, handle)
    return Device(name.value.decode(errors="replace"), (major.value, minor.value))


class _Context:
    """Device 0's primary context (the one the MLIR runtime wrappers use), made current for
    the driver calls of a `with` block."""

    def __init__(self, library: ctypes.CDLL):
        self.library = library
        device, context = ctypes.c_int(0), ctypes.c_void_p()
        _checked(library, library.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
        _checked(library, library.cuDevicePrimaryCtxRetain(ctypes.byref(context), device),
                 "cuDevicePrimaryCtxRetain")
        self.handle = context

    def __enter__(self) -> ctypes.CDLL:
        _checked(self.library, self.library.cuCtxPushCurrent_v2(self.handle), "cuCtxPushCurrent")
        return self.library

    def __exit__(self, *_) -> None:
        self.library.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def _checked(library: ctypes.CDLL, status: int, what: str) -> None:
    if status != 0:
        name = ctypes.c_char_p()
        library.cuGetErrorName(status, ctypes.byref(name))
        text = name.value.decode() if name.value else f"CUresult {status}"
        raise CudaUnavailableError(f"{what} failed: {text}")


class ResidentBuffers:
    """Device copies of a model's constants (its weights), uploaded once and freed with this
    object: the `{dlc.resident}` arguments of the host code (`dlc-gpu-device-buffers`)."""

    def __init__(self, arrays: Sequence[np.ndarray], context: _Context):
        self._context = context
        self.pointers: list[int] = []
        self.nbytes = 0
        with self._context as driver:
            driver.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
            driver.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
            for array in arrays:
                data = np.ascontiguousarray(array)
                pointer = ctypes.c_uint64(0)
                _checked(driver, driver.cuMemAlloc_v2(ctypes.byref(pointer), max(data.nbytes, 1)),
                         f"cuMemAlloc of {data.nbytes} bytes")
                self.pointers.append(pointer.value)
                if data.nbytes:
                    _checked(driver, driver.cuMemcpyHtoD_v2(pointer.value, data.ctypes.data,
                                                            data.nbytes), "cuMemcpyHtoD")
                self.nbytes += data.nbytes
        self.descriptors = []
        for array, pointer in zip(arrays, self.pointers, strict=True):
            descriptor = _static_descriptor(TensorSpec("", tuple(array.shape), array.dtype))
            descriptor.allocated = descriptor.aligned = pointer
            self.descriptors.append(descriptor)

    def free(self) -> None:
        pointers, self.pointers = self.pointers, []
        if pointers:
            with self._context as driver:
                driver.cuMemFree_v2.argtypes = [ctypes.c_uint64]
                for pointer in pointers:
                    driver.cuMemFree_v2(pointer)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # (at interpreter exit the driver may be gone)
            self.free()


class DevicePool:
    """The device memory of the host code's buffers (`mgpuMemAlloc`/`mgpuMemFree`, which the
    runtime wrappers map to cuMemAlloc and cuMemFree on every call: ~10 us each, and a model
    has hundreds): freed buffers are kept by size and handed out again, so that from the
    second call on a model allocates nothing. Calls of one model run one at a time
    (NativeFunction's lock) and synchronize before returning, so a buffer freed in a call is
    idle when the next call takes it. Everything is freed with the pool."""

    def __init__(self, context: _Context):
        self._context = context
        self._idle: dict[int, list[int]] = {}
        self._size: dict[int, int] = {}
        self.driver_allocations = 0
        self.alloc_callback = _ALLOC(self._alloc)
        self.free_callback = _FREE(self._free)

    def _alloc(self, size: int, stream: int | None, host_shared: int) -> int:
        size = max(int(size), 1)
        idle = self._idle.get(size)
        if idle:
            pointer = idle.pop()
        else:
            pointer = ctypes.c_uint64(0)
            with self._context as driver:
                if host_shared:  # (dlc never asks for it; the wrappers' semantics: managed)
                    status = driver.cuMemAllocManaged(ctypes.byref(pointer), ctypes.c_size_t(size),
                                                      ctypes.c_uint(1))
                else:
                    status = driver.cuMemAlloc_v2(ctypes.byref(pointer), size)
            if status != 0:
                return 0  # (the kernels then fail; the wrappers do the same)
            pointer = pointer.value
            self.driver_allocations += 1
        self._size[pointer] = size
        return pointer

    def _free(self, pointer: int | None, stream: int | None) -> None:
        if pointer:
            self._idle.setdefault(self._size[pointer], []).append(pointer)

    def release(self) -> None:
        pointers = [p for idle in self._idle.values() for p in idle]
        self._idle.clear()
        if pointers:
            with self._context as driver:
                for pointer in pointers:
                    driver.cuMemFree_v2(ctypes.c_uint64(pointer))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # (at interpreter exit the driver may be gone)
            self.release()


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int8)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class CudaFunction(NativeFunction):
    """The host code of an nvptx-lowered module, JIT-compiled, called with numpy arrays.

    `resident` holds the data of the module's resident constants (the trailing
    `{dlc.resident}` arguments of `entry`, in order): uploaded to the device once, here."""

    def __init__(self, module: ir.Module, signature: Signature, *, entry: str = "main",
                 checks: Sequence[str] = (), resident: Sequence[np.ndarray] = ()):
        context = _Context(require())
        super().__init__(signature, checks, lock_key=None)
        self.resident = ResidentBuffers(resident, context)
        self.entry = entry
        libraries = [*runtime_libraries(), wrappers_library()]
        self._engine = ExecutionEngine(module, opt_level=2, shared_libs=libraries)
        # (registered symbols take precedence over the wrappers' of the same name)
        self.pool = DevicePool(context)
        self._engine.raw_register_runtime(
            "mgpuMemAlloc", ctypes.cast(self.pool.alloc_callback, ctypes.c_void_p))
        self._engine.raw_register_runtime(
            "mgpuMemFree", ctypes.cast(self.pool.free_callback, ctypes.c_void_p))
        # the global constructors load every kernel module (`mgpuModuleLoadJIT` of its PTX):
        # the engine runs them only when asked
        self._engine.initialize()
        address = self._engine.raw_lookup("_mlir_ciface_" + entry)
        if not address:
            raise CudaUnavailableError(f"the compiled module has no function {entry!r}")
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._cells = [ctypes.pointer(d)
                       for d in (*self._descriptors, *self.resident.descriptors)]
        self._packed = (ctypes.c_void_p * len(self._cells))(
            *[ctypes.addressof(cell) for cell in self._cells])
        if self.checks:  # (the host code copies the index checks' status back from the device)
            self._bind_status(self._engine.raw_lookup(STATUS_SYMBOL) or None)

    def _invoke(self) -> None:
        self._function(self._packed)
