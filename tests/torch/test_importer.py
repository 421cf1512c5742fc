"""The PyTorch importer: converters against eager torch, locations, errors, the entry points."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import dlc

torch = pytest.importorskip("torch")
nn = torch.nn

from dlc.dialects import make_context
from dlc.frontends.torch import (
    UnsupportedAtenOpsError,
    import_torch,
    supported_aten_ops,
)
from tests.torch.models import relative_error

README = Path(__file__).resolve().parents[2] / "README.md"


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def check(fn, *inputs, tolerance: float = 1e-5):
    """Compile `fn` (a function of tensors, returning a tuple) and compare with eager."""
    model = Lambda(fn).eval()
    compiled = dlc.compile(model, example_inputs=inputs)
    expected = fn(*inputs)
    outputs = compiled(*inputs)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype == torch.bool or not want.dtype.is_floating_point:
            assert torch.equal(got, want)
        else:
            assert relative_error(got, want) < tolerance


# Each case is one compile exercising several converters at once (compiles cost ~0.5 s).
CASES = {
    "elementwise": (lambda x, y: (
        torch.sigmoid(x) * 2 - y / 3, torch.tanh(x) + torch.exp(-y.abs()), torch.rsqrt(y.abs() + 1),
        torch.clamp(x, -0.5, 0.5), nn.functional.silu(x), nn.functional.leaky_relu(x, 0.2),
        nn.functional.gelu(x, approximate="tanh"), torch.maximum(x, y), x ** 2, 1 - x,
        torch.where(x > y, x, 0.5), (x > 0) & (y < 0), x.to(torch.int32),
        torch.div(x, 0.3, rounding_mode="floor"), nn.functional.hardswish(x),
    ), (torch.randn(3, 4), torch.randn(4))),
    "movement": (lambda x: (
        x.permute(2, 0, 1), x.transpose(0, 1).reshape(4, -1), x[:, 1:3, ::2], x[1], x.unsqueeze(1),
        torch.cat([x, x * 2], dim=-1), *torch.split(x, [1, 2], dim=0), x.flatten(1),
        x[:, :1].expand(3, 4, 5), nn.functional.pad(x, (1, 2)),
    ), (torch.randn(3, 4, 5),)),
    "reductions": (lambda x: (
        x.sum(1), x.mean((0, 2), keepdim=True), x.amax(-1), x.amin(0), x.max(dim=1).values,
        x.argmax(2), x.var(1), torch.softmax(x, 0), torch.log_softmax(x, 1),
        (x > 1).any(1), (x > -3).all(),
    ), (torch.randn(3, 4, 5),)),
    "indexing": (lambda w, i: (
        nn.functional.embedding(i, w), torch.index_select(w, 1, i[0]), torch.arange(4) + i,
    ), (torch.randn(10, 6), torch.tensor([[1, 2, 3, 5]]))),
    "nn": (lambda x, w: (
        nn.functional.conv2d(x, w, stride=2, padding=1), nn.functional.avg_pool2d(x, 2),
        nn.functional.max_pool2d(x, 3, 2, ceil_mode=True), nn.functional.adaptive_avg_pool2d(x, 2),
        nn.functional.group_norm(x, 2), nn.functional.layer_norm(x, [8]),
        nn.functional.conv_transpose2d(x, w.transpose(0, 1), stride=2),
    ), (torch.randn(1, 4, 8, 8), torch.randn(6, 4, 3, 3))),
    "attention": (lambda q, k, v, mask: (
        nn.functional.scaled_dot_product_attention(q, k, v),
        nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        torch.baddbmm(q[0, :, :, :8], q[0], k[0].transpose(1, 2), beta=0.5, alpha=2.0),
    ), (torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16),
        torch.rand(8, 8) > 0.3)),
}


@pytest.mark.parametrize("name", CASES)
def test_converters_match_eager(name):
    fn, inputs = CASES[name]
    check(fn, *inputs)


def test_parameters_and_buffers_become_constants():
    model = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4)).eval()
    x = torch.randn(2, 8)
    context = make_context()
    imported = import_torch(model, (x,), context)
    with context:
        function = imported.module.body.operations[0]
        assert len(function.arguments) == 1  # only x: the weights are constants
        assert imported.input_names == ["input"]  # (nn.Sequential's argument)
        text = imported.module.operation.get_asm(enable_debug_info=True,
                                                 large_elements_limit=4)
    assert text.count('"dlc.constant"') >= 6


def test_locations_name_the_node_and_the_user_line():
    def forward(x):
        return torch.relu(x) * 3  # the line the locations point at

    model = Lambda(forward).eval()
    context = make_context()
    imported = import_torch(model, (torch.randn(2),), context)
    line = forward.__code__.co_firstlineno + 1
    with context:
        body = imported.module.body.operations[0].regions[0].blocks[0]
        locations = {str(op.location) for op in body.operations}
    assert f'loc("relu"("{__file__}":{line}:0))' in locations
    assert f'loc("mul"("{__file__}":{line}:0))' in locations


class Cumulative(nn.Module):
    def forward(self, x):
        y = torch.cumprod(x, 0)  # unsupported
        return torch.sort(y).values + 1  # unsupported


def cumulative(x):
    return torch.cumprod(x, 0) + 1


def test_unsupported_ops_are_listed_with_their_source_lines():
    with pytest.raises(UnsupportedAtenOpsError) as raised:
        dlc.compile(Cumulative().eval(), example_inputs=(torch.randn(5),))
    message = str(raised.value)
    first = Cumulative.forward.__code__.co_firstlineno
    assert "aten.cumprod.default" in message and "aten.sort.default" in message
    assert f"{__file__}:{first + 1} in forward: `y = torch.cumprod(x, 0)" in message
    assert f"{__file__}:{first + 2} in forward" in message
    assert isinstance(raised.value, dlc.UnsupportedOpsError)  # one except clause for both


def test_torch_compile_falls_back_with_a_warning_naming_the_op():
    torch._dynamo.reset()
    compiled = torch.compile(Lambda(cumulative), backend="dlc")
    x = torch.randn(5)
    with pytest.warns(UserWarning, match=r"aten\.cumprod\.default") as caught:
        y = compiled(x)
    message = next(str(w.message) for w in caught if "runs eagerly" in str(w.message))
    line = cumulative.__code__.co_firstlineno + 1  # (Dynamo keeps frames of helpers too)
    assert f"{__file__}:{line} in cumulative" in message
    assert torch.equal(y, cumulative(x))  # the eager result


def test_torch_compile_backend_options_and_grad_mode():
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh()).eval()
    x = torch.randn(3, 6)
    compiled = torch.compile(model, backend="dlc", options={"opt_level": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        y = compiled(x)  # grad enabled: the forward graph also returns saved tensors
    assert relative_error(y.detach(), model(x).detach()) < 1e-5


def test_training_mode_and_missing_inputs_are_errors():
    model = nn.Linear(2, 2)
    with pytest.raises(dlc.FrontendError, match=r"model\.eval\(\)"):
        dlc.compile(model, example_inputs=(torch.randn(1, 2),))
    with pytest.raises(dlc.FrontendError, match="example_inputs"):
        dlc.compile(model.eval())


def test_unsupported_dtype_is_a_frontend_error():
    with pytest.raises(dlc.FrontendError, match="bfloat16"):
        dlc.compile(Lambda(lambda x: x * 2).eval(),
                    example_inputs=(torch.randn(2, dtype=torch.bfloat16),))


def test_exported_program_compiles_and_calls_by_name():
    class MatMul(nn.Module):
        def forward(self, a, b):
            return a @ b

    model = MatMul().eval()
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    compiled = dlc.compile(torch.export.export(model, (a, b)))
    assert compiled.input_names == ["a", "b"]
    (y,) = compiled({"a": a.numpy(), "b": b.numpy()})
    np.testing.assert_allclose(y, (a @ b).numpy(), rtol=1e-5, atol=1e-6)


def test_readme_lists_every_supported_aten_op():
    text = README.read_text()
    listed = text[text.index("### Supported ATen ops"):]
    missing = [op for op in supported_aten_ops() if f"`{op.removeprefix('aten.')}`" not in listed]
    assert not missing, f"README's ATen list misses {missing}"
