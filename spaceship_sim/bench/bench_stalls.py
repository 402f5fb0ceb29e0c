"""bench stalls: does this machine run a fixed piece of work at a steady speed?

A frame over its target is the system's doing, the stand-in render's (it woke late: "render late"),
the OS's (it gave the frame's core to another program: "off core", wall time less the thread's CPU
time) — or the machine's. On a shared virtual machine the host may stall or slow the virtual CPU,
and the guest counts that time as the thread's own CPU time: neither the OS's preemption count nor
the time off core shows it, and a frame's own kernels seem to take several times as long.

This bench times one fixed CPU-bound kernel (a loop over registers: no memory traffic, no
allocation, no other thread), back to back and after a sleep as a frame runs after its render, on
the wall clock and on the thread's CPU clock. It prints each way's median and p99, the share of
calls that took over twice the median, and of those the share whose CPU time grew as much: those the
machine slowed, not the OS. On a steady machine both shares are near zero.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from ..cli.args import integer, number
from .cpu_load import cpu_load, load_levels

SLOW = 2.0  # a call this many times its way's median is a slow one


def register(sub) -> None:
    p = sub.add_parser("stalls", help="a fixed CPU-bound kernel timed back to back and after sleeps: how often "
                                      "the machine itself runs it slow")
    p.add_argument("--calls", type=integer(20, 1_000_000), default=300, help="timed calls per way (default: 300)")
    p.add_argument("--work-ms", type=number(0.0, 1000.0, lo_open=True, unit=" ms"), default=2.0,
                   help="the kernel's time on a steady machine [ms] (default: 2)")
    p.add_argument("--sleep-ms", type=number(0.0, 1000.0, unit=" ms"), default=30.0,
                   help="the sleep before each call of the second way [ms] (default: 30, a frame's render)")
    p.add_argument("--cpu-load", default="0", help="busy processes beside the bench, comma-separated")
    p.set_defaults(func=run)


def run(args) -> int:
    levels = load_levels(args.cpu_load)
    iterations = calibrate(args.work_ms / 1e3)
    for n in levels:
        with cpu_load(n):
            for way, sleep in (("back to back", 0.0), (f"after a {args.sleep_ms:g} ms sleep", args.sleep_ms / 1e3)):
                wall, cpu = time_calls(iterations, args.calls, sleep)
                print(f"load {n}, {way}: {describe(wall, cpu)}")
    return 0


@functools.cache
def _kernel():
    """The fixed kernel, compiled (or loaded from numba's cache) once per process."""
    from numba import njit

    @njit(cache=True)
    def spin(n):
        s = 0.0
        for i in range(n):
            s += (i * 0.5) % 7.0
        return s
    return spin


def calibrate(seconds: float) -> int:
    """Iterations of the kernel that take about `seconds` here (the fastest of a few tries)."""
    n = 100_000
    _kernel()(10)  # compiled or loaded before any timing
    best = time_calls(n, 5, 0.0)[0].min()
    return max(1, int(n * seconds / max(best, 1e-9)))


def time_calls(iterations: int, calls: int, sleep: float) -> tuple[np.ndarray, np.ndarray]:
    """(wall, cpu) [s] of `calls` calls of the kernel, each after `sleep` seconds asleep."""
    spin = _kernel()
    wall, cpu = np.empty(calls), np.empty(calls)
    for i in range(calls):
        if sleep:
            time.sleep(sleep)
        t0, c0 = time.perf_counter(), time.thread_time()
        spin(iterations)
        wall[i], cpu[i] = time.perf_counter() - t0, time.thread_time() - c0
    return wall, cpu


def slow_shares(wall: np.ndarray, cpu: np.ndarray) -> tuple[float, float]:
    """(share of calls over SLOW x the median wall time, share of those whose CPU time was over SLOW
    x its median too: the machine's stalls, which the OS counts as the thread running)."""
    slow = wall > SLOW * np.median(wall)
    if not slow.any():
        return 0.0, 0.0
    return float(slow.mean()), float(np.mean(cpu[slow] > SLOW * np.median(cpu)))


def machine_line(load: int, calls: int = 100, work: float = 1e-3) -> str:
    """One line on how steady the machine runs the fixed kernel now, `calls` back-to-back calls of
    about `work` seconds: beside another bench's p99s, which a few slow calls make."""
    wall, cpu = time_calls(calibrate(work), calls, 0.0)
    return f"machine at load {load}, a fixed {1e3 * work:g} ms kernel back to back (bench stalls): {describe(wall, cpu)}"


def describe(wall: np.ndarray, cpu: np.ndarray) -> str:
    share, machine = slow_shares(wall, cpu)
    med = np.median(wall)
    return (f"median {1e3 * med:.2f} ms, p99 {np.percentile(wall, 99) / med:.2f}x median, max "
            f"{wall.max() / med:.1f}x; calls over {SLOW:g}x median {share:.1%}, of those slow in CPU time too "
            f"(the machine, not the OS) {machine:.0%}")
