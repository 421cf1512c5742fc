"""dlc-schedule: tile and vectorize contractions and elementwise ops with transform scripts.

At -O2/-O3 the linalg stage ends with this pass. It finds every op a schedule family of
`dlc.passes.codegen` matches (static f32 `linalg.matmul` / `batch_matmul`: `codegen/matmul.py`;
2-D NCHW convolutions with constant filters, computed in NHWC: `codegen/conv.py`;
all-parallel `linalg.generic`: `codegen/elementwise.py`; NHWC depthwise convolutions:
`codegen/depthwise.py`; NHWC grouped convolutions with constant filters:
`codegen/grouped_conv.py`; NHWC max/sum pooling: `codegen/pool.py`; reductions along the innermost
loop and the ops broadcasting their row results (softmax, layernorm): `codegen/reduction.py`)
whose work is at least its threshold,
tags each, and builds one transform-dialect script as text (a schedule per op, chosen from the
op's static shape by the family's documented heuristic), which the upstream transform
interpreter applies (the names of the packed convolutions' buffers are numbered per run, so
that a model's IR is the same in every compile). The vector ops left behind are lowered after bufferization by
`dlc-lower-vectors`.

The pass never breaks a model: ops it does not match keep the naive loop path, and if the
script fails on a module the module is restored as it was and each op's schedule is applied
on its own, an op whose schedule fails keeping the naive path (`_one_by_one`).
Tiny ops are not scheduled (the ~1,600 small models of the ONNX node suite must not compile
slower): thresholds `min-volume` (multiply-adds of a contraction, 32^3; window taps times
outputs of a depthwise convolution or pooling) and `min-elements` (of an elementwise op or a
row reduction, 4096).

The register tiles follow the target CPU (`codegen/target.py`): the host's by default
(AVX-512: 8 x 32 matmul tiles, AVX2: 6 x 16), or the one option `target` names.

A compile's timings (`dlc.timings`) show the pass's steps: matching, the rewrites before the
script (the convolutions' filter packing), the script itself, and the fallback if it ran.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mlir import ir
from mlir.dialects import func
from mlir.dialects.transform import interpreter

from dlc import settings
from dlc.passes.buffer.profile import record_families, warn_naive
from dlc.passes.codegen import (
    fusion,
    fusion_plan,
    packed_conv,
)
from dlc.passes.codegen import target as cpu_target
from dlc.passes.codegen.family import FAMILIES, Threshold, wants_epilogue
from dlc.passes.codegen.script import Lines, transform_script
from dlc.passes.registry import ModulePass, PassFailure, register
from dlc.passes.walk import trip_counts, untag
from dlc.timings import step
from dlc.tuning import apply as tuning_apply

TAG = "dlc.schedule"


def candidates(module: ir.Operation, min_volume: int,
               min_elements: int) -> list[tuple[ir.Operation, object, object]]:
    """(op, family, problem) of every op to schedule, in program order."""
    limits = {Threshold.VOLUME: min_volume, Threshold.ELEMENTS: min_elements}
    families = [(family, limits[threshold]) for family, threshold in FAMILIES]
    found: list[tuple[ir.Operation, object, object]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        for family, threshold in families:
            problem = family.match(op)
            if problem is not None and family.volume(problem) * trips(op) >= threshold:
                found.append((op, family, problem))
                break
        return ir.WalkResult.ADVANCE

    for top in module.regions[0].blocks[0].operations:
        if isinstance(top, func.FuncOp):
            top.operation.walk(visit)
    return found


def trips(op: ir.Operation) -> int:
    """How many times `op` runs per call: the product of the static trip counts of the
    `scf.for` loops around it (a recurrence's step, a scan's), 1 outside loops. An op in a loop
    counts as its work times that: a recurrent layer's [B, H] step runs T times."""
    count, parent = 1, op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.for":
            counts = trip_counts(parent)
            count *= counts[0] if counts else 1
        parent = parent.parent
    return count


@register
@dataclass(frozen=True)
class Schedule(ModulePass):
    """Tile and vectorize static f32 matmuls, convs (to FMAs), depthwise convs, pools, row
    reductions and elementwise ops."""

    name = "dlc-schedule"
    min_volume: int = 32 * 32 * 32
    min_elements: int = 4096
    target: str = "host"  # the CPU the register tiles are for: host, avx512, avx2 (`target`)
    # a schedule that fails to apply is an error (the interpreter's diagnostic), not the naive
    # path: for whoever writes schedules (also $DLC_STRICT_SCHEDULE=1, the test suite's)
    strict: bool = False
    # the threads the code will run on (`num_threads`): a product split for them splits its
    # rows, not its columns (`matmul.thread_tiles`)
    threads: int = 1

    def run(self, module: ir.Operation) -> None:
        if self.threads < 1:
            raise PassFailure(f"dlc-schedule: threads must be >= 1, got {self.threads}")
        with cpu_target.use_threads(self.threads):
            if self.target == "host":  # (the host, or the target of an enclosing `use`)
                self._schedule(module)
            else:
                if self.target not in cpu_target.TARGETS:
                    raise PassFailure(f"dlc-schedule: unknown target '{self.target}'; targets "
                                      f"are host, {', '.join(cpu_target.TARGETS)}")
                with cpu_target.use(self.target):
                    self._schedule(module)
        # a large contraction, conv or reduction left on the naive loop path is a performance
        # cliff: NaivePathWarning names it (the profiler shows its time)
        with step("naive-path check"):
            warn_naive(module, self.min_volume)

    def _schedule(self, module: ir.Operation) -> None:
        with step("match"):
            found = candidates(module, self.min_volume, self.min_elements)
        record_families(module, found)  # (profile compiles only: `dlc.passes.buffer.profile`)
        if not found:
            return
        with step("prepare (rewrites, packing)"), packed_conv.numbering():
            schedules = _prepare(found)
        with step("(clone for the fallback)"):
            saved = module.clone()
        try:
            with step("transform script"):
                text = transform_script(schedules, TAG)
                _apply(module, text)
        except (ValueError, ir.MLIRError):  # the interpreter reports failures as ValueError
            # a schedule that does not apply must never break a model: the ops whose schedule
            # fails take the naive path (`strict` raises instead)
            if self.strict or settings.STRICT_SCHEDULE.get():
                raise
            with step("fallback: one schedule at a time"):
                _restore(module, saved)
                _one_by_one(module, schedules)
        finally:
            saved.erase()
            untag(module, TAG)


def _prepare(found: list[tuple[ir.Operation, object, object]]) -> list[Lines]:
    """Rewrite each op as its family needs, tag it, and write its schedule's lines."""
    i64 = ir.IntegerType.get_signless(64)
    schedules: list[Lines] = []
    # a tuning record's knobs, looked up before any op is rewritten (its key is the op's
    # structure as `dlc tune` saw it)
    found = [(op, family, tuning_apply.choose(op, family, problem))
             for op, family, problem in found]
    for index, (op, family, problem) in enumerate(found):
        op = family.prepare(op) or op  # (may replace the op, e.g. by an NHWC conv)
        if wants_epilogue(problem):  # (matmul and conv problems)
            fusion.write_in_place(op)  # the epilogue updates the result tile in place
        op.attributes[TAG] = ir.IntegerAttr.get(i64, index)
        problem = fusion_plan.plan(op, problem, lambda other: TAG in other.attributes)
        schedules.append(family.lines(f"%op{index}", problem, f"s{index}"))
    return schedules


def _apply(module: ir.Operation, text: str) -> None:
    script = ir.Module.parse(text)
    with printing_assumes_verified():
        interpreter.apply_named_sequence(module, script.body.operations[0], script, _options())


# `transform.structured.fuse_into_containing_op` writes its producer and its containing op
# into a diagnostic before it tries to fuse (and drops it when the fusion succeeds); printing
# an op verifies and numbers its nearest isolated-from-above ancestor, the whole function: on
# BERT-base's one function 44 % of the script's time was that verification, and it grew with
# the function (each schedule's loops add to it). MLIR's `--mlir-print-assume-verified` skips
# it (printing is all it changes; the IR the script transforms was verified by the pass before
# and transform ops keep it valid): it is on while a script runs, through LLVM's command-line
# options (process-wide: a counter keeps it on while any thread runs a script).
_ASSUME_VERIFIED = threading.Lock()
_assume_verified_depth = 0


@functools.cache
def _command_line() -> Callable[[str], None] | None:
    """A function that parses one LLVM command-line option, after registering MLIR's printer
    options (None where the bindings' library does not export what it needs)."""
    import mlir._mlir_libs as libs

    try:
        capi = ctypes.CDLL(str(Path(libs.__file__).parent / "libMLIRPythonCAPI.so"))
        capi._ZN4mlir27registerAsmPrinterCLOptionsEv()  # mlir::registerAsmPrinterCLOptions()
        llvm_parse = capi.LLVMParseCommandLineOptions  # (from libLLVM.so, its dependency)
    except (OSError, AttributeError):
        return None
    llvm_parse.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p]
    llvm_parse.restype = None

    def parse(option: str) -> None:
        argv = (ctypes.c_char_p * 2)(b"dlc", option.encode())
        llvm_parse(2, argv, b"")

    return parse


@contextlib.contextmanager
def printing_assumes_verified() -> Iterator[None]:
    """MLIR prints ops without verifying them first while in this context (on exit the
    option is false again, its default)."""
    global _assume_verified_depth
    parse = _command_line()
    if parse is None:
        yield
        return
    with _ASSUME_VERIFIED:
        _assume_verified_depth += 1
        if _assume_verified_depth == 1:
            parse("--mlir-print-assume-verified=true")
    try:
        yield
    finally:
        with _ASSUME_VERIFIED:
            _assume_verified_depth -= 1
            if _assume_verified_depth == 0:
                parse("--mlir-print-assume-verified=false")


def _one_by_one(module: ir.Operation, schedules: list[Lines]) -> None:
    """Apply each op's schedule on its own, restoring the module where one fails (that op
    keeps the naive path), then the vector lowering once; if that fails too, the module as it
    was. The light models of the ONNX suite (splat weights: convs not data-tiled) each had one
    failing schedule, which sent the whole model, every matmul and conv, down the naive path."""
    saved = module.clone()
    try:
        for index in range(len(schedules)):
            before = module.clone()
            try:
                _apply(module, transform_script(schedules, TAG, only=index, lower=False))
            except (ValueError, ir.MLIRError):
                _restore(module, before)
            finally:
                before.erase()
        _apply(module, transform_script(schedules, TAG, only=-1))
    except (ValueError, ir.MLIRError):
        _restore(module, saved)
    finally:
        saved.erase()


def _options() -> interpreter.TransformOptions:
    # the bindings enable the interpreter's expensive checks (handle invalidation tracking)
    # by default: 10 % of the schedule's time on ResNet-50
    options = interpreter.TransformOptions()
    options.expensive_checks = False
    return options


def _restore(module: ir.Operation, saved: ir.Operation) -> None:
    """Replace the body of `module` by the body of its clone `saved`."""
    body = module.regions[0].blocks[0]
    for op in list(body.operations):
        op.erase()
    for op in list(saved.regions[0].blocks[0].operations):
        body.append(op)

