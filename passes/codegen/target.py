"""The target CPU of the schedules: its vector registers decide the register tiles of matmuls,
convs, depthwise convs and pools.

A register tile of mr x nr f32 accumulators must fit the vector registers beside one vector of
B per column block and a broadcast of A: on AVX-512 (32 zmm registers of 16 lanes) the tile is
8 x 32 (16 accumulators, PERF.md); on AVX2/FMA (16 ymm registers of 8 lanes) 8 x 32 needs 32
accumulators and spills, so the tile is 4 x 16 (8 accumulators, 2 B vectors, a broadcast).
On an AVX2 AMD EPYC, single thread, dlc / onnxruntime in one process (issue 18): matmul
[128,768]x[768,3072] 3.2x with 8 x 32, 2.2x with 6 x 16 (12 accumulators: it fits, yet ran
slower), 1.35x with 8 x 16, 1.05-1.1x with 4 x 16 and 5 x 16, 1.5x with 3 x 16 and 2 x 32,
8.8x with 4 x 24; BERT 2.4x (8 x 32), 1.7x (6 x 16), 0.94x (4 x 16).

The choice is a function of the CPU's feature names (`from_features`: /proc/cpuinfo's or gcc's
spelling), so that tests and `dlc-opt` can pin either target (`dlc-schedule{target=avx2}`,
`use`); by default the schedules follow the host (`host`), which the compile cache's key also
names (`runtime/cache.py`). Any CPU without AVX2 keeps the AVX-512 tile (the tile of every
CPU before issue 18).
"""

from __future__ import annotations

import contextvars
import platform
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class CpuTarget:
    """What the schedules need of a CPU: its name (a `TARGETS` key), the f32 lanes of one
    vector register, the number of vector registers, the matmul register tile (mr, nr), and
    the convolutions' (`conv_common.py`): the register widths of F (unpacked convs), the
    packed filter's blocks of output channels, the widest OW register tile and the most
    accumulators (vectors) of a whole-OW register tile, the filter bytes of one block of the
    C reduction; the channel widths of depthwise convs and pools (`depthwise.py`)."""

    name: str
    lanes: int
    registers: int
    matmul_tile: tuple[int, int]
    conv_widths: tuple[int, ...] = (32, 16)
    conv_blocks: tuple[int, ...] = (32, 16)
    conv_ow: int = 8
    conv_accumulators: int = 24
    window_widths: tuple[int, ...] = (32, 16)
    conv_filter_bytes: int = 512 * 1024  # the filter slice of one C block (`conv_common`)

    @property
    def gemv_columns(self) -> int:
        """The widest register tile of a vector-matrix product: half the vector registers
        (AVX-512: 16 zmm, 256 columns; AVX2: 8 ymm, 64), `matmul.gemv_width`."""
        return self.lanes * self.registers // 2


AVX512 = CpuTarget("avx512", 16, 32, (8, 32))
# (kept on an AVX-512 Zen 4, whose 512-bit units are double-pumped, family by family against
# AVX2's tiles on the same CPU (`benchmarks/cpu_target_bench.py --cpu-time`, hybrid targets
# `avx512+FAMILY=avx2`; dlc / onnxruntime, single thread, issue 18): convs AVX-512 / AVX2 3x3
# 512 -> 512 on 7 x 7 1.13x / 1.44x, 1x1 512 -> 2048 on 7 x 7 1.03x / 1.49x, 256 -> 1024 on
# 14 x 14 1.06x / 1.17x, 3x3 64 -> 64 on 56 x 56 1.01x / 1.01x; matmuls [128,768]x[768,768]
# 1.04x / 1.10x, [197,768]x[768,3072] 1.03x / 1.30x; depthwise and pools 0-8 % apart either
# way (MobileNetV2's and V3's layers), ResNet-50 1.02x / 1.04x with AVX2's window tiles;
# 16-wide conv blocks 1.02x / 1.04x on ResNet-50. What ran slowly on Zen 4 were register tiles
# of 20 or 24 lanes, a vector and a part, and 1-row matmul tiles (`conv_common.filter_parts`,
# `matmul.n_sizes`, `matmul.outer`), not these sizes)
# (convs: [6, 16] tiles, 12 accumulators; against [8, 32], a 3x3 64 -> 64 conv on 56 x 56
# 2.8x -> 1.2x onnxruntime, 128 -> 128 on 28 x 28 7.4x -> 1.3x, 256 -> 256 on 14 x 14 8.1x ->
# 1.2x; OW tiles of 4 ran the 14 x 14 one at 5.9x)
# (depthwise convs and pools: [8, 16] tiles; MobileNetV2 1.43x -> 1.06x onnxruntime)
# (the C block of a conv's reduction: 128 KiB of filter, as on every target before 512 KiB on
# AVX-512; AVX2 CPUs have L2 caches of 256-512 KiB)
AVX2 = CpuTarget("avx2", 8, 16, (4, 16), (16, 8), (16,), 6, 12, (16, 8), 128 * 1024)
TARGETS = {t.name: t for t in (AVX512, AVX2)}
DEFAULT = AVX512  # CPUs without AVX2 (and non-x86 ones): the tile dlc always had


def from_features(features: Iterable[str]) -> CpuTarget:
    """The target of a CPU with these feature flags: AVX-512 (avx512f) -> AVX512, AVX2 with FMA
    -> AVX2, anything else -> DEFAULT."""
    names = {f.lower().replace(".", "_") for f in features}
    if "avx512f" in names:
        return AVX512
    if "avx2" in names and "fma" in names:
        return AVX2
    return DEFAULT


def _cpuinfo_flags() -> tuple[str, ...]:
    from dlc import host

    return host.flags()


@cache
def host() -> CpuTarget:
    """The target of the CPU this process runs on (x86: /proc/cpuinfo's flags)."""
    if platform.machine() not in ("x86_64", "AMD64", "i686", "i386"):
        return DEFAULT
    return from_features(_cpuinfo_flags())


def named(name: str) -> CpuTarget:
    """The target of a name: a `TARGETS` key, or "host"."""
    if name == "host":
        return host()
    if name not in TARGETS:
        raise ValueError(f"unknown CPU target {name!r}; targets are host, {', '.join(TARGETS)}")
    return TARGETS[name]


_CURRENT: contextvars.ContextVar[CpuTarget | None] = contextvars.ContextVar(
    "dlc_cpu_target", default=None)


def current() -> CpuTarget:
    """The target the schedules are built for: the innermost `use`, else the host."""
    return _CURRENT.get() or host()


@contextmanager
def use(target: CpuTarget | str) -> Iterator[CpuTarget]:
    """Build schedules (and key the compile cache) for `target` inside the block."""
    chosen = named(target) if isinstance(target, str) else target
    token = _CURRENT.set(chosen)
    try:
        yield chosen
    finally:
        _CURRENT.reset(token)


_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("dlc_schedule_threads", default=1)


def threads() -> int:
    """The threads the scheduled loops will run on (`dlc-schedule{threads=N}`, set from
    `num_threads`): which way a schedule splits its work for them (`matmul.thread_tiles`)."""
    return _THREADS.get()


def balance(tiles: int, threads: int | None = None) -> float:
    """The share of the threads' time a forall of `tiles` equal iterations keeps busy, split
    in contiguous runs (OpenMP's static schedule): 5 tiles on 2 threads run 3 rounds on one
    of them, 5 / 6 = 0.83; 1 single-threaded."""
    threads = threads or _THREADS.get()
    return tiles / (threads * -(-tiles // threads)) if tiles > 0 else 1.0


@contextmanager
def use_threads(count: int) -> Iterator[int]:
    """Build schedules for code run on `count` threads inside the block."""
    token = _THREADS.set(max(1, int(count)))
    try:
        yield count
    finally:
        _THREADS.reset(token)


@cache
def vnni() -> bool:
    """Whether this process's CPU has AVX-512 VNNI (`vpdpbusd`: the integer matmul kernel of
    `int8_vnni.py`, on the AVX-512 target)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    return "avx512_vnni" in _cpuinfo_flags()


@cache
def vbmi() -> bool:
    """Whether this process's CPU has AVX-512 VBMI (`vpermi2b`: the byte-table lookups of
    `byte_table.py`, on the AVX-512 target)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    return "avx512_vbmi" in _cpuinfo_flags() or "avx512vbmi" in _cpuinfo_flags()
