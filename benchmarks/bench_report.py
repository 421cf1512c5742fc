"""The benchmark's results: one `Row` per case, printed as a table, saved as JSON or a chart.

A row's figures are None where the case failed (its `status` says how: the op and the error of
a compile failure, or the largest difference of wrong outputs) or where they are not defined
(GFLOP/s of a softmax). The chart is a horizontal bar per case of the ratio dlc / peer on a log
scale, with lines at 1.0 (parity) and 1.25 (the acceptance bound); it needs matplotlib (the
`bench` extra) and uses the Agg backend (no display). A `ScalingRow` is one model timed at
1 and at N threads (dlc and onnxruntime, the four alternately), for the threads table.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Row:
    name: str
    group: str  # "model", "zoo" (--zoo) or "kernel"
    peer: str
    dlc_s: float | None = None  # median latency
    peer_s: float | None = None
    flops: float | None = None  # per call, where defined
    compile_s: float | None = None  # cache disabled
    cached_s: float | None = None  # recompile from the disk cache, memory level emptied
    dlc_mib: float | None = None  # peak resident memory added by dlc's compile and runs
    peer_mib: float | None = None  # ... by the peer's session and runs
    status: str = "ok"

    @property
    def ratio(self) -> float | None:
        return self.dlc_s / self.peer_s if self.dlc_s and self.peer_s else None

    @property
    def gflops(self) -> float | None:
        return self.flops / self.dlc_s / 1e9 if self.flops and self.dlc_s else None


HEADER = ["case", "peer", "dlc ms", "peer ms", "dlc/peer", "dlc GFLOP/s", "compile s",
          "cached s", "dlc MiB", "peer MiB", "status"]


def number(value: float | None, digits: int) -> str:
    if value is None:
        return "-"
    if digits == 3 and value >= 100:
        return f"{value:.0f}"
    if digits == 3 and value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def cells(row: Row) -> list[str]:
    ms = (lambda s: None if s is None else s * 1e3)
    return [row.name, row.peer, number(ms(row.dlc_s), 3), number(ms(row.peer_s), 3),
            number(row.ratio, 2), number(row.gflops, 1), number(row.compile_s, 2),
            number(row.cached_s, 3), number(row.dlc_mib, 0), number(row.peer_mib, 0),
            row.status]


def table(rows: list[Row], markdown: bool) -> str:
    lines = [cells(r) for r in rows]
    if markdown:
        align = "|---|---|" + "---:|" * (len(HEADER) - 3) + "---|"
        return "\n".join(["| " + " | ".join(HEADER) + " |", align]
                         + ["| " + " | ".join(line) + " |" for line in lines])
    widths = [max(len(x) for x in column) for column in zip(HEADER, *lines)]
    return "\n".join("  ".join(x.ljust(w) if i in (0, 1, len(HEADER) - 1) else x.rjust(w)
                               for i, (x, w) in enumerate(zip(line, widths))).rstrip()
                     for line in [HEADER, *lines])


@dataclass
class ScalingRow:
    """One model at 1 and at N threads (each runtime's two timed alternately)."""
    name: str
    threads: int
    dlc_1_s: float | None = None
    dlc_n_s: float | None = None
    peer_1_s: float | None = None
    peer_n_s: float | None = None
    status: str = "ok"

    @property
    def dlc_speedup(self) -> float | None:
        return self.dlc_1_s / self.dlc_n_s if self.dlc_1_s and self.dlc_n_s else None

    @property
    def peer_speedup(self) -> float | None:
        return self.peer_1_s / self.peer_n_s if self.peer_1_s and self.peer_n_s else None


def scaling_table(rows: list[ScalingRow], markdown: bool) -> str:
    """The threads table (as `table`'s layout): medians at 1 and N threads, the speed-ups."""
    n = rows[0].threads if rows else 0
    header = ["model", "dlc 1T ms", f"dlc {n}T ms", "dlc speed-up", "onnxruntime 1T ms",
              f"onnxruntime {n}T ms", "onnxruntime speed-up", f"dlc/onnxruntime {n}T", "status"]
    ms = (lambda s: None if s is None else s * 1e3)
    lines = [[r.name, number(ms(r.dlc_1_s), 3), number(ms(r.dlc_n_s), 3),
              number(r.dlc_speedup, 2), number(ms(r.peer_1_s), 3), number(ms(r.peer_n_s), 3),
              number(r.peer_speedup, 2),
              number(r.dlc_n_s / r.peer_n_s if r.dlc_n_s and r.peer_n_s else None, 2),
              r.status] for r in rows]
    if markdown:
        align = "|---|" + "---:|" * (len(header) - 2) + "---|"
        return "\n".join(["| " + " | ".join(header) + " |", align]
                         + ["| " + " | ".join(line) + " |" for line in lines])
    widths = [max(len(x) for x in column) for column in zip(header, *lines)]
    return "\n".join("  ".join(x.ljust(w) if i in (0, len(header) - 1) else x.rjust(w)
                               for i, (x, w) in enumerate(zip(line, widths))).rstrip()
                     for line in [header, *lines])


def write_json(rows: list[Row], meta: dict, path: Path,
               scaling: list[ScalingRow] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta,
            "rows": [asdict(r) | {"ratio": r.ratio, "gflops": r.gflops} for r in rows],
            "threads": [asdict(r) | {"dlc_speedup": r.dlc_speedup,
                                     "peer_speedup": r.peer_speedup} for r in scaling or []]}
    path.write_text(json.dumps(data, indent=1) + "\n")


TICKS = (0.05, 0.1, 0.25, 0.5, 1.0, 1.25, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)


def bar_color(ratio: float) -> str:
    return "tab:green" if ratio <= 1.0 else "tab:orange" if ratio <= 1.25 else "tab:red"


def write_chart(rows: list[Row], title: str, path: Path) -> None:
    """A horizontal bar chart of dlc / peer per case (log scale); failed cases are labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = rows[::-1]  # (the first case at the top)
    ratios = [r.ratio or 0.0 for r in rows]
    figure, axes = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.4))
    shown = [x for x in ratios if x > 0] or [1.0]
    low, high = min(min(shown), 0.8) / 1.3, max(max(shown), 1.5) * 1.6
    axes.barh(range(len(rows)), [max(x, low) - low for x in ratios], left=low,
              color=[bar_color(x) if x else "lightgrey" for x in ratios])
    for i, (row, ratio) in enumerate(zip(rows, ratios)):
        label = f"{ratio:.2f}" if ratio else "failed"
        if ratio and row.status != "ok":
            label += " (wrong output)"
        axes.text((ratio or low) * 1.04, i, label, va="center", fontsize=7)
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    ticks = [t for t in TICKS if low <= t <= high and (t != 1.25 or high / low < 20)]
    axes.set_xticks(ticks, [f"{t:g}" for t in ticks])
    axes.minorticks_off()
    axes.axvline(1.0, color="black", linewidth=1)
    axes.axvline(1.25, color="black", linewidth=1, linestyle="--")
    axes.set_yticks(range(len(rows)), [f"{r.name} (vs {r.peer})" for r in rows], fontsize=7)
    axes.set_xlabel("dlc time / peer time (log scale; lower is better; lines at 1.0 and 1.25)")
    axes.set_title(textwrap.fill(title, 100), fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
