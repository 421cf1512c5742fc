"""Side-by-side benchmarks: dlc against onnxruntime (models) and numpy (kernels), one process.

    make bench            (or: .venv/bin/python benchmarks/bench_models.py [--repeat N])

Each case is compiled once, warmed up, then dlc and the peer are timed alternately; the table
gives median latencies and the ratio dlc / peer (lower is better, 1.0 = parity). Single thread
for the peers (onnxruntime intra_op_num_threads=1; numpy under the default OpenBLAS setting).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import dlc  # noqa: E402
from make_mlp import make_mlp  # noqa: E402


def matmul_model(n: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")], f"matmul{n}",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for batch in (1, 64):
        model = make_mlp(batch=batch)
        compiled = dlc.compile(model)
        x = rng.standard_normal((batch, 784)).astype(np.float32)
        session = onnxruntime_session(model)
        dlc_s, peer_s = alternate([lambda: compiled(x), lambda: session.run(None, {"input": x})],
                                  args.repeat)
        rows.append((f"MLP 784-256-256-10, batch {batch}", "onnxruntime", dlc_s, peer_s, None))
    for n in (256, 512):
        compiled = dlc.compile(matmul_model(n))
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        dlc_s, peer_s = alternate([lambda: compiled(a, b), lambda: a @ b],
                                  max(5, args.repeat // 10))
        rows.append((f"matmul {n}x{n}x{n} f32", "numpy", dlc_s, peer_s, 2 * n**3))
    print(f"{'case':<34} {'peer':<12} {'dlc ms':>10} {'peer ms':>10} {'dlc/peer':>9} "
          f"{'dlc GFLOP/s':>12}")
    for name, peer, dlc_s, peer_s, flops in rows:
        gflops = f"{flops / dlc_s / 1e9:.1f}" if flops else "-"
        print(f"{name:<34} {peer:<12} {dlc_s * 1e3:>10.3f} {peer_s * 1e3:>10.3f} "
              f"{dlc_s / peer_s:>9.2f} {gflops:>12}")


if __name__ == "__main__":
    main()
