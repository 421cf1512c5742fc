"""`torch.compile(backend="dlc")` honours `num_threads` and goes through the compile cache, as
`dlc.compile` does (issue 19): a second compile of the same graph is a cache hit, in memory
and, from another process, on disk; `dlc.compile` of an nn.Module is cached the same way.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import dlc
import dlc.compiler
from dlc.runtime import cache
from dlc.runtime.jit import SharedObjectFunction


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2


@pytest.fixture
def compiles(monkeypatch, tmp_path):
    """The CompiledModels torch.compile makes, with a cache of this test's own."""
    monkeypatch.setenv("DLC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DLC_CACHE_MIN_SECONDS", "0")
    made = []
    original = dlc.compiler.compile_imported_cached

    def spy(*args, **kwargs):
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(dlc.compiler, "compile_imported_cached", spy)
    torch._dynamo.reset()
    yield made
    torch._dynamo.reset()


def test_num_threads_option(compiles):
    torch.manual_seed(0)
    model, x = Small().eval(), torch.randn(2, 8)
    compiled = torch.compile(model, backend="dlc", options={"num_threads": 2})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert [c.num_threads for c in compiles] == [2]
    assert "convert-scf-to-openmp{num-threads=2}" in compiles[0].pipeline
    with pytest.raises(Exception, match="unknown dlc backend options"):
        torch.compile(model, backend="dlc", options={"threads": 2})(x)


def test_the_same_graph_twice_is_a_cache_hit(compiles):
    torch.manual_seed(0)
    model, x = Small().eval(), torch.randn(2, 8)
    with torch.no_grad():
        torch.compile(model, backend="dlc", options={"num_threads": 1})(x)
        torch._dynamo.reset()
        torch.compile(model, backend="dlc", options={"num_threads": 1})(x)
    assert len(compiles) == 2 and compiles[1] is compiles[0]  # the memory level's hit
    with cache.disabled():
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(model, backend="dlc", options={"num_threads": 1})(x)
    assert compiles[2] is not compiles[0]


def test_a_new_process_loads_the_graph_from_disk(tmp_path):
    script = textwrap.dedent("""
        import torch, dlc.compiler
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
        made = []
        original = dlc.compiler.compile_imported_cached
        dlc.compiler.compile_imported_cached = lambda *a, **k: made.append(original(*a, **k)) or made[-1]
        with torch.no_grad():
            out = torch.compile(model, backend="dlc", options={"num_threads": 1})(torch.ones(2, 8))
        print(type(made[0]._function).__name__, float(out.sum()))
    """)
    env = {"DLC_CACHE_DIR": str(tmp_path / "cache"), "DLC_CACHE_MIN_SECONDS": "0",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, check=False, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (run.stdout.split() for run in runs)
    assert first[0] == "JitFunction" and second[0] == SharedObjectFunction.__name__
    assert first[1] == second[1]


def test_dlc_compile_of_a_module_is_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("DLC_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    model, x = Small().eval(), torch.randn(2, 8)
    first = dlc.compile(model, example_inputs=(x,), num_threads=1)
    second = dlc.compile(model, example_inputs=(x,), num_threads=1)
    assert second is first
    torch.testing.assert_close(second(x)[0], model(x))


class ConvBn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) + x.mean()


def test_freeze_compiles_parameters_and_buffers_as_constants(compiles):
    # weights as inputs are packed at each call (a 512x512 3x3 conv on 4x4: ~4x slower)
    torch.manual_seed(0)
    model, x = ConvBn().eval(), torch.randn(1, 4, 5, 5)
    with torch.no_grad():
        expected = model(x)
        thawed = torch.compile(model, backend="dlc", options={"num_threads": 1})(x)
        torch._dynamo.reset()
        frozen = torch.compile(model, backend="dlc", options={"num_threads": 1, "freeze": True})
        torch.testing.assert_close(frozen(x), expected)
        torch.testing.assert_close(thawed, expected)
        # conv weight and bias, batch norm weight, bias, running mean and variance: 6 inputs
        assert [len(c.input_names) for c in compiles] == [7, 1]
        assert "dlc.constant" in compiles[1].ir("dlc")
        model.conv.weight.mul_(2)  # (frozen: a later change to the weights is not seen)
        torch.testing.assert_close(frozen(x), expected)
