"""The named pass pipelines of each opt level, cut into stages.

A stage is a cut point: `dlc` (after graph-level passes), `linalg` (after lowering and fusion),
`bufferized` (memrefs, results as out-parameters) and `llvm` (the llvm dialect, ready to JIT).
`pipeline(opt_level)` is the whole pipeline as one printable text that dlc-opt also accepts.
"""

from __future__ import annotations

STAGES = ("dlc", "linalg", "bufferized", "llvm")
OPT_LEVELS = (0, 1, 2, 3)

_BUFFERIZE = (
    "dlc-distinct-results,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    # results become caller-allocated out-parameters: numpy owns every output
    "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
    "buffer-deallocation-pipeline"
)
_TO_LLVM = (
    "convert-linalg-to-affine-loops,lower-affine,convert-scf-to-cf,expand-strided-metadata,"
    "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,"
    "convert-cf-to-llvm,convert-func-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts"
)


def stage_pipelines(opt_level: int = 2) -> dict[str, str]:
    """The pipeline text of each stage, in order, for `opt_level` (0 to 3)."""
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {OPT_LEVELS}, got {opt_level!r}")
    dlc = "dlc-verify" if opt_level == 0 else "dlc-verify,dlc-canonicalize"
    linalg = "dlc-to-linalg"
    if opt_level >= 1:
        linalg += ",canonicalize,cse"
    if opt_level >= 2:
        linalg += ",func.func(linalg-fuse-elementwise-ops),canonicalize,cse"
    bufferized = _BUFFERIZE if opt_level < 2 else "eliminate-empty-tensors," + _BUFFERIZE
    llvm = _TO_LLVM if opt_level < 1 else "canonicalize,cse," + _TO_LLVM
    return {"dlc": dlc, "linalg": linalg, "bufferized": bufferized, "llvm": llvm}


def pipeline(opt_level: int = 2, until: str = "llvm") -> str:
    """The whole pipeline of `opt_level` up to and including stage `until`, as MLIR text."""
    if until not in STAGES:
        raise ValueError(f"unknown stage {until!r}; stages are {', '.join(STAGES)}")
    stages = stage_pipelines(opt_level)
    parts = [stages[s] for s in STAGES[: STAGES.index(until) + 1]]
    return f"builtin.module({','.join(parts)})"
