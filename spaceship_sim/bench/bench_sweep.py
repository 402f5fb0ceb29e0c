"""`spaceship-sim bench sweep`: what dask's workers buy, serial against parallel in the same run.

On one local cluster (--workers single-threaded processes, each warmed first: numba kernels loaded
and trees read, so that neither pass pays the start-up):
1. cells: the deterministic cells of --spec run one after another on one worker (serial), then
   spread over every worker (parallel); the two tables must be equal.
2. trees: --models generated meshes of about --triangles triangles each (seeded, written to a
   scratch folder), every tree method and SSV, built into a fresh cache on one worker, then into
   another spread over every worker; the caches must hold the same trees.
Each part prints both wall times and serial ÷ parallel.
"""
from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ..cli.args import COMMAND_LINE, integer
from ..config import CONFIGS_DIR
from ..errors import InputError

DEFAULT_SPEC = CONFIGS_DIR / "sweeps" / "bench.toml"
NOT_TREE = ("build_seconds", "checksum")  # what a cached tree file holds beside the tree


def register(sub) -> None:
    from ..sweep.cluster import add_cluster_args

    p = sub.add_parser("sweep", help="sweep cells and build-trees --all on dask workers: serial vs parallel, same run")
    p.add_argument("--spec", default=str(DEFAULT_SPEC),
                   help="sweep spec of deterministic cells (default: configs/sweeps/bench.toml, 16 cells)")
    p.add_argument("--models", type=integer(0, 100), default=5, help="generated models of the tree part (0: none; "
                                                                     "default: %(default)s)")
    p.add_argument("--triangles", type=integer(80, 2_000_000), default=5000,
                   help="triangles of each generated model, about (default: %(default)s)")
    p.add_argument("--skip-cells", action="store_true", help="only the tree part")
    add_cluster_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..sweep.cell import code_version
    from ..sweep.cluster import open_client
    from ..sweep.spec import load_spec

    if args.scheduler is not None:
        raise InputError(COMMAND_LINE, "--scheduler", "the bench measures a local cluster's workers (--workers)")
    spec = None if args.skip_cells else load_spec(args.spec, code_version())
    if spec is not None and any(c.timing for c in spec.cells):
        raise InputError(args.spec, "axes.clock", "the bench compares deterministic cells: use clock = \"tick\"")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as scratch, \
            open_client(None, args.workers or 2) as client:
        workers = sorted(client.scheduler_info()["workers"])
        if spec is not None:
            compare_cells(client, spec, workers)
        if args.models:
            compare_trees(client, Path(scratch), args.models, args.triangles, workers)
    return 0


def compare_cells(client, spec, workers: list[str]) -> None:
    from ..sweep.runner import computed, run_sweep

    warm = [dataclasses.replace(t, frames=2, warmup=0) for t in {c.task.config.source: c.task for c in spec.cells}.values()]
    _warm(client, lambda: [_run_task(t) for t in warm])
    serial, t_serial = _timed(lambda: run_sweep(spec.cells, None, client, progress=False, workers=workers[:1]))
    parallel, t_parallel = _timed(lambda: run_sweep(spec.cells, None, client, progress=False))
    equal = [computed(r) for r in serial] == [computed(r) for r in parallel]
    failed = sum(r["status"] != "ok" for r in parallel + serial)
    _print_ratio(f"{len(spec.cells)} cells of {spec.path}", t_serial, t_parallel, len(workers),
                 f"tables equal: {'yes' if equal else 'NO'}" + (f", {failed} failed cells" if failed else ""))


def compare_trees(client, scratch: Path, n_models: int, triangles: int, workers: list[str]) -> None:
    from ..sweep.trees import build_all, build_jobs, methods_of

    meshes = write_models(scratch / "models", n_models, triangles)
    small = write_models(scratch / "warm", 1, 80)
    caches = {k: scratch / k for k in ("warm", "serial", "parallel")}

    def jobs(paths, cache):
        return build_jobs(paths, methods_of("both"), 8, 3, 0, str(cache), False)

    # each worker builds into a cache of its own: every tree is built there, none loaded
    _warm(client, lambda: build_all(None, jobs(small, caches["warm"] / str(os.getpid())), progress=False))
    _, t_serial = _timed(lambda: build_all(client, jobs(meshes, caches["serial"]), progress=False, workers=workers[:1]))
    _, t_parallel = _timed(lambda: build_all(client, jobs(meshes, caches["parallel"]), progress=False))
    same = _same_trees(caches["serial"], caches["parallel"])
    _print_ratio(f"{n_models} models x {len(methods_of('both'))} trees, {triangles} triangles each", t_serial,
                 t_parallel, len(workers), f"same trees: {'yes' if same else 'NO'}")


def _warm(client, call) -> None:
    """Run `call` on every worker at once: kernels compiled or loaded, caches read."""
    client.run(call)


def _run_task(task) -> None:
    from ..sweep.cell import run_cell
    run_cell(task)


def _timed(call):
    t0 = time.perf_counter()
    out = call()
    return out, time.perf_counter() - t0


def _print_ratio(what: str, serial: float, parallel: float, workers: int, check: str) -> None:
    print(f"{what}: serial (one worker) {serial:.2f} s, parallel ({workers} workers) {parallel:.2f} s, "
          f"serial / parallel {serial / parallel:.2f}x; {check}", flush=True)


def write_models(folder: Path, n: int, triangles: int) -> list[Path]:
    """n closed meshes of about `triangles` triangles: icospheres with seeded radial bumps,
    stretched differently (model k's seed is k), as PLY files in `folder`."""
    import trimesh

    folder.mkdir(parents=True, exist_ok=True)
    subdivisions = max(1, round(math.log(max(triangles, 80) / 20, 4)))
    paths = []
    for k in range(n):
        rng = np.random.default_rng(k)
        m = trimesh.creation.icosphere(subdivisions=subdivisions)
        bumps = 1.0 + 0.15 * np.sin(m.vertices @ rng.normal(size=(3, 4)) * 3).mean(axis=1)
        m.vertices = m.vertices * bumps[:, None] * (1.0 + k * np.array([0.5, 0.2, 0.1]))
        paths.append(folder / f"model{k}.ply")
        m.export(paths[-1])
    return paths


def _same_trees(a: Path, b: Path) -> bool:
    """Whether two tree caches hold the same files with the same trees (the build time, and the
    file checksum that covers it, aside)."""
    names = sorted(p.name for p in a.glob("*.npz"))
    if not names or names != sorted(p.name for p in b.glob("*.npz")):
        return False
    for name in names:
        with np.load(a / name) as x, np.load(b / name) as y:
            keys = sorted(set(x.files) - set(NOT_TREE))
            if keys != sorted(set(y.files) - set(NOT_TREE)) or not all(np.array_equal(x[k], y[k]) for k in keys):
                return False
    return True
