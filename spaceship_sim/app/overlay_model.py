"""What the overlay panels show, as plain Python computed from FrameStats (no GL, testable).

`OverlayModel.update(stats, narrow)` takes a finished frame (`FrameStats.finish` called, so the
render time and slack are known) and the narrow-phase result of that frame's last detection
sample; the ImGui overlay only draws these fields.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..machine import LoadWatch, load_average
from ..sim.stats import Accuracy, width_quantiles

# plotted series: label -> function of FrameStats giving seconds
SERIES = {
    "frame": lambda s: s.frame_time,
    "detection": lambda s: s.t_narrow,
    "response": lambda s: s.t_response,
    "render": lambda s: s.render_actual,
    "slack": lambda s: s.slack,
}

MARGIN = 8  # [px] between panels and the window's edges
MEDIAN_EVERY = 10  # frames between refreshes of the shown median separation bound (a quantile costs ~0.3 ms)


def panel_rects(width: int, height: int) -> dict[str, tuple[int, int, int, int]]:
    """Where each panel sits (x, y, w, h) [px, from the top-left] in a window of that size.

    The chase view's ship (its bounding sphere) spans y from 0.39 to 0.82 of the height and
    x within the centre +- 0.21 of the height (tests/app/test_overlay_model.py projects it):
    the top panels end above it, the bottom ones stay beside it. Compact: under software GL
    every overlay pixel costs render time."""
    top_w = min(420, (width - 3 * MARGIN) // 2)
    top_h = min(270, int(0.37 * height) - MARGIN)
    side_w = min(330, int(width / 2 - 0.215 * height) - MARGIN - 4)  # beside the ship
    low_h = min(262, height - top_h - 3 * MARGIN)
    return {"Frame timing": (MARGIN, MARGIN, top_w, top_h),
            "Collisions": (width - top_w - MARGIN, MARGIN, top_w, top_h),
            "Controls": (MARGIN, height - low_h - MARGIN, side_w, low_h),
            "Keys": (width - side_w - MARGIN, height - low_h - MARGIN, side_w, low_h)}


@dataclass(frozen=True)
class PairRow:
    """One colliding pair of the table."""
    ship_a: int
    ship_b: int
    level: int            # deepest level reached (max_level = exact triangle level)
    certain: bool         # the verdict is certain (found apart, or triangles tested)
    sep_bound: float      # separation-distance upper bound [m]
    distance: float       # exact separation [m] where the narrow phase provides it, else nan
    lower: float = 0.0    # the separation interval: lower <= distance <= upper [m]
    upper: float = math.inf


# pair table columns: header, sort key, cell text (the interval reads "= d" where the distance is known
# exactly: it stands for the exact distance too)
COLUMNS = (
    ("ships", lambda r: (r.ship_a, r.ship_b), lambda r: f"{r.ship_a}-{r.ship_b}"),
    ("level", lambda r: r.level, lambda r: str(r.level)),
    ("certain", lambda r: r.certain, lambda r: "yes" if r.certain else "no"),
    ("sep. bound [m]", lambda r: r.sep_bound, lambda r: f"{r.sep_bound:.3f}"),
    ("interval [m]", lambda r: r.upper - r.lower, lambda r: interval_text(r.lower, r.upper)),
)


def interval_text(lower: float, upper: float) -> str:
    """[lower, upper] in metres; one number where the distance is known exactly."""
    if lower == upper:
        return f"= {lower:.3f}"
    return f"[{lower:.3f}, {upper:.3f}]" if math.isfinite(upper) else f"[{lower:.3f}, -]"


def sort_rows(rows: list[PairRow], column: int, descending: bool = False) -> list[PairRow]:
    """Rows ordered by COLUMNS[column]'s key (a stable sort: ties keep their order)."""
    return sorted(rows, key=COLUMNS[column][1], reverse=descending)


class OverlayModel:
    """Rolling history of the last `history` frames plus the latest frame's figures (ms)."""

    def __init__(self, history: int = 240, target_ms: float = math.nan):
        self.frames: deque[int] = deque(maxlen=history)
        self.series: dict[str, deque[float]] = {k: deque(maxlen=history) for k in SERIES}
        self.target_ms = target_ms
        self.render_predicted_ms = self.render_actual_ms = math.nan
        self.budget_ms = self.detection_used_ms = self.margin_ms = math.nan
        self.frame = -1
        self.candidate_pairs = self.colliding_pairs = 0
        self.overrun = False
        self.level_hist: list[int] = []
        self.pairs: list[PairRow] = []  # colliding pairs of the frame's last detection sample
        self.candidates_now = 0         # candidate pairs of that sample (the stats sum over samples)
        self.shown = None               # that sample's narrow-phase result
        self.interval_width = (math.nan, math.nan)  # the frame's separation intervals: median, p90 width [m]
        self.accuracy = Accuracy()  # every colliding pair verdict of the run (memory stays flat)
        self.median_sep_bound = self.median_sep_bound_rel = math.nan  # [m], [-]: refreshed every MEDIAN_EVERY
        self.frames_timed = self.frames_within = 0  # running, over the whole run
        self.frames_off_core = 0  # of the frames over target, those only the OS taking the core put there
        self.frames_run = 0  # frames the world has stepped (the app sets it before drawing)
        self.status = ""  # a line shown above the timing figures (e.g. while kernels compile)
        self.swept = ""   # the latest swept-space catch (app.swept.crossing_text), shown in the collisions panel
        self.load = LoadWatch()  # the machine's load: a slow frame on a busy machine is not a slow algorithm
        self.load_line = ""

    def update(self, stats, narrow=None) -> None:
        """Take in a finished FrameStats and (optionally) that frame's narrow-phase result."""
        self.frame = stats.frame
        self.frames.append(stats.frame)
        for name, get in SERIES.items():
            self.series[name].append(1e3 * get(stats))
        self.target_ms = 1e3 * stats.target
        self.render_predicted_ms = 1e3 * stats.render_predicted
        self.render_actual_ms = 1e3 * stats.render_actual
        self.budget_ms = 1e3 * stats.budget
        self.detection_used_ms = 1e3 * stats.detection_used
        self.margin_ms = 1e3 * stats.margin
        self.candidate_pairs, self.colliding_pairs = stats.candidate_pairs, stats.colliding_pairs
        self.overrun = bool(stats.overrun)
        self.level_hist = [int(x) for x in stats.level_hist]
        self.interval_width = (stats.interval_width_median, stats.interval_width_p90)
        if math.isnan(self.interval_width[0]) and narrow is not None and len(narrow.pairs):
            widths = narrow.upper - narrow.lower  # verdict-only frames: the table's intervals
            self.interval_width = width_quantiles(widths[np.isfinite(widths)])
        self.accuracy.add(stats)
        if self.frames_timed % MEDIAN_EVERY == 0 or math.isnan(self.median_sep_bound):
            self.median_sep_bound = self.accuracy.bound_m.quantile(0.5)
            self.median_sep_bound_rel = self.accuracy.bound_rel.quantile(0.5)
            self.load_line = machine_line(load_average(), self.load.preempted(), self.frames_off_core)
        self.frames_timed += 1
        self.frames_within += stats.frame_time <= stats.target
        self.frames_off_core += stats.late_only_off_core
        if narrow is not self.shown:  # the app showed it before drawing: not twice
            self.show_sample(narrow)

    def show_sample(self, narrow) -> None:
        """Take in the narrow-phase result the scene draws (None: none): the pair table and its
        counts. The app calls it before drawing the overlay, so that the table and the scene's
        labels show the same sample; the frame's stats come after its render, a frame later."""
        self.shown = narrow
        self.pairs = pair_rows(narrow)
        self.candidates_now = 0 if narrow is None else len(narrow.pairs)

    @property
    def sep_bound_now(self) -> float:
        """The smallest separation bound of the colliding pairs the table shows (the sample the scene
        draws), nan when none collides: the line above the table speaks of the same pairs."""
        return min((r.sep_bound for r in self.pairs if math.isfinite(r.sep_bound)), default=math.nan)

    @property
    def within_target(self) -> float:
        """Share of the frames so far that kept to the target frame time (nan before any)."""
        return self.frames_within / self.frames_timed if self.frames_timed else math.nan

    def accuracy_lines(self) -> tuple[str, str]:
        """The overlay's two accuracy lines: frames within target, and the median separation
        bound over every colliding pair verdict so far (refreshed every MEDIAN_EVERY frames)."""
        within = (f"frames within target {self.frames_within}/{self.frames_timed} ({self.within_target:.1%})"
                  if self.frames_timed else "frames within target -")
        bound = (f"median separation bound {self.median_sep_bound:.3f} m = {self.median_sep_bound_rel:.2f} radius"
                 if math.isfinite(self.median_sep_bound) else "median separation bound - (no collision yet)")
        return within, bound

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Plot data: frame numbers (k,) float64 and each series (k,) float64 [ms]."""
        return (np.array(self.frames, np.float64),
                {k: np.array(v, np.float64) for k, v in self.series.items()})


def interval_line(median: float, p90: float) -> str:
    """The overlay's line on the frame's separation intervals."""
    if math.isnan(median):
        return "separation intervals: - (no pair with a finite interval)"
    return f"separation intervals: width median {median:.3f} m, p90 {p90:.3f} m"


def machine_line(load: list[float] | None, preempted: int, late: int) -> str:
    """The overlay's line on the machine: its load average, how often the OS took this process's
    core away since the start, and the frames over target only for the time it took (FrameStats.t_off_core)."""
    shown = "-" if load is None else f"{load[0]:.2f}"
    return f"machine load {shown}, preempted {preempted} times ({late} late)"


def pair_rows(narrow) -> list[PairRow]:
    """Rows for the colliding pairs of a narrow-phase result (empty for None) and for the pairs it
    found apart at a measured distance, closest first (by separation bound, else distance)."""
    if narrow is None or len(narrow.pairs) == 0:
        return []
    dist = getattr(narrow, "distance", None)
    dist = np.full(len(narrow.pairs), np.nan) if dist is None else np.asarray(dist)
    shown = np.flatnonzero(np.asarray(narrow.colliding) | np.isfinite(dist))
    lower, upper = narrow.lower, narrow.upper
    rows = [PairRow(int(narrow.pairs[k, 0]), int(narrow.pairs[k, 1]), int(narrow.level[k]),
                    bool(narrow.certain[k]), float(narrow.separation_bound[k]), float(dist[k]), float(lower[k]),
                    float(upper[k])) for k in shown]
    return sorted(rows, key=lambda r: min(r.sep_bound, r.distance if math.isfinite(r.distance) else math.inf))


def collision_changes(old: tuple, new: tuple) -> dict:
    """Keyword arguments for `World.set_collision` from the controls that changed.
    old, new: (target_fps, min_level, max_level, broadphase) as last applied / as now."""
    names = ("target_frame_time", "min_level", "max_level", "broadphase")
    values = (1.0 / new[0], new[1], new[2], new[3])
    return {k: v for k, v, a, b in zip(names, values, new, old) if a != b}
