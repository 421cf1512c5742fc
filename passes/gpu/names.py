"""dlc-gpu-name-kernels: every kernel named after its module, so that names are unique.

`gpu-kernel-outlining` names every kernel after its function (`main_kernel`), in modules
`main_kernel`, `main_kernel_0`, ... A profiler (nsys, ncu, torch.profiler) shows kernels by
name: with one name for all, one row sums them all. This pass renames each `gpu.func` kernel to
its module's name and updates the `gpu.launch_func`s that call it, so that a profiler row is
one kernel, and `GpuModel.launches` names what the profiler shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from dlc.passes.registry import ModulePass, register


@register
@dataclass(frozen=True)
class GpuNameKernels(ModulePass):
    """Rename each kernel of an outlined gpu.module to the module's (unique) name."""

    name = "dlc-gpu-name-kernels"

    def run(self, module: ir.Operation) -> None:
        renamed: dict[tuple[str, str], str] = {}
        for top in module.regions[0].blocks[0].operations:
            if top.operation.name != "gpu.module":
                continue
            module_name = ir.StringAttr(top.attributes["sym_name"]).value
            kernels = [op for op in top.regions[0].blocks[0].operations
                       if op.operation.name == "gpu.func" and "gpu.kernel" in op.attributes]
            if len(kernels) != 1:
                continue  # (several kernels in one module: their names are already distinct)
            kernel = kernels[0]
            old = ir.StringAttr(kernel.attributes["sym_name"]).value
            kernel.attributes["sym_name"] = ir.StringAttr.get(module_name)
            renamed[(module_name, old)] = module_name

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "gpu.launch_func":
                module_name, kernel = ir.SymbolRefAttr(op.attributes["kernel"]).value
                new = renamed.get((module_name, kernel))
                if new is not None:
                    op.attributes["kernel"] = ir.SymbolRefAttr.get([module_name, new])
            return ir.WalkResult.ADVANCE

        if renamed:
            module.walk(visit)
