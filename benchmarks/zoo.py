"""Models from real libraries, dlc beside onnxruntime (issue 18, the speed cliffs).

    .venv/bin/python benchmarks/zoo.py [--models bert,resnet50,...] [--layers N]
                                       [--image N] [--repeat N] [--out DIR] [--list] [--tiny]
                                       [--markdown]
    make zoo
    dlc bench --zoo [--models ...] [--layers N] [--image N]

The zoo (`--list` prints it), every model built from its library's config with random weights
(seeded), no downloads:

- torchvision: ResNet-50, MobileNetV3-Large, EfficientNet-B0, ConvNeXt-Tiny, RegNetY-400MF,
  DenseNet-121 (1x3x224x224 images; `--image N` for NxN);
- transformers (1x128 token ids and an all-ones attention mask, eager attention, the last
  hidden state): BERT-base, DistilBERT, GPT-2 small, the T5-small encoder, a small Llama
  (4 layers, hidden 512, 8 heads, 4 key/value heads) and ViT-B/16 (224x224, no pooler);
  `--layers N` builds the same per-layer shapes with N layers, to iterate quickly;
- timm: MobileViT-XXS (256x256), EfficientViT-B0 and ResNet-26-D (224x224).

Each is exported with the TorchScript exporter (`dynamo=False`), opset 17, cached under --out
(a model is exported again only when its file is missing), compiled at -O2 with
`num_threads=1` (the compile cache off: `compile s` is a real compile) and run beside an
onnxruntime session with one intra-op thread, in the same process: the outputs are compared
(the largest difference relative to the largest magnitude of onnxruntime's output, which must
not be all zeros), then both are timed alternately, best of --repeat calls after a warm-up;
the ratio is dlc / onnxruntime. A model that fails (export, compile, run, mismatch) stays in
the table with the stage and the error, and the next one runs. The rows are kept in
OUT/zoo.json (rewritten after each model, a row replacing the one of the same model and
configuration), with the reductions dlc left on naive loops (its `NaivePathWarning`s; their
count is the table's `naive`). Models whose failure is known (`KNOWN_FAILURES`, a missing op
or lowering in dlc) are listed with the reason and skipped unless named in --models.

Needs the `zoo` extra (transformers), and torchvision, timm and pillow kept outside the
environment (see below):

    .venv/bin/pip install -e '.[zoo]'
    .venv/bin/pip install --no-deps --target build/zoo/site torchvision timm pillow

torchvision: the only wheel on the package index is a CUDA build whose native ops do not load
beside the CPU torch (importing it fails: "operator torchvision::nms does not exist"); its
model definitions need only torch, so `import_torchvision` defines stand-ins for the two ops
its import registers fake kernels for (torchvision::nms, ::qnms). Installed in the
environment, it would break every `import transformers` model class (transformers imports
torchvision when it finds it) in processes without the stand-ins, the test suite's included;
so it lives in its own folder, $DLC_ZOO_SITE (default build/zoo/site), which this module adds
to sys.path, registering the stand-ins at once. timm (which imports torchvision) lives there
too. Not part of `make test` (tests/test_zoo_smoke.py runs tiny versions).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

OPSET = 17
SEQ = 128
RTOL = 1e-3  # the largest difference over the largest magnitude of the expected output


@dataclass(frozen=True)
class Setting:
    """How a model is built: None keeps the model's own layer count / image size; `tiny`
    shrinks hidden sizes and images (the smoke tests)."""

    layers: int | None = None
    image: int | None = None
    tiny: bool = False

    def tag(self, model: Model) -> str:
        parts = []
        if model.family == "transformers" and self.layers is not None:
            parts.append(f"{self.layers}l")
        if model.image and self.image is not None:
            parts.append(f"{self.image}px")
        if self.tiny:
            parts.append("tiny")
        return "_".join(parts) or "full"


@dataclass(frozen=True)
class Model:
    name: str
    family: str  # torchvision, transformers or timm
    what: str
    build: Callable[[Setting], tuple[torch.nn.Module, tuple, list[str]]]
    image: int = 0  # the default image size of a vision model (0: token ids)


class LastHiddenState(torch.nn.Module):
    """A transformers model returning its last hidden state (a tensor, not a ModelOutput)."""

    def __init__(self, model: torch.nn.Module, names: list[str], **kwargs):
        super().__init__()
        self.model, self.names, self.kwargs = model, names, kwargs

    def forward(self, *inputs):
        named = dict(zip(self.names, inputs, strict=True))
        return self.model(**named, **self.kwargs).last_hidden_state


# ----------------------------------------------------------------------------- torchvision

_TORCHVISION_STANDINS = None  # the torch.library.Library of the stand-ins (kept alive)


def import_torchvision():
    """torchvision, importable beside a torch its native ops were not built for."""
    global _TORCHVISION_STANDINS
    try:
        import torchvision
    except RuntimeError as error:  # "operator torchvision::nms does not exist"
        if "torchvision::" not in str(error):
            raise
        for name in [m for m in sys.modules if m == "torchvision" or
                     m.startswith("torchvision.")]:
            del sys.modules[name]
        _TORCHVISION_STANDINS = torch.library.Library("torchvision", "FRAGMENT")
        for op in ("nms", "qnms"):  # (never called by the classification models)
            _TORCHVISION_STANDINS.define(
                f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        import torchvision
    return torchvision


def add_zoo_site() -> None:
    """$DLC_ZOO_SITE (default build/zoo/site: torchvision and timm) on sys.path, torchvision's
    stand-ins registered (before anything imports transformers)."""
    default = Path(__file__).resolve().parents[1] / "build" / "zoo" / "site"
    site = os.environ.get("DLC_ZOO_SITE", str(default))
    if Path(site).is_dir() and site not in sys.path:
        sys.path.append(site)
    if importlib.util.find_spec("torchvision") is not None:
        import_torchvision()


def image_input(setting: Setting, default: int) -> tuple:
    size = setting.image or (64 if setting.tiny else default)
    return (torch.randn(1, 3, size, size),)


def torchvision_model(arch: str) -> Callable[[Setting], tuple]:
    def build(setting: Setting) -> tuple:
        models = import_torchvision().models
        return getattr(models, arch)(weights=None), image_input(setting, 224), ["image"]

    return build


def timm_model(arch: str, default: int) -> Callable[[Setting], tuple]:
    def build(setting: Setting) -> tuple:
        import_torchvision()  # (timm imports torchvision)
        import timm

        module = timm.create_model(arch, pretrained=False)
        return module, image_input(setting, default), ["image"]

    return build


add_zoo_site()

# ----------------------------------------------------------------------------- transformers

TINY = {"hidden": 64, "heads": 2, "intermediate": 128, "vocab": 1000}


def token_inputs(vocab: int) -> tuple:
    # (the mask as an input: without one, transformers' mask code exports aten::diff)
    return torch.randint(0, vocab, (1, SEQ)), torch.ones(1, SEQ, dtype=torch.int64)


def bert(setting: Setting) -> tuple:
    import transformers as hf

    size = ({"hidden_size": TINY["hidden"], "num_attention_heads": TINY["heads"],
             "intermediate_size": TINY["intermediate"], "vocab_size": TINY["vocab"]}
            if setting.tiny else {})
    config = hf.BertConfig(num_hidden_layers=setting.layers or (1 if setting.tiny else 12),
                           attn_implementation="eager", **size)
    names = ["input_ids", "attention_mask"]
    model = LastHiddenState(hf.BertModel(config, add_pooling_layer=False), names)
    return model, token_inputs(config.vocab_size), names


def distilbert(setting: Setting) -> tuple:
    import transformers as hf

    size = ({"dim": TINY["hidden"], "n_heads": TINY["heads"], "hidden_dim": TINY["intermediate"],
             "vocab_size": TINY["vocab"]} if setting.tiny else {})
    config = hf.DistilBertConfig(n_layers=setting.layers or (1 if setting.tiny else 6),
                                 attn_implementation="eager", **size)
    names = ["input_ids", "attention_mask"]
    return (LastHiddenState(hf.DistilBertModel(config), names), token_inputs(config.vocab_size),
            names)


def gpt2(setting: Setting | int) -> tuple:
    import transformers as hf

    if isinstance(setting, int):  # (benchmarks/gpu_zoo.py: gpt2(layers))
        setting = Setting(layers=setting)
    size = ({"n_embd": TINY["hidden"], "n_head": TINY["heads"], "vocab_size": TINY["vocab"]}
            if setting.tiny else {})
    config = hf.GPT2Config(n_layer=setting.layers or (1 if setting.tiny else 12),
                           use_cache=False, attn_implementation="eager", **size)
    names = ["input_ids", "attention_mask"]
    model = LastHiddenState(hf.GPT2Model(config), names, use_cache=False)
    return model, token_inputs(config.vocab_size), names


def t5_encoder(setting: Setting) -> tuple:
    import transformers as hf

    # T5Config's defaults are t5-small's: d_model 512, d_ff 2048, 8 heads of 64, 6 layers
    size = ({"d_model": TINY["hidden"], "d_kv": TINY["hidden"] // TINY["heads"],
             "num_heads": TINY["heads"], "d_ff": TINY["intermediate"],
             "vocab_size": TINY["vocab"]} if setting.tiny else {})
    config = hf.T5Config(num_layers=setting.layers or (1 if setting.tiny else 6),
                         use_cache=False, attn_implementation="eager", **size)
    names = ["input_ids", "attention_mask"]
    return (LastHiddenState(hf.T5EncoderModel(config), names), token_inputs(config.vocab_size),
            names)


def llama(setting: Setting) -> tuple:
    import transformers as hf

    size = ({"hidden_size": TINY["hidden"], "num_attention_heads": TINY["heads"],
             "num_key_value_heads": 1, "intermediate_size": TINY["intermediate"],
             "vocab_size": TINY["vocab"]} if setting.tiny else
            {"hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 4,
             "intermediate_size": 1376, "vocab_size": 32000})
    config = hf.LlamaConfig(num_hidden_layers=setting.layers or (1 if setting.tiny else 4),
                            max_position_embeddings=2048, use_cache=False,
                            attn_implementation="eager", **size)
    names = ["input_ids", "attention_mask"]
    model = LastHiddenState(hf.LlamaModel(config), names, use_cache=False)
    return model, token_inputs(config.vocab_size), names


def vit(setting: Setting) -> tuple:
    import transformers as hf

    size = ({"hidden_size": TINY["hidden"], "num_attention_heads": TINY["heads"],
             "intermediate_size": TINY["intermediate"]} if setting.tiny else {})
    image = setting.image or (32 if setting.tiny else 224)
    config = hf.ViTConfig(num_hidden_layers=setting.layers or (1 if setting.tiny else 12),
                          image_size=image, patch_size=8 if setting.tiny else 16,
                          attn_implementation="eager", **size)
    names = ["pixel_values"]
    model = LastHiddenState(hf.ViTModel(config, add_pooling_layer=False), names)
    return model, (torch.randn(1, 3, image, image),), names


ZOO: dict[str, Model] = {m.name: m for m in [
    Model("resnet50", "torchvision", "ResNet-50", torchvision_model("resnet50"), 224),
    Model("mobilenet_v3_large", "torchvision", "MobileNetV3-Large",
          torchvision_model("mobilenet_v3_large"), 224),
    Model("efficientnet_b0", "torchvision", "EfficientNet-B0",
          torchvision_model("efficientnet_b0"), 224),
    Model("convnext_tiny", "torchvision", "ConvNeXt-Tiny", torchvision_model("convnext_tiny"),
          224),
    Model("regnet_y_400mf", "torchvision", "RegNetY-400MF", torchvision_model("regnet_y_400mf"),
          224),
    Model("densenet121", "torchvision", "DenseNet-121", torchvision_model("densenet121"), 224),
    Model("bert", "transformers", "BERT-base (BertModel, 12 layers, hidden 768, seq 128)", bert),
    Model("distilbert", "transformers", "DistilBERT (6 layers, hidden 768, seq 128)",
          distilbert),
    Model("gpt2", "transformers", "GPT-2 small (12 layers, hidden 768, seq 128)", gpt2),
    Model("t5_encoder", "transformers", "T5-small encoder (6 layers, d_model 512, seq 128)",
          t5_encoder),
    Model("llama", "transformers", "small Llama (4 layers, hidden 512, 8 heads / 4 kv, seq 128)",
          llama),
    Model("vit", "transformers", "ViT-B/16 (12 layers, hidden 768, 224x224, no pooler)", vit,
          224),
    Model("mobilevit_xxs", "timm", "MobileViT-XXS (256x256)", timm_model("mobilevit_xxs", 256),
          256),
    Model("efficientvit_b0", "timm", "EfficientViT-B0 (224x224)",
          timm_model("efficientvit_b0", 224), 224),
    Model("resnet26d", "timm", "ResNet-26-D (224x224)", timm_model("resnet26d", 224), 224),
]}

# name -> why it fails (a missing op or lowering in dlc); skipped unless named in --models.
# None on 2026-12-04: all 15 compile and match at full size. The cliffs then (naive loops):
# regnet_y_400mf's grouped 3x3 convs (NGCHW) and block4-0's 1x1 conv (its schedule fails,
# "too many tiles provided"), resnet26d's conv3 + downsample 1x1 convs of each stage's first
# block (the downsample's schedule fails, "only TilingInterface ops are supported"; an error
# under DLC_STRICT_SCHEDULE), efficientvit_b0's grouped 1x1 convs (NGCHW).
KNOWN_FAILURES: dict[str, str] = {}


# ----------------------------------------------------------------------------- running

def exported(name: str, setting: Setting, out: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """The model's ONNX file (exported when missing) and its inputs."""
    model = ZOO[name]
    torch.manual_seed(0)
    module, inputs, names = model.build(setting)
    path = out / f"{name}_{setting.tag(model)}.onnx"
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.onnx")
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the tracer's, on Python branches on shapes)
            torch.onnx.export(module.eval(), inputs, str(partial), dynamo=False,
                              opset_version=OPSET, input_names=names)
        partial.replace(path)
    return path, {n: x.numpy() for n, x in zip(names, inputs, strict=True)}


def relative_error(results: list[np.ndarray], expected: list[np.ndarray]) -> float:
    """The largest difference over the largest magnitude of the expected outputs (inf where
    these are all zeros: nothing would be compared)."""
    scale = max(float(np.abs(e).max()) for e in expected)
    diff = max(float(np.abs(np.asarray(r, np.float64) - e).max())
               for r, e in zip(results, expected, strict=True))
    return diff / scale if scale > 0 else float("inf")


def best_times(calls: list[Callable[[], object]], repeat: int) -> list[float]:
    """The best of `repeat` timed calls of each, called alternately after a warm-up."""
    for call in calls:
        call()
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            call()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def run_model(name: str, setting: Setting, out: Path, repeat: int = 5,
              timed: bool = True) -> dict:
    """One row: the model compiled, compared with onnxruntime and timed beside it."""
    import onnxruntime as ort

    import dlc
    from dlc.runtime import cache

    row = {"model": name, "family": ZOO[name].family, "config": setting.tag(ZOO[name]),
           "status": "ok"}
    stage = "export"
    try:
        path, feeds = exported(name, setting, out)
        stage = "compile"
        start = time.perf_counter()
        with cache.disabled(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = dlc.compile(str(path), opt_level=2, num_threads=1)
        row["compile_s"] = time.perf_counter() - start
        naive = [str(w.message) for w in caught if w.category.__name__ == "NaivePathWarning"]
        if naive:  # (the reductions left on naive loops: the performance cliffs)
            row["naive"] = naive
        stage = "onnxruntime"
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
        stage = "run"
        results = compiled(feeds)
        row["rel_error"] = error = relative_error(results, expected)
        if not error <= RTOL:
            row["status"] = f"mismatch: relative error {error:.2g} > {RTOL:g}"
        if timed:
            stage = "timing"
            dlc_s, ort_s = best_times([lambda: compiled(feeds), lambda: session.run(None, feeds)],
                                      repeat)
            row.update(dlc_ms=dlc_s * 1e3, ort_ms=ort_s * 1e3, ratio=dlc_s / ort_s)
    except Exception as error:  # noqa: BLE001 (the row records it; the next model runs)
        first = (str(error).strip().splitlines() or [""])[0]
        row["status"] = f"{stage} failed: {type(error).__name__}: {first[:400]}"
        row["traceback"] = traceback.format_exc(limit=-4)
    return row


def save(row: dict, out: Path) -> None:
    """OUT/zoo.json with `row` replacing the one of the same model and configuration."""
    path = out / "zoo.json"
    rows = json.loads(path.read_text()) if path.exists() else []
    rows = [r for r in rows if (r["model"], r["config"]) != (row["model"], row["config"])]
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows + [row], indent=1) + "\n")


HEADER = (f"{'model':18} {'config':10} {'compile s':>9} {'dlc ms':>9} {'ort ms':>9} "
          f"{'ratio':>6} {'rel err':>8} {'naive':>5}  status")


def format_row(row: dict) -> str:
    def number(key: str, width: int, fmt: str) -> str:
        return f"{row[key]:{width}{fmt}}" if key in row else f"{'-':>{width}}"

    return (f"{row['model']:18} {row['config']:10} {number('compile_s', 9, '.1f')} "
            f"{number('dlc_ms', 9, '.1f')} {number('ort_ms', 9, '.1f')} "
            f"{number('ratio', 6, '.2f')} {number('rel_error', 8, '.1e')} "
            f"{len(row.get('naive', ())):5d}  {row['status']}")


def markdown(rows: list[dict]) -> str:
    """The rows as a markdown table (README, docs)."""
    lines = ["| model | config | compile s | dlc ms | ort ms | dlc / ort | rel. error | status |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in rows:
        cells = [f"{row[key]:{fmt}}" if key in row else "-" for key, fmt in
                 (("compile_s", ".1f"), ("dlc_ms", ".1f"), ("ort_ms", ".1f"), ("ratio", ".2f"),
                  ("rel_error", ".1e"))]
        lines.append(f"| {row['model']} | {row['config']} | {' | '.join(cells)} | "
                     f"{row['status']} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="zoo", description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="all",
                        help="comma-separated names (--list), or all (the default)")
    parser.add_argument("--layers", type=int, default=None,
                        help="layers of the transformers models (default: each model's own)")
    parser.add_argument("--image", type=int, default=None,
                        help="image size of the vision models (default: each model's own)")
    parser.add_argument("--tiny", action="store_true",
                        help="tiny hidden sizes and 64x64 images (what the smoke tests run)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("build/zoo"))
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--markdown", action="store_true",
                        help="print the rows of this run as a markdown table at the end")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for model in ZOO.values():
            known = f"  [known failure: {KNOWN_FAILURES[model.name]}]" \
                if model.name in KNOWN_FAILURES else ""
            print(f"{model.name:18} {model.family:12} {model.what}{known}")
        return 0
    names = list(ZOO) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        print(f"zoo: unknown model(s) {', '.join(unknown)}; --list lists them", file=sys.stderr)
        return 2
    setting = Setting(layers=args.layers, image=args.image, tiny=args.tiny)
    print(HEADER, flush=True)
    failed, rows = 0, []
    for name in names:
        if args.models == "all" and name in KNOWN_FAILURES:
            print(format_row({"model": name, "config": setting.tag(ZOO[name]),
                              "status": f"skipped, known failure: {KNOWN_FAILURES[name]}"}))
            continue
        row = run_model(name, setting, args.out, args.repeat)
        save(row, args.out)
        print(format_row(row), flush=True)
        failed += row["status"] != "ok"
        rows.append(row)
    print(f"(rows in {args.out / 'zoo.json'})")
    if args.markdown:
        print(markdown(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
