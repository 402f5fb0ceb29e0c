"""The estimates the time-critical loop plans with: one small model of the cost of a kind of work.

Every prediction the frame's budget and the narrow phase carry from call to call — the render time
(sim/world.py), how far frames end past their plan (sim/frame.py, Timing.margin), what the narrow
phase overruns its deadline by, the frame's stages outside the narrow phase (stats.FixedCost), an
exact strategy's cost per unit of work and per distance query (narrowphase/refine.py), serial
against parallel throughput (threads.py) — is a `CostModel`:
`predict(units)` prices work, `observe` records what some work cost. (The sphere levels' time per row and the on-collide trees'
build rounds are measured afresh inside each call, by a first probe batch: they cannot lock
themselves out across calls.)

Why a quantile of a window, not the last measurement or a running mean: on a shared machine a
measurement is now and then 10-1000x the usual one (the process was descheduled in the middle
of it). An estimate that is the last measurement is that outlier until the next measurement;
worse, if the outlier prices every later batch out of the budget, no batch runs, nothing is
measured again, and the estimate never recovers (seen with the SSV strategy at load 5-6: 0.6% of
verdicts reached the exact level, the estimate 700x its prior for good). A median of the last few
rates ignores a lone outlier once two ordinary rates are in the window and follows a sustained
change within about half a window; a high quantile (the render) learns lateness that comes and
goes, so the budget shrinks before frames are missed.

Why a probe: an estimate that only a refused measurement could correct must be corrected some
other way. After `probe_after` refusals in a row (`refused()`), `probe_due` tells the caller to run
the smallest piece of the work it has (one pair row) if its deadline has not passed: the overrun is
at most that one piece's cost, and its measurement re-enters the window.
"""
from __future__ import annotations

from collections import deque


class CostModel:
    """Seconds per unit of a kind of work: the `quantile` of the last `window` measured rates
    (`prior` before the first), with a probe after `probe_after` refusals in a row."""

    def __init__(self, prior: float, window: int = 5, quantile: float = 0.5, probe_after: int = 8):
        if window < 1 or not 0.0 <= quantile <= 1.0 or probe_after < 1:
            raise ValueError(f"CostModel: window {window} >= 1, quantile {quantile} in [0, 1], "
                             f"probe_after {probe_after} >= 1")
        self.prior, self.quantile, self.probe_after = prior, quantile, probe_after
        self.rates: deque[float] = deque(maxlen=window)
        self.refusals = 0

    def rate(self, quantile: float | None = None) -> float:
        """[s per unit]: the window's `quantile` (the model's unless given; its lower value between
        two: a lone high outlier in a window of two does not count)."""
        if not self.rates:
            return self.prior
        ordered = sorted(self.rates)
        return ordered[int((self.quantile if quantile is None else quantile) * (len(ordered) - 1))]

    def predict(self, units: float = 1.0) -> float:
        """[s] that `units` of the work are expected to take."""
        return units * self.rate()

    def observe(self, seconds: float, units: float = 1.0) -> None:
        """`units` of the work took `seconds`."""
        if units > 0:
            self.rates.append(seconds / units)
            self.refusals = 0

    def refused(self) -> None:
        """The estimate kept work that was wanted from starting."""
        self.refusals += 1

    @property
    def probe_due(self) -> bool:
        """Whether the next refusal should instead run one small piece of the work, to measure it."""
        return self.refusals >= self.probe_after

    def __repr__(self) -> str:
        return f"CostModel(rate={self.rate():.3g} s/unit, {len(self.rates)} measured, {self.refusals} refused)"
