"""dlc-clip-taps: a dilated conv as convs of the output regions, each with its live taps only.

A padded conv reads padding (zeros) wherever a tap falls outside the input: tap k of output row
o reads input row o + k*d - pad (stride 1, dilation d), which is in the input for a range of o
only. With a large dilation most multiply-adds read padding: DeepLabV3's ASPP convs (3x3,
dilations 12, 24 and 36, padding equal to the dilation) on a 28x28 map read zeros with 49 %,
82 % and 89 % of theirs; at dilation 36 only the centre tap ever reads the input. onnxruntime's
conv clips the taps per output row; dlc's direct conv computed them all (DeepLabV3 2.4x
onnxruntime, 62 % of its time in those three convs).

Per dimension, the outputs fall in bands of consecutive rows with the same live taps (an
interval of k, at most 2K-1 bands); each pair of a row band and a column band is a conv of its
own, without padding, on the input window its live taps read, with the filter's live rows and
columns (a band with one live tap is a kernel of 1 there, a 1x1 conv where both are). The
regions' outputs are concatenated, columns then rows; each region conv carries the bias. Only
the multiply-adds that read the input are left (dilation 36: one 1x1 conv, 11 % of them).

Rewritten: 2-D f32 `dlc.conv_nhwc` of group 1, stride 1, a dilation above 1 (an undilated
conv reads padding at its borders only: ResNet's 7x7 maps would leave 82 % of the taps in
nine thin convs, its direct or Winograd schedule is faster), a constant filter, at least
`min-macs` multiply-adds, and live taps at most `max-live` (0.85) of them; no output row or
column may read padding only (its band would have no conv).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from dlc.dialects import build
from dlc.dialects.conv import CONV_NHWC
from dlc.dialects.movement import SLICE
from dlc.passes.graph.match import (
    apply_rules,
    attributes,
    concatenated,
    constant,
    constant_array,
)
from dlc.passes.registry import ModulePass, register

MAX_LIVE = 0.85  # live multiply-adds / all, at most
MIN_MACS = 1 << 24  # multiply-adds of a conv rewritten, at least

Band = tuple[int, int, int, int]  # outputs [o0, o1), live taps [k0, k1)


def bands(out: int, size: int, kernel: int, dilation: int, pad: int) -> list[Band] | None:
    """The output bands of one dimension (stride 1); None if an output reads padding only."""
    found: list[Band] = []
    for o in range(out):
        live = [k for k in range(kernel) if 0 <= o + k * dilation - pad < size]
        if not live:
            return None
        k0, k1 = live[0], live[-1] + 1
        if found and found[-1][2:] == (k0, k1):
            found[-1] = (found[-1][0], o + 1, k0, k1)
        else:
            found.append((o, o + 1, k0, k1))
    return found


def _live_fraction(rows: list[Band], cols: list[Band], kh: int, kw: int) -> float:
    out_h, out_w = rows[-1][1], cols[-1][1]
    live = sum((r1 - r0) * (rk1 - rk0) for r0, r1, rk0, rk1 in rows) * \
        sum((c1 - c0) * (ck1 - ck0) for c0, c1, ck0, ck1 in cols)
    return live / (out_h * out_w * kh * kw)


Plan = tuple[list[Band], list[Band], np.ndarray]  # row bands, column bands, the filter


def plan(op: ir.OpView, max_live: float, min_macs: int) -> Plan | None:
    """The row and column bands of conv_nhwc `op` and its constant filter when this pass
    rewrites it, else None."""
    x, w = op.operands[0], op.operands[1]
    y = op.results[0]
    if not (x.type.has_static_shape and w.type.has_static_shape and x.type.rank == 4
            and y.type.has_static_shape and isinstance(x.type.element_type, ir.F32Type)):
        return None
    attrs = attributes(op)
    dilations = list(attrs["dilations"])
    if attrs["group"] != 1 or list(attrs["strides"]) != [1, 1] or max(dilations) < 2:
        return None
    kh, kw, c, f = w.type.shape
    n, h, wd, _ = x.type.shape
    _, oh, ow, _ = y.type.shape
    if 0 in (n, oh, ow, c, f) or n * oh * ow * kh * kw * c * f < min_macs:
        return None
    top, left = attrs["pads"][:2]
    rows = bands(oh, h, kh, dilations[0], top)
    cols = bands(ow, wd, kw, dilations[1], left)
    if rows is None or cols is None or _live_fraction(rows, cols, kh, kw) > max_live:
        return None
    filt = constant_array(w)
    return None if filt is None else (rows, cols, filt)


def clip(op: ir.OpView, rows: list[Band], cols: list[Band], filt: np.ndarray) -> ir.Value:
    """The region convs of conv_nhwc `op` (filter `filt`), concatenated: its result's
    replacement."""
    x = op.operands[0]
    loc = op.location
    element = x.type.element_type
    n, _, _, c = x.type.shape
    attrs = attributes(op)
    dh, dw = attrs["dilations"]
    top, left = attrs["pads"][:2]
    filters: dict[tuple[int, int, int, int], ir.Value] = {}
    band_rows = []
    for r0, r1, rk0, rk1 in rows:
        parts = []
        for c0, c1, ck0, ck1 in cols:
            key = (rk0, rk1, ck0, ck1)
            if key not in filters:
                filters[key] = constant(np.ascontiguousarray(filt[rk0:rk1, ck0:ck1]), element,
                                        loc)
            # the window its live taps read: rows r0 + rk0*dh - top ... (r1 - 1) + (rk1 - 1)*dh
            # - top, all inside the input
            start_h, start_w = r0 + rk0 * dh - top, c0 + ck0 * dw - left
            size_h = (r1 - r0 - 1) + (rk1 - rk0 - 1) * dh + 1
            size_w = (c1 - c0 - 1) + (ck1 - ck0 - 1) * dw + 1
            window = build(SLICE, [x], {"starts": [0, start_h, start_w, 0],
                                        "sizes": [n, size_h, size_w, c],
                                        "steps": [1, 1, 1, 1]}, loc=loc)
            dilations = [dh if rk1 - rk0 > 1 else 1, dw if ck1 - ck0 > 1 else 1]
            parts.append(build(CONV_NHWC, [window, filters[key], *op.operands[2:]],
                               {"strides": [1, 1], "dilations": dilations,
                                "pads": [0, 0, 0, 0], "group": 1}, loc=loc))
        band_rows.append(concatenated(parts, 2, loc))
    return concatenated(band_rows, 1, loc)


@register
@dataclass(frozen=True)
class ClipTaps(ModulePass):
    """Dilated convs as convs of their output regions with the live taps only (module doc)."""

    name = "dlc-clip-taps"
    max_live: float = MAX_LIVE  # live multiply-adds / all of a conv rewritten, at most
    min_macs: int = MIN_MACS  # its multiply-adds, at least

    def run(self, module: ir.Operation) -> None:
        def rule(op: ir.OpView) -> list[ir.Value] | None:
            found = plan(op, self.max_live, self.min_macs)
            return None if found is None else [clip(op, *found)]

        apply_rules(module, {CONV_NHWC: [rule]})
