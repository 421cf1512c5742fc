"""nn.LSTM, nn.GRU and nn.RNN through torch.export: kept whole (not unrolled by the
decompositions), converted to one dlc.recurrence per layer and direction, against eager."""

from __future__ import annotations

import pytest

import dlc

torch = pytest.importorskip("torch")
nn = torch.nn

from dlc.frontends.common import FrontendError
from tests.torch.test_importer import Lambda


def _compare(module, *inputs, tolerance=1e-5):
    compiled = dlc.compile(module, example_inputs=inputs)
    with torch.no_grad():
        expected = module(*inputs)
    flat = [expected[0]] + (list(expected[1]) if isinstance(expected[1], tuple)
                            else [expected[1]])
    got = compiled(*inputs)
    assert len(got) == len(flat)
    for g, e in zip(got, flat):
        assert g.shape == e.shape and g.dtype == e.dtype
        assert float((g - e).abs().max()) <= tolerance * max(1.0, float(e.abs().max()))
    return compiled


@pytest.mark.parametrize("layer", [
    lambda: nn.LSTM(6, 8, num_layers=2, batch_first=True, bidirectional=True),
    lambda: nn.GRU(6, 8, num_layers=2, bidirectional=True),
    lambda: nn.RNN(6, 8, nonlinearity="relu", batch_first=True),
    lambda: nn.RNN(6, 8, num_layers=2, bias=False, bidirectional=True),
    lambda: nn.LSTM(6, 8, bias=False),
], ids=["lstm-2-bi-batch-first", "gru-2-bi", "rnn-relu", "rnn-tanh-2-bi-no-bias", "lstm-no-bias"])
def test_layers_against_eager(layer):
    torch.manual_seed(0)
    module = layer().eval()
    compiled = _compare(module, torch.randn(3, 11, 6))
    text = compiled.ir("dlc")
    layers, directions = module.num_layers, 2 if module.bidirectional else 1
    assert text.count('"dlc.recurrence"') == layers * directions


def test_initial_states_as_inputs():
    torch.manual_seed(0)
    lstm = nn.LSTM(5, 7, num_layers=2, bidirectional=True).eval()
    model = Lambda(lambda x, h, c: lstm(x, (h, c))).eval()
    _compare(model, torch.randn(9, 2, 5), torch.randn(4, 2, 7), torch.randn(4, 2, 7))


def test_ir_does_not_grow_with_the_sequence():
    torch.manual_seed(0)
    gru = nn.GRU(4, 6, bidirectional=True).eval()
    short = dlc.compile(gru, example_inputs=(torch.randn(3, 1, 4),)).ir("dlc")
    long = dlc.compile(gru, example_inputs=(torch.randn(60, 1, 4),)).ir("dlc")
    assert len(short.splitlines()) == len(long.splitlines())


def test_lstm_projection_is_a_clear_error():
    lstm = nn.LSTM(4, 6, proj_size=3).eval()
    with pytest.raises(FrontendError, match="proj_size"):
        dlc.compile(lstm, example_inputs=(torch.randn(3, 1, 4),))
