"""Busy processes that load the machine while a benchmark runs (`bench hubbard --cpu-load N`)."""
from __future__ import annotations

import contextlib
import subprocess
import sys

from ..machine import ask_time_slice

# spins until stopped, and stops by itself when its parent is gone (a killed bench leaves none behind)
BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    for _ in range(100000):\n        pass\n"


@contextlib.contextmanager
def cpu_load(n: int):
    """Start n busy Python processes; stop them when the block ends, however it ends (an error,
    Ctrl-C). Yields the list of subprocess.Popen objects."""
    procs = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL))
            ask_time_slice(0.0, procs[-1].pid)  # another program's: the OS default, not a slice it inherited
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def load_levels(text: str) -> list[int]:
    """A --cpu-load list: busy process counts 0..64, comma-separated."""
    from ..cli.args import COMMAND_LINE
    from ..errors import InputError
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 0 or max(values) > 64:
        raise InputError(COMMAND_LINE, "--cpu-load", f"busy process counts 0..64, comma-separated, got {text!r}")
    return values
