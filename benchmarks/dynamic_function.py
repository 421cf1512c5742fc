"""One compile for every value of a dynamic size (issue 22), against static compiles and
onnxruntime, in one process.

    .venv/bin/python benchmarks/dynamic_function.py [--models mlp,ffn,tower] [--sizes 1,3,...]
                                                    [--repeat N] [--out DIR]

Each model is a PyTorch module exported by the TorchScript exporter with one dynamic axis
(`dynamic_axes`): `mlp` (784-512-512-10, ReLU: the benchmark MLP) over a batch, `ffn` (a
transformer block's LayerNorm, 768-3072 GELU, 3072-768 and residual) over tokens, `tower`
(embedding bags of ids, concatenated with dense features, a 2-layer MLP) over a batch,
`scores` (a Softmax over attention scores [1, 12, S, S], S dynamic: its partial row and column
blocks at sizes off the 64-block grid, 2026-12-07: 1.2-1.4x its static compile at 64 and 128,
3.5-7x at 72-127 while their copies were the runtime's element by element; 1.9-2.7x at 16-127
with dlc-lower-copies' row copies).
`dlc.compile(path)` compiles it once (`DynamicModel.function`); at each size the row holds
the relative error against onnxruntime, the best of --repeat alternated calls (thread CPU
time) of that one compile, of a static compile for the size (`input_shapes`) and of
onnxruntime with one intra-op thread, and their ratios. dlc runs single-threaded, the compile
cache off. Rows go to OUT/dynamic_function.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("DLC_CACHE", "0")

import dlc  # noqa: E402

SIZES = [1, 3, 8, 16, 64, 100, 256, 384]


class Ffn(torch.nn.Module):
    def __init__(self, hidden: int = 768, inner: int = 3072):
        super().__init__()
        self.norm = torch.nn.LayerNorm(hidden)
        self.up, self.down = torch.nn.Linear(hidden, inner), torch.nn.Linear(inner, hidden)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Scores(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


class Tower(torch.nn.Module):
    def __init__(self, ids: int = 1000, dim: int = 32, dense: int = 64):
        super().__init__()
        self.embedding = torch.nn.Embedding(ids, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim + dense, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 64))

    def forward(self, ids, dense):
        return self.mlp(torch.cat([self.embedding(ids), dense], 1))


def model(name: str) -> tuple[torch.nn.Module, list[np.ndarray], list[str]]:
    """The module, example inputs at size 2, and the input names."""
    rng = np.random.default_rng(0)
    if name == "mlp":
        module = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                     torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                     torch.nn.Linear(512, 10))
        return module, [rng.standard_normal((2, 784)).astype(np.float32)], ["x"]
    if name == "ffn":
        return Ffn(), [rng.standard_normal((2, 768)).astype(np.float32)], ["x"]
    if name == "tower":
        return Tower(), [rng.integers(0, 1000, 2).astype(np.int64),
                         rng.standard_normal((2, 64)).astype(np.float32)], ["ids", "dense"]
    if name == "scores":
        return Scores(), [rng.standard_normal((1, 12, 2, 2)).astype(np.float32)], ["x"]
    raise SystemExit(f"unknown model {name!r}: mlp, ffn, tower, scores")


# the axes of each input (and of the output) that are the dynamic size (default: the first)
AXES = {"scores": [2, 3]}


def export(name: str, out: Path) -> tuple[Path, list[str]]:
    module, example, names = model(name)
    path = out / f"{name}_dynamic.onnx"
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), tuple(torch.from_numpy(a) for a in example), str(path),
                          dynamo=False, opset_version=17, input_names=names,
                          output_names=["output"],
                          dynamic_axes={n: {a: "size" for a in AXES.get(name, [0])}
                                        for n in [*names, "output"]})
    return path, names


def inputs_at(name: str, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    if name == "tower":
        return [rng.integers(0, 1000, size).astype(np.int64),
                rng.standard_normal((size, 64)).astype(np.float32)]
    if name == "scores":
        return [rng.standard_normal((1, 12, size, size)).astype(np.float32)]
    width = 784 if name == "mlp" else 768
    return [rng.standard_normal((size, width)).astype(np.float32)]


def best_ms(functions: list, repeat: int) -> list[float]:
    """The best thread-CPU time of `repeat` rounds of each function, alternated."""
    times = [[] for _ in functions]
    for _ in range(repeat):
        for index, function in enumerate(functions):
            start = time.thread_time()
            function()
            times[index].append(time.thread_time() - start)
    return [min(t) * 1e3 for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,ffn,tower")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out", default="build/zoo")
    args = parser.parse_args()
    import onnxruntime as ort

    rows = []
    rng = np.random.default_rng(1)
    for name in args.models.split(","):
        path, names = export(name, Path(args.out))
        start = time.perf_counter()
        compiled = dlc.compile(str(path), num_threads=1)
        seconds = time.perf_counter() - start
        print(f"{name}: {compiled!r}, compiled in {seconds:.2f} s"
              + (f" ({compiled.function_reason})" if compiled.function is None else ""))
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options)
        for size in (int(s) for s in args.sizes.split(",")):
            arrays = inputs_at(name, size, rng)
            feed = dict(zip(names, arrays))
            (got,), (want,) = compiled(*arrays), session.run(None, feed)
            error = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            static = dlc.compile(str(path), num_threads=1,
                                 input_shapes={n: list(a.shape) for n, a in feed.items()})
            dynamic_ms, static_ms, ort_ms = best_ms(
                [lambda: compiled(*arrays), lambda: static(*arrays),
                 lambda: session.run(None, feed)], args.repeat)
            row = {"model": name, "size": size, "compiles": compiled.compiles,
                   "compile_s": round(seconds, 2), "relative_error": error,
                   "dynamic_ms": round(dynamic_ms, 4), "static_ms": round(static_ms, 4),
                   "onnxruntime_ms": round(ort_ms, 4),
                   "dynamic/static": round(dynamic_ms / static_ms, 3),
                   "dynamic/onnxruntime": round(dynamic_ms / ort_ms, 3)}
            rows.append(row)
            print(f"  {size:4d}: {dynamic_ms:8.3f} ms  static {static_ms:8.3f}  onnxruntime "
                  f"{ort_ms:8.3f}  dyn/static {row['dynamic/static']:.2f}  dyn/ort "
                  f"{row['dynamic/onnxruntime']:.2f}  err {error:.1e}  compiles "
                  f"{compiled.compiles}")
    out = Path(args.out) / "dynamic_function.json"
    out.write_text(json.dumps(rows, indent=1))
    print(f"rows in {out}")


if __name__ == "__main__":
    main()
