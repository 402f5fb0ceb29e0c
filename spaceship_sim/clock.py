"""The clocks time-critical code reads.

Every deadline decision — the frame's detection budget, when refinement stops, how long the
stand-in render takes — reads a clock object passed in by the caller, never `time` directly,
so a test (or a replay) decides what "out of time" means and gets the same verdict on a fast
idle machine and on a slow loaded one.

A clock is a callable returning seconds, with `spend(seconds)` for work it should stand in for.

Replays (spaceship_sim.replay): a RecordingClock passes another clock's readings through and
logs them; a ReplayClock serves logged readings back in order. Since every time-critical
decision — each sample's budget, each refinement batch size and cut-off — is a function of the
readings, a run stepped on a ReplayClock makes exactly the recorded decisions, on any machine.
"""
from __future__ import annotations

import time


class WallClock:
    """time.perf_counter(); `spend` stands in for a render: it sleeps, then spins its last SPIN
    seconds (a sleep alone may wake late)."""

    # Measured on the shared 2-core runner (600 sleeps of 28 ms, twice, load 3.3): a sleep overshot by
    # more than 2 ms 2.0-2.5% of the time, by more than 5 ms 0.2%. With a 2 ms spin, 1-5% of the lamps bench's
    # frames were over target only because the stand-in render woke late (bench hubbard's "render
    # late"), as many as the 99% target allows in all: the stand-in, not the system under test.
    SPIN = 0.005

    # the builtin itself, not a method around it: a frame reads the clock some 36 times, and a
    # Python-level call each time is a frame object more to run with cold caches (scripts/cold_frames.py)
    __call__ = staticmethod(time.perf_counter)

    def spend(self, seconds: float) -> float:
        """Occupy the CPU for `seconds`; returns the time actually taken."""
        t0 = time.perf_counter()
        if seconds > self.SPIN:  # sleep most of it, spin the rest for accuracy
            time.sleep(seconds - self.SPIN)
        while time.perf_counter() - t0 < seconds:
            pass
        return time.perf_counter() - t0

    def __repr__(self) -> str:
        return "WallClock()"


class ThreadClock(WallClock):
    """This thread's CPU time (time.thread_time): what a frame takes on a machine that never
    preempts the process — a diagnostic beside the wall clock, which on a shared VM also counts
    the host's steal time and other processes' time slices. `spend` waits as the wall clock's
    stand-in render does but returns the nominal time: the render is not the work measured."""

    __call__ = staticmethod(time.thread_time)

    def spend(self, seconds: float) -> float:
        super().spend(seconds)
        return seconds

    def __repr__(self) -> str:
        return "ThreadClock()"


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


class RecordingClock:
    """Passes `inner`'s readings through and logs each one until `take()` hands them over.
    `spend` is the inner clock's (its return value is what the caller records, if anything)."""

    def __init__(self, inner):
        self.inner, self.log = inner, []

    def __call__(self) -> float:
        now = self.inner()
        self.log.append(now)
        return now

    def spend(self, seconds: float) -> float:
        return self.inner.spend(seconds)

    def take(self) -> list[float]:
        """The readings since the last take, oldest first (the log starts empty again)."""
        readings, self.log = self.log, []
        return readings

    def __repr__(self) -> str:
        return f"RecordingClock({self.inner!r})"


class ReplayClockError(Exception):
    """A ReplayClock was read more often than its readings allow (the replay diverged)."""


class ReplayClock:
    """Serves the readings given to `load` back in order, one per call. `left()` says how many
    are unread; reading past the last raises ReplayClockError. `spend` advances nothing: what a
    recorded run spent is in its readings (or recorded beside them, as render times are)."""

    def __init__(self):
        self.readings: list[float] = []
        self.next = 0

    def load(self, readings) -> None:
        self.readings, self.next = list(readings), 0

    def __call__(self) -> float:
        if self.next >= len(self.readings):
            raise ReplayClockError(f"read {self.next + 1} times, {len(self.readings)} readings recorded")
        self.next += 1
        return self.readings[self.next - 1]

    def left(self) -> int:
        return len(self.readings) - self.next

    def spend(self, seconds: float) -> float:
        return seconds

    def __repr__(self) -> str:
        return f"ReplayClock({self.next}/{len(self.readings)} read)"


WALL = WallClock()
CLOCKS = {"wall": WALL, "thread": ThreadClock()}  # the clocks a command line may name
