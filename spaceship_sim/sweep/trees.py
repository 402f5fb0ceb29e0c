"""`build-trees --all [DIR]`: every model's sphere trees (each prebuilt method) and SSV tree,
each one a task on a dask cluster, into the tree cache.

The cache's own writes are atomic (spheretree.tree.write_npz_atomic: a private temp file renamed
over the target), so no reader ever sees half a tree, and two workers building the same tree
each rename a whole file: the last one stays, both equal.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..config import PREBUILT_TREE_METHODS
from ..errors import InputError
from .cell import worker_name
from .cluster import COMMAND_LINE

SSV = "ssv"
# relative build time per triangle, for scheduling only: the longest tasks start first, so that no
# worker is left with a long build while the others idle (measured on generated 5k-triangle meshes:
# medial 1.1-1.8 s, octree 0.3-0.5 s, SSV 0.1 s)
BUILD_WEIGHT = {"medial": 10.0, "octree": 3.0, SSV: 1.0}


def mesh_files(folder: Path) -> list[Path]:
    """The mesh files directly in `folder` (by suffix), sorted; InputError if there is none."""
    from ..meshes import MESH_SUFFIXES

    if not folder.is_dir():
        raise InputError(COMMAND_LINE, "--all", f"{folder} is not a folder")
    found = sorted(p.resolve() for p in folder.iterdir() if p.is_file() and p.suffix.lower() in MESH_SUFFIXES)
    if not found:
        raise InputError(COMMAND_LINE, "--all", f"no mesh files ({', '.join(MESH_SUFFIXES)}) in {folder}")
    return found


def build_jobs(meshes: list[Path], methods: list[str], branching: int, depth: int, seed: int,
               cache_dir: str | None, force: bool) -> list[dict]:
    """One job per (mesh, method): the keyword arguments of build_one."""
    return [dict(path=str(p), method=m, branching=branching, depth=depth, seed=seed, cache_dir=cache_dir, force=force)
            for p in meshes for m in methods]


def build_one(path: str, method: str, branching: int, depth: int, seed: int, cache_dir: str | None,
              force: bool) -> dict:
    """Load (or build and cache) one tree of the mesh at `path`; returns what was done, not the
    tree (its arrays stay in the cache)."""
    from ..meshes import load_mesh
    from ..spheretree.build import load_or_build
    from ..ssv.tree import load_or_build_ssv

    mesh = load_mesh(path)
    t0 = time.perf_counter()
    if method == SSV:
        tree = load_or_build_ssv(mesh, cache_dir=cache_dir, force=force)
    else:
        tree = load_or_build(mesh, method=method, branching=branching, depth=depth, seed=seed,
                             cache_dir=cache_dir, force=force)
    return {"model": mesh.name, "method": method, "nodes": int(tree.n_nodes), "triangles": int(len(mesh.faces)),
            "seconds": time.perf_counter() - t0, "worker": worker_name()}


def build_all(client, jobs: list[dict], progress: bool = True, workers=None) -> list[dict]:
    """Run the jobs as tasks on `client`'s cluster (or here, one after another, when client is
    None); returns their results in the jobs' order. A failing job raises after the others ended.
    workers: addresses the tasks are held to."""
    from tqdm import tqdm

    if client is None:
        return [build_one(**j) for j in tqdm(jobs, desc="trees", unit="tree", disable=not progress)]
    from distributed import as_completed

    futures = [client.submit(build_one, **j, pure=False, workers=workers, priority=_expected_cost(j)) for j in jobs]
    try:
        for _ in tqdm(as_completed(futures), total=len(futures), desc="trees", unit="tree", disable=not progress):
            pass
        return client.gather(futures)
    finally:
        client.cancel([f for f in futures if not f.done()])


def _expected_cost(job: dict) -> int:
    """A task priority: larger for builds expected to take longer (method weight × file size)."""
    return int(BUILD_WEIGHT.get(job["method"], 1.0) * Path(job["path"]).stat().st_size // 1024)


def methods_of(method: str) -> list[str]:
    """build-trees' --method as the trees --all builds: "both" is every prebuilt method and SSV."""
    return [*PREBUILT_TREE_METHODS, SSV] if method == "both" else [method]


def run_all(args) -> int:
    """build-trees --all: the folder's models, every method, on the cluster."""
    from .cluster import open_client

    if args.meshes:
        raise InputError(COMMAND_LINE, "--all", f"builds a whole folder; not with named meshes ({args.meshes[0]})")
    for flag in ("picture", "report", "verify"):
        if getattr(args, flag, None):
            raise InputError(COMMAND_LINE, f"--{flag}", "not with --all")
    from ..meshes import assets_dir
    from ..spheretree.params import _check_params

    for m in set(methods_of(args.method)) - {SSV}:  # every argument checked before any task starts
        try:
            _check_params(m, args.branching, args.depth, args.seed, source=COMMAND_LINE)
        except InputError as e:
            raise InputError(COMMAND_LINE, f"--{e.key}", e.problem) from None

    folder = Path(args.all) if args.all else assets_dir()
    jobs = build_jobs(mesh_files(folder), methods_of(args.method), args.branching, args.depth, args.seed,
                      args.cache_dir, args.force)
    with open_client(args.scheduler, args.workers) as client:
        done = build_all(client, jobs)
    for r in done:
        print(f"{r['model']:>16s} {r['method']:6s} {r['nodes']:7d} nodes ({r['triangles']} triangles) "
              f"{r['seconds']:7.2f} s on worker {r['worker']}")
    print(f"{len(done)} trees of {len({r['model'] for r in done})} models in the cache")
    return 0
