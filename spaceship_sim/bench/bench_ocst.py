"""`spaceship-sim bench ocst`: on-collide sphere trees (narrowphase/ocst.py) against prebuilt ones.

1. First frame on a big mesh: a torus of --triangles triangles (generated here, written to a
   scratch assets folder, nothing committed) in a small scenario with tree_method "ocst": the
   time from loading the scenario to the end of the first simulated frame, against the time the
   prebuilt octree tree of the same mesh (same depth) takes to build — what a prebuilt method
   must wait for before that first frame. The ratio is printed, and what a first contact of two
   such ships then costs (the nodes it builds), grazing and deep.
2. Memory over a run: the lamps scenario (configs/lamps.toml) with tree_method "ocst" for
   --frames frames under each stand-in render load of --render-ms (less render time, more
   detection budget, deeper refinement), once per --evict-after value, each load beside the
   prebuilt octree's run under the same load (the reference); the resident spheres after every
   frame against the full octree tree's spheres (every model's: the lamps share one), and why
   they are held (OcstBank.resident_reasons). Writes ocst_resident.csv and ocst_resident.png
   (the most spheres resident at once in each frame / full, a curve per load and eviction time)
   into --out and prints the largest, mean and median ratio, the spheres built, rebuilt (their
   cell built before and evicted since) and evicted, the wall time spent building them per frame
   (OcstBank.build_seconds), the frame times and the levels reached, then the footprint section:
   per load, resident % of the full tree, the mean share of each reason, frames within target
   for ocst and the reference, and whether the 25% goal is met. The goal is judged on the
   maximum: the most spheres resident at any moment of the run (OcstBank.take_peak, per frame).
--depth sets the trees' depth for both parts (default: the config's); --max-nodes and --max-share
the cap on resident spheres of the memory run's ocst runs (the least recently used evicted above
it; default the config's ocst_max_nodes and ocst_max_share).
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ..cli.args import MAX_FRAMES, integer, milliseconds_list, number, output_folder
from ..clock import WALL
from ..config import load_config, shipped_config


def register(sub) -> None:
    p = sub.add_parser("ocst", help="on-collide sphere trees: first frame on a big mesh, resident spheres over "
                                    "a lamps run")
    p.add_argument("--triangles", type=integer(1_000, 2_000_000), default=200_000,
                   help="triangles of the generated torus (rounded to 2 x sections^2 / 2)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=1000, help="frames of the lamps run")
    p.add_argument("--render-ms", type=milliseconds_list, default="31",
                   help="stand-in render times per frame [ms, comma-separated]: the lamps run once per load, "
                        "each beside its own prebuilt-tree reference")
    p.add_argument("--depth", type=integer(1, 6), default=None,
                   help="tree levels below the root for both runs (default: the config's collision.tree_depth)")
    p.add_argument("--config", default=shipped_config("lamps.toml"), help="scenario of the memory run")
    p.add_argument("--out", type=output_folder, default="runs/ocst", help="folder for the csv and the plot")
    p.add_argument("--evict-after", default="",
                   help="eviction times to compare in the lamps run [s, comma-separated] (default: the config's)")
    p.add_argument("--max-nodes", type=integer(16, 10_000_000), default=None,
                   help="cap on resident spheres in the lamps run's ocst runs (default: the config's "
                        "collision.ocst_max_nodes)")
    p.add_argument("--max-share", type=number(0.0, 1.0, lo_open=True), default=None,
                   help="cap on resident spheres in the lamps run's ocst runs as a share of the full tree "
                        "(0 < share <= 1, 1: none; default: the config's collision.ocst_max_share)")
    p.add_argument("--part", choices=("first-frame", "memory", "both"), default="both",
                   help="first frame on the big mesh, resident spheres over the lamps run, or both")
    p.add_argument("--skip-prebuilt", action="store_true",
                   help="leave out the prebuilt octree build of the big mesh (minutes)")
    p.set_defaults(func=run)


def run(args, clock=WALL) -> int:
    cfg = with_depth(load_config(args.config), args.depth)  # checked before any work
    evict = parse_seconds(args.evict_after)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.part != "memory":
        first_frame(args.triangles, args.skip_prebuilt, cfg.collision.tree_depth)
    if args.part != "first-frame":
        caps = {k: v for k, v in (("ocst_max_nodes", args.max_nodes), ("ocst_max_share", args.max_share))
                if v is not None}
        cfg = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, **caps))
        resident_over_run(cfg, args.frames, [ms / 1e3 for ms in args.render_ms], evict, out, clock)
    return 0


def with_depth(cfg, depth):
    """cfg with collision.tree_depth = depth (None: as it is), checked as a scenario file's would be."""
    if depth is None:
        return cfg
    from ..cli.args import COMMAND_LINE
    from ..config import ConfigError, check_config
    from ..errors import InputError

    try:
        return check_config(dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, tree_depth=depth)),
                            COMMAND_LINE)
    except ConfigError as e:  # the flag's depth, not the file's
        raise InputError(COMMAND_LINE, "--depth", f"{e.key} {e.problem}") from None


def parse_seconds(text: str) -> list[float]:
    """'0.5,2' -> [0.5, 2.0]; each > 0 and finite, else an InputError naming --evict-after."""
    from ..errors import InputError

    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            value = float(part)
        except ValueError:
            raise InputError("command line", "--evict-after", f"expected numbers, got {part!r}") from None
        if not 0 < value < 1e6:
            raise InputError("command line", "--evict-after", f"each must be in (0, 1e6) s, got {part}")
        out.append(value)
    return out


def big_torus(triangles: int):
    """A closed torus of about `triangles` triangles, major radius 4 m, tube radius 1.2 m."""
    import trimesh

    minor = max(3, int(round(np.sqrt(triangles / 2 / 2.5))))
    major = max(3, int(round(triangles / 2 / minor)))
    return trimesh.creation.torus(major_radius=4.0, minor_radius=1.2, major_sections=major, minor_sections=minor)


def first_frame(triangles: int, skip_prebuilt: bool, depth: int) -> None:
    from ..config import config_from_dict
    from ..meshes import ASSETS_ENV, load_model
    from ..sim.world import World

    torus = big_torus(triangles)
    with tempfile.TemporaryDirectory() as assets:
        torus.export(os.path.join(assets, "bigtorus.ply"))
        old = os.environ.get(ASSETS_ENV)
        os.environ[ASSETS_ENV] = assets
        try:
            raw = {"arena": {"size": 200.0}, "ships": {"count": 4, "user_model": "bigtorus", "models": ["bigtorus"]},
                   "collision": {"tree_method": "ocst", "tree_depth": depth}}
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
    first_contact((world.bank,) * 3, mesh)
    if skip_prebuilt:
        return
    from ..spheretree.build import build_tree

    t0 = time.perf_counter()
    tree = build_tree(mesh.vertices, mesh.faces, method="octree", depth=cfg.collision.tree_depth, closed=mesh.closed,
                      progress=True)
    build_s = time.perf_counter() - t0
    print(f"  prebuilt octree: tree build alone               {build_s:8.2f} s  ({tree.n_nodes:,} spheres)")
    print(f"  ratio prebuilt wait / ocst first frame          {build_s / ocst_s:8.1f}x")


def first_contact(banks, mesh, full: int = 0) -> None:
    """What the first contact of two such ships costs, grazing (rims 2.5% of the radius deep) on
    banks[0], deep (centres 1.5 radii apart) on banks[1] (the same bank twice: what the deep
    contact adds), and deep again on banks[2] wanting one intersecting triangle pair only, in one
    plane: min_level 1 forced (the root's children built) under an expired deadline, then the rest of
    the way to the triangles. With `full` (the full tree's spheres), the resident spheres are given as
    its share too."""
    from ..narrowphase import refine_frame

    contacts = (("grazing contact", 1.975, True), ("deep contact", 1.5, True), ("deep contact, first only", 1.5, False))
    for bank, (kind, apart, all_contacts) in zip(banks, contacts):
        T = np.tile(np.eye(4), (2, 1, 1))
        T[1, 0, 3] = apart * mesh.bounding_radius
        args = (bank, np.zeros(2, np.int64), T, np.array([[0, 1]]))
        for what, opts in (("level 1 (forced, deadline passed)", dict(deadline=0.0, min_level=1)),
                           ("then to the triangles (no deadline)", dict(deadline=np.inf, min_level=0))):
            t0 = time.perf_counter()
            r = refine_frame(*args, **opts, all_contacts=all_contacts)
            print(f"  ocst {kind}, {what}: {time.perf_counter() - t0:6.2f} s, level {int(r.level[0])}, "
                  f"colliding {bool(r.colliding[0])}, {bank.resident_nodes} spheres resident"
                  + (f" ({bank.resident_nodes / full:.0%} of the full tree)" if full else ""))


def full_tree_nodes(models, depth: int) -> int:
    """Spheres of every model's complete octree tree (the geometry OCST builds parts of)."""
    from ..narrowphase.ocst import full_tree_nodes as of_one

    return sum(of_one(m, depth) for m in models)


REASONS = ("in_use", "kept", "never_used")  # OcstBank.resident_reasons beside the roots


def resident_over_run(cfg, frames: int, loads: list[float], evict_after: list[float], out: Path, clock) -> None:
    """The lamps run per stand-in render load [s]: the prebuilt octree's run (the reference, in this
    process), then ocst's once per eviction time [s]; one csv row per frame and ocst run, one plot,
    and the footprint section: resident spheres against the full tree, per load, with why they
    are held."""
    from ..sim import frame_log as report

    rows, curves, footprint = [], {}, []
    for render_s in loads:
        run_rows, summaries = _one_load(cfg, frames, render_s, evict_after or [cfg.collision.ocst_evict_after], clock)
        rows += run_rows
        footprint += summaries
        curves.update({(s["render_ms"], s["evict_after_s"]): s["ratio"] for s in summaries})
    full = footprint[0]["full"]
    print_footprint(footprint, full, frames, cfg.collision.tree_depth)
    one_pair(cfg)
    report.write_csv(out / "ocst_resident.csv", rows)
    plot_resident(out / "ocst_resident.png", curves, cfg, full)
    print(f"wrote {out / 'ocst_resident.csv'} and {out / 'ocst_resident.png'}")


def _one_load(cfg, frames: int, render_s: float, evict_after: list[float], clock):
    """One render load: the prebuilt reference run, then an ocst run per eviction time.
    Returns (csv rows, one footprint summary per ocst run)."""
    head = f"lamps, {frames} frames, render {1e3 * render_s:g} ms, depth {cfg.collision.tree_depth}"
    ref = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, tree_method="octree"))
    ref_rows, _ = _lamps_run(ref, frames, render_s, clock)
    print(f"{head}, prebuilt octree (reference): {_run_summary(ref_rows, cfg)}")
    rows, summaries = [], []
    for evict in evict_after:
        c = dataclasses.replace(cfg, collision=dataclasses.replace(cfg.collision, tree_method="ocst",
                                                                   ocst_evict_after=evict))
        run_rows, world = _lamps_run(c, frames, render_s, clock)
        full, bank = full_tree_nodes(world.models, c.collision.tree_depth), world.bank
        ratio = np.array([r["peak"] for r in run_rows]) / full
        end = np.array([r["resident"] for r in run_rows]) / full
        print(f"{head}, ocst, evict after {evict:g} s, cap {bank.max_nodes:,} ({bank.max_nodes / full:.1%}): "
              f"resident / full ({full:,} spheres) max {ratio.max():.1%} (most at once), mean {end.mean():.1%}, "
              f"median {np.median(end):.1%} (frame ends); spheres built {bank.built_spheres} "
              f"({bank.rebuilt_spheres} rebuilt), evicted {bank.evicted_spheres}, building "
              f"{1e3 * bank.build_seconds / frames:.2f} ms a frame; {_run_summary(run_rows, cfg)}")
        summaries.append(dict(render_ms=1e3 * render_s, evict_after_s=evict, ratio=ratio, end=end,
                              cap=bank.max_nodes / full, built=bank.built_spheres / frames,
                              rebuilt=bank.rebuilt_spheres / frames, **_footprint(run_rows, ref_rows, cfg, full)))
        rows += [dict(r, render_ms=1e3 * render_s, evict_after_s=evict, full=full) for r in run_rows]
    for r in rows:
        r.pop("levels")
    return rows, summaries


def _footprint(rows, ref_rows, cfg, full: int) -> dict:
    """An ocst run's footprint figures: the mean share of the full tree each reason holds, the
    mean candidate pair-samples per frame, and frames within target beside the reference's."""
    return dict(full=full, within=_within(rows, cfg), ref_within=_within(ref_rows, cfg),
                pairs=np.mean([r["candidate_pairs"] for r in rows]),
                **{k: np.mean([r[k] for r in rows]) / full for k in REASONS})


def print_footprint(summaries: list[dict], full: int, frames: int, depth: int) -> None:
    """Resident spheres as % of the full tree per load and eviction time, the mean share of each
    reason they are held for (OcstBank.resident_reasons), the mean candidate pairs per frame (pairs
    whose bounding spheres overlap: each is refined, building nodes, even when found apart), and
    frames within target beside the prebuilt reference's."""
    print(f"footprint: resident spheres as % of the full octree tree ({full:,} spheres, depth {depth}), "
          f"{frames} frames; goal: max <= 25% (max: the most resident at any moment; mean, median: at frame ends)")
    print("  render ms  evict s    cap    max   mean  median | mean: in use    kept  never used | pair-samples/frame | "
          "built/frame  rebuilt/frame | within target: ocst  prebuilt  goal")
    for s in summaries:
        r, e = s["ratio"], s["end"]
        cap = f"{s['cap']:5.1%}" if s["cap"] < 1 else " none"
        print(f"  {s['render_ms']:9g}  {s['evict_after_s']:7g}  {cap}  {r.max():5.1%}  {e.mean():5.1%}  "
              f"{np.median(e):6.1%} |       {s['in_use']:6.1%}  {s['kept']:6.1%}  {s['never_used']:10.1%} | "
              f"{s['pairs']:18.1f} | {s['built']:11.1f}  {s['rebuilt']:13.1f} |"
              f"                {s['within']:4.0%}  {s['ref_within']:8.0%}  {'met' if r.max() <= 0.25 else 'missed'}")


def one_pair(cfg) -> None:
    """What one pair of the user's model builds, grazing and deep, each on a fresh bank: the
    footprint's floor whenever a load leaves time to refine a contact to the triangles."""
    from ..meshes import load_model
    from ..narrowphase.ocst import OcstBank

    mesh, depth = load_model(cfg.ships.user_model), cfg.collision.tree_depth
    print(f"one {cfg.ships.user_model} pair, each on a fresh bank (the footprint of a single contact):")
    first_contact([OcstBank([mesh], depth=depth) for _ in range(3)], mesh, full_tree_nodes([mesh], depth))


def _within(rows, cfg) -> float:
    """Fraction of the rows' frames whose frame time is within the target."""
    return float(np.mean(np.array([r["frame_ms"] for r in rows]) <= 1e3 * cfg.sim.target_frame_time))


def _run_summary(rows, cfg) -> str:
    """Frame times and the levels colliding pairs reached over a run's rows."""
    levels = np.sum([r["levels"] for r in rows], axis=0)
    frame_ms = np.array([r["frame_ms"] for r in rows])
    return (f"frame time median {np.median(frame_ms):.1f} ms, within target {_within(rows, cfg):.0%}; "
            f"colliding pair-samples by level reached 0..exact {levels.tolist()}")


def _lamps_run(cfg, frames: int, render_s: float, clock):
    from tqdm import tqdm

    from ..sim.world import World

    world = World.from_config(cfg, clock=clock, notify=None)
    reasons = getattr(world.bank, "resident_reasons", lambda: dict.fromkeys(("roots", *REASONS), 0))
    peak = getattr(world.bank, "take_peak", lambda: 0)
    rows = []
    for f in tqdm(range(frames), desc=f"{cfg.collision.tree_method}, render {1e3 * render_s:g} ms", unit="frame"):
        stats = world.step()
        world.end_frame(clock.spend(render_s))
        levels = np.zeros(world.max_level + 1, np.int64)
        levels[:len(stats.level_hist)] = stats.level_hist
        rows.append({"frame": f, "resident": getattr(world.bank, "resident_nodes", 0), "peak": peak(),
                     **reasons(),
                     "candidate_pairs": stats.candidate_pairs, "colliding_pairs": stats.colliding_pairs,
                     "frame_ms": 1e3 * stats.frame_time, "levels": levels})
    return rows, world


def plot_resident(path: Path, curves: dict, cfg, full: int) -> None:
    """Resident / full tree per frame: a curve per (render load [ms], eviction time [s])."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5), dpi=110)
    for (render_ms, evict), ratio in curves.items():
        ax.plot(100 * ratio, lw=1, label=f"render {render_ms:g} ms, evict after {evict:g} s")
    ax.axhline(25, color="tab:red", ls="--", lw=1, label="25%")
    ax.set_xlabel("frame")
    ax.set_ylabel("resident spheres [% of full tree]")
    ax.set_ylim(0, 105)
    ax.set_title(f"OCST on {Path(cfg.source).name}, depth {cfg.collision.tree_depth}: resident spheres against "
                 f"the full octree tree ({full:,} spheres)", fontsize=9)
    ax.legend(loc="center right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
