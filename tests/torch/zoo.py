"""Tiny versions of real architectures, for the PyTorch frontend's model-coverage tests.

The torchvision-like blocks are written here in plain torch.nn, after torchvision's code
(ConvNeXt's CNBlock and head, MobileNetV3's inverted residual with squeeze-excitation and
hardswish, EfficientNet's MBConv with SiLU, ViT's patch embedding and class token, a
UNet-style decoder that upsamples with F.interpolate); the `transformers` models are built
from their configs with random weights (no download), hidden sizes of 16 and one layer (more
layers add compile time, not coverage). Every builder returns (model in eval mode, example
inputs); seeds are fixed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

nn = torch.nn
F = nn.functional


# ----------------------------------------------------------------------------- torchvision-like


class LayerNorm2d(nn.LayerNorm):
    """torchvision's LayerNorm2d: a LayerNorm over the channels of an NCHW tensor."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """ConvNeXt's block: depthwise 7x7, LayerNorm (channels last), MLP, layer scale."""

    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.layer_scale = nn.Parameter(torch.rand(dim, 1, 1) + 0.5)

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.mlp(self.norm(y)).permute(0, 3, 1, 2)
        return x + self.layer_scale * y


class ConvNeXt(nn.Module):
    def __init__(self, dim: int = 8, classes: int = 5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dim, 4, 4), LayerNorm2d(dim, eps=1e-6))
        self.stage1 = CNBlock(dim)
        self.down = nn.Sequential(LayerNorm2d(dim, eps=1e-6), nn.Conv2d(dim, 2 * dim, 2, 2))
        self.stage2 = CNBlock(2 * dim)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(LayerNorm2d(2 * dim, eps=1e-6), nn.Flatten(1),
                                        nn.Linear(2 * dim, classes))

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.classifier(self.avgpool(x))


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeezed: int, activation: type[nn.Module],
                 gate: type[nn.Module]):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.activation, self.gate = activation(), gate()

    def forward(self, x):
        scale = self.gate(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return x * scale


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
            activation: type[nn.Module] | None = None) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([activation()] if activation else []))


class InvertedResidual(nn.Module):
    """MobileNetV3's block (hardswish, SE with hardsigmoid) or EfficientNet's MBConv (SiLU,
    SE with sigmoid), by `activation`."""

    def __init__(self, cin: int, expanded: int, cout: int, stride: int,
                 activation: type[nn.Module], gate: type[nn.Module]):
        super().__init__()
        self.residual = stride == 1 and cin == cout
        self.block = nn.Sequential(
            conv_bn(cin, expanded, 1, activation=activation),
            conv_bn(expanded, expanded, 3, stride, groups=expanded, activation=activation),
            SqueezeExcitation(expanded, max(1, expanded // 4),
                              nn.ReLU if activation is nn.Hardswish else nn.SiLU, gate),
            conv_bn(expanded, cout, 1))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class MobileNet(nn.Module):
    """A stem, MobileNetV3's block (hardswish, SE gated by hardsigmoid), EfficientNet's MBConv
    (SiLU, SE gated by sigmoid) and a classifier: one model, one compile for both."""

    def __init__(self, classes: int = 5):
        super().__init__()
        self.stem = conv_bn(3, 8, 3, 2, activation=nn.Hardswish)
        self.blocks = nn.Sequential(
            InvertedResidual(8, 16, 8, 1, nn.Hardswish, nn.Hardsigmoid),
            InvertedResidual(8, 24, 12, 2, nn.SiLU, nn.Sigmoid))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Linear(12, 16),
                                  nn.Hardswish(), nn.Dropout(0.2), nn.Linear(16, classes))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class VisionTransformer(nn.Module):
    """ViT: a patch embedding (conv), a class token, position embeddings, pre-norm encoder
    layers, the class token's final norm and head."""

    def __init__(self, image: int = 16, patch: int = 4, dim: int = 16, classes: int = 5):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        self.class_token = nn.Parameter(torch.randn(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.1)
        layer = nn.TransformerEncoderLayer(dim, 2, 2 * dim, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.encoder(x + self.pos_embedding)
        return self.head(self.norm(x)[:, 0])


class Decoder(nn.Module):
    """A UNet/FPN-style decoder: upsampling by F.interpolate (bilinear with and without
    align_corners, nearest, by scale factor and by size) between convs."""

    def __init__(self, channels: int = 4):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(2 * channels, channels, 3, padding=1)

    def forward(self, x, skip):
        up = F.interpolate(self.conv1(x), scale_factor=2, mode="bilinear", align_corners=False)
        y = self.conv2(torch.cat([up, skip], dim=1))
        y = y + F.interpolate(y, size=skip.shape[-2:], mode="bilinear", align_corners=True)
        y = F.interpolate(torch.relu(y), scale_factor=2, mode="nearest")
        return y + F.interpolate(y, size=(10, 12), mode="nearest-exact").mean()


def _randomize_batch_norms(model: nn.Module) -> None:
    # running statistics other than 0 and 1, so that batch norm is really tested
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)


VISION: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {
    "convnext": lambda: (ConvNeXt(), (torch.randn(1, 3, 16, 16),)),
    "mobilenet_efficientnet": lambda: (MobileNet(), (torch.randn(1, 3, 16, 16),)),
    "vit": lambda: (VisionTransformer(), (torch.randn(1, 3, 16, 16),)),
    "decoder": lambda: (Decoder(), (torch.randn(1, 4, 3, 4), torch.randn(1, 4, 6, 8))),
}


# ----------------------------------------------------------------------------- transformers


def _transformers(name: str) -> tuple[nn.Module, tuple]:
    import transformers as hf

    small = {"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 1,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
             "use_cache": False}
    tokens = torch.randint(0, 64, (2, 6))
    if name == "bert":
        model = hf.BertModel(hf.BertConfig(**small))
        inputs = (tokens, torch.tensor([[1] * 6, [1] * 4 + [0] * 2]))  # with a padding mask
    elif name == "gpt2":
        model = hf.GPT2Model(hf.GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2,
                                           n_positions=32, use_cache=False))
        # (batch 1: torch.export of GPT-2's Conv1D fails on a batch of 2, a torch issue)
        inputs = (tokens[:1],)
    elif name == "llama":
        model = hf.LlamaModel(hf.LlamaConfig(**small, num_key_value_heads=1))
        inputs = (tokens,)
    elif name == "distilbert":
        model = hf.DistilBertModel(hf.DistilBertConfig(
            vocab_size=64, dim=16, n_layers=1, n_heads=2, hidden_dim=32,
            max_position_embeddings=32))
        inputs = (tokens,)
    elif name == "t5":
        model = hf.T5EncoderModel(hf.T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32,
                                              num_layers=1, num_heads=2, use_cache=False))
        inputs = (tokens,)
    else:
        model = hf.ViTModel(hf.ViTConfig(hidden_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, intermediate_size=32,
                                         image_size=8, patch_size=4))
        inputs = (torch.randn(2, 3, 8, 8),)
    return LastHiddenState(model), inputs


class LastHiddenState(nn.Module):
    """A transformers model returning its last hidden state (a tensor, not a ModelOutput)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return self.model(*inputs).last_hidden_state


TRANSFORMERS = ["bert", "gpt2", "llama", "distilbert", "t5", "vit"]


def make(name: str) -> tuple[nn.Module, tuple, torch.Tensor]:
    """(model in eval mode, example inputs, eager output) of a zoo model."""
    torch.manual_seed(0)
    if name in VISION:
        model, inputs = VISION[name]()
        _randomize_batch_norms(model)
    else:
        model, inputs = _transformers(name.removeprefix("hf_"))
    model.eval()
    with torch.no_grad():
        expected = model(*inputs)
    return model, inputs, expected
