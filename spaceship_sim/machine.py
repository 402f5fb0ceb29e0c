"""What the machine was doing while something was timed: so a reader of a record can tell a slow
algorithm from a busy machine. Load average (Unix), involuntary context switches of this process
(the times the OS took its core away: each one may stall a frame), the CPU and its cores; the one
request the frame loop makes of the OS scheduler (`time_slice`); and how long OpenMP's idle workers
keep a core (`spin_briefly_after_kernels`)."""
from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
from contextlib import contextmanager
from pathlib import Path


# rounds libgomp's idle workers spin after a parallel kernel before they sleep (its GOMP_SPINCOUNT)
OPENMP_SPIN = "20000"


def spin_briefly_after_kernels() -> None:
    """Ask numba's OpenMP workers (GNU libgomp) to spin only briefly after each parallel kernel, where
    the user has not set GOMP_SPINCOUNT; to take effect it must run before the library loads. Their
    long default spin takes a core's share from the serial stage that follows on a machine whose
    cores other programs use (at --cpu-load 1 an SSV batch ran 8.6 ms alone, 15.6 ms right after a
    parallel one; with this spin, 8.5 ms both); a short one keeps back-to-back kernels' quick start."""
    os.environ.setdefault("GOMP_SPINCOUNT", OPENMP_SPIN)


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def involuntary_switches() -> int:
    """Times so far the OS preempted this process (every thread) for another."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


class LoadWatch:
    """The machine's load over a stretch of work: made at its start, `figures()` at its end."""

    def __init__(self):
        self.start_load, self.start_switches = load_average(), involuntary_switches()
        self.time_slice = time_slice()  # what the thread that made the watch asked of the scheduler

    def preempted(self) -> int:
        """Involuntary context switches since the watch started."""
        return involuntary_switches() - self.start_switches

    def figures(self) -> dict:
        return {"cores": os.cpu_count(), "load_average_start": self.start_load, "load_average_end": load_average(),
                "preempted": self.preempted(),
                "time_slice_ms": None if self.time_slice is None else round(self.time_slice * 1e3, 3)}


# --- the scheduler's time slice ---------------------------------------------------------------
# Linux's EEVDF scheduler (6.12 and later) lets an unprivileged thread ask for its own time slice
# (sched_setattr's sched_runtime for SCHED_OTHER, 0.1-100 ms). A thread with a shorter slice than
# the one running gets an earlier deadline, so when it wakes it preempts at once instead of waiting
# for the running thread's slice or the next tick (4 ms at HZ=250). The frame loop sleeps through
# its render and wakes on a deadline: with both cores taken by busy programs, the stand-in render
# woke up to 8 ms late, past a 5-7 ms slack. A short slice asks for no more CPU, only for sooner turns.
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}  # sched_setattr, sched_getattr
_ATTR = "IIQiIQQQII"  # struct sched_attr (SCHED_ATTR_SIZE_VER1): size, policy, flags, nice, priority,
_ATTR_SIZE = struct.calcsize(_ATTR)  # runtime, deadline, period, util_min, util_max


def _sched(call: int, *args) -> bool:
    """sched_setattr (call 0) or sched_getattr (1) with `args`; whether the OS did it (False where
    it has no such call: not Linux, another architecture)."""
    calls = _SYSCALLS.get(platform.machine()) if platform.system() == "Linux" else None
    return calls is not None and ctypes.CDLL(None, use_errno=True).syscall(calls[call], *args) == 0


def _sched_attr(tid: int) -> tuple | None:
    buf = ctypes.create_string_buffer(_ATTR_SIZE)
    return struct.unpack(_ATTR, buf.raw) if _sched(1, tid, buf, _ATTR_SIZE, 0) else None


def time_slice(tid: int = 0) -> float | None:
    """[s] the scheduler's time slice of thread `tid` (0: the calling thread); None where the OS
    does not say (not Linux, a kernel before EEVDF's custom slices, a policy other than SCHED_OTHER)."""
    attr = _sched_attr(tid)
    if attr is None or attr[1] != 0 or attr[5] == 0:
        return None
    return attr[5] * 1e-9


def ask_time_slice(seconds: float, tid: int = 0) -> float | None:
    """Ask for a time slice of `seconds` for thread `tid` (0: the calling thread; 0 seconds: the
    OS default); returns the slice now in force, None where the OS has no such request."""
    attr = _sched_attr(tid)
    if attr is None or attr[1] != 0:
        return None
    wanted = list(attr)
    wanted[0], wanted[2], wanted[5] = _ATTR_SIZE, 0, max(0, round(seconds * 1e9))
    buf = ctypes.create_string_buffer(struct.pack(_ATTR, *wanted), _ATTR_SIZE)
    return time_slice(tid) if _sched(0, tid, buf, 0) else None


def _threads() -> list[int]:
    """This process's thread ids (/proc/self/task), or [0] (the calling thread) where the OS does not list them."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return [0]


@contextmanager
def short_time_slice(seconds: float):
    """Every thread of the process asks for a time slice of `seconds` in the block (0: leave them
    as they are) — numba's worker threads too, made before it: a parallel kernel waits for its
    slowest thread. Yields the calling thread's slice in force (None where the OS has none to
    give) and restores each thread's slice after. Threads and processes started inside the block
    inherit it."""
    before = {tid: time_slice(tid) for tid in _threads()} if seconds > 0 else {}
    asked = {tid: was for tid, was in before.items() if was is not None and ask_time_slice(seconds, tid) is not None}
    try:
        yield time_slice() if asked else None
    finally:
        for tid, was in asked.items():
            ask_time_slice(was, tid)  # a thread that ended meanwhile is not there to restore
