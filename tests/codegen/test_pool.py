"""The pooling schedule (passes/codegen/pool.py): NHWC max and sum pooling against numpy, for
shapes whose OW and C do and do not divide the tiles (modules compiled by `compile_linalg`)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.codegen.test_depthwise import compile_linalg

RNG = np.random.default_rng(0)


def pool_text(kind: str, x: tuple[int, ...], k: int, stride: int) -> tuple[str, list[int]]:
    n, h, w, c = x
    y = [n, (h - k) // stride + 1, (w - k) // stride + 1, c]
    xt, yt = f"tensor<{'x'.join(map(str, x))}xf32>", f"tensor<{'x'.join(map(str, y))}xf32>"
    init = "0xFF800000" if kind == "max" else "0.0"
    return f"""
func.func @main(%x: {xt}) -> {yt} {{
  %init = arith.constant {init} : f32
  %empty = tensor.empty() : {yt}
  %acc = linalg.fill ins(%init : f32) outs(%empty : {yt}) -> {yt}
  %window = tensor.empty() : tensor<{k}x{k}xf32>
  %0 = linalg.pooling_nhwc_{kind} {{dilations = dense<1> : tensor<2xi64>,
      strides = dense<{stride}> : tensor<2xi64>}}
      ins(%x, %window : {xt}, tensor<{k}x{k}xf32>) outs(%acc : {yt}) -> {yt}
  return %0 : {yt}
}}""", y


def pool_reference(kind: str, x: np.ndarray, k: int, stride: int, y: list[int]) -> np.ndarray:
    taps = [x[:, i:i + (y[1] - 1) * stride + 1:stride, j:j + (y[2] - 1) * stride + 1:stride, :]
            for i in range(k) for j in range(k)]
    return np.max(taps, axis=0) if kind == "max" else np.sum(taps, axis=0, dtype=np.float32)


# (kind, input NHWC, kernel, stride): 3x3 s2 with OW 16 / C 64 (tiles 8 x 32); OW 22 (split
# 16 + 6) with C 40 (split 32 + 8); OW 9 (split 8 + 1) with C 24 (split 16 + 8) and N 2
CASES = [
    ("max", (1, 33, 33, 64), 3, 2),
    ("sum", (1, 33, 33, 64), 3, 2),
    ("max", (1, 20, 23, 40), 2, 1),
    ("sum", (1, 20, 23, 40), 2, 1),
    ("max", (2, 19, 19, 24), 3, 2),
    ("max", (1, 27, 27, 32), 3, 2),  # OW 13: register tiles of 8, the last (5) peeled
    ("sum", (1, 27, 27, 32), 3, 2),
]


@pytest.mark.parametrize("kind, x_shape, k, stride", CASES, ids=lambda v: str(v))
def test_pooling_matches_numpy(kind: str, x_shape, k: int, stride: int) -> None:
    text, y_shape = pool_text(kind, x_shape, k, stride)
    model = compile_linalg(text)
    linalg_ir = model.ir("linalg")
    assert "linalg.pooling" not in linalg_ir and "vector.transfer_read" in linalg_ir
    x = RNG.standard_normal(x_shape).astype(np.float32)
    expected = pool_reference(kind, x, k, stride, y_shape)
    np.testing.assert_allclose(model(x)[0], expected, rtol=1e-5, atol=1e-5)


def test_small_pooling_keeps_the_naive_path() -> None:
    text, _ = pool_text("max", (1, 9, 9, 16), 3, 2)  # 4*4*16*9 taps < 32^3
    assert "linalg.pooling_nhwc_max" in compile_linalg(text).ir("linalg")


@pytest.mark.parametrize("kind", ["max", "sum"])
def test_pooling_runs_in_a_forall_with_its_init_fused(kind: str) -> None:
    # the accumulator's fill (-inf or 0) is computed per output tile inside the forall (in
    # cache, and on threads), not as a separate pass over the output
    text, _ = pool_text(kind, (1, 33, 33, 64), 3, 2)
    linalg_ir = compile_linalg(text).ir("linalg")
    assert "scf.forall" in linalg_ir and "linalg.fill" not in linalg_ir


@pytest.mark.parametrize("kind", ["max", "sum"])
@pytest.mark.parametrize("x_shape", [(1, 33, 33, 64), (1, 27, 27, 32)], ids=str)
def test_pooling_fuses_its_init_into_the_register_tiles(kind: str, x_shape, monkeypatch) -> None:
    # C a multiple of 16: the fill is the accumulator's first value in each [ow, c] register
    # tile (depthwise.register_fused); OW 13 takes a peeled last tile
    from dlc.passes.codegen import depthwise

    taken = []
    fused = depthwise.register_fused
    monkeypatch.setattr(depthwise, "register_fused",
                        lambda *args: taken.append(fused(*args)) or taken[-1])
    text, y = pool_text(kind, x_shape, 3, 2)
    model = compile_linalg(text)
    assert taken and all(lines is not None for lines in taken)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    np.testing.assert_allclose(model(x)[0], pool_reference(kind, x, 3, 2, y), rtol=1e-5,
                               atol=1e-5)
