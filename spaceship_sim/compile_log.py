"""numba's compile events as records: what a first start compiles, and for how long.

Every compile numba makes fires a "numba:compile" event around it, nested when a kernel compiles the
kernels it calls: a kernel's own time is its event's span less its callees'. `CompileLog` collects
them in this process; a process that compiles on another's behalf (the warm-up's helper,
sim/compile_ahead.py) appends its records, as JSON lines, to the file named by $SPACESHIP_SIM_COMPILE_LOG
when it is set (`spaceship-sim bench compile` sets it), so that one report covers every process.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict

LOG_ENV = "SPACESHIP_SIM_COMPILE_LOG"


class CompileLog:
    """numba compile events as records (module, qualified name, signature, own seconds, span seconds).
    Nested compiles (a kernel's callees) are taken out of their caller's own time."""

    def __init__(self):
        self.records, self._stacks, self._lock = [], defaultdict(list), threading.Lock()

    def notify(self, event) -> None:
        stack = self._stacks[threading.get_ident()]
        if event.is_start:
            stack.append([time.perf_counter(), 0.0])
            return
        start, inner = stack.pop()
        span = time.perf_counter() - start
        if stack:
            stack[-1][1] += span
        d = event.data["dispatcher"]
        with self._lock:
            self.records.append((d.py_func.__module__, d.py_func.__qualname__, str(tuple(event.data["args"])),
                                 span - inner, span))

    def __enter__(self) -> "CompileLog":
        from numba.core import event  # numba loads when a log starts, not when the command line is built

        class Relay(event.Listener):
            on_start = on_end = staticmethod(self.notify)
        self._relay = Relay()
        event.register("numba:compile", self._relay)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event
        event.unregister("numba:compile", self._relay)


def shared_log(process: str):
    """A CompileLog whose records are appended, tagged with `process`, to $SPACESHIP_SIM_COMPILE_LOG
    on exit; None when that is not set."""
    path = os.environ.get(LOG_ENV)
    if not path:
        return None

    class Shared(CompileLog):
        def __exit__(self, *exc) -> None:
            super().__exit__(*exc)
            with open(path, "a") as f:
                f.writelines(json.dumps([process, *r]) + "\n" for r in self.records)

    return Shared()


def read_shared(path: str) -> list[tuple]:
    """The records appended to `path` by shared logs: (process, module, name, signature, own, span)."""
    try:
        with open(path) as f:
            return [tuple(json.loads(line)) for line in f if line.strip()]
    except FileNotFoundError:
        return []
