"""`dlc fuzz --mutate`: valid random models mutated into invalid ones; dlc must refuse them well.

Contract:
- Case `i` of seed `s` (`generate(s, i, max_depth)`) takes `fuzz.generate`'s graph `i` (at most
  `MAX_DEPTH` ops) and applies one mutation drawn from `numpy.random.default_rng([s, i, 2])`:
  a category of `MUTATIONS` (wrong attribute values or types, unknown or dropped attributes,
  dangling, missing or extra inputs, duplicate or dangling outputs, zero/negative/absurd dims,
  initializers whose data does not match their shape, unknown ops or domains, bad opsets and IR
  versions, wrong element types, nodes out of order, cycles, truncated or bit-flipped bytes).
  The mutant is serialized bytes (what a user's file holds); its feed matches its declared
  inputs where they are small and valid, else it is the original feed.
- `run_case` compiles the bytes with `dlc.compile` at -O0 or -O3 and calls the result. Verdicts:
  "rejected" (dlc raised a DlcError whose message names something: a node, op, value,
  attribute or initializer of the model, or the opset / IR version / domain / bytes at fault),
  "agreed" (dlc answered and onnxruntime gave the same answer): both pass. Failures: "vague" (a
  DlcError naming nothing), "internal" (any exception that is no DlcError), "mismatch" (both
  answered, differently), "accepted" (dlc answered a model that onnxruntime refuses and
  `onnx.checker` rejects, or fed inputs that do not match their declaration). A worker's death
  is a crash and a time-out a hang (`fuzz.Worker`). A model that the checker accepts and
  onnxruntime refuses has no oracle: "skip"; so is one that kills onnxruntime (a segfault on a
  Min whose second input is "", onnxruntime 1.x), which runs after dlc answered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from dlc.testing import fuzz

MAX_DEPTH = 6  # small graphs: a mutation's effect stays visible and a case stays fast
BAD_INTS = (-1, -7, 0, 99, 2**40, -(2**40), 2**62)
BAD_DIMS = (0, -1, -3, 2**40, 2**62)


@dataclass
class Mutant:
    data: bytes  # the serialized mutant
    feed: dict[str, np.ndarray]
    category: str
    description: str
    level: int
    names: list[str]  # what a good error message may name (of the original and the mutant)


Mutation = Callable[[onnx.ModelProto, np.random.Generator], str | None]


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(len(items)))] if items else None


def _node(model: onnx.ModelProto, rng: np.random.Generator, having: str = "") -> onnx.NodeProto:
    nodes = [n for n in model.graph.node if not having or getattr(n, having)]
    return _pick(rng, nodes)


# ----------------------------------------------------------------------------- mutations
# Each changes `model` in place and says what it did, or returns None where it does not apply.


def attribute_value(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng, "attribute")
    if node is None:
        return None
    attr = _pick(rng, list(node.attribute))
    before = attr.SerializeToString()
    if attr.type == onnx.AttributeProto.INT:
        attr.i = int(_pick(rng, list(BAD_INTS)))
    elif attr.type == onnx.AttributeProto.INTS and attr.ints:
        roll, values = rng.random(), list(attr.ints)
        if roll < 0.5:
            values[int(rng.integers(len(values)))] = int(_pick(rng, list(BAD_INTS)))
        else:  # a list of the wrong length
            values = values[:-1] if roll < 0.75 else values + [1]
        del attr.ints[:]
        attr.ints.extend(values)
    elif attr.type == onnx.AttributeProto.FLOAT:
        attr.f = float(_pick(rng, [math.nan, math.inf, -1.0, 1e30]))
    elif attr.type == onnx.AttributeProto.STRING:
        attr.s = _pick(rng, [b"bogus", b""])
    else:
        return None
    if attr.SerializeToString() == before:  # (the bad value it drew was the value it had)
        return None
    return f"attribute '{attr.name}' of node '{node.name}' set to {helper.get_attribute_value(attr)}"


def attribute_type(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng, "attribute")
    if node is None:
        return None
    attr = _pick(rng, list(node.attribute))
    value = _pick(rng, [1.5, "x", [1, 2], 1, [0.5]])
    new = helper.make_attribute(attr.name, value)
    if new.type == attr.type:
        return None
    attr.CopyFrom(new)
    return f"attribute '{attr.name}' of node '{node.name}' given the value {value!r}"


def unknown_attribute(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng)
    node.attribute.append(helper.make_attribute("fuzz_bogus", 1))
    return f"node '{node.name}' given an unknown attribute 'fuzz_bogus'"


def dropped_attribute(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng, "attribute")
    if node is None:
        return None
    attr = _pick(rng, list(node.attribute))
    node.attribute.remove(attr)
    return f"attribute '{attr.name}' of node '{node.name}' dropped"


def dangling_input(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng)
    k = int(rng.integers(len(node.input)))
    node.input[k] = "fuzz_nowhere"
    return f"input {k} of node '{node.name}' renamed to 'fuzz_nowhere'"


def missing_input(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng)
    k = int(rng.integers(len(node.input)))
    if rng.random() < 0.5:
        node.input[k] = ""  # (the name of an omitted optional input)
        return f"input {k} of node '{node.name}' emptied"
    del node.input[k:]
    return f"inputs {k}... of node '{node.name}' dropped"


def extra_input(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng)
    node.input.append(node.input[0])
    return f"node '{node.name}' given an extra input '{node.input[0]}'"


def duplicate_output(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    graph = model.graph
    if rng.random() < 0.4:
        graph.output.append(graph.output[0])
        return f"graph output '{graph.output[0].name}' listed twice"
    node = _node(model, rng)
    names = [v.name for v in graph.input] + [o for n in graph.node for o in n.output
                                             if o != node.output[0]]
    if not names:
        return None
    node.output[0] = _pick(rng, names)
    return f"output of node '{node.name}' renamed to the existing value '{node.output[0]}'"


def dangling_output(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    output = _pick(rng, list(model.graph.output))
    old, output.name = output.name, "fuzz_nothing"
    return f"graph output '{old}' renamed to 'fuzz_nothing'"


def bad_dims(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    values = [v for v in [*model.graph.input, *model.graph.output]
              if v.type.tensor_type.shape.dim]
    value = _pick(rng, values)
    if value is None:
        return None
    dims = value.type.tensor_type.shape.dim
    if rng.random() < 0.25:  # the wrong rank
        if rng.random() < 0.5:
            del dims[-1]
        else:
            dims.add().dim_value = 2
        return f"rank of '{value.name}' changed"
    dim = dims[int(rng.integers(len(dims)))]
    dim.dim_value = int(_pick(rng, list(BAD_DIMS)))
    return f"a dim of '{value.name}' set to {dim.dim_value}"


def initializer_size(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    tensor = _pick(rng, list(model.graph.initializer))
    if tensor is None:
        return None
    roll = rng.random()
    if roll < 0.4 and tensor.raw_data:
        cut = int(rng.integers(0, len(tensor.raw_data)))
        tensor.raw_data = tensor.raw_data[:cut]
        return f"initializer '{tensor.name}' cut to {cut} bytes"
    if roll < 0.6:
        tensor.raw_data = tensor.raw_data + bytes(8)
        return f"initializer '{tensor.name}' given 8 more bytes"
    if roll < 0.8 or not tensor.dims:
        tensor.dims.append(int(_pick(rng, [2, 0, -1])))
        return f"initializer '{tensor.name}' given the dims {list(tensor.dims)}"
    tensor.dims[int(rng.integers(len(tensor.dims)))] = int(_pick(rng, list(BAD_DIMS)))
    return f"initializer '{tensor.name}' given the dims {list(tensor.dims)}"


def unknown_op(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng)
    node.op_type = _pick(rng, ["FuzzNoSuchOp", node.op_type.lower(), node.op_type + "2", ""])
    return f"node '{node.name}' given the op type '{node.op_type}'"


def unknown_domain(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    node = _node(model, rng)
    node.domain = "com.example.fuzz"
    if rng.random() < 0.5:  # imported, or not
        model.opset_import.append(helper.make_opsetid(node.domain, 1))
    return f"node '{node.name}' put in the domain '{node.domain}'"


def bad_opset(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    roll = rng.random()
    if roll < 0.2:
        del model.opset_import[:]
        return "opset imports removed"
    if roll < 0.35:
        model.opset_import.append(helper.make_opsetid("", 13))
        return "the default domain imported twice"
    version = int(_pick(rng, [0, 1, 6, 9, 10, 10000, -1]))
    model.opset_import[0].version = version
    return f"opset set to {version}"


def ir_version(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    model.ir_version = int(_pick(rng, [0, 1, 2, 3, 100, -1]))
    return f"IR version set to {model.ir_version}"


def element_type(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    value = _pick(rng, [*model.graph.input, *model.graph.output])
    old = value.type.tensor_type.elem_type
    value.type.tensor_type.elem_type = int(_pick(rng, [0, 2, 7, 8, 9, 10, 11, 999]))
    if value.type.tensor_type.elem_type == old:
        return None
    return f"element type of '{value.name}' set to {value.type.tensor_type.elem_type}"


def node_order(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    nodes = model.graph.node
    if len(nodes) < 2:
        return None
    i, j = sorted(int(k) for k in rng.choice(len(nodes), 2, replace=False))
    first, second = onnx.NodeProto(), onnx.NodeProto()
    first.CopyFrom(nodes[i])
    second.CopyFrom(nodes[j])
    nodes[i].CopyFrom(second)
    nodes[j].CopyFrom(first)
    return f"nodes {i} and {j} swapped"


def cycle(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    nodes = model.graph.node
    i = int(rng.integers(len(nodes)))
    j = int(rng.integers(i, len(nodes)))  # itself or a later node: a cycle
    nodes[i].input[int(rng.integers(len(nodes[i].input)))] = nodes[j].output[0]
    return f"node '{nodes[i].name}' reads the output of node '{nodes[j].name}'"


def empty_name(model: onnx.ModelProto, rng: np.random.Generator) -> str | None:
    if rng.random() < 0.5:
        node = _node(model, rng)
        node.output[0] = ""
        return f"output of node '{node.name}' named ''"
    value = _pick(rng, list(model.graph.input))
    old, value.name = value.name, ""
    return f"graph input '{old}' named ''"


MUTATIONS: dict[str, Mutation] = {
    "attribute value": attribute_value, "attribute type": attribute_type,
    "unknown attribute": unknown_attribute, "dropped attribute": dropped_attribute,
    "dangling input": dangling_input, "missing input": missing_input,
    "extra input": extra_input, "duplicate output": duplicate_output,
    "dangling output": dangling_output, "dims": bad_dims, "initializer size": initializer_size,
    "unknown op": unknown_op, "unknown domain": unknown_domain, "opset": bad_opset,
    "IR version": ir_version, "element type": element_type, "node order": node_order,
    "cycle": cycle, "empty name": empty_name,
}
BYTE_MUTATIONS = ("truncated bytes", "bit flips")
CATEGORIES = (*MUTATIONS, *BYTE_MUTATIONS)


def mutate_bytes(data: bytes, category: str, rng: np.random.Generator) -> tuple[bytes, str]:
    if category == "truncated bytes":
        cut = int(rng.integers(0, len(data)))
        return data[:cut], f"cut to {cut} of {len(data)} bytes"
    flipped = bytearray(data)
    count = int(rng.integers(1, 9))
    for _ in range(count):
        at = int(rng.integers(len(flipped) * 8))
        flipped[at // 8] ^= 1 << (at % 8)
    return bytes(flipped), f"{count} bits flipped"


def model_names(model: onnx.ModelProto) -> set[str]:
    """What an error message about `model` may name: nodes, ops, values, attributes."""
    graph = model.graph
    names = {x for n in graph.node for x in (n.name, n.op_type, n.domain, *n.input, *n.output)}
    names |= {a.name for n in graph.node for a in n.attribute}
    names |= {v.name for v in [*graph.input, *graph.output, *graph.initializer]}
    return {n for n in names if len(n) >= 2}


def adapted_feed(data: bytes, feed: dict[str, np.ndarray], rng: np.random.Generator
                 ) -> dict[str, np.ndarray]:
    """A feed for the mutant's declared inputs where they are small and valid; the original
    feed's arrays elsewhere (dlc must then refuse the model or the call)."""
    try:
        model = onnx.load_from_string(data)
    except Exception:  # noqa: BLE001  (bytes that do not parse: dlc must refuse them)
        return feed
    out: dict[str, np.ndarray] = {}
    for value in model.graph.input:
        tensor_type = value.type.tensor_type
        dims = [d.dim_value for d in tensor_type.shape.dim]
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
        except Exception:  # noqa: BLE001  (an unknown element type)
            dtype = None
        old = feed.get(value.name)
        if old is not None and old.dtype == dtype and list(old.shape) == dims:
            out[value.name] = old
        elif dtype is not None and dtype.kind in "biuf" and min(dims, default=0) >= 0 \
                and math.prod(dims) <= 1 << 20:
            out[value.name] = fuzz.Builder(rng).data(dims, dtype)
        elif old is not None:
            out[value.name] = old
    return out


def generate(seed: int, index: int, max_depth: int = 20) -> Mutant:
    """Case `index` of `seed`: a mutant of `fuzz.generate`'s graph `index`."""
    model, feed = fuzz.generate(seed, index, min(max_depth, MAX_DEPTH))
    rng = np.random.default_rng([seed, index, 2])
    level = int(_pick(rng, [0, 3]))
    names = model_names(model)
    while True:  # (a mutation may not apply to this graph: another one is drawn)
        category = str(_pick(rng, list(CATEGORIES)))
        if category in BYTE_MUTATIONS:
            data, description = mutate_bytes(model.SerializeToString(), category, rng)
            return Mutant(data, feed, category, description, level, sorted(names))
        mutant = onnx.ModelProto()
        mutant.CopyFrom(model)
        description = MUTATIONS[category](mutant, rng)
        if description is not None:
            data = mutant.SerializeToString()
            names |= model_names(mutant)
            return Mutant(data, adapted_feed(data, feed, rng), category, description, level,
                          sorted(names))


# ============================================================================= one case

NAMING = ("node '", "input '", "output '", "attribute '", "initializer '", "tensor '",
          "value '", "opset", "ir version", "ir_version", "domain", "not a valid onnx model",
          "not an onnx model", "field '")


def names_something(message: str, names: list[str]) -> bool:
    """Whether an error message names what is wrong: a name of the model as a word, one of
    the phrases of `NAMING`, or a position (`node #3`, `output #0`: what has no usable name)."""
    lowered = message.lower()
    if any(phrase in lowered for phrase in NAMING):
        return True
    if re.search(r"\b(node|input|output|initializer|attribute) #\d+", lowered):
        return True
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", message) for n in names)


def judge_error(error: Exception, when: str, names: list[str]) -> dict:
    from dlc.errors import DlcError

    detail = f"{when}: {type(error).__name__}: {' '.join(str(error).split())[:300]}"
    if not isinstance(error, DlcError):
        return {"status": "internal", "signature": f"internal:{type(error).__name__}",
                "detail": detail}
    if not names_something(str(error), names):
        return {"status": "vague", "signature": "vague", "detail": detail}
    return {"status": "pass", "verdict": "rejected", "detail": detail}


def _checker_accepts(data: bytes, feed: dict[str, np.ndarray]) -> bool:
    """Whether `data` is a valid model (`onnx.checker`, full) that `feed` matches."""
    try:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # noqa: BLE001
        return False
    for value in model.graph.input:
        tensor_type = value.type.tensor_type
        array = feed.get(value.name)
        if array is None or list(array.shape) != [d.dim_value for d in tensor_type.shape.dim]:
            return False
        if array.dtype != helper.tensor_dtype_to_np_dtype(tensor_type.elem_type):
            return False
    return True


def run_case(data: bytes, feed: dict[str, np.ndarray], level: int, names: list[str]) -> dict:
    """The outcome of one mutant (worker side): its status, and a passing one's verdict."""
    import dlc

    fuzz.phase("dlc")
    try:
        compiled = dlc.compile(data, opt_level=level)
    except Exception as error:  # noqa: BLE001  (judged: a DlcError naming something passes)
        return judge_error(error, f"-O{level} compile", names)
    try:
        got = compiled(feed)
    except Exception as error:  # noqa: BLE001
        return judge_error(error, f"-O{level} call", names)
    fuzz.phase("onnxruntime")  # (it segfaults on some invalid models: that is no crash of dlc)
    try:
        session = fuzz.ort_session(data)
        expected = session.run(None, feed)
    except Exception as error:  # noqa: BLE001  (onnxruntime refuses: does the checker?)
        fuzz.phase("fuzzer")
        if _checker_accepts(data, feed):
            return {"status": "skip", "detail": f"onnxruntime: {str(error).splitlines()[0]}"}
        return {"status": "accepted", "signature": "accepted",
                "detail": f"-O{level}: dlc ran a model that onnxruntime and onnx.checker "
                          f"refuse (onnxruntime: {' '.join(str(error).split())[:200]})"}
    fuzz.phase("fuzzer")
    model = onnx.load_from_string(data)
    if len(got) != len(expected):
        return {"status": "mismatch", "signature": "mismatch",
                "detail": f"-O{level}: {len(got)} outputs, onnxruntime gives {len(expected)}"}
    computed_in = fuzz.F32 if fuzz.uses_float32(model) else None
    for output, value, want in zip(model.graph.output, got, expected, strict=True):
        problem = fuzz.compare(value, np.asarray(want), computed_in)
        if problem:
            return {"status": "mismatch", "signature": "mismatch",
                    "detail": f"-O{level}: output '{output.name}': {problem}"}
    return {"status": "pass", "verdict": "agreed", "detail": ""}
