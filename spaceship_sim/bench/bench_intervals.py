"""bench intervals: how tight the separation intervals are, level by level, on near-touching poses.

For each model (the project's or any mesh; `torus` and `capsules` are trimesh's) and each sphere-tree
method, on near-touching poses (bench narrowphase's: first contact along a random direction, x
U(0.98, 1.03)), per sphere level k: the median over poses of (upper - true distance) / R, R the
mesh's bounding radius, for
  - the verdict's upper bound at level k (the refinement's separation bound: the witness chain it
    stacked, refine_frame with max_level=k and no deadline), and
  - what the spheres down to level k know (intervals.narrow_rows with that level cap and no limit
    on node pairs: the best witness bound over every node pair it examines, each node's witness
    and its leaf vertex farthest toward the other),
and the median width (upper - lower) / R of the latter. The true distance is the interval closed
without a cap (narrow_rows to the triangles: exact, and checked against brute force in the tests).
Targets: at level 3, medial trees, median (upper - true) <= 0.05 R; medial tighter than octree at
every level.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..cli.args import csv_file, integer
from ..geometry.poses import relative_poses
from .bench_narrowphase import fcl_pair, load_tree, make_poses, model_names, resolve_model

TARGET_LEVEL, TARGET_FRACTION = 3, 0.05  # median (upper - true) at that level, over R
UNLIMITED = 1 << 40


def register(sub) -> None:
    p = sub.add_parser("intervals", help="separation intervals per sphere level on near-touching poses, "
                                         "medial against octree trees")
    p.add_argument("--model", action="append", metavar="NAME_OR_PATH",
                   help="model name, mesh file or built-in torus/capsules (repeatable or comma-separated; "
                        "default: lamp, fighter, torus, capsules)")
    p.add_argument("--poses", type=integer(1, 100_000), default=200, help="near-touching poses per model")
    p.add_argument("--depth", type=integer(1, 5), default=3, help="sphere-tree levels below the root [-]")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0)
    p.add_argument("--csv", type=csv_file, metavar="PATH",
                   help="write a row per model, tree method and level to this CSV file")
    p.set_defaults(func=run)


def run(args) -> int:
    models = [resolve_model(name) for name in model_names(args.model or ["lamp,fighter,torus,capsules"])]
    from ..narrowphase import TreeBank

    ok, table = True, []
    print(f"median over {args.poses} near-touching poses of (bound - true distance) / R, R the bounding radius")
    for model in models:
        banks = {m: TreeBank.from_trees([load_tree(model, m, args.depth)]) for m in ("medial", "octree")}
        args.poses_kind = "shallow"
        T, how = make_poses("shallow", args, banks["medial"].trees[0], banks["medial"], fcl_pair(model.mesh))
        R = model.mesh.bounding_radius
        rows = {m: level_rows(bank, T, R) for m, bank in banks.items()}
        print(f"model {model.label} ({len(model.mesh.faces)} triangles, R {R:.3g} m), poses: {how}")
        print(f"  {'level':>5}  {'verdict medial':>14}  {'verdict octree':>14}  {'spheres medial':>14}  "
              f"{'spheres octree':>14}  {'width medial':>12}  {'width octree':>12}")
        for k in sorted(rows["medial"]):
            m, o = rows["medial"][k], rows["octree"].get(k)
            print(f"  {k:5d}  {m['verdict']:14.3f}  {o['verdict'] if o else np.nan:14.3f}  {m['spheres']:14.3f}  "
                  f"{o['spheres'] if o else np.nan:14.3f}  {m['width']:12.3f}  {o['width'] if o else np.nan:12.3f}")
        ok &= verdicts(model.label, rows)
        table += [dict(model=model.label, method=m, level=k, **row) for m in rows for k, row in rows[m].items()]
    if args.csv:
        from ..sim.frame_log import write_csv
        write_csv(Path(args.csv), table)
    return 0 if ok else 1


def level_rows(bank, T, R: float) -> dict:
    """{level: {"verdict", "spheres", "width"}}: medians over the poses, over R (module docstring)."""
    from ..narrowphase import refine_frame
    from ..narrowphase.intervals import NO_LEVEL_CAP, bank_parts, narrow_rows

    Ta, Tb = T[0::2], T[1::2]
    k = len(Ta)
    Rr, t = relative_poses(np.ascontiguousarray(Ta), np.ascontiguousarray(Tb))
    roots = np.zeros(k, np.int64)
    parts = (bank_parts(bank), bank_parts(bank), Rr, t, np.arange(k), roots, roots, UNLIMITED)

    def capped(level):
        lower, upper = np.zeros(k), np.full(k, np.inf)
        narrow_rows(*parts, level, lower, upper)
        return lower, upper

    true = capped(NO_LEVEL_CAP)[1]
    pairs, model_id = np.arange(2 * k).reshape(-1, 2), np.zeros(2 * k, np.int64)
    out = {}
    for level in range(1, int(bank.depth.max()) + 1):
        verdict = refine_frame(bank, model_id, T, pairs, deadline=np.inf, min_level=level, max_level=level,
                               triangle_tests=False).upper
        lower, upper = capped(level)
        out[level] = {"verdict": float(np.median(verdict - true)) / R, "spheres": float(np.median(upper - true)) / R,
                      "width": float(np.median(upper - lower)) / R}
    return out


def verdicts(label: str, rows: dict) -> bool:
    """Print and return whether the targets hold for this model."""
    medial, octree = rows["medial"], rows["octree"]
    at = medial.get(TARGET_LEVEL)
    ok = at is not None and at["spheres"] <= TARGET_FRACTION
    shared = [k for k in medial if k in octree]
    tighter = all(medial[k]["spheres"] <= octree[k]["spheres"] for k in shared)
    print(f"  {label}: level {TARGET_LEVEL} medial {at['spheres'] if at else np.nan:.3f} R "
          f"(target <= {TARGET_FRACTION} R) {'met' if ok else 'NOT met'}; medial tighter than octree at every "
          f"level: {'yes' if tighter else 'NO'}")
    return ok and tighter
