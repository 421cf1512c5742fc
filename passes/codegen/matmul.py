"""The contraction schedule: linalg.matmul (plain or transposed operands) and batch_matmul.

Recipe (../shared/PERF.md): split M and N so that each part divides its register tile (a
remainder becomes its own op with a full-size register tile: no masks, no dynamic shapes); tile
for cache (mc x nc x kc, loops in order n, k, m: a kc x nc panel of B stays in L2 while m runs
over it), then for registers (mr x nr x 1); vectorize; the k loop's accumulator is hoisted.

Tile heuristic, from the static shape and the target CPU (`target.py`, the host's by default):
- register tile: nr = 32 (two 16-lane vectors) when N >= 32, else N; mr = 8 when M >= 8, else
  M (8 x 32 = 16 accumulators of the 32 zmm registers) on AVX-512; on AVX2 (16 ymm registers
  of 8 lanes, where 8 x 32 spills) 4 x 16 likewise (8 accumulators; 6 x 16, 12 of them, ran
  2.2x slower and 4 x 16 is 1.0-1.1x onnxruntime on the matmuls below; "8" and "32" in the
  text stand for the target's tile). mr == nr is avoided (LLVM 22.1.8 miscompiles
  shape_cast(broadcast) with equal inner tiles, PERF.md): mr is halved.
- cache tile: the largest multiple of mr dividing the part's M and <= 64, of nr dividing N and
  <= 512; kc the largest divisor of K in [64, 256], else all of K. A vector-matrix product
  (M = 1) instead reads B row by row: cache loops k (kc = the largest divisor of K up to 16)
  outside all of N (a 128-byte strip of each row of B per tile was 2.2x slower), by register
  tiles of up to 256 columns (`gemv_width`: 16 independent FMA chains).
- outer (forall) tile, one output tile per iteration: mt = the largest multiple of mr dividing
  M and <= 128, nt = of nr dividing N and <= 512 (else the whole dimension when it is at most
  twice the limit, else its largest divisor under the limit); the schedule above runs inside.
  The fill or bias broadcast of the accumulator and the elementwise epilogue are fused into
  the forall (`fusion.py`), whose iterations may run on threads.
Only static f32 ops are matched. A constant B read transposed (Gemm transB=1, PyTorch's Linear)
is transposed at compile time (`pretranspose_constant_b`), so the tile reads rows of B.

On an AVX2 AMD EPYC, single thread, same process, dlc / onnxruntime, 8 x 32 -> 4 x 16 (issue
18): [128,768]x[768,768] 2.8x -> 1.0x, [128,768]x[768,3072] 3.2x -> 1.1x, [197,768]x[768,3072]
2.4x -> 1.1-1.4x, BERT (`make bench`) 2.4x -> 0.94x.

Large 2-D matmuls are data-tiled instead (`packs`: M a multiple of 8 or at least 64, N of 32,
K >= 128 and M*N*K >= 256^3): `pack` copies A to [M/8][K][8] and B to [N/32][K][32] (a constant B at
compile time) and `packed_lines` schedules the product on those panels; see "data tiling"
below. Their elementwise consumer (where M needs no padding) is rebuilt over the output's
[M/8, 8, N/32, 32] view and fused into the product's forall (`pack`, `_fused_lines`): where it
ran on its own, it was one more pass over the result, serial when small (2 threads, same
process, fused/separate: the MLP at batch 64 0.90; one thread GPT-2 0.996, BERT and ConvNeXt-T
unchanged). Packing: matmul 1024^3 0.61x -> 0.83x numpy, BERT's FFN matmul 1.45 -> 1.16 ms; B's pack reading B's
rows in order took 1024^3 from ~0.93x to ~0.98x (same-process A/B); kc = 512 (was 128) then
took it from 0.88x to 0.98x of OpenBLAS's AVX-512 kernel on an AMD EPYC (Zen 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from dlc.passes.blocked_copy import contiguous
from dlc.passes.codegen import elementwise_lines, fusion, target
from dlc.passes.codegen.matmul_params import MatmulParams
from dlc.passes.codegen.predicates import maps, reassociation
from dlc.passes.codegen.script import ANY, Lines, split, split_point, tile

OPS = ("linalg.matmul", "linalg.batch_matmul")
CACHE_M, CACHE_N, CACHE_K = 64, 512, 256
OUTER_M, OUTER_N = 128, 512
GEMV_KC = 16  # rows of B per cache step of a vector-matrix product (M = 1)
MIN_TILES = 4  # forall tiles wanted, for the threads (`thread_tiles`) ...
MIN_TILE_MACS = 32 * 1024  # ... each of at least this many multiply-adds: the MLP's batch-1
# layers (784x256, 256x256: their weights read from L3, ~40 GB/s) split in 4 and 2 tiles, each
# ~3 us; 2 threads, idle guest, us per call, 256 Ki -> 32 Ki: 18.7 -> 13.2 (onnxruntime 15.5);
# 1 thread 18.8 -> 19.2 (22.4). (In a busy `make bench` run, before its timing in blocks, the
# second core was not always free and such regions ran 7x slower: so do onnxruntime's.)


@dataclass(frozen=True)
class Tiles:
    """Cache and register tile sizes of one contraction part (m, n, k)."""

    cache: tuple[int, int, int]
    register: tuple[int, int, int]


@dataclass(frozen=True)
class Contraction:
    """The static problem of a matmul-like op: batch (None for 2-D), M, N, K."""

    batch: int | None
    m: int
    n: int
    k: int
    epilogue: bool = False  # an elementwise consumer fused into the outer tiles
    init: bool = False  # the accumulator's fill / broadcast fused into the outer tiles
    greedy: bool = False  # one transform builds the forall (fusion_plan.fuses_exactly)
    packed: bool = False  # data-tiled: `pack` rewrites it, `packed_lines` schedules it
    mr: int = 0  # (packed) the register tile's rows, `packed_row_tile` (0: the target's)
    params: MatmulParams | None = None  # a tuning record's knobs; None: `default_params()`


def default_params() -> MatmulParams:
    """The heuristic's point of the space (`matmul_params.py`): the constants below and the
    target CPU's register tile."""
    return MatmulParams(register_limits(), (CACHE_M, CACHE_N, CACHE_K), (OUTER_M, OUTER_N),
                        GEMV_KC, PACK_KC)


def params_of(problem: Contraction) -> MatmulParams:
    return problem.params or default_params()


def largest_multiple_dividing(size: int, step: int, limit: int) -> int:
    """The largest multiple of `step` that divides `size` and is <= limit (at least step)."""
    best = step
    for candidate in range(step, min(size, limit) + 1, step):
        if size % candidate == 0:
            best = candidate
    return best


def outer_tile(size: int, step: int, limit: int) -> int:
    """The forall tile of a dimension: a multiple of `step` dividing `size` up to `limit`,
    else the whole dimension up to twice the limit, else its largest divisor up to limit."""
    multiples = [d for d in range(step, min(size, limit) + 1, step) if size % d == 0]
    if multiples:
        return multiples[-1]
    if size <= 2 * limit:
        return size
    return max(d for d in range(1, limit + 1) if size % d == 0)


def thread_tiles(m: int, n: int, k: int, mt: int, nt: int, mr: int, nr: int
                 ) -> tuple[int, int]:
    """(mt, nt) narrowed while the forall has fewer than MIN_TILES tiles and each half still
    holds MIN_TILE_MACS multiply-adds and a multiple of the register tile: otherwise a matmul
    that fits one outer tile (the MLP's 64 x 784 x 256) ran on one thread at any num_threads.
    For threads (`target.threads() > 1`) M first: OpenMP hands each thread a contiguous run of
    the forall's row-major tiles, so each thread writes whole rows, the rows that the next
    ops' foralls (elementwise, row reductions: tiles of the outer dimension) give the same
    thread; split by columns, every row's halves were written on two cores and the next op
    read half of its input from the other core's cache (this 2-core guest: 64 KiB of a bias
    + relu took 7 us instead of 1; same process, 2 threads, new/old: MLP batch 64 0.90, BERT
    encoder 0.945). Single-threaded (the forall is a loop) N first, as always (BERT M first
    at 1 thread: 1.02)."""
    rows_first = target.threads() > 1
    while (m // mt) * (n // nt) < MIN_TILES and mt * nt * k // 2 >= MIN_TILE_MACS:
        if rows_first and mt % (2 * mr) == 0:
            mt //= 2
        elif nt % (2 * nr) == 0:
            nt //= 2
        elif mt % (2 * mr) == 0:
            mt //= 2
        else:
            break
    return mt, nt


def k_cache_tile(k: int, limit: int = CACHE_K) -> int:
    """The largest divisor of k in [64, limit], else k."""
    for candidate in range(min(k, limit), 63, -1):
        if k % candidate == 0:
            return candidate
    return k


def register_limits() -> tuple[int, int]:
    """The widest register tile (mr, nr) of the target CPU (`target.current()`): 8 x 32 on
    AVX-512, 6 x 16 on AVX2."""
    return target.current().matmul_tile


def register_tile(m: int, n: int, limits: tuple[int, int] | None = None) -> tuple[int, int]:
    register_m, register_n = limits or register_limits()
    nr = min(register_n, n)
    mr = min(register_m, m)
    while mr == nr and mr > 1:  # equal inner tiles hit the LLVM 22 miscompile
        mr //= 2
    while m % mr:
        mr -= 1
    return mr, nr


def matmul_tiles(m: int, n: int, k: int, params: MatmulParams | None = None) -> Tiles:
    """Tile sizes of a part whose M and N are multiples of its register tile (see `lines`)."""
    params = params or default_params()
    mr, nr = register_tile(m, n, params.register)
    mc = largest_multiple_dividing(m, mr, params.cache[0])
    nc = largest_multiple_dividing(n, nr, params.cache[1])
    return Tiles((mc, nc, k_cache_tile(k, params.cache[2])), (mr, nr, 1))


def match(op: ir.Operation) -> Contraction | None:
    """The static shape of a schedulable matmul-like op, or None."""
    if op.name not in OPS or len(op.operands) != 3 or len(op.results) != 1:
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return None
    if any(str(t.element_type) != "f32" for t in types):
        return None
    a, _, c = (list(t.shape) for t in types)
    m, n = c[-2], c[-1]
    if 0 in a or 0 in c:
        return None
    batch = c[0] if op.name == "linalg.batch_matmul" else None
    k = (a[-1] * a[-2]) // m
    producer = fusion.init_producer(op)
    init = producer is not None
    if packs(op, m, n, k):
        mr = packed_row_tile(m)
        if m % mr:  # padded (`pack`): only a fill is rebuilt at the padded size
            init = init and producer.name == "linalg.fill"
        # (its elementwise consumer is fused, rebuilt over the packed tiles: `pack`; a padded
        # M's is left to the elementwise schedule)
        fused = FUSE_EPILOGUE and not m % mr and fusion.epilogue(op) is not None
        return Contraction(None, padded_rows(m), n, k, fused, init, packed=True, mr=mr)
    return Contraction(batch, m, n, k, fusion.epilogue(op) is not None, init)


def volume(problem: Contraction) -> int:
    return (problem.batch or 1) * problem.m * problem.n * problem.k


def _part(handle: str, problem: Contraction, m: int, n: int, prefix: str) -> Lines:
    """Tile, vectorize one part (M and N are multiples of its register tile)."""
    tiles = matmul_tiles(m, n, problem.k, params_of(problem))
    batch = [1] if problem.batch is not None else []
    order = [0, 2, 3, 1] if batch else [1, 2, 0]  # cache loops n, k, m
    if m == 1:  # (batched: dlc-pack-gemv's panels, each [K, W] contiguous)
        # a vector-matrix product: B is read once, row by row: cache loops k (GEMV_KC rows of B
        # per step), then all of N by register tiles (each [1, gemv_width] tile accumulates kc
        # rows)
        kc = max(d for d in range(1, min(problem.k, params_of(problem).gemv_kc) + 1)
                 if problem.k % d == 0)
        tiles = Tiles((1, n, kc), (1, gemv_width(n, tiles.register[1]), 1))
        order = [0, 3, 2, 1] if batch else [2, 1, 0]
    ops, cached, _ = tile(handle, batch + list(tiles.cache), f"{prefix}c", order)
    more, tiled, loops = tile(cached, batch + list(tiles.register), f"{prefix}r")
    ops += more
    ops.append(f"transform.structured.vectorize {tiled} : !transform.any_op")
    return Lines(ops, [loops[-1]])


def gemv_width(n: int, nr: int) -> int:
    """The columns of a vector-matrix product's register tile: the largest power-of-two
    multiple of nr dividing the part's n, up to half the vector registers (AVX-512: 16 zmm, 256
    columns). One [1, 32] tile was one chain of dependent FMAs: [1,512]x[512,2048] 2.4x
    onnxruntime, an LSTM's batch-1 step likewise; 256 columns are 16 independent chains (1.06x).
    A width that is not a power of two (a part of 192 columns) is legalized by LLVM into
    scalar inserts and extracts: 5x slower."""
    cap = target.current().gemv_columns
    widths = [nr << i for i in range(8) if (nr << i) <= cap and n % (nr << i) == 0]
    return max(widths, default=nr)


def outer(problem: Contraction) -> fusion.Outer:
    params = params_of(problem)
    mr, nr = register_tile(problem.m, problem.n, params.register)
    mt = outer_tile(problem.m, mr, params.outer[0])
    if 2 * mr < min(params.register[0], problem.m):
        # an M without a divisor near the register tile (a prime: ViT's 197 tokens) took
        # forall tiles of its divisors (1 row: 1 x 32 register tiles); all of M instead,
        # which `tile_lines` splits into whole register tiles and a rest (192 + 5). ViT's
        # attention [12,197,64]x[12,64,197] 2.19x -> 1.0x onnxruntime, [12,197,197]x
        # [12,197,64] 2.90x -> 1.0x (Zen 4, issue 18)
        mt = problem.m
    nt = outer_tile(problem.n, nr, params.outer[1])
    if problem.batch is None:  # (a batch matmul has its batch's tiles)
        mt, nt = thread_tiles(problem.m, problem.n, problem.k, mt, nt, mr, nr)
    batch = [1] if problem.batch is not None else []
    return fusion.Outer(batch + [mt, nt, 0], batch + [mt, nt], tuple(batch + [mt, nt]),
                        problem.epilogue, problem.init, problem.greedy)


def lines(handle: str, problem: Contraction, prefix: str) -> Lines:
    """The forall of output tiles, fused with the init and epilogue; inside, `tile_lines`."""
    if problem.packed:
        return packed_lines(handle, problem, prefix)
    tiles = outer(problem)
    m, n = tiles.tile_shape[-2:]
    inner = Contraction(None if problem.batch is None else 1, m, n, problem.k,
                        params=problem.params)
    return fusion.forall_lines(handle, tiles, prefix,
                               lambda tile: tile_lines(tile, inner, f"{prefix}t"),
                               elementwise_lines.tile_lines)


def n_sizes(n: int, register_n: int) -> list[int]:
    """N's parts: a multiple of the register tile's columns, then (where that leaves columns
    that are not a whole vector) a multiple of the target's vector, then the rest, narrower
    than a vector: on AVX-512, 20 -> [16, 4], 56 -> [32, 16, 8]. A 20-wide register tile
    (MobileViT-XXS's attention, head size 20) ran 12x slower than 16 + 4 (Zen 4, issue 18)."""
    lanes = target.current().lanes
    sizes, rest = [], n
    for width in (register_n, lanes):
        if rest > width and rest % width:
            sizes.append(rest - rest % width)
            rest %= width
    return [s for s in sizes if s] + [rest]


def tile_lines(handle: str, problem: Contraction, prefix: str) -> Lines:
    """The schedule of one contraction, split into parts that divide the register tiles."""
    offset = 0 if problem.batch is None else 1
    result = Lines()
    m_parts = [(handle, problem.m)]
    register_m, register_n = params_of(problem).register
    at = split_point(problem.m, register_m)
    if at is not None:
        ops, low, high = split(handle, offset, at, f"{prefix}m")
        result.ops += ops
        m_parts = [(low, at), (high, problem.m - at)]
    for i, (m_handle, m) in enumerate(m_parts):
        n_parts, rest = [], m_handle
        sizes = n_sizes(problem.n, register_n)
        for j, size in enumerate(sizes[:-1]):
            ops, low, rest = split(rest, offset + 1, size, f"{prefix}n{i}" + (f"_{j}" if j else ""))
            result.ops += ops
            n_parts.append((low, size))
        n_parts.append((rest, sizes[-1]))
        for j, (n_handle, n) in enumerate(n_parts):
            result += _part(n_handle, problem, m, n, f"{prefix}p{i}{j}")
    return result


def _map_results(op: ir.Operation, index: int) -> list[str] | None:
    if "indexing_maps" not in op.attributes:
        return None
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    return [str(e) for e in ir.AffineMapAttr(maps[index]).value.results]


def pretranspose_constant_b(op: ir.Operation) -> None:
    """matmul(A, constant B, maps reading B^T) -> matmul(A, transposed constant), plain maps.

    Otherwise the register tile would gather 32 strided elements of B per k.
    """
    if op.name != "linalg.matmul" or _map_results(op, 1) != ["d1", "d2"]:
        return
    if _map_results(op, 0) != ["d0", "d2"]:
        return
    attr = _constant(op.operands[1])
    if attr is None:
        return
    weight = op.operands[1].owner
    transposed = contiguous(np.asarray(attr).T)  # (the classifier of ResNet-50: 7.8 -> 2.7 ms)
    with ir.InsertionPoint(weight), weight.location:
        value = arith.ConstantOp(
            ir.RankedTensorType.get(list(transposed.shape), attr.type.element_type),
            ir.DenseElementsAttr.get(transposed),
        ).result
    maps = [ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(i) for i in dims])
            for dims in ((0, 2), (2, 1), (0, 1))]
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    op.operands[1] = value


UNPACKED = "dlc.unpacked"  # a tuning record's `pack=False` (`unpacked`), read by `prepare`


def unpacked(problem: Contraction, rows: int) -> Contraction:
    """The plain problem of a packed matmul of `rows` rows: its epilogue and init fused as
    the packed problem fused them (the elementwise schedule skipped that epilogue)."""
    return Contraction(None, rows, problem.n, problem.k, problem.epilogue, problem.init,
                       params=problem.params)


def prepare(op: ir.Operation) -> ir.Operation | None:
    """Payload rewrites before the schedule runs (data layout of the operands): the packed
    form of a large matmul (`pack`, returned), else a constant B^T transposed."""
    problem = match(op)
    keep_plain = UNPACKED in op.attributes
    if keep_plain:
        del op.attributes[UNPACKED]
    if problem is not None and problem.packed and not keep_plain:
        return pack(op)
    pretranspose_constant_b(op)
    return None


# ----------------------------------------------------------------------------- data tiling
#
# A large matmul reads B in rows N*4 bytes apart: with N = 1024 every row of a register tile's
# B panel falls in the same L1 set (4 KiB apart), so the panel is re-read from L2 at every
# step; A's 8 rows of a register tile likewise. Packing (mmt4d-style) copies each operand into
# the order the register tile reads it: A4[M/8][K][8] (8 rows of a k step side by side) and
# B4[N/32][K][32] (32 columns of a k step side by side), each register tile's panels then
# being contiguous. A constant B is packed at compile time, otherwise B and A are packed by
# a transpose per call (O(MK + KN) against the O(MNK) product). The product is a
# linalg.generic over (mb, nb, m0, n0, k) writing C[mb*8 + m0, nb*32 + n0] in place: the
# result stays row-major [M, N] for its users. Its multiply-add carries fastmath<contract>
# (the register tile's unit dims are folded away before vectorizing, so no vector.contract is
# left to lower to FMAs: LLVM contracts the pair).
# The register tile (PACK_M x PACK_N below) is the target CPU's (`pack_tile`): 8 x 32 (16
# accumulators of 16 lanes) on AVX-512, 6 x 16 (12 of 8 lanes) on AVX2; "8" and "32" in the
# comments stand for it.
PACK_VOLUME = 256 ** 3  # smaller matmuls keep the plain schedule (their panels stay in L1)
PACK_K = 128  # ... and so do short reductions (the per-call pack would not pay)
PACK_KC = 512  # kc of the packed product. The C tile is loaded and stored once per kc step;
# the 32 x kc B panel (64 KiB) then lives in L2, streamed in order. On an AMD EPYC (Zen 5):
# matmul 1024^3 0.88x -> 0.98x OpenBLAS (AVX-512 kernel), BERT 0.79-0.83x -> 0.74x
# onnxruntime, against kc = 128 (same-process A/B); on the Intel Xeon of earlier sessions,
# kc = 128 was 1.5-3 % faster than 256 at 512^3 and 1024^3
PACK_PAD_M = 64  # an M that is not a multiple of PACK_M packs from this size on: A's rows and
# the accumulator's are padded to the next multiple of 8 (zeros; the extra rows, at most 7 of
# >= 72, about 10 % more work at worst, are computed and dropped, `pack`). ViT-B/16's
# sequence 197 took the plain schedule: its [197,768]x[768,3072] ran 50 ms against 30.7 ms
# for M = 192 and 30.4 ms for M = 200 (issue 18). Below 64 rows the plain schedule keeps
# them (its M split handles a remainder of rows without the padding's waste).


def pack_tile() -> tuple[int, int]:
    """(PACK_M, PACK_N): the packed product's register tile, the target CPU's
    (`register_limits`); A is packed in panels of PACK_M rows, B of PACK_N columns."""
    return register_limits()


PAD_WASTE = 0.05  # the share of padded rows from which a narrower row tile dividing M is used


def packed_row_tile(m: int) -> int:
    """The packed product's register rows for M: the target's (`pack_tile`), except where M
    is not a multiple of them and padding would waste PAD_WASTE or more of the product: the
    widest narrower tile (down to half the rows) that divides M. ConvNeXt-T's last stage
    (49 tokens: 7 x 7) was padded to 56 rows, 12.5 % of its multiply-adds on zero rows
    (90-93 GFLOP/s where its other products ran 107-112); 7-row tiles (14 accumulators)
    ... ViT's 197 tokens stay padded to 200 (1.5 %)."""
    pack_m = pack_tile()[0]
    padded = -(-m // pack_m) * pack_m
    if (padded - m) < PAD_WASTE * padded:
        return pack_m
    return next((mr for mr in range(pack_m - 1, pack_m // 2, -1) if m % mr == 0), pack_m)


def padded_rows(m: int) -> int:
    """M rounded up to a multiple of the packed product's register rows (`packed_row_tile`)."""
    mr = packed_row_tile(m)
    return -(-m // mr) * mr


def _plain_maps(op: ir.Operation) -> str | None:
    """"ab" for A[m, k] x B[k, n], "abt" for B read transposed (B[n, k]), else None."""
    a, b = _map_results(op, 0), _map_results(op, 1)
    if a is None:
        return "ab"
    if a != ["d0", "d2"] or _map_results(op, 2) != ["d0", "d1"]:
        return None
    return {("d2", "d1"): "ab", ("d1", "d2"): "abt"}.get(tuple(b or ()))


PACK_CONSTANT_MIN_M = 4  # a constant B (the weights) packs from 4 rows and from 128^3 ...
PACK_CONSTANT_VOLUME = 128 ** 3  # ... multiply-adds: its pack costs nothing at run time, and
# the padded rows cost less than the plain schedule's strided reads of B. AVX2, single thread,
# same process, dlc / onnxruntime, plain -> packed: [16,768]x[768,768] 1.34 -> 1.01,
# [16,3072]x[768] 1.28 -> 1.08, [8,768]x[768,768] 1.18 -> 0.87, [4,768]x[768,768] 1.17 ->
# 0.88, [64,256]x[256,256] 1.09 -> 0.95 (BERT at sequence 16, issue 22); one or two rows
# keep the vector-matrix schedule ([1,768]x[768,3072] 0.76 plain, 1.19 packed)


def packs(op: ir.Operation, m: int, n: int, k: int) -> bool:
    """Whether matmul `op` (static f32) takes the packed schedule."""
    pack_m, pack_n = pack_tile()
    if op.name != "linalg.matmul" or n % pack_n or k < PACK_K:
        return False
    layout = _plain_maps(op)
    constant_b = _constant(op.operands[1]) is not None
    if layout != "ab" and not (layout == "abt" and constant_b):
        return False
    if constant_b and m >= PACK_CONSTANT_MIN_M and m * n * k >= PACK_CONSTANT_VOLUME:
        return True
    if m % pack_m and m < PACK_PAD_M:
        return False
    return m * n * k >= PACK_VOLUME


def _constant(value: ir.Value) -> ir.DenseElementsAttr | None:
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or attr.is_splat:
        return None
    return attr


def _packed_operand(value: ir.Value, rows: int, tile: int, transposed: bool) -> ir.Value:
    """[rows, K] (or [K, rows] when not `transposed`) -> [rows/tile, K, tile]."""
    f32 = ir.F32Type.get()
    shape = list(value.type.shape)
    k = shape[1] if transposed else shape[0]
    result = [rows // tile, k, tile]
    attr = _constant(value)
    if attr is not None:
        # (a view of the attribute's data, copied once: [K, rows] read in runs of `tile`
        # elements, not transposed whole first; BERT-base's 72 weights: 0.7 -> 0.2 s)
        array = np.asarray(attr)
        if transposed:  # [rows, K] -> [rows/tile, tile, K] -> [rows/tile, K, tile]
            packed = array.reshape(rows // tile, tile, k).transpose(0, 2, 1)
        else:  # [K, rows] -> [K, rows/tile, tile] -> [rows/tile, K, tile]
            packed = array.reshape(k, rows // tile, tile).transpose(1, 0, 2)
        packed = contiguous(packed)
        return arith.ConstantOp(ir.RankedTensorType.get(result, f32),
                                ir.DenseElementsAttr.get(packed)).result
    if transposed:  # [rows, K] -> [rows/tile, tile, K] -> [rows/tile, K, tile]
        expanded, permutation = [rows // tile, tile, k], [0, 2, 1]
        groups = [[0, 1], [2]]
    else:  # [K, rows] -> [K, rows/tile, tile] -> [rows/tile, K, tile]
        expanded, permutation = [k, rows // tile, tile], [1, 0, 2]
        groups = [[0], [1, 2]]
    view = tensor.ExpandShapeOp(ir.RankedTensorType.get(expanded, f32), value,
                                reassociation(groups), [], expanded).result
    empty = tensor.EmptyOp(result, f32).result
    built = linalg.transpose(view, outs=[empty], permutation=permutation)
    return built if isinstance(built, ir.Value) else built.results[0]


def _zeros(shape: list[int]) -> ir.Value:
    f32 = ir.F32Type.get()
    zero = arith.ConstantOp(f32, ir.FloatAttr.get(f32, 0.0)).result
    return linalg.fill(zero, outs=[tensor.EmptyOp(shape, f32).result])


def _pad_rows(value: ir.Value, rows: int) -> ir.Value:
    """[M, X] -> [rows, X], the new rows zero (a constant padded at compile time)."""
    shape = list(value.type.shape)
    attr = _constant(value)
    if attr is not None:
        array = np.array(attr)
        padded = np.zeros([rows, shape[1]], dtype=array.dtype)
        padded[: shape[0]] = array
        return arith.ConstantOp(ir.RankedTensorType.get([rows, shape[1]], ir.F32Type.get()),
                                ir.DenseElementsAttr.get(padded)).result
    return tensor.InsertSliceOp(value, _zeros([rows, shape[1]]), [], [], [], [0, 0], shape,
                                [1, 1]).result


def _padded_accumulator(c: ir.Value, rows: int) -> ir.Value:
    """The accumulator at `rows` rows: its fill rebuilt at that size (still fused into the
    forall, `match`), else C copied into zeros."""
    owner = c.owner
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "linalg.fill":
        empty = tensor.EmptyOp([rows, c.type.shape[1]], c.type.element_type).result
        return linalg.fill(owner.operands[0], outs=[empty])
    return _pad_rows(c, rows)


PACKED = "dlc.packed_matmul"  # (the packed product's generic: its tile is matched by it)
FUSE_EPILOGUE = True  # a packed product's elementwise consumer fused into its forall (`pack`)


def pack(op: ir.Operation) -> ir.Operation:
    """matmul(A, B, C) -> generic(A4, B4, C) (see above); returns the generic. An M that is
    not a multiple of PACK_M (`PACK_PAD_M`) is padded: the generic computes A and C padded
    with zero rows, its result's first M rows replace the matmul's. With an elementwise
    consumer (`match`'s epilogue) the generic writes C viewed as [M/mr, mr, N/nr, nr] (an
    expand_shape: the same row-major bytes) and the consumer and the init are rebuilt over
    that view (`_over_tiles`), so that the forall of the packed product's tiles fuses them."""
    transposed_b = _plain_maps(op) == "abt"
    a, b, c = op.operands
    m, n = c.type.shape
    rows = padded_rows(m)
    pack_m, pack_n = packed_row_tile(m), pack_tile()[1]
    epilogue = fusion.epilogue(op) if rows == m and FUSE_EPILOGUE else None
    # (the init `match` saw: matmuls packed before this one may share it, a zero fill CSE
    # merged, their generics tagged PACKED)
    init = fusion.init_producer(op, PACKED) if epilogue is not None else None
    with ir.InsertionPoint(op), op.location:
        if rows != m:
            a, c = _pad_rows(a, rows), _padded_accumulator(c, rows)
        a4 = _packed_operand(a, rows, pack_m, True)
        b4 = _packed_operand(b, n, pack_n, transposed_b)
        d = [ir.AffineDimExpr.get(i) for i in range(5)]  # mb, nb, m0, n0, k
        maps = [ir.AffineMap.get(5, 0, [d[0], d[4], d[2]]),
                ir.AffineMap.get(5, 0, [d[1], d[4], d[3]]),
                ir.AffineMap.get(5, 0, [d[0] * pack_m + d[2], d[1] * pack_n + d[3]])]
        tiles = (pack_m, pack_n)
        if epilogue is not None:
            c = _accumulator_over_tiles(c, init, tiles)
            maps[2] = ir.AffineMap.get(5, 0, [d[0], d[2], d[1], d[3]])
        generic = multiply_add([a4, b4, c], maps, ["parallel"] * 4 + ["reduction"])
        generic.attributes[PACKED] = ir.UnitAttr.get()
        result = generic.results[0]
        if rows != m:
            result = tensor.ExtractSliceOp(op.results[0].type, result, [], [], [], [0, 0],
                                           [m, n], [1, 1]).result
    if epilogue is not None:
        with ir.InsertionPoint(epilogue), epilogue.location:
            index = next(u.operand_number for u in op.results[0].uses)
            new = _over_tiles(epilogue, {index: result}, tiles)
            epilogue.results[0].replace_all_uses_with(_untiled(new.results[0]))
        epilogue.erase()
    else:
        op.results[0].replace_all_uses_with(result)
    op.erase()
    if init is not None and not list(init.results[0].uses):
        init.erase()
    return generic


def _tiled_shape(shape: list[int], dims: list[int], tiles: tuple[int, int]) -> list[int]:
    """The shape of an operand indexed by loop `dims` (0: M, 1: N) with each split in two:
    [M, N] -> [M/mr, mr, N/nr, nr], [N] -> [N/nr, nr]."""
    out = []
    for size, dim in zip(shape, dims, strict=True):
        out += [size // tiles[dim], tiles[dim]]
    return out


def _tiled(value: ir.Value, dims: list[int], tiles: tuple[int, int]) -> ir.Value:
    """`value` (indexed by loop `dims`) viewed with each of its dims split (`_tiled_shape`)."""
    shape = list(value.type.shape)
    expanded = _tiled_shape(shape, dims, tiles)
    groups = [[2 * i, 2 * i + 1] for i in range(len(shape))]
    return tensor.ExpandShapeOp(ir.RankedTensorType.get(expanded, value.type.element_type),
                                value, reassociation(groups), [], expanded).result


def _untiled(value: ir.Value) -> ir.Value:
    """[M/mr, mr, N/nr, nr] -> [M, N]."""
    a, b, c, d = value.type.shape
    return tensor.CollapseShapeOp(ir.RankedTensorType.get([a * b, c * d], value.type.element_type),
                                  value, reassociation([[0, 1], [2, 3]])).result


def _tiled_empty(shape: list[int], element: ir.Type, tiles: tuple[int, int]) -> ir.Value:
    return tensor.EmptyOp(_tiled_shape(shape, [0, 1], tiles), element).result


def _over_tiles(op: ir.Operation, replaced: dict[int, ir.Value],
                tiles: tuple[int, int]) -> ir.Operation:
    """All-parallel 2-D generic `op` (identity result map, ordered-projection operand maps)
    rebuilt over (mb, m0, nb, n0): each operand's dims split (`_tiled`; `replaced[i]`: operand
    i's value, already split), its result [M/mr, mr, N/nr, nr]. The body is cloned."""
    d = [ir.AffineDimExpr.get(i) for i in range(4)]
    new_maps, operands = [], []
    count = len(op.operands)
    for index, (operand, old) in enumerate(zip(op.operands, maps(op), strict=True)):
        dims = [ir.AffineDimExpr(e).position for e in old.results]
        results = [e for dim in dims for e in (d[2 * dim], d[2 * dim + 1])]
        if index in replaced:
            value = replaced[index]
        elif index == count - 1 and fusion.is_empty(operand):
            value = _tiled_empty(list(operand.type.shape), operand.type.element_type, tiles)
        elif dims:
            value = _tiled(operand, dims, tiles)
        else:
            value = operand
        new_maps.append(ir.AffineMap.get(4, 0, results))
        operands.append(value)
    return fusion.rebuilt(op, operands, new_maps)


def _accumulator_over_tiles(c: ir.Value, init: ir.Operation | None,
                            tiles: tuple[int, int]) -> ir.Value:
    """The accumulator viewed [M/mr, mr, N/nr, nr]: its init (fill, bias broadcast, generic)
    rebuilt over the tiles, so that the forall fuses it; else a view of the value."""
    shape, element = list(c.type.shape), c.type.element_type
    if init is None:
        return _tiled(c, [0, 1], tiles)
    # (the init's destination kept, viewed over the tiles: a block of a dynamic function
    # fills a slice of its result, which a fresh empty made a buffer copied into the result
    # after every block: GPT-2's c_fc at 128 rows 1.09x its static compile)
    dest = init.operands[len(init.operands) - 1]

    def tiled_dest() -> ir.Value:
        if fusion.is_empty(dest):
            return _tiled_empty(shape, element, tiles)
        return _tiled(dest, [0, 1], tiles)

    if init.name == "linalg.fill":
        built = linalg.fill(init.operands[0], outs=[tiled_dest()])
        return built if isinstance(built, ir.Value) else built.results[0]
    if init.name == "linalg.broadcast":
        dims = [int(v) for v in ir.DenseI64ArrayAttr(init.attributes["dimensions"])]
        source = init.operands[0]
        kept = [i for i in range(2) if i not in dims]
        built = linalg.broadcast(_tiled(source, kept, tiles) if kept else source,
                                 outs=[tiled_dest()],
                                 dimensions=[e for dim in dims for e in (2 * dim, 2 * dim + 1)])
        return built if isinstance(built, ir.Value) else built.results[0]
    return _over_tiles(init, {}, tiles).results[0]


def _fused_lines(handle: str, problem: Contraction, prefix: str,
                 sizes: tuple[int, int, int, int, int], mr: int, nr: int) -> Lines:
    """The packed product with its epilogue (and init) over [M/mr, mr, N/nr, nr] (`pack`):
    the forall of [mt, nt] output tiles rooted at the epilogue (`fusion.forall_lines`), the
    product's cache and register tiles inside, the epilogue and init tiles vectorized by the
    elementwise schedule, then the product's register tiles."""
    mt, nt, mc, nc, kc = sizes
    outer = fusion.Outer([mt // mr, nt // nr, 0, 0, 0], [mt // mr, 0, nt // nr, 0],
                         (mt // mr, mr, nt // nr, nr), True, problem.init, problem.greedy,
                         contraction=f"attributes {{{PACKED}}}")
    found = f"%{prefix}_fa"
    kernel: list[str] = []

    def inner(tiled: str) -> Lines:
        ops = [(f"{found} = transform.get_parent_op {tiled} {{op_name = \"scf.forall\"}} "
                f": ({ANY}) -> {ANY}")]
        more, cached, _ = tile(tiled, [mc // mr, nc // nr, 0, 0, kc], f"{prefix}c",
                               [1, 4, 0, 2, 3])
        ops += more
        more, _, loops = tile(cached, [1, 1, 0, 0, 1], f"{prefix}r", [1, 0, 2, 3, 4])
        kernel.append(loops[-1])
        return Lines(ops + more)

    result = fusion.forall_lines(handle, outer, prefix, inner, elementwise_lines.tile_lines)
    # (the epilogue and init tiles are vectors now: the generic left is the product's)
    result += Lines([f"transform.apply_patterns to {found} {{",
                     "  transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices",
                     f"}} : {ANY}",
                     (f"%{prefix}_kernel = transform.structured.match "
                      f"ops{{[\"linalg.generic\"]}} in {found} : ({ANY}) -> {ANY}"),
                     f"transform.structured.vectorize %{prefix}_kernel : {ANY}"], kernel)
    return result


def multiply_add(operands: list[ir.Value], affine_maps: list[ir.AffineMap],
                 iterators: list[str]) -> ir.Operation:
    """`linalg.generic ins(a, b) outs(acc)` computing acc += a * b over `iterators`, the
    multiply-add marked fastmath<contract> (LLVM fuses the pair into an FMA once the packed
    kernels' unit dims are folded and no vector.contract is left to lower). Built at the
    current insertion point and location."""
    acc = operands[-1]
    generic = ir.Operation.create(
        "linalg.generic", results=[acc.type], operands=operands,
        attributes={
            "indexing_maps": ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in affine_maps]),
            "iterator_types": ir.ArrayAttr.get(
                [ir.Attribute.parse(f"#linalg.iterator_type<{i}>") for i in iterators]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(operands) - 1, 1]),
        }, regions=1)
    element = acc.type.element_type
    block = generic.regions[0].blocks.append(element, element, element)
    contract = ir.Attribute.parse("#arith.fastmath<contract>")
    with ir.InsertionPoint(block):
        x, y, total = block.arguments
        product = arith.MulFOp(x, y, fastmath=contract).result
        linalg.YieldOp([arith.AddFOp(total, product, fastmath=contract).result])
    return generic


def packed_rows_tile(m: int, mr: int, limit: int) -> int:
    """The packed product's forall tile of rows: `outer_tile`'s, except that a divisor under
    half the limit gives way to all of M when M is at most twice the limit. Each forall tile
    streams its whole [K, nt] panel of B (the weights, megabytes) from L3 or memory: ViT's
    197 rows, padded to 200, took tiles of 40 (the largest multiple of 8 dividing 200 up to
    128), all of B read 5 times; A's 200 rows of a kc step (400 KB) stay in L2. Zen 4, one
    thread, CPU ms per call, min of 30, same process, before -> after (onnxruntime):
    MatMul+Add [197,768]x[768,3072] 9.87 -> 9.44 (8.99), [197,3072]x[3072,768] 9.56 -> 9.09
    (9.62), [197,768]x[768,768] 2.16 -> 2.13 (2.10); ViT-B/16 360 -> 350 (355). The forall
    keeps MIN_TILES tiles for the threads (`thread_tiles`), as BERT's 128 rows do."""
    mt = outer_tile(m, mr, limit)
    if 2 * mt < limit and m <= 2 * limit:
        return m
    return mt


def packed_lines(handle: str, problem: Contraction, prefix: str) -> Lines:
    """The packed product's schedule: a forall of [mt, nt] output tiles holding the init,
    then cache tiles (nb, k, mb loops) and 8 x 32 register tiles (nb outer: a B panel stays
    in L1 while the A panels of the cache tile pass), the unit dims folded, vectorized."""
    mr, nr = problem.mr or pack_tile()[0], pack_tile()[1]
    params = params_of(problem)
    mt = packed_rows_tile(problem.m, mr, params.outer[0])
    nt = outer_tile(problem.n, nr, params.outer[1])
    mt, nt = thread_tiles(problem.m, problem.n, problem.k, mt, nt, mr, nr)
    mc = largest_multiple_dividing(mt, mr, params.cache[0])
    nc = largest_multiple_dividing(nt, nr, params.cache[1])
    kc = k_cache_tile(problem.k, params.pack_kc)
    forall, ops = f"%{prefix}_forall", []
    # the packing transposes (of operands not packed at compile time): [1, kt, all] tiles,
    # vectorized (A's an 8 x kt transpose in registers, B's row copies)
    for index, width in ((0, 16), (1, 8)):
        kt = max(d for d in (width, 8, 4, 2, 1) if problem.k % d == 0)
        producer, packing = f"%{prefix}_p{index}", f"%{prefix}_pack{index}"
        ops.append(f"{producer} = transform.get_producer_of_operand {handle}[{index}] "
                   f": ({ANY}) -> {ANY}")
        ops.append(f"{packing} = transform.structured.match ops{{[\"linalg.transpose\"]}} "
                   f"in {producer} : ({ANY}) -> {ANY}")  # (empty: a constant)
        # B's pack runs k outer (loops [k, nb]): it reads B's rows in order, where nb outer
        # read a 128-byte column strip of every row, a page apart (matmul 1024^3: -1 ms)
        order = [1, 0, 2] if index == 1 else None
        more, packed, _ = tile(packing, [1, kt, 0], f"{prefix}pk{index}", order)
        ops += more
        ops.append(f"transform.structured.vectorize {packed} : {ANY}")
    if problem.epilogue:
        fused = Lines(ops)
        fused += _fused_lines(handle, problem, prefix, (mt, nt, mc, nc, kc), mr, nr)
        return fused
    if problem.init:
        # one `fuse {use_forall}` tiles the product and fuses its init (its operands' packing,
        # tiled above, are loops by now, not fused): fuse_into_containing_op first tries a
        # path that fails for an init (a forall's shared output) and prints the init into a
        # dropped diagnostic, numbering the whole function each time (MobileBERT's 361
        # schedules: 10.5 s of transform script, quadratic in the model)
        ops.append(f"%{prefix}_tile, {forall} = transform.structured.fuse {handle} "
                   f"tile_sizes [{mt // mr}, {nt // nr}, 0, 0, 0] {{use_forall}} "
                   f": ({ANY}) -> ({ANY}, {ANY})")
        ops.append(f"%{prefix}_inittile = transform.get_producer_of_operand %{prefix}_tile[2] "
                   f": ({ANY}) -> {ANY}")
    else:
        ops.append(f"%{prefix}_tile, {forall}0 = transform.structured.tile_using_forall "
                   f"{handle} tile_sizes [{mt // mr}, {nt // nr}, 0, 0, 0] "
                   f": ({ANY}) -> ({ANY}, {ANY})")
        ops.append(f"{forall} = transform.merge_handles {forall}0 : {ANY}")
    more, cached, _ = tile(f"%{prefix}_tile", [mc // mr, nc // nr, 0, 0, kc], f"{prefix}c",
                           [1, 4, 0, 2, 3])
    ops += more
    more, _, loops = tile(cached, [1, 1, 0, 0, 1], f"{prefix}r", [1, 0, 2, 3, 4])
    ops += more
    ops += [f"transform.apply_patterns to {forall} {{",
            "  transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices",
            f"}} : {ANY}",
            (f"%{prefix}_kernel = transform.structured.match ops{{[\"linalg.generic\"]}} "
             f"in {forall} : ({ANY}) -> {ANY}"),
            f"transform.structured.vectorize %{prefix}_kernel : {ANY}"]
    result = Lines(ops, [loops[-1]])
    if problem.init:
        result += elementwise_lines.tile_lines(f"%{prefix}_inittile", (mt, nt), f"{prefix}i")
    return result
