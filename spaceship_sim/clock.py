"""The clocks time-critical code reads.

Every deadline decision — the frame's detection budget, when refinement stops, how long the
stand-in render takes — reads a clock object passed in by the caller, never `time` directly,
so a test (or a replay) decides what "out of time" means and gets the same verdict on a fast
idle machine and on a slow loaded one.

A clock is a callable returning seconds, with `spend(seconds)` for work it should stand in for.
"""
from __future__ import annotations

import time


class WallClock:
    """time.perf_counter(); `spend` busy-waits (a render load occupies the CPU, it does not sleep)."""

    def __call__(self) -> float:
        return time.perf_counter()

    def spend(self, seconds: float) -> float:
        """Occupy the CPU for `seconds`; returns the time actually taken."""
        t0 = time.perf_counter()
        if seconds > 0.002:  # sleep most of it, spin the rest for accuracy
            time.sleep(seconds - 0.002)
        while time.perf_counter() - t0 < seconds:
            pass
        return time.perf_counter() - t0

    def __repr__(self) -> str:
        return "WallClock()"


class TickClock:
    """Deterministic time measured in clock reads: every reading advances by `tick` seconds and
    `spend(s)` by exactly s. Code that checks the clock between units of work (batches of pair
    rows, levels, stages) then gets a budget of a fixed number of checks, whatever the machine."""

    def __init__(self, tick: float = 1e-5, start: float = 0.0):
        if not tick > 0:
            raise ValueError(f"tick must be > 0, got {tick}")
        self.tick, self.now = float(tick), float(start)

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def spend(self, seconds: float) -> float:
        self.now += seconds
        return seconds

    def __repr__(self) -> str:
        return f"TickClock(tick={self.tick:g}, now={self.now:g})"


WALL = WallClock()
