"""Importers of unary math and activations: each becomes one `dlc.unary {fn, params}`.

`UNARY_FNS` maps an ONNX op type to its dlc fn and the ONNX defaults of the attributes that
become the fn's params (named as in `dialects/unary.py`, in the order given there). These
attributes are the same in every opset from 7 on (opset 6 dropped `consumed_inputs`); Gelu's
`approximate` picks the fn. Dropout is compiled for inference: the identity, and an all-true
mask (of the data's type before opset 10, bool since) when its second output is used."""

from __future__ import annotations

import numpy as np
from mlir import ir

from dlc.dialects import ops
from dlc.dialects.unary import FUNCTIONS, UNARY
from dlc.frontends.onnx_node import Importer, NodeContext

# ONNX op -> (dlc fn, ONNX defaults of the attributes that are the fn's params)
UNARY_FNS: dict[str, tuple[str, dict[str, float]]] = {
    "Abs": ("abs", {}),
    "Neg": ("neg", {}),
    "Sign": ("sign", {}),
    "Reciprocal": ("reciprocal", {}),
    "Floor": ("floor", {}),
    "Ceil": ("ceil", {}),
    "Round": ("round", {}),
    "Exp": ("exp", {}),
    "Log": ("log", {}),
    "Sqrt": ("sqrt", {}),
    "Erf": ("erf", {}),
    "Sin": ("sin", {}),
    "Cos": ("cos", {}),
    "Tan": ("tan", {}),
    "Asin": ("asin", {}),
    "Acos": ("acos", {}),
    "Atan": ("atan", {}),
    "Sinh": ("sinh", {}),
    "Cosh": ("cosh", {}),
    "Tanh": ("tanh", {}),
    "Asinh": ("asinh", {}),
    "Acosh": ("acosh", {}),
    "Atanh": ("atanh", {}),
    "Sigmoid": ("sigmoid", {}),
    "HardSigmoid": ("hard_sigmoid", {"alpha": 0.2, "beta": 0.5}),
    "HardSwish": ("hard_swish", {}),
    "Elu": ("elu", {"alpha": 1.0}),
    "Selu": ("selu", {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}),
    "Celu": ("celu", {"alpha": 1.0}),
    "LeakyRelu": ("leaky_relu", {"alpha": 0.01}),
    "ThresholdedRelu": ("thresholded_relu", {"alpha": 1.0}),
    "Softplus": ("softplus", {}),
    "Softsign": ("softsign", {}),
    "Mish": ("mish", {}),
    "Swish": ("swish", {"alpha": 1.0}),
    "Shrink": ("shrink", {"bias": 0.0, "lambd": 0.5}),
    "Not": ("not", {}),
    "BitwiseNot": ("bitwise_not", {}),
    "IsNaN": ("isnan", {}),
    "IsInf": ("isinf", {"detect_positive": 1, "detect_negative": 1}),
}

GELU_FNS = {"none": "gelu", "tanh": "gelu_tanh"}


def _unary(fn: str, defaults: dict[str, float]) -> Importer:
    def import_unary(n: NodeContext) -> list[ir.Value]:
        # Elu{alpha}(x) -> dlc.unary{fn="elu", params=[alpha]}(x)
        # ONNX float attributes are float32: defaults are rounded alike (0.2 -> 0.2000000030)
        params = [float(np.float32(n.attr(name, defaults[name])))
                  for name in FUNCTIONS[fn].params]
        return [n.build(UNARY, n.inputs[:1], {"fn": fn, "params": params})]

    return import_unary


def import_gelu(n: NodeContext) -> list[ir.Value]:
    # Gelu{approximate}(x) -> dlc.unary{fn="gelu" | "gelu_tanh"}(x)
    approximate = n.attr("approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate not in GELU_FNS:
        raise n.error(f"approximate must be 'none' or 'tanh', got '{approximate}'")
    return [n.build(UNARY, n.inputs[:1], {"fn": GELU_FNS[approximate], "params": []})]


def _training(n: NodeContext) -> bool:
    """Whether a Dropout drops anything: training_mode set and a non-zero ratio."""
    if n.opset < 12 or len(n.inputs) < 3 or n.inputs[2] is None:
        return False
    if not n.constant_input(2, "training_mode").reshape(-1)[0]:
        return False
    if len(n.inputs) < 2 or n.inputs[1] is None:
        return True  # the default ratio, 0.5
    return bool(n.constant_input(1, "ratio").reshape(-1)[0] != 0)


def import_dropout(n: NodeContext) -> list[ir.Value]:
    # Dropout(x) -> x, and an all-true mask (inference)
    x = n.inputs[0]
    if _training(n):
        raise n.error("training_mode is true with a non-zero ratio: dlc compiles inference "
                      "only, where Dropout is the identity (set training_mode to false)")
    if len(n.node.output) < 2 or not n.node.output[1]:
        return [x]
    element = ir.IntegerType.get_signless(1) if n.opset >= 10 else x.type.element_type
    mask_type = ir.RankedTensorType.get(list(x.type.shape), element)
    one = ir.IntegerAttr.get(element, 1) if n.opset >= 10 else ir.FloatAttr.get(element, 1.0)
    mask = ir.DenseElementsAttr.get_splat(mask_type, one)
    return [x, n.build(ops.CONSTANT, [], {"value": mask})]


IMPORTERS: dict[str, Importer] = {
    **{op_type: _unary(fn, defaults) for op_type, (fn, defaults) in UNARY_FNS.items()},
    "Gelu": import_gelu,
    "Dropout": import_dropout,
}
