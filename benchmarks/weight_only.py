"""Weight-only quantized matmuls (int4, int8) beside onnxruntime, in one process, one thread.

    .venv/bin/python benchmarks/weight_only.py [--repeat 20] [--threads 1] [--rows 1,128]

Each row is onnxruntime's contrib op MatMulNBits (A [M, K] f32 times B quantized in blocks of
32 along K, with zero points) compiled by dlc (`dlc.matmul_nbits`: the weights stay packed and
are dequantized in registers; f32 arithmetic whatever the node's accuracy_level) and run by
onnxruntime (its MLAS kernels) twice: with `accuracy_level` 0 (f32 compute, the attribute's
default) and 4 (A quantized to int8 per block, integer dot products: what onnxruntime-genai's
CPU int4 exports ask for, and what its DequantizeLinear + MatMul fusion uses), for decode (M =
1) and prefill (M = 128; `--rows 1,128,1024` adds long prompts). Times are the best of
`--repeat` rounds, each round running dlc and the two onnxruntime sessions in turn
(`--cpu-time`: the process's CPU time, steadier on a shared machine); the ratios are dlc /
onnxruntime (< 1: dlc is faster).

The module also builds the test models (tests/ops/test_matmul_nbits.py): `quantize_blocks`,
`matmul_nbits_model` and `dequantize_matmul_model`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPES = [(768, 768), (768, 3072), (4096, 4096)]  # (K, N)
ROWS = [1, 128]
BITS = [4, 8]
BLOCK = 32


def quantize_blocks(w: np.ndarray, bits: int, block: int, zero_points: bool = True
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """w [K, N] -> (q [K, N] uint8 < 2^bits, scales [NB, N] f32, zero points [NB, N] uint8),
    asymmetric min/max per block of `block` rows (symmetric, zero point 2^(bits-1), without)."""
    k, n = w.shape
    blocks = -(-k // block)
    padded = np.zeros([blocks * block, n], np.float32)
    padded[:k] = w
    grouped = padded.reshape(blocks, block, n)
    top = (1 << bits) - 1
    if zero_points:
        low = np.minimum(grouped.min(1), 0)
        high = np.maximum(grouped.max(1), 0)
        scale = np.where(high > low, (high - low) / top, 1.0).astype(np.float32)
        zero = np.clip(np.round(-low / scale), 0, top).astype(np.uint8)
    else:
        scale = (np.abs(grouped).max(1) / (1 << (bits - 1))).astype(np.float32)
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        zero = np.full(scale.shape, 1 << (bits - 1), np.uint8)
    q = np.clip(np.round(grouped / scale[:, None]) + zero[:, None], 0, top).astype(np.uint8)
    return q.reshape(blocks * block, n)[:k], scale, zero


def pack_low_first(values: np.ndarray, bits: int) -> np.ndarray:
    """[rows, count] values -> [rows, ceil(count * bits / 8)] uint8, low bits first."""
    values = values.astype(np.uint8)
    if bits == 8:
        return values
    if values.shape[1] % 2:
        values = np.concatenate([values, np.zeros([values.shape[0], 1], np.uint8)], axis=1)
    return values[:, 0::2] | (values[:, 1::2] << 4)


def matmul_nbits_model(m: int | list[int], k: int, n: int, bits: int = 4, block: int = 32,
                       zero_points: str | None = "packed", bias: bool = False, seed: int = 0,
                       accuracy_level: int = 0) -> onnx.ModelProto:
    """One MatMulNBits node: A [m, K] (or the shape `m` ending in K) f32, random weights
    quantized per block; zero_points "packed" (uint8, as B), "float" (the scales' type) or None
    (the default 2^(bits-1))."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal([k, n]).astype(np.float32)
    q, scale, zero = quantize_blocks(w, bits, block, zero_points is not None)
    blocks = scale.shape[0]
    padded = np.zeros([blocks * block, n], np.uint8)
    padded[:k] = q
    b = pack_low_first(padded.T, bits).reshape(n, blocks, block * bits // 8)
    initializers = {"B": b, "scales": np.ascontiguousarray(scale.T).reshape(-1)}
    if zero_points == "packed":
        initializers["zero_points"] = pack_low_first(np.ascontiguousarray(zero.T), bits).reshape(-1)
    elif zero_points == "float":
        initializers["zero_points"] = np.ascontiguousarray(zero.T).astype(np.float32)
    if bias:
        initializers["bias"] = rng.standard_normal(n).astype(np.float32)
    names = ["A", "B", "scales", "zero_points", "g_idx", "bias"]
    inputs = [name if name == "A" or name in initializers else "" for name in names]
    while inputs[-1] == "":
        inputs.pop()
    attrs = {"K": k, "N": n, "bits": bits, "block_size": block, "accuracy_level": accuracy_level}
    node = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft",
                            name="matmul_nbits", **attrs)
    shape = list(m) if isinstance(m, list) else [m, k]
    graph = helper.make_graph(
        [node], "weight_only", [helper.make_tensor_value_info("A", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape[:-1] + [n])],
        [numpy_helper.from_array(value, name) for name, value in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10)


def dequantize_matmul_model(m: int, k: int, n: int, element: int = TensorProto.INT4,
                            block: int = 32, zero_point: bool = True, seed: int = 0
                            ) -> onnx.ModelProto:
    """MatMul(A [m, K], DequantizeLinear(W [K, N] of `element`, scale, zero point)) (opset 21):
    blocked along K (axis 0) by `block`, or per column (axis 1) when `block` is 0."""
    rng = np.random.default_rng(seed)
    signed = element in (TensorProto.INT4, TensorProto.INT8)
    bits = 4 if element in (TensorProto.INT4, TensorProto.UINT4) else 8
    low = -(1 << (bits - 1)) if signed else 0
    high = low + (1 << bits) - 1
    w = rng.integers(low, high + 1, size=[k, n])
    scale_shape = [-(-k // block), n] if block else [n]
    scale = (rng.random(scale_shape) * 0.1 + 0.01).astype(np.float32)
    zero = rng.integers(low, high + 1, size=scale_shape)
    initializers = [helper.make_tensor("W", element, [k, n], w.reshape(-1).tolist()),
                    numpy_helper.from_array(scale, "scale")]
    inputs = ["W", "scale"]
    if zero_point:
        initializers.append(helper.make_tensor("zero", element, scale_shape,
                                               zero.reshape(-1).tolist()))
        inputs.append("zero")
    attrs = {"axis": 0, "block_size": block} if block else {"axis": 1}
    nodes = [helper.make_node("DequantizeLinear", inputs, ["Wf"], name="dq", **attrs),
             helper.make_node("MatMul", ["A", "Wf"], ["Y"], name="matmul")]
    graph = helper.make_graph(
        nodes, "dq_matmul", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def ort_session(model: onnx.ModelProto, threads: int = 1, optimize: bool = True):
    """An onnxruntime CPU session; `optimize=False` disables its graph rewrites (which fuse
    DequantizeLinear + MatMul into a MatMulNBits that quantizes A to int8: 1e-2 errors)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def best(fn: Callable[[], object], repeat: int) -> float:
    return interleaved([fn], repeat)[0]


def interleaved(fns: list[Callable[[], object]], repeat: int, clock=time.perf_counter
                ) -> list[float]:
    """The best time of each function over `repeat` rounds, each round calling them in turn
    (on a shared machine, a busy moment slows all of them, not one)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, spent in zip(fns, times):
            start = clock()
            fn()
            spent.append(clock() - start)
    return [min(spent) for spent in times]


def run(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--shapes", default=",".join(f"{k}x{n}" for k, n in SHAPES))
    parser.add_argument("--rows", default=",".join(map(str, ROWS)))
    parser.add_argument("--bits", default=",".join(map(str, BITS)))
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with the process's CPU time (time.process_time), not the "
                             "wall clock: steadier where other processes share the cores")
    args = parser.parse_args(argv)
    import dlc

    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    print(f"MatMulNBits, block {BLOCK}, zero points, {args.threads} thread(s); best of "
          f"{args.repeat} (M = 1) or {max(3, args.repeat // 4)} runs, ms; onnxruntime with "
          "accuracy_level 0 (f32 compute) and 4 (A quantized to int8)")
    print("| M | K x N | bits | dlc | ort acc 0 | dlc / ort 0 | ort acc 4 | dlc / ort 4 |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for m in (int(x) for x in args.rows.split(",")):
        for k, n in shapes:
            for bits in (int(x) for x in args.bits.split(",")):
                a = np.random.default_rng(1).standard_normal([m, k]).astype(np.float32)
                repeat = max(3, args.repeat if m == 1 else args.repeat // 4)
                compiled = dlc.compile(matmul_nbits_model(m, k, n, bits, BLOCK),
                                       num_threads=args.threads)
                fns = [lambda c=compiled, x=a: c(x)]
                for level in (0, 4):
                    session = ort_session(matmul_nbits_model(m, k, n, bits, BLOCK,
                                                             accuracy_level=level),
                                          args.threads)
                    fns.append(lambda s=session, x=a: s.run(None, {"A": x}))
                clock = time.process_time if args.cpu_time else time.perf_counter
                mine, *peers = interleaved(fns, repeat, clock)
                rows.append({"m": m, "k": k, "n": n, "bits": bits, "dlc": mine,
                             "ort": peers[0], "ort_int8": peers[1]})
                print(f"| {m} | {k} x {n} | {bits} | {mine * 1e3:.3f} | {peers[0] * 1e3:.3f} | "
                      f"{mine / peers[0]:.2f} | {peers[1] * 1e3:.3f} | {mine / peers[1]:.2f} |",
                      flush=True)
    return rows


if __name__ == "__main__":
    run()
