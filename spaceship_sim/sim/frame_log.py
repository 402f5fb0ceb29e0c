"""Frame-stats reports: frames.csv, summary.json and Hubbard-style performance profiles,
written as a run goes in memory that does not grow with its length (FrameLog)."""
from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..files import partial_prefix, uninterrupted
from ..machine import LoadWatch
from .stats import QUANTILES, Accuracy, FrameStats, Quantiles

STAGES = [  # (FrameStats attribute, label, colour) bottom to top in the profile
    ("t_controls", "controls", "#9e9e9e"),
    ("t_integrate", "integrate", "#4c72b0"),
    ("t_broad", "broad phase", "#55a868"),
    ("t_narrow", "narrow phase", "#c44e52"),
    ("t_response", "response", "#8172b2"),
    ("t_other", "between stages", "#64b5cd"),
    ("render_actual", "render", "#ccb974"),
]


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


SUMMARY_TIMES = ["frame_time", "t_sim", *[a for a, _, _ in STAGES], "budget", "detection_used", "slack"]


class RunSummary:
    """summary.json's figures, taken in frame by frame in memory that does not grow with the
    number of frames: medians, p99s and maxima of the times (stats.Quantiles, within 0.1%), frames
    over target — and of those, with a stand-in render of `render_nominal` seconds, the ones that
    only the render's running long put there (t_sim + render_nominal <= target: a late wake-up of
    the stand-in, not the simulation) and the ones that only the OS taking the frame's core put there
    (frame_time - t_off_core <= target: `machine_figures`, beside the machine's load) — pair totals,
    the level histogram and the frames' smallest separation bounds, and the accuracy over every
    colliding pair verdict (stats.Accuracy). The first `skip` frames (numba compile, caches) are
    left out unless the run has no others."""

    def __init__(self, n_frames: int, skip: int, max_level: int, render_nominal: float | None = None):
        self.skip = skip if n_frames > skip else 0
        self.render_nominal = render_nominal
        self.frames = 0
        self.times = {a: Quantiles() for a in SUMMARY_TIMES}  # [ms]
        self.sep_bound = Quantiles()  # frames' smallest separation bound [m]
        self.width = Quantiles()  # every candidate pair's separation interval width [m] (finite ones)
        self.accuracy = Accuracy()
        self.accuracy.level_hist = np.zeros(max_level + 1, np.int64)
        self.target_ms = math.nan
        self.over = self.over_render_late = self.candidate_pairs = self.colliding_pairs = self.exact_pairs = 0
        self.over_off_core, self.off_core = 0, Quantiles()  # [ms]

    def add(self, s) -> None:
        self.frames += 1
        if self.frames <= self.skip:
            return
        if math.isnan(self.target_ms):
            self.target_ms = s.target * 1e3
        for attr, q in self.times.items():
            q.add(getattr(s, attr) * 1e3)
        if not math.isnan(s.sep_bound_min):
            self.sep_bound.add(s.sep_bound_min)
        for w in s.interval_widths.tolist():
            self.width.add(w)
        self.accuracy.add(s)
        self.over += s.overrun
        if self.render_nominal is not None:
            self.over_render_late += s.overrun and s.t_sim + self.render_nominal <= s.target
        self.over_off_core += s.late_only_off_core
        self.off_core.add(s.t_off_core * 1e3)
        self.candidate_pairs += s.candidate_pairs
        self.colliding_pairs += s.colliding_pairs
        self.exact_pairs += s.exact_pairs

    def to_dict(self) -> dict:
        n = self.frames - self.skip
        out = {"frames": self.frames, "frames_summarized": n, "warmup_frames_skipped": self.skip}
        out.update({f"{attr}_ms": q.figures() for attr, q in self.times.items()})
        out.update(target_ms=self.target_ms, frames_over_target=self.over, frames_within_target=n - self.over,
                   frames_over_target_render_late=self.over_render_late if self.render_nominal is not None else None,
                   fraction_within_target=1.0 - self.over / n,
                   candidate_pairs_mean=self.candidate_pairs / n, colliding_pairs_total=self.colliding_pairs,
                   exact_pairs_total=self.exact_pairs, level_histogram=self.accuracy.level_hist.tolist(),
                   separation_bound_m=self.sep_bound.figures() if self.sep_bound.count else None,
                   interval_width_m={k: self.width.quantile(q) for k, q in QUANTILES.items()} | {"max": self.width.max}
                   if self.width.count else None,
                   accuracy=self.accuracy.to_dict())
        return out

    def machine_figures(self) -> dict:
        """What the machine took from the frames' work, measured on this machine (a replay's differs
        from the recorded run's): the time its thread was off its core, and the frames over target
        that would have been within it without that time."""
        return {"frames_over_target_off_core": self.over_off_core,
                "off_core_ms": self.off_core.figures() if self.off_core.count else None}


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


class ProfileColumns:
    """profile.png's data in at most `max_columns` columns, whatever the run's length: consecutive
    frames share a column (the frame count is known in advance), which keeps the mean of each
    plotted time and level count and the largest frame time, so that a long run's profile still
    shows its spikes. A run of up to `max_columns` frames gets one column per frame."""

    MEANS = [a for a, _, _ in STAGES] + ["render_predicted", "budget", "detection_used"]
    SEPARATION = ("sep_bound_median", "sep_bound_min")

    def __init__(self, n_frames: int, max_level: int, max_columns: int = 2000):
        self.per_column = max(1, math.ceil(n_frames / max_columns))
        n = math.ceil(n_frames / self.per_column)
        self.count = np.zeros(n, np.int64)
        self.frame_sum = np.zeros(n)
        self.sums = {a: np.zeros(n) for a in self.MEANS}  # [s]
        self.frame_time_max = np.zeros(n)  # [s]
        self.level_sums = np.zeros((max_level + 1, n))
        self.sep_sums = {a: np.zeros(n) for a in self.SEPARATION}  # [m], over frames with a colliding pair
        self.sep_count = np.zeros(n, np.int64)
        self.width_sum = np.zeros(n)  # [m], over frames with a finite separation interval
        self.width_count = np.zeros(n, np.int64)
        self.frames = self.over = 0
        self.target = math.nan

    def add(self, s) -> None:
        c = self.frames // self.per_column
        self.frames += 1
        self.over += s.overrun
        if math.isnan(self.target):
            self.target = s.target
        self.count[c] += 1
        self.frame_sum[c] += s.frame
        for attr, total in self.sums.items():
            total[c] += getattr(s, attr)
        self.frame_time_max[c] = max(self.frame_time_max[c], s.frame_time)
        self.level_sums[:len(s.level_hist), c] += s.level_hist
        if not math.isnan(s.sep_bound_min):
            self.sep_count[c] += 1
            for attr, total in self.sep_sums.items():
                total[c] += getattr(s, attr)
        if not math.isnan(s.interval_width_median):
            self.width_count[c] += 1
            self.width_sum[c] += s.interval_width_median

    def x(self) -> np.ndarray:
        """Each filled column's mean frame number."""
        return self.frame_sum[self.filled()] / self.count[self.filled()]

    def mean_ms(self, attr: str) -> np.ndarray:
        return 1e3 * self.sums[attr][self.filled()] / self.count[self.filled()]

    def levels(self) -> np.ndarray:
        return self.level_sums[:, self.filled()] / self.count[self.filled()]

    def separation(self, attr: str) -> np.ndarray:
        """Each filled column's mean of the frames' `attr` [m] over its frames with a colliding
        pair (NaN where none collided)."""
        f = self.filled()
        return np.divide(self.sep_sums[attr][f], self.sep_count[f], out=np.full(f.sum(), np.nan),
                         where=self.sep_count[f] > 0)

    def interval_width(self) -> np.ndarray:
        """Each filled column's mean of the frames' median interval width [m] (NaN where none had one)."""
        f = self.filled()
        return np.divide(self.width_sum[f], self.width_count[f], out=np.full(f.sum(), np.nan),
                         where=self.width_count[f] > 0)

    def filled(self) -> np.ndarray:
        return self.count > 0


def plot_profile(path: Path, cols: ProfileColumns, title: str, accuracy: dict | None = None) -> None:
    """Hubbard-style performance profile: stacked stage times per frame (per column of frames in
    a long run: means, with the largest frame time of each) against the target, render prediction
    vs actual and detection budget vs used, the levels reached, and the accuracy: each frame's
    median and smallest separation bound, titled with the run's figures (`accuracy`: the
    summary's, stats.Accuracy.to_dict)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, binned = cols.x(), cols.per_column > 1
    fig, axes = plt.subplots(4, 1, figsize=(11, 11.5), sharex=True, height_ratios=[3, 2, 2, 2])
    ax = axes[0]
    ys = [cols.mean_ms(a) for a, _, _ in STAGES]
    ax.stackplot(x, ys, labels=[l for _, l, _ in STAGES], colors=[c for _, _, c in STAGES], step="mid")
    peaks = 1e3 * cols.frame_time_max[cols.filled()]
    if binned:
        ax.plot(x, peaks, color="k", lw=0.6, alpha=0.6, label="largest frame time")
    ax.axhline(cols.target * 1e3, color="k", ls="--", lw=1.2, label="target frame time")
    ax.set_ylabel("frame time [ms]")
    ax.set_title(f"{title}\n{cols.frames - cols.over}/{cols.frames} frames within target")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax.set_ylim(0, max(cols.target * 1e3 * 1.6, np.percentile(peaks if binned else sum(ys), 99) * 1.1))

    ax = axes[1]
    ax.plot(x, cols.mean_ms("render_predicted"), lw=1, label="render predicted")
    ax.plot(x, cols.mean_ms("render_actual"), lw=1, alpha=0.7, label="render actual")
    ax.plot(x, cols.mean_ms("budget"), lw=1, label="detection budget")
    ax.plot(x, cols.mean_ms("detection_used"), lw=1, label="detection used")
    ax.set_ylabel("time [ms]")
    ax.legend(loc="upper right", fontsize=8, ncol=4)

    ax = axes[2]
    levels = cols.levels()
    names = [f"level {k}" for k in range(len(levels) - 1)] + ["exact"]
    ax.stackplot(x, levels, labels=names, step="mid")
    ax.set_ylabel("colliding pairs\nby level reached" + ("\n(mean per frame)" if binned else ""))
    ax.legend(loc="upper right", fontsize=8, ncol=len(levels))

    plot_separation(axes[3], x, cols, accuracy)
    axes[3].set_xlabel(f"frame ({cols.per_column} frames per column)" if binned else "frame")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_separation(ax, x: np.ndarray, cols: ProfileColumns, accuracy: dict | None) -> None:
    """The profile's accuracy panel: per frame (column), the median and smallest separation bound
    over its colliding pairs [m] and the median width of its candidate pairs' separation intervals;
    the title gives the run's figures over every verdict."""
    # points, not lines: frames without a colliding pair have no bound
    ax.plot(x, cols.separation("sep_bound_median"), "o", ms=2.5, label="median over the frame's pairs")
    ax.plot(x, cols.separation("sep_bound_min"), "v", ms=2.5, alpha=0.7, label="smallest")
    ax.plot(x, cols.interval_width(), "s", ms=2, alpha=0.7, label="interval width, median over candidate pairs")
    ax.set_ylabel("separation\nbound [m]")
    ax.set_ylim(bottom=0)
    a = accuracy or {}
    m, rel = a.get("separation_bound_m"), a.get("separation_bound_fraction")
    ax.set_title("accuracy: no colliding pair" if not m else
                 f"accuracy over {a['colliding_verdicts']} colliding pair verdicts: separation bound median "
                 f"{m['median']:.3g} m ({rel['median']:.3g} of the bounding radius), p99 {m['p99']:.3g} m "
                 f"({rel['p99']:.3g}); {100 * a['exact_fraction']:.1f}% answered exactly", fontsize=9)
    ax.legend(loc="upper right", fontsize=8, ncol=2)


OUTPUTS = ("frames.csv", "summary.json", "profile.png")
RSS_FRAMES = (1_000, 10_000, 100_000)  # frames at which summary.json's rss_mb samples resident memory


class FrameLog:
    """A run's three files, written as frames come in memory that does not grow with the number
    of frames: each frame's row goes straight to frames.csv in a `.partial-*` folder inside `out`;
    summary.json and profile.png come from bounded accumulators (RunSummary, ProfileColumns).
    `commit` writes those two and moves all three into `out` together; `discard` (or a failure)
    leaves `out` as it was. out=None: no files, only the summary. render_nominal: the stand-in
    render's time [s], if any (RunSummary)."""

    def __init__(self, out: Path | None, n_frames: int, skip: int, max_level: int, render_nominal: float | None = None):
        self.out, self.max_level = out, max_level
        self.summary = RunSummary(n_frames, skip, max_level, render_nominal)
        self.profile = ProfileColumns(n_frames, max_level)
        self.rss_mb: dict[str, float] = {}
        self.load = LoadWatch()
        self.csv_file = self.tmp = None
        if out is not None:
            self.made_out = not out.exists()
            out.mkdir(parents=True, exist_ok=True)
            self.tmp = tempfile.TemporaryDirectory(dir=out, prefix=partial_prefix())
            self.csv_file = open(Path(self.tmp.name) / "frames.csv", "w", newline="")
            self.csv = csv.DictWriter(self.csv_file, fieldnames=list(FrameStats().row(max_level)))
            self.csv.writeheader()

    def add(self, s) -> None:
        if self.csv_file is not None:
            self.csv.writerow(s.row(self.max_level))
        self.summary.add(s)
        self.profile.add(s)
        if self.summary.frames in RSS_FRAMES:
            self.rss_mb[f"frame_{self.summary.frames}"] = resident_mb()

    def commit(self, title: str, **extra) -> dict:
        """Finish the files (profile titled `title`, `extra` added to summary.json) and move them
        into `out`; returns the summary."""
        self.rss_mb["end"] = resident_mb()
        machine = {**self.load.figures(), **self.summary.machine_figures()}
        summary = {**self.summary.to_dict(), "rss_mb": self.rss_mb, "machine_load": machine, **extra}
        if self.out is None:
            return summary
        try:
            self.csv_file.close()
            tmp = Path(self.tmp.name)
            write_json(tmp / "summary.json", summary)
            plot_profile(tmp / "profile.png", self.profile, title, summary["accuracy"])
            with uninterrupted():  # all three or none
                for name in OUTPUTS:
                    shutil.move(tmp / name, self.out / name)
        finally:
            self.discard()
        return summary

    def discard(self) -> None:
        """Remove the partial files (and `out`, if this log made it and it stayed empty)."""
        if self.out is None:
            return
        self.csv_file.close()
        self.tmp.cleanup()
        if self.made_out and not any(self.out.iterdir()):
            self.out.rmdir()


def resident_mb() -> float:
    """This process's resident memory [MB] from /proc/self/statm (NaN where there is none)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return math.nan
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
