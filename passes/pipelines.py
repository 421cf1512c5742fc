"""The named pass pipelines of each opt level, cut into stages.

A stage is a cut point: `dlc` (after graph-level passes), `linalg` (after lowering and fusion),
`bufferized` (memrefs, results as out-parameters) and `llvm` (the llvm dialect, ready to JIT).
`pipeline(opt_level)` is the whole pipeline as one printable text that dlc-opt also accepts.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlc import settings
from dlc.errors import ArgumentError

STAGES = ("dlc", "linalg", "bufferized", "llvm")
OPT_LEVELS = (0, 1, 2, 3)

# graph-level optimizations (dlc dialect): -O1 the cheap node/block ones, -O2/-O3 all of them;
# dlc-canonicalize (CSE, DCE) runs again after the passes that leave dead or duplicate ops
_DLC_O1 = (
    "dlc-verify,dlc-eliminate-nops,dlc-eliminate-zero-size,dlc-weight-only-matmul,dlc-qdq-conv,"
    "dlc-fold-constants,dlc-simplify,"
    "dlc-strength-reduce,dlc-canonicalize"
)
_DLC_O2 = (
    _DLC_O1 + ",dlc-einsum-matmul,dlc-conv1d-as-2d,dlc-conv-transpose-matmul,"
    "dlc-sink-transpose,dlc-fuse-batchnorm,dlc-conv3d-as-2d,"
    "dlc-fuse-matmul-add,"
    "dlc-pad-matmul-n,dlc-pack-gemv,"
    "dlc-convert-layout,dlc-winograd,dlc-polyphase,dlc-clip-taps,dlc-split-concat-matmul,dlc-qdq-lut,"
    "dlc-fold-constants,dlc-simplify,dlc-canonicalize"
)
_ONE_SHOT = (
    "dlc-distinct-results,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
)
_OUT_PARAMS = (
    # results become caller-allocated out-parameters: numpy owns every output (a result of a
    # dynamic size too: the runtime allocates it from the shapes it computes before the call;
    # without hoist-dynamic-allocs it was a buffer copied into the output at the end: a
    # Softmax over [1, 12, 128, 128], S dynamic, 1.46 -> 1.18x its static compile)
    "buffer-results-to-out-params{hoist-static-allocs hoist-dynamic-allocs modify-public-functions},"
    # buffer-deallocation-pipeline, with dlc-split-deallocs before the simplification (which
    # costs N^2 alias queries on the one dealloc of a function's N buffers)
    "expand-realloc{emit-deallocs=false},canonicalize,ownership-based-buffer-deallocation,"
    "canonicalize,dlc-split-deallocs,buffer-deallocation-simplification,"
    "bufferization-lower-deallocations,cse,canonicalize"
)
_BUFFERIZE = _ONE_SHOT + _OUT_PARAMS
# -O2: canonicalize folds the in-place iter_args of tiled loops, so that a result computed by a
# loop nest is its allocation, which becomes the out-parameter itself (no copy into it)
# (then the intermediate buffers are placed in one static arena: dlc-plan-buffers)
# (dlc-eliminate-empty-tensors: upstream's, skipped when no insertion's source may alias an
# empty tensor: its analysis cost BERT-base 0.7 s to change nothing)
# (dlc-distinct-empty-tensors: one empty per destination, not one that CSE shared by many:
# one-shot-bufferize BERT-base 0.9-1.2 -> 0.2-0.4 s, ViT-B/16 1.1-2.0 -> 0.4-0.6 s; arenas
# 9.9 -> 3.6 MB, 24.5 -> 7.9 MB)
_BUFFERIZE_O2 = ("dlc-distinct-empty-tensors,dlc-eliminate-empty-tensors," + _ONE_SHOT
                 + "canonicalize,cse," + _OUT_PARAMS + ",dlc-lower-copies,dlc-plan-buffers")
# vector ops (left by dlc-schedule, lowered to 1-D by dlc-lower-vectors) go to scf then llvm;
# subviews of tiled loops expand to affine.apply, hence expand-strided-metadata before
# lower-affine
_TO_LLVM = (
    "convert-vector-to-scf{full-unroll=true target-rank=1},convert-linalg-to-affine-loops,"
    "expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-vector-to-llvm,"
    "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,"
    "convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,convert-ub-to-llvm,"
    "reconcile-unrealized-casts"
)


# threads (num_threads > 1): the scf.forall loops of the schedules (one iteration per output
# tile) become OpenMP parallel loops, run by libiomp5 (the intel-openmp wheel, loaded by the
# JIT); memrefs are lowered before the scf loops on that path (PERF.md)
_TO_LLVM_THREADS = (
    "scf-forall-to-parallel,convert-scf-to-openmp{{num-threads={threads}}},"
    "convert-vector-to-scf{{full-unroll=true target-rank=1}},convert-linalg-to-affine-loops,"
    "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-scf-to-cf,"
    "convert-vector-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,"
    "convert-index-to-llvm,convert-cf-to-llvm,convert-openmp-to-llvm,convert-func-to-llvm,"
    "convert-ub-to-llvm,reconcile-unrealized-casts"
)


def stage_pipelines(opt_level: int = 2, num_threads: int = 1) -> dict[str, str]:
    """The pipeline text of each stage, in order, for `opt_level` (0 to 3); with
    num_threads > 1 (at -O2/-O3) the scheduled tile loops run on that many threads."""
    if opt_level not in OPT_LEVELS:
        raise ArgumentError(f"opt_level must be one of {OPT_LEVELS}, got {opt_level!r}")
    dlc = "dlc-verify" if opt_level == 0 else _DLC_O1 if opt_level == 1 else _DLC_O2
    winograd = settings.WINOGRAD.get()
    if not winograd:  # ($DLC_WINOGRAD=0: every conv direct; 2: F(2x2, 3x3) only)
        dlc = dlc.replace(",dlc-winograd", "")
    elif winograd == 2:
        dlc = dlc.replace(",dlc-winograd,", ",dlc-winograd{max-tile=2},")
    linalg = "dlc-to-linalg"
    if opt_level >= 1:
        linalg += ",canonicalize,cse"
    if opt_level >= 2:
        # (dlc-fuse-elementwise: linalg-fuse-elementwise-ops with fused bodies of bounded
        # size; unbounded, a chain of N elementwise ops cost N^2 in fusion)
        linalg += (",dlc-generalize-elementwise,dlc-fuse-elementwise,"
                   "canonicalize,cse,dlc-polynomial-math,dlc-block-dynamic,"
                   + ("dlc-schedule" if num_threads <= 1 else f"dlc-schedule{{threads={num_threads}}}")
                   + ",dlc-pad-in-place")
    bufferized = _BUFFERIZE if opt_level < 2 else _BUFFERIZE_O2
    to_llvm = _TO_LLVM
    if opt_level >= 2 and num_threads > 1:
        to_llvm = _TO_LLVM_THREADS.format(threads=num_threads)
    llvm = to_llvm if opt_level < 1 else "canonicalize,cse," + to_llvm
    if opt_level >= 2:
        llvm = "dlc-lower-vectors," + llvm
    # a function of more than 500 ops becomes calls to parts of at most 500: LLVM (and
    # convert-scf-to-cf) cost more than linear in one function's size; at -O2/-O3 only one of
    # more than 2000 (ResNet-50's main, 3436: IndVarSimplify took 4.7 of LLVM's 6.5 s unsplit;
    # smaller models' code is unchanged)
    llvm = ("dlc-split-functions{min-ops=2000}," if opt_level >= 2 else "dlc-split-functions,") + llvm
    if opt_level >= 2:
        # each loop nest of main becomes a function, identical ones one function: LLVM
        # compiles a transformer's layer kernels once, not once per layer
        llvm = "dlc-outline-kernels," + llvm
    stages = {"dlc": dlc, "linalg": linalg, "bufferized": bufferized, "llvm": llvm}
    for stage, levels, text in _EXTENSIONS:
        if opt_level in levels:
            stages[stage] += "," + text
    return stages


# passes added to the end of a stage of some opt levels (plugins' passes, say): (stage, opt
# levels, pipeline text), in the order they were added
_EXTENSIONS: list[tuple[str, tuple[int, ...], str]] = []


def extend_stage(stage: str, passes: str, opt_levels: Sequence[int] = OPT_LEVELS) -> None:
    """Run `passes` (pipeline text, a comma-separated list of passes on `builtin.module`) at
    the end of `stage` at each of `opt_levels`, in every compile of this process from now on
    (`dlc.compile`, `dlc run`, `dlc-opt -O`). At the end of `dlc` a pass sees the optimized
    dlc ops; at the end of `linalg`, the scheduled linalg ops; and so on."""
    from dlc.dialects import make_context
    from dlc.passes.pipeline import build_pass_manager

    if stage not in STAGES:
        raise ArgumentError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    levels = tuple(opt_levels)
    if not levels or any(level not in OPT_LEVELS for level in levels):
        raise ArgumentError(f"opt_levels must be some of {OPT_LEVELS}, got {opt_levels!r}")
    passes = passes.strip().strip(",")
    with make_context():  # (PipelineError for an unknown pass or a bad option)
        build_pass_manager(f"builtin.module({passes})")
    _EXTENSIONS.append((stage, levels, passes))


def clear_extensions() -> None:
    """Forget every `extend_stage`: the opt levels' pipelines are dlc's own again."""
    _EXTENSIONS.clear()


def extension_names() -> list[str]:
    """The pass names the extensions add (the compile cache keys on their sources)."""
    from dlc.passes.pipeline import parse_pipeline

    names: list[str] = []

    def walk(elements) -> None:
        for element in elements:
            names.append(element.name)
            walk(element.children or [])

    for _, _, text in _EXTENSIONS:
        walk(parse_pipeline(text))
    return names


def extension_key() -> str:
    """What the extensions (and $DLC_WINOGRAD other than on) change in a compile, for the cache
    key ("" when nothing)."""
    winograd = settings.WINOGRAD.get()
    off = "" if winograd == 4 else f" winograd={winograd}" if winograd else " no-winograd"
    if not _EXTENSIONS:
        return off
    from dlc.passes.plugins import source_digest

    return f"{off} extensions={_EXTENSIONS!r} sources={source_digest(extension_names())}"


def pipeline(opt_level: int = 2, until: str = "llvm", num_threads: int = 1) -> str:
    """The whole pipeline of `opt_level` up to and including stage `until`, as MLIR text."""
    if until not in STAGES:
        raise ArgumentError(f"unknown stage {until!r}; stages are {', '.join(STAGES)}")
    stages = stage_pipelines(opt_level, num_threads)
    parts = [stages[s] for s in STAGES[: STAGES.index(until) + 1]]
    return f"builtin.module({','.join(parts)})"
