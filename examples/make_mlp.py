"""Write the bundled example: an MLP 784-256-256-10 (MatMul/Add/Relu, then Gemm) as ONNX.

    python examples/make_mlp.py [OUT.onnx]     (default: examples/mlp.onnx)

Weights are drawn from a fixed seed, so the model is the same on every machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_mlp(batch: int = 1, sizes: tuple[int, ...] = (784, 256, 256, 10),
             seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, initializers = [], []
    x = "input"
    for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        weight = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        bias = (0.1 * rng.standard_normal(fan_out)).astype(np.float32)
        w, b = f"fc{layer}.weight", f"fc{layer}.bias"
        initializers += [numpy_helper.from_array(weight, w), numpy_helper.from_array(bias, b)]
        last = layer == len(sizes) - 2
        out = "logits" if last else f"h{layer}"
        if last:  # the classifier layer as one Gemm, as exporters write it
            nodes.append(helper.make_node("Gemm", [x, w, b], [out], name=f"fc{layer}"))
        else:
            nodes.append(helper.make_node("MatMul", [x, w], [f"{out}.mm"], name=f"fc{layer}.matmul"))
            nodes.append(helper.make_node("Add", [f"{out}.mm", b], [f"{out}.pre"],
                                          name=f"fc{layer}.bias"))
            nodes.append(helper.make_node("Relu", [f"{out}.pre"], [out], name=f"relu{layer}"))
        x = out
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, sizes[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, sizes[-1]])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="dlc-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("mlp.onnx")
    onnx.save(make_mlp(), out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
