"""Models from real libraries, dlc beside onnxruntime (issue 18, the speed cliffs).

    .venv/bin/python benchmarks/zoo.py [--models bert,resnet50,...] [--layers N]
                                       [--image N] [--repeat N] [--out DIR] [--list] [--tiny]
                                       [--paths onnx,module,dynamo] [--freeze] [--markdown]
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
the ratio is dlc / onnxruntime. `--cpu-time` times each call by the CPU time of the calling
thread (both run on it with one thread) instead of the wall clock: on a machine shared with
other work a wall-clock best of 10 calls of ResNet-50 read 500 ms against 37 alone, and the
ratio moved by 0.2 between runs; the CPU time leaves out the time the thread waited for a
core (not the caches the other work shares). A model that fails (export, compile, run, mismatch) stays in
the table with the stage and the error, and the next one runs. The rows are kept in
OUT/zoo.json (rewritten after each model, a row replacing the one of the same model and
configuration), with the reductions dlc left on naive loops (its `NaivePathWarning`s; their
count is the table's `naive`).

Each model also goes into dlc from PyTorch (--paths; all three by default): `module` is
`dlc.compile(module, example_inputs=...)` (torch.export), `dynamo` is
`torch.compile(module, backend="dlc", fullgraph=True)`, where a graph break (an error under
fullgraph) or a `DlcFallbackWarning` (a graph dlc could not compile, run eagerly) fails the
path. Both are compared with eager PyTorch (same RTOL) and timed beside it, eager included,
all with one thread (torch.set_num_threads(1)); their columns are `torch_status`,
`torch_compile_s`, `torch_rel_error`, `torch_ms`, `eager_ms`, `torch_ratio` (dlc / eager),
`torch_naive` and the same `dynamo_*`; the table's status is "ok" when every path is.
By default torch.compile passes the module's parameters to the compiled graph at each call,
so the weights of convolutions and matmuls are packed at each call (`dynamo_ms` well above
`torch_ms` where weights outweigh activations); `--freeze` compiles them as constants (the
backend's `freeze` option).
Models whose failure is known (`KNOWN_FAILURES`, a missing op
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
PATHS = ("onnx", "module", "dynamo")  # the ways into dlc (--paths), see run_model
STATUS = {"onnx": "status", "module": "torch_status", "dynamo": "dynamo_status"}  # their keys


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
# None on 2026-12-04: all 15 compile and match at full size. The cliffs of that morning (naive
# loops: regnet_y_400mf's and efficientvit_b0's grouped convs, resnet26d's residual add of two
# 1x1 convs whose first schedule failed, "only TilingInterface ops are supported") were fixed
# that day; at 19:25 UTC no ONNX model had a naive op and all were <= 1.24x onnxruntime.
# The torch paths on 2026-12-04 (tiny: all 15 on module and dynamo; full size: all 15 on
# module, 12 on dynamo, not BERT, GPT-2, ViT): no failure, no graph break, no fallback;
# relative error <= 2.1e-6.
# Found and fixed: nn.AdaptiveAvgPool2d(1) (mean.dim over H, W) ran as naive loops fused into
# the conv before it (EfficientNet-B0 17, MobileNetV3 9, ResNet-50 1): now a dlc.pool. Left:
# by default torch.compile passes weights as graph inputs, packed at each call and BN not
# folded (ResNet-50 254 ms against 110 ms through the module; --freeze: 111 ms), and the
# grouped convs of RegNetY-400MF with runtime weights run as naive loops (12). MobileViT-XXS's
# any() over boolean masks (timm's attention, 6 on both paths) takes the row schedule since
# 2026-12-06 (integer row reductions).
KNOWN_FAILURES: dict[str, str] = {}


# ----------------------------------------------------------------------------- running

def built(name: str, setting: Setting) -> tuple[torch.nn.Module, tuple, list[str]]:
    """The model (in eval mode, random weights seeded), its example inputs and their names."""
    torch.manual_seed(0)
    module, inputs, names = ZOO[name].build(setting)
    return module.eval(), inputs, names


def exported(name: str, setting: Setting, out: Path, model: tuple | None = None
             ) -> tuple[Path, dict[str, np.ndarray]]:
    """The model's ONNX file (exported when missing) and its inputs; `model` is what
    `built(name, setting)` returned, when the caller has it already."""
    module, inputs, names = model or built(name, setting)
    path = out / f"{name}_{setting.tag(ZOO[name])}.onnx"
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


CLOCK: Callable[[], float] = time.perf_counter  # (--cpu-time: time.thread_time)


def best_times(calls: list[Callable[[], object]], repeat: int) -> list[float]:
    """The best of `repeat` timed calls of each, called alternately after a warm-up."""
    for call in calls:
        call()
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, call in enumerate(calls):
            start = CLOCK()
            call()
            best[i] = min(best[i], CLOCK() - start)
    return best


def naive_paths(row: dict, prefix: str, caught: list[warnings.WarningMessage]) -> None:
    """The reductions dlc left on naive loops (the performance cliffs), as row[prefix_naive]."""
    naive = [str(w.message) for w in caught if w.category.__name__ == "NaivePathWarning"]
    if naive:
        row["_".join(filter(None, (prefix, "naive")))] = naive


def failure(stage: str, error: Exception) -> str:
    """A status naming the stage and the error (the unsupported ATen ops by name)."""
    if getattr(error, "unsupported", None):  # (UnsupportedAtenOpsError: its list is long)
        return f"{stage} failed: unsupported ATen ops: {', '.join(error.unsupported)}"
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{stage} failed: {type(error).__name__}: {first[:400]}"


def run_model(name: str, setting: Setting, out: Path, repeat: int = 5,
              timed: bool = True, paths: tuple[str, ...] = PATHS, freeze: bool = False) -> dict:
    """One row: the model compiled along each of `paths` (PATHS), compared with onnxruntime
    (the ONNX file) or eager PyTorch (the module) and timed beside it."""
    row = {"model": name, "family": ZOO[name].family, "config": setting.tag(ZOO[name]),
           "status": "ok" if "onnx" in paths else "not run"}
    model = None
    try:
        model = built(name, setting)
    except Exception as error:  # noqa: BLE001 (the row records it; the next model runs)
        row["status"] = failure("build", error)
        row["traceback"] = traceback.format_exc(limit=-4)
        return row
    if "onnx" in paths:
        run_onnx(row, name, setting, out, model, repeat, timed)
    if "module" in paths or "dynamo" in paths:
        run_torch(row, model, paths, repeat, timed, freeze)
    return row


def run_onnx(row: dict, name: str, setting: Setting, out: Path, model: tuple, repeat: int,
             timed: bool) -> None:
    """The ONNX columns: exported, compiled, compared with onnxruntime, timed beside it."""
    import onnxruntime as ort

    import dlc
    from dlc.runtime import cache

    stage = "export"
    try:
        path, feeds = exported(name, setting, out, model)
        stage = "compile"
        start = time.perf_counter()
        with cache.disabled(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = dlc.compile(str(path), opt_level=2, num_threads=1)
        row["compile_s"] = time.perf_counter() - start
        naive_paths(row, "", caught)
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
        row["status"] = failure(stage, error)
        row["traceback"] = traceback.format_exc(limit=-4)


def run_torch(row: dict, model: tuple, paths: tuple[str, ...], repeat: int,
              timed: bool, freeze: bool = False) -> None:
    """The torch columns: the nn.Module through `dlc.compile(module, example_inputs=...)`
    (`torch_*`) and through `torch.compile(module, backend="dlc", fullgraph=True)`
    (`dynamo_*`: a graph break or a `DlcFallbackWarning` fails it), each compared with eager
    PyTorch and timed beside it, all single-threaded (torch.set_num_threads(1))."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        module, inputs, _ = model
        try:
            with torch.no_grad():
                expected = eager_outputs(module(*inputs))
        except Exception as error:  # noqa: BLE001
            for path in ("module", "dynamo"):
                if path in paths:
                    row[STATUS[path]] = failure("eager", error)
            return
        calls = {"eager": lambda: module(*inputs)}
        if "module" in paths:
            calls["torch"] = run_module(row, module, inputs, expected)
        if "dynamo" in paths:
            calls["dynamo"] = run_dynamo(row, module, inputs, expected, freeze)
        calls = {key: call for key, call in calls.items() if call is not None}
        if timed and len(calls) > 1:
            with torch.no_grad():
                seconds = dict(zip(calls, best_times(list(calls.values()), repeat),
                                   strict=True))
            for key, s in seconds.items():
                row[f"{key}_ms"] = s * 1e3
            if "torch" in seconds:
                row["torch_ratio"] = seconds["torch"] / seconds["eager"]
    finally:
        torch.set_num_threads(threads)


def eager_outputs(result: object) -> list[np.ndarray]:
    """A model's output tensor(s) as float64 numpy arrays."""
    tensors = list(result) if isinstance(result, tuple | list) else [result]
    return [t.detach().double().numpy() for t in tensors]


def check(row: dict, prefix: str, results: object, expected: list[np.ndarray]) -> None:
    row[f"{prefix}_rel_error"] = error = relative_error(eager_outputs(results), expected)
    if not error <= RTOL:
        row[f"{prefix}_status"] = f"mismatch: relative error {error:.2g} > {RTOL:g}"


def run_module(row: dict, module: torch.nn.Module, inputs: tuple,
               expected: list[np.ndarray]) -> Callable[[], object] | None:
    """dlc.compile(module, example_inputs=inputs): the `torch_*` columns; its call, or None
    when it failed."""
    import dlc
    from dlc.runtime import cache

    row["torch_status"], stage = "ok", "compile"
    try:
        start = time.perf_counter()
        with cache.disabled(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # (torch.export's deprecation notices: dropped)
            compiled = dlc.compile(module, example_inputs=inputs, opt_level=2, num_threads=1)
        row["torch_compile_s"] = time.perf_counter() - start
        naive_paths(row, "torch", caught)
        stage = "run"
        check(row, "torch", compiled(*inputs), expected)
        return lambda: compiled(*inputs)
    except Exception as error:  # noqa: BLE001 (the row records it; the next path runs)
        row["torch_status"] = failure(stage, error)
        row["torch_traceback"] = traceback.format_exc(limit=-4)
        return None


def run_dynamo(row: dict, module: torch.nn.Module, inputs: tuple,
               expected: list[np.ndarray], freeze: bool = False
               ) -> Callable[[], object] | None:
    """torch.compile(module, backend="dlc"), one graph (fullgraph: a graph break raises)
    compiled by dlc (a DlcFallbackWarning, the graph run eagerly, fails it): the
    `dynamo_*` columns; its call, or None when it failed. `freeze`: the backend's option
    (the module's weights compiled as constants, not graph inputs)."""
    from dlc.frontends.torch.dynamo import DlcFallbackWarning
    from dlc.runtime import cache

    row["dynamo_status"], stage = "ok", "compile"
    try:
        torch._dynamo.reset()
        compiled = torch.compile(module, backend="dlc", fullgraph=True,
                                 options={"opt_level": 2, "num_threads": 1, "freeze": freeze})
        if freeze:
            row["dynamo_freeze"] = True
        start = time.perf_counter()
        with torch.no_grad(), cache.disabled(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = compiled(*inputs)  # (the first call compiles)
        row["dynamo_compile_s"] = time.perf_counter() - start
        naive_paths(row, "dynamo", caught)
        fallbacks = [str(w.message) for w in caught if issubclass(w.category,
                                                                  DlcFallbackWarning)]
        if fallbacks:
            row["dynamo_status"] = f"fallback to eager: {fallbacks[0][:400]}"
            return None
        stage = "run"
        check(row, "dynamo", results, expected)
        return lambda: compiled(*inputs)
    except Exception as error:  # noqa: BLE001 (a graph break under fullgraph=True too)
        stage = "graph break" if "Unsupported" in type(error).__name__ else stage
        row["dynamo_status"] = failure(stage, error)
        row["dynamo_traceback"] = traceback.format_exc(limit=-4)
        return None


def save(row: dict, out: Path, name: str = "zoo.json") -> None:
    """OUT/NAME with `row` replacing the one of the same model and configuration."""
    path = out / name
    rows = json.loads(path.read_text()) if path.exists() else []
    rows = [r for r in rows if (r["model"], r["config"]) != (row["model"], row["config"])]
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows + [row], indent=1) + "\n")


HEADER = (f"{'model':18} {'config':10} {'compile s':>9} {'dlc ms':>9} {'ort ms':>9} "
          f"{'ratio':>6} {'rel err':>8} {'naive':>5} {'torch s':>8} {'torch ms':>9} "
          f"{'eager ms':>9} {'t/eager':>7} {'t err':>8} {'dyn s':>6} {'dyn ms':>9} "
          f"{'dyn err':>8} {'naive t/d':>9}  status")

COLUMNS = [  # (key, width, format) after the naive count
    ("torch_compile_s", 8, ".1f"), ("torch_ms", 9, ".1f"), ("eager_ms", 9, ".1f"),
    ("torch_ratio", 7, ".2f"), ("torch_rel_error", 8, ".1e"), ("dynamo_compile_s", 6, ".1f"),
    ("dynamo_ms", 9, ".1f"), ("dynamo_rel_error", 8, ".1e")]


def statuses(row: dict) -> str:
    """"ok" when every path that ran is ok, else each path's status."""
    run = {path: row[key] for path, key in STATUS.items()
           if key in row and row[key] != "not run"}
    if run and all(status == "ok" for status in run.values()):
        return "ok"
    if set(run) <= {"onnx"}:
        return row["status"]
    return "; ".join(f"{path}: {status}" for path, status in run.items())


def format_row(row: dict) -> str:
    def number(key: str, width: int, fmt: str) -> str:
        return f"{row[key]:{width}{fmt}}" if key in row else f"{'-':>{width}}"

    torch_columns = " ".join(number(key, width, fmt) for key, width, fmt in COLUMNS)
    naive = "/".join(str(len(row.get(f"{prefix}_naive", ()))) if f"{prefix}_status" in row
                     else "-" for prefix in ("torch", "dynamo"))
    return (f"{row['model']:18} {row['config']:10} {number('compile_s', 9, '.1f')} "
            f"{number('dlc_ms', 9, '.1f')} {number('ort_ms', 9, '.1f')} "
            f"{number('ratio', 6, '.2f')} {number('rel_error', 8, '.1e')} "
            f"{len(row.get('naive', ())):5d} {torch_columns} {naive:>9}  {statuses(row)}")


def markdown(rows: list[dict]) -> str:
    """The rows as a markdown table (README, docs)."""
    columns = ["model", "config", "compile s", "dlc ms", "ort ms", "dlc / ort", "rel. error",
               "torch compile s", "dlc (module) ms", "eager ms", "dlc / eager",
               "rel. error (module)", "dynamo compile s", "dynamo ms", "rel. error (dynamo)",
               "status"]
    lines = [f"| {' | '.join(columns)} |",
             f"| --- | --- | {'---: | ' * (len(columns) - 3)}--- |"]
    for row in rows:
        cells = [f"{row[key]:{fmt}}" if key in row else "-" for key, _, fmt in
                 (("compile_s", 9, ".1f"), ("dlc_ms", 9, ".1f"), ("ort_ms", 9, ".1f"),
                  ("ratio", 6, ".2f"), ("rel_error", 8, ".1e"), *COLUMNS)]
        lines.append(f"| {row['model']} | {row['config']} | {' | '.join(cells)} | "
                     f"{statuses(row)} |")
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
    parser.add_argument("--paths", default=",".join(PATHS),
                        help="comma-separated ways into dlc: onnx (torch.onnx.export, compared "
                        "with onnxruntime), module (dlc.compile(module, example_inputs=...)), "
                        "dynamo (torch.compile(module, backend='dlc')); the last two compared "
                        "with eager PyTorch (default: all)")
    parser.add_argument("--freeze", action="store_true",
                        help="the dynamo path with the backend's freeze option (parameters and "
                        "buffers compiled as constants; by default they are graph inputs)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the rows of this run as a markdown table at the end")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the calls by the calling thread's CPU time, not the wall "
                        "clock (a machine shared with other work)")
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
    paths = tuple(p for p in PATHS if p in args.paths.split(","))
    if not paths or set(args.paths.split(",")) - set(PATHS):
        print(f"zoo: --paths takes some of {','.join(PATHS)}, got {args.paths!r}",
              file=sys.stderr)
        return 2
    setting = Setting(layers=args.layers, image=args.image, tiny=args.tiny)
    global CLOCK
    CLOCK = time.thread_time if args.cpu_time else time.perf_counter
    print(HEADER, flush=True)
    failed, rows = 0, []
    for name in names:
        if args.models == "all" and name in KNOWN_FAILURES:
            print(format_row({"model": name, "config": setting.tag(ZOO[name]),
                              "status": f"skipped, known failure: {KNOWN_FAILURES[name]}"}))
            continue
        row = run_model(name, setting, args.out, args.repeat, paths=paths, freeze=args.freeze)
        save(row, args.out)
        print(format_row(row), flush=True)
        failed += statuses(row) != "ok"
        rows.append(row)
    print(f"(rows in {args.out / 'zoo.json'})")
    if args.markdown:
        print(markdown(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
