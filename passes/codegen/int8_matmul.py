"""Integer matmul family: an f32 `linalg.matmul` whose operands are provably small integers
(the quantized matmuls of int8 models) runs as an exact integer kernel of `vpmaddwd`.

The importer computes MatMulInteger / QLinearMatMul as f32 matmuls of the zero-point-centered
operands (`frontends/onnx_ops/quant.py`: integers of at most 255 in magnitude, every sum exact
in f32). On an AVX2 CPU without VNNI, `vpmaddwd` (16 x 16-bit products summed in pairs into 8
i32 lanes) does twice the multiply-adds of an f32 FMA per instruction; measured on this
project's AVX2 EPYC (Zen 3, one core): 64 G multiply-adds/s against 48 for FMAs, and 92 for
onnxruntime's u8 x s8 `vpmaddubsw`, which saturates pairs of products in 16 bits (not exact).

On the AVX-512 target of a CPU with VNNI (`target.vnni()`), the same matmuls whose B is s8
and whose A's rows span at most 255 take the `vpdpbusd` kernel of `int8_vnni.py` instead
(`Problem.kernel` "vnni"; `prepare` dispatches), and so do the NHWC convs of integers that
`dlc-qdq-conv` makes of static QDQ convs (`_match_conv`: input values within 255 of each
other, a constant s8 filter; `Problem.conv`): this file keeps the matches and the AVX2 kernel.

Match (`match`): a static `linalg.matmul` [M, K] x [K, N] -> f32 accumulating into a fill of
zero, on the AVX2 target (`codegen/target.py`; AVX-512 without VNNI: its f32 FMAs are as fast,
other CPUs lack the instruction), whose B is a constant of integers and whose A is produced (through reshapes)
by ops whose values `value_range` bounds as integers: casts from 8/16-bit integers, integer
arithmetic, adds/subs/muls, rounding and clamps of floats (DynamicQuantizeLinear's quantize
fused with the centering). The bounds must make the kernel exact (`exact`): |a|, |b| <= 32767
and K products within i32. The kernel's result is then the exact sum, converted once to f32:
the f32 matmul it replaces summed the same integers (exactly, as the importer chunks K; were
it not chunked, the integer result is the correctly rounded one).

The kernel (`kernel_text`, written as MLIR text, parsed and moved into the function in place
of the matmul, with the matmul's location):
- A is converted to i16 once (`arith.fptosi`, 8 lanes at a time), its rows padded with zeros
  to a multiple of the register tile's MR = 6, K to an even size;
- B is packed at compile time as [N/16][K/2][16 x 2] i16 (`packed_b`): for each 16-column
  panel and each pair of rows k, k+1, the pairs (b[k][n], b[k+1][n]) of its 16 columns (zero
  columns and a zero row where 16 or 2 does not divide);
- an `scf.forall` over the panels (the threads, `num_threads`), in it a loop over blocks of 6
  rows and, innermost, over the K pairs (not unrolled: LLVM reassociated the unrolled adds
  and spilled): per pair, two 16 x i16 loads of B and, per row, a 32-bit broadcast of the pair
  (a[m][k], a[m][k+1]) and two `vpmaddwd` into 2 x 8 i32 accumulators (12 accumulators, 2 B,
  1 A of the 16 ymm registers);
- the accumulators are converted to f32 (`arith.sitofp`) and written to the output tile; an
  output padded to whole tiles is sliced back to [M, N].
The pairs of products are written in pure arith (`_expand_pairs`: even and odd lanes extended,
multiplied, added), which bufferization accepts; `dlc-lower-vectors` turns them into the
`llvm.x86.avx2.pmadd.wd` intrinsic afterwards (`lower_pairs`; LLVM's instcombine would have
rewritten the pure form into shuffles and vpmulld). The elementwise consumer (MatMulInteger's
scale) stays a separate op, vectorized by the elementwise schedule. `lines` is empty: the
kernel needs no transform script.

Single thread, dlc / onnxruntime, f32 FMA kernel -> this one, in one process (2026-12-04,
loaded 2-core Zen 3): MatMulInteger 128x768x768 2.13 -> 1.29, 128x768x3072 2.26 -> 1.33,
128x3072x768 2.26 -> 1.40 (`benchmarks/int8_bench.py`'s cases); DistilBERT 1.79 -> 1.20,
BERT-base 1.89 -> 1.19 (`benchmarks/zoo_int8.py --models distilbert,bert --before`). Outputs
are bit for bit those of the f32 path (both are the exact sums); the packed weights take half
the bytes of the f32 ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, llvm

from dlc.passes.codegen import int8_vnni, matmul, target
from dlc.passes.codegen.inline import inline_kernel
from dlc.passes.codegen.script import Lines
from dlc.passes.codegen.value_range import constant_range, is_op, row_span, value_range
from dlc.passes.walk import ops_where

MR = 6  # rows of the register tile: 6 x 2 accumulators of 8 i32
NR = 16  # columns of the register tile (two ymm of 8 i32)
I16_MAX = 32767
I32_LIMIT = 1 << 31


@dataclass(frozen=True)
class Problem:
    m: int
    n: int
    k: int
    a_bound: int  # max |a|
    b_bound: int  # max |b|
    kernel: str = "pairs"  # "pairs" (vpmaddwd, AVX2) or "vnni" (vpdpbusd, `int8_vnni.py`)
    conv: int8_vnni.ConvShape | None = None  # (a conv on the VNNI kernel: its shape)


# ----------------------------------------------------------------------------- match


def _zero_fill(value: ir.Value) -> bool:
    owner = value.owner
    if not is_op(owner) or owner.name != "linalg.fill":
        return False
    scalar = owner.operands[0].owner
    return is_op(scalar) and scalar.name == "arith.constant" and \
        constant_range(scalar.attributes["value"]) == (0, 0)


def _constant_b(value: ir.Value) -> np.ndarray | None:
    owner = value.owner
    if not is_op(owner) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or attr.is_splat:
        return None
    try:  # (a view of the attribute's buffer: every f32 matmul's B is looked at)
        return np.asarray(memoryview(attr)).reshape(attr.type.shape)
    except (TypeError, ValueError, BufferError):
        return np.array(attr)


def _integers(values: np.ndarray) -> bool:
    """Whether every value is a finite integer (a float filter's first values answer no)."""
    flat = values.reshape(-1)
    head = flat[:256]
    if not (np.all(np.isfinite(head)) and np.all(head == np.round(head))):
        return False
    return bool(np.all(np.isfinite(flat)) and np.all(flat == np.round(flat)))


def _kernel() -> str | None:
    """The integer kernel of the target: vpmaddwd pairs on AVX2, vpdpbusd on AVX-512 with
    VNNI (`int8_vnni.py`), none elsewhere."""
    name = target.current().name
    if name == "avx2":
        return "pairs"
    return "vnni" if name == "avx512" and target.vnni() else None


CONV = "linalg.conv_2d_nhwc_hwcf"


def _match_conv(op: ir.Operation) -> Problem | None:
    """The problem of an NHWC conv of integers the VNNI kernel computes exactly: x's values
    (the padding's included) within 255 of each other, a constant s8 filter, a zero init."""
    x, w, y = op.operands
    types = [v.type for v in (x, w, y)]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape
               and str(t.element_type) == "f32" for t in types) or not _zero_fill(y):
        return None
    (n, hp, wp, c), (kh, kw, _, f), (_, oh, ow, _) = (list(t.shape) for t in types)
    if 0 in (n, c, f, oh, ow, kh, kw):
        return None
    x_range = value_range(x)
    if x_range is None or not all(math.isfinite(b) for b in x_range) \
            or x_range[1] - x_range[0] > int8_vnni.U8_SPAN:
        return None
    filters = _constant_b(w)
    if filters is None or not (np.all(np.isfinite(filters))
                               and np.all(filters == np.round(filters))):
        return None
    a_bound = int(max(abs(x_range[0]), abs(x_range[1])))
    k = kh * kw * (-(-c // 4) * 4)
    if not int8_vnni.fits(filters, a_bound, k):
        return None
    stride = tuple(int(v) for v in np.array(op.attributes["strides"]))
    dilation = tuple(int(v) for v in np.array(op.attributes["dilations"]))
    shape = int8_vnni.ConvShape(n, hp, wp, c, kh, kw, f, oh, ow, stride, dilation,
                                int(x_range[0]))
    return Problem(n * oh * ow, f, k, a_bound, int(np.abs(filters).max()), "vnni", shape)


def match(op: ir.Operation) -> Problem | None:
    """The problem of a matmul the integer kernel computes exactly (module docstring)."""
    kernel = _kernel()
    if kernel is None or len(op.operands) != 3:
        return None
    if op.name == CONV and kernel == "vnni" and len(op.results) == 1:
        return _match_conv(op)
    if op.name != "linalg.matmul":
        return None
    a, b, c = op.operands
    types = [v.type for v in (a, b, c)]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape
               and str(t.element_type) == "f32" for t in types):
        return None
    if matmul._plain_maps(op) != "ab":
        return None  # (a transposed operand: not this kernel's layout)
    (m, k), (_, n) = types[0].shape, types[1].shape
    if 0 in (m, n, k) or not _zero_fill(c):
        return None
    # (the constant integer B first: the range of A walks its producers' bodies, 1 of the
    # 1.2 s dlc-schedule spent matching a bidirectional LSTM of 32 steps' ops)
    b_value = _constant_b(b)
    if b_value is None or not _integers(b_value):
        return None
    a_range = value_range(a)
    if a_range is None or not all(math.isfinite(x) for x in a_range):
        return None
    a_bound = int(max(abs(a_range[0]), abs(a_range[1])))
    b_bound = int(np.abs(b_value).max())
    if kernel == "vnni":
        span = row_span(a)
        if span is None or span > int8_vnni.U8_SPAN or not int8_vnni.fits(b_value, a_bound, k):
            return None
        return Problem(m, n, k, a_bound, b_bound, kernel)
    return Problem(m, n, k, a_bound, b_bound) if exact(a_bound, b_bound, k) else None


def exact(a_bound: int, b_bound: int, k: int) -> bool:
    """Whether |a| <= a_bound, |b| <= b_bound make the kernel exact: 16-bit operands, a pair
    of products (vpmaddwd) and a sum of K products within i32."""
    return max(a_bound, b_bound) <= I16_MAX and 2 * a_bound * b_bound < I32_LIMIT \
        and k * a_bound * b_bound < I32_LIMIT


def volume(problem: Problem) -> int:
    return problem.m * problem.n * problem.k


def lines(handle: str, problem: Problem, prefix: str) -> Lines:
    return Lines()  # (the kernel is built by `prepare`: no transform script)


# ----------------------------------------------------------------------------- the kernel


def packed_b(b: np.ndarray) -> np.ndarray:
    """B [K, N] -> [ceil(N/16), ceil(K/2), 32] i16: panel j, pair p holds (b[2p][16j + c],
    b[2p+1][16j + c]) for c = 0..15 at 2c, 2c + 1 (zeros past K and N)."""
    k, n = b.shape
    pairs, panels = -(-k // 2), -(-n // NR)
    padded = np.zeros([2 * pairs, panels * NR], np.int16)
    padded[:k, :n] = b.astype(np.int16)
    # [pairs, 2, panels, 16] -> [panels, pairs, 16, 2]
    return np.ascontiguousarray(padded.reshape(pairs, 2, panels, NR).transpose(2, 0, 3, 1)
                                ).reshape(panels, pairs, 2 * NR)


def _chunk_lines(tag: str, row: str, column: str, size: int, current: str, tensor: str,
                 source: str | None) -> list[str]:
    """Write `size` lanes at [row, column] of i16 `tensor`: the f32 `source`'s (fptosi), or
    zeros (None)."""
    value = f"%w{tag}"
    if source is None:
        out = [f"{value} = arith.constant dense<0> : vector<{size}xi16>"]
    else:
        source_name, source_type = source.split(":", 1)
        out = [(f"%v{tag} = vector.transfer_read {source_name}[{row}, {column}], %zerof "
               f"{{in_bounds = [true]}} : {source_type}, vector<{size}xf32>"),
               f"{value} = arith.fptosi %v{tag} : vector<{size}xf32> to vector<{size}xi16>"]
    out.append(f"%u{tag} = vector.transfer_write {value}, {current}[{row}, {column}] "
               f"{{in_bounds = [true]}} : vector<{size}xi16>, {tensor}")
    return out


def _row_lines(name: str, first: int, last: int, init: str, tensor: str, columns: int,
               source: str | None, zeros: int = 0) -> list[str]:
    """`%name` = a loop over rows [first, last) of i16 `tensor` writing its first `columns`
    columns from `source` ("%value:type", f32; None: zeros), 8 lanes at a time and the rest
    at once, then `zeros` zero columns."""
    row = f"%i_{name}"
    out = [(f"%{name} = scf.for {row} = %c{first} to %c{last} step %c1 "
           f"iter_args(%t_{name} = {init}) -> ({tensor}) {{")]
    current, body = f"%t_{name}", columns - columns % 8
    if body:
        out += [f"  %n_{name} = arith.constant {body} : index",
                (f"  %l_{name} = scf.for %j_{name} = %c0 to %n_{name} step %c8 "
                f"iter_args(%s_{name} = {current}) -> ({tensor}) {{")]
        out += ["    " + x for x in _chunk_lines(f"{name}_l", row, f"%j_{name}", 8,
                                                  f"%s_{name}", tensor, source)]
        out += [f"    scf.yield %u{name}_l : {tensor}", "  }"]
        current = f"%l_{name}"
    for index, (column, size, what) in enumerate(
            [(body, columns % 8, source), (columns, zeros, None)]):
        if size:
            out.append(f"  %o{index}_{name} = arith.constant {column} : index")
            out += ["  " + x for x in _chunk_lines(f"{name}_{index}", row, f"%o{index}_{name}",
                                                   size, current, tensor, what)]
            current = f"%u{name}_{index}"
    out += [f"  scf.yield {current} : {tensor}", "}"]
    return ["  " + x for x in out]


def _conversion_lines(m: int, k: int, rows: int, width: int, a_type: str,
                      a16_type: str) -> list[str]:
    """%a16: A [m, k] f32 as i16 [rows, width], the rows and columns past A's zeros."""
    out = _row_lines("a16r", 0, m, "%e16", a16_type, k, f"%a:{a_type}", width - k)
    last = "%a16r"
    if rows > m:
        out += _row_lines("a16z", m, rows, last, a16_type, width, None)
        last = "%a16z"
    out.append(f"  %a16 = tensor.cast {last} : {a16_type} to {a16_type}")
    return out


def kernel_text(m: int, n: int, k: int, name: str = "int8_matmul") -> str:
    """A private function (A [M, K] f32, packed B) -> [M, N] f32: the kernel (module
    docstring), as MLIR text."""
    pairs, panels = -(-k // 2), -(-n // NR)
    rows, cols, width = -(-m // MR) * MR, panels * NR, 2 * pairs
    unroll = 1  # (unrolled, LLVM reassociated the adds of the pairs and spilled accumulators)
    a_type, c_type = f"tensor<{m}x{k}xf32>", f"tensor<{m}x{n}xf32>"
    a16_type = f"tensor<{rows}x{width}xi16>"
    b_type = f"tensor<{panels}x{pairs}x{2 * NR}xi16>"
    out_type, strip_type = f"tensor<{rows}x{cols}xf32>", f"tensor<{rows}x{NR}xf32>"
    acc = "vector<8xi32>"
    text = [f"func.func private @{name}(%a: {a_type}, %b: {b_type}) -> {c_type} {{"]
    emit = text.append
    for value in sorted({0, 1, 2, 8, NR, MR, m, k, rows, pairs, unroll} | set(range(MR))
                        | set(range(unroll))):
        emit(f"  %c{value} = arith.constant {value} : index")
    emit("  %zero16 = arith.constant 0 : i16")
    emit("  %zerof = arith.constant 0.0 : f32")
    emit(f"  %zeroi = arith.constant dense<0> : {acc}")
    # A -> i16 [rows, width], padded with zeros
    emit(f"  %e16 = tensor.empty() : {a16_type}")
    text += _conversion_lines(m, k, rows, width, a_type, a16_type)
    # the panels (threads), the row blocks, the K pairs
    emit(f"  %e = tensor.empty() : {out_type}")
    emit(f"  %out = scf.forall (%p) in ({panels}) shared_outs(%o = %e) -> ({out_type}) {{")
    emit(f"    %n0 = arith.muli %p, %c{NR} : index")
    emit(f"    %strip = tensor.extract_slice %o[0, %n0] [{rows}, {NR}] [1, 1] : "
         f"{out_type} to {strip_type}")
    emit(f"    %res = scf.for %ib = %c0 to %c{rows} step %c{MR} iter_args(%s = %strip) -> "
         f"({strip_type}) {{")
    for r in range(MR):
        emit(f"      %row{r} = arith.addi %ib, %c{r} : index")
    accs = [f"%x{r}_{h}" for r in range(MR) for h in range(2)]
    inits = ", ".join(f"{x} = %zeroi" for x in accs)
    emit(f"      %acc:{len(accs)} = scf.for %kp = %c0 to %c{pairs} step %c{unroll} "
         f"iter_args({inits}) -> ({', '.join([acc] * len(accs))}) {{")
    current = list(accs)
    for u in range(unroll):
        emit(f"        %k{u} = arith.addi %kp, %c{u} : index")
        emit(f"        %col{u} = arith.muli %k{u}, %c2 : index")
        for h in range(2):
            emit(f"        %b{u}_{h} = vector.transfer_read %b[%p, %k{u}, %c{8 * 2 * h}], "
                 f"%zero16 {{in_bounds = [true]}} : {b_type}, vector<16xi16>")
        for r in range(MR):
            emit(f"        %pa{u}_{r} = vector.transfer_read %a16[%row{r}, %col{u}], %zero16 "
                 f"{{in_bounds = [true]}} : {a16_type}, vector<2xi16>")
            emit(f"        %pw{u}_{r} = vector.bitcast %pa{u}_{r} : vector<2xi16> to "
                 "vector<1xi32>")
            emit(f"        %ps{u}_{r} = vector.extract %pw{u}_{r}[0] : i32 from vector<1xi32>")
            emit(f"        %pb{u}_{r} = vector.broadcast %ps{u}_{r} : i32 to {acc}")
            emit(f"        %ph{u}_{r} = vector.bitcast %pb{u}_{r} : {acc} to vector<16xi16>")
            for h in range(2):
                index = 2 * r + h
                emit(f"        %m{u}_{r}_{h} = {PAIRS}(%ph{u}_{r}, %b{u}_{h}, {u}_{r}_{h})")
                emit(f"        %y{u}_{r}_{h} = arith.addi {current[index]}, %m{u}_{r}_{h} : {acc}")
                current[index] = f"%y{u}_{r}_{h}"
    emit(f"        scf.yield {', '.join(current)} : {', '.join([acc] * len(accs))}")
    emit("      }")
    last = "%s"
    for r in range(MR):
        for h in range(2):
            index = 2 * r + h
            emit(f"      %f{r}_{h} = arith.sitofp %acc#{index} : {acc} to vector<8xf32>")
            emit(f"      %s{r}_{h} = vector.transfer_write %f{r}_{h}, {last}[%row{r}, "
                 f"%c{8 * h}] {{in_bounds = [true]}} : vector<8xf32>, {strip_type}")
            last = f"%s{r}_{h}"
    result = int8_vnni.close_strips(emit, last, strip_type, out_type, c_type, rows, NR, m, n,
                                    rows != m or cols != n)
    emit(f"  return {result} : {c_type}")
    emit("}")
    return "\n".join(_expand_pairs(line) for line in text)


PAIRS = "@pairs"  # (a placeholder of `kernel_text`, expanded by `_expand_pairs`)
EVEN = ", ".join(str(i) for i in range(0, 16, 2))
ODD = ", ".join(str(i) for i in range(1, 16, 2))


def _expand_pairs(line: str) -> str:
    """`%m = @pairs(%a, %b, id)` -> the pure form of vpmaddwd: the even and the odd 16-bit
    lanes of a and b extended to i32, multiplied, the two products added (`lower_pairs`
    turns it into the intrinsic after bufferization, which rejects ops with unknown effects)."""
    if PAIRS not in line:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    result, call = (part.strip() for part in line.split("=", 1))
    a, b, tag = (x.strip() for x in call[len(PAIRS) + 1: -1].split(","))
    v16, v8, w8 = "vector<16xi16>", "vector<8xi16>", "vector<8xi32>"
    out = []
    for x, name in ((a, "a"), (b, "b")):
        for lanes, parity in ((EVEN, "e"), (ODD, "o")):
            out.append(f"%q{name}{parity}{tag} = vector.shuffle {x}, {x} [{lanes}] : {v16}, {v16}")
            out.append(f"%x{name}{parity}{tag} = arith.extsi %q{name}{parity}{tag} : {v8} to {w8}")
    out.append(f"%me{tag} = arith.muli %xae{tag}, %xbe{tag} : {w8}")
    out.append(f"%mo{tag} = arith.muli %xao{tag}, %xbo{tag} : {w8}")
    out.append(f"{result} = arith.addi %me{tag}, %mo{tag} : {w8}")
    return "\n".join(indent + x for x in out)


def prepare(op: ir.Operation) -> ir.Operation:
    """Replace matmul `op` by the kernel: its ops moved into the function before `op`, B
    packed into a constant. Returns the op computing the result."""
    problem = match(op)
    if problem is not None and problem.conv is not None:
        return _prepare_vnni_conv(op, problem.conv)
    if problem is not None and problem.kernel == "vnni":
        return _prepare_vnni(op)
    a, b, _ = op.operands
    (m, k), (_, n) = a.type.shape, b.type.shape
    packed = packed_b(_constant_b(b))
    with ir.InsertionPoint(op), op.location:
        constant = arith.ConstantOp(ir.RankedTensorType.get(list(packed.shape),
                                                            ir.IntegerType.get_signless(16)),
                                    ir.DenseElementsAttr.get(packed)).result
    result = inline_kernel(op, kernel_text(m, n, k), [a, constant])
    op.results[0].replace_all_uses_with(result)
    producer = result.owner
    op.erase()
    return producer


def _constants(op: ir.Operation, arrays: list[tuple[np.ndarray, int]]) -> list[ir.Value]:
    """Integer constants (array, bits) before `op`."""
    with ir.InsertionPoint(op), op.location:
        return [arith.ConstantOp(ir.RankedTensorType.get(list(array.shape),
                                                         ir.IntegerType.get_signless(bits)),
                                 ir.DenseElementsAttr.get(array)).result
                for array, bits in arrays]


def _replace(op: ir.Operation, result: ir.Value) -> ir.Operation:
    op.results[0].replace_all_uses_with(result)
    producer = result.owner
    op.erase()
    return producer


def _prepare_vnni_conv(op: ir.Operation, shape: int8_vnni.ConvShape) -> ir.Operation:
    """`prepare` for a conv on the VNNI kernel: the filter packed as s8 quads per tap."""
    packed, sums = int8_vnni.packed_filter(_constant_b(op.operands[1]))
    constants = _constants(op, [(packed, 8), (sums, 32)])
    return _replace(op, inline_kernel(op, int8_vnni.conv_kernel_text(shape),
                                      [op.operands[0], *constants]))


def _prepare_vnni(op: ir.Operation) -> ir.Operation:
    """`prepare` for the VNNI kernel (`int8_vnni.py`): B packed as s8 quads, its column sums."""
    a, b, _ = op.operands
    (m, k), (_, n) = a.type.shape, b.type.shape
    packed, sums = int8_vnni.packed_b(_constant_b(b))
    constants = _constants(op, [(packed, 8), (sums, 32)])
    return _replace(op, inline_kernel(op, int8_vnni.kernel_text(m, n, k), [a, *constants]))


# ----------------------------------------------------------------------------- after bufferization


def _shuffle_of(value: ir.Value) -> tuple[ir.Value, str] | None:
    """(x, 'even' | 'odd') when value = extsi(shuffle(x, x, even or odd lanes of 16 x i16))."""
    ext = value.owner
    if not is_op(ext) or ext.name != "arith.extsi":
        return None
    shuffle = ext.operands[0].owner
    if not is_op(shuffle) or shuffle.name != "vector.shuffle":
        return None
    x, y = shuffle.operands
    if x != y or str(x.type) != "vector<16xi16>":
        return None
    mask = list(ir.DenseI64ArrayAttr(shuffle.attributes["mask"]))
    parity = {tuple(range(0, 16, 2)): "even", tuple(range(1, 16, 2)): "odd"}.get(tuple(mask))
    return None if parity is None else (x, parity)


def _product(value: ir.Value) -> tuple[frozenset, str] | None:
    """({a, b}, parity) when value = muli of the same lanes of a and b (`_shuffle_of`)."""
    mul = value.owner
    if not is_op(mul) or mul.name != "arith.muli":
        return None
    sides = [_shuffle_of(v) for v in mul.operands]
    if None in sides or sides[0][1] != sides[1][1]:
        return None
    return frozenset(s[0] for s in sides), sides[0][1]


def lower_pairs(module: ir.Operation) -> int:
    """addi(even products, odd products) of two 16 x i16 vectors (`_expand_pairs`) ->
    `llvm.x86.avx2.pmadd.wd` (vpmaddwd), once bufferization is done (LLVM's instcombine
    rewrites the pure form into shuffles, vpmulld and one half-used vpmaddwd). How many."""
    found = ops_where(module, lambda op: op.name == "arith.addi"
                      and str(op.results[0].type) == "vector<8xi32>")
    done = 0
    for op in found:
        sides = [_product(v) for v in op.operands]
        if None in sides or {s[1] for s in sides} != {"even", "odd"} \
                or sides[0][0] != sides[1][0]:
            continue
        a, b = (list(sides[0][0]) * 2)[:2]
        with ir.InsertionPoint(op), op.location:
            call = llvm.call_intrinsic(op.results[0].type, "llvm.x86.avx2.pmadd.wd", [a, b],
                                       [], [])
        op.results[0].replace_all_uses_with(call)
        op.erase()
        done += 1
    return done
