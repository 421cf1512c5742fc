"""Integer matmul (MatMulInteger, QLinearMatMul) in dlc beside onnxruntime, single thread.

The shapes are those of BERT-base quantized dynamically by onnxruntime (`quantize_dynamic`):
A is the activation quantized per call by DynamicQuantizeLinear (uint8, a scalar zero point
that is a run-time value), B the constant int8 weight with its constant zero point. Each case
is one node; dlc (`dlc.compile(model, num_threads=1)`) and onnxruntime (one intra-op thread)
run it in this process on the same inputs, and the median of the timed runs is reported with
the ratio dlc/ort. Each output is checked against `onnx.reference` (`exact`: integer results
must be bit-exact). onnxruntime's own u8 x s8 kernel is not always exact on CPUs without
AVX-512 VNNI (its vpmaddubsw sums pairs of products in saturating 16-bit lanes): `ort exact`
says whether it matched the reference.

Run it from the repository root:

    .venv/bin/python benchmarks/int8_bench.py [--repeat 30] [--case NAME] [--json]

`DLC_CACHE=0` forces a cold compile (the compile time is printed).

`--bert LAYERS` adds the whole model: a transformers BertModel (hidden 768, 12 heads, FFN
3072, LAYERS layers, random seeded weights, no downloads) on 1x128 token ids, exported with
the TorchScript exporter (opset 17) and quantized by onnxruntime's `quantize_dynamic` (int8
weights: DynamicQuantizeLinear + MatMulInteger + Cast + Mul per Linear), cached under
`--out` (default /tmp/dlc_int8_bench). Its float outputs are compared with onnxruntime's
(max abs difference: the requantization's rounding differs where ort's u8 x s8 kernel
saturates), not exactly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import dlc
from dlc.tools.dlc_cli import time_calls

RNG = np.random.default_rng(0)


def matmul_integer(m: int, k: int, n: int, a_type=np.uint8, b_type=np.int8,
                   per_column: bool = False, batch: tuple[int, ...] = ()
                   ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """MatMulInteger(a [batch..., m, k] input, a_zero input scalar, b const [k, n], b_zero
    const: scalar, or per column when `per_column`)."""
    a_info, b_info = np.iinfo(a_type), np.iinfo(b_type)
    a = RNG.integers(a_info.min, a_info.max + 1, size=[*batch, m, k]).astype(a_type)
    b = RNG.integers(b_info.min, b_info.max + 1, size=[k, n]).astype(b_type)
    a_zero = np.array(int(a_info.min + a_info.max) // 2 + 5, a_type)
    b_zero = (RNG.integers(-4, 5, size=[n]) if per_column else np.array(3)).astype(b_type)
    tensor = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["y"], name="mmi")],
        f"matmul_integer_{m}x{k}x{n}",
        [helper.make_tensor_value_info("a", tensor(a.dtype), list(a.shape)),
         helper.make_tensor_value_info("a_zero", tensor(a_zero.dtype), [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [*batch, m, n])],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(b_zero, "b_zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"a": a, "a_zero": a_zero}


def qlinear_matmul(m: int, k: int, n: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """QLinearMatMul(a [m, k] uint8 input, constant scales, zero points and int8 B [k, n])."""
    a = RNG.integers(0, 256, size=[m, k]).astype(np.uint8)
    b = RNG.integers(-128, 128, size=[k, n]).astype(np.int8)
    constants = {"a_scale": np.array(0.02, np.float32), "a_zero": np.array(131, np.uint8),
                 "b": b, "b_scale": np.array(0.01, np.float32), "b_zero": np.array(0, np.int8),
                 "y_scale": np.array(0.9, np.float32), "y_zero": np.array(120, np.uint8)}
    graph = helper.make_graph(
        [helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero", "b", "b_scale",
                                            "b_zero", "y_scale", "y_zero"], ["y"], name="qlmm")],
        f"qlinear_matmul_{m}x{k}x{n}",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [m, n])],
        [numpy_helper.from_array(v, name) for name, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"a": a}


def conv_integer(c: int, size: int, m: int, kernel: int
                 ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """ConvInteger(x [1, c, size, size] uint8 input, x_zero input, w [m, c, k, k] constant
    int8, w_zero constant 0), pads k // 2 (a quantized ResNet layer)."""
    x = RNG.integers(0, 256, size=[1, c, size, size]).astype(np.uint8)
    w = RNG.integers(-127, 128, size=[m, c, kernel, kernel]).astype(np.int8)
    x_zero = np.array(119, np.uint8)
    pad = kernel // 2
    graph = helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "x_zero", "w_zero"], ["y"], name="convi",
                          pads=[pad] * 4)],
        f"conv_integer_{c}x{size}x{size}_{m}_{kernel}",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape)),
         helper.make_tensor_value_info("x_zero", TensorProto.UINT8, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, m, size, size])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(0, np.int8),
                                                                   "w_zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, {"x": x, "x_zero": x_zero}


CASES = {
    "MatMulInteger 128x768 @ 768x768 u8/i8": lambda: matmul_integer(128, 768, 768),
    "MatMulInteger 128x768 @ 768x3072 u8/i8": lambda: matmul_integer(128, 768, 3072),
    "MatMulInteger 1x128x3072 @ 3072x768 u8/i8": lambda: matmul_integer(128, 3072, 768,
                                                                         batch=(1,)),
    "MatMulInteger 128x768 @ 768x768 i8/i8 per-col": lambda: matmul_integer(
        128, 768, 768, np.int8, np.int8, per_column=True),
    "QLinearMatMul 128x768 @ 768x768 u8/i8": lambda: qlinear_matmul(128, 768, 768),
    "ConvInteger 3x3 64->64 56x56 u8/i8": lambda: conv_integer(64, 56, 64, 3),
    "ConvInteger 1x1 256->64 56x56 u8/i8": lambda: conv_integer(256, 56, 64, 1),
}


def bert_int8(layers: int, out: Path) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """BERT-base's encoder with `layers` layers, quantized dynamically (see the docstring)."""
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = out / f"bert_{layers}l_int8.onnx"
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 128))
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        config = transformers.BertConfig(num_hidden_layers=layers)
        bert = transformers.BertModel(config, add_pooling_layer=False).eval()

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids):
                mask = torch.ones_like(input_ids)
                return self.bert(input_ids=input_ids, attention_mask=mask).last_hidden_state

        float_path = out / f"bert_{layers}l.onnx"
        torch.onnx.export(Encoder(), (ids,), str(float_path), dynamo=False, opset_version=17,
                          input_names=["input_ids"])
        quantize_dynamic(str(float_path), str(path), weight_type=QuantType.QInt8)
    return onnx.load(str(path)), {"input_ids": ids.numpy()}


def timed(fn, repeat: int) -> float:
    """Median seconds of `repeat` calls of fn after 3 warm-up calls."""
    return statistics.median(time_calls(fn, repeat, warmup=3))


def run(name: str, repeat: int, case=None) -> dict:
    model, feeds = (case or CASES[name])()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dlc.NaivePathWarning)
        compiled = dlc.compile(model, num_threads=1)
    compile_s = time.perf_counter() - start
    naive = any(issubclass(w.category, dlc.NaivePathWarning) for w in caught)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    (ours,) = compiled(feeds)
    (theirs,) = session.run(None, feeds)
    if ours.dtype.kind == "f":  # (a whole model: compared with onnxruntime)
        exact = f"{float(np.abs(ours - theirs).max()):.3g}"
        ort_exact = "-"
    else:
        (expected,) = ReferenceEvaluator(model).run(None, feeds)
        exact = ours.dtype == expected.dtype and np.array_equal(ours, expected)
        ort_exact = theirs.dtype == expected.dtype and np.array_equal(theirs, expected)
    dlc_s = timed(lambda: compiled(feeds), repeat)
    ort_s = timed(lambda: session.run(None, feeds), repeat)
    return {"case": name, "dlc_ms": dlc_s * 1e3, "ort_ms": ort_s * 1e3,
            "ratio": dlc_s / ort_s, "exact": exact, "ort_exact": ort_exact,
            "naive_path_warning": naive,
            "compile_s": compile_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per case")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--case", action="append", choices=sorted(CASES),
                        help="only these cases (default: all)")
    parser.add_argument("--bert", type=int, default=0, metavar="LAYERS",
                        help="also the dynamically quantized BERT encoder of LAYERS layers")
    parser.add_argument("--bert-only", action="store_true", help="only the BERT model")
    parser.add_argument("--out", type=Path, default=Path("/tmp/dlc_int8_bench"),
                        help="where the exported BERT models are cached")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    names = [] if args.bert_only else (args.case or list(CASES))
    results = [run(name, args.repeat) for name in names]
    if args.bert or args.bert_only:
        layers = args.bert or 12
        results.append(run(f"BERT-base int8 (quantize_dynamic), {layers} layers",
                           args.repeat, lambda: bert_int8(layers, args.out)))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'case':48} {'dlc ms':>9} {'ort ms':>8} {'dlc/ort':>8} exact ort_exact naive "
          "compile_s")
    for r in results:
        print(f"{r['case']:48} {r['dlc_ms']:9.3f} {r['ort_ms']:8.3f} {r['ratio']:8.2f} "
              f"{r['exact']!s:5} {r['ort_exact']!s:9} {r['naive_path_warning']!s:5} "
              f"{r['compile_s']:9.2f}")


if __name__ == "__main__":
    main()
