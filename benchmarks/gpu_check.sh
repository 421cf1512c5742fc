#!/usr/bin/env bash
# The GPU device check of dlc's nvptx target: one short run (a few minutes) on a machine with
# an NVIDIA GPU and its driver. Run from the repository root: benchmarks/gpu_check.sh
#   1. tests/gpu (numerical tests against onnx.reference, index checks, torch tensors);
#      without a usable GPU they are skipped, with the reason, and the script says so;
#   2. latency of ResNet-50 (light model, random weights), a BERT-base-like and a GPT-2-like
#      model (benchmarks/torch_models.py's BERT; a 2-layer causal decoder built here): dlc.gpu
#      beside onnxruntime-gpu (CUDAExecutionProvider) and eager PyTorch on CUDA, where those
#      are installed (each missing peer is reported, not fatal). dlc.gpu's times include the
#      host<->device copies of inputs, outputs and weights (one-thread-per-output kernels, no
#      tiling yet: expect it far behind the peers).
# Environment: PYTHON (default .venv/bin/python), REPEAT (default 20), OUT (default
# build/gpu_check) for the JSON results.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
REPEAT=${REPEAT:-20}
OUT=${OUT:-build/gpu_check}
mkdir -p "$OUT"

"$PYTHON" -c "from dlc.runtime import cuda; r = cuda.unavailable(); print('GPU:', r or cuda.device())"
"$PYTHON" -m pytest -q -p no:cacheprovider -rs tests/gpu | tee "$OUT/tests.txt"

REPEAT=$REPEAT OUT=$OUT "$PYTHON" - <<'PY'
import json, os, sys, time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, ".")
import dlc.gpu
from benchmarks.light_models import LIGHT_DIR, randomize

repeat, out = int(os.environ["REPEAT"]), Path(os.environ["OUT"])
results = {}


def timed(run, feeds):
    run(feeds)  # (warm-up: the driver JIT-compiles the PTX, onnxruntime plans)
    start = time.perf_counter()
    for _ in range(repeat):
        run(feeds)
    return (time.perf_counter() - start) / repeat * 1e3


def gpt2_like(path: Path) -> Path:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, hidden=256, heads=4):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * hidden, hidden))
            self.register_buffer("mask", torch.triu(torch.full((128, 128), -1e9), 1))

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class Gpt2(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = nn.Embedding(1000, 256), nn.Embedding(128, 256)
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Linear(256, 1000, bias=False)

        def forward(self, ids):
            x = self.tokens(ids) + self.positions(torch.arange(128))
            return self.head(self.blocks(x))

    torch.manual_seed(0)
    with torch.no_grad():
        torch.onnx.export(Gpt2().eval(), (torch.zeros(1, 128, dtype=torch.int64),), str(path),
                          dynamo=False, opset_version=17, input_names=["input"],
                          output_names=["output"])
    return path


models = {"resnet50": randomize(onnx.load(str(LIGHT_DIR / "light_resnet50.onnx")))}
try:
    from benchmarks.torch_models import exported_model

    models["bert"] = onnx.load(str(exported_model("bert", out / "models")))
    models["gpt2"] = onnx.load(str(gpt2_like(out / "gpt2.onnx")))
except ImportError as error:
    print(f"BERT/GPT-2: skipped ({error}: torch is needed to export them)")

for name, model in models.items():
    row = {}
    start = time.perf_counter()
    compiled = dlc.gpu.compile(model)
    row["dlc_compile_s"] = time.perf_counter() - start
    row["kernels"] = len(compiled.launches)
    rng = np.random.default_rng(0)
    feeds = {s.name: (rng.integers(0, 1000, s.shape) if s.dtype == np.int64
                      else rng.standard_normal(s.shape)).astype(s.dtype)
             for s in compiled.signature.inputs}
    try:
        row["dlc_ms"] = timed(compiled, feeds)
        expected = None
        import onnxruntime as ort

        providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider")
                     if p in ort.get_available_providers()]
        session = ort.InferenceSession(model.SerializeToString(), providers=providers)
        expected = session.run(None, feeds)
        row["ort_provider"] = session.get_providers()[0]
        row["ort_ms"] = timed(lambda f: session.run(None, f), feeds)
        got = compiled(feeds)
        row["max_abs_error_vs_ort"] = float(max(np.abs(g - e).max() for g, e in zip(got, expected)))
    except Exception as error:  # (report and go on: a peer may be missing on this machine)
        row["error"] = f"{type(error).__name__}: {error}"
    try:
        import torch
        from onnx2torch import convert  # (optional: eager PyTorch of the same graph)

        if torch.cuda.is_available():
            module = convert(model).cuda().eval()
            tensors = [torch.from_numpy(v).cuda() for v in feeds.values()]

            def eager(_):
                with torch.no_grad():
                    module(*tensors)
                torch.cuda.synchronize()

            row["torch_cuda_ms"] = timed(eager, feeds)
        else:
            row["torch_cuda_ms"] = "torch has no CUDA here"
    except ImportError as error:
        row["torch_cuda_ms"] = f"skipped ({error})"
    results[name] = row
    print(name, json.dumps(row))

(out / "bench.json").write_text(json.dumps(results, indent=2))
print(f"results in {out / 'bench.json'}")
PY
