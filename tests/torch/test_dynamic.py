"""`torch.compile(backend="dlc", dynamic=True)`: one Dynamo graph with symbolic sizes, compiled
by dlc once for every value of its one symbolic size (the importer's dynamic size), else per
call shape (`dlc.frontends.torch.dynamo.DynamicGraph`), or per value of the other sizes where
the batch is computed row by row (`dlc.batching`), with no eager fallback and no Dynamo
recompile (issue 22)."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

import dlc
from dlc.frontends.torch import dynamo
from dlc.specialize import DynamicModel


class Attention(torch.nn.Module):
    """A BERT-style self-attention block: its sizes follow the batch and the sequence."""

    def __init__(self, hidden: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.norm = torch.nn.LayerNorm(hidden)

    def forward(self, x, mask):
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / (hidden // self.heads) ** 0.5
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, hidden)
        return self.norm(x + self.out(context))


@pytest.fixture
def graphs(monkeypatch):
    """The DynamicGraphs the dlc backend makes (and no Dynamo state from other tests)."""
    made = []
    original = dynamo.DynamicGraph.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(dynamo.DynamicGraph, "__init__", spy)
    torch._dynamo.reset()
    yield made
    torch._dynamo.reset()


@pytest.fixture
def per_shape(monkeypatch):
    """The per-call-shape compiles these tests check (graphs of one symbolic size compile
    once otherwise: the tests of that are below)."""
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")


@pytest.mark.parametrize("options", [{}, {"freeze": True}])
def test_one_graph_for_every_sequence_length(graphs, options, per_shape):
    torch.manual_seed(0)
    model = Attention().eval()
    compiled = torch.compile(model, backend="dlc", dynamic=True, options=options)
    shapes = [(2, 5), (2, 9), (3, 16), (2, 5)]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.DlcFallbackWarning)
        for batch, seq in shapes:
            x, mask = torch.randn(batch, seq, 16), (torch.rand(batch, seq) > 0.2).float()
            torch.testing.assert_close(compiled(x, mask), model(x, mask), rtol=1e-4, atol=1e-5)
    assert len(graphs) == 1  # (Dynamo compiled once: one graph, symbolic sizes)
    assert graphs[0].compiles == 3  # (dlc: one specialization per distinct shape)
    assert len(graphs[0].specializations) == 3


class Tokens(torch.nn.Module):
    """Embedding, projection, self-attention per row: a batch computed row by row."""

    def __init__(self):
        super().__init__()
        self.embed, self.proj = torch.nn.Embedding(100, 32), torch.nn.Linear(32, 32)

    def forward(self, ids):
        h = self.embed(ids)
        return torch.softmax(self.proj(h) @ h.transpose(1, 2), -1) @ h


@pytest.mark.parametrize("options, one_compile", [({}, True), ({"freeze": True}, True),
                                                  ({}, False)])
def test_a_batch_computed_row_by_row_compiles_once(graphs, monkeypatch, options, one_compile):
    """Batch and sequence symbolic: the graph at batch 1 (its batch symbol imported at 1) is
    compiled once for every sequence length and runs per row (`row_function`); per
    sequence length without the dynamic function."""
    from dlc import batching

    if not one_compile:
        monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")
    monkeypatch.setattr(batching, "MIN_ROW_WORK", 0)  # (a small model: rows of 40 tokens)
    torch.manual_seed(0)
    model = Tokens().eval()
    compiled = torch.compile(model, backend="dlc", dynamic=True, options=options)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.DlcFallbackWarning)
        for batch, seq in [(2, 40), (3, 40), (5, 40), (2, 48), (4, 48)]:  # (1: Dynamo specializes)
            ids = torch.randint(0, 100, (batch, seq))
            torch.testing.assert_close(compiled(ids), model(ids), rtol=1e-4, atol=1e-5)
    (graph,) = graphs
    assert graph.rows is not None, graph.rows_reason
    assert graph.function is None  # (two symbolic sizes)
    assert (graph.row_function is not None) == one_compile
    assert graph.compiles == (1 if one_compile else 2)  # (else: per sequence length)


def test_specializations_are_bounded(graphs, monkeypatch, per_shape):
    monkeypatch.setenv("DLC_MAX_SPECIALIZATIONS", "2")
    model = torch.nn.Linear(4, 3).eval()
    compiled = torch.compile(model, backend="dlc", dynamic=True)
    with torch.no_grad():
        for rows in (2, 3, 4, 5):
            x = torch.randn(rows, 4)
            torch.testing.assert_close(compiled(x), model(x))
    assert len(graphs) == 1 and graphs[0].compiles == 4
    assert len(graphs[0].specializations) == 2


def test_an_exported_program_with_dims_compiles_per_call_shape():
    torch.manual_seed(1)
    model = Attention().eval()
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq", min=2, max=512)
    exported = torch.export.export(
        model, (torch.randn(2, 8, 16), torch.ones(2, 8)),
        dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}))
    compiled = dlc.compile(exported)
    assert isinstance(compiled, DynamicModel)
    (x_spec, mask_spec), (y_spec,) = compiled.signature.inputs, compiled.signature.outputs
    assert x_spec.shape[:2] == mask_spec.shape == y_spec.shape[:2]  # (shared symbols)
    assert all(isinstance(d, str) for d in mask_spec.shape)
    for b, s in [(1, 4), (3, 17)]:
        x, mask = torch.randn(b, s, 16), (torch.rand(b, s) > 0.2).float()
        (y,) = compiled(x, mask)
        torch.testing.assert_close(y, model(x, mask), rtol=1e-4, atol=1e-5)
    assert compiled.compiles == 2
    with pytest.raises(dlc.FrontendError, match=r"does not take inputs of shapes.*<= 512"):
        compiled(torch.zeros(1, 600, 16), torch.zeros(1, 600))


def test_a_graph_that_cannot_be_traced_again_is_a_clear_error(graphs, monkeypatch, per_shape):
    from torch.fx.experimental import proxy_tensor

    def broken(*args, **kwargs):
        raise RuntimeError("data-dependent guard")

    monkeypatch.setattr(proxy_tensor, "make_fx", broken)
    compiled = torch.compile(torch.nn.Linear(4, 3).eval(), backend="dlc", dynamic=True)
    with torch.no_grad(), pytest.raises(dlc.FrontendError, match=r"could not be traced again "
                                        r"at .*RuntimeError: data-dependent guard"):
        compiled(torch.randn(5, 4))


# ----------------------------------------------------------------------------- compiled once


@pytest.mark.parametrize("options", [{}, {"freeze": True}])
def test_a_graph_of_one_symbolic_size_compiles_once(graphs, options):
    torch.manual_seed(0)
    model = Attention().eval()
    compiled = torch.compile(model, backend="dlc", dynamic=True, options=options)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.DlcFallbackWarning)
        for seq in (5, 9, 17, 2, 64):  # (batch 1: Dynamo specializes it)
            x, mask = torch.randn(1, seq, 16), (torch.rand(1, seq) > 0.2).float()
            torch.testing.assert_close(compiled(x, mask), model(x, mask), rtol=1e-4, atol=1e-5)
    (graph,) = graphs
    assert graph.function is not None, graph.function_reason
    assert graph.compiles == 1 and len(graph.specializations) == 0
    assert "tensor<1x?x16xf32>" in graph.function.ir("dlc")


def _transformer(name: str) -> torch.nn.Module:
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

    torch.manual_seed(0)
    if name == "bert":
        config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=48, max_position_embeddings=64)
        return BertModel(config).eval()
    return GPT2Model(GPT2Config(n_embd=32, n_layer=1, n_head=2, n_positions=64)).eval()


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_transformers_with_a_padding_mask_compile_once(graphs, name):
    """BERT and GPT-2 as transformers writes them (position ids sliced from a buffer or an
    arange of the length, the padding mask gathered by index.Tensor, GPT-2's cache of
    empty tensors concatenated): one compile for every sequence length."""
    model = _transformer(name)
    compiled = torch.compile(model, backend="dlc", dynamic=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.DlcFallbackWarning)
        for seq in (5, 9, 33):
            ids = torch.randint(0, 100, (1, seq))
            mask = torch.ones(1, seq, dtype=torch.long)
            mask[0, :2] = 0
            got = compiled(input_ids=ids, attention_mask=mask).last_hidden_state
            want = model(input_ids=ids, attention_mask=mask).last_hidden_state
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    (graph,) = graphs
    assert graph.function is not None, graph.function_reason
    assert graph.compiles == 1


def test_a_position_past_the_table_is_a_clear_error(graphs):
    model = _transformer("gpt2")  # (64 positions)
    compiled = torch.compile(model, backend="dlc", dynamic=True)
    with torch.no_grad():
        compiled(input_ids=torch.randint(0, 100, (1, 7)))
        with pytest.raises(dlc.DlcError, match=r"index 64 is out of range at run time"):
            compiled(input_ids=torch.randint(0, 100, (1, 80)))
    assert graphs[0].compiles == 1


class Flat(torch.nn.Module):
    """A softmax over the flattened [s, 4]: a size 4 * s, which the dynamic import refuses."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.arange(4.0))  # (4: not a symbol of Dynamo's)

    def forward(self, x):
        return (x * self.scale).flatten().softmax(0).view(x.shape) + 1


def test_a_size_computed_from_the_symbol_compiles_per_call_shape(graphs):
    model = Flat()
    compiled = torch.compile(model, backend="dlc", dynamic=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.DlcFallbackWarning)
        for rows in (3, 5):
            x = torch.randn(rows, 4)
            torch.testing.assert_close(compiled(x), model(x))
    (graph,) = graphs
    assert graph.function is None
    assert re.search(r"size 4\*s\d+ computed from the dynamic sizes", graph.function_reason)
    assert graph.compiles == 2


def test_an_exported_program_with_one_dim_compiles_once():
    torch.manual_seed(1)
    model = Attention().eval()
    seq = torch.export.Dim("seq", min=2, max=512)
    exported = torch.export.export(model, (torch.randn(2, 8, 16), torch.ones(2, 8)),
                                   dynamic_shapes=({1: seq}, {1: seq}))
    compiled = dlc.compile(exported)
    assert isinstance(compiled, DynamicModel)
    assert compiled.function is not None, compiled.function_reason
    (x_spec, mask_spec), (y_spec,) = compiled.signature.inputs, compiled.signature.outputs
    symbol = x_spec.shape[1]  # (torch's, s0 or another)
    assert isinstance(symbol, str) and mask_spec.shape[1] == y_spec.shape[1] == symbol
    for s in (2, 17, 512):
        x, mask = torch.randn(2, s, 16), (torch.rand(2, s) > 0.2).float()
        (y,) = compiled(x, mask)
        torch.testing.assert_close(y, model(x, mask), rtol=1e-4, atol=1e-5)
    assert compiled.compiles == 1
    with pytest.raises(dlc.InputError, match=r"input 'x' has size 600 at axis 1, outside the "
                       r"range \[2, 512\] of its dimension s\d+"):
        compiled(torch.zeros(2, 600, 16), torch.zeros(2, 600))
