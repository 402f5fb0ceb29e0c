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

# plotted series: label -> function of FrameStats giving seconds
SERIES = {
    "frame": lambda s: s.frame_time,
    "detection": lambda s: s.t_narrow,
    "response": lambda s: s.t_response,
    "render": lambda s: s.render_actual,
    "slack": lambda s: s.slack,
}

TIMING_RECT = (8, 8, 420, 280)   # x, y, width, height of the timing panel [px]


def panel_rects(width: int, height: int) -> dict[str, tuple[int, int, int, int]]:
    """Where each panel opens (x, y, w, h) [px, from the top-left] in a window of that size.
    Compact: under software GL every overlay pixel costs render time."""
    return {"Frame timing": TIMING_RECT, "Collisions": (width - 388, 8, 380, 280),
            "Controls": (8, height - 278, 330, 270), "Keys": (width - 298, height - 270, 290, 262)}


@dataclass(frozen=True)
class PairRow:
    """One colliding pair of the table."""
    ship_a: int
    ship_b: int
    level: int            # deepest level reached (max_level = exact triangle level)
    exact: bool           # answered by triangle tests
    sep_bound: float      # separation-distance upper bound [m]
    distance: float       # exact separation [m] where the narrow phase provides it, else nan


class OverlayModel:
    """Rolling history of the last `history` frames plus the latest frame's figures (ms)."""

    def __init__(self, history: int = 240, target_ms: float = math.nan):
        self.frames: deque[int] = deque(maxlen=history)
        self.series: dict[str, deque[float]] = {k: deque(maxlen=history) for k in SERIES}
        self.target_ms = target_ms
        self.render_predicted_ms = self.render_actual_ms = math.nan
        self.budget_ms = self.detection_used_ms = math.nan
        self.frame = -1
        self.candidate_pairs = self.colliding_pairs = 0
        self.overrun = False
        self.level_hist: list[int] = []
        self.pairs: list[PairRow] = []
        self.sep_bound_min = math.nan
        self.status = ""  # a line shown above the timing figures (e.g. while kernels compile)

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
        self.candidate_pairs, self.colliding_pairs = stats.candidate_pairs, stats.colliding_pairs
        self.overrun = bool(stats.overrun)
        self.level_hist = [int(x) for x in stats.level_hist]
        self.sep_bound_min = stats.sep_bound_min
        self.pairs = pair_rows(narrow)

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Plot data: frame numbers (k,) float64 and each series (k,) float64 [ms]."""
        return (np.array(self.frames, np.float64),
                {k: np.array(v, np.float64) for k, v in self.series.items()})


def pair_rows(narrow) -> list[PairRow]:
    """Rows for the colliding pairs of a narrow-phase result (empty for None), closest first."""
    if narrow is None or len(narrow.pairs) == 0:
        return []
    hit = np.flatnonzero(np.asarray(narrow.colliding))
    dist = getattr(narrow, "distance", None)
    rows = [PairRow(int(narrow.pairs[k, 0]), int(narrow.pairs[k, 1]), int(narrow.level[k]),
                    bool(narrow.exact[k]), float(narrow.separation_bound[k]),
                    float(dist[k]) if dist is not None else math.nan) for k in hit]
    return sorted(rows, key=lambda r: r.sep_bound)


def collision_changes(old: tuple, new: tuple) -> dict:
    """Keyword arguments for `World.set_collision` from the controls that changed.
    old, new: (target_fps, min_level, max_level, broadphase) as last applied / as now."""
    names = ("target_frame_time", "min_level", "max_level", "broadphase")
    values = (1.0 / new[0], new[1], new[2], new[3])
    return {k: v for k, v, a, b in zip(names, values, new, old) if a != b}
