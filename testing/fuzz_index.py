"""`dlc fuzz --index-values`: gathers and scatters whose indices are runtime values.

Contract:
- Case `i` of seed `s` (`generate(s, i)`, drawn from `numpy.random.default_rng([s, i, 1])`) is
  a small valid graph around one or two of Gather, GatherElements, GatherND (batch_dims 0 or 1),
  ScatterElements and ScatterND (reduction none or add) whose index tensors are GRAPH INPUTS,
  with a few of `fuzz.py`'s random ops before and after them, and `FEEDS` feeds. A feed's
  indices are in range (negative in-range values included: they count from the end) or, with
  probability `OUT_OF_RANGE`, hold one to three values out of range (>= size, < -size, 2**40).
  With reduction none, the scattered positions are distinct (duplicates leave the result
  unspecified).
- `run_case(model, feeds)` compiles at -O0 and -O3 once each and calls the model with every feed
  in order (so a refused call must leave the compiled model usable). `classify` decides a call:
  both dlc and onnxruntime answer -> the answers are compared; onnxruntime refuses and dlc raises
  `IndexOutOfRangeError` (or a DlcError naming an index op) -> agreement ("refused"); dlc answers
  where onnxruntime refused, or raises IndexOutOfRangeError where it answered -> "mismatch";
  another DlcError -> "error"; any other exception -> "internal". The worker's death is a crash
  (`fuzz.Worker`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx

from dlc.testing import fuzz
from dlc.testing.fuzz import F32, F64, I32, I64, Builder, Value

FEEDS = 3  # calls per compiled model: each model compiles twice (-O0, -O3), calls are cheap
OUT_OF_RANGE = 0.35  # the chance that a feed holds out-of-range indices
INDEX_OPS = ("Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND")


def _dims(b: Builder, rank: int, low: int = 1, high: int = 5) -> tuple[int, ...]:
    return tuple(int(d) for d in b.rng.integers(low, high + 1, rank))


def in_range(b: Builder, shape, size: int) -> np.ndarray:
    """Valid indices into an axis of `size`: about a third of them negative (from the end)."""
    values = b.rng.integers(0, size, shape)
    negative = b.rng.random(shape) < 0.35
    return np.where(negative, values - size, values).astype(np.int64)


def distinct(b: Builder, count: int, sizes: tuple[int, ...]) -> np.ndarray:
    """`count` distinct positions (rows of len(sizes) coordinates), some coordinates negative."""
    flat = b.rng.choice(int(np.prod(sizes)), count, replace=False)
    rows = np.stack(np.unravel_index(flat, sizes), axis=-1).astype(np.int64)
    negative = b.rng.random(rows.shape) < 0.35
    return np.where(negative, rows - np.array(sizes, np.int64), rows)


def bad_value(b: Builder, size: int, dtype: np.dtype) -> int:
    """An index out of range for an axis of `size`, representable in `dtype`."""
    huge = 2**40 if dtype == I64 else 2**31 - 1
    return int(b.choice([size, size + int(b.rng.integers(1, 4)), -size - 1,
                         -size - int(b.rng.integers(2, 5)), huge, -huge]))


def spoil(b: Builder, indices: np.ndarray, sizes: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`indices` with one to three values out of range; `sizes[k]` bounds the last axis's
    column k (GatherND/ScatterND), or `sizes[0]` bounds every value."""
    spoilt = indices.astype(np.int64).copy()
    flat = spoilt.reshape(-1)
    for _ in range(int(b.rng.integers(1, 4))):
        at = int(b.rng.integers(flat.size))
        size = sizes[at % spoilt.shape[-1]] if len(sizes) > 1 else sizes[0]
        flat[at] = bad_value(b, size, dtype)
    return spoilt


# ============================================================================= the graphs


@dataclass
class Site:
    """An index tensor that is a graph input: its valid values and the sizes that bound them."""

    name: str
    dtype: np.dtype
    sizes: tuple[int, ...]  # one size, or one per column of the last axis (GatherND/ScatterND)
    draw: Callable[[], np.ndarray]  # valid int64 values of the input's shape


def index_input(b: Builder, sites: list[Site], sizes: tuple[int, ...],
                draw: Callable[[], np.ndarray], int32: bool = True) -> str:
    """A new graph input of indices: int64, or int32 a third of the time where the op allows
    it (GatherND and ScatterND take int64 only)."""
    dtype = b.choice([I64, I64, I32]) if int32 else I64
    site = Site(b.name("idx"), dtype, sizes, draw)
    b.inputs[site.name] = draw().astype(dtype)
    sites.append(site)
    return site.name


def columns(b: Builder, shape: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """Indices of `shape + (len(sizes),)`: column k in range for `sizes[k]`."""
    return np.stack([in_range(b, shape, s) for s in sizes], axis=-1)


def gen_gather(b: Builder, sites: list[Site]) -> Value | None:
    v = b.pick(DATA, min_rank=1)
    if v is None:
        return None
    rank = len(v.shape)
    axis = int(b.rng.integers(-rank, rank))
    size, shape = v.shape[axis], _dims(b, int(b.rng.choice([0, 1, 1, 2])))
    name = index_input(b, sites, (size,), lambda: in_range(b, shape, size))
    at = axis % rank
    out = v.shape[:at] + shape + v.shape[at + 1:]
    return b.node("Gather", [v.name, name], out, v.dtype, v.exact, axis=axis)


def gen_gather_elements(b: Builder, sites: list[Site]) -> Value | None:
    v = b.pick(DATA, min_rank=1)
    if v is None:
        return None
    rank = len(v.shape)
    axis = int(b.rng.integers(-rank, rank))
    at, size = axis % rank, v.shape[axis]
    shape = tuple(int(b.rng.integers(1, 5)) if d == at else int(b.rng.integers(1, n + 1))
                  for d, n in enumerate(v.shape))
    name = index_input(b, sites, (size,), lambda: in_range(b, shape, size))
    return b.node("GatherElements", [v.name, name], shape, v.dtype, v.exact, axis=axis)


def gen_gather_nd(b: Builder, sites: list[Site]) -> Value | None:
    v = b.pick(DATA, min_rank=1)
    if v is None:
        return None
    rank = len(v.shape)
    batch_dims = int(b.rng.integers(0, 2)) if rank >= 2 else 0
    q = int(b.rng.integers(1, rank - batch_dims + 1))
    sizes = v.shape[batch_dims:batch_dims + q]
    rows = v.shape[:batch_dims] + _dims(b, int(b.rng.integers(0, 2)), 1, 3)
    name = index_input(b, sites, sizes, lambda: columns(b, rows, sizes), False)
    out = rows + v.shape[batch_dims + q:]
    return b.node("GatherND", [v.name, name], out, v.dtype, v.exact, batch_dims=batch_dims)


def _distinct_along(b: Builder, shape: tuple[int, ...], axis: int, size: int) -> np.ndarray:
    """Indices of `shape` whose values along `axis` differ within each line (reduction none)."""
    keys = b.rng.random(shape[:axis] + (size,) + shape[axis + 1:])
    order = np.argsort(keys, axis=axis).take(range(shape[axis]), axis=axis)
    negative = b.rng.random(order.shape) < 0.35
    return np.where(negative, order - size, order).astype(np.int64)


def gen_scatter_elements(b: Builder, sites: list[Site]) -> Value | None:
    v = b.pick(DATA, min_rank=1)
    if v is None:
        return None
    rank = len(v.shape)
    axis = int(b.rng.integers(-rank, rank))
    at, size = axis % rank, v.shape[axis]
    shape = tuple(int(b.rng.integers(1, n + 1)) for n in v.shape)
    reduction = b.choice(["none", "add"])
    if reduction == "none":
        name = index_input(b, sites, (size,), lambda: _distinct_along(b, shape, at, size))
    else:
        name = index_input(b, sites, (size,), lambda: in_range(b, shape, size))
    updates = b.operand(shape, v.dtype)
    return b.node("ScatterElements", [v.name, name, updates], v.shape, v.dtype,
                  v.exact and reduction == "none", axis=axis, reduction=reduction)


def gen_scatter_nd(b: Builder, sites: list[Site]) -> Value | None:
    v = b.pick(DATA, min_rank=1)
    if v is None:
        return None
    rank = len(v.shape)
    q = int(b.rng.integers(1, rank + 1))
    sizes = v.shape[:q]
    reduction = b.choice(["none", "add"])
    if reduction == "none":  # distinct positions: at most as many rows as positions
        count = int(b.rng.integers(1, min(4, int(np.prod(sizes))) + 1))
        rows = b.choice([(count,), (1, count)])
        name = index_input(b, sites, sizes,
                           lambda: distinct(b, count, sizes).reshape(rows + (q,)), False)
    else:
        rows = _dims(b, int(b.rng.integers(1, 3)), 1, 3)
        name = index_input(b, sites, sizes, lambda: columns(b, rows, sizes), False)
    updates = b.operand(rows + v.shape[q:], v.dtype)
    return b.node("ScatterND", [v.name, name, updates], v.shape, v.dtype,
                  v.exact and reduction == "none", reduction=reduction)


DATA = (F32, F64, I32, I64)
GENERATORS: dict[str, tuple[Callable[[Builder, list[Site]], Value | None], float]] = {
    "Gather": (gen_gather, 1.5), "GatherElements": (gen_gather_elements, 1),
    "GatherND": (gen_gather_nd, 1), "ScatterElements": (gen_scatter_elements, 1),
    "ScatterND": (gen_scatter_nd, 1),
}


def _random_steps(b: Builder, count: int) -> None:
    """`count` steps of `fuzz.py`'s random ops (the gathers' data, or what uses their results)."""
    names = list(fuzz.GENERATORS)
    weights = np.array([w for _, w in fuzz.GENERATORS.values()])
    done = 0
    for _ in range(10 * count):  # (a generator may find nothing to apply to)
        if done == count:
            return
        generator = fuzz.GENERATORS[names[b.rng.choice(len(names), p=weights / weights.sum())]][0]
        done += generator(b) is not None


def generate(seed: int, index: int, max_depth: int = 20
             ) -> tuple[onnx.ModelProto, list[dict[str, np.ndarray]], list[bool]]:
    """Case `index` of `seed`: a checked model, its feeds, and which feeds hold out-of-range
    indices (the first never does)."""
    b = Builder(np.random.default_rng([seed, index, 1]))
    b.add_input(fuzz.random_shape(b.rng), b.choice([F32, F32, F32, F64, I32, I64]))
    before = int(b.rng.integers(0, min(2, max_depth - 1) + 1))
    _random_steps(b, before)
    sites: list[Site] = []
    results: list[Value] = []
    names = list(GENERATORS)
    weights = np.array([w for _, w in GENERATORS.values()])
    while len(results) < int(b.rng.integers(1, 3)) or not results:
        op = names[b.rng.choice(len(names), p=weights / weights.sum())]
        result = GENERATORS[op][0](b, sites)
        if result is not None:
            results.append(result)
    _random_steps(b, int(b.rng.integers(0, max(0, min(3, max_depth - before - 1)) + 1)))
    produced = [v for v in b.pool if v.name not in b.inputs]
    outputs = [produced[-1]] + [r for r in results if r is not produced[-1]]
    model = fuzz.make_model(b, outputs)
    feeds, spoilt = [dict(b.inputs)], [False]
    for _ in range(FEEDS - 1):
        feed, bad = dict(b.inputs), b.rng.random() < OUT_OF_RANGE
        chosen = [s for s in sites if b.rng.random() < 0.7] or [b.choice(sites)]
        for site in sites:
            values = site.draw()
            if bad and site in chosen:
                values = spoil(b, values, site.sizes, site.dtype)
            feed[site.name] = values.astype(site.dtype)
        feeds.append(feed)
        spoilt.append(bad)
    return model, feeds, spoilt


# ============================================================================= one case


def first_line(error: BaseException, limit: int = 200) -> str:
    text = str(error).strip()
    if "Status Message:" in text:  # (onnxruntime: the kernel's reason, not its boilerplate)
        text = text.split("Status Message:", 1)[1].strip()
    if text.startswith("/") and "] " in text:  # (a source location and C++ signature first)
        text = text.rsplit("] ", 1)[1]
    return f"{type(error).__name__}: {(text.splitlines() or [''])[0][:limit]}"


def _attempt(call: Callable[..., list], *args) -> list | Exception:
    try:
        return call(*args)
    except Exception as error:  # noqa: BLE001  (the outcome is classified, not raised)
        return error


def classify(expected: list | Exception, got: list | Exception, index_nodes: set[str],
             output_names: list[str], computed_in: np.dtype | None = None
             ) -> tuple[str, str, str]:
    """(status, kind, detail) of one call: onnxruntime's outputs or exception against dlc's.

    status: "pass" (same answers), "refused" (both refused: agreement), "mismatch" (one
    answered where the other refused, or different answers), "internal" (dlc raised an
    exception that is no DlcError). `index_nodes` holds the index ops' types and node names:
    a DlcError other than IndexOutOfRangeError agrees with a refusal only if it names one.
    kind tells failures apart (for the minimizer): answered, unnamed, refused, values."""
    from dlc.errors import DlcError, IndexOutOfRangeError

    if isinstance(got, Exception) and not isinstance(got, DlcError):
        return "internal", type(got).__name__, f"dlc raised {first_line(got, 300)}"
    if isinstance(expected, Exception):
        if not isinstance(got, Exception):
            return "mismatch", "answered", (f"onnxruntime refused ({first_line(expected)}) "
                                            "but dlc returned outputs")
        if isinstance(got, IndexOutOfRangeError) or any(n in str(got) for n in index_nodes):
            return "refused", "", ""
        return "mismatch", "unnamed", (f"onnxruntime refused ({first_line(expected)}); dlc "
                                       f"raised {first_line(got, 300)}, which names no index op")
    if isinstance(got, Exception):
        return "mismatch", "refused", f"onnxruntime answered but dlc raised {first_line(got, 300)}"
    for name, value, want in zip(output_names, got, expected, strict=True):
        problem = fuzz.compare(value, np.asarray(want), computed_in)
        if problem:
            return "mismatch", "values", f"output '{name}': {problem}"
    return "pass", "", ""


def run_case(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]],
             spoilt: list[bool] | None = None) -> dict:
    """The outcome of one case (worker side): every feed at -O0 and -O3. A passing outcome
    counts the calls compared and refused by both."""
    import dlc
    from dlc.errors import DlcError

    spoilt = spoilt or [False] * len(feeds)
    fuzz.phase("onnxruntime")
    try:
        session = fuzz.ort_session(model)
    except Exception as error:  # noqa: BLE001  (no oracle for this graph)
        return {"status": "skip", "detail": f"onnxruntime: {first_line(error)}"}
    expected = [_attempt(session.run, None, feed) for feed in feeds]
    fuzz.phase("dlc")
    computed_in = F32 if fuzz.uses_float32(model) else None
    index_nodes = {x for n in model.graph.node if n.op_type in INDEX_OPS
                   for x in (n.op_type, n.name)}
    outputs = [o.name for o in model.graph.output]
    tally = {"compared": 0, "refused": 0}
    for level in (0, 3):
        try:
            compiled = dlc.compile(model, opt_level=level)
        except Exception as error:  # noqa: BLE001  (dlc must compile every graph generated)
            status = "error" if isinstance(error, DlcError) else "internal"
            return {"status": status, "signature": f"{status}:{type(error).__name__}",
                    "detail": f"-O{level}: {first_line(error, 300)}"}
        for k, feed in enumerate(feeds):
            got = _attempt(compiled, feed)
            status, kind, detail = classify(expected[k], got, index_nodes, outputs,
                                            computed_in)
            if status not in ("pass", "refused"):
                which = "out-of-range" if spoilt[k] else "in-range"
                return {"status": status, "signature": f"{status}:{kind}",
                        "detail": f"-O{level} feed {k} ({which} indices): {detail}", "feed": k}
            tally["compared" if status == "pass" else "refused"] += 1
    return {"status": "pass", "detail": "", **tally}
