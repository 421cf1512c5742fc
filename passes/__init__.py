"""dlc's passes, one folder per stage they run in: `graph/` (the dlc dialect's graph), `linalg/`
(the lowering to linalg and the schedules; the op patterns in `lowering/`, the schedule
families in `codegen/`), `buffer/` (after bufferization), `llvm/` (the llvm dialect and code
generation), `gpu/` (the NVPTX backend). The infrastructure stays here: `registry` (passes by
name, found in the stage folders), `pipeline` (pipeline text -> PassManager), `pipelines`
(the opt levels), `plugins` (passes of other projects).

`registered_passes()` lists every pass by pipeline name; `build_pass_manager(text)` turns a
pipeline text mixing them with upstream passes into a PassManager; `pipeline(opt_level)` gives
the named pipeline of an opt level; `load_plugin(path)` loads passes written outside dlc and
`extend_stage(stage, text)` adds passes to the opt levels' pipelines (`dlc.passes.plugins`).

What belongs here: IR to IR transformations and their infrastructure. What does not: model
formats (frontends), the compile driver (`dlc.compiler`), running code (runtime), the CLIs.
"""

from dlc.passes.pipeline import build_pass_manager, describe, parse_pipeline
from dlc.passes.pipelines import (
    OPT_LEVELS,
    STAGES,
    clear_extensions,
    extend_stage,
    pipeline,
    stage_pipelines,
)
from dlc.passes.plugins import PluginError, PluginWarning, load_plugin
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
    "PluginError",
    "PluginWarning",
    "build_pass_manager",
    "clear_extensions",
    "describe",
    "extend_stage",
    "load_plugin",
    "parse_pipeline",
    "pipeline",
    "register",
    "registered_passes",
    "stage_pipelines",
]
