"""dlc's passes: graph-level passes on the dlc dialect and the lowering to linalg.

`registered_passes()` lists every pass by pipeline name; `build_pass_manager(text)` turns a
pipeline text mixing them with upstream passes into a PassManager; `pipeline(opt_level)` gives
the named pipeline of an opt level.
"""

from dlc.passes.pipeline import build_pass_manager, describe, parse_pipeline
from dlc.passes.pipelines import OPT_LEVELS, STAGES, pipeline, stage_pipelines
from dlc.passes.registry import (
    ModulePass,
    PassFailure,
    PipelineError,
    register,
    registered_passes,
)

__all__ = [
    "OPT_LEVELS",
    "STAGES",
    "ModulePass",
    "PassFailure",
    "PipelineError",
    "build_pass_manager",
    "describe",
    "parse_pipeline",
    "pipeline",
    "register",
    "registered_passes",
    "stage_pipelines",
]
