"""`dlc.backend`: dlc as an `onnx.backend.base.Backend`, the API onnxruntime.backend offers.

    import dlc.backend
    outputs = dlc.backend.run_model(model, [x])              # or prepare(model).run([x])
    onnx.backend.test.BackendTest(dlc.backend, __name__)     # the ONNX backend test suite

`prepare` checks the model and the supported op set at once; a model whose graph inputs have
static shapes is compiled there, others (a `dlc.specialize.DynamicModel`) on the first `run`
with each distinct set of input shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from dlc.compiler import CompiledModel, compile
from dlc.frontends.onnx_importer import check_supported, load_model
from dlc.frontends.onnx_node import NeedsConstantError
from dlc.specialize import DynamicModel


def _graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in initializers]


def _input_sources(model: onnx.ModelProto, name: str, inputs) -> list[str]:
    """The graph inputs among `inputs` that the value `name` is computed from (itself included).

    A value the compiler needs as a constant may be computed from graph inputs (a Loop's trip
    count from Range's inputs): specializing those inputs lets import-time folding compute it.
    """
    producers = {out: node for node in model.graph.node for out in node.output if out}
    sources, seen, stack = [], set(), [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in inputs:
            sources.append(current)
        elif current in producers:
            stack.extend(i for i in producers[current].input if i)
    return sources


def _array(value: Any) -> np.ndarray:
    """An input as numpy (the backend tests give some as TensorProto)."""
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return np.asarray(value)


class DlcRep(BackendRep):
    """A prepared model: compiled (per distinct input shapes when its inputs have dynamic
    sizes: a `dlc.specialize.DynamicModel`), run with numpy arrays.

    An input whose value the compiler needs (a Reshape's shape, Slice's starts given as a graph
    input...) is specialized: its value becomes a constant, and the model is compiled again for
    each distinct value (JIT specialization, as shapes are).
    """

    def __init__(self, model: onnx.ModelProto, opt_level: int = 2):
        self.model = model
        self.opt_level = opt_level
        self.input_names = [v.name for v in _graph_inputs(model)]
        self.output_names = [o.name for o in model.graph.output]
        self.specialized: list[str] = []  # inputs whose values are compiled in
        self._compiled: dict[tuple, CompiledModel | DynamicModel] = {}
        try:  # (a static model compiles now; a DynamicModel compiles at each new call shape)
            self._compiled[()] = compile(model, opt_level)
        except NeedsConstantError as error:
            self._specialize(error, self.input_names)  # compiled at the first run

    def _specialize(self, error: NeedsConstantError, inputs: Sequence[str]) -> None:
        sources = [name for name in _input_sources(self.model, error.input_name, inputs)
                   if name not in self.specialized]
        if not sources:
            raise error
        self.specialized.extend(sources)

    def _key(self, named: Mapping[str, np.ndarray]) -> tuple:
        return tuple((n, named[n].dtype.str, named[n].shape, named[n].tobytes())
                     for n in self.specialized)

    def compiled_for(self, named: Mapping[str, np.ndarray]) -> CompiledModel | DynamicModel:
        key = self._key(named)
        if key not in self._compiled:
            constants = {n: named[n] for n in self.specialized}
            self._compiled[key] = compile(self.model, self.opt_level, constants=constants)
        return self._compiled[key]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, Mapping):
            arrays = [_array(inputs[n]) for n in self.input_names if n in inputs]
        elif isinstance(inputs, np.ndarray):
            arrays = [inputs]
        else:
            arrays = [_array(a) for a in inputs]
        if len(arrays) != len(self.input_names):
            raise ValueError(f"expected {len(self.input_names)} inputs "
                             f"{self.input_names}, got {len(arrays)}")
        named = dict(zip(self.input_names, arrays))
        while True:
            try:  # (a DynamicModel compiles on its call: that may need constants too)
                compiled = self.compiled_for(named)
                outputs = compiled({n: named[n] for n in compiled.input_names})
                break
            except NeedsConstantError as error:
                self._specialize(error, list(named))
        return namedtupledict("Outputs", self.output_names)(*outputs)


class DlcBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> DlcRep:
        if not cls.supports_device(device):
            raise ValueError(f"dlc runs on the CPU only, not on '{device}'")
        model = load_model(model)
        check_supported(model.graph)
        return DlcRep(model, kwargs.get("opt_level", 2))

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        arrays = [_array(a) for a in inputs]
        names = [n for n in node.input if n]
        graph_inputs = [
            onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
            for name, a in zip(names, arrays)
        ]
        # output types come from ONNX shape inference (or outputs_info when given)
        outputs = [n for n in node.output if n]
        infos = list(outputs_info or [])
        graph_outputs = [
            onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(infos[i][0])),
                list(infos[i][1])) if i < len(infos) else
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None)
            for i, name in enumerate(outputs)
        ]
        graph = onnx.helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        if len(infos) < len(outputs):
            model = onnx.shape_inference.infer_shapes(model)
        return cls.prepare(model, device).run(arrays)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper().startswith("CPU")


prepare = DlcBackend.prepare
run_model = DlcBackend.run_model
run_node = DlcBackend.run_node
supports_device = DlcBackend.supports_device
