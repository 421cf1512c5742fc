"""The demo behind `make demo`: build the bundled MLP, compile it with dlc, check and time it.

Writes examples/mlp.onnx (an MLP 784-256-256-10 made by make_mlp.py), compiles it at opt
level 2, runs it on a seeded random batch, compares with onnx.reference (the ONNX project's
own reference evaluator) and prints the max abs error and dlc's latency, with onnxruntime's
beside it when it is installed.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, str(Path(__file__).parent))
import dlc  # noqa: E402
from make_mlp import make_mlp  # noqa: E402

from dlc.tools.dlc_cli import time_calls  # noqa: E402

TOLERANCE = 1e-5


def median_ms(fn, repeat: int = 200) -> float:
    return statistics.median(time_calls(fn, repeat, warmup=5)) * 1e3


def main() -> int:
    path = Path(__file__).with_name("mlp.onnx")
    onnx.save(make_mlp(), path)
    compiled = dlc.compile(path, opt_level=2)
    print(f"compiled {path.name}: {compiled.signature} in {compiled.compile_seconds:.2f} s")
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    (logits,) = compiled(x)
    (expected,) = ReferenceEvaluator(str(path)).run(None, {"input": x})
    error = float(np.max(np.abs(logits - expected)))
    print(f"max abs error vs onnx.reference: {error:.3g} (tolerance {TOLERANCE:g})")
    dlc_ms = median_ms(lambda: compiled(x))
    print(f"dlc latency: {dlc_ms:.4f} ms (median of 200 runs, batch 1)")
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        ort_ms = median_ms(lambda: session.run(None, {"input": x}))
        print(f"onnxruntime latency: {ort_ms:.4f} ms (1 thread); dlc/onnxruntime = "
              f"{dlc_ms / ort_ms:.2f}x")
    except ImportError:
        pass
    if error > TOLERANCE:
        print("FAILED: dlc's result differs from onnx.reference", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
