"""`spaceship-sim bench ocst`: on-collide sphere trees (narrowphase/ocst.py) against prebuilt ones.

1. First frame on a big mesh: a torus of --triangles triangles (generated here, written to a
   scratch assets folder, nothing committed) in a small scenario with tree_method "ocst": the
   time from loading the scenario to the end of the first simulated frame, against the time the
   prebuilt octree tree of the same mesh (same depth) takes to build — what a prebuilt method
   must wait for before that first frame. The ratio is printed.
2. Memory over a run: the lamps scenario (configs/lamps.toml) with tree_method "ocst" for
   --frames frames under the stand-in render load; the resident spheres after every frame
   against the full octree tree's spheres (every model's). Writes ocst_resident.csv and
   ocst_resident.png (resident / full per frame) into --out and prints the largest and the
   median ratio.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ..args import MAX_FRAMES, integer, milliseconds, output_folder
from ..clock import WALL
from ..config import load_config, shipped_config


def register(sub) -> None:
    p = sub.add_parser("ocst", help="on-collide sphere trees: first frame on a big mesh, resident spheres over "
                                    "a lamps run")
    p.add_argument("--triangles", type=integer(1_000, 2_000_000), default=200_000,
                   help="triangles of the generated torus (rounded to 2 x sections^2 / 2)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=1000, help="frames of the lamps run")
    p.add_argument("--render-ms", type=milliseconds, default=31.0, help="stand-in render time per frame [ms]")
    p.add_argument("--config", default=shipped_config("lamps.toml"), help="scenario of the memory run")
    p.add_argument("--out", type=output_folder, default="runs/ocst", help="folder for the csv and the plot")
    p.add_argument("--part", choices=("first-frame", "memory", "both"), default="both",
                   help="first frame on the big mesh, resident spheres over the lamps run, or both")
    p.add_argument("--skip-prebuilt", action="store_true",
                   help="leave out the prebuilt octree build of the big mesh (minutes)")
    p.set_defaults(func=run)


def run(args, clock=WALL) -> int:
    cfg = load_config(args.config)  # checked before any work
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.part != "memory":
        first_frame(args.triangles, args.skip_prebuilt)
    if args.part != "first-frame":
        resident_over_run(cfg, args.frames, args.render_ms / 1e3, out, clock)
    return 0


def big_torus(triangles: int):
    """A closed torus of about `triangles` triangles, major radius 4 m, tube radius 1.2 m."""
    import trimesh

    minor = max(3, int(round(np.sqrt(triangles / 2 / 2.5))))
    major = max(3, int(round(triangles / 2 / minor)))
    return trimesh.creation.torus(major_radius=4.0, minor_radius=1.2, major_sections=major, minor_sections=minor)


def first_frame(triangles: int, skip_prebuilt: bool) -> None:
    from ..config import config_from_dict
    from ..meshes import ASSETS_ENV, load_model
    from ..world import World

    torus = big_torus(triangles)
    with tempfile.TemporaryDirectory() as assets:
        torus.export(os.path.join(assets, "bigtorus.ply"))
        old = os.environ.get(ASSETS_ENV)
        os.environ[ASSETS_ENV] = assets
        try:
            raw = {"arena": {"size": 200.0}, "ships": {"count": 4, "user_model": "bigtorus", "models": ["bigtorus"]},
                   "collision": {"tree_method": "ocst"}}
            cfg = config_from_dict(raw, "bench-ocst")
            t0 = time.perf_counter()
            world = World.from_config(cfg, notify=None)
            world.step()
            ocst_s = time.perf_counter() - t0
            mesh = load_model("bigtorus")
        finally:
            os.environ.pop(ASSETS_ENV) if old is None else os.environ.__setitem__(ASSETS_ENV, old)
    print(f"first frame, {len(mesh.faces):,}-triangle torus, depth {cfg.collision.tree_depth}:")
    print(f"  ocst: scenario loaded to first frame simulated  {ocst_s:8.2f} s  "
          f"({world.bank.resident_nodes} spheres resident)")
    if skip_prebuilt:
        return
    from ..spheretree.build import build_tree

    t0 = time.perf_counter()
    tree = build_tree(mesh.vertices, mesh.faces, method="octree", depth=cfg.collision.tree_depth, closed=mesh.closed,
                      progress=True)
    build_s = time.perf_counter() - t0
    print(f"  prebuilt octree: tree build alone               {build_s:8.2f} s  ({tree.n_nodes:,} spheres)")
    print(f"  ratio prebuilt wait / ocst first frame          {build_s / ocst_s:8.1f}x")


def full_tree_nodes(models, depth: int) -> int:
    """Spheres of every model's complete octree tree (the geometry OCST builds parts of)."""
    from ..spheretree.geometry import MeshQuery
    from ..spheretree.octree import octree_levels

    return sum(sum(len(r) for _, r, _ in octree_levels(MeshQuery(m.vertices, m.faces, m.closed), depth))
               for m in models)


def resident_over_run(cfg, frames: int, render_s: float, out: Path, clock) -> None:
    from tqdm import tqdm

    from . import report
    from ..world import World

    cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, tree_method="ocst"))
    world = World.from_config(cfg, clock=clock, notify=None)
    full = full_tree_nodes(world.models, cfg.collision.tree_depth)
    rows, levels = [], np.zeros(world.max_level + 1, np.int64)
    for f in tqdm(range(frames), desc="lamps, ocst", unit="frame"):
        stats = world.step()
        world.end_frame(clock.spend(render_s))
        if stats.level_hist:
            levels += stats.level_hist
        rows.append({"frame": f, "resident": world.bank.resident_nodes, "full": full,
                     "colliding_pairs": stats.colliding_pairs, "frame_ms": 1e3 * stats.frame_time})
    report.write_csv(out / "ocst_resident.csv", rows)
    ratio = np.array([r["resident"] for r in rows]) / full
    plot_resident(out / "ocst_resident.png", ratio, np.array([r["colliding_pairs"] for r in rows]), cfg, full,
                  render_s)
    print(f"lamps, {frames} frames, ocst depth {cfg.collision.tree_depth}: full trees {full:,} spheres; resident "
          f"max {ratio.max():.1%}, median {np.median(ratio):.1%}, final {ratio[-1]:.1%} "
          f"(groups built {world.bank.built_groups}, evicted {world.bank.evicted_groups}; colliding pair-samples "
          f"per level reached 0..exact: {np.asarray(levels).tolist()})")
    print(f"wrote {out / 'ocst_resident.csv'} and {out / 'ocst_resident.png'}")


def plot_resident(path: Path, ratio, colliding, cfg, full: int, render_s: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5), dpi=110)
    ax.plot(100 * ratio, color="tab:blue", label="resident / full tree")
    ax.axhline(25, color="tab:red", ls="--", lw=1, label="25%")
    ax.set_xlabel("frame")
    ax.set_ylabel("resident spheres [% of full]")
    ax.set_ylim(0, max(30, 100 * ratio.max() * 1.15))
    ax2 = ax.twinx()
    ax2.plot(colliding, color="tab:gray", lw=0.6, alpha=0.6)
    ax2.set_ylabel("colliding pairs per frame", color="tab:gray")
    ax.set_title(f"OCST on {Path(cfg.source).name}, stand-in render {1e3 * render_s:g} ms: full trees {full:,} "
                 f"spheres, evict after {cfg.collision.ocst_evict_after:g} s", fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
