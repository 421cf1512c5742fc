"""Three benchmark models defined in PyTorch and exported to ONNX: ResNet-18, MobileNetV2, BERT.

    .venv/bin/python benchmarks/torch_models.py [--out DIR]     (export all three)

Random weights (seeded), eval mode, batch 1: a ResNet-18-style CNN and a MobileNetV2-style CNN
(depthwise 3x3, inverted residuals, ReLU6) on 1x3x224x224 images, and a BERT-style encoder
(token + position embeddings, 2 layers, hidden 256, 4 heads, FFN 1024 with exact GELU,
post-LayerNorm) on 1x128 int64 token ids. `exported_model` exports with the TorchScript
exporter (`dynamo=False`: it works offline and needs no onnxscript), opset 17, and caches the
file: a model is exported again only when its file is missing.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

OPSET = 17
VOCAB, SEQ, HIDDEN, HEADS, FFN, LAYERS = 1000, 128, 256, 4, 1024, 2


# ----------------------------------------------------------------------------- ResNet-18


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout)]


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(*conv_bn(cin, cout, 3, stride), nn.ReLU(),
                                  *conv_bn(cout, cout, 3))
        self.shortcut = (nn.Sequential(*conv_bn(cin, cout, 1, stride))
                         if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet18(classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [*conv_bn(3, 64, 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


# ----------------------------------------------------------------------------- MobileNetV2


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [*conv_bn(cin, hidden, 1), nn.ReLU6()] if expand != 1 else []
        layers += [*conv_bn(hidden, hidden, 3, stride, groups=hidden), nn.ReLU6(),
                   *conv_bn(hidden, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


# (expansion, channels, repeats, first stride) of MobileNetV2's bottleneck stages
MOBILENET_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                    (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [*conv_bn(3, 32, 3, 2), nn.ReLU6()]
    cin = 32
    for expand, cout, repeats, stride in MOBILENET_STAGES:
        for i in range(repeats):
            layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
            cin = cout
    layers += [*conv_bn(cin, 1280, 1), nn.ReLU6(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(1280, classes)]
    return nn.Sequential(*layers)


# ----------------------------------------------------------------------------- BERT


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.norm1 = nn.LayerNorm(HIDDEN)
        self.ffn = nn.Sequential(nn.Linear(HIDDEN, FFN), nn.GELU(), nn.Linear(FFN, HIDDEN))
        self.norm2 = nn.LayerNorm(HIDDEN)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        heads = self.qkv(x).reshape(batch, seq, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
        q, k, v = heads[0], heads[1], heads[2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS)
        context = torch.softmax(scores, dim=-1) @ v
        return self.out(context.transpose(1, 2).reshape(batch, seq, HIDDEN))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.ffn(x))


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Parameter(torch.randn(1, SEQ, HIDDEN) * 0.02)
        self.norm = nn.LayerNorm(HIDDEN)
        self.layers = nn.Sequential(*(EncoderLayer() for _ in range(LAYERS)))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.layers(self.norm(self.tokens(ids) + self.positions))


# ----------------------------------------------------------------------------- export


def image() -> torch.Tensor:
    return torch.randn(1, 3, 224, 224)


def token_ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (1, SEQ), dtype=torch.int64)


# name -> (module factory, example input factory)
TORCH_MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], torch.Tensor]]] = {
    "resnet18": (resnet18, image),
    "mobilenet_v2": (mobilenet_v2, image),
    "bert": (Bert, token_ids),
}


def randomize_batchnorm(module: nn.Module) -> None:
    """Non-trivial running statistics, so that BatchNorm is not an identity."""
    for bn in module.modules():
        if isinstance(bn, nn.BatchNorm2d):
            bn.running_mean.normal_(0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.normal_(0, 0.1)


def export(name: str, path: Path) -> None:
    torch.manual_seed(0)
    factory, example = TORCH_MODELS[name]
    module = factory().eval()
    randomize_batchnorm(module)
    temporary = path.with_suffix(".tmp")
    with torch.no_grad():
        torch.onnx.export(module, (example(),), str(temporary), dynamo=False,
                          opset_version=OPSET, input_names=["input"], output_names=["output"])
    temporary.replace(path)


def exported_model(name: str, cache_dir: Path) -> Path:
    """The ONNX file of model `name`, exported once into cache_dir."""
    path = cache_dir / f"{name}.onnx"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        export(name, path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/benchmarks"))
    args = parser.parse_args()
    for name in TORCH_MODELS:
        print(exported_model(name, args.out))


if __name__ == "__main__":
    main()
