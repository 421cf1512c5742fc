"""The knobs of the contraction schedule (`matmul.py`) as one parameter record, and its space.

`MatmulParams` holds the limits the tile heuristic works within: the register tile (mr, nr),
the cache tile (mc, nc, kc), the forall (outer) tile (mt, nt), the k step of a vector-matrix
product and the packed product's kc; and whether a matmul the heuristic data-tiles is packed
(`pack`: False schedules it plain, its epilogue left to the elementwise schedule as when
packed; a plain matmul never becomes packed). The heuristic derives every concrete tile from them and
the op's static shape (largest divisors, multiples of the register tile: `matmul.py`), so any
point of `space` gives tiles that divide the shape: legal by construction, only faster or
slower. `matmul.default_params()` is the heuristic's own point (the module's constants and the
target CPU's register tile): a problem without `params` takes it, and a record equal to it
gives byte-identical IR.

Other schedule families plug in the same way: a frozen record with `FAMILY`, `as_dict`,
`from_dict`, a `space(problem, default)` of legal values per knob, and a `params` field on the
family's problem that its `lines` reads (`dlc.tuning` only uses these).
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class MatmulParams:
    """Limits of one contraction's tiles (see the module docstring)."""

    FAMILY: ClassVar[str] = "matmul"

    register: tuple[int, int]  # (mr, nr): the widest register tile
    cache: tuple[int, int, int]  # (mc, nc, kc) limits of the cache tile
    outer: tuple[int, int]  # (mt, nt) limits of the forall's output tile
    gemv_kc: int  # rows of B per cache step of a vector-matrix product (M = 1)
    pack_kc: int  # kc of the packed (data-tiled) product
    pack: bool = True  # False: a matmul the heuristic packs is scheduled plain

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Any) -> MatmulParams:
        """The record of `data` (JSON-like); ValueError when it has the wrong fields or types."""
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING}
        if not isinstance(data, dict) or not required <= set(data) <= names:
            raise ValueError(f"expected the fields {sorted(names)}, got "
                             f"{sorted(data) if isinstance(data, dict) else type(data).__name__}")
        # (a knob added later has a default, the heuristic's: older records stay valid)
        data = {f.name: f.default for f in fields(cls) if f.default is not MISSING} | data

        def ints(value: Any, count: int) -> tuple[int, ...]:
            if (not isinstance(value, list | tuple) or len(value) != count
                    or not all(type(v) is int for v in value)):
                raise ValueError(f"expected {count} integers, got {value!r}")
            return tuple(value)

        if type(data["gemv_kc"]) is not int or type(data["pack_kc"]) is not int:
            raise ValueError("gemv_kc and pack_kc must be integers")
        if type(data["pack"]) is not bool:
            raise ValueError("pack must be true or false")
        return cls(ints(data["register"], 2), ints(data["cache"], 3), ints(data["outer"], 2),
                   data["gemv_kc"], data["pack_kc"], data["pack"])


def register_tiles(lanes: int, registers: int) -> list[tuple[int, int]]:
    """Register tiles whose accumulators fit beside a vector of B per column block and a
    broadcast of A: mr x nr/lanes <= registers - nr/lanes - 1 (8 x 32 on AVX-512: 16 of 32)."""
    tiles = []
    for vectors in (1, 2, 3, 4):
        for mr in (1, 2, 4, 6, 8, 12, 16):
            if mr * vectors <= registers - vectors - 1:
                tiles.append((mr, vectors * lanes))
    return tiles


KNOBS = ("register", "cache_m", "cache_n", "cache_k", "outer_m", "outer_n", "gemv_kc",
         "pack_kc", "pack")  # a point of the space: one value per knob


def to_point(params: MatmulParams) -> dict[str, Any]:
    (mc, nc, kc), (mt, nt) = params.cache, params.outer
    return {"register": params.register, "cache_m": mc, "cache_n": nc, "cache_k": kc,
            "outer_m": mt, "outer_n": nt, "gemv_kc": params.gemv_kc, "pack_kc": params.pack_kc,
            "pack": params.pack}


def from_point(point: dict[str, Any]) -> MatmulParams:
    return MatmulParams(tuple(point["register"]),
                        (point["cache_m"], point["cache_n"], point["cache_k"]),
                        (point["outer_m"], point["outer_n"]), point["gemv_kc"], point["pack_kc"],
                        point["pack"])


def space(problem: Any, default: MatmulParams, lanes: int, registers: int
          ) -> dict[str, list]:
    """The legal values of each knob (`KNOBS`) for `problem` (a `matmul.Contraction`), in
    order (a search steps to neighbours), the default's among them. A packed problem may be
    scheduled plain (`pack`), the register tile and kc then being those of the plain
    schedule (packed, its register tile is the target's: the operands' packed layout is made
    for it before the schedule runs); a plain one has no packed kc and cannot be packed."""
    point = to_point(default)

    def values(name: str, others: list) -> list:
        return sorted(set(others) | {point[name]})

    knobs: dict[str, list] = {
        "register": [default.register],
        "cache_m": values("cache_m", [16, 32, 64, 128, 256]),
        "cache_n": values("cache_n", [64, 128, 256, 512, 1024]),
        "cache_k": values("cache_k", [64, 128, 256, 512, 1024]),
        "outer_m": values("outer_m", [32, 64, 128, 256]),
        "outer_n": values("outer_n", [128, 256, 512, 1024]),
        "gemv_kc": [default.gemv_kc],
        "pack_kc": [default.pack_kc],
        "pack": [default.pack],
    }
    knobs["register"] = values("register", register_tiles(lanes, registers))
    if problem.packed:
        knobs["pack_kc"] = values("pack_kc", [128, 256, 512, 1024])
        knobs["pack"] = [False, True]
        return knobs
    knobs["register"] = values("register", register_tiles(lanes, registers))
    if problem.m == 1 and problem.batch is None:
        knobs["gemv_kc"] = values("gemv_kc", [2, 4, 8, 16, 32, 64])
    return knobs


def check(params: MatmulParams, knobs: dict[str, list]) -> None:
    """ValueError naming the first knob of `params` outside `knobs` (a `space`)."""
    point = to_point(params)
    for name, legal in knobs.items():
        if point[name] not in legal:
            shown = list(point[name]) if isinstance(point[name], tuple) else point[name]
            raise ValueError(f"{name}={shown} is not in this op's space")
