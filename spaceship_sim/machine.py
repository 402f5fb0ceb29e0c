"""What the machine was doing while something was timed: so a reader of a record can tell a slow
algorithm from a busy machine. Load average (Unix), involuntary context switches of this process
(the times the OS took its core away: each one may stall a frame), the CPU and its cores."""
from __future__ import annotations

import os
import platform
import resource
from pathlib import Path


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

    def preempted(self) -> int:
        """Involuntary context switches since the watch started."""
        return involuntary_switches() - self.start_switches

    def figures(self) -> dict:
        return {"cores": os.cpu_count(), "load_average_start": self.start_load, "load_average_end": load_average(),
                "preempted": self.preempted()}
