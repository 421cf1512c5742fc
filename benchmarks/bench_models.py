"""Side-by-side benchmarks: dlc against onnxruntime (models) and numpy (kernels), one process.

    make bench      (or: .venv/bin/python benchmarks/bench_models.py [--repeat N] [--large]
                     [--markdown] [-k NAME])

Single thread everywhere: OPENBLAS_NUM_THREADS=1 is set before numpy loads, onnxruntime runs
with intra_op_num_threads=1. Each case is compiled once (cache disabled, so the compile time is
real), warmed up, then dlc and the peer are timed alternately; the table gives the median
latencies, the ratio dlc / peer (lower is better, 1.0 = parity), dlc's GFLOP/s where defined,
the compile time, and the time of a cached recompile (from the disk cache, memory level
emptied). The last line is the process's peak resident memory.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import dlc  # noqa: E402
from dlc.runtime import cache  # noqa: E402
from make_mlp import make_mlp  # noqa: E402

RNG = np.random.default_rng(0)


@dataclass
class Row:
    name: str
    peer: str
    dlc_s: float
    peer_s: float
    flops: float | None
    compile_s: float
    cached_s: float


def graph_model(nodes, inputs: dict[str, list[int]], outputs: dict[str, list[int]],
                name: str) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def matmul_model(n: int) -> onnx.ModelProto:
    return graph_model([helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")],
                       {"a": [n, n], "b": [n, n]}, {"c": [n, n]}, f"matmul{n}")


def elementwise_model(size: int) -> onnx.ModelProto:
    # exp(relu((a + b) * c)): one fused, vectorized loop with a polynomial exp
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "c"], ["m"]),
             helper.make_node("Relu", ["m"], ["r"]), helper.make_node("Exp", ["r"], ["y"])]
    return graph_model(nodes, {"a": [size], "b": [size], "c": [size]}, {"y": [size]},
                       "elementwise")


def alternate(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median seconds of each fn, timed alternately after a warm-up."""
    for fn in fns:
        for _ in range(3):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def onnxruntime_session(model: onnx.ModelProto):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def compile_timed(model: onnx.ModelProto) -> tuple[dlc.CompiledModel, float, float]:
    """The compiled model, its compile time (cache off) and a cached recompile's time."""
    with cache.disabled():
        start = time.perf_counter()
        compiled = dlc.compile(model)
        compile_s = time.perf_counter() - start
    cache.save(cache.model_key(model.SerializeToString(), 2, None, None),
               compiled._function.dump_object, compiled.signature)
    cache.forget_all()
    start = time.perf_counter()
    dlc.compile(model)
    return compiled, compile_s, time.perf_counter() - start


def bench_model(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray],
                repeat: int) -> Row:
    compiled, compile_s, cached_s = compile_timed(model)
    session = onnxruntime_session(model)
    args = list(inputs.values())
    dlc_s, peer_s = alternate([lambda: compiled(*args), lambda: session.run(None, inputs)],
                              repeat)
    return Row(name, "onnxruntime", dlc_s, peer_s, None, compile_s, cached_s)


def bench_kernel(name: str, model: onnx.ModelProto, args: list[np.ndarray],
                 peer: Callable[[], object], flops: float | None, repeat: int) -> Row:
    compiled, compile_s, cached_s = compile_timed(model)
    (result,) = compiled(*args)
    expected = peer()
    np.testing.assert_allclose(result, expected, rtol=2e-3, atol=2e-3 * np.abs(expected).max())
    dlc_s, peer_s = alternate([lambda: compiled(*args), peer], repeat)
    return Row(name, "numpy", dlc_s, peer_s, flops, compile_s, cached_s)


def conv_model(channels: int, size: int, weight: np.ndarray) -> onnx.ModelProto:
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    model = graph_model([node], {"x": [1, channels, size, size]},
                        {"y": [1, channels, size, size]}, "conv")
    model.graph.initializer.append(onnx.numpy_helper.from_array(weight, "w"))
    return model


def im2col_conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """numpy's 3x3 'same' convolution: im2col (a strided view, copied) then one sgemm."""
    _, c, h, w = x.shape
    padded = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
    columns = windows.transpose(0, 3, 4, 1, 2).reshape(c * 9, h * w)  # (copies)
    return (weight.reshape(weight.shape[0], -1) @ columns).reshape(1, -1, h, w)


def bench_conv(channels: int, size: int, repeat: int) -> Row:
    # a ResNet-50 3x3 layer, stride 1, C -> C channels, constant filter
    weight = (RNG.standard_normal((channels, channels, 3, 3)) / (3 * channels**0.5))
    weight = weight.astype(np.float32)
    x = RNG.standard_normal((1, channels, size, size)).astype(np.float32)
    flops = 2 * channels * channels * 9 * size * size
    return bench_kernel(f"conv 3x3 {channels}x{size}x{size} (ResNet-50)",
                        conv_model(channels, size, weight), [x],
                        lambda: im2col_conv(x, weight), flops, repeat)


def cases(repeat: int, large: bool):
    """(name, thunk making a Row) of every benchmark case."""
    for batch in (1, 64):
        x = RNG.standard_normal((batch, 784)).astype(np.float32)
        yield (f"MLP 784-256-256-10, batch {batch}",
               lambda b=batch, x=x: bench_model(f"MLP 784-256-256-10, batch {b}",
                                                make_mlp(batch=b), {"input": x}, repeat))
    for n in (256, 512, 1024) + ((2048,) if large else ()):
        a, b = (RNG.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        yield (f"matmul {n}^3 f32",
               lambda n=n, a=a, b=b: bench_kernel(f"matmul {n}^3 f32", matmul_model(n), [a, b],
                                                  lambda: a @ b, 2 * n**3,
                                                  max(5, repeat // (n // 128))))
    for channels, size in ((64, 56), (128, 28), (256, 14), (512, 7)):
        yield (f"conv 3x3 {channels}x{size}x{size}",
               lambda c=channels, h=size: bench_conv(c, h, max(5, repeat // 5)))
    size = 1 << 22
    a, b, c = (RNG.standard_normal(size).astype(np.float32) for _ in range(3))
    yield ("exp(relu((a+b)*c)) 4M f32",
           lambda: bench_kernel("exp(relu((a+b)*c)) 4M f32", elementwise_model(size),
                                [a, b, c], lambda: np.exp(np.maximum((a + b) * c, 0)), None,
                                max(5, repeat // 5)))


def print_table(rows: list[Row], markdown: bool) -> None:
    header = ["case", "peer", "dlc ms", "peer ms", "dlc/peer", "dlc GFLOP/s", "compile s",
              "cached s"]
    lines = []
    for r in rows:
        gflops = f"{r.flops / r.dlc_s / 1e9:.1f}" if r.flops else "-"
        lines.append([r.name, r.peer, f"{r.dlc_s * 1e3:.3f}", f"{r.peer_s * 1e3:.3f}",
                      f"{r.dlc_s / r.peer_s:.2f}", gflops, f"{r.compile_s:.2f}",
                      f"{r.cached_s:.3f}"])
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|---|" + "---:|" * (len(header) - 2))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(x) for x in column) for column in zip(header, *lines)]
        for line in [header, *lines]:
            print("  ".join(x.ljust(w) if i < 2 else x.rjust(w)
                            for i, (x, w) in enumerate(zip(line, widths))))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory of the process: {peak:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--large", action="store_true", help="also matmul 2048^3")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("-k", dest="filter", default="", help="only cases whose name has this")
    args = parser.parse_args()
    os.environ.setdefault("DLC_CACHE_DIR", tempfile.mkdtemp(prefix="dlc-bench-cache-"))
    rows = []
    for name, run in cases(args.repeat, args.large):
        if args.filter in name:
            rows.append(run())
            print(f"  done: {name}", file=sys.stderr)
    print_table(rows, args.markdown)


if __name__ == "__main__":
    main()
