"""Per-frame statistics: what each stage cost and what the collision detection achieved.

All times are seconds read from the world's clock (spaceship_sim.clock: the wall clock in use).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from .clock import WALL


@dataclass
class FrameStats:
    frame: int = 0                  # frame index
    sim_time: float = 0.0           # simulation time at the end of the frame [s]
    target: float = 0.0             # target frame time [s]
    samples: int = 0                # collision-detection samples taken this frame
    t_controls: float = 0.0         # controllers [s]
    t_integrate: float = 0.0        # RK2 integration + arena rule [s]
    t_broad: float = 0.0            # broad phase [s]
    t_narrow: float = 0.0           # narrow phase (sphere-tree refinement + exact tests) [s]
    t_response: float = 0.0         # collision response [s]
    render_predicted: float = 0.0   # moving-average prediction of this frame's render time [s]
    render_actual: float = 0.0      # measured render time of this frame [s] (0 when not rendered)
    budget: float = 0.0             # detection time the frame allowed (earlier samples' use + last budget) [s]
    detection_used: float = 0.0     # narrow-phase time actually used [s]
    frame_time: float = 0.0         # all stages + render [s]
    slack: float = 0.0              # target - frame_time [s] (negative: over target)
    overrun: bool = False           # frame_time > target
    substeps: int = 0               # RK2 sub-steps summed over ships
    substeps_max: int = 0           # most RK2 sub-steps of one ship in one sample
    step_min: float = 0.0           # smallest RK2 step used [s]
    step_max: float = 0.0           # largest RK2 step used [s]
    candidate_pairs: int = 0        # broad-phase pairs (summed over samples)
    colliding_pairs: int = 0        # pairs still colliding at their deepest level (summed over samples)
    exact_pairs: int = 0            # colliding pairs answered at the exact triangle level
    responses: int = 0              # pairs whose velocities collision response changed
    level_hist: tuple = ()          # colliding pairs per level reached (index = level; last = exact)
    sep_bound_min: float = float("nan")     # smallest separation-distance upper bound [m]
    sep_bound_median: float = float("nan")  # median separation-distance upper bound [m]
    extra: dict = field(default_factory=dict)  # stage-specific figures (broad-phase counters ...)

    @property
    def t_sim(self) -> float:
        """Every simulation stage, render excluded [s]."""
        return self.t_controls + self.t_integrate + self.t_broad + self.t_narrow + self.t_response

    def finish(self, render_time: float) -> None:
        """Record the frame's measured render time and derive frame time, slack, overrun."""
        self.render_actual = render_time
        self.frame_time = self.t_sim + render_time
        self.slack = self.target - self.frame_time
        self.overrun = self.frame_time > self.target

    def row(self, max_level: int) -> dict:
        """Flat dict for frames.csv (level_hist spread into level_<k> columns)."""
        d = asdict(self)
        hist = d.pop("level_hist")
        d.pop("extra")
        for k in range(max_level + 1):
            d[f"level_{k}"] = hist[k] if k < len(hist) else 0
        return d


@contextmanager
def timed(stats: FrameStats, attr: str, clock=WALL):
    """Add the time the block takes on `clock` to stats.<attr>."""
    t0 = clock()
    try:
        yield
    finally:
        setattr(stats, attr, getattr(stats, attr) + clock() - t0)


class MovingAverage:
    """Predicts the next value of a measured time as the mean of the last `k` measurements
    (render time per frame; the narrow phase's overrun of its deadline per sample)."""

    def __init__(self, k: int, initial: float = 0.0):
        self.k = k
        self.history: list[float] = []
        self.initial = initial

    def record(self, value: float) -> None:
        self.history.append(value)
        del self.history[:-self.k]

    def predict(self) -> float:
        return sum(self.history) / len(self.history) if self.history else self.initial
