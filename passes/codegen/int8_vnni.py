"""The integer matmul kernel of AVX-512 VNNI CPUs: `vpdpbusd` (u8 x s8, 4 products summed into
each i32 lane, exact: no saturation) for the f32 matmuls of small integers that
`int8_matmul.match` finds (MatMulInteger / QLinearMatMul as imported).

Match (`int8_matmul.match`, on the AVX-512 target of a CPU with `avx512_vnni`): as the AVX2
kernel's, and besides: B's values are s8 ([-128, 127]), and each row of A spans at most 255
(`value_range.row_span`: MatMulInteger's A is `uitofp(a) - zero point`, the zero point a
run-time scalar: values in [-255, 255], 255 apart at most within a row).

The kernel (`kernel_text`, MLIR text on tensors, inlined in place of the matmul):
- each row m of A is moved into u8 by its minimum: off[m] = min_k A[m, k], A8[m, k] = A[m, k]
  - off[m] in [0, 255] (rows padded with zeros to a multiple of MR, K with zeros to a
  multiple of 4);
- B is packed at compile time as s8 [N/NP][K/4][NV x 16 x 4] (`packed_b`, NP = 16 NV columns a
  panel): for each panel and each quad of rows k..k+3, lane j of vector v holds b[k..k+3][16v
  + j], the layout of vpdpbusd's signed operand; its column sums colsum[n] too (i32);
- an `scf.forall` over the panels, a loop over blocks of MR rows and, innermost, over the K
  quads: NV vector loads of B, per row a broadcast of the 4 bytes A8[m, 4q..4q+3] and NV
  vpdpbusd into MR x NV accumulators of 16 i32;
- the epilogue adds off[m] * colsum[n] (so each sum is that of A's values: exact, wrapping in
  i32 only in between) and converts to f32 once.
Convolutions (`conv_kernel_text`, `int8_matmul._match_conv`): a `linalg.conv_2d_nhwc_hwcf` of
integers, as `dlc-qdq-conv` makes of the static QDQ convs (x the centered activation, padded;
a constant s8 filter; a zero init), whose input values lie within 255 of each other
(`value_range`, the padding's zeros included): x is moved into u8 once by the range's low end
(x8 [pixels, C4], channels padded to a multiple of 4), the filter packed as the matrix [taps x
C4, F] (`packed_filter`), and each block of MR output pixels reads its taps' channel quads
from x8 directly (no im2col copy); the epilogue adds low * colsum.

The quads of products are written in pure arith (`_expand_quads`: the 4 byte lanes of each
dword extended, multiplied, summed, added to the accumulator), which bufferization accepts;
`dlc-lower-vectors` makes them `llvm.x86.avx512.vpdpbusd.512` (`lower_quads`). Where that
does not happen the pure form still computes the same sums, slowly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import llvm

from dlc.passes.codegen.value_range import is_op
from dlc.passes.walk import ops_where

MR = 8  # rows of the register tile
NV = 2  # vectors of 16 i32 per row of the register tile
NP = 16 * NV  # columns of a panel
INTRINSIC = "llvm.x86.avx512.vpdpbusd.512"
U8_SPAN = 255


def fits(b: np.ndarray, a_bound: int, k: int) -> bool:
    """Whether B's values are s8 and the sums fit i32: the u8 sums (K * 255 * 128) and the
    final ones (K * max|a| * max|b|)."""
    if b.size == 0 or b.min() < -128 or b.max() > 127:
        return False
    b_bound = int(np.abs(b).max())
    return k * U8_SPAN * 128 < 1 << 31 and k * a_bound * b_bound < 1 << 31


def packed_b(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """B [K, N] (integers in [-128, 127]) -> (packed [ceil(N/NP), ceil(K/4), NP * 4] i8: panel
    p, quad q, byte 4c + i = b[4q + i][NP p + c]; column sums [ceil(N/NP), NP] i32), zeros
    past K and N."""
    k, n = b.shape
    quads, panels = -(-k // 4), -(-n // NP)
    padded = np.zeros([4 * quads, panels * NP], np.int8)
    padded[:k, :n] = b.astype(np.int8)
    # [quads, 4, panels, NP] -> [panels, quads, NP, 4]
    packed = np.ascontiguousarray(padded.reshape(quads, 4, panels, NP).transpose(2, 0, 3, 1))
    sums = padded.astype(np.int32).sum(axis=0).reshape(panels, NP)
    return packed.reshape(panels, quads, 4 * NP), np.ascontiguousarray(sums, np.int32)


# ----------------------------------------------------------------------------- the kernel


def _chunks(size: int, step: int = 16) -> list[tuple[int, int]]:
    """(start, lanes) covering [0, size): whole `step`s (the first's start stands for a loop),
    then the rest."""
    out = [(0, step)] if size >= step else []
    if size % step:
        out.append((size - size % step, size % step))
    return out


def _zeros(tag: str, tensor: str, row: str, start: int, count: int, tensor_type: str
           ) -> tuple[list[str], str]:
    """Lines writing `count` zero bytes at [row, start..] of `tensor` (16 at a time, then the
    rest; a fill of the whole tensor ran as scalar loops), and the tensor they make."""
    out, current = [], tensor
    for index, column in enumerate(range(start, start + count, 16)):
        lanes = min(16, start + count - column)
        name = f"%zw{tag}_{index}"
        out += [f"%zv{tag}_{index} = arith.constant dense<0> : vector<{lanes}xi8>",
                f"%zc{tag}_{index} = arith.constant {column} : index",
                (f"{name} = vector.transfer_write %zv{tag}_{index}, {current}[{row}, "
                 f"%zc{tag}_{index}] {{in_bounds = [true]}} : vector<{lanes}xi8>, {tensor_type}")]
        current = name
    return out, current


def close_strips(emit, last: str, strip_type: str, out_type: str, c_type: str, rows: int,
                 width: int, m: int, n: int, padded: bool) -> str:
    """The end of an integer kernel's `scf.forall` over column strips of `width` (this file's
    and `int8_matmul.kernel_text`'s): the strip's tile yielded and inserted into the output,
    then the output sliced back to [m, n] when `padded`; the result's SSA name."""
    emit(f"      scf.yield {last} : {strip_type}")
    emit("    }")
    emit("    scf.forall.in_parallel {")
    emit(f"      tensor.parallel_insert_slice %res into %o[0, %n0] [{rows}, {width}] [1, 1] : "
         f"{strip_type} into {out_type}")
    emit("    }")
    emit("  }")
    if not padded:
        return "%out"
    emit(f"  %r = tensor.extract_slice %out[0, 0] [{m}, {n}] [1, 1] : {out_type} to {c_type}")
    return "%r"


def _row_conversion(m: int, k: int, rows: int, width: int, a_type: str, a8_type: str,
                    off_type: str) -> list[str]:
    """%a8, %off: each row of A minus its minimum as u8, the minimum as i32 (columns past k
    and rows past m: zeros)."""
    body = k - k % 16
    out = [(f"  %conv:2 = scf.for %i = %c0 to %c{m} step %c1 "
           f"iter_args(%t8 = %e8, %toff = %zoff) -> ({a8_type}, {off_type}) {{")]
    # the row's minimum: 16 lanes at a time, then the rest
    current = "%inf"
    if body:
        out += [(f"    %mv = scf.for %j = %c0 to %c{body} step %c16 iter_args(%acc = %infv) "
                "-> (vector<16xf32>) {"),
                (f"      %v = vector.transfer_read %a[%i, %j], %zerof {{in_bounds = [true]}} : "
                f"{a_type}, vector<16xf32>"),
                "      %w = arith.minimumf %acc, %v : vector<16xf32>",
                "      scf.yield %w : vector<16xf32>", "    }",
                "    %mb = vector.reduction <minimumf>, %mv : vector<16xf32> into f32"]
        current = "%mb"
    if k % 16:
        lanes = k % 16
        out += [f"    %cr = arith.constant {body} : index",
                (f"    %vr = vector.transfer_read %a[%i, %cr], %zerof {{in_bounds = [true]}} : "
                f"{a_type}, vector<{lanes}xf32>"),
                f"    %mr = vector.reduction <minimumf>, %vr : vector<{lanes}xf32> into f32",
                f"    %mrr = arith.minimumf {current}, %mr : f32"]
        current = "%mrr"
    out += [f"    %mins = vector.broadcast {current} : f32 to vector<16xf32>",
            f"    %offi = arith.fptosi {current} : f32 to i32",
            f"    %toff2 = tensor.insert %offi into %toff[%i] : {off_type}"]

    def store(tag: str, column: str, lanes: int, tensor: str) -> list[str]:
        mins = "%mins" if lanes == 16 else f"%mins{tag}"
        lines = [] if lanes == 16 else [
            f"%mins{tag} = vector.broadcast {current} : f32 to vector<{lanes}xf32>"]
        return lines + [
            (f"%x{tag} = vector.transfer_read %a[%i, {column}], %zerof {{in_bounds = [true]}} : "
            f"{a_type}, vector<{lanes}xf32>"),
            f"%d{tag} = arith.subf %x{tag}, {mins} : vector<{lanes}xf32>",
            f"%n{tag} = arith.fptosi %d{tag} : vector<{lanes}xf32> to vector<{lanes}xi32>",
            f"%b{tag} = arith.trunci %n{tag} : vector<{lanes}xi32> to vector<{lanes}xi8>",
            (f"%u{tag} = vector.transfer_write %b{tag}, {tensor}[%i, {column}] "
            f"{{in_bounds = [true]}} : vector<{lanes}xi8>, {a8_type}")]

    row = "%t8"
    if body:
        out.append(f"    %r8 = scf.for %j = %c0 to %c{body} step %c16 iter_args(%s8 = %t8) "
                   f"-> ({a8_type}) {{")
        out += ["      " + x for x in store("l", "%j", 16, "%s8")]
        out += [f"      scf.yield %ul : {a8_type}", "    }"]
        row = "%r8"
    if k % 16:
        out += ["    " + x for x in store("r", "%cr", k % 16, row)]
        row = "%ur"
    lines, row = _zeros("k", row, "%i", k, width - k, a8_type)
    out += ["    " + x for x in lines]
    out += [f"    scf.yield {row}, %toff2 : {a8_type}, {off_type}", "  }"]
    if rows > m:  # (the padding rows: zeros, an offset of 0 from the fill)
        out.append(f"  %pad8 = scf.for %i = %c{m} to %c{rows} step %c1 "
                   f"iter_args(%p8 = %conv#0) -> ({a8_type}) {{")
        lines, row = _zeros("m", "%p8", "%i", 0, width, a8_type)
        out += ["    " + x for x in lines]
        out += [f"    scf.yield {row} : {a8_type}", "  }"]
    return out


def kernel_text(m: int, n: int, k: int, name: str = "int8_vnni") -> str:
    """A private function (A [M, K] f32, packed B, column sums) -> [M, N] f32: the kernel
    (module docstring), as MLIR text."""
    quads, panels = -(-k // 4), -(-n // NP)
    rows, cols, width = -(-m // MR) * MR, panels * NP, 4 * quads
    a_type, c_type = f"tensor<{m}x{k}xf32>", f"tensor<{m}x{n}xf32>"
    a8_type, off_type = f"tensor<{rows}x{width}xi8>", f"tensor<{rows}xi32>"
    b_type, sums_type = f"tensor<{panels}x{quads}x{4 * NP}xi8>", f"tensor<{panels}x{NP}xi32>"
    out_type, strip_type = f"tensor<{rows}x{cols}xf32>", f"tensor<{rows}x{NP}xf32>"
    acc = "vector<16xi32>"
    text = [(f"func.func private @{name}(%a: {a_type}, %b: {b_type}, %sums: {sums_type}) "
            f"-> {c_type} {{")]
    emit = text.append
    for value in sorted({0, 1, 4, 16, MR, NP, m, rows, quads, k - k % 16} | set(range(MR))):
        emit(f"  %c{value} = arith.constant {value} : index")
    emit("  %zero8 = arith.constant 0 : i8")
    emit("  %zero32 = arith.constant 0 : i32")
    emit("  %zerof = arith.constant 0.0 : f32")
    emit("  %inf = arith.constant 0x7F800000 : f32")
    emit("  %infv = arith.constant dense<0x7F800000> : vector<16xf32>")
    emit(f"  %zeroi = arith.constant dense<0> : {acc}")
    emit(f"  %e8 = tensor.empty() : {a8_type}")
    emit(f"  %eoff = tensor.empty() : {off_type}")
    emit(f"  %zoff = linalg.fill ins(%zero32 : i32) outs(%eoff : {off_type}) -> {off_type}")
    text += _row_conversion(m, k, rows, width, a_type, a8_type, off_type)
    emit(f"  %e = tensor.empty() : {out_type}")
    emit(f"  %out = scf.forall (%p) in ({panels}) shared_outs(%o = %e) -> ({out_type}) {{")
    emit(f"    %n0 = arith.muli %p, %c{NP} : index")
    emit(f"    %strip = tensor.extract_slice %o[0, %n0] [{rows}, {NP}] [1, 1] : "
         f"{out_type} to {strip_type}")
    for v in range(NV):
        emit(f"    %cv{v} = arith.constant {16 * v} : index")
        emit(f"    %cs{v} = vector.transfer_read %sums[%p, %cv{v}], %zero32 {{in_bounds = [true]}}"
             f" : {sums_type}, {acc}")
        emit(f"    %cb{v} = arith.constant {64 * v} : index")
    emit(f"    %res = scf.for %ib = %c0 to %c{rows} step %c{MR} iter_args(%s = %strip) -> "
         f"({strip_type}) {{")
    for r in range(MR):
        emit(f"      %row{r} = arith.addi %ib, %c{r} : index")
    accs = [f"%x{r}_{v}" for r in range(MR) for v in range(NV)]
    inits = ", ".join(f"{x} = %zeroi" for x in accs)
    emit(f"      %acc:{len(accs)} = scf.for %kq = %c0 to %c{quads} step %c1 "
         f"iter_args({inits}) -> ({', '.join([acc] * len(accs))}) {{")
    emit("        %col = arith.muli %kq, %c4 : index")
    for v in range(NV):
        emit(f"        %bv{v} = vector.transfer_read %b[%p, %kq, %cb{v}], %zero8 "
             f"{{in_bounds = [true]}} : {b_type}, vector<64xi8>")
    results = []
    for r in range(MR):
        emit(f"        %pa{r} = vector.transfer_read %a8[%row{r}, %col], %zero8 "
             f"{{in_bounds = [true]}} : {a8_type}, vector<4xi8>")
        emit(f"        %pw{r} = vector.bitcast %pa{r} : vector<4xi8> to vector<1xi32>")
        emit(f"        %ps{r} = vector.extract %pw{r}[0] : i32 from vector<1xi32>")
        emit(f"        %pb{r} = vector.broadcast %ps{r} : i32 to {acc}")
        emit(f"        %ph{r} = vector.bitcast %pb{r} : {acc} to vector<64xi8>")
        for v in range(NV):
            emit(f"        %y{r}_{v} = {QUADS}(%x{r}_{v}, %ph{r}, %bv{v}, {r}_{v})")
            results.append(f"%y{r}_{v}")
    emit(f"        scf.yield {', '.join(results)} : {', '.join([acc] * len(accs))}")
    emit("      }")
    last = "%s"
    for r in range(MR):
        emit(f"      %of{r} = tensor.extract %a8off[%row{r}] : {off_type}")
        emit(f"      %ob{r} = vector.broadcast %of{r} : i32 to {acc}")
        for v in range(NV):
            index = NV * r + v
            emit(f"      %cm{r}_{v} = arith.muli %ob{r}, %cs{v} : {acc}")
            emit(f"      %ca{r}_{v} = arith.addi %acc#{index}, %cm{r}_{v} : {acc}")
            emit(f"      %f{r}_{v} = arith.sitofp %ca{r}_{v} : {acc} to vector<16xf32>")
            emit(f"      %s{r}_{v} = vector.transfer_write %f{r}_{v}, {last}[%row{r}, "
                 f"%cv{v}] {{in_bounds = [true]}} : vector<16xf32>, {strip_type}")
            last = f"%s{r}_{v}"
    result = close_strips(emit, last, strip_type, out_type, c_type, rows, NP, m, n,
                          rows != m or cols != n)
    emit(f"  return {result} : {c_type}")
    emit("}")
    joined = "\n".join(_expand_quads(line) for line in text)
    return joined.replace("%a8[", "%pad8[" if rows > m else "%conv#0[").replace(
        "%a8off[", "%conv#1[")


QUADS = "@quads"  # (a placeholder of `kernel_text`, expanded by `_expand_quads`)


def _lanes(quarter: int) -> str:
    return ", ".join(str(4 * j + quarter) for j in range(16))


def _expand_quads(line: str) -> str:
    """`%y = @quads(%acc, %a, %b, id)` -> the pure form of vpdpbusd: byte i of each dword of
    a (unsigned) and of b (signed) extended to i32, multiplied, the 4 products summed and
    added to acc (`lower_quads` makes it the intrinsic after bufferization)."""
    if QUADS not in line:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    result, call = (part.strip() for part in line.split("=", 1))
    accumulator, a, b, tag = (x.strip() for x in call[len(QUADS) + 1: -1].split(","))
    v64, v16, w16 = "vector<64xi8>", "vector<16xi8>", "vector<16xi32>"
    out = []
    for quarter in range(4):
        for x, side, ext in ((a, "a", "extui"), (b, "b", "extsi")):
            out.append(f"%q{side}{quarter}_{tag} = vector.shuffle {x}, {x} [{_lanes(quarter)}] "
                       f": {v64}, {v64}")
            out.append(f"%e{side}{quarter}_{tag} = arith.{ext} %q{side}{quarter}_{tag} : {v16} "
                       f"to {w16}")
        out.append(f"%m{quarter}_{tag} = arith.muli %ea{quarter}_{tag}, %eb{quarter}_{tag} : {w16}")
    out.append(f"%h0_{tag} = arith.addi %m0_{tag}, %m1_{tag} : {w16}")
    out.append(f"%h1_{tag} = arith.addi %m2_{tag}, %m3_{tag} : {w16}")
    out.append(f"%h_{tag} = arith.addi %h0_{tag}, %h1_{tag} : {w16}")
    out.append(f"{result} = arith.addi {accumulator}, %h_{tag} : {w16}")
    return "\n".join(indent + x for x in out)


# ----------------------------------------------------------------------------- after bufferization


def _quarter_of(value: ir.Value, ext: str) -> tuple[ir.Value, int] | None:
    """(x, i) when value = `ext`(shuffle(x, x, byte i of each dword of 64 x i8))."""
    owner = value.owner
    if not is_op(owner) or owner.name != ext:
        return None
    shuffle = owner.operands[0].owner
    if not is_op(shuffle) or shuffle.name != "vector.shuffle":
        return None
    x, y = shuffle.operands
    if x != y or str(x.type) != "vector<64xi8>":
        return None
    mask = tuple(ir.DenseI64ArrayAttr(shuffle.attributes["mask"]))
    quarter = next((q for q in range(4) if mask == tuple(4 * j + q for j in range(16))), None)
    return None if quarter is None else (x, quarter)


def _product(value: ir.Value) -> tuple[ir.Value, ir.Value, int] | None:
    """(a, b, i) when value = extui(quarter i of a) * extsi(quarter i of b)."""
    mul = value.owner
    if not is_op(mul) or mul.name != "arith.muli":
        return None
    for first, second in ((0, 1), (1, 0)):
        a = _quarter_of(mul.operands[first], "arith.extui")
        b = _quarter_of(mul.operands[second], "arith.extsi")
        if a is not None and b is not None and a[1] == b[1]:
            return a[0], b[0], a[1]
    return None


def _sum_of_quads(value: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """(a, b) when value = (p0 + p1) + (p2 + p3), the products of the 4 quarters of a, b."""
    top = value.owner
    if not is_op(top) or top.name != "arith.addi":
        return None
    products = []
    for half in top.operands:
        owner = half.owner
        if not is_op(owner) or owner.name != "arith.addi":
            return None
        products += [_product(v) for v in owner.operands]
    if None in products or sorted(p[2] for p in products) != [0, 1, 2, 3] \
            or len({(p[0], p[1]) for p in products}) != 1:
        return None
    return products[0][0], products[0][1]


def lower_quads(module: ir.Operation) -> int:
    """acc + (the 4 quarters' products of u8 a and s8 b, summed) (`_expand_quads`) ->
    `llvm.x86.avx512.vpdpbusd.512`(acc, a, b), once bufferization is done. How many."""
    found = ops_where(module, lambda op: op.name == "arith.addi"
                      and str(op.results[0].type) == "vector<16xi32>")
    done = 0
    for op in found:
        for accumulator, quads in ((op.operands[0], op.operands[1]),
                                   (op.operands[1], op.operands[0])):
            pair = _sum_of_quads(quads)
            if pair is None:
                continue
            a, b = pair
            with ir.InsertionPoint(op), op.location:
                call = llvm.call_intrinsic(op.results[0].type, INTRINSIC,
                                           [accumulator, a, b], [], [])
            op.results[0].replace_all_uses_with(call)
            op.erase()
            done += 1
            break
    return done


# ----------------------------------------------------------------------------- convolutions


@dataclass(frozen=True)
class ConvShape:
    """A `linalg.conv_2d_nhwc_hwcf` on a padded input x [n, hp, wp, c], filter [kh, kw, c, f],
    output [n, oh, ow, f], its strides and dilations, and the offset taking x's values into u8
    (x - low in [0, 255])."""

    n: int
    hp: int
    wp: int
    c: int
    kh: int
    kw: int
    f: int
    oh: int
    ow: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    low: int


def packed_filter(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Filter [KH, KW, C, F] (s8 values) -> `packed_b` of the [KH * KW * C4, F] matrix whose
    row (t * C4 + c) is tap t's channel c (C padded to C4, a multiple of 4, with zero rows)."""
    kh, kw, c, f = w.shape
    c4 = -(-c // 4) * 4
    padded = np.zeros([kh * kw, c4, f], w.dtype)
    padded[:, :c] = w.reshape(kh * kw, c, f)
    return packed_b(padded.reshape(kh * kw * c4, f))


def conv_kernel_text(s: ConvShape, name: str = "int8_vnni_conv") -> str:
    """A private function (x [n, hp, wp, c] f32, packed filter, column sums) -> [n, oh, ow, f]
    f32: x moved into u8 by `low` into x8 [n * hp * wp, C4]; for each block of MR output
    pixels (m = (n, oh, ow) in row-major order; rows past M read pixel 0) and each tap, the
    pixels' channel quads against the filter's (a direct convolution: no im2col copy); the
    epilogue adds low * colsum. As MLIR text."""
    c4 = -(-s.c // 4) * 4
    taps, cquads = s.kh * s.kw, c4 // 4
    quads, panels = taps * cquads, -(-s.f // NP)
    m = s.n * s.oh * s.ow
    rows, cols, pixels = -(-m // MR) * MR, panels * NP, s.n * s.hp * s.wp
    x_type = f"tensor<{s.n}x{s.hp}x{s.wp}x{s.c}xf32>"
    flat_type, x8_type = f"tensor<{pixels}x{s.c}xf32>", f"tensor<{pixels}x{c4}xi8>"
    y_type, c_type = f"tensor<{s.n}x{s.oh}x{s.ow}x{s.f}xf32>", f"tensor<{m}x{s.f}xf32>"
    b_type, sums_type = f"tensor<{panels}x{quads}x{4 * NP}xi8>", f"tensor<{panels}x{NP}xi32>"
    out_type, strip_type = f"tensor<{rows}x{cols}xf32>", f"tensor<{rows}x{NP}xf32>"
    acc = "vector<16xi32>"
    body = s.c - s.c % 16
    text = [(f"func.func private @{name}(%x: {x_type}, %b: {b_type}, %sums: {sums_type}) "
             f"-> {y_type} {{")]
    emit = text.append
    constants = {0, 1, 4, 16, MR, NP, m, rows, pixels, taps, cquads, s.kw, s.ow, s.oh,
                 s.hp * s.wp, s.wp, s.stride[0] * s.wp, s.stride[1], s.dilation[0] * s.wp,
                 s.dilation[1], body} | set(range(MR))
    for value in sorted(constants):
        emit(f"  %c{value} = arith.constant {value} : index")
    emit("  %zero8 = arith.constant 0 : i8")
    emit("  %zero32 = arith.constant 0 : i32")
    emit("  %zerof = arith.constant 0.0 : f32")
    emit(f"  %zeroi = arith.constant dense<0> : {acc}")
    emit(f"  %lowv = arith.constant dense<{s.low}> : {acc}")
    # x -> x8 [pixels, C4]: x - low as u8, channels past C zeros
    emit(f"  %flat = tensor.collapse_shape %x [[0, 1, 2], [3]] : {x_type} into {flat_type}")
    emit(f"  %e8 = tensor.empty() : {x8_type}")
    emit(f"  %x8 = scf.for %i = %c0 to %c{pixels} step %c1 iter_args(%t8 = %e8) -> ({x8_type}) {{")

    def store(tag: str, column: str, lanes: int, tensor: str) -> list[str]:
        return [
            f"%l{tag} = arith.constant dense<{float(s.low)}> : vector<{lanes}xf32>",
            (f"%v{tag} = vector.transfer_read %flat[%i, {column}], %zerof {{in_bounds = [true]}}"
             f" : {flat_type}, vector<{lanes}xf32>"),
            f"%d{tag} = arith.subf %v{tag}, %l{tag} : vector<{lanes}xf32>",
            f"%n{tag} = arith.fptosi %d{tag} : vector<{lanes}xf32> to vector<{lanes}xi32>",
            f"%q{tag} = arith.trunci %n{tag} : vector<{lanes}xi32> to vector<{lanes}xi8>",
            (f"%u{tag} = vector.transfer_write %q{tag}, {tensor}[%i, {column}] "
             f"{{in_bounds = [true]}} : vector<{lanes}xi8>, {x8_type}")]

    row = "%t8"
    if body:
        emit(f"    %r8 = scf.for %j = %c0 to %c{body} step %c16 iter_args(%s8 = %t8) "
             f"-> ({x8_type}) {{")
        text += ["      " + x for x in store("l", "%j", 16, "%s8")]
        emit(f"      scf.yield %ul : {x8_type}")
        emit("    }")
        row = "%r8"
    if s.c % 16:
        emit(f"    %cr = arith.constant {body} : index")
        text += ["    " + x for x in store("r", "%cr", s.c % 16, row)]
        row = "%ur"
    lines, row = _zeros("c", row, "%i", s.c, c4 - s.c, x8_type)
    text += ["    " + x for x in lines]
    emit(f"    scf.yield {row} : {x8_type}")
    emit("  }")
    # the panels (threads), the blocks of MR output pixels, the taps, the channel quads
    emit(f"  %e = tensor.empty() : {out_type}")
    emit(f"  %out = scf.forall (%p) in ({panels}) shared_outs(%o = %e) -> ({out_type}) {{")
    emit(f"    %n0 = arith.muli %p, %c{NP} : index")
    emit(f"    %strip = tensor.extract_slice %o[0, %n0] [{rows}, {NP}] [1, 1] : "
         f"{out_type} to {strip_type}")
    for v in range(NV):
        emit(f"    %cv{v} = arith.constant {16 * v} : index")
        emit(f"    %cs{v} = vector.transfer_read %sums[%p, %cv{v}], %zero32 {{in_bounds = [true]}}"
             f" : {sums_type}, {acc}")
        emit(f"    %co{v} = arith.muli %cs{v}, %lowv : {acc}")
        emit(f"    %cb{v} = arith.constant {64 * v} : index")
    emit(f"    %res = scf.for %ib = %c0 to %c{rows} step %c{MR} iter_args(%s = %strip) -> "
         f"({strip_type}) {{")
    for r in range(MR):  # (the pixel of row r: n, oh, ow of m = ib + r; past M: pixel 0)
        emit(f"      %row{r} = arith.addi %ib, %c{r} : index")
        emit(f"      %in{r} = arith.cmpi ult, %row{r}, %c{m} : index")
        emit(f"      %mm{r} = arith.select %in{r}, %row{r}, %c0 : index")
        emit(f"      %ow{r} = arith.remui %mm{r}, %c{s.ow} : index")
        emit(f"      %q{r} = arith.divui %mm{r}, %c{s.ow} : index")
        emit(f"      %oh{r} = arith.remui %q{r}, %c{s.oh} : index")
        emit(f"      %nn{r} = arith.divui %q{r}, %c{s.oh} : index")
        emit(f"      %bn{r} = arith.muli %nn{r}, %c{s.hp * s.wp} : index")
        emit(f"      %bh{r} = arith.muli %oh{r}, %c{s.stride[0] * s.wp} : index")
        emit(f"      %bw{r} = arith.muli %ow{r}, %c{s.stride[1]} : index")
        emit(f"      %bs{r} = arith.addi %bn{r}, %bh{r} : index")
        emit(f"      %base{r} = arith.addi %bs{r}, %bw{r} : index")
    accs = [f"%x{r}_{v}" for r in range(MR) for v in range(NV)]
    types = ", ".join([acc] * len(accs))
    inits = ", ".join(f"{x} = %zeroi" for x in accs)
    emit(f"      %acc:{len(accs)} = scf.for %t = %c0 to %c{taps} step %c1 "
         f"iter_args({inits}) -> ({types}) {{")
    emit(f"        %th = arith.divui %t, %c{s.kw} : index")
    emit(f"        %tw = arith.remui %t, %c{s.kw} : index")
    emit(f"        %sh = arith.muli %th, %c{s.dilation[0] * s.wp} : index")
    emit(f"        %sw = arith.muli %tw, %c{s.dilation[1]} : index")
    emit("        %shift = arith.addi %sh, %sw : index")
    emit(f"        %tq = arith.muli %t, %c{cquads} : index")
    for r in range(MR):
        emit(f"        %px{r} = arith.addi %base{r}, %shift : index")
    inner = [f"%w{r}_{v}" for r in range(MR) for v in range(NV)]
    inner_inits = ", ".join(f"{w} = {x}" for w, x in zip(inner, accs))
    emit(f"        %tacc:{len(accs)} = scf.for %cq = %c0 to %c{cquads} step %c1 "
         f"iter_args({inner_inits}) -> ({types}) {{")
    emit("          %kq = arith.addi %tq, %cq : index")
    emit("          %col = arith.muli %cq, %c4 : index")
    for v in range(NV):
        emit(f"          %bv{v} = vector.transfer_read %b[%p, %kq, %cb{v}], %zero8 "
             f"{{in_bounds = [true]}} : {b_type}, vector<64xi8>")
    results = []
    for r in range(MR):
        emit(f"          %pa{r} = vector.transfer_read %x8[%px{r}, %col], %zero8 "
             f"{{in_bounds = [true]}} : {x8_type}, vector<4xi8>")
        emit(f"          %pw{r} = vector.bitcast %pa{r} : vector<4xi8> to vector<1xi32>")
        emit(f"          %ps{r} = vector.extract %pw{r}[0] : i32 from vector<1xi32>")
        emit(f"          %pb{r} = vector.broadcast %ps{r} : i32 to {acc}")
        emit(f"          %ph{r} = vector.bitcast %pb{r} : {acc} to vector<64xi8>")
        for v in range(NV):
            emit(f"          %y{r}_{v} = {QUADS}(%w{r}_{v}, %ph{r}, %bv{v}, {r}_{v})")
            results.append(f"%y{r}_{v}")
    emit(f"          scf.yield {', '.join(results)} : {types}")
    emit("        }")
    emit(f"        scf.yield {', '.join(f'%tacc#{i}' for i in range(len(accs)))} : {types}")
    emit("      }")
    last = "%s"
    for r in range(MR):
        for v in range(NV):
            index = NV * r + v
            emit(f"      %ca{r}_{v} = arith.addi %acc#{index}, %co{v} : {acc}")
            emit(f"      %f{r}_{v} = arith.sitofp %ca{r}_{v} : {acc} to vector<16xf32>")
            emit(f"      %s{r}_{v} = vector.transfer_write %f{r}_{v}, {last}[%row{r}, "
                 f"%cv{v}] {{in_bounds = [true]}} : vector<16xf32>, {strip_type}")
            last = f"%s{r}_{v}"
    result = close_strips(emit, last, strip_type, out_type, c_type, rows, NP, m, s.f,
                          rows != m or cols != s.f)
    emit(f"  %y = tensor.expand_shape {result} [[0, 1, 2], [3]] output_shape "
         f"[{s.n}, {s.oh}, {s.ow}, {s.f}] : {c_type} into {y_type}")
    emit(f"  return %y : {y_type}")
    emit("}")
    return "\n".join(_expand_quads(line) for line in text)
