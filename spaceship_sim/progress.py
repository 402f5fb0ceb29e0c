"""Telling the user what a long silent step is doing.

`slow_notice` prints a line only when a step turns out to be slow: a numba warm-up that loads
kernels from the cache takes milliseconds and should say nothing, the same warm-up compiling
them on a first start takes tens of seconds and must not sit silent.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def slow_notice(what: str, notify=to_stderr, after: float = 1.0):
    """Run the block; if it is still running `after` seconds in, notify(f"{what} ...") at once
    and, when it ends, notify how long it took. notify=None says nothing."""
    if notify is None:
        yield
        return
    t0 = time.perf_counter()
    announced = threading.Event()

    def announce():
        announced.set()
        notify(f"{what} ...")

    timer = threading.Timer(after, announce)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if announced.is_set():
            notify(f"{what}: done in {time.perf_counter() - t0:.1f} s")
