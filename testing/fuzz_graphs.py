"""`dlc fuzz`'s random graphs: case `i` of seed `s` is a random valid ONNX graph (opset 18) drawn
from `numpy.random.default_rng([s, i])` (`generate`), the same on any machine. A graph chains
1 to `max_depth` steps over a pool of values (graph inputs of rank 1 to 4, float32, float64,
int32 or int64), each step one of `GENERATORS` (elementwise unary and binary ops with
broadcasting, MatMul/Gemm, Conv/pooling, reductions, Softmax, Transpose/Reshape/Concat/Slice/
Flatten/Unsqueeze/Expand/Pad, Cast, comparisons and Where, Clip), values finite by construction.
Running and judging the cases is `fuzz.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

OPSET = 18
F32, F64, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64,
                                                  np.bool_))
FLOATS = (F32, F64)
INTS = (I32, I64)

# ============================================================================= graph generator


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    exact: bool  # a graph input or constant: comparisons and rounding on it cannot tie


@dataclass
class Builder:
    """A graph under construction: nodes, graph inputs (with their data), initializers."""

    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    pool: list[Value] = field(default_factory=list)
    count: int = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def data(self, shape, dtype: np.dtype, low: float = -3, high: float = 3) -> np.ndarray:
        if dtype == BOOL:
            return self.rng.integers(0, 2, shape).astype(BOOL)
        if dtype in INTS:
            return self.rng.integers(int(low) * 3, int(high) * 3 + 1, shape).astype(dtype)
        return self.rng.uniform(low, high, shape).astype(dtype)

    def add_input(self, shape, dtype: np.dtype) -> Value:
        value = Value(self.name("in"), tuple(shape), dtype, True)
        self.inputs[value.name] = self.data(shape, dtype)
        self.pool.append(value)
        return value

    def const(self, array: np.ndarray, prefix: str = "c") -> str:
        name = self.name(prefix)
        self.initializers[name] = np.asarray(array)
        return name

    def operand(self, shape, dtype: np.dtype, low: float = -3, high: float = 3) -> str:
        """A new graph input or initializer of `shape`."""
        if self.rng.random() < 0.5:
            return self.const(self.data(shape, dtype, low, high), "w")
        value = Value(self.name("in"), tuple(shape), dtype, True)
        self.inputs[value.name] = self.data(shape, dtype, low, high)
        return value.name

    def node(self, op: str, inputs: list[str], shape, dtype: np.dtype, exact: bool = False,
             **attributes) -> Value:
        value = Value(self.name("v"), tuple(int(d) for d in shape), dtype, exact)
        self.nodes.append(helper.make_node(op, inputs, [value.name], name=f"{op}_{value.name}",
                                           **attributes))
        self.pool.append(value)
        return value

    def pick(self, dtypes=None, min_rank: int = 0, ranks=None, exact: bool = False) -> Value | None:
        """A random value of the pool, preferring recent ones (deep graphs)."""
        fits = [v for v in self.pool if (dtypes is None or v.dtype in dtypes)
                and len(v.shape) >= min_rank and (ranks is None or len(v.shape) in ranks)
                and (v.exact or not exact)]
        if not fits:
            return None
        weights = np.arange(1, len(fits) + 1, dtype=np.float64) ** 2
        return fits[self.rng.choice(len(fits), p=weights / weights.sum())]

    def choice(self, items):
        return items[self.rng.integers(len(items))]


def random_shape(rng: np.random.Generator, rank: int | None = None) -> tuple[int, ...]:
    rank = int(rng.integers(1, 5)) if rank is None else rank
    return tuple(int(d) for d in rng.integers(1, 6, rank))


def broadcast_partner(b: Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` to `shape`: leading dims dropped, some set to 1."""
    keep = int(b.rng.integers(0, len(shape) + 1))
    partner = list(shape[len(shape) - keep:])
    return tuple(1 if b.rng.random() < 0.3 else d for d in partner)


# ----------------------------------------------------------------------------- op generators

SAFE_UNARY = ("Relu", "Abs", "Neg", "Tanh", "Sigmoid", "Sin", "Cos", "Erf", "Softsign",
              "Softplus", "Atan", "Identity", "HardSwish")
PERIODIC = ("Sin", "Cos")
PARAM_UNARY = {"LeakyRelu": {"alpha": (0.01, 0.5)}, "Elu": {"alpha": (0.1, 2.0)},
               "HardSigmoid": {"alpha": (0.1, 0.5), "beta": (0.2, 0.8)},
               "Selu": {"alpha": (1.0, 2.0), "gamma": (0.5, 1.5)}, "Celu": {"alpha": (0.5, 2.0)}}


def gen_unary(b: Builder) -> Value | None:
    v = b.pick(FLOATS)
    if v is None:
        return None
    roll = b.rng.random()
    if roll < 0.5:
        op = b.choice(SAFE_UNARY)
        if op in PERIODIC:  # of a bounded value: sin(800) amplifies the last-ulp rounding of
            # a float32 sum (summation order) into a 4e-4 error, a mismatch that is no bug
            v = b.node("Tanh", [v.name], v.shape, v.dtype)
        return b.node(op, [v.name], v.shape, v.dtype)
    if roll < 0.7:
        op = b.choice(list(PARAM_UNARY))
        attrs = {k: float(b.rng.uniform(*r)) for k, r in PARAM_UNARY[op].items()}
        if op == "Celu" and v.dtype != F32:
            op, attrs = "Elu", {"alpha": attrs["alpha"]}
        return b.node(op, [v.name], v.shape, v.dtype, **attrs)
    if roll < 0.8:  # Exp of a bounded value
        t = b.node("Tanh", [v.name], v.shape, v.dtype)
        return b.node("Exp", [t.name], v.shape, v.dtype)
    if roll < 0.9:  # Log(|x| + 1), Sqrt(|x|)
        a = b.node("Abs", [v.name], v.shape, v.dtype)
        if b.rng.random() < 0.5:
            return b.node("Sqrt", [a.name], v.shape, v.dtype)
        one = b.const(np.ones((), v.dtype))
        s = b.node("Add", [a.name, one], v.shape, v.dtype)
        return b.node("Log", [s.name], v.shape, v.dtype)
    exact = b.pick(FLOATS, exact=True)
    if exact is None:
        return None
    return b.node(b.choice(("Floor", "Ceil", "Round", "Sign")), [exact.name], exact.shape,
                  exact.dtype)


def gen_integer_unary(b: Builder) -> Value | None:
    v = b.pick(INTS)
    if v is None:
        return None
    return b.node(b.choice(("Abs", "Neg", "Identity")), [v.name], v.shape, v.dtype, v.exact)


def gen_binary(b: Builder) -> Value | None:
    v = b.pick()
    if v is None or v.dtype == BOOL:
        return None
    ops = ["Add", "Sub", "Mul", "Max", "Min"] + (["Div"] if v.dtype in FLOATS else [])
    op = b.choice(ops)
    others = [w for w in b.pool if w.dtype == v.dtype and w is not v and
              _broadcasts(w.shape, v.shape)]
    if op != "Div" and others and b.rng.random() < 0.4:
        other = b.choice(others).name
        other_shape = next(w.shape for w in others if w.name == other)
    else:
        other_shape = broadcast_partner(b, v.shape)
        low = 0.5 if op == "Div" else -3
        other = b.operand(other_shape, v.dtype, low=low, high=2)
        if op == "Div":  # divisors away from zero, of both signs
            sign = b.const(b.choice([np.ones((), v.dtype), -np.ones((), v.dtype)]))
            other = b.node("Mul", [other, sign], other_shape, v.dtype, True).name
    shape = np.broadcast_shapes(v.shape, other_shape)
    operands = [v.name, other] if b.rng.random() < 0.5 or op == "Div" else [other, v.name]
    if op in ("Max", "Min") and b.rng.random() < 0.3:  # variadic form
        third = b.operand(broadcast_partner(b, tuple(shape)), v.dtype)
        operands.append(third)
    return b.node(op, operands, shape, v.dtype)


def _broadcasts(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    if len(small) > len(big):
        return False
    return all(s in (1, d) for s, d in zip(small[::-1], big[::-1]))


def gen_matmul(b: Builder) -> Value | None:
    v = b.pick(FLOATS, min_rank=1)
    if v is None:
        return None
    k, n = v.shape[-1], int(b.rng.integers(1, 7))
    if len(v.shape) == 2 and b.rng.random() < 0.4:
        return _gemm(b, v, n)
    if len(v.shape) >= 2 and b.rng.random() < 0.3:  # a batched right operand
        batch = v.shape[-3] if len(v.shape) >= 3 else int(b.rng.integers(1, 4))
        w = b.operand((batch, k, n), v.dtype, -1, 1)
        shape = np.broadcast_shapes(v.shape[:-2], (batch,)) + (v.shape[-2], n)
        return b.node("MatMul", [v.name, w], shape, v.dtype)
    w = b.operand((k, n), v.dtype, -1, 1)
    return b.node("MatMul", [v.name, w], v.shape[:-1] + (n,), v.dtype)


def _gemm(b: Builder, v: Value, n: int) -> Value:
    trans_a, trans_b = int(b.rng.integers(2)), int(b.rng.integers(2))
    m, k = v.shape[::-1] if trans_a else v.shape
    w = b.operand((n, k) if trans_b else (k, n), v.dtype, -1, 1)
    inputs = [v.name, w]
    if b.rng.random() < 0.7:
        inputs.append(b.operand(b.choice([(n,), (1, n), (m, n), (m, 1), ()]), v.dtype))
    return b.node("Gemm", inputs, (m, n), v.dtype, transA=trans_a, transB=trans_b,
                  alpha=float(b.rng.uniform(0.5, 1.5)), beta=float(b.rng.uniform(0.5, 1.5)))


def _window(b: Builder, size: int, allow_dilation: bool,
            allow_pads: bool = True) -> tuple[int, int, int, int, int]:
    """(kernel, stride, dilation, pad_begin, pad_end) with an output size >= 1."""
    while True:
        kernel, stride = int(b.rng.integers(1, 4)), int(b.rng.integers(1, 3))
        dilation = int(b.rng.integers(1, 3)) if allow_dilation else 1
        pads = [int(p) for p in b.rng.integers(0, kernel, 2)] if allow_pads else [0, 0]
        if size + sum(pads) - dilation * (kernel - 1) - 1 >= 0:
            return kernel, stride, dilation, pads[0], pads[1]


def _out(size, kernel, stride, dilation, pad0, pad1) -> int:
    return (size + pad0 + pad1 - dilation * (kernel - 1) - 1) // stride + 1


def gen_conv(b: Builder) -> Value | None:
    v = b.pick((F32,), ranks=(3, 4))  # (onnxruntime has no float64 Conv or pooling)
    if v is None:
        return None
    n, c, *spatial = v.shape
    groups = b.choice([g for g in range(1, c + 1) if c % g == 0])
    m = groups * int(b.rng.integers(1, 3))
    windows = [_window(b, s, True) for s in spatial]
    kernel = [w[0] for w in windows]
    weight = b.operand((m, c // groups, *kernel), v.dtype, -1, 1)
    inputs = [v.name, weight] + ([b.operand((m,), v.dtype)] if b.rng.random() < 0.5 else [])
    shape = (n, m, *[_out(s, *w) for s, w in zip(spatial, windows)])
    return b.node("Conv", inputs, shape, v.dtype, kernel_shape=kernel, group=groups,
                  strides=[w[1] for w in windows], dilations=[w[2] for w in windows],
                  pads=[w[3] for w in windows] + [w[4] for w in windows])


def gen_pool(b: Builder) -> Value | None:
    v = b.pick((F32,), ranks=(3, 4))
    if v is None:
        return None
    n, c, *spatial = v.shape
    if b.rng.random() < 0.2:
        op = b.choice(("GlobalAveragePool", "GlobalMaxPool"))
        return b.node(op, [v.name], (n, c, *[1] * len(spatial)), v.dtype)
    op = b.choice(("MaxPool", "AveragePool"))
    # (a dilated window may hold only padding: onnxruntime then gives -FLT_MAX, dlc -inf)
    padded = op == "AveragePool" or b.rng.random() < 0.5
    windows = [_window(b, s, op == "MaxPool" and not padded, padded) for s in spatial]
    attrs = {"kernel_shape": [w[0] for w in windows], "strides": [w[1] for w in windows],
             "pads": [w[3] for w in windows] + [w[4] for w in windows]}
    if op == "MaxPool":
        attrs["dilations"] = [w[2] for w in windows]
    else:
        attrs["count_include_pad"] = int(b.rng.integers(2))
    shape = (n, c, *[_out(s, *w) for s, w in zip(spatial, windows)])
    return b.node(op, [v.name], shape, v.dtype, **attrs)


REDUCE_FLOAT = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
                "ReduceSumSquare", "ReduceLogSumExp")
REDUCE_INT = ("ReduceSum", "ReduceMax", "ReduceMin")


def gen_reduce(b: Builder) -> Value | None:
    v = b.pick(min_rank=1)
    if v is None or v.dtype == BOOL:
        return None
    op = b.choice(REDUCE_FLOAT if v.dtype in FLOATS else REDUCE_INT)
    rank = len(v.shape)
    axes = sorted(int(a) for a in b.rng.choice(rank, int(b.rng.integers(1, rank + 1)),
                                               replace=False))
    keepdims = int(b.rng.integers(2))
    shape = [1 if i in axes else d for i, d in enumerate(v.shape)] if keepdims else \
        [d for i, d in enumerate(v.shape) if i not in axes]
    signed = [a - rank if b.rng.random() < 0.3 else a for a in axes]
    return b.node(op, [v.name, b.const(np.array(signed, np.int64), "axes")], shape, v.dtype,
                  keepdims=keepdims)


def gen_softmax(b: Builder) -> Value | None:
    v = b.pick(FLOATS, min_rank=1)
    if v is None:
        return None
    axis = int(b.rng.integers(-len(v.shape), len(v.shape)))
    return b.node(b.choice(("Softmax", "LogSoftmax")), [v.name], v.shape, v.dtype, axis=axis)


def gen_transpose(b: Builder) -> Value | None:
    v = b.pick(min_rank=2)
    if v is None:
        return None
    perm = [int(p) for p in b.rng.permutation(len(v.shape))]
    return b.node("Transpose", [v.name], [v.shape[p] for p in perm], v.dtype, v.exact, perm=perm)


def gen_reshape(b: Builder) -> Value | None:
    v = b.pick()
    if v is None:
        return None
    if b.rng.random() < 0.25 and v.shape:
        axis = int(b.rng.integers(0, len(v.shape) + 1))
        shape = (int(np.prod(v.shape[:axis])), int(np.prod(v.shape[axis:])))
        return b.node("Flatten", [v.name], shape, v.dtype, v.exact, axis=axis)
    factors = _factors(int(np.prod(v.shape)))
    rank = int(b.rng.integers(1, 5))
    dims = [1] * rank
    for f in factors:
        dims[int(b.rng.integers(rank))] *= f
    target = list(dims)
    if b.rng.random() < 0.3:
        target[int(b.rng.integers(rank))] = -1
    return b.node("Reshape", [v.name, b.const(np.array(target, np.int64), "shape")], dims,
                  v.dtype, v.exact)


def _factors(n: int) -> list[int]:
    out, d = [], 2
    while n > 1 and d * d <= n:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1
    return out + ([n] if n > 1 else [])


def gen_concat(b: Builder) -> Value | None:
    v = b.pick(min_rank=1)
    if v is None:
        return None
    axis = int(b.rng.integers(len(v.shape)))
    names, total = [v.name], v.shape[axis]
    for _ in range(int(b.rng.integers(1, 3))):
        shape = list(v.shape)
        shape[axis] = int(b.rng.integers(1, 4))
        names.append(b.operand(shape, v.dtype))
        total += shape[axis]
    order = [int(i) for i in b.rng.permutation(len(names))]
    shape = list(v.shape)
    shape[axis] = total
    signed = axis - len(v.shape) if b.rng.random() < 0.3 else axis
    return b.node("Concat", [names[i] for i in order], shape, v.dtype, axis=signed)


def gen_slice(b: Builder) -> Value | None:
    v = b.pick(min_rank=1)
    if v is None:
        return None
    rank = len(v.shape)
    axes = [int(a) for a in b.rng.choice(rank, int(b.rng.integers(1, rank + 1)), replace=False)]
    starts, ends, steps, slices = [], [], [], [slice(None)] * rank
    for axis in axes:
        size = v.shape[axis]
        step = int(b.choice([1, 1, 2, -1, -2]))
        start = int(b.rng.integers(-size - 1, size + 2))
        end = int(b.rng.integers(-size - 2, size + 2))
        if b.rng.random() < 0.2:
            end = 2**62 if step > 0 else -(2**62)
        starts.append(start)
        ends.append(end)
        steps.append(step)
        slices[axis] = slice(start, end, step)
    shape = np.empty(v.shape)[tuple(slices)].shape
    if 0 in shape:
        return None  # (no empty tensors: Reshape's 0 and reflect padding mean other things)
    consts = [b.const(np.array(x, np.int64), "s") for x in (starts, ends, axes, steps)]
    return b.node("Slice", [v.name, *consts], shape, v.dtype, v.exact)


def gen_reshape_family(b: Builder) -> Value | None:
    v = b.pick()
    if v is None:
        return None
    roll = b.rng.random()
    if roll < 0.35:  # Unsqueeze
        axis = int(b.rng.integers(-len(v.shape) - 1, len(v.shape) + 1))
        shape = list(v.shape)
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 1)
        return b.node("Unsqueeze", [v.name, b.const(np.array([axis], np.int64))], shape,
                      v.dtype, v.exact)
    if roll < 0.7:  # Expand
        target = [d if d != 1 or b.rng.random() < 0.5 else int(b.rng.integers(1, 4))
                  for d in v.shape]
        if b.rng.random() < 0.4:
            target.insert(0, int(b.rng.integers(1, 4)))
        return b.node("Expand", [v.name, b.const(np.array(target, np.int64))],
                      np.broadcast_shapes(v.shape, tuple(target)), v.dtype, v.exact)
    if not v.shape:
        return None
    mode = b.choice(("constant", "reflect", "edge"))
    pads = [int(b.rng.integers(0, (d if mode == "reflect" else 3))) for d in v.shape * 2]
    shape = [d + pads[i] + pads[i + len(v.shape)] for i, d in enumerate(v.shape)]
    inputs = [v.name, b.const(np.array(pads, np.int64))]
    if mode == "constant" and b.rng.random() < 0.5:
        inputs.append(b.const(np.array(1.5 if v.dtype in FLOATS else 2, v.dtype)))
    return b.node("Pad", inputs, shape, v.dtype, v.exact, mode=mode)


CASTS = {F32: (F64,), F64: (F32,), I32: (I64, F32, F64), I64: (I32, F32, F64),
         BOOL: (F32, I32, I64)}


def gen_cast(b: Builder) -> Value | None:
    v = b.pick()
    if v is None:
        return None
    to = b.choice(CASTS[v.dtype])
    exact = v.exact and not (v.dtype == F64 and to == F32)
    return b.node("Cast", [v.name], v.shape, to, exact, to=helper.np_dtype_to_tensor_dtype(to))


def gen_where(b: Builder) -> Value | None:
    a = b.pick(exact=True)
    if a is None or a.dtype == BOOL:
        return None
    other = b.operand(broadcast_partner(b, a.shape), a.dtype)
    op = b.choice(("Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual"))
    cond = b.node(op, [a.name, other], a.shape, BOOL, True)
    if b.rng.random() < 0.2:
        cond = b.node("Not", [cond.name], cond.shape, BOOL, True)
    x = b.pick(dtypes=(a.dtype,))
    if x is None or not _broadcasts(x.shape, a.shape) and not _broadcasts(a.shape, x.shape):
        x = a
    y = b.operand(broadcast_partner(b, a.shape), a.dtype)
    shape = np.broadcast_shapes(cond.shape, x.shape)
    return b.node("Where", [cond.name, x.name, y], shape, a.dtype)


def gen_clip(b: Builder) -> Value | None:
    v = b.pick(FLOATS)
    if v is None:
        return None
    low = float(b.rng.uniform(-2, 0))
    bounds = [b.const(np.array(low, v.dtype)), b.const(np.array(low + b.rng.uniform(0, 3),
                                                                  v.dtype))]
    if b.rng.random() < 0.3:
        bounds = bounds[:1]
    return b.node("Clip", [v.name, *bounds], v.shape, v.dtype)


GENERATORS: dict[str, tuple[Callable[[Builder], Value | None], float]] = {
    "unary": (gen_unary, 3), "integer unary": (gen_integer_unary, 0.5),
    "binary": (gen_binary, 3), "matmul": (gen_matmul, 1.5), "conv": (gen_conv, 1),
    "pool": (gen_pool, 1), "reduce": (gen_reduce, 1.5), "softmax": (gen_softmax, 1),
    "transpose": (gen_transpose, 1), "reshape": (gen_reshape, 1), "concat": (gen_concat, 1),
    "slice": (gen_slice, 1), "shape": (gen_reshape_family, 1), "cast": (gen_cast, 0.7),
    "where": (gen_where, 1), "clip": (gen_clip, 0.5),
}


def generate(seed: int, index: int, max_depth: int = 20) -> tuple[onnx.ModelProto, dict]:
    """Case `index` of `seed`: a checked ONNX model and its inputs."""
    b = Builder(np.random.default_rng([seed, index]))
    dtype = b.choice([F32, F32, F32, F64, I32, I64])
    for _ in range(int(b.rng.integers(1, 3))):
        rank = int(b.choice([1, 2, 2, 3, 4, 4]))
        shape = random_shape(b.rng, rank)
        if rank >= 3 and b.rng.random() < 0.7:  # images: a batch, channels, room for windows
            shape = (shape[0] % 2 + 1, shape[1], *[int(d) for d in b.rng.integers(3, 9,
                                                                                   rank - 2)])
        b.add_input(shape, dtype)
    names, weights = list(GENERATORS), np.array([w for _, w in GENERATORS.values()])
    depth, steps = int(b.rng.integers(1, max_depth + 1)), 0
    while steps < depth:
        generator = GENERATORS[names[b.rng.choice(len(names), p=weights / weights.sum())]][0]
        if generator(b) is not None:
            steps += 1
    produced = [v for v in b.pool if v.name not in b.inputs]
    outputs = [produced[-1]] + [v for v in produced[:-1] if b.rng.random() < 0.15][:2]
    return make_model(b, outputs), dict(b.inputs)


def make_model(b: Builder, outputs: list[Value]) -> onnx.ModelProto:
    def info(name: str, array_or_value) -> onnx.ValueInfoProto:
        dtype, shape = array_or_value.dtype, array_or_value.shape
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dtype),
                                             list(shape))

    graph = helper.make_graph(
        b.nodes, "fuzz", [info(n, a) for n, a in b.inputs.items()],
        [info(v.name, v) for v in outputs],
        [numpy_helper.from_array(a, n) for n, a in b.initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="dlc-fuzz")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


