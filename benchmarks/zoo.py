"""Models from real libraries, dlc beside onnxruntime (issue 18, the speed cliffs).

    .venv/bin/python benchmarks/zoo.py [--models gpt2,vit] [--layers N] [--repeat N] [--out DIR]
    make zoo

GPT-2 small (transformers GPT2Model: 12 layers, hidden 768, 12 heads, eager attention, an
all-ones attention mask) on 1x128 token ids, and ViT-B/16 (transformers ViTModel: 12 layers,
hidden 768, 224x224 images, 16x16 patches, no pooler) on a 1x3x224x224 image; random weights
(seeded), no downloads. Exported with the TorchScript exporter (`dynamo=False`), opset 17,
cached under --out (a model is exported again only when its file is missing). Each model is
compiled at -O2 with `num_threads=1` and timed beside an onnxruntime session with one
intra-op thread, in the same process (best of --repeat calls after a warm-up); the ratio is
dlc / onnxruntime, and the outputs are compared. `--layers 2` builds the same per-layer
shapes with fewer layers, to iterate quickly. Not part of `make test` (GPT-2 small compiles
in minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

OPSET = 17
SEQ = 128


class LastHiddenState(torch.nn.Module):
    """A transformers model returning its last hidden state (a tensor, not a ModelOutput)."""

    def __init__(self, model: torch.nn.Module, names: list[str], **kwargs):
        super().__init__()
        self.model, self.names, self.kwargs = model, names, kwargs

    def forward(self, *inputs):
        named = dict(zip(self.names, inputs, strict=True))
        return self.model(**named, **self.kwargs).last_hidden_state


def gpt2(layers: int) -> tuple[torch.nn.Module, tuple, list[str]]:
    import transformers as hf

    config = hf.GPT2Config(n_layer=layers, use_cache=False, attn_implementation="eager")
    names = ["input_ids", "attention_mask"]
    model = LastHiddenState(hf.GPT2Model(config), names, use_cache=False)
    ids = torch.randint(0, config.vocab_size, (1, SEQ))
    # (the mask as an input: without one, transformers' mask code exports aten::diff)
    return model, (ids, torch.ones(1, SEQ, dtype=torch.int64)), names


def vit(layers: int) -> tuple[torch.nn.Module, tuple, list[str]]:
    import transformers as hf

    config = hf.ViTConfig(num_hidden_layers=layers, image_size=224, patch_size=16,
                          attn_implementation="eager")
    names = ["pixel_values"]
    model = LastHiddenState(hf.ViTModel(config, add_pooling_layer=False), names)
    return model, (torch.randn(1, 3, 224, 224),), names


MODELS = {"gpt2": gpt2, "vit": vit}


def exported(name: str, layers: int, out: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """The model's ONNX file (exported when missing) and its inputs."""
    torch.manual_seed(0)
    model, inputs, names = MODELS[name](layers)
    path = out / f"{name}_{layers}l.onnx"
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        torch.onnx.export(model.eval(), inputs, str(path), dynamo=False, opset_version=OPSET,
                          input_names=names)
    return path, {n: x.numpy() for n, x in zip(names, inputs, strict=True)}


def best_of(call, repeat: int) -> float:
    call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def bench(name: str, layers: int, repeat: int, out: Path) -> dict:
    import onnxruntime as ort

    import dlc

    path, feeds = exported(name, layers, out)
    start = time.perf_counter()
    compiled = dlc.compile(str(path), opt_level=2, num_threads=1)
    compile_s = time.perf_counter() - start
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options)
    expected = session.run(None, feeds)[0]
    error = float(np.abs(compiled(feeds)[0] - expected).max())
    dlc_s = best_of(lambda: compiled(feeds), repeat)
    ort_s = best_of(lambda: session.run(None, feeds), repeat)
    return {"model": name, "layers": layers, "compile_s": compile_s, "dlc_ms": dlc_s * 1e3,
            "ort_ms": ort_s * 1e3, "ratio": dlc_s / ort_s, "max_abs_error": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="gpt2,vit")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("build/zoo"))
    args = parser.parse_args()
    print(f"{'model':8} {'layers':>6} {'compile s':>9} {'dlc ms':>9} {'ort ms':>9} "
          f"{'ratio':>6} {'max err':>8}")
    for name in args.models.split(","):
        row = bench(name, args.layers, args.repeat, args.out)
        print(f"{row['model']:8} {row['layers']:6d} {row['compile_s']:9.1f} "
              f"{row['dlc_ms']:9.1f} {row['ort_ms']:9.1f} {row['ratio']:6.2f} "
              f"{row['max_abs_error']:8.1e}", flush=True)


if __name__ == "__main__":
    main()
