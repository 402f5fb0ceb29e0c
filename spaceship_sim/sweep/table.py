"""The sweep's table and figures: one row per cell (results.parquet when pyarrow is installed,
results.csv always), frames within target against render load and accuracy against budget, each
line a detector (or whatever else the sweep varies) with its spread across seeds."""
from __future__ import annotations

import math
from pathlib import Path

from ..sim.frame_log import write_csv
from .cell import MACHINE, MEASURES
from .store import write_atomic

SPREAD = "seed"  # the axis drawn as a band around each line, not as lines of its own
# figure -> (x axis, y measure, y scale, y label, x label, x log scale)
FIGURES = {
    "within_target.png": ("render_ms", "within_target", 100.0, "frames within target [%]",
                          "stand-in render time per frame [ms]", False),
    "accuracy.png": ("budget_ms", "separation_bound_median_m", 1.0,
                     "median separation bound of colliding pairs [m]", "time left to the simulation per frame [ms]", True),
}


def columns(axes: list[str], measure: list[str]) -> list[str]:
    """The table's columns: cell, its axes, status and error, the chosen figures, where it ran."""
    return ["cell", *axes, "timing", "status", "error", *[m for m in MEASURES if m in measure],
            *MACHINE, "seconds", "key"]


def select(rows: list[dict], axes: list[str], measure: list[str]) -> list[dict]:
    cols = columns(axes, measure)
    return [{c: r.get(c) for c in cols} for r in rows]


def write_table(out: Path, rows: list[dict]) -> list[str]:
    """results.csv, and results.parquet where pyarrow is installed, each written whole; returns
    the names written."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "results.csv", write=lambda tmp: write_csv(tmp, rows))
    names = ["results.csv"]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return names
    write_atomic(out / "results.parquet", write=lambda tmp: pq.write_table(pa.Table.from_pylist(rows), tmp))
    return names + ["results.parquet"]


def plot_figures(out: Path, rows: list[dict], axes: dict) -> list[str]:
    """Each FIGURES plot whose x axis the sweep varies and whose measure the table has; returns
    the names written."""
    written = []
    for name, (x, y, scale, ylabel, xlabel, logx) in FIGURES.items():
        if len(axes.get(x, [])) < 2 or not rows or y not in rows[0]:
            continue
        lines = [a for a in axes if a not in (x, SPREAD) and len(axes[a]) > 1]
        write_atomic(out / name, write=lambda tmp: _plot(tmp, rows, x, y, scale, lines, ylabel, xlabel, logx))
        written.append(name)
    return written


def spread(rows: list[dict], x: str, y: str, lines: list[str]) -> dict:
    """{line label: [(x, mean, min, max) over the rows of that x]}, failed cells and missing
    figures left out."""
    groups: dict = {}
    for r in rows:
        v = r.get(y)
        if r["status"] != "ok" or v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        label = ", ".join(f"{r[a]}" for a in lines) or y
        groups.setdefault(label, {}).setdefault(r[x], []).append(v)
    return {label: [(xv, sum(vs) / len(vs), min(vs), max(vs)) for xv, vs in sorted(by_x.items())]
            for label, by_x in groups.items()}


def _plot(path: Path, rows, x, y, scale, lines, ylabel, xlabel, logx) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    seeds = len({r.get(SPREAD) for r in rows})
    for label, points in spread(rows, x, y, lines).items():
        xs = [p[0] for p in points]
        line, = ax.plot(xs, [scale * p[1] for p in points], "o-", label=label)
        if seeds > 1:
            ax.fill_between(xs, [scale * p[2] for p in points], [scale * p[3] for p in points],
                            color=line.get_color(), alpha=0.2)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"mean over {seeds} seeds, band: smallest to largest" if seeds > 1 else "one seed")
    if ax.lines:  # none when every cell failed
        ax.legend(title=", ".join(lines) or None, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)
