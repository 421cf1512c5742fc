"""The models of the PyTorch frontend's acceptance tests, and the error measure they use.

Plain torch.nn (no torchvision): an MLP, a ResNet-18-style CNN (stem, 4 stages of 2 basic
blocks, global average pool) and a 2-layer nn.TransformerEncoder (d_model 256, 4 heads,
sequence 128), each in eval mode with a fixed seed and one example input.
"""

from __future__ import annotations

import torch

nn = torch.nn


def relative_error(actual, expected) -> float:
    """max |actual - expected| / max |expected| (elementwise ratios blow up near zero)."""
    actual, expected = torch.as_tensor(actual), torch.as_tensor(expected)
    return float((actual - expected).abs().max() / expected.abs().max())


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.GELU(),
                                 nn.Linear(128, 10))

    def forward(self, x):
        return torch.log_softmax(self.net(x), dim=-1)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18's structure (narrower: width 8 instead of 64, to compile and run fast)."""

    def __init__(self, width: int = 8, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for stage, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
            blocks += [BasicBlock(cin, cout, 1 if stage == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def _randomize_batch_norms(model: nn.Module) -> None:
    # running statistics other than 0 and 1, so that batch norm is really tested
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)


def transformer() -> nn.Module:
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def make_case(name: str):
    """(model in eval mode, example input, eager output) of an acceptance model."""
    torch.manual_seed(0)
    if name == "mlp":
        model, x = MLP(), torch.randn(4, 64)
    elif name == "resnet18":
        model, x = ResNet18(), torch.randn(1, 3, 32, 32)
        _randomize_batch_norms(model)
    else:
        model, x = transformer(), torch.randn(1, 128, 256)
    model.eval()
    with torch.no_grad():
        expected = model(x)
    return model, x, expected


MODEL_NAMES = ["mlp", "resnet18", "transformer"]
