"""ResNet-50 and SqueezeNet from ONNX's light model set, with random weights.

The light models (`onnx/backend/test/data/light/light_*.onnx`, shipped with the onnx wheel)
compute their weights with ConstantOfShape nodes filling 0.02: a compiler may fold the whole
network into a constant, which measures nothing. `randomize` replaces each ConstantOfShape whose
shape is an initializer by an initializer of random values of that shape (N(0, 0.05); 1-D
tensors, which are BatchNorm scales and variances and biases, positive: |N(0, 0.05)| + 0.5),
drops the shape tensors that become unused (initializers and graph inputs) and keeps
`ir_version >= 4` (initializers need not be graph inputs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = {"resnet50": "light_resnet50.onnx", "squeezenet": "light_squeezenet.onnx"}
# the rest of the set (`bench_models.py --zoo`): name -> the benchmark's label
ZOO = {"bvlc_alexnet": "AlexNet", "densenet121": "DenseNet-121", "inception_v1": "Inception v1",
       "inception_v2": "Inception v2", "shufflenet": "ShuffleNet", "vgg19": "VGG-19",
       "zfnet512": "ZFNet-512"}
LIGHT_MODELS.update({name: f"light_{name}.onnx" for name in ZOO})


def random_weight(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    values = (rng.standard_normal(shape) * 0.05).astype(np.float32)
    return np.abs(values) + np.float32(0.5) if len(shape) == 1 else values


def randomize(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose ConstantOfShape weights are random initializers."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    rng = np.random.default_rng(seed)
    shapes = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(d) for d in shapes[node.input[0]])
            graph.initializer.append(numpy_helper.from_array(random_weight(shape, rng),
                                                             node.output[0]))
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    initializers = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    constant = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name in used and i.name not in constant]
    del graph.input[:]
    graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, 4)
    return model


def light_model(name: str, cache_dir: Path) -> Path:
    """The randomized light model `name` (a key of LIGHT_MODELS), written once to cache_dir."""
    path = cache_dir / f"{name}_random.onnx"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        model = randomize(onnx.load(LIGHT_DIR / LIGHT_MODELS[name]))
        onnx.checker.check_model(model)
        temporary = path.with_suffix(".tmp")
        onnx.save(model, temporary)
        temporary.replace(path)
    return path
