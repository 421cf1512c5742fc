"""Lowering of dlc.binary, dlc.compare, dlc.select and dlc.cast to linalg on arith/math.

`dlc.binary` of floats and equal shapes becomes the named op where one exists (`linalg.max`,
`linalg.min`, `linalg.powf`); everything else is an elementwise `linalg.generic` (broadcast
operands read size-1 and missing axes at index 0). The body is chosen from the element types
the program wrote (`source_types`): float, signed, or unsigned (bool counts as unsigned: it is
stored as i8 holding 0 or 1). Bool results are stored as i8 (`arith.extui` of the i1).

No body can trap: integer remainders guard their divisor (x % 0 -> 0, as numpy), shifts guard
their amount (outside [0, width): 0, or -1 for an arithmetic right shift of a negative value).
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg, math, scf

from dlc.dialects.binary import BINARY, CAST, COMPARE, SELECT
from dlc.dialects.ops import is_bool, is_float, is_unsigned
from dlc.passes.lowering.builders import as_value, elementwise, empty_like, scalar
from dlc.passes.lowering.storage import source_types

Pred = arith.CmpIPredicate
FPred = arith.CmpFPredicate


def _kind(element: ir.Type) -> str:
    """Which arithmetic an element type needs: float, signed or unsigned (bool: unsigned)."""
    if is_float(element):
        return "float"
    return "unsigned" if is_unsigned(element) or is_bool(element) else "signed"


def _width(value: ir.Value) -> int:
    return ir.IntegerType(value.type).width


# ----------------------------------------------------------------------------- bodies


def power_unsigned(base: ir.Value, exponent: ir.Value) -> ir.Value:
    # base ** exponent by square-and-multiply over the exponent's bits: an scf.for of width steps
    element = base.type
    one, zero = scalar(element, 1), scalar(element, 0)
    index = ir.IndexType.get()
    bounds = [arith.constant(index, v) for v in (0, _width(base), 1)]
    loop = scf.ForOp(*bounds, [one, base, exponent])
    with ir.InsertionPoint(loop.body):
        result, square, bits = loop.inner_iter_args
        odd = arith.cmpi(Pred.ne, arith.andi(bits, one), zero)
        result = arith.select(odd, arith.muli(result, square), result)
        scf.YieldOp([result, arith.muli(square, square), arith.shrui(bits, one)])
    return loop.results[0]


def power_signed(base: ir.Value, exponent: ir.Value) -> ir.Value:
    # base ** |exponent|; a negative exponent gives 1 / base ** |exponent| truncated: 0 unless
    # base is 1 or -1 (numpy raises there; x ** -n must not divide by zero)
    element = base.type
    zero, one, minus_one = (scalar(element, v) for v in (0, 1, -1))
    negative = arith.cmpi(Pred.slt, exponent, zero)
    power = power_unsigned(base, arith.select(negative, arith.subi(zero, exponent), exponent))
    unit = arith.ori(arith.cmpi(Pred.eq, base, one), arith.cmpi(Pred.eq, base, minus_one))
    vanishes = arith.andi(negative, arith.xori(unit, arith.constant(unit.type, 1)))
    return arith.select(vanishes, zero, power)


def remainder_signed(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # C's lhs % rhs (sign of lhs); divisors 0 and -1 become 1 (x % 0 -> 0, as numpy; MIN % -1
    # traps on x86 and is 0 anyway)
    element = lhs.type
    zero, one, minus_one = (scalar(element, v) for v in (0, 1, -1))
    unsafe = arith.ori(arith.cmpi(Pred.eq, rhs, zero), arith.cmpi(Pred.eq, rhs, minus_one))
    return arith.remsi(lhs, arith.select(unsafe, one, rhs))


def remainder_unsigned(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # lhs % rhs where x % 0 -> 0 (numpy): divisor 0 becomes 1
    zero, one = scalar(lhs.type, 0), scalar(lhs.type, 1)
    return arith.remui(lhs, arith.select(arith.cmpi(Pred.eq, rhs, zero), one, rhs))


def floor_mod_signed(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # Python's lhs % rhs: C's remainder, plus rhs when it is non-zero and its sign differs
    zero = scalar(lhs.type, 0)
    remainder = remainder_signed(lhs, rhs)
    signs_differ = arith.xori(arith.cmpi(Pred.slt, remainder, zero),
                              arith.cmpi(Pred.slt, rhs, zero))
    fix = arith.andi(arith.cmpi(Pred.ne, remainder, zero), signs_differ)
    return arith.select(fix, arith.addi(remainder, rhs), remainder)


def floor_mod_float(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # numpy's mod: fmod, plus rhs when non-zero of the other sign; a zero takes rhs's sign
    zero = scalar(lhs.type, 0)
    remainder = arith.remf(lhs, rhs)
    signs_differ = arith.xori(arith.cmpf(FPred.OLT, remainder, zero),
                              arith.cmpf(FPred.OLT, rhs, zero))
    fix = arith.andi(arith.cmpf(FPred.ONE, remainder, zero), signs_differ)
    fixed = arith.select(fix, arith.addf(remainder, rhs), remainder)
    is_zero = arith.cmpf(FPred.OEQ, fixed, zero)
    return arith.select(is_zero, math.copysign(zero, rhs), fixed)


def _out_of_range(amount: ir.Value) -> ir.Value:
    # amount < 0 or amount >= width: one unsigned comparison
    return arith.cmpi(Pred.uge, amount, scalar(amount.type, _width(amount)))


def shift_left(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # lhs << rhs; 0 outside [0, width) (arith.shli is poison there)
    zero = scalar(lhs.type, 0)
    outside = _out_of_range(rhs)
    return arith.select(outside, zero, arith.shli(lhs, arith.select(outside, zero, rhs)))


def shift_right_signed(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # lhs >> rhs, arithmetic; outside [0, width) it shifts by width - 1: 0 or -1
    last = scalar(lhs.type, _width(lhs) - 1)
    return arith.shrsi(lhs, arith.select(_out_of_range(rhs), last, rhs))


def shift_right_unsigned(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    # lhs >> rhs, logical; 0 outside [0, width)
    zero = scalar(lhs.type, 0)
    outside = _out_of_range(rhs)
    return arith.select(outside, zero, arith.shrui(lhs, arith.select(outside, zero, rhs)))


def _no_float(fn: str) -> Callable:
    def reject(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        raise AssertionError(f"dlc.binary {{fn={fn!r}}} on floats passed the verifier")

    return reject


# fn -> (float body, signed integer body, unsigned integer body)
BINARY_BODIES: dict[str, tuple[Callable, Callable, Callable]] = {
    "pow": (math.powf, power_signed, power_unsigned),
    "max": (arith.maximumf, arith.maxsi, arith.maxui),
    "min": (arith.minimumf, arith.minsi, arith.minui),
    "mod": (floor_mod_float, floor_mod_signed, remainder_unsigned),
    "fmod": (arith.remf, remainder_signed, remainder_unsigned),
    "shl": (_no_float("shl"), shift_left, shift_left),
    "shr": (_no_float("shr"), shift_right_signed, shift_right_unsigned),
    "and": (_no_float("and"), arith.andi, arith.andi),
    "or": (_no_float("or"), arith.ori, arith.ori),
    "xor": (_no_float("xor"), arith.xori, arith.xori),
}
KIND_INDEX = {"float": 0, "signed": 1, "unsigned": 2}
# fn -> named linalg op computing it on operands of the result's type, per kind
NAMED: dict[tuple[str, str], Callable] = {
    ("max", "float"): linalg.max, ("min", "float"): linalg.min, ("pow", "float"): linalg.powf,
    ("max", "signed"): linalg.max, ("min", "signed"): linalg.min,
}

# fn -> (float predicate, signed predicate, unsigned predicate); floats: ordered (NaN -> false)
# except ne (NaN != x is true, as numpy)
COMPARE_PREDICATES: dict[str, tuple[FPred, Pred, Pred]] = {
    "eq": (FPred.OEQ, Pred.eq, Pred.eq),
    "ne": (FPred.UNE, Pred.ne, Pred.ne),
    "lt": (FPred.OLT, Pred.slt, Pred.ult),
    "le": (FPred.OLE, Pred.sle, Pred.ule),
    "gt": (FPred.OGT, Pred.sgt, Pred.ugt),
    "ge": (FPred.OGE, Pred.sge, Pred.uge),
}


def _fn(op: ir.OpView) -> str:
    return ir.StringAttr(op.attributes["fn"]).value


# ----------------------------------------------------------------------------- patterns


def lower_binary(op: ir.OpView, rewriter) -> None:
    # dlc.binary{max}(a, b) -> linalg.max (same shapes) | linalg.generic{arith.maximumf}
    fn = _fn(op)
    lhs, rhs = op.operands
    result_type = op.results[0].type
    kind = _kind(source_types(op)[0][0])
    named = NAMED.get((fn, kind))
    body = BINARY_BODIES[fn][KIND_INDEX[kind]]
    with rewriter.ip, op.location:
        if named and lhs.type == result_type and rhs.type == result_type:
            value = named(lhs, rhs, outs=[empty_like(result_type)])
        else:
            value = elementwise([lhs, rhs], result_type, body)
        rewriter.replace_op(op, [as_value(value)])


def lower_compare(op: ir.OpView, rewriter) -> None:
    # dlc.compare{lt}(a, b) -> linalg.generic{arith.extui(arith.cmpf olt) : i1 -> i8}
    predicate = COMPARE_PREDICATES[_fn(op)][KIND_INDEX[_kind(source_types(op)[0][0])]]
    result_type = op.results[0].type
    compare = arith.cmpf if isinstance(predicate, FPred) else arith.cmpi

    def body(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return arith.extui(result_type.element_type, compare(predicate, lhs, rhs))

    with rewriter.ip, op.location:
        value = elementwise(list(op.operands), result_type, body)
        rewriter.replace_op(op, [as_value(value)])


def lower_select(op: ir.OpView, rewriter) -> None:
    # dlc.select(c, a, b) -> linalg.generic{arith.select(c != 0, a, b)} (c is stored as i8)
    result_type = op.results[0].type

    def body(cond: ir.Value, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return arith.select(arith.cmpi(Pred.ne, cond, scalar(cond.type, 0)), lhs, rhs)

    with rewriter.ip, op.location:
        value = elementwise(list(op.operands), result_type, body)
        rewriter.replace_op(op, [as_value(value)])


def convert(x: ir.Value, source: ir.Type, target: ir.Type, storage: ir.Type) -> ir.Value:
    """Element `x` (stored for type `source`) converted to `target`, stored as `storage`."""
    if is_bool(target):  # x != 0, as i8
        zero = scalar(x.type, 0)
        nonzero = arith.cmpf(FPred.UNE, x, zero) if is_float(source) else \
            arith.cmpi(Pred.ne, x, zero)
        return arith.extui(storage, nonzero)
    if is_float(source) and is_float(target):
        return _resize(x, storage, arith.extf, arith.truncf, ir.FloatType)
    if is_float(source):  # truncation toward zero
        return (arith.fptoui if is_unsigned(target) else arith.fptosi)(storage, x)
    if is_float(target):
        signed = _kind(source) == "signed"
        return (arith.sitofp if signed else arith.uitofp)(storage, x)
    extend = arith.extsi if _kind(source) == "signed" else arith.extui
    return _resize(x, storage, extend, arith.trunci, ir.IntegerType)


def _resize(x: ir.Value, storage: ir.Type, extend: Callable, truncate: Callable,
            type_class) -> ir.Value:
    width, target_width = type_class(x.type).width, type_class(storage).width
    if width == target_width:
        return x
    return (extend if target_width > width else truncate)(storage, x)


def lower_cast(op: ir.OpView, rewriter) -> None:
    # dlc.cast{to=f32}(x : i32) -> linalg.generic{arith.sitofp}; same storage type: x itself
    (x,) = op.operands
    result_type = op.results[0].type
    (source,), (target,) = source_types(op)
    storage = result_type.element_type
    with rewriter.ip, op.location:
        if x.type == result_type and (is_bool(source) or not is_bool(target)):
            rewriter.replace_op(op, [x])  # same bits: int8 <-> uint8, f32 -> f32, ...
            return
        value = elementwise([x], result_type, lambda v: convert(v, source, target, storage))
        rewriter.replace_op(op, [as_value(value)])


PATTERNS = {BINARY: lower_binary, COMPARE: lower_compare, SELECT: lower_select, CAST: lower_cast}
DYNAMIC_OPS = (BINARY, COMPARE, SELECT, CAST)
