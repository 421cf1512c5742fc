"""Converters the real models need: advanced indexing, as_strided, upsampling, cumsum, factory
ops under torch.compile, and the source lines errors name."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

import dlc

torch = pytest.importorskip("torch")
nn = torch.nn
F = nn.functional

from dlc.frontends.torch import UnsupportedAtenOpsError
from dlc.frontends.torch.aten_node import user_source_line
from tests.torch.test_importer import Lambda, check


def _interpolations(x, v, c):
    return (
        F.interpolate(x, scale_factor=2, mode="nearest"),
        F.interpolate(x, size=(5, 7), mode="nearest"),
        F.interpolate(x, scale_factor=1.5, mode="nearest"),
        F.interpolate(x, scale_factor=0.5, mode="nearest"),
        F.interpolate(x, size=(7, 5), mode="nearest-exact"),
        F.interpolate(x, scale_factor=2, mode="bilinear"),
        F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
        F.interpolate(x, size=(3, 9), mode="bilinear", align_corners=True),
        F.interpolate(x, size=(3, 2), mode="bilinear"),  # down
        F.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        F.interpolate(x, scale_factor=1.5, mode="bilinear"),  # coordinates scale by 1/1.5
        F.interpolate(x, scale_factor=2, mode="bicubic"),
        F.interpolate(x, size=(6, 5), mode="bicubic", align_corners=True),
        F.interpolate(v, scale_factor=3, mode="linear"),
        F.interpolate(v, size=5, mode="nearest"),
        F.interpolate(c, scale_factor=2, mode="trilinear"),
        F.interpolate(c, size=(3, 4, 5), mode="nearest"),
    )


def _index_puts(x, i, v):
    a, b, c = x.clone(), x.clone(), x.clone()
    a[:, i[:2]] = v[:2]  # a static KV cache's update: one axis, values broadcast
    b[i, :, i[:2, None]] = 2.0  # non-adjacent index tensors: B first
    c.index_put_((i,), torch.ones(5, 6), accumulate=True)  # repeated rows add up
    return a, b, c


CASES = {
    "index": (lambda x, i, j: (
        x[i], x[:, i], x[..., i], x[i, j], x[:, i, j], x[i, :, j], x[i[:, None], j],
        x[:, j[:, None], i[:2]], x[-1 - i], x[i.to(torch.int32)], (x > 0)[i, j],
    ), (torch.randn(4, 5, 6), torch.tensor([0, 3, 1]), torch.tensor([2, -1, 0]))),
    "index_put": (_index_puts, (torch.randn(4, 5, 6), torch.tensor([3, 0, 3]),
                                torch.randn(3, 6))),
    "as_strided": (lambda x: (
        torch.as_strided(x, (1, 24, 1, 1), (24, 1, 24, 24)),  # a restride of unit axes
        torch.as_strided(x, (2, 3), (4, 1), 5),  # a slice of rows
        torch.as_strided(x, (3, 4), (0, 1), 2),  # a broadcast
        torch.as_strided(x, (3, 4), (8, 2)),  # a strided run
        torch.as_strided(x, (4, 3), (1, 4)),  # a transpose: a gather
        torch.as_strided(x, (5, 3), (2, 1)),  # overlapping windows: a gather
    ), (torch.randn(2, 3, 4),)),
    "upsample": (_interpolations, (torch.randn(1, 2, 4, 3), torch.randn(1, 2, 3),
                                   torch.randn(1, 1, 2, 3, 2))),
    "cumsum": (lambda x: (x.cumsum(1), (x > 0).cumsum(0), torch.cumsum(x, -1, dtype=torch.float64)),
               (torch.randn(3, 4),)),
}


@pytest.mark.parametrize("name", CASES)
def test_converters_match_eager(name):
    fn, inputs = CASES[name]
    check(fn, *inputs)


def test_upsample_of_integers_is_exact():
    check(lambda x: (F.interpolate(x, scale_factor=3, mode="nearest"),),
          torch.randint(0, 100, (1, 2, 3, 2), dtype=torch.uint8))


def test_spatial_means_are_global_average_pools():
    # nn.AdaptiveAvgPool2d(1) decomposes to mean.dim over H, W: imported as ONNX's
    # GlobalAveragePool is (a dlc.pool), since fused into its producer's epilogue the
    # reduction ran as naive loops (17 in EfficientNet-B0's squeeze-excitations, zoo.py);
    # a mean over other axes stays a dlc.reduce
    def means(x, c):
        return (nn.AdaptiveAvgPool2d(1)(F.silu(x)), x.mean((-1, -2)), x.mean((2, 3), True),
                c.mean((2, 3, 4), keepdim=True), x.mean((1, 2), True), c.mean(-1))

    x, c = torch.randn(2, 3, 5, 7), torch.randn(1, 4, 3, 5, 6)
    check(means, x, c)
    ir = dlc.compile(Lambda(means).eval(), example_inputs=(x, c)).ir("dlc")
    assert ir.count("dlc.pool") >= 3 and ir.count("dlc.reduce") == 2  # (x.mean((-1, -2)): CSE)


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.tensor([True, False, True, True]))
        self.register_buffer("cells", torch.rand(4, 3) > 0.5)

    def forward(self, x):
        return x[self.rows] * 2, x[:, self.cells], x[self.rows, 1:] + x.shape[0]


def test_constant_boolean_masks_index_like_eager():
    model = Masked().eval()
    x = torch.randn(4, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        outputs = dlc.compile(model, example_inputs=(x,))(x)
    for got, want in zip(outputs, model(x)):
        assert torch.allclose(got, want)


class Positives(nn.Module):
    def forward(self, x):
        return x[x > 0] * 2  # the line named


def test_runtime_boolean_mask_is_an_error_naming_the_node():
    line = Positives.forward.__code__.co_firstlineno + 1
    with pytest.raises(dlc.FrontendError, match="boolean mask computed at run time") as raised:
        dlc.compile(Positives().eval(), example_inputs=(torch.randn(4),))
    assert f"{__file__}:{line}" in str(raised.value)
    assert "torch.where" in str(raised.value)


def test_factory_ops_under_torch_compile():
    def positions(x):
        return x + torch.arange(x.shape[-1]) * 0.5 + torch.full((1,), 2.0)

    torch._dynamo.reset()
    x = torch.randn(2, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fallback to eager
        y = torch.compile(Lambda(positions), backend="dlc")(x)
    assert torch.allclose(y, positions(x))


def test_bilinear_upsample_under_torch_compile():
    # torch.compile decomposes it into aten.index.Tensor on computed indices
    def up(x):
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)

    torch._dynamo.reset()
    x = torch.randn(1, 2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        y = torch.compile(Lambda(up), backend="dlc")(x)
    assert torch.allclose(y, up(x), atol=1e-6)


# ----------------------------------------------------------------------------- source lines


def test_source_line_is_the_library_frame_not_the_wrapper():
    # torch.export keeps the frames of forward methods: the user's wrapper, then the
    # library's model (in a virtualenv, which may sit inside dlc's repository folder)
    library = Path(dlc.__file__).parent / ".venv/lib/python3.11/site-packages/transformers"
    trace = (f'File "/home/user/wrapper.py", line 8, in forward\n'
             f'    return self.model(x).last_hidden_state\n'
             f'  File "{library}/models/bert/modeling_bert.py", line 583, in forward\n'
             f'    mask = make_mask(x)\n'
             f'  File "{Path(torch.__file__).parent}/nn/modules/module.py", line 9, in _call\n'
             f'    return forward(x)\n')
    source = user_source_line(trace)
    assert source.file == f"{library}/models/bert/modeling_bert.py" and source.line == 583


WRAPPER = '''
import torch
from tests.torch.test_aten_coverage import Library


class Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Library()

    def forward(self, x):
        return self.inner(x) + 1
'''


class Library(nn.Module):
    """Stands for a library's model (transformers, timm) that the user's wrapper calls."""

    def forward(self, x):
        return torch.cumprod(x, 0)  # unsupported


def test_unsupported_op_names_the_library_line(tmp_path):
    # the wrapper lives outside dlc's folder, the "library" (this file) inside it, as a
    # virtualenv created in the repository would be
    (tmp_path / "user_wrapper.py").write_text(WRAPPER)
    spec = importlib.util.spec_from_file_location("user_wrapper", tmp_path / "user_wrapper.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["user_wrapper"] = module
    spec.loader.exec_module(module)
    with pytest.raises(UnsupportedAtenOpsError) as raised:
        dlc.compile(module.Wrapper().eval(), example_inputs=(torch.randn(3),))
    line = Library.forward.__code__.co_firstlineno + 1
    assert f"{__file__}:{line} in forward: `return torch.cumprod(x, 0)" in str(raised.value)
    assert "user_wrapper.py" not in str(raised.value)


@pytest.mark.parametrize("ord", [2, 1, 3, 0, float("inf"), float("-inf")])
def test_vector_norms(ord):
    # aten.linalg_vector_norm: Tensor.norm, torch.norm, F.normalize (ConvNeXt-V2's GRN)
    x = torch.randn(2, 6, 5, 8)
    if ord == 0:
        x[0, 0, 0, :3] = 0
    check(lambda x: (torch.linalg.vector_norm(x, ord=ord, dim=(1, 2), keepdim=True),
                     torch.linalg.vector_norm(x, ord=ord)), x, tolerance=1e-5)


def test_normalize_and_grn():
    x = torch.randn(1, 7, 7, 16)

    def grn(x):
        g = x.norm(p=2, dim=(1, 2), keepdim=True)
        return (x * (g / (g.mean(dim=-1, keepdim=True) + 1e-6)) + x,
                F.normalize(x, dim=-1))

    check(grn, x)
