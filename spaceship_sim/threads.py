"""How many threads a stage's parallel form gets for a batch: the count it measured to be faster.

On a quiet machine a batch split over both cores takes about half the time; with the cores taken
by other programs a parallel batch waits for a thread whose core is busy elsewhere, and measured
at load ~2 an SSV collide went from 1.9 to 72.6 us a pair with 2 threads. So a stage does not
assume parallel wins: `ThreadChoice` keeps each thread count's seconds per unit of work
(cost.CostModel: a median of recent batches, so one preempted batch does not flip the choice),
runs each batch on the cheaper, and now and then runs one on the other, so that a choice made under
load is revisited when the load goes: first after `explore_every` batches, then, each time the other
is measured slower again, four times as many batches later (at most MAX_EXPLORE_EVERY), so that a
form 100x slower under load costs a handful of batches in a long run, not one in sixteen; a
re-measure that finds the other faster is repeated at once, so the choice follows within a few
batches when the load goes. The answers never depend on it: every
parallel kernel gives the same result on any number of threads.

numba's threading layer matters as much. Measured with `bench threads --cpu-load 0,2 --repeats 100`
on a 2-core machine (2026-11-29), parallel / serial per query with both cores taken by two busy
processes: OpenMP 37x (SSV first contact), 2.2x (all contacts), 0.95x (distance); TBB 0.99x, 1.00x,
1.00x, the integrator 0.44x; workqueue 1.00x, 0.72x, 0.54x but it cannot run two parallel kernels at
once (the background tree builds and warm-up do). Quiet, TBB and OpenMP split the batch alike (0.52-
0.65x, the integrator 0.23-0.31x). TBB would be the layer to pick, but with TBB the windowed app
hung, pinned to one core beside a busy process (tests/app stopped at its first window test; with
OpenMP all 39 passed in 155 s). So the package keeps numba's default (OpenMP here), and this
choice is what keeps OpenMP's 37x off the frame: adaptive / serial 1.06x median at load 2. OpenMP's
workers also spin only briefly after a kernel (machine.spin_briefly_after_kernels): their long
default spin took a core's share from the serial batches that followed one on a parallel batch.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import numba

from .cost import CostModel

MAX_EXPLORE_EVERY = 4096


@contextmanager
def numba_threads(n: int):
    """numba's thread count for this thread's parallel kernels set to n in the block, restored after."""
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(before)


class ThreadChoice:
    """Serial or `most` threads (numba's pool size by default), per batch, from measured throughput;
    adaptive=False: always `most` (a benchmark timing one thread count). One choice per kind of
    work: its rates compare only batches whose units cost alike (ssv.exact keeps one per query)."""

    def __init__(self, most: int | None = None, explore_every: int = 16, adaptive: bool = True):
        most = numba.config.NUMBA_NUM_THREADS if most is None else max(1, min(int(most),
                                                                               numba.config.NUMBA_NUM_THREADS))
        self.options = (1, most) if most > 1 and adaptive else (most,)
        self.cost = {n: CostModel(0.0) for n in self.options}
        self.explore_every, self.batches = explore_every, 0
        self.interval, self.next_explore, self.best = explore_every, explore_every, None

    def choose(self) -> int:
        """The thread count for the next batch: an unmeasured one first, then the cheaper per unit,
        except when a re-measure of the other is due (the module docstring's schedule)."""
        unmeasured = [n for n in self.options if not self.cost[n].rates]
        if unmeasured:
            return unmeasured[-1]
        best = min(self.options, key=lambda n: self.cost[n].rate())
        if best != self.best:  # the choice changed: re-measure the other soon
            self.best, self.interval = best, self.explore_every
            self.next_explore = self.batches + self.interval
        if len(self.options) > 1 and self.batches >= self.next_explore:
            self.interval = min(4 * self.interval, MAX_EXPLORE_EVERY)
            self.next_explore = self.batches + self.interval
            return next(n for n in self.options if n != best)
        return best

    @contextmanager
    def threads_for(self, units: float):
        """Run the block (a batch of `units` of work) under the chosen numba thread count, yielded,
        and learn its wall time (an instrument: it decides speed, never an answer)."""
        n = self.choose()
        self.batches += 1
        t0 = time.perf_counter()
        try:
            with numba_threads(n):
                yield n
        finally:
            elapsed = time.perf_counter() - t0
            if n != self.best and self.best is not None and elapsed / units < self.cost[self.best].rate():
                self.next_explore = self.batches  # the other was faster this time: confirm it at once
            self.cost[n].observe(elapsed, units)

    def __repr__(self) -> str:
        return "ThreadChoice(" + ", ".join(f"{n}: {c.rate():.3g} s/unit" for n, c in self.cost.items()) + ")"
