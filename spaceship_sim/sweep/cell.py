"""One sweep cell: a headless run (sim.runs.run_frames) on a worker, reduced to the figures of
its summary and the machine it ran on."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import socket
import time
from pathlib import Path

from ..clock import CLOCKS, TickClock
from ..config import Config

PACKAGE = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class CellTask:
    """What a worker needs to run a cell: the effective config, frames (the first `warmup` left out
    of the figures), the stand-in render [s], the clock's name ("tick" or a clock.CLOCKS name), the
    TickClock's tick [s] and the exact strategy answering every pair (None: the config's detection)."""

    config: Config
    frames: int
    warmup: int
    render_s: float
    clock: str
    tick: float
    exact_only: str | None


def _quantile(section: str, q: str):
    return lambda s: (s[section] or {}).get(q)


def _accuracy(name: str, q: str | None = None):
    def get(s):
        v = s["accuracy"][name]
        return v if q is None or v is None else v[q]
    return get


# figure name -> how it is read from the run's summary (sim.frame_log.RunSummary, FrameLog.commit)
MEASURES = {
    "within_target": lambda s: s["fraction_within_target"],
    "frames_within_target": lambda s: s["frames_within_target"],
    "render_late": lambda s: s["frames_over_target_render_late"] / s["frames_summarized"],
    "frame_ms_median": _quantile("frame_time_ms", "median"),
    "frame_ms_p99": _quantile("frame_time_ms", "p99"),
    "sim_ms_median": _quantile("t_sim_ms", "median"),
    "sim_ms_p99": _quantile("t_sim_ms", "p99"),
    "detection_ms_median": _quantile("t_narrow_ms", "median"),
    "colliding_verdicts": _accuracy("colliding_verdicts"),
    "exact_fraction": _accuracy("exact_fraction"),
    "separation_bound_median_m": _accuracy("separation_bound_m", "median"),
    "separation_bound_p90_m": _accuracy("separation_bound_m", "p90"),
    "separation_bound_p99_m": _accuracy("separation_bound_m", "p99"),
    "separation_bound_fraction_median": _accuracy("separation_bound_fraction", "median"),
    "interval_width_median_m": lambda s: (s["interval_width_m"] or {}).get("median"),
    "interval_width_p90_m": lambda s: (s["interval_width_m"] or {}).get("p90"),
    "level_histogram": lambda s: ",".join(map(str, s["level_histogram"])),
    "state_hash": lambda s: s["state_hash"],
}
MACHINE = ("host", "cpu", "load_1m", "numba_threads", "worker")  # where a cell ran, beside its figures


class CodeVersionError(RuntimeError):
    """A worker runs other code (or other assets) than the sweep was keyed with."""


@functools.cache
def code_version() -> str:
    """SHA-256 of the package's Python files and the shipped models: a cell's figures are
    stored under it, and every worker must run the same. Read once per process, near when its
    code was imported: a file changed on disk later is not the code this process runs."""
    from ..meshes import MESH_SUFFIXES, assets_dir

    h = hashlib.sha256()
    models = sorted(p for p in assets_dir().glob("*") if p.suffix in MESH_SUFFIXES)
    for name, p in [(str(p.relative_to(PACKAGE)), p) for p in sorted(PACKAGE.rglob("*.py"))] + \
                   [(f"assets/{p.name}", p) for p in models]:
        h.update(name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def run_cell(task: CellTask, expected_version: str | None = None) -> dict:
    """Run the cell; returns {"figures": every MEASURES figure, "seconds": its wall time, and the
    MACHINE fields}. expected_version: refuse to run on other code (CodeVersionError)."""
    from ..sim.frame_log import FrameLog
    from ..sim.runs import run_frames, tally_intervals

    if expected_version is not None and (here := code_version()) != expected_version:
        raise CodeVersionError(f"worker {worker_name()} on {socket.gethostname()} runs code version {here[:12]}, the "
                               f"sweep {expected_version[:12]}: install the same package and assets on every worker")
    clock = TickClock(task.tick) if task.clock == "tick" else CLOCKS[task.clock]
    where = machine()
    t0 = time.perf_counter()
    log, world = run_frames(task.config, task.frames, task.render_s, False,
                            lambda w: FrameLog(None, task.frames, task.warmup, w.max_level, task.render_s),
                            progress=False, clock=clock, exact_only=task.exact_only,
                            on_frame=tally_intervals if task.config.collision.time_critical else None)
    summary = log.commit(title="", state_hash=world.state_hash())
    figures = {name: _plain(get(summary)) for name, get in MEASURES.items()}
    return {"figures": figures, "seconds": time.perf_counter() - t0, **where}


def _plain(v):
    """A figure as JSON keeps it (NaN as None: a run with no colliding pair has no bound)."""
    return None if isinstance(v, float) and math.isnan(v) else v


def machine() -> dict:
    """Where and under what load a cell runs: host, CPU model, 1-minute load average, numba's threads,
    the dask worker (or "local")."""
    import numba

    from ..machine import cpu_model, load_average

    return {"host": socket.gethostname(), "cpu": cpu_model(), "load_1m": (load_average() or [None])[0],
            "numba_threads": numba.get_num_threads(), "worker": worker_name()}


def worker_name() -> str:
    """The dask worker running this (its name), or "local" outside one."""
    try:
        from distributed import get_worker
        return str(get_worker().name)
    except (ImportError, ValueError):
        return "local"
