"""`spaceship-sim bench narrowphase`: µs per pair of the time-critical narrow phase, level by
level and exact, against the brute-force all-triangle-pairs reference and, when python-fcl
imports, fcl's BVHModel(OBBRSS) collide on the same poses, measured in the same run.

Poses: ship A at the origin, ship B at a random orientation with its centre at a random point
inside the sum of the bounding radii (the pairs a broad phase would hand over).
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import InputError


def register(sub) -> None:
    p = sub.add_parser("narrowphase", help="narrow phase µs/pair per level and exact vs brute force and fcl")
    p.add_argument("--poses", type=int, default=1000, help="random pair poses [-]")
    p.add_argument("--model", default="lamp", help="ship model (assets/<model>.ply) used for both ships")
    p.add_argument("--method", default="medial", choices=("octree", "medial"), help="sphere-tree builder")
    p.add_argument("--depth", type=int, default=3, help="sphere-tree levels below the root [-]")
    p.add_argument("--brute-poses", type=int, default=20, help="poses timed with the (slow) brute force [-]")
    p.add_argument("--repeat", type=int, default=3, help="timing repeats; the best is reported [-]")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args) -> int:
    for name in ("poses", "brute_poses", "repeat", "depth"):
        if getattr(args, name) < 1:
            raise InputError("command line", "--" + name.replace("_", "-"), f"must be >= 1, got {getattr(args, name)}")
    from ..meshes import load_model
    from ..narrowphase import TreeBank
    mesh = load_model(args.model)
    tree = _tree(mesh, args.method, args.depth)
    bank = TreeBank.from_trees([tree])
    T = random_poses(np.random.default_rng(args.seed), args.poses, 2 * float(tree.radius[0]))
    n = args.poses
    rows = []  # (label, µs/pair, colliding fraction)

    exact = timed_refine(bank, T, None, True, args.repeat)
    first = timed_refine(bank, T, None, True, args.repeat, all_contacts=False)
    for L in range(tree.depth + 1):
        r = timed_refine(bank, T, L, False, args.repeat)
        rows.append((f"sphere level {L}", r[0], r[1].colliding.mean(), np.median(_bounds(r[1]))))
    rows.append(("exact, first contact", first[0], first[1].colliding.mean(), 0.0))
    rows.append(("exact, all contacts", exact[0], exact[1].colliding.mean(), 0.0))
    m = min(args.brute_poses, n)
    brute_us, brute_hits = timed_brute(mesh, T[:2 * m])
    rows.append((f"brute force ({m} poses)", brute_us, np.mean(brute_hits), 0.0))
    agree_brute = int(np.sum(exact[1].colliding[:m] == brute_hits))

    fcl_rows, fcl_hits = timed_fcl(mesh, T, args.repeat)
    rows += fcl_rows
    print(f"model {args.model}: {len(mesh.faces)} triangles, {args.method} tree depth {tree.depth} "
          f"({tree.n_nodes} spheres), {n} poses")
    ref_us = fcl_rows[0][1] if fcl_rows else brute_us
    ref_name = "fcl collide" if fcl_rows else "brute force"
    print(f"{'method':28s} {'µs/pair':>10s} {'colliding':>10s} {'median bound':>13s} {'vs ' + ref_name:>18s}")
    for label, us, frac, bound in rows:
        print(f"{label:28s} {us:10.2f} {100 * frac:9.1f}% {bound:13.4f} {ref_us / us:17.2f}x")
    print(f"exact vs brute force: {agree_brute}/{m} poses agree")
    if fcl_hits is not None:
        print(f"exact vs fcl: {int(np.sum(exact[1].colliding == fcl_hits))}/{n} poses agree")
        level2 = [us for label, us, _, _ in rows if label == "sphere level 2"]
        print(f"exact first contact vs all contacts: {int(np.sum(first[1].colliding == exact[1].colliding))}/{n} "
              f"poses agree")
        all_us = fcl_rows[1][1]
        print(f"target exact (batched) <= fcl collide, first contact: {'met' if first[0] <= ref_us else 'MISSED'} "
              f"({first[0]:.2f} vs {ref_us:.2f} µs); all contacts: {'met' if exact[0] <= all_us else 'MISSED'} "
              f"({exact[0]:.2f} vs {all_us:.2f} µs)")
        if level2:
            print(f"target level 2 >= 10x faster than fcl exact: vs first contact "
                  f"{'met' if ref_us / level2[0] >= 10 else 'MISSED'} ({ref_us / level2[0]:.1f}x); vs all contacts "
                  f"{'met' if all_us / level2[0] >= 10 else 'MISSED'} ({all_us / level2[0]:.1f}x)")
    return 0


def _tree(mesh, method, depth):
    from .. import spheretree
    if hasattr(spheretree, "load_or_build"):
        return spheretree.load_or_build(mesh, method=method, branching=8, depth=depth)
    return spheretree.build_tree(mesh.vertices, mesh.faces, method=method, branching=8, depth=depth)


def random_poses(rng, n: int, reach: float) -> np.ndarray:
    """(2n, 4, 4): ship 2i at the origin, ship 2i+1 rotated at random with its centre uniform in
    the ball of radius `reach`."""
    T = np.tile(np.eye(4), (2 * n, 1, 1))
    q = rng.normal(size=(n, 4))
    w, x, y, z = (q / np.linalg.norm(q, axis=1, keepdims=True)).T
    T[1::2, :3, :3] = np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)
    d = rng.normal(size=(n, 3))
    T[1::2, :3, 3] = d / np.linalg.norm(d, axis=1, keepdims=True) * reach * rng.uniform(size=(n, 1)) ** (1 / 3)
    return T


def timed_refine(bank, T, max_level, exact, repeat, all_contacts=True):
    """Best-of-`repeat` µs/pair of one refine_frame call over all poses, and its result."""
    from ..narrowphase import refine_frame
    n = len(T) // 2
    pairs = np.arange(2 * n).reshape(n, 2)
    model_id = np.zeros(2 * n, np.int64)
    best, result = np.inf, None
    for _ in range(repeat + 1):  # the first call compiles / warms caches
        t0 = time.perf_counter()
        result = refine_frame(bank, model_id, T, pairs, deadline=np.inf, min_level=0, max_level=max_level,
                              exact=exact, all_contacts=all_contacts)
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6, result


def timed_brute(mesh, T):
    from ..narrowphase.reference import brute_force_pair
    hits = []
    t0 = time.perf_counter()
    for i in range(len(T) // 2):
        hits.append(len(brute_force_pair(mesh.vertices, mesh.faces, T[2 * i], mesh.vertices, mesh.faces,
                                         T[2 * i + 1])) > 0)
    return (time.perf_counter() - t0) / max(len(hits), 1) * 1e6, np.array(hits)


def timed_fcl(mesh, T, repeat):
    """fcl BVHModel(OBBRSS) collide per pose (first contact, then all contacts); ([], None)
    when python-fcl is not installed."""
    try:
        import fcl
    except ImportError:
        print("python-fcl not installed: no fcl comparison")
        return [], None
    model = fcl.BVHModel()
    model.beginModel(len(mesh.vertices), len(mesh.faces))
    model.addSubModel(np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int32))
    model.endModel()
    a, b = fcl.CollisionObject(model, fcl.Transform()), fcl.CollisionObject(model, fcl.Transform())
    tfs = [(fcl.Transform(T[i, :3, :3], T[i, :3, 3]), fcl.Transform(T[i + 1, :3, :3], T[i + 1, :3, 3]))
           for i in range(0, len(T), 2)]
    rows, hits = [], None
    for label, request in (("fcl collide (first contact)", fcl.CollisionRequest()),
                           ("fcl collide (all contacts)", fcl.CollisionRequest(num_max_contacts=1 << 20,
                                                                                 enable_contact=True))):
        best = np.inf
        for _ in range(repeat):
            out = []
            t0 = time.perf_counter()
            for ta, tb in tfs:  # transforms set per query, as a simulation would
                a.setTransform(ta)
                b.setTransform(tb)
                out.append(fcl.collide(a, b, request, fcl.CollisionResult()) > 0)
            best = min(best, time.perf_counter() - t0)
        hits = np.array(out) if hits is None else hits
        rows.append((label, best / len(tfs) * 1e6, np.mean(out), 0.0))
    return rows, hits


def _bounds(result):
    b = result.separation_bound[result.colliding]
    return b if len(b) else np.array([np.nan])
