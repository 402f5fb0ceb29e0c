"""Kernels compiled in a helper process, beside the world's own warm-up.

numba compiles one kernel at a time in a process (a global lock), and on a first start compiling is
most of the time to full detection. With a core to spare, a helper process builds the exact level's
strategy (its trees, cached on the way) and compiles its kernels, while the world's warm-up compiles
the rest of the frame; both write numba's cache, from which the world then loads the helper's kernels
(world.warm_up_helper says what it runs). Only on a cold start: where the cache holds the kernels
already a helper would cost a process start for nothing.
A helper that fails costs nothing but its time: the world compiles what is missing itself.
"""
from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path

# what the helper process runs: world.py composes the stages (the registry)
ENTRY = "from spaceship_sim.sim.world import warm_up_helper; warm_up_helper()"
_RUNNING: "weakref.WeakSet[Helper]" = weakref.WeakSet()


def cached(kernel) -> bool:
    """Whether numba's cache holds `kernel` (a cache=True dispatcher) compiled from its current
    source, read as numba reads its index. Unknown (a numba without these internals) counts as
    cached: nothing is started."""
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:
        return True


def spare_core() -> bool:
    """This process may run on more than one CPU."""
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:  # not on Linux
        return (os.cpu_count() or 1) > 1


class Helper:
    """A helper process running ENTRY on `payload` (pickled onto its stdin); its stderr is kept in a
    temporary file so that a failure can be named."""

    def __init__(self, payload):
        package_root = str(Path(__file__).resolve().parents[2])  # the same spaceship_sim as this process's
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
        self._err = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([sys.executable, "-c", ENTRY], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=self._err, env=env)
        _RUNNING.add(self)
        try:
            self._proc.stdin.write(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
            self._proc.stdin.close()
        except OSError:  # it died at once: join() says why
            pass

    def join(self) -> str | None:
        """Wait for the helper; None when it succeeded, else the last line it wrote (or its exit code)."""
        code = self._proc.wait()
        _RUNNING.discard(self)
        if code == 0:
            return None
        self._err.seek(0)
        lines = self._err.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {code}"

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait()


def start(payload) -> Helper | None:
    """A Helper on `payload`, or None where starting one fails (the caller compiles it all itself)."""
    try:
        return Helper(payload)
    except OSError:
        return None


def payload() -> object:
    """The helper's side: what the world sent."""
    return pickle.load(sys.stdin.buffer)


@atexit.register
def _stop_running() -> None:
    """A process that quits during its warm-up (a window closed) takes its helper with it."""
    for helper in list(_RUNNING):
        helper.stop()
