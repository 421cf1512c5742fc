"""A decoder's ONNX graph as `CausalLM` runs it: its inputs and cache pairs found
(`find_decoder`), its present outputs made the new tokens' part only (`present_as_update`), and
its logits computed for one row (`logits_at_index`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx

from dlc.errors import DlcError


class DecoderError(DlcError):
    """The model is not a decoder with a KV cache in the form `CausalLM` runs."""


@dataclass(frozen=True)
class CachePair:
    """A layer's past input and the present output that is Concat(past, new, axis)."""

    past: str
    present: str
    axis: int  # the sequence axis (non-negative)
    concat: str  # the name of the Concat node


@dataclass(frozen=True)
class DecoderSpec:
    """Which inputs and outputs of a decoder model are what."""

    input_ids: str
    attention_mask: str
    position_ids: str
    logits: str
    pairs: tuple[CachePair, ...]
    logits_index: str | None = None  # an input choosing the one position of the logits


def _producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {out: node for node in graph.node for out in node.output if out}


def _through_identities(name: str, producers: dict[str, onnx.NodeProto]) -> str:
    """The value `name` copies (through Identities and one-input Concats: exporters write
    both)."""
    while name in producers and (producers[name].op_type == "Identity" or (
            producers[name].op_type == "Concat" and len(producers[name].input) == 1)):
        name = producers[name].input[0]
    return name


def _rank(value: onnx.ValueInfoProto) -> int | None:
    tensor = value.type.tensor_type
    return len(tensor.shape.dim) if tensor.HasField("shape") else None


def find_decoder(proto: onnx.ModelProto) -> DecoderSpec:
    """The decoder's inputs, outputs and cache pairs; `DecoderError` saying what is missing."""
    graph = proto.graph
    initializers = {t.name for t in graph.initializer}
    inputs = {v.name: v for v in graph.input if v.name not in initializers}
    producers = _producers(graph)
    pairs = []
    for output in graph.output:
        node = producers.get(_through_identities(output.name, producers))
        if node is None or node.op_type != "Concat" or len(node.input) != 2:
            continue
        past = _through_identities(node.input[0], producers)
        if past not in inputs:
            continue
        rank = _rank(inputs[past])
        axis = next((a.i for a in node.attribute if a.name == "axis"), None)
        if rank is None or axis is None:
            continue
        pairs.append(CachePair(past, output.name, axis % rank, node.name or node.output[0]))
    if not pairs:
        fused = sorted({n.op_type for n in graph.node if n.op_type in (
            "Attention", "GroupQueryAttention", "MultiHeadAttention")})
        raise DecoderError(
            "found no KV cache: no graph output is a Concat of a graph input (the past) and "
            "the new keys or values; CausalLM runs decoders exported with past_key_values "
            "inputs and present outputs (optimum, torch.onnx.export, dlc.llm.export_onnx)"
            + (f"; this model's cache is inside {', '.join(fused)} nodes, which CausalLM does "
               "not rewrite yet" if fused else ""))
    cached = {p.past for p in pairs}
    presents = {p.present for p in pairs}

    def named(what: str, words: Sequence[str]) -> str:
        for name in inputs:
            if name not in cached and any(w in name for w in words):
                return name
        raise DecoderError(
            f"the model has no {what} input (an input named like {' or '.join(words)}); "
            f"CausalLM needs it to {_NEEDS[what]}; inputs: {sorted(inputs)}")

    spec_inputs = (named("input_ids", ("input_ids", "tokens")),
                   named("attention_mask", ("attention_mask",)),
                   named("position_ids", ("position_ids",)))
    others = [n for n in inputs if n not in cached and n not in spec_inputs]
    if others:
        hint = (" (optimum's merged decoder: export decoder_with_past_model.onnx, or the model "
                "with dlc.llm.export_onnx)" if "use_cache_branch" in others else "")
        raise DecoderError(f"the model has inputs CausalLM does not know how to fill: "
                           f"{others}{hint}")
    rest = [o.name for o in graph.output if o.name not in presents]
    logits = next((n for n in rest if "logits" in n), rest[0] if len(rest) == 1 else None)
    if logits is None:
        raise DecoderError(f"cannot tell the logits among the outputs {rest} (name one "
                           "'logits')")
    return DecoderSpec(*spec_inputs, logits, tuple(pairs))


_NEEDS = {
    "input_ids": "feed the tokens",
    "attention_mask": "mask the cache positions not yet written",
    "position_ids": "give each token its position (the past length it would derive it from "
                    "is the cache's capacity)",
}


def present_as_update(proto: onnx.ModelProto, spec: DecoderSpec, copy: bool = True
                      ) -> onnx.ModelProto:
    """`proto` (a copy, or itself rewritten in place with `copy=False`) whose present outputs
    are the new tokens' keys and values only: `present = Identity(new)`; the Concat keeps
    feeding the attention under another name."""
    if copy:
        proto = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = proto.graph
    producers = _producers(graph)
    outputs = {o.name: o for o in graph.output}
    for pair in spec.pairs:
        concat = producers[_through_identities(pair.present, producers)]
        renamed = concat.output[0] + "/dlc.cache_concat"
        for node in graph.node:
            for i, name in enumerate(node.input):
                if name == concat.output[0]:
                    node.input[i] = renamed
        old = concat.output[0]
        concat.output[0] = renamed
        # (the chain of Identities from the concat to the output, if any, now reads `renamed`;
        # the output itself becomes an Identity of the new part)
        chain_end = next((n for n in graph.node if pair.present in n.output), None)
        if chain_end is not None and chain_end is not concat:
            graph.node.remove(chain_end)
        graph.node.append(onnx.helper.make_node(
            "Identity", [concat.input[1]], [pair.present], name=f"dlc.cache_update/{old}"))
        shape = outputs[pair.present].type.tensor_type.shape
        if len(shape.dim) > pair.axis:
            shape.dim[pair.axis].Clear()
            shape.dim[pair.axis].dim_param = "new_tokens"
    return proto


LOGITS_INDEX = "dlc.logits_index"


def _constant_values(graph: onnx.GraphProto) -> set[str]:
    """The values computed from initializers and Constant nodes alone (a weight behind a
    DequantizeLinear, a Transpose or a Cast is one)."""
    constants = {t.name for t in graph.initializer}
    for node in graph.node:  # (in topological order, as ONNX requires)
        if node.op_type == "Constant" or (
                node.input and all(not i or i in constants for i in node.input)
                and not node.op_type.startswith("Random")):
            constants.update(node.output)
    return constants


def logits_at_index(proto: onnx.ModelProto, spec: DecoderSpec, copy: bool = True
                    ) -> tuple[onnx.ModelProto, DecoderSpec]:
    """`proto` computing the logits at one position, the input `dlc.logits_index` ([1]),
    instead of at every position (transformers' `logits_to_keep`): a prefill chunk of 128
    tokens multiplies one row by GPT-2's [768, 50257] head, not 128. Applies when the logits
    are MatMul(hidden [batch, sequence, hidden], weights) or a quantized head (MatMulNBits, or
    MatMul of constant DequantizeLinear weights), then elementwise ops with constants; the model unchanged, and the spec without the index, otherwise. A copy is
    rewritten, or `proto` itself with `copy=False`."""
    graph = proto.graph
    constants = _constant_values(graph)
    producers = _producers(graph)
    chain, node = [], producers.get(_through_identities(spec.logits, producers))
    while node is not None and node.op_type in ("Add", "Mul", "Div", "Sub") and len(
            [i for i in node.input if i not in constants]) == 1:
        chain.append(node)
        node = producers.get(next(i for i in node.input if i not in constants))
    output = next(o for o in graph.output if o.name == spec.logits)
    if (node is None or node.op_type not in ("MatMul", "MatMulNBits")
            or any(i and i not in constants for i in node.input[1:]) or _rank(output) != 3):
        return proto, spec
    if copy:
        proto = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = proto.graph
    matmul = next(n for n in graph.node if list(n.output) == list(node.output))
    gathered = matmul.input[0] + "/dlc.logits_row"
    position = list(graph.node).index(matmul)
    graph.node.insert(position, onnx.helper.make_node(
        "Gather", [matmul.input[0], LOGITS_INDEX], [gathered], axis=1,
        name="dlc.logits_row"))
    matmul.input[0] = gathered
    graph.input.append(onnx.helper.make_tensor_value_info(LOGITS_INDEX,
                                                          onnx.TensorProto.INT64, [1]))
    changed = {matmul.output[0], *(o for n in chain for o in n.output)}
    for value in [v for v in graph.value_info if v.name in changed]:
        graph.value_info.remove(value)
    shape = next(o for o in graph.output if o.name == spec.logits).type.tensor_type.shape
    shape.dim[1].Clear()
    shape.dim[1].dim_value = 1
    return proto, DecoderSpec(spec.input_ids, spec.attention_mask, spec.position_ids,
                              spec.logits, spec.pairs, LOGITS_INDEX)


def _load(model: str | Path | bytes | onnx.ModelProto) -> onnx.ModelProto:
    """The model as a ModelProto; `DecoderError` when it cannot be read as one."""
    if isinstance(model, onnx.ModelProto):
        return model
    what = "the model bytes" if isinstance(model, bytes) else f"'{model}'"
    try:
        if isinstance(model, bytes):
            return onnx.load_model_from_string(model)
        return onnx.load(str(model))
    except Exception as error:  # (protobuf's DecodeError, OSError, ...)
        raise DecoderError(f"cannot read {what} as an ONNX model: {type(error).__name__}: "
                           f"{error}") from error
