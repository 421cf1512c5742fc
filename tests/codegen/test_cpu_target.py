"""The register tiles follow the target CPU (`dlc.passes.codegen.target`, issue 18): AVX-512 ->
8 x 32 matmul tiles, AVX2/FMA -> 4 x 16 (8 x 32 spills AVX2's 16 ymm registers), and the
convs', depthwise convs' and pools' likewise, a function of the feature flags; each target's code compiles and computes the same numbers on this machine
(the IR is target-independent vectors: LLVM legalizes 16-lane vectors on an AVX2 host), the
pass option and dlc-opt's flag pin it, and the compile cache keys it.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from onnx import helper

import dlc
from dlc.dialects import make_context
from dlc.passes import build_pass_manager
from dlc.passes.codegen import matmul, target
from dlc.runtime import cache
from tests.conftest import make_model

RNG = np.random.default_rng(18)
# /proc/cpuinfo flags of an AVX2 AMD EPYC and of an AVX-512 Xeon (abridged)
AVX2_FLAGS = ["fpu", "sse", "sse2", "ssse3", "fma", "sse4_1", "sse4_2", "avx", "f16c", "avx2",
              "bmi1", "bmi2"]
AVX512_FLAGS = [*AVX2_FLAGS, "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"]


@pytest.mark.parametrize("features, expected", [
    (AVX512_FLAGS, target.AVX512),
    (AVX2_FLAGS, target.AVX2),
    (["sse4.1", "sse4.2", "avx", "avx2", "fma", "avx512f"], target.AVX512),  # (gcc's names)
    (["sse4.2", "avx", "avx2", "fma"], target.AVX2),
    (["sse2", "sse4_2", "avx"], target.DEFAULT),  # no AVX2: the tile dlc always had
    (["avx2"], target.DEFAULT),  # (AVX2 without FMA)
    ([], target.DEFAULT),
], ids=["avx512", "avx2", "gcc-avx512", "gcc-avx2", "avx", "avx2-no-fma", "none"])
def test_each_feature_set_gives_its_tile(features: list[str], expected: target.CpuTarget) -> None:
    assert target.from_features(features) == expected


def test_tiles() -> None:
    assert target.AVX512.matmul_tile == (8, 32) and target.DEFAULT == target.AVX512
    assert target.AVX2.matmul_tile == (4, 16)
    for chosen in target.TARGETS.values():  # the accumulators, a B vector per column block
        mr, nr = chosen.matmul_tile  # and a broadcast fit the registers
        assert mr * nr // chosen.lanes + nr // chosen.lanes + 1 <= chosen.registers
        assert mr != nr  # (equal inner tiles hit the LLVM 22 miscompile, PERF.md)


def test_use_pins_the_target_and_host_is_the_default() -> None:
    assert target.current() == target.host() == target.named("host")
    with target.use("avx2"):
        assert target.current() == target.AVX2 and matmul.pack_tile() == (4, 16)
        with target.use(target.AVX512):
            assert matmul.register_limits() == (8, 32) and matmul.padded_rows(197) == 200
        assert matmul.padded_rows(197) == 200 and matmul.padded_rows(198) == 200
    assert target.current() == target.host()
    with pytest.raises(ValueError, match="unknown CPU target 'avx9'"):
        target.named("avx9")


def test_the_cache_key_names_the_target() -> None:
    keys = set()
    for name in ("avx512", "avx2"):
        with target.use(name):
            keys.add(cache.model_key(b"model", 2, None, None))
            assert cache.model_key(b"model", 2, None, None) in keys  # (deterministic)
    assert len(keys) == 2


def _model():
    """A packed matmul with M padded (197 rows: ViT), a plain one with remainders in M and N
    and an epilogue, a batch matmul."""
    m, k, n = 197, 128, 768
    w1, w2 = RNG.standard_normal((k, n)).astype(np.float32), RNG.standard_normal(
        (n, 40)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("MatMul", ["h", "w2"], ["p"]),
             helper.make_node("Relu", ["p"], ["y"]),
             helper.make_node("MatMul", ["q", "kt"], ["s"])]
    model = make_model(nodes, {"x": (np.float32, [m, k]), "q": (np.float32, [12, 50, 64]),
                               "kt": (np.float32, [12, 64, 50])}, ["y", "s"],
                       initializers={"w1": w1, "w2": w2})
    return model, w1, w2


@pytest.mark.parametrize("name", ["avx512", "avx2"])
def test_each_target_compiles_and_runs_correctly(name: str) -> None:
    model, w1, w2 = _model()
    with target.use(name):
        mr, nr = target.named(name).matmul_tile
        compiled = dlc.compile(model)
        linalg = compiled.ir("linalg")
    assert f"fastmath<contract> : vector<{mr}x{nr}xf32>" in linalg  # the packed kernel
    assert f"tensor<{-(-197 // mr)}x128x{mr}xf32>" in linalg  # A padded to its rows
    other = target.AVX2 if name == "avx512" else target.AVX512
    assert "vector<{}x{}xf32>".format(*other.matmul_tile) not in linalg
    x = RNG.standard_normal((197, 128)).astype(np.float32)
    q = RNG.standard_normal((12, 50, 64)).astype(np.float32)
    kt = RNG.standard_normal((12, 64, 50)).astype(np.float32)
    y, s = compiled(x, q, kt)
    expected = np.maximum((x @ w1) @ w2, 0)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5 * float(np.abs(expected).max()))
    np.testing.assert_allclose(s, q @ kt, rtol=1e-4, atol=1e-4)


def test_the_pass_option_pins_the_target() -> None:
    text = """
    func.func @f(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>)
        -> tensor<16x64xf32> {
      %0 = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>)
                         outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
      return %0 : tensor<16x64xf32>
    }"""
    for name, tile in (("avx512", "8x32"), ("avx2", "4x16")):
        with make_context():
            module = ir.Module.parse(text)
            build_pass_manager(f"builtin.module(dlc-schedule{{target={name}}})").run(
                module.operation)
            assert f"vector<{tile}xf32>" in str(module)
    with make_context():
        module = ir.Module.parse(text)
        with pytest.raises(ir.MLIRError, match="unknown target 'avx9'"):
            build_pass_manager("builtin.module(dlc-schedule{target=avx9})").run(
                module.operation)


def test_conv_tiles() -> None:
    from dlc.passes.codegen import conv_common, packed_conv

    with target.use("avx512"):
        assert packed_conv.blocks() == (32, 16) and conv_common.register_widths() == (32, 16)
        assert conv_common.ow_register(56, 32) == (8, False)
        assert conv_common.ow_parts(14, 32) == [14] and conv_common.ow_register(14, 32)[0] == 7
    with target.use("avx2"):
        assert packed_conv.blocks() == (16,) and conv_common.register_widths() == (16, 8)
        assert packed_conv.block_of(64) == 16 and packed_conv.padded(1000) == 1008
        assert conv_common.ow_register(56, 16) == (4, False)  # (56 = 14 x 4: no 5 or 6)
        assert conv_common.ow_register(14, 16) == (6, True)  # (14 = 12 + 2, the 2 peeled)
        assert conv_common.filter_parts(24) == [24] and conv_common.filter_tile(24) == 8


@pytest.mark.parametrize("name", ["avx512", "avx2"])
@pytest.mark.parametrize("c, h, f, kernel, stride", [
    (16, 14, 64, 3, 1),  # packed: OW 14 (avx2: 12 + 2)
    (24, 13, 48, 1, 1),  # packed, 16-wide blocks, OW 13
    (16, 13, 1000, 1, 1),  # packed, F padded
    (8, 15, 24, 3, 2),  # plain (strided 3x3), F 24
    (8, 9, 88, 3, 2),  # plain, F 88 (avx512: parts 64, 16 and 8)
], ids=str)
def test_each_target_runs_convs_correctly(name: str, c: int, h: int, f: int, kernel: int,
                                          stride: int) -> None:
    from tests.codegen.test_conv_packed import single_conv
    from tests.conftest import MATMUL_TOLERANCES, run_both

    model = single_conv(c, h, h, f, kernel, stride, kernel // 2)
    with target.use(name):
        run_both(model, [RNG.standard_normal((1, c, h, h)).astype(np.float32)],
                 tolerances=MATMUL_TOLERANCES)


def test_depthwise_and_pool_channel_tiles() -> None:
    from dlc.passes.codegen import depthwise

    with target.use("avx512"):
        assert depthwise.c_widths() == (32, 16) and depthwise.c_tile(48) == 16
    with target.use("avx2"):
        assert depthwise.c_widths() == (16, 8)
        assert depthwise.c_tile(64) == 16 and depthwise.c_tile(40) == 8


@pytest.mark.parametrize("name", ["avx512", "avx2"])
@pytest.mark.parametrize("x_shape", [(1, 18, 18, 32), (1, 14, 13, 40), (2, 17, 17, 24)],
                         ids=str)
def test_each_target_runs_depthwise_convs_correctly(name: str, x_shape) -> None:
    from tests.codegen.test_depthwise import compile_linalg, depthwise_reference, depthwise_text

    text, y_shape = depthwise_text(x_shape, 3, 1, 1)
    with target.use(name):
        model = compile_linalg(text)
        assert "vector.fma" in model.ir("linalg")
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal((3, 3, x_shape[3])).astype(np.float32)
    b = RNG.standard_normal(y_shape).astype(np.float32)
    expected = depthwise_reference(x, w, b, 1, 1)
    np.testing.assert_allclose(model(x, w, b)[0], expected, rtol=1e-5, atol=1e-5)
