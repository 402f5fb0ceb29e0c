"""The dask cluster a sweep or a tree build runs on: a local one started here (the default), or an
existing one named by --scheduler (an address or a scheduler file).

Cells whose figures are wall-clock timings ask for the worker resource `timing`; on the local
cluster exactly one worker offers it, so that timing cells run one at a time on this machine while
deterministic cells run on every worker. On a cluster of several machines, start one worker per
machine with `--resources timing=1` (docs/SWEEPS.md).
"""
from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from ..errors import InputError

COMMAND_LINE = "command line"  # the `file` of an InputError about a flag, as the command line's own
TIMING = "timing"  # the worker resource a timing cell holds


def add_cluster_args(p) -> None:
    """--scheduler and --workers, the same for every command that runs tasks on a cluster."""
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing dask cluster: its scheduler's address (tcp://host:8786) or scheduler "
                        "file (default: start a local cluster)")
    p.add_argument("--workers", type=_workers, default=None,
                   help=f"worker processes of the local cluster (default: the cores, {os.cpu_count()})")


def _workers(text: str) -> int:
    import argparse
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"must be in 1..256, got {n}")
    return n


def has_dashboard() -> bool:
    """Whether dask can serve its dashboard here (it needs bokeh)."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def open_client(scheduler: str | None = None, workers: int | None = None, timing: bool = False, quiet: bool = False):
    """A dask Client: on the cluster `scheduler` names, or on a local cluster of `workers` single-
    threaded processes started here and closed on leaving. timing: the work includes timing cells,
    so some worker must offer the `timing` resource. Prints the dashboard's address (unless quiet)."""
    from distributed import Client

    if workers is not None and scheduler is not None:
        raise InputError(COMMAND_LINE, "--workers", "sizes the local cluster; not with --scheduler")
    with contextlib.ExitStack() as stack:
        if scheduler is None:
            n = workers or os.cpu_count() or 1
            client = stack.enter_context(Client(stack.enter_context(local_cluster(n))))
            client.wait_for_workers(n, timeout=120)
        else:
            client = stack.enter_context(_connect(scheduler))
        if timing:
            require_timing_worker(client, scheduler)
        if not quiet:
            print(f"dask: {len(client.scheduler_info()['workers'])} workers at {client.scheduler.address}"
                  + (f", dashboard {client.dashboard_link}" if has_dashboard() else
                     " (pip install bokeh for the dashboard)"), flush=True)
        yield client


@contextlib.contextmanager
def local_cluster(n: int):
    """A LocalCluster of n single-threaded worker processes; the first offers `timing`=1. Each
    worker's numba gets its share of the cores, so that n workers do not oversubscribe them."""
    from distributed import LocalCluster

    # numba reads its thread count once, at import, which a worker process does before the nanny's
    # `env` applies (and the environment outranks dask's pre-spawn config): the workers must be
    # spawned from an environment that holds it. Restored on leaving.
    saved = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // n))
    try:
        cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)  # any free port
        try:
            for i in range(n):
                (name, spec), = cluster.new_worker_spec().items()
                if i == 0:
                    spec = {**spec, "options": {**spec["options"], "resources": {TIMING: 1}}}
                cluster.worker_spec[name] = spec
            cluster.scale(n)
            yield cluster
        finally:
            cluster.close()
    finally:
        if saved is None:
            os.environ.pop("NUMBA_NUM_THREADS", None)
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved


def _connect(scheduler: str):
    from distributed import Client

    try:
        if Path(scheduler).is_file():
            return Client(scheduler_file=scheduler, timeout="10s")
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(COMMAND_LINE, "--scheduler", f"cannot reach {scheduler} ({e})") from None


def require_timing_worker(client, scheduler: str | None) -> None:
    """Timing cells wait for a worker with the `timing` resource: refuse to start without one."""
    info = client.scheduler_info()["workers"].values()
    if not any(w.get("resources", {}).get(TIMING) for w in info):
        raise InputError(COMMAND_LINE, "--scheduler", f"no worker of {scheduler} offers the '{TIMING}' resource that "
                         "timing cells need: start one worker per machine with --resources timing=1")
