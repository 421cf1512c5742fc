"""Lowering of `dlc.unary`: one elementwise `linalg.generic` whose body computes `fn`.

The body of each fn is one entry of a table: `FLOAT_BODIES` for float operands (on f32 or
f64; f16 and bf16 are computed in f32 and rounded back, as numpy does, and libm has no half
precision functions), `INTEGER_BODIES` for signed, unsigned and bool operands on their storage
type (bool arrives as i8 holding 0/1, see `storage.py`). Predicates (`isnan`, `isinf`) give an
i1 that is stored as i8 (arith.extui). Transcendental functions are `math.*` ops: the pipeline
turns them into LLVM intrinsics or libm calls. Formulas avoid overflow where the naive one
would (sigmoid, softplus), and nothing in a body can trap.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, math

from dlc.dialects.unary import FUNCTIONS, UNARY, element_kind
from dlc.passes.lowering.builders import as_value, elementwise, scalar
from dlc.passes.lowering.storage import source_types

Params = list[float]
FloatBody = Callable[[ir.Value, Params], ir.Value]
IntegerBody = Callable[[ir.Value, Params, bool], ir.Value]  # (x, params, unsigned)

OGT, OLT, OGE, OEQ = (arith.CmpFPredicate.OGT, arith.CmpFPredicate.OLT,
                      arith.CmpFPredicate.OGE, arith.CmpFPredicate.OEQ)


def _c(x: ir.Value, value: float) -> ir.Value:
    """A constant of x's element type."""
    return scalar(x.type, value)


# ----------------------------------------------------------------------------- float bodies


def _sigmoid(x: ir.Value, alpha: float = 1.0) -> ir.Value:
    # 1 / (1 + exp(-a x)) without overflow: e = exp(-|a x|), (a x >= 0 ? 1 : e) / (1 + e)
    z = x if alpha == 1.0 else arith.mulf(x, _c(x, alpha))
    e = math.exp(arith.negf(math.absf(z)))
    one = _c(x, 1)
    numerator = arith.select(arith.cmpf(OGE, z, _c(x, 0)), one, e)
    return arith.divf(numerator, arith.addf(one, e))


def _softplus(x: ir.Value) -> ir.Value:
    # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))
    tail = math.log1p(math.exp(arith.negf(math.absf(x))))
    return arith.addf(arith.maximumf(x, _c(x, 0)), tail)


def _hard_sigmoid(x: ir.Value, alpha: float, beta: float) -> ir.Value:
    # max(0, min(1, alpha x + beta))
    line = arith.addf(arith.mulf(x, _c(x, alpha)), _c(x, beta))
    return arith.maximumf(arith.minimumf(line, _c(x, 1)), _c(x, 0))


def _elu(x: ir.Value, alpha: float, zero_is_negative: bool = False) -> ir.Value:
    # x < 0 ? alpha (exp(x) - 1) : x (ONNX's Elu); Selu's x <= 0 side is alpha's too (which
    # differs at 0 only for alpha = nan or inf)
    negative = arith.mulf(_c(x, alpha), math.expm1(x))
    if zero_is_negative:
        return arith.select(arith.cmpf(OGT, x, _c(x, 0)), x, negative)
    return arith.select(arith.cmpf(OLT, x, _c(x, 0)), negative, x)


def _celu(x: ir.Value, alpha: float) -> ir.Value:
    # max(0, x) + min(0, alpha (exp(x / alpha) - 1))
    negative = arith.mulf(_c(x, alpha), math.expm1(arith.divf(x, _c(x, alpha))))
    return arith.addf(arith.maximumf(x, _c(x, 0)), arith.minimumf(negative, _c(x, 0)))


def _leaky_relu(x: ir.Value, alpha: float) -> ir.Value:
    # x < 0 ? alpha x : x
    return arith.select(arith.cmpf(OLT, x, _c(x, 0)), arith.mulf(x, _c(x, alpha)), x)


def _thresholded_relu(x: ir.Value, alpha: float) -> ir.Value:
    # x > alpha ? x : 0
    return arith.select(arith.cmpf(OGT, x, _c(x, alpha)), x, _c(x, 0))


def _gelu(x: ir.Value) -> ir.Value:
    # x / 2 (1 + erf(x / sqrt(2)))
    erf = math.erf(arith.mulf(x, _c(x, pymath.sqrt(0.5))))
    return arith.mulf(arith.mulf(x, _c(x, 0.5)), arith.addf(_c(x, 1), erf))


def _gelu_tanh(x: ir.Value) -> ir.Value:
    # x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    cube = arith.mulf(arith.mulf(x, x), x)
    inner = arith.addf(x, arith.mulf(cube, _c(x, 0.044715)))
    tanh = math.tanh(arith.mulf(inner, _c(x, pymath.sqrt(2 / pymath.pi))))
    return arith.mulf(arith.mulf(x, _c(x, 0.5)), arith.addf(_c(x, 1), tanh))


def _shrink(x: ir.Value, bias: float, lambd: float) -> ir.Value:
    # x < -lambd ? x + bias : x > lambd ? x - bias : 0
    above = arith.select(arith.cmpf(OGT, x, _c(x, lambd)), arith.subf(x, _c(x, bias)), _c(x, 0))
    below = arith.cmpf(OLT, x, _c(x, -lambd))
    return arith.select(below, arith.addf(x, _c(x, bias)), above)


def _sign(x: ir.Value) -> ir.Value:
    # x > 0 ? 1 : x < 0 ? -1 : x (keeps 0, -0 and NaN)
    negative = arith.select(arith.cmpf(OLT, x, _c(x, 0)), _c(x, -1), x)
    return arith.select(arith.cmpf(OGT, x, _c(x, 0)), _c(x, 1), negative)


def _isinf(x: ir.Value, detect_positive: float, detect_negative: float) -> ir.Value:
    # (detect_positive and x == +inf) or (detect_negative and x == -inf)
    found = arith.constant(ir.IntegerType.get_signless(1), 0)
    if detect_positive:
        found = arith.ori(found, arith.cmpf(OEQ, x, _c(x, pymath.inf)))
    if detect_negative:
        found = arith.ori(found, arith.cmpf(OEQ, x, _c(x, -pymath.inf)))
    return found


FLOAT_BODIES: dict[str, FloatBody] = {
    "abs": lambda x, p: math.absf(x),
    "neg": lambda x, p: arith.negf(x),
    "sign": lambda x, p: _sign(x),
    "reciprocal": lambda x, p: arith.divf(_c(x, 1), x),
    "floor": lambda x, p: math.floor(x),
    "ceil": lambda x, p: math.ceil(x),
    "round": lambda x, p: math.roundeven(x),
    "exp": lambda x, p: math.exp(x),
    "log": lambda x, p: math.log(x),
    "sqrt": lambda x, p: math.sqrt(x),
    "erf": lambda x, p: math.erf(x),
    "sin": lambda x, p: math.sin(x),
    "cos": lambda x, p: math.cos(x),
    "tan": lambda x, p: math.tan(x),
    "asin": lambda x, p: math.asin(x),
    "acos": lambda x, p: math.acos(x),
    "atan": lambda x, p: math.atan(x),
    "sinh": lambda x, p: math.sinh(x),
    "cosh": lambda x, p: math.cosh(x),
    "tanh": lambda x, p: math.tanh(x),
    "asinh": lambda x, p: math.asinh(x),
    "acosh": lambda x, p: math.acosh(x),
    "atanh": lambda x, p: math.atanh(x),
    "sigmoid": lambda x, p: _sigmoid(x),
    "hard_sigmoid": lambda x, p: _hard_sigmoid(x, *p),
    # x hard_sigmoid(x) with ONNX's alpha = 1/6 as a float32 attribute, beta = 1/2
    "hard_swish": lambda x, p: arith.mulf(x, _hard_sigmoid(x, 0.1666666716337204, 0.5)),
    "elu": lambda x, p: _elu(x, *p),
    # gamma elu(x)
    "selu": lambda x, p: arith.mulf(_elu(x, p[0], zero_is_negative=True), _c(x, p[1])),
    "celu": lambda x, p: _celu(x, *p),
    "leaky_relu": lambda x, p: _leaky_relu(x, *p),
    "thresholded_relu": lambda x, p: _thresholded_relu(x, *p),
    "softplus": lambda x, p: _softplus(x),
    # x / (1 + |x|)
    "softsign": lambda x, p: arith.divf(x, arith.addf(_c(x, 1), math.absf(x))),
    # x tanh(softplus(x))
    "mish": lambda x, p: arith.mulf(x, math.tanh(_softplus(x))),
    "gelu": lambda x, p: _gelu(x),
    "gelu_tanh": lambda x, p: _gelu_tanh(x),
    # x sigmoid(alpha x)
    "swish": lambda x, p: arith.mulf(x, _sigmoid(x, *p)),
    "shrink": lambda x, p: _shrink(x, *p),
    "isnan": lambda x, p: arith.cmpf(arith.CmpFPredicate.UNO, x, x),
    "isinf": lambda x, p: _isinf(x, *p),
}


# ----------------------------------------------------------------------------- integer bodies


def _integer_sign(x: ir.Value, unsigned: bool) -> ir.Value:
    # x > 0 ? 1 : x < 0 ? -1 : 0 (unsigned: x != 0 ? 1 : 0)
    zero, one = _c(x, 0), _c(x, 1)
    if unsigned:
        return arith.select(arith.cmpi(arith.CmpIPredicate.ne, x, zero), one, zero)
    negative = arith.select(arith.cmpi(arith.CmpIPredicate.slt, x, zero), _c(x, -1), zero)
    return arith.select(arith.cmpi(arith.CmpIPredicate.sgt, x, zero), one, negative)


def _integer_shrink(x: ir.Value, params: Params, unsigned: bool) -> ir.Value:
    # shrink in f64, truncated back to the integer type (numpy's astype), as ONNX's reference
    f64 = ir.F64Type.get()
    wide = arith.uitofp(f64, x) if unsigned else arith.sitofp(f64, x)
    result = _shrink(wide, *params)
    return arith.fptoui(x.type, result) if unsigned else arith.fptosi(x.type, result)


INTEGER_BODIES: dict[str, IntegerBody] = {
    "abs": lambda x, p, unsigned: x if unsigned else math.absi(x),
    "neg": lambda x, p, unsigned: arith.subi(_c(x, 0), x),
    "sign": lambda x, p, unsigned: _integer_sign(x, unsigned),
    "shrink": _integer_shrink,
    # bool is stored as i8 0/1: not x = x xor 1
    "not": lambda x, p, unsigned: arith.xori(x, _c(x, 1)),
    "bitwise_not": lambda x, p, unsigned: arith.xori(x, _c(x, -1)),
}


# ----------------------------------------------------------------------------- the pattern


def _float_element(x: ir.Value, body: FloatBody, params: Params, predicate: bool) -> ir.Value:
    # f16/bf16: extf to f32, body, truncf back (predicates compare in the operand's type)
    if predicate:
        return arith.extui(ir.IntegerType.get_signless(8), body(x, params))
    if isinstance(x.type, (ir.F32Type, ir.F64Type)):
        return body(x, params)
    wide = arith.extf(ir.F32Type.get(), x)
    return arith.truncf(x.type, body(wide, params))


def lower_unary(op: ir.OpView, rewriter) -> bool | None:
    # dlc.unary{fn}(x) -> linalg.generic{body of fn}
    name = ir.StringAttr(op.attributes["fn"]).value
    params = [float(v) for v in ir.DenseF64ArrayAttr(op.attributes["params"])]
    kind = element_kind(source_types(op)[0][0])
    floating = kind == "float"
    body = (FLOAT_BODIES if floating else INTEGER_BODIES).get(name)
    if name not in FUNCTIONS or body is None:
        return True  # no lowering: dlc-verify rejects such an op first
    predicate = FUNCTIONS[name].predicate

    def element(x: ir.Value) -> ir.Value:
        if floating:
            return _float_element(x, body, params, predicate)
        return body(x, params, kind == "unsigned")

    with rewriter.ip, op.location:
        value = elementwise([op.operands[0]], op.results[0].type, element)
        rewriter.replace_op(op, [as_value(value)])
    return None


PATTERNS = {UNARY: lower_unary}
DYNAMIC_OPS = (UNARY,)
