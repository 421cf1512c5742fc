"""Weight-only quantized matmuls: onnxruntime's MatMulNBits (4 and 8 bits, block sizes 16 to
128, packed, float or default zero points, bias, odd N, K not a multiple of the block) and
MatMul of a DequantizeLinear of int4/uint4/int8 weights (blocked, per column), against
onnxruntime; the compiled module holds no float copy of the weights; malformed nodes are
FrontendErrors naming the node."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, numpy_helper

import dlc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from weight_only import dequantize_matmul_model, matmul_nbits_model, ort_session, run

ort = pytest.importorskip("onnxruntime")


def _check(model, shape, rtol=2e-5, atol=2e-5, optimize=True):
    a = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    expected = ort_session(model, optimize=optimize).run(None, {"A": a})[0]
    (got,) = dlc.compile(model, num_threads=1)(a)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol * scale)


# (M, K, N, bits, block_size, zero points, bias)
CASES = [
    (1, 64, 48, 4, 16, "packed", False),
    (1, 200, 35, 4, 32, "packed", True),  # K not a multiple of the block, odd N
    (3, 256, 40, 4, 64, None, False),  # default zero point 8
    (4, 130, 17, 4, 128, "float", True),  # one partial block, float zero points
    (5, 96, 33, 8, 32, "packed", False),  # a row block of 4 and a tail of 1
    (2, 100, 16, 8, 16, None, True),  # default zero point 128
    (9, 64, 30, 8, 64, "packed", False),
]


@pytest.mark.parametrize("m, k, n, bits, block, zero_points, bias", CASES)
def test_matmul_nbits_matches_onnxruntime(m, k, n, bits, block, zero_points, bias):
    model = matmul_nbits_model(m, k, n, bits, block, zero_points, bias)
    _check(model, [m, k])


def test_matmul_nbits_8_bits_float_zero_points():
    # (onnxruntime's CPU kernel refuses 8-bit weights with float zero points: numpy's product
    # of the dequantized weights is the reference)
    model = matmul_nbits_model(3, 80, 20, 8, 16, "float")
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    q = values["B"].reshape(20, -1)[:, :80].astype(np.float32)  # [N, K]
    per_k = np.repeat(np.arange(5), 16)[:80]
    scales = values["scales"].reshape(20, 5)[:, per_k]
    zero = values["zero_points"].reshape(20, 5)[:, per_k]
    a = np.random.default_rng(7).standard_normal([3, 80]).astype(np.float32)
    expected = a.astype(np.float64) @ ((q - zero) * scales).T.astype(np.float64)
    (got,) = dlc.compile(model, num_threads=1)(a)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_matmul_nbits_batched_a():
    # A [batch, sequence, K] (the form of the LLM exports) is flattened and reshaped back
    model = matmul_nbits_model([2, 3, 64], 64, 24, 4, 32, "packed", True)
    _check(model, [2, 3, 64])


@pytest.mark.parametrize("m, k, n, bits, block", [
    (37, 128, 64, 4, 32),  # one chunk of whole blocks
    (13, 600, 40, 4, 32),  # two chunks of 256 rows, then 2 blocks and 24 rows
    (20, 300, 33, 8, 128),  # one chunk, then a partial block of 44 rows
    (9, 512, 16, 4, 16),
    (20, 512, 64, 4, 32),  # two whole chunks of a group of 4 panels (one scratch buffer each)
    (12, 768, 48, 8, 32),  # three chunks, a group of 3
    (130, 2048, 40, 4, 32),  # (AVX-512: A in 2 blocks of 65 rows, the weights read twice)
])
def test_prefill_rows(m, k, n, bits, block):
    # more than 8 rows: the kernel dequantizes chunks of K into a scratch (codegen)
    model = matmul_nbits_model(m, k, n, bits, block, "packed", True)
    _check(model, [m, k])


@pytest.mark.parametrize("element, block, zero_point", [
    (TensorProto.INT4, 32, True),
    (TensorProto.UINT4, 16, True),
    (TensorProto.INT4, 64, False),
    (TensorProto.INT8, 32, True),
    (TensorProto.UINT8, 0, True),  # per column
    (TensorProto.INT8, 0, False),
])
def test_dequantize_matmul_matches_onnxruntime(element, block, zero_point):
    # (onnxruntime's graph rewrites would compute it with A quantized to int8: unoptimized,
    # its result is onnx.reference's)
    model = dequantize_matmul_model(3, 96, 40, element, block, zero_point)
    _check(model, [3, 96], optimize=False)


CONSTANT = re.compile(r"constant.*: (?:tensor|memref)<([0-9x]+)x(f32|i8|ui8)>")


def _constant_elements(text: str) -> dict[str, int]:
    """The elements of the IR's f32 and 8-bit constants (tensors at `linalg`, globals at
    `bufferized`), by element type."""
    total = {"f32": 0, "i8": 0}
    for line in text.splitlines():
        found = CONSTANT.search(line)
        if found and "dense<" in line:  # (a definition, not a memref.get_global)
            size = int(np.prod([int(d) for d in found.group(1).split("x")]))
            total["f32" if found.group(2) == "f32" else "i8"] += size
    return total


@pytest.mark.parametrize("model, bits", [
    (matmul_nbits_model(1, 256, 64, 4, 32), 4),
    (dequantize_matmul_model(1, 256, 64, TensorProto.INT4, 32), 4),
    (dequantize_matmul_model(1, 256, 64, TensorProto.INT8, 0), 8),
], ids=["matmul_nbits", "dequantize_int4", "dequantize_int8_per_column"])
def test_no_float_copy_of_the_weights(model, bits):
    # K x N = 256 x 64 weights: the packed codes (K * N * bits / 8 bytes) and a byte zero point
    # and an f32 scale per block and column, never K * N floats: the compiled weights take no
    # more bytes than the model's own (its initializers) plus a few percent
    compiled = dlc.compile(model, num_threads=1)
    assert "dlc.matmul_nbits" in compiled.ir("dlc")
    blocks = 256 // 32 if bits == 4 else 1
    model_bytes = sum(numpy_helper.to_array(t).nbytes * (0.5 if t.data_type in
                                                          (TensorProto.INT4, TensorProto.UINT4)
                                                          else 1)
                      for t in model.graph.initializer)
    for stage in ("linalg", "bufferized"):
        sizes = _constant_elements(compiled.ir(stage))
        assert sizes["i8"] == 256 * 64 * bits // 8 + blocks * 64, (stage, sizes)
        assert sizes["f32"] == blocks * 64, (stage, sizes)
        assert sizes["i8"] + 4 * sizes["f32"] <= 1.05 * model_bytes, (stage, sizes, model_bytes)


@pytest.mark.parametrize("overrides, message", [
    ({"bits": 3}, "bits=3 is not supported"),
    ({"B": np.zeros([64, 2, 8], np.uint8)}, "B must be uint8"),
    ({"g_idx": np.zeros([64], np.int32)}, "g_idx"),
    ({"block_size": 24}, "block_size must be a power of 2"),
    ({"K": 32}, "A's last dimension must be K = 32"),
    ({"scales": np.ones([5], np.float32)}, "scales must be float"),
    ({"zero_points": np.zeros([3], np.uint8)}, "packed uint8 zero_points"),
])
def test_malformed_matmul_nbits_is_a_frontend_error(overrides, message):
    model = matmul_nbits_model(1, 64, 64, 4, 32)
    node = model.graph.node[0]
    for name, value in overrides.items():
        if isinstance(value, int):
            next(a for a in node.attribute if a.name == name).i = value
            continue
        if name == "g_idx":
            node.input.append("g_idx")
            node.input[3:] = ["zero_points", "g_idx"]
        kept = [t for t in model.graph.initializer if t.name != name]
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept + [numpy_helper.from_array(value, name)])
    with pytest.raises(dlc.FrontendError, match=message) as raised:
        dlc.compile(model, num_threads=1)
    assert "'matmul_nbits' (MatMulNBits)" in str(raised.value)


def test_unknown_contrib_op_is_listed_with_its_domain():
    model = matmul_nbits_model(1, 64, 64, 4, 32)
    model.graph.node[0].op_type = "MatMulNBitsX"
    with pytest.raises(dlc.UnsupportedOpsError, match="com.microsoft.MatMulNBitsX"):
        dlc.compile(model, num_threads=1)


@pytest.mark.parametrize("m", [2, 20])
def test_matmul_nbits_on_two_threads(m):
    # the panels (groups of panels for prefill) are the scf.forall's iterations: OpenMP
    # threads share them
    model = matmul_nbits_model(m, 128, 72, 4, 32)
    a = np.random.default_rng(3).standard_normal([m, 128]).astype(np.float32)
    expected = ort_session(model).run(None, {"A": a})[0]
    (got,) = dlc.compile(model, num_threads=2)(a)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-4)


def test_matmul_nbits_float16():
    # T1 = float16 (A, scales, bias, Y): computed in f32, A cast up and the result down
    model = matmul_nbits_model(2, 64, 24, 4, 32, "packed", True)
    graph = model.graph
    for value in list(graph.input) + list(graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    halved = []
    for tensor in graph.initializer:
        array = numpy_helper.to_array(tensor)
        array = array.astype(np.float16) if array.dtype == np.float32 else array
        halved.append(numpy_helper.from_array(array, tensor.name))
    del graph.initializer[:]
    graph.initializer.extend(halved)
    a = np.random.default_rng(7).standard_normal([2, 64]).astype(np.float16)
    expected = ort_session(model).run(None, {"A": a})[0]
    (got,) = dlc.compile(model, num_threads=1)(a)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32),
                               rtol=2e-3, atol=2e-3 * float(np.abs(expected).max()))


def test_the_benchmark_runs(capsys):
    (row,) = run(["--rows", "1", "--shapes", "64x32", "--bits", "4", "--repeat", "1"])
    assert row["dlc"] > 0 and row["ort"] > 0 and row["ort_int8"] > 0
    assert "| 1 | 64 x 32 | 4 |" in capsys.readouterr().out


@pytest.mark.parametrize("cpu", ["avx2", "avx512"])
@pytest.mark.parametrize("m, k, n, bits", [(1, 200, 35, 4), (3, 96, 33, 8), (20, 600, 40, 4),
                                           (13, 520, 64, 8)])
def test_kernel_of_each_target(cpu, m, k, n, bits):
    # the AVX2 kernel (vectors of 8 f32) and the AVX-512 one (vectors of 16, an 8 x 32 tile)
    # whatever the host (both run on an AVX-512 CPU)
    from dlc.passes.codegen import target
    from dlc.passes.codegen.matmul_nbits import kernel_text

    lanes = target.named(cpu).lanes
    fmas = [line for line in kernel_text(m, k, n, bits, 32, lanes=lanes).splitlines()
            if "vector.fma" in line]
    assert fmas and all(line.endswith(f"vector<{lanes}xf32>") for line in fmas)
    with target.use(cpu):
        _check(matmul_nbits_model(m, k, n, bits, 32, "packed", True), [m, k])
