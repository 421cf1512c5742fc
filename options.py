"""`CompileOptions`: everything a compile depends on besides the model, in one record.

Every way into compilation builds one and passes it down (`dlc.compile` and `dlc.lower` for
ONNX and PyTorch, `torch.compile(backend="dlc")`, `dlc.backend`, a DynamicModel's
specializations, `dlc.profile`, `dlc tune`'s measurements, `dlc bisect`, the CLI), so that no
path has defaults of its own: `resolve()` fills what the environment decides (the threads,
`$DLC_NUM_THREADS` through `dlc.settings`) once, at the entry point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlc import settings
from dlc.errors import ArgumentError
from dlc.passes.pipelines import OPT_LEVELS

# more threads than any machine runs at once: OpenMP aborts the whole process (SIGABRT, "System
# unable to allocate necessary resources for OMP thread") at the first call that cannot start
# them all (100,000 here), which no caller can catch
MAX_THREADS = 1024


@dataclass(frozen=True)
class CompileOptions:
    opt_level: int = 2  # 0-3: the pipelines of `dlc.passes.stage_pipelines`
    num_threads: int | None = None  # the threads of compiled code; None: $DLC_NUM_THREADS/cores
    input_shapes: Mapping[str, Sequence[int]] | None = None  # fixes inputs' dynamic sizes
    constants: Mapping[str, Any] | None = None  # input values compiled in (numpy arrays)
    example_inputs: Sequence | None = None  # a torch module's inputs, for torch.export
    timings: bool = False  # measure each step's peak memory too
    pipelines: Mapping[str, str] | None = None  # stage -> pipeline text, replacing opt_level's

    def resolve(self) -> CompileOptions:
        """These options with the environment's defaults filled in, checked (ArgumentError)."""
        threads = settings.NUM_THREADS.get() if self.num_threads is None else self.num_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ArgumentError(f"num_threads must be at least 1, got {threads!r}")
        if threads > MAX_THREADS:  # (OpenMP aborts the process when it cannot start them)
            if self.num_threads is not None:
                raise ArgumentError(f"num_threads must be at most {MAX_THREADS}, got {threads}")
            threads = MAX_THREADS  # ($DLC_NUM_THREADS or the cores of a larger machine)
        if isinstance(self.opt_level, bool) or self.opt_level not in OPT_LEVELS:
            raise ArgumentError(f"opt_level must be one of {OPT_LEVELS}, got {self.opt_level!r}")
        check_shapes(self.input_shapes)
        if self.constants is not None and not isinstance(self.constants, Mapping):
            raise ArgumentError("constants must be a mapping of input names to arrays, got "
                                f"{type(self.constants).__name__}")
        return self.replace(num_threads=threads)

    def replace(self, **changes: Any) -> CompileOptions:
        return dataclasses.replace(self, **changes)

    @property
    def threads(self) -> int:
        """The resolved thread count (`resolve()` first)."""
        if self.num_threads is None:
            raise ArgumentError("CompileOptions.threads of unresolved options: resolve() first")
        return self.num_threads

    def for_shapes(self, input_shapes: Mapping[str, Sequence[int]] | None) -> CompileOptions:
        """The options of one specialization of a dynamic model: these, with `input_shapes`
        and without timings (`example_inputs` are the caller's to set)."""
        return self.replace(input_shapes=input_shapes, timings=False)


def check_shapes(input_shapes: Any) -> None:
    """ArgumentError unless `input_shapes` is None or maps names to sequences of integer sizes
    (a float size was truncated, True taken for 1, a string's characters read as sizes)."""
    if input_shapes is None:
        return
    if not isinstance(input_shapes, Mapping):
        raise ArgumentError("input_shapes must be a mapping of input names to shapes, got "
                            f"{type(input_shapes).__name__}")
    for name, shape in input_shapes.items():
        sizes = list(shape) if isinstance(shape, Sequence | np.ndarray) and \
            not isinstance(shape, str | bytes) else None
        if sizes is None or not all(isinstance(d, int | np.integer) and
                                    not isinstance(d, bool | np.bool_) for d in sizes):
            raise ArgumentError(f"input_shapes[{name!r}] must be a sequence of integer sizes, "
                                f"got {shape!r}")


def merge(options: CompileOptions | None, **arguments: Any) -> CompileOptions:
    """The resolved options of an entry point called with `options=` or with keyword
    arguments (`dlc.compile(model, opt_level=3)`), not both."""
    if options is None:
        return CompileOptions(**arguments).resolve()
    defaults = CompileOptions()
    def given_(name: str, value: Any) -> bool:  # (arrays and tensors never compared)
        default = getattr(defaults, name)
        return value is not None if default is None else value != default

    given = [name for name, value in arguments.items() if given_(name, value)]
    if given:
        raise ArgumentError(f"give either options= or {', '.join(given)}, not both")
    if not isinstance(options, CompileOptions):
        raise ArgumentError(f"options must be a dlc.CompileOptions, got {type(options).__name__}")
    return options.resolve()
