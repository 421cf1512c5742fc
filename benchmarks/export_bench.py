"""Exported library vs JIT (issue 23): latency of both on the same inputs (single-threaded,
median of --repeat runs), the exported library's load time (dlopen + session, in a fresh
process) and whether the outputs are identical.

    python benchmarks/export_bench.py MODEL.onnx EXPORT_DIR [--repeat 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

LOAD = """
import time
from dlc.runtime import loader
t = time.perf_counter()
model = loader.load({folder!r})
print(time.perf_counter() - t)
"""


def median_seconds(function, inputs, repeat: int) -> float:
    function(*inputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(*inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("folder")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    import dlc
    from dlc.runtime import loader

    exported = loader.load(args.folder)
    jit = dlc.compile(args.model, num_threads=1)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s.shape).astype(s.dtype) for s in exported.signature.inputs]
    same = all(np.array_equal(a, b) for a, b in zip(exported(*inputs), jit(*inputs)))
    loads = [float(subprocess.run([sys.executable, "-c", LOAD.format(folder=args.folder)],
                                  capture_output=True, text=True, check=True).stdout)
             for _ in range(5)]
    t_jit = median_seconds(jit, inputs, args.repeat)
    t_exp = median_seconds(exported, inputs, args.repeat)
    t_jit2 = median_seconds(jit, inputs, args.repeat)  # (again: drift on a shared machine)
    t_jit = min(t_jit, t_jit2)
    print(f"identical outputs: {same}")
    print(f"JIT {t_jit * 1e3:.3f} ms, exported {t_exp * 1e3:.3f} ms, "
          f"ratio {t_exp / t_jit:.3f}")
    print(f"load (dlopen + signature + session, in a fresh process, dlc.runtime.loader imported): "
          f"median {statistics.median(loads) * 1e3:.1f} ms of {len(loads)}")


if __name__ == "__main__":
    main()
