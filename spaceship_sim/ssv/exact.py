"""SSVExact: the exact strategy on SSV trees (narrowphase.exact's contract) plus the distance queries.

    ssv = SSVExact(meshes)                       # trees loaded from the cache or built
    ssv.collide(ma, mb, Ta, Tb, all_contacts)    # ExactAnswer; pairs found apart get their distance
    ssv.distance(ma, mb, Ta, Tb, rel, abs_tol, seed=..., priority=...)   # DistanceAnswer
    ssv.closer_than(ma, mb, Ta, Tb, d)           # (k,) bool

Coherence is the caller's: pass last frame's `DistanceAnswer.tri` back as `seed` (triangle caching),
or ask for the search's front (`keep_front=True`) and pass last frame's `DistanceAnswer.front` back as
`front` (front tracking: the seed and the proof that nothing is closer, both carried over).
Faces are local to each model's mesh; transforms are (k, 4, 4) rigid body->world.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..narrowphase.exact import ExactAnswer
from ..progress import slow_notice, to_stderr
from ..threads import ThreadChoice, numba_threads
from ..geometry.poses import relative_poses
from .query import chunks, collide_pairs, distance_pairs
from .tree import SSVBank, build_ssv, load_or_build_ssv

ALL_CONTACTS_CAP = 64        # triangle pairs stored per row on a first all-contacts pass (rows with more run
MAX_REMEMBERED_CAP = 4096    # again); a larger count seen is remembered for later calls, up to this
PARALLEL_MIN_ROWS = 64       # smaller batches run on one thread: waking the pool costs more than they take
QUERY_KINDS = ("first contact", "all contacts", "distance")  # each with its own thread choice
PENDING_ROOM = 16            # a distance row's room for pending node pairs per tree level (doubled when short)
FRONT_ROOM = 8192            # node pairs a row's front may hold (a row whose front outgrows it starts over next time)


@dataclass(frozen=True, eq=False)
class DistanceAnswer:
    """Distance queries for k pairs (arrays over the pairs, in input order).

    distance : (k,) float64 [m], separation of the surfaces within the tolerance asked (0 when they
               intersect; the `bound` asked for when nothing closer exists)
    tri      : (k, 2) int64, (face of A, face of B) realising it, local to each mesh (-1: none)
    points   : (k, 2, 3) float64, world [m], the closest points on A's and B's face (nan when
               intersecting or none)
    front    : DistanceFront for the next frame's query (None unless asked for)
    """

    distance: np.ndarray
    tri: np.ndarray
    points: np.ndarray
    front: "DistanceFront | None" = None


@dataclass(eq=False)
class DistanceFront:
    """Where each row's distance search stopped: the node pairs it did not descend, with lower
    bounds on their triangles' distance at the relative pose R, t they hold at (query.distance_pairs),
    and its closest triangle pair. Passed back as `front`, it is spent: the next answer's front
    reuses its arrays (a second use raises).

    roots : (k, 2) int64 root nodes of the rows; R (k, 3, 3), t (k, 3): the poses
    x, y, lb : (k, FRONT_ROOM) the pairs, n (k,) int64 how many per row (-1: none kept)
    fresh : (k,) int64, how many the last search from the roots left (query.FRONT_GROWTH)
    tri   : (k, 2) int64 global faces of the closest pair (-1: none)
    """

    roots: np.ndarray
    R: np.ndarray
    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    lb: np.ndarray
    n: np.ndarray
    fresh: np.ndarray
    tri: np.ndarray
    spent: bool = False

    def copy(self) -> "DistanceFront":
        """An unspent copy (to run the same frame again from the same front)."""
        return DistanceFront(*(getattr(self, f).copy() for f in ("roots", "R", "t", "x", "y", "lb", "n", "fresh", "tri")))


class SSVExact:
    """Exact collision and distance between placed meshes on their SSV trees.

    meshes    : sequence of spaceship_sim.meshes.Mesh (model index = position)
    cache_dir : tree cache folder (None: assets/trees/); cache=False builds without caching
    threads   : the most numba threads for batches of PARALLEL_MIN_ROWS pairs or more (None: numba's
                default); each batch runs serial or on them, whichever was measured faster (threads.py);
                the answers do not depend on it; adaptive_threads=False: always that many
    notify    : where to say that trees are being built when that takes over a second (a mesh's first
                use: the freighter's takes ~17 s; None: nowhere)
    """

    def __init__(self, meshes, cache_dir=None, cache: bool = True, threads: int | None = None, notify=to_stderr,
                 adaptive_threads: bool = True):
        with slow_notice("building the SSV trees not cached yet (once per mesh)", notify):
            trees = [load_or_build_ssv(m, cache_dir) if cache else build_ssv(m.vertices, m.faces) for m in meshes]
        self.trees = trees
        self.bank = SSVBank.from_trees(trees)
        self.depth = int(self.bank.depth.max())
        self.cap = ALL_CONTACTS_CAP
        self.room = PENDING_ROOM * (self.depth + 2)  # distance's pending pairs (tests set it small)
        self._idle_rows = {}
        # one choice per kind of query: their costs per row differ some 30-fold (first contact ~3 us, a
        # distance ~100 us), and one choice's recent rates, mixing them, would price one kind by another's
        self.threads = {kind: ThreadChoice(threads, adaptive=adaptive_threads) for kind in QUERY_KINDS}

    @contextmanager
    def _pool(self, rows: int, kind: str):
        """The chunk bounds for a batch of `rows` pairs, under numba's thread count for it (restored
        after). A small batch is one chunk on one thread: on the whole pool, the kernel would wait
        at its end for every thread, and beside a busy process the idle one may first wait a time
        slice for its core (a one-row crowd.toml distance query: 2.8 ms on one thread, 5-12 ms
        median on two with one busy process beside). A larger one runs on the thread count the
        choice for its `kind` (QUERY_KINDS) measured faster."""
        if rows < PARALLEL_MIN_ROWS:
            with numba_threads(1):
                yield np.array([0, rows], np.int64)
            return
        with self.threads[kind].threads_for(rows):
            yield chunks(rows)

    def _setup(self, ma, mb, Ta, Tb):
        ma, mb = np.asarray(ma, np.int64).reshape(-1), np.asarray(mb, np.int64).reshape(-1)
        Ta, Tb = (np.ascontiguousarray(T, dtype=np.float64).reshape(-1, 4, 4) for T in (Ta, Tb))
        if not (len(ma) == len(mb) == len(Ta) == len(Tb)):
            raise ValueError(f"ma, mb, Ta, Tb must have one row per pair, got {len(ma)}, {len(mb)}, {len(Ta)}, {len(Tb)}")
        n = len(self.trees)
        if not _in_range(ma, mb, n):
            raise ValueError(f"model indices outside 0..{n - 1}")
        R, t = relative_poses(Ta, Tb)
        off = self.bank.node_offset
        return ma, mb, Ta, R, t, off[ma], off[mb]

    def collide(self, ma, mb, Ta, Tb, all_contacts: bool = True, with_distance: bool = True) -> ExactAnswer:
        """Intersecting triangle pairs (all, or the first found) and `distance`: 0 for intersecting
        pairs, the exact separation of the pairs found apart (nan for them when not with_distance)."""
        ma, mb, Ta, R, t, ra, rb = self._setup(ma, mb, Ta, Tb)
        kind = "all contacts" if all_contacts else "first contact"

        def run(rows, cap):
            with self._pool(len(ra[rows]), kind) as bounds:
                return collide_pairs(self.bank.arrays, (R[rows], t[rows], ra[rows], rb[rows]), bounds, self.depth, cap)

        count, hits = run(slice(None), self.cap if all_contacts else 1)
        count = count if all_contacts else np.minimum(count, 1)
        if count.max(initial=0) > hits.shape[1]:  # rows with more contacts than stored: again, all of them
            self.cap = min(int(count.max()), MAX_REMEMBERED_CAP)
            over = np.flatnonzero(count > hits.shape[1])
            wide = np.full((len(count), int(count.max()), 2), -1, np.int64)
            wide[:, :hits.shape[1]] = hits
            wide[over] = run(over, wide.shape[1])[1]
            hits = wide
        ptr = np.zeros(len(count) + 1, np.int64)
        np.cumsum(count, out=ptr[1:])
        flat = hits[np.arange(hits.shape[1]) < count[:, None]]  # row-major: row by row, in order
        pair_row = np.repeat(np.arange(len(count)), count)
        dist = np.where(count > 0, 0.0, np.nan)
        if with_distance and (count == 0).any():
            apart = count == 0
            dist[apart] = self._distance_rows(R[apart], t[apart], ra[apart], rb[apart], priority=True)[0]
        return ExactAnswer(colliding=count > 0, tri_ptr=ptr, tri_a=flat[:, 0] - self.bank.tri_offset[ma][pair_row],
                           tri_b=flat[:, 1] - self.bank.tri_offset[mb][pair_row], distance=dist)

    def _distance_rows(self, R, t, ra, rb, seed_a=None, seed_b=None, rel=0.0, abs_tol=0.0, bound=None,
                       stop_at=None, priority=False, front=None):
        """The kernel's (dist, tri, points) for these rows; `front` (a DistanceFront, or None) is read
        and rewritten in place."""
        k = len(ra)
        none, far, zero, fx0, fl0 = self._idle(k)
        if front is None:  # the kernel's fronts and ask (query.distance_pairs)
            fronts = fx0, fx0, fl0, np.zeros(k, np.int64), np.zeros(k, np.int64), none, R, t
        else:
            fronts = front.x, front.y, front.lb, front.n, front.fresh, front.tri[:, 1], front.R, front.t
        ask = (none if seed_a is None else seed_a, none if seed_b is None else seed_b, far if bound is None else bound,
               zero if stop_at is None else stop_at, float(rel), float(abs_tol), bool(priority))
        with self._pool(k, "distance") as bounds:
            return distance_pairs(self.bank.arrays, (R, t, ra, rb), bounds, self.room, ask, fronts)

    def _idle(self, k):
        """The kernel's arguments for k rows that ask for nothing (none of them written there): no seed
        faces or pivot (-1), no bound (inf), stop at 0, no front (x, y and lb (k, 0)). Kept for
        small k: a one-pair query each frame would otherwise allocate them every call (~5 us)."""
        got = self._idle_rows.get(k)
        if got is None:
            got = (np.full(k, -1, np.int64), np.full(k, np.inf), np.zeros(k), np.empty((k, 0), np.int64),
                   np.empty((k, 0)))
            if k < PARALLEL_MIN_ROWS:
                self._idle_rows[k] = got
        return got

    def distance(self, ma, mb, Ta, Tb, rel: float = 0.0, abs_tol: float = 0.0, seed=None,
                 priority: bool = True, front: DistanceFront | None = None, keep_front: bool = False) -> DistanceAnswer:
        """Separation within tolerance: the answer d obeys d* <= d <= max((1 + rel) d*, d* + abs_tol).
        seed     : (k, 2) int local faces (A, B) to start from (last frame's `tri`; -1 rows: none)
        priority : priority-directed search (default: 20-30% faster than depth-first on the lamp)
        front    : last frame's `DistanceAnswer.front` for the same rows (spent here); its closest
                   pair seeds the rows `seed` does not
        keep_front : return the search's front (`DistanceAnswer.front`; implied by `front`)"""
        if not (rel >= 0 and abs_tol >= 0):
            raise ValueError(f"tolerances must be >= 0, got rel={rel}, abs_tol={abs_tol}")
        ma, mb, Ta, R, t, ra, rb = self._setup(ma, mb, Ta, Tb)
        off_a, off_b = self.bank.tri_offset[ma], self.bank.tri_offset[mb]
        seed_a = seed_b = None
        if seed is not None:
            seed_a, seed_b = _global_seeds(np.asarray(seed, np.int64).reshape(-1, 2), off_a, off_b)
        if front is not None:
            self._check_front(front, ra, rb)
            if seed is None:
                seed_a, seed_b = front.tri[:, 0].copy(), front.tri[:, 1].copy()
        elif keep_front:
            k = len(ra)
            front = DistanceFront(np.stack([ra, rb], 1), R.copy(), t.copy(), np.empty((k, FRONT_ROOM), np.int64),
                                  np.empty((k, FRONT_ROOM), np.int64), np.empty((k, FRONT_ROOM)),
                                  np.zeros(k, np.int64), np.zeros(k, np.int64), np.full((k, 2), -1, np.int64))
        dist, tri, pts = self._distance_rows(R, t, ra, rb, seed_a, seed_b, rel, abs_tol, priority=priority, front=front)
        if front is not None:
            front.spent = True
            front = DistanceFront(front.roots, front.R, front.t, front.x, front.y, front.lb, front.n, front.fresh, tri)
        return DistanceAnswer(dist, *_local_world(tri, pts, off_a, off_b, Ta), front=front)

    @staticmethod
    def _check_front(front, ra, rb):
        if front.spent:
            raise ValueError("this DistanceFront was used already: pass the latest answer's front")
        if not _same_roots(front.roots, ra, rb):
            raise ValueError("front is for other pairs: pass the front of the same rows' last answer")

    def closer_than(self, ma, mb, Ta, Tb, d) -> np.ndarray:
        """(k,) bool: the two surfaces come within d [m] (the tolerance query; d scalar or (k,))."""
        ma, mb, Ta, R, t, ra, rb = self._setup(ma, mb, Ta, Tb)
        d = np.broadcast_to(np.asarray(d, np.float64), (len(ra),)).copy()
        _, tri, _ = self._distance_rows(R, t, ra, rb, bound=np.nextafter(d, np.inf), stop_at=d)
        return tri[:, 0] >= 0


# Argument checks and the conversions in and out of the kernels' global faces and A's frame are numba
# loops: as numpy expressions they cost ~50 us a call, which a one-pair query each frame (triangle
# caching) would pay.

@njit(cache=True)
def _in_range(ma, mb, n):
    """Every model index of ma, mb (k,) in 0..n-1."""
    for i in range(len(ma)):
        if not (0 <= ma[i] < n and 0 <= mb[i] < n):
            return False
    return True


@njit(cache=True)
def _global_seeds(seed, off_a, off_b):
    """Seed faces (k, 2) local to each mesh -> global (seed_a, seed_b), -1 where a row has a face < 0."""
    sa, sb = np.full(len(seed), -1, np.int64), np.full(len(seed), -1, np.int64)
    for i in range(len(seed)):
        if seed[i, 0] >= 0 and seed[i, 1] >= 0:
            sa[i], sb[i] = seed[i, 0] + off_a[i], seed[i, 1] + off_b[i]
    return sa, sb


@njit(cache=True)
def _same_roots(roots, ra, rb):
    """roots (k', 2) holds the root nodes (ra, rb) (k,) row for row."""
    if len(roots) != len(ra):
        return False
    for i in range(len(ra)):
        if roots[i, 0] != ra[i] or roots[i, 1] != rb[i]:
            return False
    return True


@njit(cache=True)
def _local_world(tri, points, off_a, off_b, Ta):
    """The kernels' answer for the caller: tri (k, 2) global faces -> local (-1 stays), points
    (k, 2, 3) in A's body frame -> world (nan stays)."""
    loc, world = np.full_like(tri, -1), np.empty_like(points)
    for i in range(len(tri)):
        if tri[i, 0] >= 0:
            loc[i, 0], loc[i, 1] = tri[i, 0] - off_a[i], tri[i, 1] - off_b[i]
        for p in range(2):
            for r in range(3):
                world[i, p, r] = Ta[i, r, 0] * points[i, p, 0] + Ta[i, r, 1] * points[i, p, 1] \
                    + Ta[i, r, 2] * points[i, p, 2] + Ta[i, r, 3]
    return loc, world
