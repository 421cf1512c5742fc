"""The pass pipelines of the nvptx target, cut into stages.

Stages: `dlc` and `linalg` as on the CPU (the linalg stage without the CPU's tiling and
vectorization schedules), `bufferized` (memrefs, buffers in device memory), `gpu` (every loop
nest a kernel: `gpu.launch_func` and outlined `gpu.module`s), `nvvm` (kernels in the llvm and
nvvm dialects, with their `#nvvm.target`) and `llvm` (host code in the llvm dialect calling the
MLIR CUDA runtime wrappers, kernels as `gpu.binary` ops holding PTX text). PTX needs neither
the CUDA toolkit nor a GPU: LLVM's NVPTX backend emits it (`gpu-module-to-binary{format=isa}`),
and the driver compiles it for the device when the module is loaded.
"""

from __future__ import annotations

from dlc.passes.pipelines import OPT_LEVELS
from dlc.passes.pipelines import stage_pipelines as cpu_stage_pipelines

GPU_STAGES = ("dlc", "linalg", "bufferized", "gpu", "nvvm", "llvm")
DEFAULT_CHIP = "sm_90"  # H100/H200; PTX of an older ISA runs on newer chips, not the reverse
DEFAULT_FEATURES = "+ptx80"
DEFAULT_BLOCK_SIZE = 256

# results become caller-allocated out-parameters (host memory, numpy's), as on the CPU; no
# deallocation pass: dlc-gpu-device-buffers frees the device buffers it creates
_BUFFERIZE = (
    "dlc-distinct-results,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
    "canonicalize,cse,dlc-gpu-device-buffers"
)
# every linalg op becomes one scf.parallel over its parallel dimensions (its reductions serial
# inside), then one kernel with a thread per iteration
_KERNELS = (
    "func.func(convert-linalg-to-parallel-loops),dlc-gpu-map-loops{{block-size={block}}},"
    "gpu-kernel-outlining,dlc-gpu-name-kernels,canonicalize,cse"
)
_NVVM = (
    "nvvm-attach-target{{chip={chip} features={features} O=3}},"
    "gpu.module(expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,"
    "canonicalize,cse,reconcile-unrealized-casts)"
)
_HOST = (
    "func.func(gpu-async-region),expand-strided-metadata,lower-affine,convert-scf-to-cf,gpu-to-llvm,"
    "finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
    "convert-cf-to-llvm,convert-func-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts,"
    "gpu-module-to-binary{format=isa}"
)


def stage_pipelines(opt_level: int = 2, chip: str = DEFAULT_CHIP,
                    features: str = DEFAULT_FEATURES,
                    block_size: int = DEFAULT_BLOCK_SIZE,
                    device_arguments: bool = False) -> dict[str, str]:
    """The pipeline text of each nvptx stage, in order, for `opt_level` (0 to 3);
    `device_arguments`: main's arguments are device buffers (torch CUDA tensors), not host
    arrays copied in and out."""
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {OPT_LEVELS}, got {opt_level!r}")
    if not chip.startswith("sm_") or not chip[3:].rstrip("a").isdigit():
        raise ValueError(f"chip must be an NVIDIA SM name such as sm_80 or sm_90a, got {chip!r}")
    if not 1 <= block_size <= 1024:
        raise ValueError(f"block_size must be in [1, 1024] threads, got {block_size}")
    cpu = cpu_stage_pipelines(opt_level)
    linalg = "dlc-to-linalg"
    if opt_level >= 1:
        linalg += ",canonicalize,cse"
    if opt_level >= 2:
        # elementwise chains fuse into one kernel; exp/tanh/erf become polynomials (no libdevice)
        linalg += (",dlc-generalize-elementwise,func.func(linalg-fuse-elementwise-ops),"
                   "canonicalize,cse,dlc-polynomial-math")
    if opt_level >= 1:
        # (after fusion: the reductions as they will run) a layer norm's 128 threads reading
        # 768 elements each become 4096 threads reading 24, neighbours at neighbouring addresses
        linalg += ",dlc-gpu-split-reductions"
    return {
        "dlc": cpu["dlc"],
        "linalg": linalg,
        "bufferized": _BUFFERIZE + ("{device-arguments=true}" if device_arguments else ""),
        "gpu": _KERNELS.format(block=block_size),
        "nvvm": _NVVM.format(chip=chip, features=features),
        "llvm": _HOST,
    }


def gpu_pipeline(opt_level: int = 2, until: str = "llvm", chip: str = DEFAULT_CHIP,
                 features: str = DEFAULT_FEATURES) -> str:
    """The whole nvptx pipeline of `opt_level` up to and including stage `until`, as MLIR
    text that dlc-opt accepts."""
    if until not in GPU_STAGES:
        raise ValueError(f"unknown stage {until!r}; nvptx stages are {', '.join(GPU_STAGES)}")
    stages = stage_pipelines(opt_level, chip, features)
    parts = [stages[s] for s in GPU_STAGES[: GPU_STAGES.index(until) + 1]]
    return f"builtin.module({','.join(parts)})"
