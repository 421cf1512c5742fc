"""The weight-only quantized matmul kernel of `dlc.matmul_nbits` (dialects/nbits.py): A [M, K]
f32 times 4- or 8-bit weights that stay packed in memory and are dequantized in registers.

The weights come in panels of 16 columns (`dialects/nbits.py`'s `pack_weights`): for each
row k of a panel, 8 bytes (4 bits: column c in the low nibble of byte c, column c + 8 in its
high nibble) or 16 bytes (8 bits), and per block of `block_size` rows a scale and a zero point
per column. The kernel (`kernel_text`, MLIR text on tensors that the lowering moves into the
function) is an `scf.forall` over the panels (the threads), each writing its [M, 16] strip of
the output (padded to whole panels, sliced back to [M, n]). A row k of a panel is dequantized
by one 8-byte load zero-extended to 8 x i32 (`vpmovzxbd`), the low nibbles (`and 15`) and the
high ones (`shr 4`) converted to f32 and one FMA each with the block's scales and offsets
(`q * scale + offset`, offset = -(zp * scale) computed once per block from the block's
byte zero points). Two variants:
- decode (M <= DECODE_ROWS): blocks of MR = 4 rows of A (M = 1..4 is one block). Per K
  block, the codes (not dequantized: converted to f32 only) are multiplied by a broadcast of
  a[m][k] into 2 x 8 accumulators a row; the block's sums then enter the row's result as
  `dots * scale + sum(a over the block) * offset` (the block sums of A, `%asum`, are computed
  once before the panels): 2 FMAs per row k instead of 4. With fewer than 4 rows the k loop is
  unrolled into independent accumulator sets (summed per block): one row's two FMA chains were
  bounded by the FMA latency, not by the weights' bytes. Each weight byte is read once,
  sequentially. (M = 1, 4096 x 4096, 4 bits: 1.33 ms, unrolled 1.06, per-block scaling 0.85.)
- prefill (more rows): an iteration of the forall computes a group of GROUP = 4 panels
  (fewer where 4 does not divide their count). Per chunk of CHUNK = 256 rows of K, each
  panel's chunk is dequantized once into its [256, 16] slot of an f32 scratch [group, 256,
  16] (16 KB a panel, in L1/L2: never more than one chunk of a few panels per thread; one
  tensor, as per-panel tensor.empty ops were one value after CSE and their loop-carried
  copies were bufferized into one buffer: wrong results until 2026-12-05), then every block of PREFILL_MR = 6 rows of A
  runs the 6 x 16 FMA tile over each panel's scratch in turn (12 accumulators, loaded from and
  stored to the strip once per chunk; the block's A rows stay in L1 for the 4 panels: with one
  panel an iteration, A was read from L3 once per panel, 1.17 -> ~1.05x onnxruntime at M = 1024,
  4096 x 4096). Dequantizing in the FMA loop instead cost 2 FMAs and 4 other ops per 12 FMAs,
  each weight dequantized M / 6 times: 1.2-1.3x onnxruntime's time at M = 128.
That is the AVX2 kernel (`target.current().lanes` = 8: vectors of 8 f32, a panel row in two
halves). On AVX-512 (16 lanes, 32 zmm registers) a panel row is one vector<16xf32>:
- a row k of 4-bit codes: its 8 bytes and the same shifted right by 4 (a byte shift: one
  `vgf2p8affineqb`) concatenated, `and 15`, zero-extended to 16 x i32 (`vpmovzxbd`) and
  converted (8 bits: 16 bytes, `vpmovzxbd` from memory). (Shuffling the 8 bytes to 16 and
  shifting the i32 lanes by [0 x8, 4 x8] was narrowed by LLVM to i16 shifts and a
  `vpmovwb`: 7 ops a row instead of 5.)
- decode: one accumulator a row (WIDE_CHAINS = 8 chains in flight: M = 1 unrolls 8 rows k,
  or 4 pairs); for 4 bits, two rows k a step: their 16 bytes (adjacent in the panel) read
  at once from a flat view of the codes and zero-extended, `and 15` gives columns 0-7 of
  both rows and `shr 4` columns 8-15, each multiplied by a precomputed [a_k x8, a_k+1 x8]
  (`%apair`, [M, K / 2, 16]); the halves are summed per block before the scaling: 8 vector
  ops per 32 weights instead of 12 (M = 1, 768 x 3072 int4, in L2: 0.165 -> 0.123 ms).
- prefill: the register tile is WIDE_MR = 8 rows x WIDE_PANELS = 2 panels (8 x 32, 16 zmm
  accumulators; 12 x 32, 10 x 32 and 6 x 64 measured within 2 %, 8 x 64 spills: 1.8x), over
  one scratch [group, 256, 16] of the group's dequantized chunks. An A of more than
  A_BLOCK_BYTES = 1 MiB is split into blocks of rows (`a_blocks`: the forall iterates
  block-major, so a thread runs all panel groups of a block while its rows of A are in L2;
  the weights are dequantized once per block): M = 1024, 4096 x 4096 int4 ~1.25 -> ~1.05x
  onnxruntime's time.
Single thread, 2026-12-05, an Intel Xeon with AVX-512 (2 cores shared with other jobs: CPU
time, dlc and onnxruntime interleaved, best of 4-40 rounds), MatMulNBits with zero points,
block 32, ms; "before" is the AVX2 kernel on this CPU, onnxruntime's accuracy_level 0 (f32)
| 4 (A quantized to int8):
| M | K x N | bits | before | AVX-512 | ort 0 | ort 4 | before / ort 0 | after / ort 0 | after / ort 4 |
| 1 | 768 x 3072 | 4 | 0.165 | 0.123 | 0.243 | 0.083 | 0.68 | 0.51 | 1.48 |
| 1 | 4096 x 4096 | 4 | 2.05 | 1.87 | 2.42 | 1.51 | 0.85 | 0.77 | 1.24 |
| 1 | 4096 x 4096 | 8 | 2.74 | 2.50 | 85.7 | 1.87 | 0.03 | 0.03 | 1.33 |
| 128 | 768 x 3072 | 4 | 10.4 | 7.00 | 6.76 | 7.06 | 1.54 | 1.04 | 0.99 |
| 128 | 4096 x 4096 | 4 | 59.5 | 32.7 | 34.4 | 40.7 | 1.73 | 0.95 | 0.80 |
| 128 | 4096 x 4096 | 8 | 56.5 | 32.4 | 129.6 | 35.3 | 0.44 | 0.25 | 0.92 |
| 1024 | 768 x 3072 | 4 | 67.2 | 37.0 | 32.7 | 54.0 | 2.06 | 1.13 | 0.68 |
| 1024 | 4096 x 4096 | 4 | 538 | 258 | 222 | 309 | 2.43 | 1.17 | 0.84 |
(repeated runs of a row vary by +-10 % on this shared machine.) The int4 Llama of
`benchmarks/llm.py --models llama --int4` (12 layers, hidden 768, wall clock, dlc / onnxruntime,
AVX2 kernel -> AVX-512 one, same session): prefill of 1,024 tokens 1.28 -> 0.84, decode at
128 past tokens 0.63 -> 0.60. onnxruntime's level 4 is
faster for decode (M = 1) because it quantizes A to int8 and uses integer dot products
(AVX512-VNNI `vpdpbusd`): the next step here, for nodes that ask for it. (The AVX2 kernel on
an AMD EPYC, earlier: M = 1, 4096 x 4096 int4 0.24 | 1.08; M = 128 0.94 | 1.03.)
"""

from __future__ import annotations

from dlc.dialects.nbits import PANEL, panel_bytes
from dlc.passes.codegen import target

MR = 4  # rows of A per decode register block: 2 x MR accumulators
DECODE_ROWS = 8  # up to this many rows of A, the decode variant (codes times A, per block)
PREFILL_MR = 6  # rows of the register tile of the prefill kernel (12 accumulators)
CHUNK = 256  # rows of K a prefill chunk dequantizes at once (at least one block)
GROUP = 4  # panels a prefill iteration computes (where it divides their count)


class _Text:
    """Lines of MLIR text and the index constants they use."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indices: set[int] = set()

    def c(self, value: int) -> str:
        self.indices.add(value)
        return f"%c{value}"

    def emit(self, line: str) -> None:
        self.lines.append(line)


V8 = "vector<8xf32>"


def _codes(t: _Text, tag: str, k: str, types: dict[str, str], bits: int) -> list[str]:
    """Row k of the panel's codes (not dequantized): two vectors of 8 f32, columns 0-7, 8-15."""
    b_type = types["b"]
    if bits == 4:
        t.emit(f"  %q{tag} = vector.transfer_read %b[%p, {k}, {t.c(0)}], %z8 "
               f"{{in_bounds = [true]}} : {b_type}, vector<8xi8>")
        t.emit(f"  %x{tag} = arith.extui %q{tag} : vector<8xi8> to vector<8xi32>")
        t.emit(f"  %n{tag}0 = arith.andi %x{tag}, %m15 : vector<8xi32>")
        t.emit(f"  %n{tag}1 = arith.shrui %x{tag}, %m4 : vector<8xi32>")
    else:
        for h in range(2):
            t.emit(f"  %q{tag}{h} = vector.transfer_read %b[%p, {k}, {t.c(8 * h)}], %z8 "
                   f"{{in_bounds = [true]}} : {b_type}, vector<8xi8>")
            t.emit(f"  %n{tag}{h} = arith.extui %q{tag}{h} : vector<8xi8> to vector<8xi32>")
    for h in range(2):
        t.emit(f"  %f{tag}{h} = arith.sitofp %n{tag}{h} : vector<8xi32> to {V8}")
    return [f"%f{tag}0", f"%f{tag}1"]


def _block_dots(t: _Text, tag: str, rows: list[str], k_lo: str, k_hi: str, unroll: int,
                types: dict[str, str], bits: int) -> list[str]:
    """sum over k in [k_lo, k_hi) of a[row][k] * codes[k], two vectors a row; `unroll` rows k
    a step, each into its own set of accumulators, summed at the end."""
    width = 2 * len(rows)
    sets = width * unroll
    carried = ", ".join(f"%i{tag}_{j} = %zv" for j in range(sets))
    types_list = ", ".join([V8] * sets)
    t.emit(f"%r{tag}:{sets} = scf.for %k{tag} = {k_lo} to {k_hi} step {t.c(unroll)} "
           f"iter_args({carried}) -> ({types_list}) {{")
    out = []
    for u in range(unroll):
        k = f"%k{tag}"
        if u:
            t.emit(f"  %k{tag}u{u} = arith.addi %k{tag}, {t.c(u)} : index")
            k = f"%k{tag}u{u}"
        sub = f"{tag}u{u}"
        codes = _codes(t, sub, k, types, bits)
        for r, row in enumerate(rows):
            t.emit(f"  %a{sub}{r} = tensor.extract %a[{row}, {k}] : {types['a']}")
            t.emit(f"  %v{sub}{r} = vector.broadcast %a{sub}{r} : f32 to {V8}")
            for h in range(2):
                j = u * width + 2 * r + h
                t.emit(f"  %y{sub}_{j} = vector.fma %v{sub}{r}, {codes[h]}, %i{tag}_{j} : {V8}")
                out.append(f"%y{sub}_{j}")
    t.emit(f"  scf.yield {', '.join(out)} : {types_list}")
    t.emit("}")
    dots = [f"%r{tag}#{j}" for j in range(width)]
    for u in range(1, unroll):  # the sets summed
        for j in range(width):
            t.emit(f"%S{tag}_{u}_{j} = arith.addf {dots[j]}, %r{tag}#{u * width + j} : {V8}")
            dots[j] = f"%S{tag}_{u}_{j}"
    return dots


def _offset(t: _Text, tag: str, blk: str, h: int, types: dict[str, str]) -> None:
    """%o<tag> = -(zp * scale) of the block's columns 8h..8h+7 (the scale read as %s<tag>)."""
    if types["z"].endswith("xf32>"):
        t.emit(f"%e{tag} = vector.transfer_read %c[%p, {blk}, {t.c(8 * h)}], %zf "
               f"{{in_bounds = [true]}} : {types['z']}, {V8}")
    else:
        t.emit(f"%d{tag} = vector.transfer_read %c[%p, {blk}, {t.c(8 * h)}], %z8 "
               f"{{in_bounds = [true]}} : {types['z']}, vector<8xi8>")
        t.emit(f"%j{tag} = arith.extui %d{tag} : vector<8xi8> to vector<8xi32>")
        t.emit(f"%e{tag} = arith.sitofp %j{tag} : vector<8xi32> to {V8}")
    t.emit(f"%E{tag} = arith.mulf %e{tag}, %s{tag} : {V8}")
    t.emit(f"%o{tag} = arith.negf %E{tag} : {V8}")


def _apply_block(t: _Text, tag: str, rows: list[str], blk: str, dots: list[str],
                 accs: list[str], types: dict[str, str]) -> list[str]:
    """accs + dots * scale + sum(a over the block) * offset, the block's scales and offsets."""
    halves = []
    for h in range(2):
        t.emit(f"%s{tag}{h} = vector.transfer_read %s[%p, {blk}, {t.c(8 * h)}], %zf "
               f"{{in_bounds = [true]}} : {types['s']}, {V8}")
        _offset(t, f"{tag}{h}", blk, h, types)
        halves.append((f"%s{tag}{h}", f"%o{tag}{h}"))
    out = []
    for r, row in enumerate(rows):
        t.emit(f"%u{tag}{r} = tensor.extract %asum[{row}, {blk}] : {types['asum']}")
        t.emit(f"%U{tag}{r} = vector.broadcast %u{tag}{r} : f32 to {V8}")
        for h, (scale, offset) in enumerate(halves):
            j = 2 * r + h
            t.emit(f"%P{tag}_{j} = vector.fma {dots[j]}, {scale}, {accs[j]} : {V8}")
            t.emit(f"%Q{tag}_{j} = vector.fma %U{tag}{r}, {offset}, %P{tag}_{j} : {V8}")
            out.append(f"%Q{tag}_{j}")
    return out


def _unroll(rows: int, block: int) -> int:
    """Rows k a step: 2 x rows accumulator chains a set, enough sets to keep 8 FMAs in flight
    (their latency is 4 cycles, two issue a cycle); 1 where it does not divide the block."""
    unroll = max(1, 4 // rows)
    return unroll if block % unroll == 0 else 1


def _row_block(t: _Text, tag: str, row0: str, count: int, strip: str, k: int, block: int,
               types: dict[str, str], bits: int) -> str:
    """`count` rows from `row0`: accumulate over K, write into `strip`; returns the new strip."""
    rows = []
    for r in range(count):
        t.emit(f"%row{tag}{r} = arith.addi {row0}, {t.c(r)} : index")
        rows.append(f"%row{tag}{r}")
    width = 2 * count
    accs = ["%zv"] * width
    full = k // block
    if full:
        carried = ", ".join(f"%b{tag}_{j} = %zv" for j in range(width))
        types_list = ", ".join([V8] * width)
        t.emit(f"%B{tag}:{width} = scf.for %blk{tag} = {t.c(0)} to {t.c(full)} step "
               f"{t.c(1)} iter_args({carried}) -> ({types_list}) {{")
        t.emit(f"  %k0{tag} = arith.muli %blk{tag}, {t.c(block)} : index")
        t.emit(f"  %k1{tag} = arith.addi %k0{tag}, {t.c(block)} : index")
        dots = _block_dots(t, f"{tag}f", rows, f"%k0{tag}", f"%k1{tag}",
                           _unroll(count, block), types, bits)
        new = _apply_block(t, f"{tag}f", rows, f"%blk{tag}", dots,
                           [f"%b{tag}_{j}" for j in range(width)], types)
        t.emit(f"  scf.yield {', '.join(new)} : {types_list}")
        t.emit("}")
        accs = [f"%B{tag}#{j}" for j in range(width)]
    if k % block:
        dots = _block_dots(t, f"{tag}t", rows, t.c(full * block), t.c(k), 1, types, bits)
        accs = _apply_block(t, f"{tag}t", rows, t.c(full), dots, accs, types)
    current = strip
    for r, row in enumerate(rows):
        for h in range(2):
            t.emit(f"%W{tag}_{r}_{h} = vector.transfer_write {accs[2 * r + h]}, {current}"
                   f"[{row}, {t.c(8 * h)}] {{in_bounds = [true]}} : {V8}, {types['strip']}")
            current = f"%W{tag}_{r}_{h}"
    return current


def _block_sums(t: _Text, m: int, k: int, block: int, types: dict[str, str]) -> None:
    """%asum [m, NB] f32: the sum of each row of A over each K block (the offsets' factor)."""
    asum = types["asum"]
    blocks = -(-k // block)
    t.emit(f"%ase = tensor.empty() : {asum}")
    t.emit(f"%asum = scf.for %am = {t.c(0)} to {t.c(m)} step {t.c(1)} iter_args(%at = %ase) "
           f"-> ({asum}) {{")
    t.emit(f"  %aB = scf.for %ab = {t.c(0)} to {t.c(blocks)} step {t.c(1)} "
           f"iter_args(%au = %at) -> ({asum}) {{")
    t.emit(f"    %ak0 = arith.muli %ab, {t.c(block)} : index")
    t.emit(f"    %ak2 = arith.addi %ak0, {t.c(block)} : index")
    t.emit(f"    %ak1 = arith.minsi %ak2, {t.c(k)} : index")
    t.emit(f"    %aS = scf.for %ak = %ak0 to %ak1 step {t.c(1)} iter_args(%ax = %zf) -> (f32) {{")
    t.emit(f"      %ay = tensor.extract %a[%am, %ak] : {types['a']}")
    t.emit("      %az = arith.addf %ax, %ay : f32")
    t.emit("      scf.yield %az : f32")
    t.emit("    }")
    t.emit(f"    %aI = tensor.insert %aS into %au[%am, %ab] : {asum}")
    t.emit(f"    scf.yield %aI : {asum}")
    t.emit("  }")
    t.emit(f"  scf.yield %aB : {asum}")
    t.emit("}")


def _dequantize_rows(t: _Text, tag: str, scratch: str, slot: int, k0: str, blk0: str,
                     full: int, part: int, block: int, types: dict[str, str], bits: int) -> str:
    """Rows [k0, k0 + full * block + part) of the panel (from K block `blk0`) dequantized
    into slot `slot` of the f32 `scratch` [group, rows, 16]; returns the new scratch."""
    scr = types["scratch"]
    current = scratch
    pieces = [(f"%g{tag}", t.c(full), block)] if full else []
    if part:
        pieces.append((None, None, part))
    for index, (loop, count, rows) in enumerate(pieces):
        sub = f"{tag}{index}"
        if loop is not None:
            t.emit(f"%D{sub} = scf.for {loop} = {t.c(0)} to {count} step {t.c(1)} "
                   f"iter_args(%ds{sub} = {current}) -> ({scr}) {{")
            t.emit(f"  %blk{sub} = arith.addi {blk0}, {loop} : index")
            t.emit(f"  %r0{sub} = arith.muli {loop}, {t.c(block)} : index")
            inside = f"%ds{sub}"
        else:
            t.emit(f"%blk{sub} = arith.addi {blk0}, {t.c(full)} : index")
            t.emit(f"%r0{sub} = arith.constant {full * block} : index")
            inside = current
        halves = []
        for h in range(2):
            t.emit(f"%s{sub}{h} = vector.transfer_read %s[%p, %blk{sub}, {t.c(8 * h)}], %zf "
                   f"{{in_bounds = [true]}} : {types['s']}, {V8}")
            _offset(t, f"{sub}{h}", f"%blk{sub}", h, types)
            halves.append((f"%s{sub}{h}", f"%o{sub}{h}"))
        t.emit(f"%R{sub} = scf.for %j{sub} = {t.c(0)} to {t.c(rows)} step {t.c(1)} "
               f"iter_args(%rs{sub} = {inside}) -> ({scr}) {{")
        t.emit(f"  %row{sub} = arith.addi %r0{sub}, %j{sub} : index")
        t.emit(f"  %k{sub} = arith.addi {k0}, %row{sub} : index")
        weights = _weights(t, sub, f"%k{sub}", halves, types, bits)
        written = f"%rs{sub}"
        for h, w in enumerate(weights):
            t.emit(f"  %x{sub}w{h} = vector.transfer_write {w}, {written}[{t.c(slot)}, "
                   f"%row{sub}, {t.c(8 * h)}] {{in_bounds = [true]}} : {V8}, {scr}")
            written = f"%x{sub}w{h}"
        t.emit(f"  scf.yield {written} : {scr}")
        t.emit("}")
        if loop is not None:
            t.emit(f"  scf.yield %R{sub} : {scr}")
            t.emit("}")
            current = f"%D{sub}"
        else:
            current = f"%R{sub}"
    return current


def _weights(t: _Text, tag: str, k: str, halves: list[tuple[str, str]],
             types: dict[str, str], bits: int) -> list[str]:
    """Row k of the panel dequantized: two vectors of 8 f32 (columns 0-7, 8-15)."""
    out = []
    for h, ((scale, offset), code) in enumerate(zip(halves, _codes(t, tag, k, types, bits))):
        t.emit(f"  %w{tag}{h} = vector.fma {code}, {scale}, {offset} : {V8}")
        out.append(f"%w{tag}{h}")
    return out


def _tile_rows(t: _Text, tag: str, row0: str, count: int, strip: str, scratch: str,
               slot: int, k0: str, rows: int, types: dict[str, str], col: int = 0) -> str:
    """C[row0 : row0 + count, col : col + 16] += A[rows, k0 : k0 + rows] x scratch[slot] (f32
    [rows, 16]); returns the new strip."""
    strip_type, scr = types["strip"], types["scratch"]
    names, accs = [], []
    for r in range(count):
        t.emit(f"%row{tag}{r} = arith.addi {row0}, {t.c(r)} : index")
        names.append(f"%row{tag}{r}")
        for h in range(2):
            t.emit(f"%l{tag}_{r}_{h} = vector.transfer_read {strip}[%row{tag}{r}, "
                   f"{t.c(col + 8 * h)}]"
                   f", %zf {{in_bounds = [true]}} : {strip_type}, {V8}")
            accs.append(f"%l{tag}_{r}_{h}")
    carried = ", ".join(f"%i{tag}_{j} = {x}" for j, x in enumerate(accs))
    types_list = ", ".join([V8] * len(accs))
    t.emit(f"%T{tag}:{len(accs)} = scf.for %j{tag} = {t.c(0)} to {t.c(rows)} step {t.c(1)} "
           f"iter_args({carried}) -> ({types_list}) {{")
    t.emit(f"  %k{tag} = arith.addi {k0}, %j{tag} : index")
    for h in range(2):
        t.emit(f"  %w{tag}{h} = vector.transfer_read {scratch}[{t.c(slot)}, %j{tag}, "
               f"{t.c(8 * h)}], %zf "
               f"{{in_bounds = [true]}} : {scr}, {V8}")
    out = []
    for r, row in enumerate(names):
        t.emit(f"  %a{tag}{r} = tensor.extract %a[{row}, %k{tag}] : {types['a']}")
        t.emit(f"  %v{tag}{r} = vector.broadcast %a{tag}{r} : f32 to {V8}")
        for h in range(2):
            j = 2 * r + h
            t.emit(f"  %y{tag}_{j} = vector.fma %v{tag}{r}, %w{tag}{h}, %i{tag}_{j} : {V8}")
            out.append(f"%y{tag}_{j}")
    t.emit(f"  scf.yield {', '.join(out)} : {types_list}")
    t.emit("}")
    current = strip
    for r, row in enumerate(names):
        for h in range(2):
            t.emit(f"%W{tag}_{r}_{h} = vector.transfer_write %T{tag}#{2 * r + h}, {current}"
                   f"[{row}, {t.c(col + 8 * h)}] {{in_bounds = [true]}} : {V8}, {strip_type}")
            current = f"%W{tag}_{r}_{h}"
    return current


def _on_panel(t: _Text, start: int, panel: str) -> None:
    """The lines emitted since `start` read panel `panel` instead of `%p` (the loop's)."""
    t.lines[start:] = [line.replace("[%p, ", f"[{panel}, ") for line in t.lines[start:]]


def _chunk(t: _Text, tag: str, strip: str, scratch: str, k0: str, blk0: str, full: int,
           part: int, m: int, block: int, group: int, types: dict[str, str], bits: int
           ) -> tuple[str, str]:
    """One chunk of K (`full` blocks and `part` rows) of each panel of the group:
    dequantized into the panel's slot of the scratch, then multiplied into every row of the
    strip, PREFILL_MR rows at a time, each block of rows through every panel (its A rows stay
    in L1). Returns (strip, scratch)."""
    for j in range(group):
        start = len(t.lines)
        scratch = _dequantize_rows(t, f"{tag}d{j}", scratch, j, k0, blk0, full, part, block,
                                   types, bits)
        _on_panel(t, start, f"%pj{j}")
    rows = full * block + part
    main = m - m % PREFILL_MR
    strip_type = types["strip"]

    def tiles(sub: str, row0: str, count: int, current: str) -> str:
        for j in range(group):
            current = _tile_rows(t, f"{sub}p{j}", row0, count, current, scratch, j, k0, rows,
                                 types, PANEL * j)
        return current

    if main:
        t.emit(f"%M{tag} = scf.for %ib{tag} = {t.c(0)} to {t.c(main)} step {t.c(PREFILL_MR)} "
               f"iter_args(%st{tag} = {strip}) -> ({strip_type}) {{")
        result = tiles(f"{tag}m", f"%ib{tag}", PREFILL_MR, f"%st{tag}")
        t.emit(f"  scf.yield {result} : {strip_type}")
        t.emit("}")
        strip = f"%M{tag}"
    if m % PREFILL_MR:
        strip = tiles(f"{tag}t", t.c(main), m % PREFILL_MR, strip)
    return strip, scratch


def group_size(panels: int) -> int:
    """Panels a prefill iteration computes (dividing their count): each block of A rows is
    read from memory once for all of them."""
    return next(g for g in (GROUP, 3, 2, 1) if panels % g == 0)


def _prefill_group(t: _Text, m: int, k: int, block: int, group: int, types: dict[str, str],
                   bits: int) -> str:
    """The group's strip for many rows (module docstring): zeroed, then per chunk of K each
    panel's chunk dequantized once into its scratch and multiplied into every row."""
    strip_type = types["strip"]
    for j in range(group):
        t.emit(f"%pj{j} = arith.addi %p0, {t.c(j)} : index")
    t.emit(f"%Z = scf.for %zr = {t.c(0)} to {t.c(m)} step {t.c(1)} iter_args(%zs = %strip) "
           f"-> ({strip_type}) {{")
    current = "%zs"
    for h in range(2 * group):
        t.emit(f"  %zw{h} = vector.transfer_write %zv, {current}[%zr, {t.c(8 * h)}] "
               f"{{in_bounds = [true]}} : {V8}, {strip_type}")
        current = f"%zw{h}"
    t.emit(f"  scf.yield {current} : {strip_type}")
    t.emit("}")
    per_chunk = max(1, CHUNK // block)  # K blocks a chunk
    rows = per_chunk * block
    chunks, rest = divmod(k, rows)
    # (one scratch for the group's panels: distinct tensor.empty ops of one type are one value
    # after CSE, and two loop-carried copies of it were bufferized into one buffer)
    t.emit(f"%scratch = tensor.empty() : {types['scratch']}")
    scratch = "%scratch"
    strip = "%Z"
    if chunks:
        carried = f"{strip_type}, {types['scratch']}"
        t.emit(f"%C:2 = scf.for %ch = {t.c(0)} to {t.c(chunks)} step {t.c(1)} "
               f"iter_args(%cs = {strip}, %cc = {scratch}) -> ({carried}) {{")
        t.emit(f"  %ck0 = arith.muli %ch, {t.c(rows)} : index")
        t.emit(f"  %cb0 = arith.muli %ch, {t.c(per_chunk)} : index")
        strip_out, scratch_out = _chunk(t, "c", "%cs", "%cc", "%ck0", "%cb0", per_chunk, 0, m,
                                        block, group, types, bits)
        t.emit(f"  scf.yield {strip_out}, {scratch_out} : {carried}")
        t.emit("}")
        strip, scratch = "%C#0", "%C#1"
    if rest:
        strip, _ = _chunk(t, "r", strip, scratch, t.c(chunks * rows), t.c(chunks * per_chunk),
                          rest // block, rest % block, m, block, group, types, bits)
    return strip


def _decode_panel(t: _Text, m: int, k: int, block: int, types: dict[str, str],
                  bits: int) -> str:
    """The panel's strip for few rows: blocks of MR rows, the weights dequantized in the FMA
    loop."""
    strip = "%strip"
    mr = min(m, MR)
    main = m - m % mr
    if main:
        t.emit(f"%rows = scf.for %ib = {t.c(0)} to {t.c(main)} step {t.c(mr)} "
               f"iter_args(%st = {strip}) -> ({types['strip']}) {{")
        written = _row_block(t, "m", "%ib", mr, "%st", k, block, types, bits)
        t.emit(f"scf.yield {written} : {types['strip']}")
        t.emit("}")
        strip = "%rows"
    if m % mr:
        strip = _row_block(t, "t", t.c(main), m % mr, strip, k, block, types, bits)
    return strip


# The AVX-512 kernel (`target.current().lanes` = 16): a row of a panel is one vector of 16 f32.

V16 = "vector<16xf32>"
WIDE_MR = 8  # rows of the AVX-512 prefill register tile
WIDE_PANELS = 2  # panels of that tile: 8 x 32 columns, 16 zmm accumulators
WIDE_CHAINS = 8  # decode: accumulator chains in flight (sets of rows k unrolled)
PAIRS = True  # decode, 4 bits: two rows k a step (`_block_dots16_pairs`)
PAIR_BYTES = 3 << 18  # ... where %apair (32 x A's bytes, read for every panel) fits in L2
# (M = 8, K = 4096, 1 MiB: 4% slower than one row k a step; M = 2, K = 11008: 5% faster)
A_BLOCK_BYTES = 1 << 20  # prefill: larger A are split into blocks of rows of about this size
CONCAT = ", ".join(map(str, range(16)))


def _codes16(t: _Text, tag: str, k: str, types: dict[str, str], bits: int) -> str:
    """Row k of the panel's codes (not dequantized), one vector of 16 f32: 4 bits, the 8 bytes
    (columns 0-7) then the same shifted right by 4 (columns 8-15), and 15; 8 bits, 16 bytes."""
    b_type = types["b"]
    if bits == 4 and "bflat" in types:  # (the pairs' view of the codes: its only reader)
        t.emit(f"  %K{tag} = arith.muli {k}, {t.c(8)} : index")
        t.emit(f"  %q{tag} = vector.transfer_read %bflat[%p, %K{tag}], %z8 "
               f"{{in_bounds = [true]}} : {types['bflat']}, vector<8xi8>")
    elif bits == 4:
        t.emit(f"  %q{tag} = vector.transfer_read %b[%p, {k}, {t.c(0)}], %z8 "
               f"{{in_bounds = [true]}} : {b_type}, vector<8xi8>")
    if bits == 4:
        t.emit(f"  %h{tag} = arith.shrui %q{tag}, %b4 : vector<8xi8>")
        t.emit(f"  %Q{tag} = vector.shuffle %q{tag}, %h{tag} [{CONCAT}] : vector<8xi8>, "
               "vector<8xi8>")
        t.emit(f"  %x{tag} = arith.andi %Q{tag}, %b15 : vector<16xi8>")
        t.emit(f"  %n{tag} = arith.extui %x{tag} : vector<16xi8> to vector<16xi32>")
    else:
        t.emit(f"  %q{tag} = vector.transfer_read %b[%p, {k}, {t.c(0)}], %z8 "
               f"{{in_bounds = [true]}} : {b_type}, vector<16xi8>")
        t.emit(f"  %n{tag} = arith.extui %q{tag} : vector<16xi8> to vector<16xi32>")
    t.emit(f"  %f{tag} = arith.sitofp %n{tag} : vector<16xi32> to {V16}")
    return f"%f{tag}"


def _scale_offset16(t: _Text, tag: str, blk: str, types: dict[str, str]) -> tuple[str, str]:
    """The block's scales (%s<tag>) and offsets -(zp * scale) (%o<tag>), 16 columns."""
    t.emit(f"%s{tag} = vector.transfer_read %s[%p, {blk}, {t.c(0)}], %zf "
           f"{{in_bounds = [true]}} : {types['s']}, {V16}")
    if types["z"].endswith("xf32>"):
        t.emit(f"%e{tag} = vector.transfer_read %c[%p, {blk}, {t.c(0)}], %zf "
               f"{{in_bounds = [true]}} : {types['z']}, {V16}")
    else:
        t.emit(f"%d{tag} = vector.transfer_read %c[%p, {blk}, {t.c(0)}], %z8 "
               f"{{in_bounds = [true]}} : {types['z']}, vector<16xi8>")
        t.emit(f"%j{tag} = arith.extui %d{tag} : vector<16xi8> to vector<16xi32>")
        t.emit(f"%e{tag} = arith.sitofp %j{tag} : vector<16xi32> to {V16}")
    t.emit(f"%E{tag} = arith.mulf %e{tag}, %s{tag} : {V16}")
    t.emit(f"%o{tag} = arith.negf %E{tag} : {V16}")
    return f"%s{tag}", f"%o{tag}"


def _block_dots16(t: _Text, tag: str, rows: list[str], k_lo: str, k_hi: str, unroll: int,
                  types: dict[str, str], bits: int) -> list[str]:
    """sum over k in [k_lo, k_hi) of a[row][k] * codes[k], one vector a row; `unroll` rows k
    a step, each into its own accumulators, summed at the end."""
    width = len(rows)
    sets = width * unroll
    carried = ", ".join(f"%i{tag}_{j} = %zw" for j in range(sets))
    types_list = ", ".join([V16] * sets)
    t.emit(f"%r{tag}:{sets} = scf.for %k{tag} = {k_lo} to {k_hi} step {t.c(unroll)} "
           f"iter_args({carried}) -> ({types_list}) {{")
    out = []
    for u in range(unroll):
        k = f"%k{tag}"
        if u:
            t.emit(f"  %k{tag}u{u} = arith.addi %k{tag}, {t.c(u)} : index")
            k = f"%k{tag}u{u}"
        sub = f"{tag}u{u}"
        codes = _codes16(t, sub, k, types, bits)
        for r, row in enumerate(rows):
            j = u * width + r
            t.emit(f"  %a{sub}{r} = tensor.extract %a[{row}, {k}] : {types['a']}")
            t.emit(f"  %v{sub}{r} = vector.broadcast %a{sub}{r} : f32 to {V16}")
            t.emit(f"  %y{sub}_{j} = vector.fma %v{sub}{r}, {codes}, %i{tag}_{j} : {V16}")
            out.append(f"%y{sub}_{j}")
    t.emit(f"  scf.yield {', '.join(out)} : {types_list}")
    t.emit("}")
    dots = [f"%r{tag}#{j}" for j in range(width)]
    for u in range(1, unroll):  # the sets summed
        for j in range(width):
            t.emit(f"%S{tag}_{u}_{j} = arith.addf {dots[j]}, %r{tag}#{u * width + j} : {V16}")
            dots[j] = f"%S{tag}_{u}_{j}"
    return dots


def _pair_sums(t: _Text, m: int, k: int, types: dict[str, str]) -> None:
    """%apair [m, k / 2, 16] f32: a[row][2i] in lanes 0-7 and a[row][2i + 1] in lanes 8-15
    (the factors of two rows k of 4-bit codes read at once, `_block_dots16_pairs`)."""
    pairs = types["apair"]
    spread = ", ".join(["0"] * 8 + ["1"] * 8)
    t.emit(f"%ape = tensor.empty() : {pairs}")
    t.emit(f"%apair = scf.for %pm = {t.c(0)} to {t.c(m)} step {t.c(1)} iter_args(%pt = %ape) "
           f"-> ({pairs}) {{")
    t.emit(f"  %pP = scf.for %pk = {t.c(0)} to {t.c(k // 2)} step {t.c(1)} "
           f"iter_args(%pu = %pt) -> ({pairs}) {{")
    t.emit(f"    %pk2 = arith.muli %pk, {t.c(2)} : index")
    t.emit(f"    %pv = vector.transfer_read %a[%pm, %pk2], %zf {{in_bounds = [true]}} : "
           f"{types['a']}, vector<2xf32>")
    t.emit(f"    %pw = vector.shuffle %pv, %pv [{spread}] : vector<2xf32>, vector<2xf32>")
    t.emit(f"    %px = vector.transfer_write %pw, %pu[%pm, %pk, {t.c(0)}] {{in_bounds = [true]}} "
           f": {V16}, {pairs}")
    t.emit(f"    scf.yield %px : {pairs}")
    t.emit("  }")
    t.emit(f"  scf.yield %pP : {pairs}")
    t.emit("}")


def _block_dots16_pairs(t: _Text, tag: str, rows: list[str], k_lo: str, k_hi: str,
                        unroll: int, types: dict[str, str]) -> list[str]:
    """`_block_dots16` for 4 bits, two rows k a step (k_lo, k_hi even): their 16 bytes
    zero-extended at once, the low nibbles (columns 0-7 of both rows) and the high ones
    (columns 8-15) converted and multiplied by %apair; the halves summed at the end."""
    width = len(rows)
    sets = 2 * width * unroll
    carried = ", ".join(f"%i{tag}_{j} = %zw" for j in range(sets))
    types_list = ", ".join([V16] * sets)
    t.emit(f"%kl{tag} = arith.divui {k_lo}, {t.c(2)} : index")
    t.emit(f"%kh{tag} = arith.divui {k_hi}, {t.c(2)} : index")
    t.emit(f"%r{tag}:{sets} = scf.for %k{tag} = %kl{tag} to %kh{tag} step {t.c(unroll)} "
           f"iter_args({carried}) -> ({types_list}) {{")
    out = []
    for u in range(unroll):
        kk = f"%k{tag}"
        if u:
            t.emit(f"  %k{tag}u{u} = arith.addi %k{tag}, {t.c(u)} : index")
            kk = f"%k{tag}u{u}"
        sub = f"{tag}u{u}"
        t.emit(f"  %K{sub} = arith.muli {kk}, {t.c(16)} : index")
        t.emit(f"  %q{sub} = vector.transfer_read %bflat[%p, %K{sub}], %z8 "
               f"{{in_bounds = [true]}} : {types['bflat']}, vector<16xi8>")
        t.emit(f"  %x{sub} = arith.extui %q{sub} : vector<16xi8> to vector<16xi32>")
        t.emit(f"  %n{sub}0 = arith.andi %x{sub}, %w15 : vector<16xi32>")
        t.emit(f"  %n{sub}1 = arith.shrui %x{sub}, %w4 : vector<16xi32>")
        for h in range(2):
            t.emit(f"  %f{sub}{h} = arith.sitofp %n{sub}{h} : vector<16xi32> to {V16}")
        for r, row in enumerate(rows):
            t.emit(f"  %v{sub}{r} = vector.transfer_read %apair[{row}, {kk}, {t.c(0)}], %zf "
                   f"{{in_bounds = [true]}} : {types['apair']}, {V16}")
            for h in range(2):
                j = u * 2 * width + 2 * r + h
                t.emit(f"  %y{sub}_{j} = vector.fma %v{sub}{r}, %f{sub}{h}, %i{tag}_{j} : {V16}")
                out.append(f"%y{sub}_{j}")
    t.emit(f"  scf.yield {', '.join(out)} : {types_list}")
    t.emit("}")
    sums = [f"%r{tag}#{j}" for j in range(2 * width)]
    for u in range(1, unroll):  # the sets summed
        for j in range(2 * width):
            t.emit(f"%S{tag}_{u}_{j} = arith.addf {sums[j]}, %r{tag}#{u * 2 * width + j} : {V16}")
            sums[j] = f"%S{tag}_{u}_{j}"
    low = ", ".join(map(str, list(range(8)) + list(range(16, 24))))
    high = ", ".join(map(str, list(range(8, 16)) + list(range(24, 32))))
    dots = []
    for r in range(width):
        lo, hi = sums[2 * r], sums[2 * r + 1]
        t.emit(f"%H{tag}_{r}a = vector.shuffle {lo}, {hi} [{low}] : {V16}, {V16}")
        t.emit(f"%H{tag}_{r}b = vector.shuffle {lo}, {hi} [{high}] : {V16}, {V16}")
        t.emit(f"%H{tag}_{r} = arith.addf %H{tag}_{r}a, %H{tag}_{r}b : {V16}")
        dots.append(f"%H{tag}_{r}")
    return dots


def _apply_block16(t: _Text, tag: str, rows: list[str], blk: str, dots: list[str],
                   accs: list[str], types: dict[str, str]) -> list[str]:
    """accs + dots * scale + sum(a over the block) * offset, the block's scales and offsets."""
    scale, offset = _scale_offset16(t, f"{tag}z", blk, types)
    out = []
    for r, row in enumerate(rows):
        t.emit(f"%u{tag}{r} = tensor.extract %asum[{row}, {blk}] : {types['asum']}")
        t.emit(f"%U{tag}{r} = vector.broadcast %u{tag}{r} : f32 to {V16}")
        t.emit(f"%P{tag}_{r} = vector.fma {dots[r]}, {scale}, {accs[r]} : {V16}")
        t.emit(f"%Q{tag}_{r} = vector.fma %U{tag}{r}, {offset}, %P{tag}_{r} : {V16}")
        out.append(f"%Q{tag}_{r}")
    return out


def _unroll16(rows: int, block: int) -> int:
    """Rows k a step: `rows` accumulator chains a set, enough sets for WIDE_CHAINS chains (a
    power of 2 dividing the block)."""
    unroll = max(1, WIDE_CHAINS // rows)
    while block % unroll:
        unroll //= 2
    return unroll


def _row_block16(t: _Text, tag: str, row0: str, count: int, strip: str, k: int, block: int,
                 types: dict[str, str], bits: int) -> str:
    """`count` rows from `row0`: accumulate over K, write into `strip`; returns the new strip."""
    rows = []
    for r in range(count):
        t.emit(f"%row{tag}{r} = arith.addi {row0}, {t.c(r)} : index")
        rows.append(f"%row{tag}{r}")
    accs = ["%zw"] * count
    full = k // block
    if full:
        carried = ", ".join(f"%b{tag}_{j} = %zw" for j in range(count))
        types_list = ", ".join([V16] * count)
        t.emit(f"%B{tag}:{count} = scf.for %blk{tag} = {t.c(0)} to {t.c(full)} step "
               f"{t.c(1)} iter_args({carried}) -> ({types_list}) {{")
        t.emit(f"  %k0{tag} = arith.muli %blk{tag}, {t.c(block)} : index")
        t.emit(f"  %k1{tag} = arith.addi %k0{tag}, {t.c(block)} : index")
        if "apair" in types:
            unroll = max(1, WIDE_CHAINS // (2 * count))
            while block // 2 % unroll:
                unroll //= 2
            dots = _block_dots16_pairs(t, f"{tag}f", rows, f"%k0{tag}", f"%k1{tag}", unroll,
                                       types)
        else:
            dots = _block_dots16(t, f"{tag}f", rows, f"%k0{tag}", f"%k1{tag}",
                                 _unroll16(count, block), types, bits)
        new = _apply_block16(t, f"{tag}f", rows, f"%blk{tag}", dots,
                             [f"%b{tag}_{j}" for j in range(count)], types)
        t.emit(f"  scf.yield {', '.join(new)} : {types_list}")
        t.emit("}")
        accs = [f"%B{tag}#{j}" for j in range(count)]
    if k % block:
        dots = _block_dots16(t, f"{tag}t", rows, t.c(full * block), t.c(k), 1, types, bits)
        accs = _apply_block16(t, f"{tag}t", rows, t.c(full), dots, accs, types)
    current = strip
    for r, row in enumerate(rows):
        t.emit(f"%W{tag}_{r} = vector.transfer_write {accs[r]}, {current}[{row}, {t.c(0)}] "
               f"{{in_bounds = [true]}} : {V16}, {types['strip']}")
        current = f"%W{tag}_{r}"
    return current


def _decode_panel16(t: _Text, m: int, k: int, block: int, types: dict[str, str],
                    bits: int) -> str:
    """The panel's strip for few rows (`_decode_panel`), one vector of 16 a row."""
    strip = "%strip"
    mr = min(m, MR)
    main = m - m % mr
    if main:
        t.emit(f"%rows = scf.for %ib = {t.c(0)} to {t.c(main)} step {t.c(mr)} "
               f"iter_args(%st = {strip}) -> ({types['strip']}) {{")
        written = _row_block16(t, "m", "%ib", mr, "%st", k, block, types, bits)
        t.emit(f"scf.yield {written} : {types['strip']}")
        t.emit("}")
        strip = "%rows"
    if m % mr:
        strip = _row_block16(t, "t", t.c(main), m % mr, strip, k, block, types, bits)
    return strip


def _dequantize_rows16(t: _Text, tag: str, scratch: str, slot: int, k0: str, blk0: str,
                       full: int, part: int, block: int, types: dict[str, str],
                       bits: int) -> str:
    """`_dequantize_rows`, one vector of 16 a row."""
    scr = types["scratch"]
    current = scratch
    pieces = [(f"%g{tag}", t.c(full), block)] if full else []
    if part:
        pieces.append((None, None, part))
    for index, (loop, count, rows) in enumerate(pieces):
        sub = f"{tag}{index}"
        if loop is not None:
            t.emit(f"%D{sub} = scf.for {loop} = {t.c(0)} to {count} step {t.c(1)} "
                   f"iter_args(%ds{sub} = {current}) -> ({scr}) {{")
            t.emit(f"  %blk{sub} = arith.addi {blk0}, {loop} : index")
            t.emit(f"  %r0{sub} = arith.muli {loop}, {t.c(block)} : index")
            inside = f"%ds{sub}"
        else:
            t.emit(f"%blk{sub} = arith.addi {blk0}, {t.c(full)} : index")
            t.emit(f"%r0{sub} = arith.constant {full * block} : index")
            inside = current
        scale, offset = _scale_offset16(t, f"{sub}z", f"%blk{sub}", types)
        t.emit(f"%R{sub} = scf.for %j{sub} = {t.c(0)} to {t.c(rows)} step {t.c(1)} "
               f"iter_args(%rs{sub} = {inside}) -> ({scr}) {{")
        t.emit(f"  %row{sub} = arith.addi %r0{sub}, %j{sub} : index")
        t.emit(f"  %k{sub} = arith.addi {k0}, %row{sub} : index")
        code = _codes16(t, sub, f"%k{sub}", types, bits)
        t.emit(f"  %w{sub} = vector.fma {code}, {scale}, {offset} : {V16}")
        t.emit(f"  %x{sub}w = vector.transfer_write %w{sub}, %rs{sub}[{t.c(slot)}, %row{sub}, "
               f"{t.c(0)}] {{in_bounds = [true]}} : {V16}, {scr}")
        t.emit(f"  scf.yield %x{sub}w : {scr}")
        t.emit("}")
        if loop is not None:
            t.emit(f"  scf.yield %R{sub} : {scr}")
            t.emit("}")
            current = f"%D{sub}"
        else:
            current = f"%R{sub}"
    return current


def _tile16(t: _Text, tag: str, row0: str, count: int, strip: str, scratch: str,
            slots: list[int], k0: str, rows: int, types: dict[str, str]) -> str:
    """C[row0 : row0 + count, panels `slots` of the group] += A[rows, k0 : k0 + rows] x
    scratch[slots] (count x len(slots) accumulators); returns the new strip."""
    strip_type, scr = types["strip"], types["scratch"]
    names, accs = [], []
    a_rows = []
    for r in range(count):
        t.emit(f"%row{tag}{r} = arith.addi {row0}, {t.c(r)} : index")
        names.append(f"%row{tag}{r}")
        a_rows.append(f"%row{tag}{r}")
        if "m0" in types:  # (a block of the rows of A)
            t.emit(f"%arow{tag}{r} = arith.addi %m0, %row{tag}{r} : index")
            a_rows[-1] = f"%arow{tag}{r}"
        for slot in slots:
            t.emit(f"%l{tag}_{r}_{slot} = vector.transfer_read {strip}[%row{tag}{r}, "
                   f"{t.c(PANEL * slot)}], %zf {{in_bounds = [true]}} : {strip_type}, {V16}")
            accs.append(f"%l{tag}_{r}_{slot}")
    carried = ", ".join(f"%i{tag}_{j} = {x}" for j, x in enumerate(accs))
    types_list = ", ".join([V16] * len(accs))
    t.emit(f"%T{tag}:{len(accs)} = scf.for %j{tag} = {t.c(0)} to {t.c(rows)} step {t.c(1)} "
           f"iter_args({carried}) -> ({types_list}) {{")
    t.emit(f"  %k{tag} = arith.addi {k0}, %j{tag} : index")
    for slot in slots:
        t.emit(f"  %w{tag}{slot} = vector.transfer_read {scratch}[{t.c(slot)}, %j{tag}, "
               f"{t.c(0)}], %zf {{in_bounds = [true]}} : {scr}, {V16}")
    out = []
    for r, row in enumerate(a_rows):
        t.emit(f"  %a{tag}{r} = tensor.extract %a[{row}, %k{tag}] : {types['a']}")
        t.emit(f"  %v{tag}{r} = vector.broadcast %a{tag}{r} : f32 to {V16}")
        for slot in slots:
            j = len(out)
            t.emit(f"  %y{tag}_{j} = vector.fma %v{tag}{r}, %w{tag}{slot}, %i{tag}_{j} : {V16}")
            out.append(f"%y{tag}_{j}")
    t.emit(f"  scf.yield {', '.join(out)} : {types_list}")
    t.emit("}")
    current = strip
    j = 0
    for r, row in enumerate(names):
        for slot in slots:
            t.emit(f"%W{tag}_{j} = vector.transfer_write %T{tag}#{j}, {current}"
                   f"[{row}, {t.c(PANEL * slot)}] {{in_bounds = [true]}} : {V16}, {strip_type}")
            current = f"%W{tag}_{j}"
            j += 1
    return current


def _chunk16(t: _Text, tag: str, strip: str, scratch: str, k0: str, blk0: str, full: int,
             part: int, m: int, block: int, group: int, types: dict[str, str], bits: int
             ) -> tuple[str, str]:
    """`_chunk` with the AVX-512 tile: WIDE_MR rows x WIDE_PANELS panels."""
    for j in range(group):
        start = len(t.lines)
        scratch = _dequantize_rows16(t, f"{tag}d{j}", scratch, j, k0, blk0, full, part, block,
                                     types, bits)
        _on_panel(t, start, f"%pj{j}")
    rows = full * block + part
    main = m - m % WIDE_MR
    strip_type = types["strip"]
    runs = [list(range(j, min(group, j + WIDE_PANELS))) for j in range(0, group, WIDE_PANELS)]

    def tiles(sub: str, row0: str, count: int, current: str) -> str:
        for i, slots in enumerate(runs):
            current = _tile16(t, f"{sub}p{i}", row0, count, current, scratch, slots, k0, rows,
                              types)
        return current

    if main:
        t.emit(f"%M{tag} = scf.for %ib{tag} = {t.c(0)} to {t.c(main)} step {t.c(WIDE_MR)} "
               f"iter_args(%st{tag} = {strip}) -> ({strip_type}) {{")
        result = tiles(f"{tag}m", f"%ib{tag}", WIDE_MR, f"%st{tag}")
        t.emit(f"  scf.yield {result} : {strip_type}")
        t.emit("}")
        strip = f"%M{tag}"
    if m % WIDE_MR:
        strip = tiles(f"{tag}t", t.c(main), m % WIDE_MR, strip)
    return strip, scratch


def _prefill_group16(t: _Text, m: int, k: int, block: int, group: int, types: dict[str, str],
                     bits: int) -> str:
    """`_prefill_group` with the AVX-512 tile."""
    strip_type = types["strip"]
    for j in range(group):
        t.emit(f"%pj{j} = arith.addi %p0, {t.c(j)} : index")
    t.emit(f"%Z = scf.for %zr = {t.c(0)} to {t.c(m)} step {t.c(1)} iter_args(%zs = %strip) "
           f"-> ({strip_type}) {{")
    current = "%zs"
    for j in range(group):
        t.emit(f"  %zw{j} = vector.transfer_write %zw, {current}[%zr, {t.c(PANEL * j)}] "
               f"{{in_bounds = [true]}} : {V16}, {strip_type}")
        current = f"%zw{j}"
    t.emit(f"  scf.yield {current} : {strip_type}")
    t.emit("}")
    per_chunk = max(1, CHUNK // block)
    rows = per_chunk * block
    chunks, rest = divmod(k, rows)
    t.emit(f"%scratch = tensor.empty() : {types['scratch']}")
    scratch = "%scratch"
    strip = "%Z"
    if chunks:
        carried = f"{strip_type}, {types['scratch']}"
        t.emit(f"%C:2 = scf.for %ch = {t.c(0)} to {t.c(chunks)} step {t.c(1)} "
               f"iter_args(%cs = {strip}, %cc = {scratch}) -> ({carried}) {{")
        t.emit(f"  %ck0 = arith.muli %ch, {t.c(rows)} : index")
        t.emit(f"  %cb0 = arith.muli %ch, {t.c(per_chunk)} : index")
        strip_out, scratch_out = _chunk16(t, "c", "%cs", "%cc", "%ck0", "%cb0", per_chunk, 0,
                                          m, block, group, types, bits)
        t.emit(f"  scf.yield {strip_out}, {scratch_out} : {carried}")
        t.emit("}")
        strip, scratch = "%C#0", "%C#1"
    if rest:
        strip, _ = _chunk16(t, "r", strip, scratch, t.c(chunks * rows),
                            t.c(chunks * per_chunk), rest // block, rest % block, m, block,
                            group, types, bits)
    return strip


def a_blocks(m: int, k: int) -> int:
    """Blocks of rows of A of the AVX-512 prefill kernel: 1 where A takes at most
    A_BLOCK_BYTES, else the fewest blocks of equal rows (at least 64) that take at most that,
    or the most such blocks: the iterations of a block's panel groups run in turn on a
    thread and find its rows of A in L2 (the weights are dequantized once per block)."""
    if m * k * 4 <= A_BLOCK_BYTES:
        return 1
    counts = [count for count in range(2, m // 64 + 1) if m % count == 0]
    return next((count for count in counts if m // count * k * 4 <= A_BLOCK_BYTES),
                counts[-1] if counts else 1)


def kernel_text(m: int, k: int, n: int, bits: int, block: int, float_zero_points: bool = False,
                name: str = "matmul_nbits", lanes: int | None = None) -> str:
    """A private function (A [m, k] f32, packed b, scales, zero points) -> [m, n] f32 (module
    docstring), as MLIR text; zero points are i8 (holding 0..255) unless `float_zero_points`.
    `lanes`: the f32 lanes of a vector register (default: the target's, `target.current()`);
    16 (AVX-512) builds the kernel on vectors of 16, others the AVX2 kernel (vectors of 8)."""
    if lanes is None:
        lanes = target.current().lanes
    wide = lanes >= 16
    panels, blocks = -(-n // PANEL), -(-k // block)
    cols = panels * PANEL
    types = {
        "a": f"tensor<{m}x{k}xf32>",
        "b": f"tensor<{panels}x{k}x{panel_bytes(bits)}xi8>",
        "s": f"tensor<{panels}x{blocks}x{PANEL}xf32>",
        "strip": f"tensor<{m}x{PANEL}xf32>",
        "scratch": f"tensor<{max(1, CHUNK // block) * block}x{PANEL}xf32>",
        "asum": f"tensor<{m}x{blocks}xf32>",
        "z": f"tensor<{panels}x{blocks}x{PANEL}x{'f32' if float_zero_points else 'i8'}>",
    }
    out_type, c_type = f"tensor<{m}x{cols}xf32>", f"tensor<{m}x{n}xf32>"
    t = _Text()
    if m <= DECODE_ROWS:
        _block_sums(t, m, k, block, types)
        if wide and bits == 4 and PAIRS and block % 2 == 0 and block <= k <= \
                PAIR_BYTES // (32 * m):
            types["apair"] = f"tensor<{m}x{k // block * block // 2}x16xf32>"
            _pair_sums(t, m, k // block * block, types)
            types["bflat"] = f"tensor<{panels}x{k * 8}xi8>"
            t.emit(f"%bflat = tensor.collapse_shape %b [[0], [1, 2]] : {types['b']} into "
                   f"{types['bflat']}")
    group = group_size(panels) if m > DECODE_ROWS else 1
    width = PANEL * group
    mblocks = a_blocks(m, k) if wide and m > DECODE_ROWS else 1
    rows, row0 = m // mblocks, "0"
    types["strip"] = f"tensor<{rows}x{width}xf32>"
    types["scratch"] = f"tensor<{group}x{max(1, CHUNK // block) * block}x{PANEL}xf32>"
    t.emit(f"%e = tensor.empty() : {out_type}")
    if mblocks == 1:
        t.emit(f"%out = scf.forall (%g) in ({panels // group}) shared_outs(%o = %e) -> "
               f"({out_type}) {{")
    else:  # (the block of rows of A outer: its iterations in turn on one thread)
        t.emit(f"%out = scf.forall (%it) in ({mblocks * (panels // group)}) shared_outs(%o = "
               f"%e) -> ({out_type}) {{")
        t.emit(f"%mb = arith.divui %it, {t.c(panels // group)} : index")
        t.emit(f"%g = arith.remui %it, {t.c(panels // group)} : index")
        t.emit(f"%m0 = arith.muli %mb, {t.c(rows)} : index")
        types["m0"], row0 = "%m0", "%m0"
    t.emit(f"%p0 = arith.muli %g, {t.c(group)} : index")
    t.emit(f"%n0 = arith.muli %g, {t.c(width)} : index")
    t.emit(f"%strip = tensor.extract_slice %o[{row0}, %n0] [{rows}, {width}] [1, 1] : "
           f"{out_type} to {types['strip']}")
    if m > DECODE_ROWS:
        prefill = _prefill_group16 if wide else _prefill_group
        strip = prefill(t, rows, k, block, group, types, bits)
    else:
        t.emit("%p = arith.addi %p0, %c0 : index")
        t.indices.add(0)
        decode = _decode_panel16 if wide else _decode_panel
        strip = decode(t, m, k, block, types, bits)
    t.emit("scf.forall.in_parallel {")
    t.emit(f"tensor.parallel_insert_slice {strip} into %o[{row0}, %n0] [{rows}, {width}] "
           f"[1, 1] : "
           f"{types['strip']} into {out_type}")
    t.emit("}")
    t.emit("}")
    result = "%out"
    if cols != n:
        t.emit(f"%r = tensor.extract_slice %out[0, 0] [{m}, {n}] [1, 1] : {out_type} to "
               f"{c_type}")
        result = "%r"
    t.emit(f"return {result} : {c_type}")
    head = [(f"func.func private @{name}(%a: {types['a']}, %b: {types['b']}, "
             f"%s: {types['s']}, %c: {types['z']}) -> {c_type} {{"),
            "%zf = arith.constant 0.0 : f32",
            "%z8 = arith.constant 0 : i8",
            f"%zv = arith.constant dense<0.0> : {V8}",
            "%m15 = arith.constant dense<15> : vector<8xi32>",
            "%m4 = arith.constant dense<4> : vector<8xi32>"]
    if wide:
        head += [f"%zw = arith.constant dense<0.0> : {V16}",
                 "%w15 = arith.constant dense<15> : vector<16xi32>",
                 "%b4 = arith.constant dense<4> : vector<8xi8>",
                 "%b15 = arith.constant dense<15> : vector<16xi8>",
                 "%w4 = arith.constant dense<4> : vector<16xi32>"]
    head += [f"%c{v} = arith.constant {v} : index" for v in sorted(t.indices)]
    return "\n".join(head + t.lines + ["}"])
