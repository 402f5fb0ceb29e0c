#!/usr/bin/env python3
"""What one operation costs right after the CPU has been away, and what the next ones cost.

    python scripts/cold_calls.py [--gap-ms 32] [--repeats 200]

After a busy wait of --gap-ms in this process (the time between two frames, where a frame's render would
be), times six operations in a row, for three kinds: nothing but the clock reads, a numba call with ten
array arguments, a small numpy allocation; then the first numba call after shorter gaps. Prints medians
[µs]. The first operation after the gap pays for the code and data it touches that are no longer in the
caches; those after it run warm: so a frame's cold cost follows the distinct code paths it takes, not the
number of calls (scripts/cold_frames.py times whole frames the same way).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

IN_A_ROW = 6


@njit(cache=True)
def _ten_arrays(a, b, c, d, e, f, g, h, i, j):
    return a[0] + b[0]


def busy_wait(seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass


def in_a_row(op, gap: float, repeats: int) -> np.ndarray:
    """Median time [s] of each of IN_A_ROW calls of op (None: no call) made right after a busy wait of gap."""
    clock, times = time.perf_counter, []
    for _ in range(repeats):
        busy_wait(gap)
        stamps = [clock()]
        for _ in range(IN_A_ROW):
            if op is not None:
                op()
            stamps.append(clock())
        times.append(np.diff(stamps))
    return np.median(times, axis=0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gap-ms", type=float, default=32.0, help="busy wait before each series [ms]")
    p.add_argument("--repeats", type=int, default=200)
    args = p.parse_args()
    arrays = [np.ones(16) for _ in range(10)]
    ops = {"clock reads only": None, "numba call, 10 arrays": lambda: _ten_arrays(*arrays),
           "np.zeros(60, bool)": lambda: np.zeros(60, bool)}
    for op in ops.values():  # compiled and warm once
        if op is not None:
            op()
    print(f"after a {args.gap_ms:g} ms busy wait, calls 1..{IN_A_ROW} in a row [us, medians]:")
    for name, op in ops.items():
        row = in_a_row(op, args.gap_ms / 1e3, args.repeats)
        print(f"  {name:24s}" + " ".join(f"{x * 1e6:7.2f}" for x in row))
    print("the first numba call after a busy wait of [ms]:")
    for gap in (0.5, 1, 2, 4, 8, args.gap_ms):
        first = in_a_row(ops["numba call, 10 arrays"], gap / 1e3, args.repeats)[0]
        print(f"  {gap:5g}: {first * 1e6:7.2f} us")


if __name__ == "__main__":
    main()
