"""`spaceship-sim bench multibody`: I-COLLIDE's multi-body benchmark (Cohen et al. 1995, section 7).

N random convex polytopes (hulls of random points on a sphere) in a cube, with random translational
velocities (--speed, % of a body's radius per frame) and rotations (--rotation, degrees per frame),
exchanging velocities on contact and rebounding off the walls; the cube is sized for --density
(% of its volume filled). The trajectory is driven by dynamic boxes + Lin–Canny; on every frame's
poses each method finds the colliding pairs, timed (ms/frame, detection only: poses are given):

- dynamic boxes + Lin–Canny (split into box update, sort, exact test),
- fixed cubes + Lin–Canny,
- brute force: bounding spheres of all pairs + brute-force feature search (N <= --brute-max),
- fcl: python-fcl's DynamicAABBTreeCollisionManager over fcl.Convex, collide (when installed;
  its time includes setting the N transforms from Python, also printed on its own).

Per pair, like for like: two second passes over the frame's box pairs on the same poses, each right
after its own method's frame (so each finds its data as warm as the other): the coherent Lin–Canny
walk from the frame's start features (one numba call over all pairs, output arrays allocated: what
the exact stage does) and one fcl.collide per pair (a Python loop over a list of ints: fcl's call overhead from Python is part of its figure,
as numba's dispatch is part of Lin–Canny's). The in-frame exact stage per pair is printed too.
Medians over frames are printed beside the means (ms/frame of dynamic boxes and fcl, and the per-pair
ratio of the two passes frame by frame): on a shared machine a few preempted frames dominate a mean.

The paper's sweeps: --n at the first --faces / --rotation / --density value; every other list with
more than one value is swept at N = --at-n. Colliding pairs must agree between the methods (reported per row).
"""
from __future__ import annotations

import argparse
import csv
import time

import numpy as np

from ..cli.args import COMMAND_LINE, MAX_FRAMES, csv_file, integer, number, png_file
from ..errors import InputError

MAX_BODIES = 5000  # the pair counters are an N x N matrix (25 MB at 5,000)
METHODS = ("dynamic", "fixed", "brute", "fcl")
LABELS = {"dynamic": "dynamic boxes + Lin-Canny", "fixed": "fixed cubes + Lin-Canny",
          "brute": "brute-force pairs + distance", "fcl": "fcl DynamicAABBTree + collide"}


def register(sub) -> None:
    p = sub.add_parser("multibody", help="I-COLLIDE's multi-body benchmark: dynamic boxes, fixed cubes, "
                                         "brute force, fcl")
    p.add_argument("--n", default="20,50,100,200,500,1000", help="body counts, comma-separated (paper: 20..2000)")
    p.add_argument("--faces", default="36", help="faces per polytope, comma-separated (8..1000; paper: 36)")
    p.add_argument("--rotation", default="10", help="degrees per frame, comma-separated (paper: 10)")
    p.add_argument("--density", default="1", help="%% of the volume filled, comma-separated (paper: 1)")
    p.add_argument("--speed", type=number(0.0, 100.0, unit=" %"), default=10.0,
                   help="%% of a body's radius travelled per frame (paper: 10)")
    p.add_argument("--at-n", type=integer(2, MAX_BODIES), default=1000,
                   help="body count of the faces / rotation / density sweeps")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=40, help="timed frames per row")
    p.add_argument("--warmup", type=integer(0, MAX_FRAMES), default=5, help="untimed first frames")
    p.add_argument("--brute-max", type=integer(0, MAX_BODIES), default=200,
                   help="largest N brute force runs at")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0)
    p.add_argument("--no-fcl", action="store_true", help="skip python-fcl even if it imports")
    p.add_argument("--plot", type=png_file, help="PNG of ms/frame against each swept parameter")
    p.add_argument("--csv", type=csv_file, help="CSV of every row")
    p.set_defaults(func=run)


def parse_list(text: str, flag: str, lo: float, hi: float, kind=float) -> list:
    try:
        values = [kind(x) for x in text.split(",")]
    except ValueError:
        raise InputError(COMMAND_LINE, flag, f"expected comma-separated numbers, got {text!r}") from None
    if not all(lo <= v <= hi for v in values):
        raise InputError(COMMAND_LINE, flag, f"values must be in {lo:g}..{hi:g}, got {text!r}")
    return values


def rows_to_run(args) -> list[dict]:
    """(sweep name, parameters) for every row: the N sweep, then each other multi-valued list."""
    lists = {"n": parse_list(args.n, "--n", 2, MAX_BODIES, int),
             "faces": parse_list(args.faces, "--faces", 8, 1000, int),
             "rotation": parse_list(args.rotation, "--rotation", 0.0, 180.0),
             "density": parse_list(args.density, "--density", 1e-3, 30.0)}
    base = {k: v[0] for k, v in lists.items()}
    rows = [dict(base, sweep="n", n=n) for n in lists["n"]]
    for key in ("faces", "rotation", "density"):
        if len(lists[key]) > 1:
            rows += [dict(base, sweep=key, n=args.at_n, **{key: v}) for v in lists[key]]
    return rows


def fcl_available() -> bool:
    try:
        import fcl  # noqa: F401
    except ImportError:
        return False
    return True


def bench_row(row: dict, args, use_fcl: bool, bar) -> dict:
    """Run one configuration; returns its mean times [ms] and counts."""
    from ..convex.multibody import BruteForceBodies, FclPeer, ICollide, MultiBody

    world = MultiBody(row["n"], row["faces"], row["rotation"], args.speed / 100, row["density"] / 100, args.seed)
    methods = {"dynamic": ICollide(world.pset, world.rot, "dynamic"), "fixed": ICollide(world.pset, world.rot, "fixed")}
    if row["n"] <= args.brute_max:
        methods["brute"] = BruteForceBodies(world.pset)
    if use_fcl:
        methods["fcl"] = FclPeer(world.pset)
    times = {m: [] for m in [*methods, "boxes", "sort", "exact", "fcl_transforms", "fcl_pair", "lc_pair"]}
    passes = {"dynamic": ("lc_pair", lambda: methods["dynamic"].pair_walk_time(world.rot, world.pos)),
              "fcl": ("fcl_pair", lambda: methods["fcl"].pair_collide_time(methods["dynamic"].sweep.pairs))}
    pass_times = {key for key, _ in passes.values()}
    frame_pairs = []
    counts = {"active": 0, "colliding": 0, "steps": 0, "fallbacks": 0, "disagree": 0, "fixed_active": 0}
    for frame in range(args.warmup + args.frames):
        timed = frame >= args.warmup
        found = {}
        for name, det in methods.items():
            t0 = time.perf_counter()
            found[name] = det.detect(world.rot, world.pos)
            if timed:
                times[name].append(time.perf_counter() - t0)
                if use_fcl and name in passes:  # right after its own frame: its data as warm as the other's
                    key, timed_pass = passes[name]
                    times[key].append(timed_pass())
        dyn = methods["dynamic"]
        if timed:
            _record(times, counts, dyn, methods, found)
            frame_pairs.append(dyn.active)
        world.respond(found["dynamic"])
        world.step()
        bar.update(1)
    frames = max(args.frames, 1)
    out = dict(row, **{f"{m}_ms": 1e3 * float(np.mean(t)) for m, t in times.items() if t and m not in pass_times})
    out.update({k: v / frames for k, v in counts.items()})
    pairs = max(counts["active"], 1)
    out["lc_stage_us_per_pair"] = 1e6 * sum(times["exact"]) / pairs
    out["dynamic_median_ms"] = 1e3 * float(np.median(times["dynamic"]))
    if times["fcl_pair"]:
        out["lc_us_per_pair"] = 1e6 * sum(times["lc_pair"]) / pairs
        out["fcl_us_per_pair"] = 1e6 * sum(times["fcl_pair"]) / pairs
        out.update(_median_ratios(times, np.array(frame_pairs)))
    return out


def _median_ratios(times, frame_pairs) -> dict:
    """Medians over frames: on a shared machine a few preempted frames dominate the means. The frame
    ratio is dynamic / fcl; the per-pair ratio is Lin–Canny's second pass / fcl's on each frame's
    same pairs (frames with none skipped), NaN when no frame had a pair. frame_pairs: (frames,) box pairs."""
    lc, fc = np.array(times["lc_pair"]), np.array(times["fcl_pair"])
    has_pairs = frame_pairs > 0
    return {"fcl_median_ms": 1e3 * float(np.median(times["fcl"])),
            "median_frame_ratio": float(np.median(times["dynamic"]) / np.median(times["fcl"])),
            "median_pair_ratio": float(np.median(lc[has_pairs] / fc[has_pairs])) if has_pairs.any() else np.nan}


def _record(times, counts, dyn, methods, found) -> None:
    """Stage split, counts and agreement of one timed frame."""
    times["boxes"].append(dyn.t_boxes)
    times["sort"].append(dyn.t_sort)
    times["exact"].append(dyn.t_exact)
    counts["active"] += dyn.active
    counts["fixed_active"] += methods["fixed"].active
    counts["colliding"] += len(found["dynamic"])
    counts["steps"] += dyn.steps
    counts["fallbacks"] += dyn.fallbacks
    truth = {tuple(p) for p in found["dynamic"].tolist()}
    counts["disagree"] += sum({tuple(p) for p in found[m].tolist()} != truth for m in found if m != "fcl")
    if "fcl" in methods:
        times["fcl_transforms"].append(methods["fcl"].t_transforms)
        counts.setdefault("fcl_disagree", 0)
        counts["fcl_disagree"] += {tuple(p) for p in found["fcl"].tolist()} != truth


def report(r: dict) -> None:
    ref = r["dynamic_ms"]
    print(f"\nN = {r['n']}, {r['faces']} faces, {r['rotation']:g} deg/frame, density {r['density']:g}%: "
          f"{r['active']:.0f} box pairs (fixed cubes {r['fixed_active']:.0f}), {r['colliding']:.1f} colliding, "
          f"{r['steps'] / max(r['active'], 1):.2f} walk steps per pair, {r['fallbacks']:.2f} fallbacks per frame")
    print(f"  {'method':32s} {'ms/frame':>9s} {'x dynamic':>10s}")
    for m in METHODS:
        if f"{m}_ms" in r:
            print(f"  {LABELS[m]:32s} {r[m + '_ms']:9.3f} {r[m + '_ms'] / ref:10.2f}")
    print(f"  dynamic split: boxes {r['boxes_ms']:.3f}, sort {r['sort_ms']:.3f}, exact {r['exact_ms']:.3f} ms "
          f"({r['lc_stage_us_per_pair']:.2f} us per box pair)")
    if "fcl_ms" in r:
        print(f"  fcl split: setting transforms {r['fcl_transforms_ms']:.3f} ms; frames where fcl's pairs differ: "
              f"{r['fcl_disagree'] * 100:.0f}%")
        print(f"  per box pair, second passes over the frame's pairs, each right after its own: Lin-Canny from the "
              f"frame's start features {r['lc_us_per_pair']:.2f} us, fcl.collide {r['fcl_us_per_pair']:.2f} us "
              f"(ratio {r['lc_us_per_pair'] / r['fcl_us_per_pair']:.2f})")
        print(f"  medians over frames: dynamic {r['dynamic_median_ms']:.3f} ms/frame, fcl {r['fcl_median_ms']:.3f} "
              f"(ratio {r['median_frame_ratio']:.2f}); Lin-Canny / fcl.collide per box pair {r['median_pair_ratio']:.2f}")
    if r["disagree"]:
        print(f"  WARNING: colliding pairs differ between methods on {r['disagree'] * 100:.0f}% of frames")


def plot(results: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweeps = list(dict.fromkeys(r["sweep"] for r in results))
    fig, axes = plt.subplots(1, len(sweeps), figsize=(5.5 * len(sweeps), 4.2), squeeze=False)
    titles = {"n": "number of polytopes", "faces": "faces per polytope", "rotation": "rotation [deg/frame]",
              "density": "density [% of volume]"}
    for ax, sweep in zip(axes[0], sweeps):
        rows = [r for r in results if r["sweep"] == sweep]
        x = [r[sweep] for r in rows]
        for m in METHODS:
            pts = [(xi, r[f"{m}_ms"]) for xi, r in zip(x, rows) if f"{m}_ms" in r]
            if pts:
                ax.plot(*zip(*pts), "o-", lw=2.5 if m == "dynamic" else 1.2, label=LABELS[m])
        ax.set_xlabel(titles[sweep])
        ax.set_ylabel("ms per frame (detection)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("I-COLLIDE multi-body benchmark")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(args) -> int:
    from tqdm import tqdm

    rows = rows_to_run(args)
    use_fcl = not args.no_fcl and fcl_available()
    if not use_fcl and not args.no_fcl:
        print("python-fcl not installed: fcl column skipped (pip install python-fcl)")
    results = []
    with tqdm(total=len(rows) * (args.warmup + args.frames), unit="frame", desc="multibody", leave=False) as bar:
        for row in rows:
            results.append(bench_row(row, args, use_fcl, bar))
            bar.clear()
            report(results[-1])
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=sorted({k for r in results for k in r}))
            w.writeheader()
            w.writerows(results)
    if args.plot:
        plot(results, args.plot)
        print(f"\nplot: {args.plot}")
    return 0 if not any(r["disagree"] for r in results) else 1
