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

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import mlir
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from dlc.errors import DlcError
from dlc.runtime.jit import STATUS_SYMBOL, NativeFunction, Signature, runtime_libraries

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


class CudaFunction(NativeFunction):
    """The host code of an nvptx-lowered module, JIT-compiled, called with numpy arrays."""

    def __init__(self, module: ir.Module, signature: Signature, *, entry: str = "main",
                 checks: Sequence[str] = ()):
        require()
        super().__init__(signature, checks, lock_key=None)
        self.entry = entry
        libraries = [*runtime_libraries(), wrappers_library()]
        self._engine = ExecutionEngine(module, opt_level=2, shared_libs=libraries)
        # the global constructors load every kernel module (`mgpuModuleLoadJIT` of its PTX):
        # the engine runs them only when asked
        self._engine.initialize()
        address = self._engine.raw_lookup("_mlir_ciface_" + entry)
        if not address:
            raise CudaUnavailableError(f"the compiled module has no function {entry!r}")
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._cells = [ctypes.pointer(d) for d in self._descriptors]
        self._packed = (ctypes.c_void_p * len(self._cells))(
            *[ctypes.addressof(cell) for cell in self._cells])
        if self.checks:  # (the host code copies the index checks' status back from the device)
            self._bind_status(self._engine.raw_lookup(STATUS_SYMBOL) or None)

    def _invoke(self) -> None:
        self._function(self._packed)
