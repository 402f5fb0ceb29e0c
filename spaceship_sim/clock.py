"""The clocks time-critical code reads.

Every deadline decision — the frame's detection budget, when refinement stops, how long the
stand-in render takes — reads a clock object passed in by the caller, never `time` directly,
so a test (or a replay) decides what "out of time" means and gets the same verdict on a fast
idle machine and on a slow loaded one.

A clock is a callable returning seconds, with `spend(seconds)` for work it should stand in for.

Replays (spaceship_sim.sim.replay): a RecordingClock passes another clock's readings through and
logs them; a ReplayClock serves logged readings back in order. Since every time-critical
decision — each sample's budget, each refinement batch size and cut-off — is a function of the
readings, a run stepped on a ReplayClock makes exactly the recorded decisions, on any machine.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


class WallClock:
    """time.perf_counter(); `spend` stands in for a render: it sleeps, then spins its last SPIN
    seconds (a sleep alone may wake late)."""

    # Measured on the shared 2-core runner (600 sleeps of 28 ms, twice, load 3.3): a sleep overshot by
    # more than 2 ms 2.0-2.5% of the time, by more than 5 ms 0.2%. With a 2 ms spin, 1-5% of the lamps bench's
    # frames were over target only because the stand-in render woke late (bench hubbard's "render
    # late"), as many as the 99% target allows in all: the stand-in, not the system under test.
    SPIN = 0.005

    # the builtin itself, not a method around it: a frame reads the clock some 36 times, and a
    # Python-level call each time is a frame object more to run with cold caches (10-40 µs a call after a render)
    __call__ = staticmethod(time.perf_counter)
    kernel_kind = 0  # what read_clock reads for it (KERNEL_KINDS)

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
    kernel_kind = 1

    def spend(self, seconds: float) -> float:
        super().spend(seconds)
        return seconds

    def __repr__(self) -> str:
        return "ThreadClock()"


class TickClock:
    """Deterministic time measured in clock reads: every reading advances by `tick` seconds and
    `spend(s)` by exactly s. Code that checks the clock between units of work (batches of pair
    rows, levels, stages) then gets a budget of a fixed number of checks, whatever the machine."""

    kernel_kind = 2

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


# --- the clock inside a numba kernel ----------------------------------------------------------
# A kernel that runs a whole detection sample (compiled_sample.py) reads the world's clock where the
# Python stages would, so it must read the same clock: the wall and thread clocks by the same system
# call Python makes (clock_gettime, seconds as Python converts them), a TickClock by advancing its
# count. kernel_clock(clock) -> (3,) float64 [kind, tick, now] that read_clock takes, or None for
# clocks a kernel cannot read (recording and replaying clocks keep their readings in Python lists).
_KERNEL_IDS = {0: 1, 1: 3}  # kind -> clock id: CLOCK_MONOTONIC (perf_counter), CLOCK_THREAD_CPUTIME_ID
_NATIVE = sys.platform.startswith("linux") and [time.get_clock_info(n).implementation for n in
                                                 ("perf_counter", "thread_time")] == [
    "clock_gettime(CLOCK_MONOTONIC)", "clock_gettime(CLOCK_THREAD_CPUTIME_ID)"]


def kernel_clock(clock, state=None):
    """[kind, tick, now] for read_clock (written into `state` when given: a kernel's clock made
    once), or None where a kernel cannot read `clock`. A TickClock's count is copied in:
    sync_clock(clock, state) after the kernel carries it back."""
    kind = getattr(type(clock), "kernel_kind", None)
    if kind is None or (kind in _KERNEL_IDS and not _NATIVE):
        return None
    if state is None:
        state = np.zeros(3)
    state[0], state[1], state[2] = kind, getattr(clock, "tick", 0.0), getattr(clock, "now", 0.0)
    return state


def sync_clock(clock, state) -> None:
    """What a kernel's reads did to `clock` (a TickClock's count) carried back to it."""
    if state[0] == TickClock.kernel_kind:
        clock.now = float(state[2])


@intrinsic
def _clock_gettime(typingctx, clock_id, ts):
    """clock_gettime(clock_id, ts.ctypes.data) called by name (so that the kernel can be cached)."""
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), ir.IntType(8).as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        data = context.make_array(signature.args[1])(context, builder, args[1]).data
        return builder.call(fn, [builder.trunc(args[0], ir.IntType(32)), builder.bitcast(data, ir.IntType(8).as_pointer())])

    return types.int32(clock_id, ts), codegen


@njit(cache=True)
def read_clock(state):
    """One reading of the clock `state` describes (kernel_clock) [s]."""
    kind = int(state[0])
    if kind == 2:  # TickClock: every reading advances by its tick
        state[2] += state[1]
        return state[2]
    ts = np.empty(2, np.int64)
    _clock_gettime(np.int64(1 if kind == 0 else 3), ts)
    return (ts[0] * 1000000000 + ts[1]) / 1e9  # as Python turns nanoseconds into seconds


@njit(cache=True)
def read_wall():
    """time.perf_counter() inside a kernel (instruments that are never the world's clock)."""
    ts = np.empty(2, np.int64)
    _clock_gettime(np.int64(1), ts)
    return (ts[0] * 1000000000 + ts[1]) / 1e9
