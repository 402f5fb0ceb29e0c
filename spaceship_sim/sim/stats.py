"""Per-frame statistics: what each stage cost and what the collision detection achieved.

All times are seconds read from the world's clock (spaceship_sim.clock: the wall clock in use).
"""
from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field, fields

import numpy as np
from numba import njit

from ..clock import WALL
from ..cost import CostModel


NO_BOUNDS = np.zeros(0)  # a frame's separation bounds before any: shared, so read-only (add_detection
NO_BOUNDS.flags.writeable = False  # replaces the arrays, never writes into them)


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
    t_narrow_batches: float = 0.0   # of t_narrow, inside the refinement's kernel batches [s] (always the
                                    # wall clock: bench hubbard's overhead column; not in frames.csv)
    t_response: float = 0.0         # collision response [s]
    t_other: float = 0.0            # the frame's work between the stages: budgets, ordering, statistics [s]
    t_off_core: float = 0.0         # of the frame's work (t_sim), the time its thread was off its core: wall
                                    # time less the thread's CPU time — the OS ran another program, or the
                                    # thread waited for numba's workers [s] (always the wall and CPU clocks,
                                    # an instrument: summary.json's machine_load; not in frames.csv)
    render_predicted: float = 0.0   # this frame's render time as predicted from recent frames [s]
    margin: float = 0.0             # held back from its budgets: the safety margin and the lateness learned [s]
    render_actual: float = 0.0      # measured render time of this frame [s] (0 when not rendered)
    budget: float = 0.0             # detection time the frame allowed (earlier samples' use + last budget) [s]
    last_budget: float = 0.0        # of that, the last sample's budget [s]
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
    # separation-distance upper bounds over the colliding pairs [m]; NaN in a frame with no
    # colliding pair (an empty field in frames.csv)
    sep_bound_min: float = float("nan")     # smallest
    sep_bound_median: float = float("nan")  # median
    convex_pairs: int = 0           # asteroid pairs whose boxes overlap (closest features walked; summed over samples)
    convex_colliding: int = 0       # of those, pairs found interpenetrating
    # every colliding pair verdict of the frame (all samples), not in frames.csv: its separation
    # bound (m,) float64 [m] and that bound over the pair's mean bounding radius (m,) float64 [-]
    sep_bounds: np.ndarray = field(default_factory=lambda: NO_BOUNDS, repr=False)
    sep_bounds_rel: np.ndarray = field(default_factory=lambda: NO_BOUNDS, repr=False)
    # exact separation of the nearest candidate pair found apart [m] (collision.exact_method = "ssv"
    # measures it while time allows); NaN (empty in frames.csv) when none was measured
    distance_min: float = float("nan")
    # separation intervals' widths (upper - lower) over the frame's candidate pairs with a finite upper
    # bound [m] (narrowphase/intervals.py), where the narrow phase made them (distance_intervals =
    # "tighten"; a verdict-only frame does not pay for them): median and 90th percentile; NaN (empty)
    # when there is none
    interval_width_median: float = float("nan")
    interval_width_p90: float = float("nan")
    interval_widths: np.ndarray = field(default_factory=lambda: NO_BOUNDS, repr=False)  # not in frames.csv

    @property
    def late_only_off_core(self) -> bool:
        """Over target, and within it but for the time the OS took the frame's core (t_off_core)."""
        return self.overrun and self.frame_time - self.t_off_core <= self.target

    @property
    def t_sim(self) -> float:
        """Every simulation stage, render excluded [s]."""
        return self.t_controls + self.t_integrate + self.t_broad + self.t_narrow + self.t_response + self.t_other

    def finish(self, render_time: float) -> None:
        """Record the frame's measured render time and derive frame time, slack, overrun."""
        self.render_actual = render_time
        self.frame_time = self.t_sim + render_time
        self.slack = self.target - self.frame_time
        self.overrun = self.frame_time > self.target

    def add_integration(self, s) -> None:
        """Count one sample's RK2 integration (dynamics' step statistics)."""
        self.substeps += s.substeps_total
        self.substeps_max = max(self.substeps_max, s.substeps_max)
        self.step_min = s.step_min if self.step_min == 0 else min(self.step_min, s.step_min)
        self.step_max = max(self.step_max, s.step_max)

    def add_detection(self, narrow, budget: float, responses: int, radii, convex=None, compiled: bool = False) -> None:
        """Count one sample's collision detection: its narrow-phase answer (FrameNarrowResult),
        the budget it had [s] (inf: not time-critical), the responses it caused, the bodies'
        bounding radii (n,) [m] (separation bounds are also kept relative to them), and the
        asteroid pairs' answer (convex/field.py) when there are asteroids. compiled: tally the
        verdicts with the numba kernel (the same numbers; False: numpy, which needs no compiling)."""
        if convex is not None and len(convex.pairs):
            self.convex_pairs += len(convex.pairs)
            self.convex_colliding += int(np.count_nonzero(convex.colliding))
        tally = tally_verdicts_kernel if compiled else tally_verdicts_numpy
        self.add_tally(narrow, budget, responses, tally(narrow.colliding, narrow.certain, narrow.separation_bound,
                                                        narrow.pairs, radii, narrow.distance))

    def add_tally(self, narrow, budget: float, responses: int, tally: tuple) -> None:
        """add_detection's counting, its verdicts already tallied (tally_verdicts_kernel's answer)."""
        n_hit, n_exact, bounds, rel, nearest = tally
        self.candidate_pairs += len(narrow.pairs)
        self.colliding_pairs += n_hit
        self.exact_pairs += n_exact
        self.responses += responses
        if math.isfinite(budget):
            # the frame's budget: what earlier samples used plus what this (later) sample may use
            self.budget, self.last_budget = self.detection_used + budget, budget
        self.detection_used += narrow.time_used
        self.t_narrow_batches += narrow.time_in_batches
        hist = narrow.level_histogram.tolist()
        self.level_hist = tuple(map(sum, zip(self.level_hist, hist))) if self.level_hist else tuple(hist)
        if n_hit:
            self.sep_bounds = np.concatenate([self.sep_bounds, bounds]) if len(self.sep_bounds) else bounds
            self.sep_bounds_rel = np.concatenate([self.sep_bounds_rel, rel]) if len(self.sep_bounds_rel) else rel
            ordered = sorted(self.sep_bounds.tolist())  # a frame's few bounds: faster than numpy's median
            half = len(ordered) // 2
            self.sep_bound_min = ordered[0]
            self.sep_bound_median = ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2
        if nearest < math.inf:
            self.distance_min = nearest if math.isnan(self.distance_min) else min(self.distance_min, nearest)
        if narrow.interval_known:  # made by the narrow phase (tightening): tallied; else not forced here
            self.add_intervals(narrow.upper - narrow.lower)

    def add_intervals(self, widths: np.ndarray) -> None:
        """Take in a sample's interval widths [m] (infinite ones, pairs with no upper bound, left out)."""
        widths = widths[np.isfinite(widths)]
        if not len(widths):
            return
        self.interval_widths = np.concatenate([self.interval_widths, widths]) if len(self.interval_widths) else widths
        self.interval_width_median, self.interval_width_p90 = width_quantiles(self.interval_widths)

    def row(self, max_level: int) -> dict:
        """Flat dict for frames.csv (level_hist spread into level_<k> columns; no separation
        bound without a colliding pair: empty, not NaN; the per-verdict arrays left out)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in NOT_IN_CSV}
        hist = d.pop("level_hist")
        for k in range(max_level + 1):
            d[f"level_{k}"] = hist[k] if k < len(hist) else 0
        for k in ("sep_bound_min", "sep_bound_median", "distance_min", "interval_width_median", "interval_width_p90"):
            d[k] = "" if math.isnan(d[k]) else d[k]
        return d


PER_VERDICT = ("sep_bounds", "sep_bounds_rel")  # FrameStats' arrays, one entry per colliding pair verdict
# not in frames.csv: the per-verdict and per-pair arrays, and an instrument read from the wall clock
# whatever the world's clock is (a replayed run's frames.csv must equal the recorded one's)
NOT_IN_CSV = PER_VERDICT + ("interval_widths", "t_narrow_batches", "t_off_core")


def tally_verdicts_numpy(colliding, certain, bound, pairs, radii, distance):
    """tally_verdicts_kernel in numpy: the reference the kernel is tested against, and what runs before
    numba has compiled it."""
    hit = np.asarray(colliding, bool)
    bounds = bound[hit]
    rel = bounds / radii[pairs[hit]].mean(axis=1)
    dist = distance[~hit & np.isfinite(distance)]
    return (int(np.count_nonzero(hit)), int(np.count_nonzero(hit & certain)), bounds, rel,
            float(dist.min()) if len(dist) else math.inf)


@njit(cache=True)
def tally_verdicts_kernel(colliding, certain, bound, pairs, radii, distance):
    """One sample's verdicts in one pass (a sample has a few pairs: numpy's per-call cost would
    be most of the work): how many collide, how many of those are certain, their separation bounds
    and those over the pair's mean bounding radius (in pair order), and the smallest finite
    distance of a pair not colliding (inf: none)."""
    n_hit, n_exact = 0, 0
    for i in range(len(colliding)):
        if colliding[i]:
            n_hit += 1
            n_exact += 1 if certain[i] else 0
    bounds, rel = np.empty(n_hit), np.empty(n_hit)
    nearest, j = np.inf, 0
    for i in range(len(colliding)):
        if colliding[i]:
            bounds[j] = bound[i]
            rel[j] = bound[i] / ((radii[pairs[i, 0]] + radii[pairs[i, 1]]) / 2.0)  # as numpy's mean of the two
            j += 1
        elif math.isfinite(distance[i]) and distance[i] < nearest:
            nearest = distance[i]
    return n_hit, n_exact, bounds, rel, nearest


class FixedCost:
    """Predicts, from the last `k` frames, the time a frame still spends outside the narrow phase
    after a sample's narrow phase: that sample's response and bookkeeping (t_response, t_other),
    then every later sample's integration, broad phase, response and bookkeeping. The narrow
    phase's budget leaves it room, so that a frame whose slack is small still ends on time."""

    def __init__(self, k: int):
        self.after = CostModel(0.0, k)   # per sample: response + between the stages [s]
        self.sample = CostModel(0.0, k)  # per sample: every stage but controls and the narrow phase [s]

    def record(self, s: FrameStats) -> None:
        n = max(s.samples, 1)
        self.after.observe((s.t_response + s.t_other) / n)
        self.sample.observe((s.t_integrate + s.t_broad + s.t_response + s.t_other) / n)

    def predict(self, samples_left: int) -> float:
        """[s] after the narrow phase of the sample with `samples_left` samples to go (itself included)."""
        return self.after.predict() + (samples_left - 1) * self.sample.predict()


def detection_budget(target: float, render_predicted: float, spent: float, margin: float, samples_left: int,
                     overrun: float, rest: float = 0.0) -> float:
    """Narrow-phase time for this sample [s]: what is left of the target frame time after the
    predicted render, the time the frame has spent so far, a safety margin and `rest` — the
    predicted time of the frame's stages outside the narrow phase still to come after this
    sample's narrow phase (stats.FixedCost) — shared over the samples still to come, less the
    predicted overrun of the deadline; never negative."""
    left = target - render_predicted - spent - margin - rest
    return max(0.0, left / samples_left - overrun)


# the same function compiled, for the compiled sample's kernel (the Python stages call the plain one: no numba
# compile before the first frame of a cold start)
detection_budget_kernel = njit(cache=True)(detection_budget)


class Quantiles:
    """Median, p99 ... of a stream of values in memory that does not grow with their number.

    Values are counted in fixed log-spaced bins, mirrored for negative values: bin edges are
    TINY·g^k with g = (1 + RESOLUTION) / (1 - RESOLUTION), and each bin stands for the point
    within RESOLUTION (relative) of all its values. `quantile(q)` interpolates between the bins
    of the two order statistics as numpy's default (linear) percentile does between the values,
    so it is within RESOLUTION · max(|x_lo|, |x_hi|) + TINY of np.percentile(values, 100 q), where
    x_lo, x_hi are those order statistics: within 0.1% for values of one sign. |x| < TINY counts
    as 0 and |x| > HUGE as ±HUGE; min, max, count and sum are exact. At most ~41,000 bins (a dict
    holds only those in use).
    """

    RESOLUTION = 1e-3
    TINY, HUGE = 1e-9, 1e9
    _LOG_G = math.log((1 + RESOLUTION) / (1 - RESOLUTION))
    _TOP = math.ceil(math.log(HUGE / TINY) / _LOG_G)

    def __init__(self):
        self.bins: dict[int, int] = {}  # signed bin index -> count (0: |x| < TINY)
        self.count, self.sum = 0, 0.0
        self.min, self.max = math.inf, -math.inf

    def add(self, x: float) -> None:
        """Count one value (written for speed: a run adds a dozen per frame)."""
        a = abs(x)
        k = 0 if a < self.TINY else min(self._TOP, 1 + int(math.log(a / self.TINY) / self._LOG_G))
        k = -k if x < 0 else k
        self.bins[k] = self.bins.get(k, 0) + 1
        self.count += 1
        self.sum += x
        if x < self.min:
            self.min = x
        if x > self.max:
            self.max = x

    def _value(self, k: int) -> float:
        """The point standing for bin k: within RESOLUTION of both its edges, relative."""
        if k == 0:
            return 0.0
        g = math.exp(self._LOG_G)
        v = self.TINY * math.exp((abs(k) - 1) * self._LOG_G) * 2 * g / (1 + g)
        return math.copysign(v, k)

    def quantile(self, q: float) -> float:
        """The q-quantile (0 <= q <= 1) as np.percentile(values, 100 q) within the class's
        resolution; NaN when empty."""
        if not self.count:
            return math.nan
        keys = sorted(self.bins)
        ends = list(itertools.accumulate(self.bins[k] for k in keys))  # rank just past each bin
        rank = q * (self.count - 1)
        lo, hi = (self._order_statistic(i, keys, ends) for i in (math.floor(rank), math.ceil(rank)))
        return lo + (rank - math.floor(rank)) * (hi - lo)

    def _order_statistic(self, i: int, keys: list[int], ends: list[int]) -> float:
        """The i-th smallest value (exact for the smallest and largest, else its bin's point)."""
        if i == 0:
            return self.min
        if i == self.count - 1:
            return self.max
        return self._value(keys[bisect.bisect_right(ends, i)])

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else math.nan

    def figures(self, scale: float = 1.0) -> dict:
        """{"median", "p99", "max"} times `scale` (summary.json's form)."""
        return {"median": scale * self.quantile(0.5), "p99": scale * self.quantile(0.99), "max": scale * self.max}


class Accuracy:
    """The accuracy a run reached, over every colliding pair verdict of its frames (a pair still
    colliding at the level where refinement stopped, counted once per detection sample), in
    memory that does not grow with the run: how many stopped at each level (the last is the
    exact triangle level), and the distribution of their separation bounds — in metres and as a
    fraction of the pair's mean bounding radius (Hubbard's "fraction of the bounding radius";
    equal to it for two ships of one model)."""

    def __init__(self):
        self.level_hist = np.zeros(0, np.int64)
        self.bound_m, self.bound_rel = Quantiles(), Quantiles()

    def add(self, s: FrameStats) -> None:
        hist = np.asarray(s.level_hist, np.int64)
        if len(hist) > len(self.level_hist):
            self.level_hist = np.pad(self.level_hist, (0, len(hist) - len(self.level_hist)))
        self.level_hist[:len(hist)] += hist
        for b, r in zip(s.sep_bounds.tolist(), s.sep_bounds_rel.tolist()):
            self.bound_m.add(b)
            self.bound_rel.add(r)

    @property
    def verdicts(self) -> int:
        return int(self.level_hist.sum())

    def to_dict(self) -> dict:
        """summary.json's "accuracy": level histogram and shares, share answered exactly, and
        separation-bound quantiles (None without a colliding verdict)."""
        n = self.verdicts

        def figures(q: Quantiles):
            return {k: q.quantile(p) for k, p in QUANTILES.items()} | {"max": q.max} if q.count else None

        return {"colliding_verdicts": n, "level_histogram": self.level_hist.tolist(),
                "level_fraction": (self.level_hist / n).tolist() if n else None,
                "exact_fraction": float(self.level_hist[-1] / n) if n else None,
                "separation_bound_m": figures(self.bound_m),
                "separation_bound_fraction": figures(self.bound_rel)}


QUANTILES = {"median": 0.5, "p90": 0.9, "p99": 0.99}  # the quantiles Accuracy reports


def width_quantiles(widths: np.ndarray) -> tuple[float, float]:
    """(median, p90) of separation-interval widths [m]; (nan, nan) when there are none."""
    if not len(widths):
        return math.nan, math.nan
    median, p90 = np.quantile(widths, [0.5, 0.9])
    return float(median), float(p90)
