"""Models exported with dynamic sizes, compiled once by dlc, run at several shapes beside
onnxruntime on the same dynamic model (issue 22).

    .venv/bin/python benchmarks/dynamic.py [--models bert,gpt2,resnet50] [--layers N]
                                           [--repeat N] [--out DIR] [--tiny] [--shapes 1x16,3]
                                           [--torch-compile]
    make dynamic-bench

Each model of the zoo (benchmarks/zoo.py: random weights, no downloads) is exported with the
TorchScript exporter and `dynamic_axes` (transformers: `batch` and `sequence` of the token ids
and the mask; vision: `batch`), then `dlc.compile(path)` gives one `DynamicModel` for it. At
each shape (transformers: (1, 1), (1, 16), (1, 128), (4, 384), (8, 512); vision: batch 1, 3,
8) the row holds: the first call's time (a compile when the DynamicModel needs one at that
shape, the compile cache off), the DynamicModel's compiles so far, the relative error against
onnxruntime (same tolerance as the zoo), and the best of --repeat calls of dlc's DynamicModel,
of a static compile for the shape (`input_shapes`, apart from the DynamicModel: per-shape
specializations have its code, so the ratio is the dispatch's cost; a batch run per row,
`dlc.batching`, is compared with the batched code) and of onnxruntime with one intra-op
thread, timed alternately in this process. dlc runs single-threaded. `dlc.compile`'s own
time (the cache off: the model's one compile, for every size or at batch 1 for every
sequence, when it has one) is printed and kept in the model's last row. Rows go to
OUT/dynamic.json; a failure is recorded in its row and the next shape runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # (benchmarks/zoo.py: the models and the timing helpers)

TOKEN_SHAPES = [(1, 1), (1, 16), (1, 128), (4, 384), (8, 512)]
IMAGE_BATCHES = [1, 3, 8]


def export_dynamic(name: str, setting: zoo.Setting, out: Path) -> tuple[Path, list[str]]:
    """The model exported with dynamic batch (and sequence) sizes; its input names."""
    module, inputs, names = zoo.built(name, setting)
    path = out / f"{name}_{setting.tag(zoo.ZOO[name])}_dynamic.onnx"
    tokens = zoo.ZOO[name].image == 0
    axes = {n: {0: "batch", 1: "sequence"} if tokens else {0: "batch"} for n in names}
    axes["output"] = {0: "batch", 1: "sequence"} if tokens else {0: "batch"}
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.onnx")
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, inputs, str(partial), dynamo=False,
                              opset_version=zoo.OPSET, input_names=names,
                              output_names=["output"], dynamic_axes=axes)
        partial.replace(path)
    return path, names


def feeds_for(name: str, names: list[str], shape: tuple[int, ...], rng) -> dict:
    if zoo.ZOO[name].image:
        batch, size = shape[0], zoo.ZOO[name].image
        return {names[0]: rng.standard_normal([batch, 3, size, size]).astype(np.float32)}
    batch, seq = shape
    ids = rng.integers(0, 1000, [batch, seq]).astype(np.int64)
    return {names[0]: ids, **{n: np.ones([batch, seq], np.int64) for n in names[1:]}}


def run(name: str, setting: zoo.Setting, out: Path, repeat: int,
        only: list[tuple[int, ...]] | None = None) -> list[dict]:
    import onnxruntime as ort

    import dlc
    from dlc.runtime import cache

    path, names = export_dynamic(name, setting, out)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    start = time.perf_counter()
    with cache.disabled():
        model = dlc.compile(str(path), opt_level=2, num_threads=1)
    compile_s = time.perf_counter() - start
    one = ("one compile for every size" if model.function is not None else
           "one compile at batch 1 for every sequence" if model.row_function is not None else
           f"per shape: {model.function_reason}")
    print(f"{name}: {model.signature}; {one}; dlc.compile {compile_s:.1f} s", flush=True)
    shapes = [(b,) for b in IMAGE_BATCHES] if zoo.ZOO[name].image else TOKEN_SHAPES
    if only:  # (--shapes: those of them this model takes, a batch or a batch x sequence)
        shapes = [s for s in only if len(s) == len(shapes[0])]
    rng = np.random.default_rng(0)
    rows = []
    for shape in shapes:
        row = {"model": name, "config": setting.tag(zoo.ZOO[name]), "shape": list(shape)}
        stage = "compile"
        try:
            feeds = feeds_for(name, names, shape, rng)
            start = time.perf_counter()
            with cache.disabled():
                results = model(feeds)
            row["first_call_s"] = time.perf_counter() - start
            row["compiles"] = model.compiles  # (the DynamicModel's, so far)
            # a static compile for the shape, apart from the DynamicModel (whose
            # `specialize` would count among its compiles)
            static = dlc.compile(str(path), opt_level=2, num_threads=1,
                                 input_shapes={n: a.shape for n, a in feeds.items()})
            stage = "onnxruntime"
            expected = session.run(None, feeds)
            row["rel_error"] = error = zoo.relative_error(results, expected)
            row["status"] = "ok" if error <= zoo.RTOL else f"mismatch {error:.2g}"
            stage = "timing"
            dynamic_s, static_s, ort_s = zoo.best_times(
                [lambda f=feeds: model(f), lambda s=static, f=feeds: s(f),
                 lambda f=feeds: session.run(None, f)], repeat)
            row.update(dlc_ms=dynamic_s * 1e3, static_ms=static_s * 1e3, ort_ms=ort_s * 1e3,
                       vs_static=dynamic_s / static_s, vs_ort=dynamic_s / ort_s)
        except Exception as error:  # noqa: BLE001 (the row records it; the next shape runs)
            row["status"] = zoo.failure(stage, error)
            row["traceback"] = traceback.format_exc(limit=-4)
        print(format_row(row), flush=True)
        rows.append(row)
        save(rows, out)
    row = {"model": name, "config": setting.tag(zoo.ZOO[name]), "compiles": model.compiles,
           "compile_s": compile_s, "one_compile": one,
           "rows": model.rows is not None, "rows_reason": model.rows_reason}
    print(f"{name}: {model.compiles} compile(s); "
          + ("one for every batch, run per row" if model.rows is not None
             else f"per shape: {model.rows_reason}"), flush=True)
    rows.append(row)
    return rows


TORCH_SEQUENCES = [16, 128, 384]  # (batch 1: Dynamo specializes a size of 1, so not seq 1)


def run_torch_compile(name: str, setting: zoo.Setting, repeat: int,
                      only: list[tuple[int, ...]] | None = None) -> list[dict]:
    """`torch.compile(module, backend="dlc", dynamic=True)` at several sequence lengths of
    batch 1: its first call's time (its compile, the cache off), dlc's compiles so far, the
    error against eager PyTorch; the best of --repeat calls of it, of dlc's static compile of
    the module for the shape (`dlc.compile(module, inputs)`) and of eager PyTorch (1 thread),
    alternated."""
    import dlc
    from dlc.frontends.torch import dynamo
    from dlc.runtime import cache

    module, _, names = zoo.built(name, setting)
    graphs: list = []
    original = dynamo.DynamicGraph.__init__

    def spy(self, *args, **kwargs):  # (the DynamicGraph Dynamo's graph became)
        original(self, *args, **kwargs)
        graphs.append(self)

    dynamo.DynamicGraph.__init__ = spy
    torch._dynamo.reset()
    compiled = torch.compile(module, backend="dlc", dynamic=True,
                             options={"num_threads": 1, "freeze": True})
    shapes = [s for s in only if len(s) == 2] if only else [(1, s) for s in TORCH_SEQUENCES]
    rows = []
    try:
        for batch, seq in shapes:
            row = {"model": f"{name}-torch.compile", "config": setting.tag(zoo.ZOO[name]),
                   "shape": [batch, seq]}
            stage = "torch.compile"
            try:
                ids = torch.randint(0, 1000, (batch, seq))
                inputs = (ids, *[torch.ones(batch, seq, dtype=torch.int64)] * (len(names) - 1))
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("error", dynamo.DlcFallbackWarning)
                    start = time.perf_counter()
                    with cache.disabled():
                        result = compiled(*inputs)
                    row["first_call_s"] = time.perf_counter() - start
                    row["compiles"] = sum(g.compiles for g in graphs)
                    stage = "static compile"
                    static = dlc.compile(module, example_inputs=inputs, num_threads=1)
                    expected = zoo.eager_outputs(module(*inputs))
                    row["rel_error"] = error = zoo.relative_error(
                        zoo.eager_outputs(result), expected)
                    row["status"] = "ok" if error <= zoo.RTOL else f"mismatch {error:.2g}"
                    stage = "timing"
                    dynamic_s, static_s, eager_s = zoo.best_times(
                        [lambda x=inputs: compiled(*x), lambda x=inputs, s=static: s(*x),
                         lambda x=inputs: module(*x)], repeat)
                row.update(dlc_ms=dynamic_s * 1e3, static_ms=static_s * 1e3,
                           ort_ms=eager_s * 1e3, vs_static=dynamic_s / static_s,
                           vs_ort=dynamic_s / eager_s)
            except Exception as error:  # noqa: BLE001 (the row records it; the next runs)
                row["status"] = zoo.failure(stage, error)
                row["traceback"] = traceback.format_exc(limit=-4)
            print(format_row(row).replace(" ort ", " eager ").replace("dlc/ort", "dlc/eager"),
                  flush=True)
            rows.append(row)
    finally:
        dynamo.DynamicGraph.__init__ = original
    reasons = [g.function_reason for g in graphs if g.function is None]
    print(f"{name} torch.compile(dynamic=True): {len(graphs)} graph(s), "
          f"{sum(g.compiles for g in graphs)} dlc compile(s)"
          + (f"; per shape: {reasons}" if reasons else "; each compiled once"), flush=True)
    return rows


def format_row(row: dict) -> str:
    if "dlc_ms" not in row:
        return f"{row['model']:<10} {row['shape']!s:<10} {row['status']}"
    return (f"{row['model']:<10} {row['shape']!s:<10} first call {row['first_call_s']:7.2f} s  "
            f"dlc {row['dlc_ms']:9.3f} ms  static {row['static_ms']:9.3f} ms  "
            f"ort {row['ort_ms']:9.3f} ms  dlc/static {row['vs_static']:.3f}  "
            f"dlc/ort {row['vs_ort']:.2f}  error {row['rel_error']:.1e}  compiles "
            f"{row['compiles']}  {row['status']}")


_SAVED: list[dict] = []


def save(rows: list[dict], out: Path) -> None:
    keys = {(r["model"], r["config"], tuple(r.get("shape", ()))) for r in rows}
    kept = [r for r in _SAVED if (r["model"], r["config"], tuple(r.get("shape", ())))
            not in keys]
    _SAVED[:] = kept + rows
    (out / "dynamic.json").write_text(json.dumps(_SAVED, indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="bert,gpt2,resnet50")
    parser.add_argument("--layers", type=int, help="transformers: N layers (default: all)")
    parser.add_argument("--tiny", action="store_true", help="tiny hidden sizes (smoke test)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("build/zoo"))
    parser.add_argument("--shapes", help="only these shapes: 1x16,4x384 (transformers), 3 "
                        "(vision: the batch)")
    parser.add_argument("--torch-compile", action="store_true",
                        help="transformers through torch.compile(backend='dlc', dynamic=True) "
                        "instead of ONNX, beside dlc's static compile and eager PyTorch "
                        "(batch 1; sequences 16, 128, 384 unless --shapes)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    setting = zoo.Setting(layers=args.layers, tiny=args.tiny)
    for name in args.models.split(","):
        if name not in zoo.ZOO:
            raise SystemExit(f"unknown model {name!r}; the zoo: {', '.join(zoo.ZOO)}")
        only = [tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",")] \
            if args.shapes else None
        if args.torch_compile:
            run_torch_compile(name, setting, args.repeat, only)
        else:
            run(name, setting, args.out, args.repeat, only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
