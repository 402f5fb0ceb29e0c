"""`spaceship-sim bench broadphase`: ms/frame of each broad phase on the same random motions.

Ships (radii uniform in [0.5, 1.5] m) fill `--fraction` of a box and fly with random
accelerations bounded per ship (|a| <= --accel), bouncing off the walls and occasionally
changing velocity abruptly (--jump-rate, standing in for new controls and collision responses:
both invalidate the ship). Every method sees exactly the same frames, interleaved frame by frame,
one find_pairs call per frame at dt = --dt. Printed per method: mean / median / p99 / max
ms per frame after --warmup frames and max / median, by the wall clock and by the thread's CPU
time (on a loaded machine the wall clock also counts preemption by other processes), ratios
against brute force and fcl measured in the same run, and whether its pairs equal brute force's
on the --check-frames frames it was run on.

fcl (python-fcl, when it imports): DynamicAABBTreeCollisionManager over fcl.Sphere objects;
each frame sets every object's translation from Python, updates the manager and collides it
with a minimal Python callback that only records the two candidates' translations. Mapping
those back to ship indices and the exact sphere test are left out of its time, so the figure
is a lower bound on what a usable fcl broad phase costs.
"""
from __future__ import annotations

import time

import numpy as np

from ..cli.args import COMMAND_LINE, MAX_FRAMES, integer, number
from ..config import MAX_ACCEL, MAX_SHIPS, MAX_SPEED
from ..errors import InputError

METHODS = ("space_time", "sweep_prune")


def register(sub) -> None:
    p = sub.add_parser("broadphase", help="broad phases (space-time, sweep-and-prune) vs brute force and fcl")
    p.add_argument("--n", default="1000,10000", help="ship counts, comma-separated")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=200, help="timed frames per ship count")
    p.add_argument("--warmup", type=integer(0, MAX_FRAMES), default=10,
                   help="untimed first frames (compilation, first build)")
    p.add_argument("--dt", type=number(0.0, 1.0, lo_open=True, unit=" s"), default=1 / 60,
                   help="simulated time per frame [s]")
    p.add_argument("--fraction", type=number(0.0, 0.5, lo_open=True), default=0.01,
                   help="volume fraction filled by the ships [-]")
    p.add_argument("--speed", type=number(0.0, MAX_SPEED, unit=" m/s"), default=5.0, help="ship speed limit [m/s]")
    p.add_argument("--accel", type=number(0.0, MAX_ACCEL, unit=" m/s^2"), default=5.0,
                   help="largest acceleration bound [m/s^2]")
    p.add_argument("--jump-rate", type=number(0.0, 1.0), default=0.005,
                   help="chance per ship and frame of a velocity jump")
    p.add_argument("--check-frames", type=integer(1, 1000), default=3,
                   help="frames on which brute force runs and checks")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0)
    p.add_argument("--no-fcl", action="store_true", help="skip python-fcl even if it imports")
    p.set_defaults(func=run)


def parse_counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(COMMAND_LINE, "--n", f"expected comma-separated integers, got {text!r}") from None
    if not 2 <= min(counts) <= max(counts) <= MAX_SHIPS:
        raise InputError(COMMAND_LINE, "--n", f"ship counts must be in 2..{MAX_SHIPS}, got {text!r}")
    return counts


class FclBroadPhase:
    """python-fcl's DynamicAABBTreeCollisionManager over spheres, driven from Python."""

    def __init__(self, radius, pos):
        import fcl

        self.fcl = fcl
        self.objs = [fcl.CollisionObject(fcl.Sphere(float(r)), fcl.Transform(np.asarray(p, float)))
                     for r, p in zip(radius, pos)]
        self.manager = fcl.DynamicAABBTreeCollisionManager()
        self.manager.registerObjects(self.objs)
        self.manager.setup()

    def candidates(self, pos) -> list:
        """Timed part: transforms, update, collide. Returns the candidates' translations."""
        t0 = time.perf_counter()
        for obj, p in zip(self.objs, pos):
            obj.setTranslation(p)
        self.transform_time = time.perf_counter() - t0
        self.manager.update()
        found = []

        def record(o1, o2, data):
            data.append((o1.getTranslation(), o2.getTranslation()))
            return False

        self.manager.collide(found, record)
        return found

    @staticmethod
    def pairs(found, pos, radius) -> np.ndarray:
        """Untimed: candidates back to ship indices (translations equal positions bit for bit), exact test."""
        if not found:
            return np.zeros((0, 2), np.int32)
        index = {row.tobytes(): i for i, row in enumerate(np.ascontiguousarray(pos))}
        ij = np.array([(index[np.asarray(a, float).tobytes()], index[np.asarray(b, float).tobytes()])
                       for a, b in found], np.int64)
        a, b = ij.min(axis=1), ij.max(axis=1)
        from ..broadphase.base import overlap_mask, pairs_from_keys

        keep = overlap_mask(pos, radius, a, b)
        return pairs_from_keys(np.unique(a[keep] * len(pos) + b[keep]), len(pos))


def fcl_available() -> bool:
    try:
        import fcl  # noqa: F401
    except ImportError:
        return False
    return True


def clocked(fn):
    """fn() with the wall-clock and the thread CPU time it took [s]. On a loaded machine the wall
    clock also counts the time the OS gave to other processes; the CPU time is only this work."""
    wall, cpu = time.perf_counter(), time.thread_time()
    out = fn()
    return out, time.perf_counter() - wall, time.thread_time() - cpu


def broad_phase_frame(bp, motion, jumped):
    bp.invalidate(jumped)
    return bp.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)


def bench_count(n: int, args, use_fcl: bool) -> dict:
    from ..registry import make_broadphase  # lazy: numba; registration stays light
    from ..broadphase.motion import RandomMotion, box_for_volume_fraction

    rng = np.random.default_rng(args.seed)
    radius = rng.uniform(0.5, 1.5, n)
    box = box_for_volume_fraction(radius, args.fraction)
    motion = RandomMotion(radius, box, args.speed, args.accel, seed=args.seed, jump_rate=args.jump_rate)
    methods = {m: make_broadphase(m, radius, min_resolution=args.dt) for m in METHODS}
    ref = make_broadphase("brute_force", radius, min_resolution=args.dt)
    fclbp = FclBroadPhase(radius, motion.pos) if use_fcl else None
    total = args.warmup + args.frames
    check = set(np.linspace(args.warmup, total - 1, min(args.check_frames, args.frames)).astype(int).tolist())
    times = {m: [] for m in [*METHODS, "brute_force", "fcl", "fcl_transforms"]}
    cpu = {m: [] for m in [*METHODS, "fcl"]}
    agree = {m: True for m in [*METHODS, "fcl"]}
    found = invalidated = 0
    for f in range(total):
        jumped = motion.step(args.dt)
        invalidated += len(jumped)
        out = {}
        for name, bp in methods.items():
            out[name], wall, busy = clocked(lambda: broad_phase_frame(bp, motion, jumped))
            times[name].append(wall)
            cpu[name].append(busy)
        if fclbp is not None:
            cand, wall, busy = clocked(lambda: fclbp.candidates(motion.pos))
            times["fcl"].append(wall)
            cpu["fcl"].append(busy)
            times["fcl_transforms"].append(fclbp.transform_time)
            if f in check:
                out["fcl"] = fclbp.pairs(cand, motion.pos, radius)
        found += len(out["space_time"])
        if f in check:
            t0 = time.perf_counter()
            truth = ref.find_pairs(motion.t, motion.pos, motion.vel, motion.accel_bound)
            times["brute_force"].append(time.perf_counter() - t0)
            for name, pairs in out.items():
                agree[name] &= bool(np.array_equal(pairs, truth))
    for name in [*METHODS, "fcl", "fcl_transforms"]:
        times[name] = times[name][args.warmup:]
    for name in cpu:
        cpu[name] = cpu[name][args.warmup:]
    return dict(n=n, box=box, times=times, cpu=cpu, agree=agree, pairs_per_frame=found / total,
                invalidated_per_frame=invalidated / total, stats={m: methods[m].last_stats for m in METHODS})


SPREAD_HEADER = f"{'mean':>9s} {'median':>9s} {'p99':>9s} {'max':>9s} {'max/med':>8s}"


def spread(t: np.ndarray) -> str:
    """mean, median, p99, max [ms] and max / median of per-frame times t [ms]."""
    return (f"{t.mean():9.3f} {np.median(t):9.3f} {np.percentile(t, 99):9.3f} {t.max():9.3f} "
            f"{t.max() / np.median(t):8.2f}")


def vs_fcl(ms: dict) -> str:
    """How many times faster than fcl each method is, by mean, p99 and max."""
    f = ms["fcl"]
    return "; ".join(f"{m} {f.mean() / ms[m].mean():.2f}x mean, {np.percentile(f, 99) / np.percentile(ms[m], 99):.2f}x "
                     f"p99, {f.max() / ms[m].max():.2f}x max" for m in METHODS)


def label(name: str) -> str:
    return "fcl DynamicAABBTree" if name == "fcl" else name


def report(res: dict, args) -> None:
    ms = {m: np.asarray(t) * 1e3 for m, t in res["times"].items() if len(t)}
    cpu = {m: np.asarray(t) * 1e3 for m, t in res["cpu"].items() if len(t)}
    brute, fcl_ms = ms["brute_force"].mean(), ms["fcl"].mean() if "fcl" in ms else None
    print(f"\nn = {res['n']}: box {res['box']:.1f} m, volume fraction {args.fraction:g}, speed <= {args.speed:g} m/s, "
          f"|a| <= {args.accel:g} m/s^2, dt {args.dt * 1e3:.2f} ms, {args.frames} frames; "
          f"{res['pairs_per_frame']:.0f} overlapping pairs and {res['invalidated_per_frame']:.1f} invalidated "
          f"ships per frame")
    print(f"  {'wall clock [ms]':22s} {SPREAD_HEADER}   {'brute/x':>8s} {'fcl/x':>7s}  equals brute force")
    for name in [*METHODS, "fcl", "brute_force"]:
        if name not in ms:
            continue
        t = ms[name]
        fcl_x = f"{fcl_ms / t.mean():7.2f}" if fcl_ms is not None else f"{'-':>7s}"
        same = "reference" if name == "brute_force" else ("yes" if res["agree"][name] else "NO")
        note = f" ({len(t)} frames)" if name == "brute_force" else ""
        print(f"  {label(name):22s} {spread(t)}   {brute / t.mean():8.1f} {fcl_x}  {same}{note}")
    print(f"  {'thread CPU time [ms]':22s} {SPREAD_HEADER}   (leaves out time the OS gave other processes)")
    for name in cpu:
        print(f"  {label(name):22s} {spread(cpu[name])}")
    if fcl_ms is not None:
        print(f"  vs fcl, wall clock: {vs_fcl(ms)}")
        print(f"  vs fcl, CPU time:   {vs_fcl(cpu)}")
        tf = ms["fcl_transforms"].mean()
        print(f"  fcl split: setting transforms {tf:.3f} ms, update + collide {fcl_ms - tf:.3f} ms; "
              + ", ".join(f"{m} is {(fcl_ms - tf) / ms[m].mean():.2f}x faster than fcl without its transforms"
                          for m in METHODS))
    for name in METHODS:
        print(f"  last {name} stats: {res['stats'][name]}")


def run(args) -> int:
    counts = parse_counts(args.n)
    use_fcl = not args.no_fcl and fcl_available()
    if not use_fcl and not args.no_fcl:
        print("python-fcl not installed: fcl column skipped (pip install python-fcl)")
    print("ms per frame (one find_pairs call, invalidations included); x/y columns: that method's mean "
          "time over this row's")
    ok = True
    for n in counts:
        res = bench_count(n, args, use_fcl)
        report(res, args)
        ok &= all(res["agree"][m] for m in res["agree"] if res["times"].get(m))
    return 0 if ok else 1
