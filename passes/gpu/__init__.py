"""dlc's GPU (NVPTX) backend: the passes and pipelines from the linalg stage to PTX.

The dlc and linalg stages are the CPU's (without the CPU schedules; long reductions with few
outputs split in two by `dlc-gpu-split-reductions`); then
`dlc-gpu-device-buffers` moves buffers to device memory, `dlc-gpu-map-loops` maps every
parallel loop nest to a `gpu.launch`, upstream MLIR outlines the kernels, lowers them to NVVM
and emits PTX with LLVM's NVPTX backend (`gpu-module-to-binary{format=isa}`: no CUDA toolkit).
`stage_pipelines` gives the pipeline text of each stage; `ptx.kernels` reads the PTX back.
Importing this package registers its passes (it is one of the registry's stage folders, so
`registered_passes()` and dlc-opt see them).

What belongs here: what only the GPU pipeline runs. What does not: the CPU schedules
(`codegen/`) or the shared dlc and linalg stages' passes.
"""

from dlc.passes.gpu import device_buffers, map_loops, names, ptx, split_reductions
from dlc.passes.gpu.pipelines import (
    DEFAULT_CHIP,
    DEFAULT_FEATURES,
    GPU_STAGES,
    gpu_pipeline,
    stage_pipelines,
)

__all__ = [
    "DEFAULT_CHIP",
    "DEFAULT_FEATURES",
    "GPU_STAGES",
    "device_buffers",
    "gpu_pipeline",
    "map_loops",
    "names",
    "ptx",
    "split_reductions",
    "stage_pipelines",
]
