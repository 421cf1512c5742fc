"""The GPU (NVPTX) entry point: `dlc.gpu.compile(model) -> GpuModel`, PTX and host code.

`compile` imports the model as `dlc.compile` does, runs the nvptx pipeline of
`dlc.passes.gpu.stage_pipelines` stage by stage (snapshots for `GpuModel.ir`) and reads the
PTX of every kernel module. It needs no GPU, no driver and no CUDA toolkit: LLVM's NVPTX
backend emits the PTX. `GpuModel.ptx` is that PTX by kernel module, `GpuModel.launches` the
host's launch plan (each `gpu.launch_func` in program order: kernel, grid and block sizes).

Calling a GpuModel runs it: it needs the NVIDIA driver and a device (see
`dlc.runtime.cuda.unavailable`), otherwise it raises `CudaUnavailableError` (a DlcError) saying
what is missing. numpy arrays or torch tensors (any device) in; numpy arrays out, or torch
tensors on the first input tensor's device. Errors: those of `dlc.compile`, plus `PtxError`
when the PTX misses a kernel or calls a function the driver cannot link.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from mlir import ir

from dlc.compiler import CompileError, elide_limit, run_stage, signature_of
from dlc.dialects import make_context
from dlc.errors import InputError
from dlc.frontends.onnx_importer import ImportedModel, import_model
from dlc.frontends.torch.tensors import holds_torch_tensors, is_torch_model
from dlc.passes.gpu import ptx as ptx_text
from dlc.passes.gpu.device_buffers import resident_globals
from dlc.passes.gpu.pipelines import (
    DEFAULT_CHIP,
    DEFAULT_FEATURES,
    GPU_STAGES,
    gpu_pipeline,
    stage_pipelines,
)
from dlc.passes.graph.match import elements_to_numpy
from dlc.passes.lowering import checks
from dlc.runtime import cuda
from dlc.runtime.jit import Signature

__all__ = ["GpuModel", "KernelLaunch", "compile", "compile_imported", "cuda"]


@dataclass(frozen=True)
class KernelLaunch:
    """One `gpu.launch_func` of the host code: `module::kernel` on grid x block threads."""

    module: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    location: str = ""  # (the ONNX node(s) the kernel computes, as the IR locates it)

    def __str__(self) -> str:
        return f"{self.module}::{self.kernel} grid={self.grid} block={self.block}"


class GpuModel:
    """A model compiled for NVIDIA GPUs: its PTX, its launch plan, and a callable.

    `cuda_tensors_in_place` (experimental, off): torch CUDA tensors are used where they are,
    by a variant of the host code whose arguments are device buffers, instead of being
    copied to the host and back. It crashed on a BERT-like model in the last run on an H200
    (a small ResNet-like model ran correctly): off until that is diagnosed on a GPU."""

    cuda_tensors_in_place = False

    def __init__(self, context: ir.Context, snapshots: dict[str, ir.Operation],
                 module: ir.Module, signature: Signature, opt_level: int, chip: str,
                 features: str, compile_seconds: float, check_descriptions: list[str]):
        self._context = context
        self._snapshots = snapshots
        self._module = module
        self._function: cuda.CudaFunction | None = None
        self._device: cuda.CudaFunction | None = None
        self._checks = check_descriptions
        self.signature = signature
        self.opt_level = opt_level
        self.chip = chip
        self.features = features
        self.compile_seconds = compile_seconds
        with context:
            self.ptx: dict[str, str] = ptx_text.binaries(module.operation)
            self.launches: list[KernelLaunch] = _launches(snapshots["gpu"])

    @property
    def pipeline(self) -> str:
        return gpu_pipeline(self.opt_level, chip=self.chip, features=self.features)

    @property
    def kernels(self) -> list[str]:
        """Every kernel entry point of the PTX, as `module::kernel`."""
        return [f"{m}::{k}" for m, text in self.ptx.items() for k in ptx_text.entries(text)]

    def ir(self, stage: str = "dlc", large_elements_limit: int | None = None) -> str:
        """The IR after `stage` (dlc, linalg, bufferized, gpu, nvvm, llvm) as text."""
        if stage not in self._snapshots:
            raise ValueError(f"unknown stage {stage!r}; nvptx stages are {', '.join(GPU_STAGES)}")
        limit = elide_limit(large_elements_limit)
        with self._context:
            return self._snapshots[stage].get_asm(large_elements_limit=limit)

    def resident_constants(self) -> list[np.ndarray]:
        """The data of the constants that stay on the device across calls (the weights), in
        the order of main's `{dlc.resident}` arguments, read from the bufferized IR."""
        snapshot = self._snapshots["bufferized"]
        with self._context:
            body = snapshot.regions[0].blocks[0].operations
            main = next(op.operation for op in body if op.operation.name == "func.func"
                        and ir.StringAttr(op.attributes["sym_name"]).value == "main")
            globals_ = {ir.StringAttr(op.attributes["sym_name"]).value: op.operation
                        for op in body if op.operation.name == "memref.global"}
            arrays = []
            for name in resident_globals(main):
                array = elements_to_numpy(globals_[name].attributes["initial_value"])
                if array is None:
                    raise CompileError(f"the resident constant @{name} has an element type "
                                       "dlc cannot read into a numpy array")
                arrays.append(array)
        return arrays

    def _host_function(self) -> cuda.CudaFunction:
        if self._function is None:
            with self._context:
                self._function = cuda.CudaFunction(self._module, self.signature,
                                                   checks=self._checks,
                                                   resident=self.resident_constants())
        return self._function

    def _device_function(self) -> cuda.CudaFunction:
        """The variant whose inputs and outputs are device buffers (torch CUDA tensors):
        lowered again from the linalg stage on first use, with `device-arguments`."""
        if self._device is None:
            stages = stage_pipelines(self.opt_level, self.chip, self.features,
                                     device_arguments=True)
            with self._context:
                module = ir.Module.parse(self._snapshots["linalg"].get_asm(binary=True))
                for stage in GPU_STAGES[GPU_STAGES.index("bufferized"):]:
                    run_stage(module, stage, stages[stage])
                self._device = cuda.CudaFunction(module, self.signature, checks=self._checks,
                                                 resident=self.resident_constants())
        return self._device

    def __call__(self, *args, **kwargs) -> list:
        if not holds_torch_tensors(args, kwargs):
            return self._host_function()(*args, **kwargs)
        device_call = _on_device(self.signature, args, kwargs) \
            if self.cuda_tensors_in_place else None
        if device_call is not None:
            return device_call(self._device_function())
        return _call_with_tensors(self._host_function(), args, kwargs)

    def __repr__(self) -> str:
        return (f"GpuModel{self.signature} ({self.chip}, {len(self.launches)} launches, "
                f"opt_level={self.opt_level})")


def compile(
    model: str | Path | bytes | onnx.ModelProto,  # or a torch.nn.Module / ExportedProgram
    opt_level: int = 2,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    example_inputs: Sequence | None = None,
    chip: str = DEFAULT_CHIP,
    features: str = DEFAULT_FEATURES,
) -> GpuModel:
    """Compile an ONNX model or a PyTorch module for NVIDIA GPUs (PTX for `chip`).

    The arguments are those of `dlc.compile`; `chip` (sm_XY) and `features` (+ptxNN) choose
    the PTX target (a device of compute capability X.Y or newer runs it)."""
    stage_pipelines(opt_level, chip, features)  # (rejects bad options before importing)
    start = time.perf_counter()
    context = make_context()
    if example_inputs is not None or is_torch_model(model):
        from dlc.frontends.torch.importer import import_torch  # (torch is an optional extra)

        imported = import_torch(model, example_inputs, context)
    else:
        imported = import_model(model, context, input_shapes, constants)
    return compile_imported(context, imported, opt_level, chip, features, start)


def compile_imported(context: ir.Context, imported: ImportedModel, opt_level: int = 2,
                     chip: str = DEFAULT_CHIP, features: str = DEFAULT_FEATURES,
                     start: float | None = None) -> GpuModel:
    """Lower a module a frontend imported into the dlc dialect of `context` to PTX."""
    stages = stage_pipelines(opt_level, chip, features)
    start = time.perf_counter() if start is None else start
    module = imported.module
    with context:
        main = module.body.operations[0]
        main.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        signature = signature_of(main, imported.input_names, imported.output_names)
        snapshots: dict[str, ir.Operation] = {}
        for stage, text in stages.items():
            run_stage(module, stage, text)
            snapshots[stage] = module.operation.clone()
        _check_host(module.operation)
        launches = _launches(snapshots["gpu"])
        ptx_text.check(ptx_text.binaries(module.operation),
                       {(launch.module, launch.kernel) for launch in launches})
        descriptions = list(checks.descriptions(module.operation))
    return GpuModel(context, snapshots, module, signature, opt_level, chip, features,
                    time.perf_counter() - start, descriptions)


def _check_host(module: ir.Operation) -> None:
    """CompileError unless the host code is all llvm ops, kernel launches and binaries (a gpu
    op that gpu-to-llvm could not lower would only fail later, in the JIT)."""
    left: list[ir.Operation] = []

    def visit(inner: ir.Operation) -> ir.WalkResult:
        if not inner.name.startswith("llvm.") and inner.name != "gpu.launch_func":
            left.append(inner)
        return ir.WalkResult.ADVANCE

    for op in module.regions[0].blocks[0].operations:
        if op.operation.name != "gpu.binary":
            op.operation.walk(visit)
    if left:
        raise CompileError(f"stage 'llvm' left '{left[0].name}' in the host code at "
                           f"{left[0].location}: the nvptx pipeline cannot lower it")


def _constant(value: ir.Value) -> int:
    owner = value.owner
    owner = owner.operation if isinstance(owner, ir.OpView) else owner
    if isinstance(owner, ir.Operation) and owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    return -1  # (a size computed at run time)


def _launches(module: ir.Operation) -> list[KernelLaunch]:
    """The gpu.launch_func ops of the host functions, in program order."""
    found: list[KernelLaunch] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name != "gpu.launch_func":
            return ir.WalkResult.ADVANCE
        module_name, kernel = ir.SymbolRefAttr(op.attributes["kernel"]).value
        sizes = [_constant(op.operands[i]) for i in range(6)]
        found.append(KernelLaunch(module_name, kernel, tuple(sizes[:3]), tuple(sizes[3:]),
                                  str(op.location)))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def _on_device(signature: Signature, args: Sequence, kwargs: Mapping):
    """When every input is a torch tensor on CUDA device 0: a call running the device
    variant on the tensors' memory in place (outputs: new tensors on that device), with the
    signature checked as for numpy inputs; else None (the host path copies)."""
    import torch

    values = signature.arrange(args, kwargs)
    if not values or not all(isinstance(v, torch.Tensor) and v.is_cuda and v.device.index in
                             (0, None) for v in values):
        return None
    tensors = []
    for spec, value in zip(signature.inputs, values, strict=True):
        dtype = torch.empty(0, dtype=value.dtype).numpy().dtype if value.dtype not in (
            torch.bfloat16,) else None
        if dtype != spec.dtype:
            raise InputError(f"input '{spec.name}' has dtype {value.dtype}, expected "
                             f"{spec.dtype} (signature {signature})")
        if tuple(value.shape) != spec.shape:
            raise InputError(f"input '{spec.name}' has shape {list(value.shape)}, expected "
                             f"{list(spec.shape)} (signature {signature})")
        tensors.append(value.contiguous())
    device = tensors[0].device

    def call(function: cuda.CudaFunction) -> list:
        outputs = [torch.empty(spec.shape, device=device,
                               dtype=torch.from_numpy(np.empty(0, spec.dtype)).dtype)
                   for spec in signature.outputs]
        torch.cuda.synchronize(device)  # (the inputs, written on torch's stream, are ready)
        function.call_addresses([t.data_ptr() for t in (*tensors, *outputs)])
        return outputs

    return call


def _call_with_tensors(function: cuda.CudaFunction, args: Sequence, kwargs: Mapping) -> list:
    """torch tensors (any device) in; torch tensors on the first input tensor's device out."""
    import torch

    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    if len(args) == 1 and isinstance(args[0], Mapping):
        tensors = [v for v in args[0].values() if isinstance(v, torch.Tensor)]
    target = tensors[0].device if tensors else torch.device("cpu")

    def host(value):
        return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value

    if len(args) == 1 and isinstance(args[0], Mapping) and not kwargs:
        outputs = function({k: host(v) for k, v in args[0].items()})
    else:
        outputs = function(*(host(v) for v in args), **{k: host(v) for k, v in kwargs.items()})
    return [torch.from_numpy(o).to(target) for o in outputs]
