"""How fast a model can be on this CPU: its multiply-adds at the single-core FMA peak, beside
onnxruntime's time (issue 25's "<= 0.9x onnxruntime" line checked against arithmetic).

    .venv/bin/python benchmarks/peak_bound.py [MODEL.onnx ...] [--peak GFLOPS] [--repeat N]

For each model (default: the fp32 zoo exports, build/zoo/*_full.onnx): the multiply-adds of
its matmuls, gemms and convolutions as dlc imports them (grouped and depthwise convs count
their own channels), the time they take at `--peak` GFLOP/s (default: measured here, the
fastest of a 128x768x768 matmul and a 3x3 256-channel conv that dlc compiles, single
thread), onnxruntime's median single-thread time, and the bound's share of it: above 0.9, no
code reaches 0.9x onnxruntime on one core of this CPU, the other ops taking no time at all.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def macs(path: str) -> int:
    from dlc.batching import PRODUCTS, multiply_adds
    from dlc.dialects import make_context
    from dlc.frontends.onnx_importer import import_model

    context = make_context()
    with context:
        module = import_model(path, context).module
        block = module.body.operations[0].regions[0].blocks[0]
        return sum(multiply_adds(op.operation) for op in block.operations
                   if op.operation.name in PRODUCTS)


def measured_peak() -> float:
    """GFLOP/s of dlc's fastest kernels here: a 128x768x768 matmul and a 3x3 conv."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import dlc

    rng = np.random.default_rng(0)
    cases = [
        ([helper.make_node("MatMul", ["x", "w"], ["y"])], [128, 768],
         rng.standard_normal([768, 768]), 128 * 768 * 768),
        ([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [1, 256, 14, 14],
         rng.standard_normal([256, 256, 3, 3]) * 0.05, 14 * 14 * 256 * 256 * 9),
    ]
    best = 0.0
    for nodes, shape, weight, count in cases:
        graph = helper.make_graph(nodes, "peak", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, shape)], [helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(weight.astype(np.float32), "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        compiled = dlc.compile(onnx.ModelProto.FromString(model.SerializeToString()),
                               num_threads=1)
        x = rng.standard_normal(shape).astype(np.float32)
        fastest = min(_time(lambda c=compiled, x=x: c(x)) for _ in range(50))
        best = max(best, 2 * count / fastest / 1e9)
    return best


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ort_ms(path: str, repeat: int) -> float:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for value in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in value.shape]
        if "int" in value.type:
            feeds[value.name] = np.ones(shape, np.int64)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    session.run(None, feeds)
    return statistics.median(_time(lambda: session.run(None, feeds)) for _ in range(repeat)) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--peak", type=float, help="GFLOP/s (default: measured)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    models = args.models or sorted(str(p) for p in Path("build/zoo").glob("*_full.onnx"))
    peak = args.peak or measured_peak()
    print(f"peak {peak:.1f} GFLOP/s (1 thread)")
    print(f"{'model':<28} {'GFLOP':>7} {'at peak ms':>10} {'ort ms':>8} {'bound/ort':>9}")
    for path in models:
        count = macs(path)
        bound = 2 * count / peak / 1e6
        ort = ort_ms(path, args.repeat)
        print(f"{Path(path).stem:<28} {2 * count / 1e9:7.2f} {bound:10.1f} {ort:8.1f} "
              f"{bound / ort:9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
