"""Lowering of the image ops: dlc.resample and dlc.grid_sample.

`dlc.resample` becomes one `linalg.generic` over the result. Its compile-time table enters as
constant 1-D tensors along the resampled axis (one index and one weight tensor per tap, and
the bias), read through the indexing map `(d0, .., dn) -> (d_axis)`; the body gathers each tap
with `tensor.extract` and blends in floating point. A pure gather (one tap of weight 1) is the
extract alone. Indices were checked by the verifier, so every read is in bounds.

`dlc.grid_sample` is a `linalg.generic` over the result whose body reads the grid coordinates
(`tensor.extract`), denormalizes them, applies the padding mode and blends the 1, 2 or 4 taps
per spatial axis (nearest, linear, cubic), following onnx.reference's GridSample. Every
coordinate is made finite and brought near the input before its conversion to an index, and
every index is clamped into its axis before a read (zeros padding selects 0 instead), so no
input, not even NaN or a huge coordinate, can read out of bounds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from dlc.dialects import image
from dlc.dialects.ops import is_float, is_unsigned
from dlc.passes.lowering.builders import PARALLEL, dims_map, empty_like, generic, scalar
from dlc.passes.lowering.storage import source_types

CUBIC_A = -0.75  # GridSample's cubic kernel (PyTorch's)


# ----------------------------------------------------------------------------- helpers


def index_const(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def constant_vector(values: np.ndarray, element: ir.Type) -> ir.Value:
    """An `arith.constant` 1-D tensor holding `values` as `element`."""
    t = ir.RankedTensorType.get([len(values)], element)
    dtype = np.float32 if element == ir.F32Type.get() else np.float64 if is_float(element) \
        else np.int64
    array = np.ascontiguousarray(values, dtype)
    return arith.ConstantOp(t, ir.DenseElementsAttr.get(array, type=t)).result


def to_compute(value: ir.Value, source: ir.Type, compute: ir.Type) -> ir.Value:
    """An element (storage type) of source type `source` as the float type `compute`."""
    if is_float(source):
        if source == compute:
            return value
        width, target = ir.FloatType(source).width, ir.FloatType(compute).width
        return arith.extf(compute, value) if width < target else arith.truncf(compute, value)
    return (arith.uitofp if is_unsigned(source) else arith.sitofp)(compute, value)


def from_compute(value: ir.Value, target: ir.Type, storage: ir.Type) -> ir.Value:
    """A float of the compute type as `target` (storage type `storage`): onnx's saturate_cast.

    Integers are rounded half to even and clamped into their range; narrower floats are
    clamped to their largest finite value (NaN stays NaN).
    """
    compute = value.type
    if is_float(target):
        if target == compute:
            return value
        width, target_width = ir.FloatType(compute).width, ir.FloatType(target).width
        if target_width > width:
            return arith.extf(storage, value)
        largest = float(np.finfo(np.float16 if target_width == 16 else np.float32).max)
        value = arith.minimumf(arith.maximumf(value, scalar(compute, -largest)),
                               scalar(compute, largest))
        return arith.truncf(storage, value)
    bits = ir.IntegerType(storage).width
    info = np.iinfo(f"{'u' if is_unsigned(target) else ''}int{bits}")
    # the largest float below 2**bits (2**63 - 1 rounds up to 2**63 in f64)
    high = float(np.nextafter(np.float64(info.max) + 1, 0)) if bits >= 53 else float(info.max)
    rounded = math.roundeven(value)
    clamped = arith.minimumf(arith.maximumf(rounded, scalar(compute, float(info.min))),
                             scalar(compute, high))
    nan = arith.cmpf(arith.CmpFPredicate.UNO, value, value)
    clamped = arith.select(nan, scalar(compute, 0.0), clamped)
    return (arith.fptoui if is_unsigned(target) else arith.fptosi)(storage, clamped)


def linalg_index(dim: int) -> ir.Value:
    return linalg.IndexOp(dim).result


def compute_type(*elements: ir.Type) -> ir.Type:
    """f32 when every element type is f32 or f16, f64 otherwise (integers, f64)."""
    narrow = (ir.F32Type.get(), ir.F16Type.get())
    return ir.F32Type.get() if all(e in narrow for e in elements) else ir.F64Type.get()


# ----------------------------------------------------------------------------- resample


def _ints(op: ir.OpView, name: str) -> list[int]:
    return [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]


def _floats(op: ir.OpView, name: str) -> list[float]:
    return [float(v) for v in ir.DenseF64ArrayAttr(op.attributes[name])]


def lower_resample(op: ir.OpView, rewriter) -> None:
    # dlc.resample{axis, table}(x) -> linalg.generic {sum_t w_t[o] * x[.., idx_t[o], ..] + b[o]}
    (x,) = op.operands
    result_type = op.results[0].type
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    taps = ir.IntegerAttr(op.attributes["taps"]).value
    indices = np.array(_ints(op, "indices"), np.int64).reshape(-1, taps)
    weights = np.array(_floats(op, "weights"), np.float64).reshape(-1, taps)
    bias = np.array(_floats(op, "bias"), np.float64)
    (source,), (target,) = source_types(op)
    rank = result_type.rank
    attrs = {"taps": taps, "weights": weights.reshape(-1), "bias": bias}
    gather = image.is_pure_gather(attrs, source, target)
    compute = compute_type(source, target)

    def body(*args: ir.Value) -> ir.Value:
        position = [linalg_index(d) for d in range(rank)]
        if gather:
            position[axis] = arith.index_cast(ir.IndexType.get(), args[0])
            return tensor.extract(x, position)
        total = args[-2]  # the bias
        for t in range(taps):
            position[axis] = arith.index_cast(ir.IndexType.get(), args[2 * t])
            element = to_compute(tensor.extract(x, position), source, compute)
            total = arith.addf(total, arith.mulf(args[2 * t + 1], element))
        return from_compute(total, target, result_type.element_type)

    with rewriter.ip, op.location:
        i64 = ir.IntegerType.get_signless(64)
        inputs = [constant_vector(indices[:, 0], i64)]
        if not gather:
            inputs = []
            for t in range(taps):
                inputs += [constant_vector(indices[:, t], i64),
                           constant_vector(weights[:, t], compute)]
            inputs.append(constant_vector(bias, compute))
        maps = [dims_map(rank, [axis])] * len(inputs) + [dims_map(rank, list(range(rank)))]
        value = generic(inputs, empty_like(result_type), maps, [PARALLEL] * rank, body)
        rewriter.replace_op(op, [value])


# ----------------------------------------------------------------------------- grid_sample


class _Axis:
    """The index math of one spatial axis of grid_sample (size, borders, padding mode)."""

    def __init__(self, size: int, align_corners: bool, padding: str, compute: ir.Type):
        self.size, self.align, self.padding, self.t = size, align_corners, padding, compute
        self.low = 0.0 if align_corners else -0.5
        self.high = size - 1.0 if align_corners else size - 0.5

    def c(self, value: float) -> ir.Value:
        return scalar(self.t, value)

    def denormalize(self, n: ir.Value) -> ir.Value:
        # align: (n + 1) / 2 * (size - 1); else ((n + 1) * size - 1) / 2
        one = self.c(1.0)
        if self.align:
            return arith.mulf(arith.divf(arith.addf(n, one), self.c(2.0)), self.c(self.size - 1))
        return arith.divf(arith.subf(arith.mulf(arith.addf(n, one), self.c(self.size)), one),
                          self.c(2.0))

    def reflect(self, x: ir.Value) -> ir.Value:
        # reflect x by the nearer border until it lies in [low, high] (onnx's _gs_reflect)
        low, high = self.c(self.low), self.c(self.high)
        span = self.high - self.low
        if span <= 0:
            return low
        below = arith.cmpf(arith.CmpFPredicate.OLT, x, low)
        above = arith.cmpf(arith.CmpFPredicate.OGT, x, high)
        dx = arith.select(below, arith.subf(low, x), arith.subf(x, high))
        i64 = ir.IntegerType.get_signless(64)
        times = arith.fptosi(i64, math.floor(arith.divf(dx, self.c(span))))
        r = arith.subf(dx, arith.mulf(arith.sitofp(self.t, times), self.c(span)))
        even = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(times, scalar(i64, 1)),
                          scalar(i64, 0))
        from_low, from_high = arith.addf(low, r), arith.subf(high, r)
        lower_side = arith.select(even, from_low, from_high)
        upper_side = arith.select(even, from_high, from_low)
        return arith.select(below, lower_side, arith.select(above, upper_side, x))

    def pad_coordinate(self, x: ir.Value) -> ir.Value:
        # outside [low, high]: border clamps into [0, size - 1], reflection reflects
        if self.padding == "zeros":
            return x
        if self.padding == "border":
            outside = arith.ori(arith.cmpf(arith.CmpFPredicate.OLT, x, self.c(self.low)),
                                arith.cmpf(arith.CmpFPredicate.OGT, x, self.c(self.high)))
            clamped = arith.minimumf(arith.maximumf(x, self.c(0.0)), self.c(self.size - 1.0))
            return arith.select(outside, clamped, x)
        return self.reflect(x)

    def finite(self, x: ir.Value) -> ir.Value:
        # x limited to [-size - 8, 2 * size + 8] (NaN -> the lower end): no tap changes
        # validity, and the conversion to an integer is defined
        low, high = self.c(-self.size - 8.0), self.c(2.0 * self.size + 8.0)
        inside = arith.andi(arith.cmpf(arith.CmpFPredicate.OGE, x, low),
                            arith.cmpf(arith.CmpFPredicate.OLE, x, high))
        clamped = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, x, high), high, low)
        return arith.select(inside, x, clamped)

    def tap(self, i: ir.Value) -> tuple[ir.Value, ir.Value | None]:
        """(safe index, in-range flag or None) of the integer position `i` (i64)."""
        i64 = ir.IntegerType.get_signless(64)
        if self.padding == "reflection":
            reflected = self.reflect(arith.sitofp(self.t, i))
            i = arith.fptosi(i64, reflected)  # int() truncates toward zero
        valid = None
        if self.padding == "zeros":
            valid = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, i, scalar(i64, 0)),
                               arith.cmpi(arith.CmpIPredicate.slt, i, scalar(i64, self.size)))
        safe = arith.maxsi(arith.minsi(i, scalar(i64, self.size - 1)), scalar(i64, 0))
        return arith.index_cast(ir.IndexType.get(), safe), valid


def linear_weights(frac: ir.Value) -> list[ir.Value]:
    one = scalar(frac.type, 1.0)
    return [arith.subf(one, frac), frac]


def cubic_weights(frac: ir.Value) -> list[ir.Value]:
    # Keys' cubic convolution with A = -0.75 at distances 1 + f, f, 1 - f, 2 - f
    t = frac.type
    a = CUBIC_A

    def c(v: float) -> ir.Value:
        return scalar(t, v)

    def near(d: ir.Value) -> ir.Value:  # ((A + 2) d - (A + 3)) d d + 1
        inner = arith.subf(arith.mulf(c(a + 2), d), c(a + 3))
        return arith.addf(arith.mulf(arith.mulf(inner, d), d), c(1.0))

    def far(d: ir.Value) -> ir.Value:  # ((A d - 5A) d + 8A) d - 4A
        inner = arith.addf(arith.mulf(arith.subf(arith.mulf(c(a), d), c(5 * a)), d), c(8 * a))
        return arith.subf(arith.mulf(inner, d), c(4 * a))

    one_minus = arith.subf(c(1.0), frac)
    return [far(arith.addf(frac, c(1.0))), near(frac), near(one_minus),
            far(arith.addf(one_minus, c(1.0)))]


# mode -> (offsets of the taps from floor(x), their weights from x - floor(x))
KERNELS: dict[str, tuple[tuple[int, ...], Callable[[ir.Value], list[ir.Value]]]] = {
    "linear": ((0, 1), linear_weights),
    "cubic": ((-1, 0, 1, 2), cubic_weights),
}


def lower_grid_sample(op: ir.OpView, rewriter) -> None:
    # dlc.grid_sample(x, grid) -> linalg.generic {grid coords -> taps -> tensor.extract, blend}
    x, grid = op.operands
    result_type = op.results[0].type
    mode = ir.StringAttr(op.attributes["mode"]).value
    padding = ir.StringAttr(op.attributes["padding_mode"]).value
    align = bool(ir.IntegerAttr(op.attributes["align_corners"]).value)
    (source, grid_source), (target,) = source_types(op)
    rank, spatial = result_type.rank, result_type.rank - 2
    compute = compute_type(source, grid_source)
    sizes = list(x.type.shape[2:])
    i64 = ir.IntegerType.get_signless(64)

    def body(_out: ir.Value) -> ir.Value:
        loops = [linalg_index(d) for d in range(rank)]
        axes = [_Axis(size, align, padding, compute) for size in sizes]
        coords = []
        for k, axis in enumerate(axes):  # grid's last axis lists x (the last axis) first
            raw = tensor.extract(grid, [loops[0], *loops[2:], index_const(spatial - 1 - k)])
            coord = axis.denormalize(to_compute(raw, grid_source, compute))
            if mode == "nearest":
                coord = math.roundeven(coord)
            coords.append(axis.finite(axis.pad_coordinate(coord)))
        if mode == "nearest":
            picks = [[(arith.fptosi(i64, c), None)] for c in coords]
        else:
            offsets, weigh = KERNELS[mode]
            picks = []
            for c in coords:
                base = math.floor(c)
                start = arith.fptosi(i64, base)
                ws = weigh(arith.subf(c, base))
                picks.append([(arith.addi(start, scalar(i64, o)), w)
                              for o, w in zip(offsets, ws)])
        total = None
        for combo in itertools.product(*picks):
            position, valid, weight = [loops[0], loops[1]], None, None
            for axis, (i, w) in zip(axes, combo):
                index, ok = axis.tap(i)
                position.append(index)
                valid = ok if valid is None else arith.andi(valid, ok) if ok else valid
                weight = w if weight is None else arith.mulf(weight, w) if w else weight
            element = tensor.extract(x, position)
            if mode == "nearest":
                zero = scalar(result_type.element_type, 0)
                return element if valid is None else arith.select(valid, element, zero)
            value = to_compute(element, source, compute)
            if valid is not None:
                value = arith.select(valid, value, scalar(compute, 0.0))
            term = arith.mulf(weight, value)
            total = term if total is None else arith.addf(total, term)
        return from_compute(total, target, result_type.element_type)

    with rewriter.ip, op.location:
        value = generic([], empty_like(result_type), [dims_map(rank, list(range(rank)))],
                        [PARALLEL] * rank, body)
        rewriter.replace_op(op, [value])


PATTERNS = {image.RESAMPLE: lower_resample, image.GRID_SAMPLE: lower_grid_sample}
