"""Real models on the GPU: dlc's nvptx target beside onnxruntime and eager PyTorch (issue 27).

    python benchmarks/gpu_zoo.py [--models resnet50,bert,gpt2] [--layers N] [--repeat N]
                                 [--compile-only] [--out DIR]

ResNet-50 (torchvision, or the light ResNet-50 of benchmarks/light_models.py where torchvision
is missing), BERT-base (transformers BertModel: 12 layers, hidden 768, seq 128) and GPT-2 small
(transformers GPT2Model, benchmarks/zoo.py's) with random seeded weights, batch 1, exported
with the TorchScript exporter at opset 17. Each is compiled with `dlc.gpu.compile` (-O2, PTX
for the device's own chip) and, where a GPU is present, run and compared with onnxruntime (the
oracle, CUDAExecutionProvider where onnxruntime-gpu is installed, else the CPU) and with eager
PyTorch on CUDA: the largest error relative to the output's largest magnitude must stay under
--rtol. Latency (median of --repeat calls after a warm-up) of

- dlc: numpy in, numpy out (the host<->device copies of inputs and outputs included),
- onnxruntime (its provider named),
- eager PyTorch on CUDA, from device tensors to device tensors (synchronized), and with the
  copies from numpy and back, to compare with dlc's numpy-to-numpy figure.

The ONNX files are kept in --models-dir. One JSON line per model on stdout and in OUT/gpu_zoo.json (rewritten after each model), so a
run cut short still reports the models it finished. `--compile-only` checks compilation and
PTX emission alone (no GPU needed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from dlc.tools.dlc_cli import time_calls

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (benchmarks/zoo.py, light_models)

SEQ = 128


def build(name: str, layers: int):
    """(torch module or None, example inputs as numpy, input names, ONNX model or path)."""
    import torch

    torch.manual_seed(0)
    if name == "resnet50":
        try:
            import torchvision
        except ImportError:
            import onnx
            from light_models import LIGHT_DIR, randomize

            model = randomize(onnx.load(str(LIGHT_DIR / "light_resnet50.onnx")))
            shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
            x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            return None, {model.graph.input[0].name: x}, model, "light_resnet50.onnx"
        module = torchvision.models.resnet50(weights=None).eval()
        inputs, names = (torch.randn(1, 3, 224, 224),), ["x"]
        source = "torchvision resnet50"
    elif name == "bert":
        import transformers as hf
        from zoo import LastHiddenState

        config = hf.BertConfig(num_hidden_layers=layers, attn_implementation="eager")
        names = ["input_ids", "attention_mask"]
        module = LastHiddenState(hf.BertModel(config, add_pooling_layer=False), names).eval()
        inputs = (torch.randint(0, config.vocab_size, (1, SEQ)),
                  torch.ones(1, SEQ, dtype=torch.int64))
        source = f"transformers BertModel ({layers} layers)"
    elif name == "gpt2":
        from zoo import gpt2

        module, inputs, names = gpt2(layers)
        module = module.eval()
        source = f"transformers GPT2Model ({layers} layers)"
    else:
        raise SystemExit(f"unknown model {name!r}: resnet50, bert or gpt2")
    return module, {n: x.numpy() for n, x in zip(names, inputs, strict=True)}, names, source


def export(module, feeds: dict, names: list[str], path: Path) -> Path:
    import torch

    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(module, tuple(torch.from_numpy(v) for v in feeds.values()),
                              str(path), dynamo=False, opset_version=17, input_names=names,
                              output_names=["output"])
    return path


def median_ms(call, repeat: int) -> float:
    return statistics.median(time_calls(call, repeat, warmup=1)) * 1e3


def relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    scale = max(float(np.abs(expected).max()), 1e-30)
    return float(np.abs(got.astype(np.float64) - expected).max()) / scale


def run_model(name: str, args, chip: str | None) -> dict:
    import dlc.gpu

    row: dict = {"model": name}
    module, feeds, names_or_model, source = build(name, args.layers)
    row["source"] = source
    if module is None:
        model = names_or_model
    else:
        model = str(export(module, feeds, names_or_model,
                           args.models_dir / f"{name}_{args.layers}l.onnx"))
    start = time.perf_counter()
    compiled = dlc.gpu.compile(model, **({"chip": chip} if chip else {}))
    row["compile_s"] = round(time.perf_counter() - start, 2)
    row["kernels"] = len(compiled.kernels)
    row["launches"] = len(compiled.launches)
    row["ptx_kb"] = round(sum(len(t) for t in compiled.ptx.values()) / 1024)
    if args.compile_only:
        return row

    import onnxruntime as ort

    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider")
                 if p in ort.get_available_providers()]
    session = ort.InferenceSession(model.SerializeToString() if not isinstance(model, str)
                                   else model, providers=providers)
    row["ort_provider"] = session.get_providers()[0]
    expected = session.run(None, feeds)[0]
    got = compiled(feeds)[0]
    row["rel_error_vs_ort"] = relative_error(got, expected)
    row["max_abs_error_vs_ort"] = float(np.abs(got - expected).max())
    row["correct"] = bool(row["rel_error_vs_ort"] <= args.rtol and np.isfinite(got).all())
    row["dlc_ms"] = round(median_ms(lambda: compiled(feeds), args.repeat), 3)
    row["ort_ms"] = round(median_ms(lambda: session.run(None, feeds), args.repeat), 3)

    import torch

    if module is not None and torch.cuda.is_available():
        cuda_module = module.cuda()
        tensors = [torch.from_numpy(v).cuda() for v in feeds.values()]

        def eager():
            with torch.no_grad():
                out = cuda_module(*tensors)
            torch.cuda.synchronize()
            return out

        def eager_numpy():
            with torch.no_grad():
                out = cuda_module(*(torch.from_numpy(v).cuda() for v in feeds.values()))
            return out.cpu().numpy()

        row["rel_error_vs_torch_cuda"] = relative_error(got, eager_numpy())
        row["torch_cuda_ms"] = round(median_ms(eager, args.repeat), 3)
        row["torch_cuda_numpy_ms"] = round(median_ms(eager_numpy, args.repeat), 3)
        row["dlc_over_torch_numpy"] = round(row["dlc_ms"] / row["torch_cuda_numpy_ms"], 2)
        # dlc with torch CUDA tensors in and out (GpuModel's torch path)
        named = dict(zip(feeds, tensors, strict=True))
        row["dlc_torch_tensors_ms"] = round(median_ms(lambda: compiled(named), args.repeat), 3)
        if args.profile:
            try:
                row["gpu_profile"] = profile_kernels(compiled, feeds)
            except Exception as error:  # noqa: BLE001 (the profiler is a bonus: report, go on)
                row["gpu_profile"] = f"{type(error).__name__}: {error}"[:500]
    row["dlc_over_ort"] = round(row["dlc_ms"] / row["ort_ms"], 2)
    return row


def profile_kernels(compiled, feeds: dict, top: int = 10) -> dict:
    """One dlc call's GPU time by kernel and by ONNX op type (torch's profiler sees every
    kernel launched in the process, the MLIR runtime's too; dlc-gpu-name-kernels makes each
    kernel's name unique, GpuModel.launches maps it to its ONNX node), with the copies."""
    import re

    from torch.profiler import ProfilerActivity, profile

    where = {launch.kernel: launch.location for launch in compiled.launches}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        compiled(feeds)
    by_kernel: dict[str, float] = {}
    for event in prof.events():
        if "CUDA" not in str(getattr(event, "device_type", "")):
            continue
        time_us = getattr(event, "device_time_total", None)
        if time_us is None:
            time_us = event.cuda_time_total
        by_kernel[event.name] = by_kernel.get(event.name, 0.0) + time_us
    by_op: dict[str, float] = {}
    for name, time_us in by_kernel.items():
        node = where.get(name)
        quoted = re.search(r'"([^"]*)"', node or "")
        kind = name if quoted is None else re.sub(r"_\d+$", "", quoted.group(1).split("/")[-1])
        by_op[kind] = by_op.get(kind, 0.0) + time_us
    ranked = sorted(by_kernel.items(), key=lambda item: -item[1])[:top]
    return {
        "gpu_ms": round(sum(by_kernel.values()) / 1e3, 3),
        "by_op": {k: round(v / 1e3, 3) for k, v in sorted(by_op.items(), key=lambda i: -i[1])},
        "top_kernels": [[name, where.get(name, ""), round(us / 1e3, 3)] for name, us in ranked],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="resnet50,bert,gpt2")
    parser.add_argument("--layers", type=int, default=12, help="for bert and gpt2")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rtol", type=float, default=1e-3,
                        help="largest error / largest |expected| allowed (default 1e-3)")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--profile", action="store_true", help="top kernels by GPU time")
    parser.add_argument("--out", type=Path, default=Path("build/gpu_zoo"),
                        help="where gpu_zoo.json goes")
    parser.add_argument("--models-dir", type=Path, default=Path("build/gpu_zoo/models"),
                        help="where the exported ONNX files are kept")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    from dlc.runtime import cuda

    reason = cuda.unavailable()
    chip = None
    if reason is None:
        device = cuda.device()
        chip = device.chip if device.compute_capability <= (9, 0) else "sm_90"
        print(f"GPU: {device.name} ({device.chip}); PTX for {chip}", flush=True)
    elif not args.compile_only:
        print(f"no GPU ({reason}): compiling only", flush=True)
        args.compile_only = True
    rows = []
    for name in args.models.split(","):
        try:
            row = run_model(name, args, chip)
        except Exception as error:  # noqa: BLE001 (report, go on with the next model)
            row = {"model": name, "error": f"{type(error).__name__}: {error}"[:2000],
                   "traceback": traceback.format_exc()[-3000:]}
        rows.append(row)
        print(json.dumps(row), flush=True)
        (args.out / "gpu_zoo.json").write_text(json.dumps(rows, indent=2))
    failed = [r["model"] for r in rows if "error" in r or r.get("correct") is False]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
