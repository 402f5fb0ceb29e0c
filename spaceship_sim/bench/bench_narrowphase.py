"""`spaceship-sim bench narrowphase`: the narrow phase against python-fcl, model by model, on two
kinds of poses, every figure measured in the same run.

Methods: sphere levels 0..depth (no triangle tests), the exact level (first contact, all
contacts), the exact level on on-collide trees (ocst; cold: one call on a fresh bank, building
every node the poses reach; warm: all built), the face-octree and BSP exact strategies (first contact, all
contacts), fcl BVHModel(OBBRSS) collide (first contact, all contacts) and the brute-force
all-triangle-pairs oracle on the first few poses. Ratios are against fcl first contact, the peer
to beat; without python-fcl, against the project's exact first contact.

Poses: ship A at the origin, ship B (the same model) at a random orientation.
- deep: B's centre uniform in the ball of radius twice the root sphere's (the pairs a broad
  phase hands over);
- shallow: B moved along a random direction to first contact (the largest centre distance at
  which the exact verdict says "colliding"; fcl's when installed, else the project's exact
  level), that distance then scaled by U(0.98, 1.03): the near-touching poses a simulation with
  collision response mostly sees.

Models: names in assets/ (trees cached in assets/trees/), mesh files read by
spaceship_sim.meshes (re-centred on their bounding box; trees cached in the user cache folder)
and two built-in meshes the project did not make: `torus` and `capsules` (two crossing capsules,
boolean union). No scaling: sizes are the files' own [m].

Then one table of every exact level's first contact against fcl's (the config's default marked)
and the SSV tree's build time against fcl's OBBRSS build of the same mesh.

Exit code 1 when a verdict check fails (exact vs fcl, vs brute force, first vs all contacts).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..cli.args import COMMAND_LINE, csv_file, integer, png_file
from ..errors import InputError

DEFAULT_MODELS = ("lamp", "fighter", "freighter", "torus", "capsules")
POSE_KINDS = ("deep", "shallow")
SHALLOW_SCALE = (0.98, 1.03)  # centre distance as a multiple of the first-contact distance
MARCH_STEPS = 64   # inward steps looking for the first colliding distance (finer steps miss thinner features)
BISECT_STEPS = 12  # then halvings of one step: first contact to 1/4096 of a step
FCL_CHUNK = 50     # poses per timed fcl loop (see FclPair.timed)
MIN_TIMING_S = 0.05  # [s] spent on each timed call at least (see best_time)
MAX_TRIES = 50
# The sphere levels, the exact level and fcl's collide are timed in turn this many times, the best of each kept:
# this VM switches between a fast mode and one ~1.7x slower from second to second, and level 2 and fcl timed
# seconds apart gave the fighter's deep ratio anywhere in 6.2-16.8x over seven runs.
ROUNDS = 3


def register(sub) -> None:
    p = sub.add_parser("narrowphase", help="narrow phase µs/pair per level and exact vs fcl, deep and shallow poses")
    p.add_argument("--poses", "--pairs", dest="poses", type=integer(1, 1_000_000), default=1000,
                   help="random pair poses per model and pose kind [-]")
    p.add_argument("--poses-kind", choices=(*POSE_KINDS, "both"), default="both",
                   help="deep: centres anywhere inside the bounding spheres; shallow: near first contact")
    p.add_argument("--model", action="append", metavar="NAME_OR_PATH",
                   help="model in assets/, built-in torus or capsules, or a mesh file; repeatable or "
                        f"comma-separated (default: {','.join(DEFAULT_MODELS)})")
    p.add_argument("--method", default="medial", choices=("octree", "medial"), help="sphere-tree builder")
    p.add_argument("--depth", type=integer(1, 5), default=3, help="sphere-tree levels below the root [-]")
    # brute force takes ~0.05 s a pose on the lamp, ~0.5 s on the capsules, seconds on the freighter
    p.add_argument("--brute-poses", type=integer(1, 10_000), default=6,
                   help="poses timed with the (slow) brute force [-]")
    p.add_argument("--repeat", type=integer(1, 1000), default=3,
                   help=f"timing repeats at least (more until {MIN_TIMING_S:g} s spent); the best is reported [-]")
    p.add_argument("--threads", type=thread_counts, default=None, metavar="N[,N...]",
                   help="numba threads for the SSV batches, one set of SSV rows each (default: numba's)")
    p.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                   help="what timings read: wall (elapsed, the default) or cpu (the calling thread's CPU time: "
                        "steady under other processes' load, but numba prange workers — the SSV rows with "
                        "threads — are not counted)")
    p.add_argument("--seed", type=integer(0, 2**63 - 1), default=0)
    p.add_argument("--csv", type=csv_file, metavar="PATH", help="write every row to this CSV file")
    p.add_argument("--plot", type=png_file, metavar="PNG", help="bar chart of µs/pair per method (log scale)")
    p.set_defaults(func=run)


def thread_counts(text: str) -> tuple[int, ...]:
    """Comma-separated thread counts, each 1..numba's thread count."""
    import numba
    most = numba.config.NUMBA_NUM_THREADS
    try:
        counts = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, got {text!r}") from None
    if not counts or any(not 1 <= c <= most for c in counts):
        raise argparse.ArgumentTypeError(f"each must be in 1..{most} (numba's thread count), got {text!r}")
    return counts


@dataclass(frozen=True)
class Model:
    label: str       # as given on the command line
    mesh: object     # spaceship_sim.meshes.Mesh
    cache_dir: Path | None  # sphere-tree cache folder (None: assets/trees/)


@dataclass(frozen=True)
class Row:
    model: str
    triangles: int
    poses_kind: str
    poses: int
    method: str
    us_per_pair: float
    median_bound_m: float  # over the pairs found colliding; 0 at the exact levels
    colliding_fraction: float
    vs_reference: float    # reference µs / this method's µs (> 1: faster than the reference)
    reference: str


# ---------------------------------------------------------------- models

def model_names(values) -> list[str]:
    """--model values (repeated and/or comma-separated) in order, without repeats."""
    names = [n.strip() for v in (values or [",".join(DEFAULT_MODELS)]) for n in v.split(",")]
    return list(dict.fromkeys(n for n in names if n))


def torus_mesh():
    """A 1,600-triangle torus, 10.4 m across (the size of the fighter)."""
    import trimesh
    return trimesh.creation.torus(major_radius=4.0, minor_radius=1.2, major_sections=40, minor_sections=20)


def capsules_mesh():
    """Two capsules crossing at right angles, boolean union (manifold3d): 2,400 triangles, 11 m."""
    import trimesh
    a = trimesh.creation.capsule(height=8.0, radius=1.5, count=[24, 24])
    b = a.copy()
    b.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1.0, 0.0, 0.0]))
    return trimesh.boolean.union([a, b], engine="manifold")


BUILTIN = {"torus": torus_mesh, "capsules": capsules_mesh}


def resolve_model(name: str) -> Model:
    """The mesh a --model value names; InputError(command line, --model) when it names none."""
    from ..meshes import MESH_SUFFIXES, MeshError, available_models, load_mesh, model_path, validate_mesh_arrays

    if name in BUILTIN:
        made = BUILTIN[name]()
        return Model(name, _centred(validate_mesh_arrays(made.vertices, made.faces, f"built-in {name}", name)),
                     _user_cache())
    if name in available_models():
        return Model(name, load_mesh(model_path(name)), None)
    path = Path(name)
    if path.suffix.lower() not in MESH_SUFFIXES and not os.path.exists(path):  # False for a name too long
        known = ", ".join([*available_models(), *BUILTIN])
        raise InputError(COMMAND_LINE, "--model", f"unknown model {name!r} (models: {known}; or a mesh file "
                         f"{'/'.join(s[1:] for s in MESH_SUFFIXES)})")
    try:
        mesh = load_mesh(path)
    except MeshError as e:
        raise InputError(COMMAND_LINE, "--model", str(e)) from None
    return Model(name, _centred(mesh), _user_cache())


def _centred(mesh):
    """The mesh moved to centre its bounding box on the body origin (the poses assume a mid-ship
    origin); a translation keeps every validated property."""
    v = mesh.vertices - (mesh.vertices.min(0) + mesh.vertices.max(0)) / 2
    v.flags.writeable = False
    return dataclasses.replace(mesh, vertices=v)


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spaceship_sim" / "trees"


def load_tree(model: Model, method: str, depth: int):
    """The model's cached sphere tree, built (seconds; said on stderr when slow) when not cached."""
    from ..progress import slow_notice
    from ..spheretree import load_or_build
    with slow_notice(f"{model.label}: {method} sphere tree of {len(model.mesh.faces)} triangles"):
        return load_or_build(model.mesh, method=method, branching=8, depth=depth, cache_dir=model.cache_dir)


# ---------------------------------------------------------------- poses

def random_rotations(rng, n: int) -> np.ndarray:
    """(n, 3, 3) uniformly random rotations (from unit quaternions)."""
    q = rng.normal(size=(n, 4))
    w, x, y, z = (q / np.linalg.norm(q, axis=1, keepdims=True)).T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def random_directions(rng, n: int) -> np.ndarray:
    d = rng.normal(size=(n, 3))
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def pair_poses(rotations, centres) -> np.ndarray:
    """(2n, 4, 4): ship 2i at the origin, ship 2i+1 rotated by rotations[i] about centres[i]."""
    T = np.tile(np.eye(4), (2 * len(centres), 1, 1))
    T[1::2, :3, :3] = rotations
    T[1::2, :3, 3] = centres
    return T


def random_poses(rng, n: int, reach: float) -> np.ndarray:
    """Deep poses (2n, 4, 4): ship B's centre uniform in the ball of radius `reach`."""
    rot, d = random_rotations(rng, n), random_directions(rng, n)
    return pair_poses(rot, d * reach * rng.uniform(size=(n, 1)) ** (1 / 3))


def shallow_poses(rng, n: int, far: float, verdict):
    """Near-touching poses (2n, 4, 4) and each pose's first-contact distance (n,): B moved along
    a random direction from `far` (certainly apart) to first contact, then scaled by SHALLOW_SCALE.
    verdict(T (2m, 4, 4)) -> (m,) bool is the exact collision test."""
    rot, d = random_rotations(rng, n), random_directions(rng, n)
    contact = first_contact(lambda i, s: verdict(pair_poses(rot[i], d[i] * s[:, None])), n, far)
    return pair_poses(rot, d * (contact * rng.uniform(*SHALLOW_SCALE, size=n))[:, None]), contact


def first_contact(collides, n: int, far: float) -> np.ndarray:
    """Per pose, the largest distance s in [0, far] at which collides(pose indices, s) is True:
    march inwards from `far` in MARCH_STEPS steps to the first collision, then bisect that step."""
    step = far / MARCH_STEPS
    lo = np.zeros(n)  # colliding distance (0 when the march never hits: ships at the same centre)
    todo = np.arange(n)
    for k in range(1, MARCH_STEPS):
        hit = collides(todo, np.full(len(todo), far - k * step))
        lo[todo[hit]] = far - k * step
        todo = todo[~hit]
        if not len(todo):
            break
    hi = np.minimum(lo + step, far)
    for _ in range(BISECT_STEPS):
        mid = (lo + hi) / 2
        hit = collides(np.arange(n), mid)
        lo, hi = np.where(hit, mid, lo), np.where(hit, hi, mid)
    return lo


# ---------------------------------------------------------------- timed methods

CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
_timer = CLOCKS["wall"]  # what best_time reads: --clock, set once by run()


def best_time(call, repeat: int, min_s: float = MIN_TIMING_S):
    """(shortest seconds of `call()`, its last result): at least `repeat` calls, more until
    min_s has been spent (at most MAX_TRIES), so that a short call preempted on a loaded
    machine gets more chances, as a long one's many inner iterations average the load out."""
    best, result, spent, tries = np.inf, None, 0.0, 0
    while tries < repeat or (spent < min_s and tries < MAX_TRIES):
        t0 = _timer()
        result = call()
        took = _timer() - t0
        best, spent, tries = min(best, took), spent + took, tries + 1
    return best, result


def in_turn(timers: dict, rounds: int = ROUNDS) -> dict:
    """{name: (least µs/pair, last result)} of zero-argument timers returning (µs/pair, result) —
    or, for methods a timer measures together, {name: (µs/pair, result)} — each called once a
    round, in order, for `rounds` rounds: whatever mode the machine is in during a round, every
    method of the round sees it."""
    got = {}
    for _ in range(rounds):
        for name, timer in timers.items():
            out = timer()
            for key, (us, result) in (out.items() if isinstance(out, dict) else ((name, out),)):
                got[key] = (min(us, got[key][0]) if key in got else us, result)
    return got


def timed_refine(bank, T, max_level, exact, repeat, all_contacts=True):
    """µs/pair of one refine_frame call over all poses (best_time), and its result."""
    from ..narrowphase import refine_frame
    n = len(T) // 2
    pairs = np.arange(2 * n).reshape(n, 2)
    model_id = np.zeros(2 * n, np.int64)

    def call():
        return refine_frame(bank, model_id, T, pairs, deadline=np.inf, min_level=0, max_level=max_level,
                            triangle_tests=exact, all_contacts=all_contacts)
    call()  # the first call compiles / warms caches
    best, result = best_time(call, repeat)
    return best / n * 1e6, result


def timed_ocst(mesh, depth, T, repeat):
    """µs/pair of the exact level (first contact) on on-collide trees of `mesh`: cold — one call
    on a fresh bank, which builds every node the poses reach — and warm (best_time, all built)."""
    from ..narrowphase import refine_frame
    from ..narrowphase.ocst import OcstBank
    n = len(T) // 2
    bank = OcstBank([mesh], depth=depth)
    pairs, model_id = np.arange(2 * n).reshape(n, 2), np.zeros(2 * n, np.int64)

    def call():
        return refine_frame(bank, model_id, T, pairs, deadline=np.inf, min_level=0, triangle_tests=True, all_contacts=False)
    t0 = time.perf_counter()
    call()
    cold = time.perf_counter() - t0
    best, result = best_time(call, repeat)
    return cold / n * 1e6, best / n * 1e6, result


def exact_verdict(bank):
    """verdict(T) -> colliding per pose, from the project's exact level (first contact)."""
    from ..narrowphase import refine_frame
    return lambda T: refine_frame(bank, np.zeros(len(T), np.int64), T, np.arange(len(T)).reshape(-1, 2),
                                  deadline=np.inf, min_level=0, triangle_tests=True, all_contacts=False).colliding


def timed_exact_method(name, mesh, T, all_contacts, repeat):
    """µs/pair of EXACT_METHODS[name] (built on the one mesh) over all poses in one collide call
    (best_time), and its ExactAnswer."""
    from ..registry import EXACT_METHODS
    detector, n = EXACT_METHODS[name]([mesh]), len(T) // 2
    model = np.zeros(n, np.int64)

    def call():
        return detector.collide(model, model, T[0::2], T[1::2], all_contacts)
    call()  # the first call compiles / warms caches
    best, answer = best_time(call, repeat)
    return best / n * 1e6, answer


def timed_brute(mesh, T):
    from ..narrowphase.reference import brute_force_pair
    hits = []
    t0 = time.perf_counter()
    for i in range(len(T) // 2):
        hits.append(len(brute_force_pair(mesh.vertices, mesh.faces, T[2 * i], mesh.vertices, mesh.faces,
                                         T[2 * i + 1])) > 0)
    return (time.perf_counter() - t0) / max(len(hits), 1) * 1e6, np.array(hits)


class FclPair:
    """Two fcl CollisionObjects sharing the mesh's BVHModel(OBBRSS)."""

    FIRST = "fcl collide, first contact"
    ALL = "fcl collide, all contacts"

    def __init__(self, fcl, mesh):
        self.fcl = fcl
        model = self.build(mesh)
        self.a, self.b = fcl.CollisionObject(model, fcl.Transform()), fcl.CollisionObject(model, fcl.Transform())
        self.requests = {self.FIRST: fcl.CollisionRequest(),
                         self.ALL: fcl.CollisionRequest(num_max_contacts=1 << 20, enable_contact=True)}

    def build(self, mesh):
        """fcl's BVHModel(OBBRSS) hierarchy of the mesh."""
        model = self.fcl.BVHModel()
        model.beginModel(len(mesh.vertices), len(mesh.faces))
        model.addSubModel(np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int32))
        model.endModel()
        return model

    def transforms(self, T):
        Tf = self.fcl.Transform
        return [(Tf(T[i, :3, :3], T[i, :3, 3]), Tf(T[i + 1, :3, :3], T[i + 1, :3, 3])) for i in range(0, len(T), 2)]

    def collide(self, tfs, method=FIRST) -> np.ndarray:
        fcl, request, out = self.fcl, self.requests[method], []
        for ta, tb in tfs:  # transforms set per query, as a simulation would
            self.a.setTransform(ta)
            self.b.setTransform(tb)
            out.append(fcl.collide(self.a, self.b, request, fcl.CollisionResult()) > 0)
        return np.array(out, bool)

    def verdict(self, T) -> np.ndarray:
        return self.collide(self.transforms(T))

    def distance(self, tfs) -> np.ndarray:
        """fcl's exact mesh-mesh distance per pose (0 when intersecting) [m]."""
        fcl, request, out = self.fcl, self.fcl.DistanceRequest(enable_nearest_points=True), []
        for ta, tb in tfs:
            self.a.setTransform(ta)
            self.b.setTransform(tb)
            out.append(max(fcl.distance(self.a, self.b, request, fcl.DistanceResult()), 0.0))
        return np.array(out)

    def timed_distance(self, T, repeat):
        """µs/pair of fcl distance over the poses (in chunks, as `timed`), and its distances."""
        tfs, total, out = self.transforms(T), 0.0, []
        for s in range(0, len(tfs), FCL_CHUNK):
            best, d = best_time(lambda: self.distance(tfs[s:s + FCL_CHUNK]), repeat)
            total, out = total + best, out + [d]
        return total / len(tfs) * 1e6, np.concatenate(out)

    def timed(self, T, method, repeat):
        """µs/pair of `method` over the poses, and its verdicts. Timed in chunks of FCL_CHUNK poses,
        best_time each: fcl's Python loop runs ~10x longer than a batched refine_frame call,
        so on a loaded machine one best-of over all poses would count more preemption against fcl."""
        tfs, total, hits = self.transforms(T), 0.0, []
        for s in range(0, len(tfs), FCL_CHUNK):
            best, chunk_hits = best_time(lambda: self.collide(tfs[s:s + FCL_CHUNK], method), repeat)
            total += best
            hits.append(chunk_hits)
        return total / len(tfs) * 1e6, np.concatenate(hits)


def fcl_pair(mesh):
    """FclPair for the mesh, or None when python-fcl is not installed."""
    try:
        import fcl
    except ImportError:
        return None
    return FclPair(fcl, mesh)


# ---------------------------------------------------------------- one model, one pose kind

def make_poses(kind, args, tree, bank, peer):
    """(T, how the poses were made) for pose kind `kind`; the same seed gives the same poses."""
    reach = 2 * float(tree.radius[0])
    if kind == "deep":
        return random_poses(np.random.default_rng(args.seed), args.poses, reach), \
            f"centres uniform in a ball of radius {reach:.3g} m = 2 root radii"
    from ..progress import slow_notice
    far = reach + 2 * float(np.linalg.norm(tree.center[0]))  # root spheres apart beyond this
    oracle, name = (peer.verdict, "fcl") if peer else (exact_verdict(bank), "exact level")
    with slow_notice(f"first contacts of {args.poses} shallow poses ({name})"):
        T, contact = shallow_poses(np.random.default_rng([args.seed, 1]), args.poses, far, oracle)
    return T, (f"first contact by {name} along a random direction (median {np.median(contact):.3g} m), "
               f"x U{SHALLOW_SCALE}")


def measure(T, tree, bank, mesh, peer, args):
    """[(method, µs/pair, colliding (n,) or (m,), median bound)] and the verdict checks."""
    timers = {f"sphere level {level}": functools.partial(timed_refine, bank, T, level, False, args.repeat)
              for level in range(tree.depth + 1)}
    timers["exact, first contact"] = functools.partial(timed_refine, bank, T, None, True, args.repeat,
                                                       all_contacts=False)
    timers["exact, all contacts"] = functools.partial(timed_refine, bank, T, None, True, args.repeat)
    for method in (FclPair.FIRST, FclPair.ALL) if peer else ():
        timers[method] = functools.partial(peer.timed, T, method, args.repeat)
    got = in_turn(timers)
    rows = []
    for level in range(tree.depth + 1):
        us, r = got[f"sphere level {level}"]
        rows.append((f"sphere level {level}", us, r.colliding, _median_bound(r)))
    (first_us, first), (all_us, exact) = got["exact, first contact"], got["exact, all contacts"]
    rows += [("exact, first contact", first_us, first.colliding, 0.0),
             ("exact, all contacts", all_us, exact.colliding, 0.0)]
    cold_us, warm_us, on = timed_ocst(mesh, tree.depth, T, args.repeat)
    rows += [("ocst cold, first contact", cold_us, on.colliding, 0.0),
             ("ocst warm, first contact", warm_us, on.colliding, 0.0)]
    n, m = len(T) // 2, min(args.brute_poses, len(T) // 2)
    checks = [("exact first contact = all contacts", np.sum(first.colliding == exact.colliding), n),
              ("ocst = exact", np.sum(on.colliding == exact.colliding), n)]
    for method, all_contacts in itertools.product(("faceoctree", "bsp"), (False, True)):
        label = f"{method}, {'all contacts' if all_contacts else 'first contact'}"
        us, answer = timed_exact_method(method, mesh, T, all_contacts, args.repeat)
        rows.append((label, us, answer.colliding, 0.0))
        checks.append((f"{label} = exact", np.sum(answer.colliding == exact.colliding), n))
    for method in (FclPair.FIRST, FclPair.ALL) if peer else ():
        us, hits = got[method]
        rows.append((method, us, hits, 0.0))
        checks.append((f"exact = {method}", np.sum(exact.colliding == hits), n))
    rows_ssv, checks_ssv = measure_ssv(T, mesh, peer, args)
    rows += rows_ssv
    checks += checks_ssv
    brute_us, brute = timed_brute(mesh, T[:2 * m])
    rows.append((f"brute force ({m} poses)", brute_us, brute, 0.0))
    checks.append(("exact = brute force", np.sum(exact.colliding[:m] == brute), m))
    return rows, checks


TRAJECTORY_FRAMES = 600  # poses along one smooth relative motion (coherent distance)
SSV_DISTANCES = (("exact", 0.0), ("1%", 0.01), ("10%", 0.1))


def trajectory(T, frames: int = TRAJECTORY_FRAMES) -> np.ndarray:
    """(2 frames, 4, 4): ship B's pose moving smoothly from the first pose pair's to the second's
    (translation interpolated, rotation about a fixed axis), A at the origin: coherent motion."""
    from scipy.spatial.transform import Rotation, Slerp
    s = np.linspace(0.0, 1.0, frames)
    rot = Slerp([0.0, 1.0], Rotation.from_matrix(T[[1, 3], :3, :3]))(s).as_matrix()
    return pair_poses(rot, (1 - s)[:, None] * T[1, :3, 3] + s[:, None] * T[3, :3, 3])


def measure_ssv(T, mesh, peer, args):
    """SSV rows: collide (first, all contacts) and distance (exact, 1%, 10%) under each --threads
    count, distance coherent along a trajectory (one pair per call: one thread), fcl distance on
    the same poses; verdict checks against fcl. The distances, the trajectory and fcl's distance
    are timed in turn (`in_turn`), as the levels and fcl's collide are."""
    from ..ssv.exact import SSVExact
    n = len(T) // 2
    z, Ta, Tb = np.zeros(n, np.int64), T[0::2], T[1::2]
    rows, checks, timers, distance_rows = [], [], {}, []
    counts = args.threads or (None,)
    # one batch call spans all n poses, n / FCL_CHUNK of fcl's timed chunks: the same time budget
    # as fcl's (MIN_TIMING_S a chunk), so that preemption gets as many chances to miss a try
    min_s = MIN_TIMING_S * max(1.0, n / FCL_CHUNK)

    def timed_distance(ssv, rel):
        best, got = best_time(lambda: ssv.distance(z, z, Ta, Tb, rel=rel), args.repeat, min_s)
        return best / n * 1e6, got.distance

    for threads in counts:
        ssv = SSVExact([mesh], cache_dir=_user_cache(), threads=threads)
        tag = f" [{threads} thr]" if len(counts) > 1 else ""
        for name, all_contacts in (("ssv collide, first contact", False), ("ssv collide, all contacts", True)):
            def call():
                return ssv.collide(z, z, Ta, Tb, all_contacts, with_distance=False)
            call()  # compile / load the kernels of this very call (a batch this size may run in parallel)
            best, got = best_time(call, args.repeat, min_s)
            rows.append((name + tag, best / n * 1e6, got.colliding, 0.0))
        for label, rel in SSV_DISTANCES:
            distance_rows.append(f"ssv distance, {label}{tag}")
            timers[distance_rows[-1]] = functools.partial(timed_distance, ssv, rel)
    if peer:
        timers["fcl distance"] = functools.partial(peer.timed_distance, T, args.repeat)
    path = trajectory(T)
    timers["trajectory"] = functools.partial(timed_trajectory, ssv, path, peer)
    got = in_turn(timers)
    exact = got[distance_rows[0]][1]  # the first thread count's exact distance
    for name in distance_rows:
        rows.append((name, got[name][0], got[name][1] == 0, float(np.median(got[name][1]))))
    frames = len(path) // 2
    along = got[f"ssv distance, coherent ({frames} frames)"][1]
    for name in (f"ssv distance, {label} ({frames} frames)" for label in ("coherent", "seeded")):
        rows.append((name, got[name][0], along == 0, float(np.median(along))))
    if peer:
        us, fd = got["fcl distance"]
        rows.append(("fcl distance", us, fd == 0, float(np.median(fd))))
        checks.append(("ssv distance = fcl distance (1e-6 m)", int(np.sum(np.abs(fd - exact) <= 1e-6)), n))
        us_traj, fd_traj = got[f"fcl distance, trajectory ({frames} frames)"]
        rows.append((f"fcl distance, trajectory ({frames} frames)", us_traj, fd_traj == 0, float(np.median(fd_traj))))
        checks.append(("ssv coherent = fcl along the trajectory (1e-6 m)", int(np.sum(np.abs(fd_traj - along) <= 1e-6)),
                       frames))
        hits = peer.collide(peer.transforms(T))
        checks.append(("ssv collide = fcl", int(np.sum(rows[0][2] == hits)), n))
    return rows, checks


def timed_trajectory(ssv, path, peer):
    """{name: (µs/frame, distances)} of the distance along the trajectory `path`, one query per frame:
    front tracking ("coherent": the last frame's front carried on), triangle caching ("seeded": its
    closest triangle pair) and fcl's (when peer). Timed as fcl's distance, in chunks of FCL_CHUNK
    frames, best of each, the state carried on; the methods alternate chunk by chunk, so that all meet
    the same conditions (one after the other, front tracking measured 1.3-1.6x the seeded query on the
    freighter's mostly touching trajectory, where both do the same work; alternating, 1.0x)."""
    zt, Pa, Pb = np.zeros(1, np.int64), path[0::2], path[1::2]

    def coherent(frames, carried, front):
        out = []
        carried = carried.copy() if front and carried is not None else carried  # best_time may rerun the chunk
        for i in frames:
            if front:
                r = ssv.distance(zt, zt, Pa[i:i + 1], Pb[i:i + 1], front=carried, keep_front=True)
                carried = r.front
            else:
                r = ssv.distance(zt, zt, Pa[i:i + 1], Pb[i:i + 1], seed=carried)
                carried = r.tri
            out.append(r.distance[0])
        return np.array(out), carried

    carried = {"coherent": None, "seeded": np.full((1, 2), -1)}
    for label in carried:
        coherent(range(2), carried[label], label == "coherent")  # compile / load
    tfs = peer.transforms(path) if peer else None
    best, parts = dict.fromkeys((*carried, "fcl"), 0.0), {k: [] for k in (*carried, "fcl")}
    for s in range(0, len(Pa), FCL_CHUNK):
        frames = range(s, min(s + FCL_CHUNK, len(Pa)))
        for label in carried:
            took, (part, carried[label]) = best_time(lambda: coherent(frames, carried[label], label == "coherent"), 1)
            best[label] += took
            parts[label].append(part)
        if peer:
            took, part = best_time(lambda: peer.distance(tfs[s:s + FCL_CHUNK]), 1)
            best["fcl"] += took
            parts["fcl"].append(part)
    along = {k: np.concatenate(v) for k, v in parts.items() if v}
    if not np.array_equal(along["seeded"], along["coherent"]):
        raise AssertionError("front tracking and triangle caching disagree along the trajectory")
    names = {"coherent": "ssv distance, coherent", "seeded": "ssv distance, seeded", "fcl": "fcl distance, trajectory"}
    return {f"{names[k]} ({len(Pa)} frames)": (best[k] / len(Pa) * 1e6, along[k]) for k in along}


def _median_bound(result):
    b = result.separation_bound[result.colliding]
    return float(np.median(b)) if len(b) else float("nan")


def bench_kind(model, kind, tree, bank, peer, args):
    """Rows and checks of one model on one pose kind, printed as a table."""
    T, how = make_poses(kind, args, tree, bank, peer)
    measured, checks = measure(T, tree, bank, model.mesh, peer, args)
    ref_name = FclPair.FIRST if peer else "exact, first contact"
    ref_us = next(us for name, us, _, _ in measured if name == ref_name)
    rows = [Row(model.label, len(model.mesh.faces), kind, len(hits), name, us, bound, float(np.mean(hits)),
                ref_us / us, ref_name) for name, us, hits, bound in measured]
    print(f"  {kind} poses ({args.poses}; {how}):")
    print(f"    {'method':28s} {'µs/pair':>10s} {'colliding':>10s} {'median bound [m]':>17s} "
          f"{'vs ' + ref_name:>30s}")
    for r in rows:
        print(f"    {r.method:28s} {r.us_per_pair:10.2f} {100 * r.colliding_fraction:9.1f}% "
              f"{r.median_bound_m:17.4f} {r.vs_reference:29.2f}x")
    print("    verdicts: " + ", ".join(f"{name} on {int(ok)}/{total}" for name, ok, total in checks))
    failed = [name for name, ok, total in checks if ok != total]
    for name in failed:
        print(f"    CHECK FAILED: {name}")
    return rows, not failed


# ---------------------------------------------------------------- command

def run(args) -> int:
    global _timer
    models = [resolve_model(name) for name in model_names(args.model)]  # all checked before any work
    _timer = CLOCKS[args.clock]
    if args.clock == "cpu":
        print("timings: CPU time of this thread (time.thread_time), not elapsed time")
    kinds = POSE_KINDS if args.poses_kind == "both" else (args.poses_kind,)
    from ..narrowphase import TreeBank
    rows, ok, builds = [], True, []
    for model in models:
        tree = load_tree(model, args.method, args.depth)
        bank = TreeBank.from_trees([tree])
        peer = fcl_pair(model.mesh)
        if peer is None and model is models[0]:
            print("note: python-fcl is not installed (pip install python-fcl): no fcl rows; "
                  "ratios are against the project's exact first contact")
        print(f"model {model.label}: {len(model.mesh.faces)} triangles, bounding radius "
              f"{model.mesh.bounding_radius:.3g} m, {args.method} tree depth {tree.depth} ({tree.n_nodes} spheres)")
        builds.append((model.label, *timed_builds(model.mesh, peer, args.repeat)))
        for kind in kinds:
            kind_rows, kind_ok = bench_kind(model, kind, tree, bank, peer, args)
            rows += kind_rows
            ok &= kind_ok
    print_summary(rows, kinds)
    print_strategies(rows, kinds, builds)
    if args.csv:
        from ..sim.frame_log import write_csv
        write_csv(Path(args.csv), [asdict(r) for r in rows])
    if args.plot:
        plot_rows(Path(args.plot), rows, kinds)
    return 0 if ok else 1


SHORT = {"sphere level 2": "level 2", "exact, first contact": "exact first contact",
         "faceoctree, first contact": "faceoctree first contact",
         FclPair.FIRST: "fcl first contact"}


def print_summary(rows, kinds) -> None:
    ref = rows[0].reference
    print(f"summary (x = {SHORT[ref]} µs/pair / method µs/pair, same run; > 1 is faster):")
    for model in dict.fromkeys(r.model for r in rows):
        parts = []
        for method in ("sphere level 2", "exact, first contact", "faceoctree, first contact"):
            got = {r.poses_kind: r.vs_reference for r in rows if r.model == model and r.method == method}
            if got and method != ref:
                parts.append(f"{SHORT[method]} vs {SHORT[ref]}: " + ", ".join(f"{got[k]:.2f}x ({k})" for k in kinds))
        print(f"  {model}: " + "; ".join(parts))


# the exact level's strategies (config.EXACT_LEVELS) -> their first-contact row in this bench
EXACT_ROWS = {"sphere_leaves": "exact, first contact", "ssv": "ssv collide, first contact",
              "bsp": "bsp, first contact", "faceoctree": "faceoctree, first contact",
              "ocst": "ocst warm, first contact", "fcl": FclPair.FIRST}
BUILD_TARGET = 20.0  # the SSV tree's build within this multiple of fcl's OBBRSS build


def timed_builds(mesh, peer, repeat: int) -> tuple[float, float]:
    """Seconds to build the mesh's SSV tree (compiled builder, compiled beforehand on a tetrahedron,
    not cached) and fcl's BVHModel(OBBRSS) of it (nan without python-fcl), best of `repeat` each,
    timed in turn."""
    from ..ssv.tree import build_ssv
    build_ssv(np.eye(4, 3), np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]))  # compile / load
    timers = {"ssv": lambda: (best_time(lambda: build_ssv(mesh.vertices, mesh.faces), repeat, 0.0)[0], None)}
    if peer:
        timers["fcl"] = lambda: (best_time(lambda: peer.build(mesh), repeat, 0.0)[0], None)
    got = in_turn(timers)
    return got["ssv"][0], got["fcl"][0] if peer else float("nan")


def print_strategies(rows, kinds, builds) -> None:
    """One table: every exact strategy's first contact against fcl's, model by model and pose kind,
    the config's default marked; then the SSV tree's build time against fcl's."""
    from ..config import EXACT_LEVELS, CollisionConfig
    default = CollisionConfig().exact_method
    us = {(r.model, r.poses_kind, r.method): r.us_per_pair for r in rows}
    names = [f"{m}{'*' if m == default else ''}" for m in EXACT_LEVELS]
    ref = rows[0].reference  # fcl's first contact; the project's exact level without python-fcl
    print(f"exact strategies, first contact: µs/pair / {SHORT[ref]} µs/pair, same poses (< 1: faster; "
          f"* the default exact level, collision.exact_method = {default!r}):")
    print(f"  {'model':12s} {'poses':8s} " + " ".join(f"{n:>14s}" for n in names))
    for model in dict.fromkeys(r.model for r in rows):
        for kind in kinds:
            cells = [us.get((model, kind, EXACT_ROWS[m]), float("nan")) / us[model, kind, ref] for m in EXACT_LEVELS]
            print(f"  {model:12s} {kind:8s} " + " ".join(f"{c:13.2f}x" for c in cells))
    print(f"tree builds, best of the repeats (target: SSV within {BUILD_TARGET:g}x fcl's OBBRSS):")
    for model, ssv_s, fcl_s in builds:
        print(f"  {model:12s} SSV {1e3 * ssv_s:9.1f} ms" + ("" if np.isnan(fcl_s) else
              f"   fcl OBBRSS {1e3 * fcl_s:7.1f} ms   SSV / fcl {ssv_s / fcl_s:6.1f}x"))


def plot_rows(path: Path, rows, kinds) -> None:
    """One panel per model: µs/pair per method (log scale), a bar per pose kind."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r.model for r in rows))
    fig, axes = plt.subplots(len(models), 1, figsize=(11, 3.2 * len(models)), squeeze=False)
    width = 0.8 / len(kinds)
    for ax, model in zip(axes[:, 0], models):
        # brute force (the oracle, 10^5 µs) left out: it would squash the contenders' bars
        methods = list(dict.fromkeys(r.method for r in rows if r.model == model and not r.method.startswith("brute")))
        for j, kind in enumerate(kinds):
            us = {r.method: r.us_per_pair for r in rows if r.model == model and r.poses_kind == kind}
            x = np.arange(len(methods)) + (j - (len(kinds) - 1) / 2) * width
            ax.bar(x, [us[m] for m in methods], width, label=f"{kind} poses")
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(methods)), methods, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("µs / pair")
        ax.set_title(f"{model} ({next(r.triangles for r in rows if r.model == model)} triangles)", fontsize=10)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
