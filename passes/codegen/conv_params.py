"""The knobs of the convolution schedules (`conv.py`, `packed_conv.py`) as one parameter record,
and its space.

`ConvParams` holds the limits the tile heuristic of `conv_common.py` works within: the bytes
of a forall output tile (`outer_bytes`: its rows), the filter slice of a packed forall tile
(`outer_filter`: its width in output channels) and the forall tiles a packed conv keeps for
the threads (`min_tiles`), the filter slice of one block of the C reduction (`filter_bytes`,
`filter_pages`: kc), the widest register tile of OW (`ow_max`), whether the init and the
epilogue are fused into the register tiles (`register_fusion`) and the order of the forall's
tiles (`order`: "auto" is `conv_common.filter_outer`'s choice, "rows" or "filters" outermost),
and whether a conv the heuristic packs (data-tiles, `packed_conv.py`) is packed (`pack`: False
schedules it as the named conv, `conv.py`; a conv the heuristic does not pack never is).
The heuristic derives every concrete tile from them and the op's static shape (largest
divisors, the register widths of the target), so any point of `space` gives tiles that divide
the shape: legal by construction, only faster or slower. `conv_common.default_params()` is
the heuristic's own point (the module constants and the target's OW tile): a problem without
`params` takes it, and a record equal to it gives byte-identical IR.

The register widths of F (and the packed block) are the target's, not knobs.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar

ORDERS = ("auto", "filters", "rows")  # the forall's order: `conv_common.filter_outer`
OW_MIN = 4  # the narrowest register tile of OW a record may ask for (`conv_common.OW_MIN`)


@dataclass(frozen=True)
class ConvParams:
    """Limits of one convolution's tiles (see the module docstring)."""

    FAMILY: ClassVar[str] = "conv"

    outer_bytes: int  # the forall output tile [1, oh, OW, f] (bytes): its rows
    outer_filter: int  # (packed) the filter slice of a forall tile (bytes): its width f
    min_tiles: int  # (packed) forall tiles wanted: f and oh narrowed below this
    filter_bytes: int  # the [kh, kw, kc, f] filter slice of one C block (bytes): kc
    filter_pages: int  # ... and the 4 KiB pages it may touch
    ow_max: int  # the widest register tile of OW
    register_fusion: bool  # init and epilogue fused into the register tiles (greedy forall)
    order: str  # the forall's tiles: "auto" (by the bytes moved), "filters" or "rows" outermost
    pack: bool = True  # False: a conv the heuristic packs is scheduled as the named conv

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ConvParams:
        """The record of `data` (JSON-like); ValueError when it has the wrong fields or types."""
        names = [f.name for f in fields(cls)]
        required = {f.name for f in fields(cls) if f.default is MISSING}
        if not isinstance(data, dict) or not required <= set(data) <= set(names):
            raise ValueError(f"expected the fields {sorted(names)}, got "
                             f"{sorted(data) if isinstance(data, dict) else type(data).__name__}")
        # (a knob added later has a default, the heuristic's: older records stay valid)
        data = {f.name: f.default for f in fields(cls) if f.default is not MISSING} | data
        for name in names[:6]:
            if type(data[name]) is not int or data[name] < 1:
                raise ValueError(f"{name} must be a positive integer, got {data[name]!r}")
        if type(data["register_fusion"]) is not bool or type(data["pack"]) is not bool:
            raise ValueError("register_fusion and pack must be true or false")
        if data["order"] not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {data['order']!r}")
        return cls(**{name: data[name] for name in names})


KNOBS = tuple(f.name for f in fields(ConvParams))  # a point of the space: one value per knob


def to_point(params: ConvParams) -> dict[str, Any]:
    return params.as_dict()


def from_point(point: dict[str, Any]) -> ConvParams:
    return ConvParams(**{name: point[name] for name in KNOBS})


def space(problem: Any, default: ConvParams, ow_limit: int) -> dict[str, list]:
    """The legal values of each knob (`KNOBS`) for `problem` (a `conv_common.Conv`), in order
    (a search steps to neighbours), the default's among them. `ow_limit`: the widest OW tile
    whose accumulators fit the registers with the widest F tile (12 on AVX-512, 6 on AVX2).
    The packed schedule's knobs (`outer_filter`, `min_tiles`, `pack`) are fixed for a conv the
    heuristic does not pack, register fusion for a conv with neither init nor epilogue."""
    point = to_point(default)

    def values(name: str, others: list) -> list:
        return sorted(set(others) | {point[name]})

    kib = 1024
    knobs: dict[str, list] = {
        "outer_bytes": values("outer_bytes", [64 * kib, 128 * kib, 256 * kib, 512 * kib,
                                              1024 * kib]),
        "outer_filter": [default.outer_filter],
        "min_tiles": [default.min_tiles],
        "filter_bytes": values("filter_bytes", [32 * kib, 64 * kib, 128 * kib, 256 * kib,
                                                512 * kib]),
        "filter_pages": values("filter_pages", [32, 64, 128, 256, 512]),
        "ow_max": values("ow_max", list(range(OW_MIN, ow_limit + 1))),
        "register_fusion": [default.register_fusion],
        "order": list(ORDERS),
        "pack": [default.pack],
    }
    if problem.init or problem.epilogue:
        knobs["register_fusion"] = [False, True]
    if problem.packed:
        knobs["outer_filter"] = values("outer_filter", [256 * kib, 512 * kib, 1024 * kib,
                                                        2048 * kib, 4096 * kib])
        knobs["min_tiles"] = values("min_tiles", [1, 2, 4, 8])
        knobs["pack"] = [False, True]
    return knobs


def check(params: ConvParams, knobs: dict[str, list]) -> None:
    """ValueError naming the first knob of `params` outside `knobs` (a `space`)."""
    point = to_point(params)
    for name, legal in knobs.items():
        if point[name] not in legal:
            raise ValueError(f"{name}={point[name]} is not in this op's space")
