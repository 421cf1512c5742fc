"""CompileOptions (issue 19): one record of a compile's options, resolved once at the entry
point and carried by every path (compile, lower, specializations, profile, the torch backend)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import dlc
from dlc.options import CompileOptions
from dlc.runtime import cache
from tests.conftest import make_model, random_array


def relu(shape=("batch", 3)):
    return make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (np.float32, shape)},
                      {"y": (np.float32, shape)})


def test_resolve_fills_the_environment_default_once(monkeypatch):
    monkeypatch.setenv("DLC_NUM_THREADS", "3")
    resolved = CompileOptions(opt_level=1).resolve()
    assert resolved.threads == 3 and resolved.opt_level == 1
    monkeypatch.setenv("DLC_NUM_THREADS", "1")
    assert resolved.resolve().threads == 3  # (resolved: the environment is read no more)
    with pytest.raises(dlc.ArgumentError, match="resolve"):
        _ = CompileOptions().threads


@pytest.mark.parametrize("options, message", [
    (CompileOptions(opt_level=4), "opt_level must be one of"),
    (CompileOptions(num_threads=0), "num_threads must be at least 1"),
    (CompileOptions(num_threads=True), "num_threads must be at least 1"),
])
def test_bad_options_are_argument_errors(options, message):
    with pytest.raises(dlc.ArgumentError, match=message):
        dlc.compile(relu((2, 3)), options=options)


def test_options_or_keywords_not_both():
    with pytest.raises(dlc.ArgumentError, match="either options= or opt_level, num_threads"):
        dlc.compile(relu((2, 3)), opt_level=1, num_threads=1, options=CompileOptions())
    with pytest.raises(dlc.ArgumentError, match="must be a dlc.CompileOptions"):
        dlc.lower(relu((2, 3)), options={"opt_level": 1})


def test_options_give_the_same_model_as_keywords():
    x = random_array([2, 3], np.float32)
    options = CompileOptions(opt_level=1, num_threads=1)
    with cache.disabled():
        by_options = dlc.compile(relu((2, 3)), options=options)
        by_keywords = dlc.compile(relu((2, 3)), opt_level=1, num_threads=1)
    assert by_options.options == by_keywords.options == options.resolve()
    assert by_options.ir("linalg") == by_keywords.ir("linalg")
    np.testing.assert_array_equal(by_options(x)[0], np.maximum(x, 0))
    lowered = dlc.lower(relu((2, 3)), "linalg", options=options)
    assert lowered.ir("linalg") == by_options.ir("linalg")


def test_a_specialization_carries_the_dynamic_models_options(monkeypatch):
    monkeypatch.setenv("DLC_DYNAMIC_FUNCTION", "0")  # (specializations, not one compile)
    model = dlc.compile(relu(), options=CompileOptions(opt_level=1, num_threads=1))
    x = random_array([5, 3], np.float32)
    np.testing.assert_array_equal(model(x)[0], np.maximum(x, 0))
    specialization = model.specialize({"x": [5, 3]})  # (the one the call compiled)
    assert model.compiles == 1
    assert specialization.options.opt_level == 1 and specialization.options.threads == 1
    assert specialization.options.input_shapes == {"x": [5, 3]}
    assert "linalg.generic" in specialization.ir("linalg")  # (released, lowered again)


def test_the_one_compile_for_every_size_carries_the_options():
    model = dlc.compile(relu(), options=CompileOptions(opt_level=1, num_threads=1))
    assert model.function is not None and model.compiles == 1
    assert model.function.options.opt_level == 1 and model.function.options.threads == 1
    assert "dlc-block-dynamic" not in model.function.pipeline  # (an -O2 pass)
    x = random_array([5, 3], np.float32)
    np.testing.assert_array_equal(model(x)[0], np.maximum(x, 0))


def test_a_disk_hit_lowers_its_ir_again_without_machine_code(cache_dir):
    x = random_array([2, 3], np.float32)
    first = dlc.compile(relu((2, 3)), num_threads=1)
    cache.forget_all()  # (the memory level: the next compile loads the disk entry)
    hit = dlc.compile(relu((2, 3)), num_threads=1)
    assert hit is not first and hit._lowered is None
    assert hit.ir("bufferized") == first.ir("bufferized")
    np.testing.assert_array_equal(hit(x)[0], first(x)[0])


def test_a_disk_hit_of_a_torch_module_lowers_its_imported_ir_again(cache_dir):
    torch = pytest.importorskip("torch")
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    first = dlc.compile(module, example_inputs=(x,), num_threads=1)
    cache.forget_all()
    hit = dlc.compile(module, example_inputs=(x,), num_threads=1)
    assert hit is not first and hit._lowered is None
    assert hit.ir("linalg") == first.ir("linalg")
    np.testing.assert_array_equal(hit(x)[0].numpy(), first(x)[0].numpy())
