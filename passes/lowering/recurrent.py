"""dlc.recurrence -> an scf.for over the time steps (`dialects/recurrent.py` has the op).

One iteration is the step of one direction of the layer: the matmul of the hidden state by
Rᵀ ([B, H] x [H, G·H], a `linalg.matmul` the matmul schedule tiles like any other), then one
elementwise `linalg.generic` over [B, H] reading the gates' slices of X_t·Wᵀ and of that
product and computing the new hidden (and cell) state, which is inserted into y at the step.
Every tensor the body writes is carried by the loop (y, the states, the product), so that
bufferization updates each in place and nothing is allocated per step. The IR has the same size
whatever the sequence length: a 32-step bidirectional LSTM unrolled was 1,400 dlc ops.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg, scf
from mlir.dialects import math as mmath
from mlir.dialects import tensor as mtensor

from dlc.dialects.core import op_def
from dlc.dialects.recurrent import ACTIVATIONS, KINDS, RECURRENCE, activation_list
from dlc.passes.lowering.builders import PARALLEL, scalar
from dlc.passes.lowering.unary import FLOAT_BODIES

Scalar = Callable[[ir.Value], ir.Value]
DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()


def _activation(name: str, params: list[float]) -> Scalar:
    fn = ACTIVATIONS[name][0]
    if fn == "relu":
        return lambda x: arith.maximumf(x, scalar(x.type, 0.0))
    if fn == "affine":  # alpha * x + beta
        alpha, beta = params
        return lambda x: arith.addf(arith.mulf(x, scalar(x.type, alpha)), scalar(x.type, beta))
    if fn == "scaled_tanh":  # alpha * tanh(beta * x)
        alpha, beta = params
        return lambda x: arith.mulf(mmath.tanh(arith.mulf(x, scalar(x.type, beta))),
                                    scalar(x.type, alpha))
    body = FLOAT_BODIES[fn]
    return lambda x: body(x, params)


def _clipped(f: Scalar, clip: list[float]) -> Scalar:
    # clip(x) = min(max(x, -clip), clip), applied to every activation's input
    if not clip:
        return f
    c = clip[0]
    return lambda x: f(arith.minimumf(arith.maximumf(x, scalar(x.type, -c)),
                                      scalar(x.type, c)))


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _slice(x: ir.Value, offsets: list[int | ir.Value], sizes: list[int],
           result: list[int]) -> ir.Value:
    """x[offsets : offsets + sizes] (an ir.Value offset is dynamic), rank-reduced to `result`."""
    dynamic = [o for o in offsets if isinstance(o, ir.Value)]
    static = [DYNAMIC if isinstance(o, ir.Value) else o for o in offsets]
    result_type = ir.RankedTensorType.get(result, x.type.element_type)
    return mtensor.ExtractSliceOp(result_type, x, dynamic, [], [], static, sizes,
                                  [1] * len(sizes)).result


def _insert(part: ir.Value, into: ir.Value, offsets: list[int | ir.Value],
            sizes: list[int]) -> ir.Value:
    dynamic = [o for o in offsets if isinstance(o, ir.Value)]
    static = [DYNAMIC if isinstance(o, ir.Value) else o for o in offsets]
    return mtensor.InsertSliceOp(part, into, dynamic, [], [], static, sizes,
                                 [1] * len(sizes)).result


def _cell(kind: str, acts: list[Scalar], input_forget: bool) -> Callable[..., list[ir.Value]]:
    """The scalar step, (x gates, product gates, extras, [h_prev (GRU)], h out, [c (LSTM)])
    -> [h, [c]]."""

    def rnn(x, p, _):
        return [acts[0](arith.addf(x, p))]

    def gru(xz, xr, xh, pz, pr, ph, *rest):
        # z, r = f(X + H·Rᵀ); h~ = g(Xh + r (H·Rhᵀ + Rbh)); h = h~ + z (h_prev - h~)
        *extra, h, _ = rest
        f, g = acts
        z, r = f(arith.addf(xz, pz)), f(arith.addf(xr, pr))
        recurrent = arith.addf(ph, extra[0]) if extra else ph
        candidate = g(arith.addf(xh, arith.mulf(r, recurrent)))
        return [arith.addf(candidate, arith.mulf(z, arith.subf(h, candidate)))]

    def lstm(xi, xo, xf, xc, pi, po, pf, pc, *rest):
        *peep, _, c = rest
        f, g, h_act = acts

        def gate(x, p, index, cell):
            pre = arith.addf(x, p)
            return arith.addf(pre, arith.mulf(peep[index], cell)) if peep else pre

        i = f(gate(xi, pi, 0, c))
        if input_forget:  # f = 1 - i
            forget = arith.subf(scalar(i.type, 1.0), i)
        else:
            forget = f(gate(xf, pf, 2, c))
        cell = g(arith.addf(xc, pc))
        c_new = arith.addf(arith.mulf(forget, c), arith.mulf(i, cell))
        o = f(gate(xo, po, 1, c_new))
        return [arith.mulf(o, h_act(c_new)), c_new]

    return {"rnn": rnn, "gru": gru, "lstm": lstm}[kind]


def lower_recurrence(op: ir.OpView, rewriter) -> None:
    # dlc.recurrence(x_gates, Rᵀ, initial[, extra]) -> scf.for: matmul, generic, into y[t]
    x_gates, weights, initial = op.operands[:3]
    extra = op.operands[3] if len(op.operands) > 3 else None
    attrs = op_def(op.operation).python_attributes(op.operation)
    kind, reverse = attrs["kind"], attrs["reverse"]
    gates, _, states = KINDS[kind]
    steps, batch, width = x_gates.type.shape
    hidden = width // gates
    element = x_gates.type.element_type
    acts = [_activation(name, params) for name, params in activation_list(attrs)]
    # the clip bounds the gates' pre-activations, not the cell an LSTM's h activation reads
    gated = 2 if kind == "lstm" else len(acts)
    acts = [_clipped(f, attrs["clip"]) if k < gated else f for k, f in enumerate(acts)]
    cell = _cell(kind, acts, bool(attrs["input_forget"]))
    state, one = [batch, hidden], [1, batch, hidden]
    identity = ir.AffineMap.get_identity(2)
    row = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    with rewriter.ip, op.location:
        # the hidden states live in one [T + 1, B, H] tensor, the initial one at slot 0 (T when
        # reverse): step t reads its predecessor's slot and writes its own, so that the loop
        # carries whole tensors at moving offsets, which it updates in place (a state carried
        # as its own [B, H] tensor is rewritten into a fresh tensor whenever the payload does
        # not read it, and the loop's yield is then no longer in place)
        first = steps if reverse else 0
        h0 = _slice(initial, [0, 0, 0], one, state)
        hs0 = _insert(h0, mtensor.EmptyOp([steps + 1, batch, hidden], element).result,
                      [first, 0, 0], one)
        product0 = mtensor.EmptyOp([batch, width], element).result
        carried0 = [hs0, product0]
        if kind == "lstm":  # the cell state: read by the payload, so updated in place
            carried0.append(_slice(initial, [1, 0, 0], one, state))
        extras = []
        if extra is not None:  # peepholes i, o, f ([3H]) or Rbh ([H])
            extras = [_slice(extra, [k * hidden], [hidden], [hidden])
                      for k in range(extra.type.shape[0] // hidden)]
        loop = scf.ForOp(_index(0), _index(steps), _index(1), carried0)
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            hs, product, *c = loop.inner_iter_args
            if reverse:  # t = T - 1 - i reads slot t + 1, writes slot t
                t = arith.subi(_index(steps - 1), i)
                read, write = arith.addi(t, _index(1)), t
            else:  # t = i reads slot i, writes slot i + 1
                t = read = i
                write = arith.addi(i, _index(1))
            h_prev = _slice(hs, [read, 0, 0], one, state)
            x_t = _slice(x_gates, [t, 0, 0], [1, batch, width], [batch, width])
            zeros = linalg.fill(scalar(element, 0.0), outs=[product])
            product = linalg.matmul(h_prev, weights, outs=[zeros])
            ins = [_slice(x_t, [0, g * hidden], state, state) for g in range(gates)]
            ins += [_slice(product, [0, g * hidden], state, state) for g in range(gates)]
            ins += extras
            maps = [identity] * (2 * gates) + [row] * len(extras)
            if kind == "gru":
                ins.append(h_prev)
                maps.append(identity)
            outs = [_slice(hs, [write, 0, 0], one, state)] + c

            @linalg.generic(ins, outs, maps + [identity] * len(outs), [PARALLEL, PARALLEL])
            def step(*args):
                return cell(*args)

            new = list(step) if len(outs) > 1 else [step]
            hs = _insert(new[0], hs, [write, 0, 0], one)
            scf.YieldOp([hs, product, *new[1:]])
        hs = loop.results[0]
        y = _slice(hs, [0 if reverse else 1, 0, 0], [steps, batch, hidden],
                   [steps, batch, hidden])
        final = _insert(_slice(hs, [0 if reverse else steps, 0, 0], one, state),
                        mtensor.EmptyOp([states, batch, hidden], element).result, [0, 0, 0],
                        one)
        if kind == "lstm":
            final = _insert(loop.results[2], final, [1, 0, 0], one)
        rewriter.replace_op(op, [y, final])


PATTERNS = {RECURRENCE: lower_recurrence}
