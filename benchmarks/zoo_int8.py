"""The zoo's int8 variants: its models quantized by onnxruntime's own tools, dlc beside
onnxruntime (issue 18: "every int8 model <= 1.5x").

    .venv/bin/python benchmarks/zoo_int8.py [--models resnet50,bert,...] [--layers N]
                                            [--image N] [--tiny] [--repeat N] [--out DIR]
                                            [--before]
    make zoo   (runs benchmarks/zoo.py, then this)

Each model of `benchmarks/zoo.py` is exported there (float, opset 17, cached under --out) and
quantized here the way onnxruntime's documentation says for its kind:
- CNNs and ViT-style vision models (torchvision, timm): `quantize_static` in the QDQ format
  (QuantizeLinear / DequantizeLinear pairs around each Conv, MatMul, Add...; uint8
  activations, int8 per-channel weights), calibrated with MinMax on 4 seeded random
  images after `quant_pre_process` (shape inference and onnxruntime's graph optimizations,
  which fold the BatchNorms as onnxruntime recommends);
- transformers: `quantize_dynamic` (int8 weights; MatMulInteger with DynamicQuantizeLinear of
  the activations, the form the onnxruntime docs recommend for transformers).
The quantized file is cached beside the float one (`NAME_CONFIG.int8.onnx`). dlc compiles it
(-O2, one thread, cache off) and runs beside onnxruntime (one intra-op thread) in this
process. The outputs are compared with onnxruntime's with its graph optimizations off, which
runs the model as written (each QuantizeLinear / DequantizeLinear and the float op between
them): dlc computes the same arithmetic (bit for bit on MobileNetV3-Large for some inputs),
but its float convolutions sum in another order, and a last-bit difference before a
QuantizeLinear is sometimes a step of the quantized value, which propagates (ResNet-50: 2e-2
of the largest output).
onnxruntime's optimized session, the one timed, fuses each Q/DQ group into its own integer
kernels, whose requantization rounds differently (and whose u8 x s8 products saturate in 16
bits on CPUs without VNNI): a step here and there that propagates, 0.14 of the largest
output on MobileNetV3-Large (`ort_rel_error` in the row). `RTOL` bounds the first error, or,
where larger, onnxruntime's own distance to the model as written (`ort_own_error`: its integer
kernels round differently, and so do dlc's integer convs, `passes/graph/qdq_conv.py`: EfficientNet-B0
0.060 for both on 2026-12-06, against 0.0 for dlc's float convs of the dequantized values).
Rows go to OUT/zoo_int8.json, the table as zoo.py prints it.

`--before` also compiles each model without the integer kernels
(`passes/codegen/int8_matmul.py`: its family matching nothing, so that the quantized matmuls
run as the f32 FMA schedules; `dlc-qdq-conv` rewriting nothing, so that the static QDQ convs
are float convs of the dequantized values) and times it in the same alternation (`dlc_before_ms`,
`ratio_before` in the row, printed under it).
"""

from __future__ import annotations

import contextlib
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # (benchmarks/zoo.py: the models, their export, the timing)

RTOL = 5e-2  # dlc vs onnxruntime running the model as written (see the docstring)
CALIBRATION = 4  # random inputs for the static quantization's MinMax calibration
STATIC = ("torchvision", "timm")


def quantized(name: str, setting: zoo.Setting, out: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """The int8 ONNX file of zoo model `name` (quantized when missing) and its inputs."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    float_path, feeds = zoo.exported(name, setting, out)
    path = float_path.with_suffix(".int8.onnx")
    if path.exists():
        return path, feeds
    partial = path.with_suffix(".partial.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if zoo.ZOO[name].family in STATIC:
            prepared = float_path.with_suffix(".pre.onnx")
            quant_pre_process(str(float_path), str(prepared), skip_symbolic_shape=True)
            rng = np.random.default_rng(0)
            batches = [{k: rng.standard_normal(v.shape).astype(v.dtype) for k, v in feeds.items()}
                       for _ in range(CALIBRATION)]

            class Reader(CalibrationDataReader):
                def __init__(self) -> None:
                    self.left = iter(batches)

                def get_next(self) -> dict | None:
                    return next(self.left, None)

            quantize_static(str(prepared), str(partial), Reader(), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            per_channel=True)
            prepared.unlink()
        else:
            quantize_dynamic(str(float_path), str(partial), weight_type=QuantType.QInt8)
    partial.replace(path)
    return path, feeds


@contextlib.contextmanager
def integer_kernel_off():
    """Compiles without the integer kernels: the int8 matmul family matches nothing and
    dlc-qdq-conv rewrites nothing (the static QDQ convs stay float convs of the dequantized
    values, as before issue 18's integer convs)."""
    from dlc.passes.codegen import int8_matmul
    from dlc.passes.graph import qdq_conv

    match, rules = int8_matmul.match, qdq_conv.RULES
    int8_matmul.match = lambda op: None
    qdq_conv.RULES = {}
    try:
        yield
    finally:
        int8_matmul.match, qdq_conv.RULES = match, rules


def run_model(name: str, setting: zoo.Setting, out: Path, repeat: int = 5,
              before: bool = False) -> dict:
    """One row: the int8 model compiled, compared with onnxruntime and timed beside it (and,
    `before`, beside its compile without the integer kernel)."""
    import onnxruntime as ort

    import dlc
    from dlc.runtime import cache

    row = {"model": name, "family": zoo.ZOO[name].family,
           "config": f"{setting.tag(zoo.ZOO[name])}-int8", "status": "ok"}
    stage = "quantize"
    try:
        path, feeds = quantized(name, setting, out)
        stage = "compile"
        start = time.perf_counter()
        with cache.disabled(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = dlc.compile(str(path), opt_level=2, num_threads=1)
        row["compile_s"] = time.perf_counter() - start
        zoo.naive_paths(row, "", caught)
        stage = "onnxruntime"
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        as_written = ort.InferenceSession(str(path), options,
                                          providers=["CPUExecutionProvider"])
        expected = as_written.run(None, feeds)
        stage = "run"
        results = compiled(feeds)
        row["rel_error"] = error = zoo.relative_error(results, expected)
        optimized = session.run(None, feeds)
        row["ort_rel_error"] = zoo.relative_error(results, optimized)
        # (onnxruntime's own integer kernels, as far from the model as written)
        row["ort_own_error"] = own = zoo.relative_error(optimized, expected)
        if not error <= max(RTOL, own):
            row["status"] = f"mismatch: relative error {error:.2g} > {max(RTOL, own):g}"
        stage = "timing"
        calls = [lambda: compiled(feeds), lambda: session.run(None, feeds)]
        if before:
            stage = "compile without the integer kernel"
            with cache.disabled(), warnings.catch_warnings(), integer_kernel_off():
                warnings.simplefilter("ignore")
                plain = dlc.compile(str(path), opt_level=2, num_threads=1)
            row["rel_error_before"] = zoo.relative_error(plain(feeds), expected)
            calls.append(lambda: plain(feeds))
            stage = "timing"
        times = zoo.best_times(calls, repeat)
        dlc_s, ort_s = times[:2]
        row.update(dlc_ms=dlc_s * 1e3, ort_ms=ort_s * 1e3, ratio=dlc_s / ort_s)
        if before:
            row.update(dlc_before_ms=times[2] * 1e3, ratio_before=times[2] / ort_s)
    except Exception as error:  # noqa: BLE001 (the row records it; the next model runs)
        row["status"] = zoo.failure(stage, error)
        row["traceback"] = traceback.format_exc(limit=-4)
    return row


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    before = "--before" in argv  # (zoo.py's options, plus this one)
    args = zoo.parse_args([a for a in argv if a != "--before"])
    if args.list:
        for model in zoo.ZOO.values():
            print(f"{model.name:20} {model.family:13} {model.what} (int8)")
        return 0
    names = list(zoo.ZOO) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in zoo.ZOO]
    if unknown:
        print(f"unknown models: {', '.join(unknown)} (--list)", file=sys.stderr)
        return 2
    setting = zoo.Setting(args.layers, args.image, args.tiny)
    print(zoo.HEADER)
    failed = 0
    for name in names:
        row = run_model(name, setting, args.out, args.repeat, before)
        zoo.save(row, args.out, "zoo_int8.json")
        print(zoo.format_row(row), flush=True)
        if "ratio_before" in row:
            print(f"{'':19}without the integer kernel: {row['dlc_before_ms']:.1f} ms, ratio "
                  f"{row['ratio_before']:.2f} (rel err {row['rel_error_before']:.1e})",
                  flush=True)
        failed += row["status"] != "ok"
    print(f"(rows in {args.out / 'zoo_int8.json'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
