"""I-COLLIDE's multi-body simulation (Cohen et al. 1995, section 5.3) and its detectors.

`MultiBody`: N random polytopes in a cube, placed at random positions and orientations, each with
a constant translational velocity (a fraction of its radius per frame) and rotation (degrees per
frame about a random axis through its mass centre). Colliding pairs exchange translational
velocities (an elastic reaction between equal masses) when approaching; bodies rebound off the walls.

Detectors, each answering "which pairs collide" for the same poses:
- `ICollide(boxes="dynamic" | "fixed")`: boxes, sweep-and-prune, Lin–Canny on the active pairs
  with each pair's features from the last frame;
- `BruteForceBodies`: all pairs of bounding spheres, then the brute-force feature search;
- `FclPeer` (python-fcl, optional): DynamicAABBTreeCollisionManager over fcl.Convex objects.
"""
from __future__ import annotations

import time

import numpy as np
from scipy.spatial.transform import Rotation

from ..geometry.spheres import overlap_spheres
from ..geometry.vectors import unit_rows
from .closest import MAX_ITER, PENETRATING, walk_pairs, walk_scratch
from .polytope import pack, random_polytope
from .sweep import DynamicBoxes, SweepAndPrune, fixed_cubes


class MultiBody:
    """Poses rot (N, 3, 3), pos (N, 3) float64 (body -> world, metres = body units), velocities
    vel (N, 3) per frame, spin (N, 3, 3) per-frame rotation in the body frame; cube side `side`."""

    def __init__(self, n: int, faces: int, rotation_deg: float, speed_rel: float, density: float,
                 seed: int = 0):
        rng = np.random.default_rng(seed)
        polys = [random_polytope(faces, rng) for _ in range(n)]
        self.pset = pack(polys)
        self.side = (sum(p.volume for p in polys) / density) ** (1 / 3)
        r = self.pset.radius[:, None]
        self.pos = r + rng.uniform(size=(n, 3)) * np.maximum(self.side - 2 * r, 0.0)
        self.rot = Rotation.random(n, random_state=rng).as_matrix()
        self.vel = unit_rows(rng.normal(size=(n, 3))) * speed_rel * r
        axes = unit_rows(rng.normal(size=(n, 3)))
        self.spin = Rotation.from_rotvec(axes * np.radians(rotation_deg)).as_matrix()

    def step(self) -> None:
        """One frame: move, turn, rebound off the walls."""
        self.pos += self.vel
        self.rot = np.einsum("bij,bjk->bik", self.rot, self.spin)
        r = self.pset.radius[:, None]
        out = ((self.pos < r) & (self.vel < 0)) | ((self.pos > self.side - r) & (self.vel > 0))
        self.vel[out] *= -1.0

    def respond(self, pairs: np.ndarray) -> None:
        """Exchange the velocities of colliding pairs (K, 2) that approach each other."""
        for a, b in pairs:
            if np.dot(self.vel[a] - self.vel[b], self.pos[b] - self.pos[a]) > 0:
                self.vel[[a, b]] = self.vel[[b, a]]


class ICollide:
    """Boxes + sweep-and-prune + coherent Lin–Canny. Times of the last frame [s]: t_boxes, t_sort,
    t_exact; counts: active (box pairs), swaps, steps (walk steps), fallbacks."""

    def __init__(self, pset, rot, boxes: str = "dynamic"):
        self.pset, self.kind = pset, boxes
        self.args, self.scratch = pset.kernel_args(), walk_scratch(pset)
        self.dynamic = DynamicBoxes(pset, rot) if boxes == "dynamic" else None
        self.sweep = SweepAndPrune(pset.n_bodies)

    def boxes(self, rot, pos):
        if self.dynamic is not None:
            return self.dynamic.boxes(rot, pos)
        return fixed_cubes(self.pset.radius, pos)

    def detect(self, rot, pos) -> np.ndarray:
        """Colliding pairs (K, 2) int32 at poses rot, pos."""
        t0 = time.perf_counter()
        lo, hi = self.boxes(rot, pos)
        t1 = time.perf_counter()
        pairs = self.sweep.update(lo, hi)
        t2 = time.perf_counter()
        self.start_feats = self.sweep.feats.copy()  # for `pair_walk_time` (untimed)
        t2b = time.perf_counter()
        status, points, self.steps, self.fallbacks = self._walk(rot, pos, pairs, self.sweep.feats)
        t3 = time.perf_counter()
        self.t_boxes, self.t_sort, self.t_exact = t1 - t0, t2 - t1, t3 - t2b
        self.active, self.swaps, self.points = len(pairs), self.sweep.last_swaps, points
        return pairs[status == PENETRATING]

    def _walk(self, rot, pos, pairs, feats):
        """Lin–Canny over pairs (M, 2) from feats (M, 2) (updated); returns (status, points, walk
        steps, brute-force fallbacks)."""
        m = len(pairs)
        dist, status, points = np.empty(m), np.empty(m, np.int8), np.empty((m, 2, 3))
        steps, fallbacks = walk_pairs(self.args, self.pset.radius, rot, pos, pairs, feats, MAX_ITER, False,
                                      dist, status, points, self.scratch)
        return status, points, steps, fallbacks

    def pair_walk_time(self, rot, pos) -> float:
        """Seconds for the last frame's exact stage again: the same pairs from the same start
        features, outputs allocated as in the frame (a second pass, as `FclPeer.pair_collide_time`)."""
        pairs, feats = self.sweep.pairs, self.start_feats.copy()
        t0 = time.perf_counter()
        self._walk(rot, pos, pairs, feats)
        return time.perf_counter() - t0


class BruteForceBodies:
    """Reference: bounding-sphere test on all N (N - 1) / 2 pairs, then the brute-force search
    over all face pairs of each candidate."""

    def __init__(self, pset):
        self.pset, self.args, self.scratch = pset, pset.kernel_args(), walk_scratch(pset)

    def detect(self, rot, pos) -> np.ndarray:
        a, b = np.triu_indices(len(pos), 1)
        d = pos[b] - pos[a]
        near = overlap_spheres(d[:, 0], d[:, 1], d[:, 2], self.pset.radius[a], self.pset.radius[b])
        pairs = np.stack([a[near], b[near]], axis=1).astype(np.int32)
        m = len(pairs)
        feats = np.full((m, 2), -1, np.int64)
        dist, status, points = np.empty(m), np.empty(m, np.int8), np.empty((m, 2, 3))
        walk_pairs(self.args, self.pset.radius, rot, pos, pairs, feats, MAX_ITER, True, dist, status, points,
                   self.scratch)
        return pairs[status == PENETRATING]


class FclPeer:
    """python-fcl: fcl.Convex per body in a DynamicAABBTreeCollisionManager; transforms set from
    Python each frame (timed separately as t_transforms). `pair_collide_time` times fcl.collide
    on given pairs, one call each."""

    def __init__(self, pset):
        import fcl

        self.fcl = fcl
        self.objs, self.index = [], {}
        for b in range(pset.n_bodies):
            geom = fcl.Convex(*_fcl_convex_arrays(pset, b))
            self.index[id(geom)] = b
            self.objs.append(fcl.CollisionObject(geom, fcl.Transform()))
        self.manager = fcl.DynamicAABBTreeCollisionManager()
        self.manager.registerObjects(self.objs)
        self.manager.setup()

    def detect(self, rot, pos) -> np.ndarray:
        fcl = self.fcl
        t0 = time.perf_counter()
        for obj, R, t in zip(self.objs, rot, pos):
            obj.setTransform(fcl.Transform(R, t))
        self.t_transforms = time.perf_counter() - t0
        self.manager.update()
        request = fcl.CollisionRequest(num_max_contacts=1_000_000, enable_contact=True)
        data = fcl.CollisionData(request=request)
        self.manager.collide(data, fcl.defaultCollisionCallback)
        found = {tuple(sorted((self.index[id(c.o1)], self.index[id(c.o2)]))) for c in data.result.contacts}
        return np.array(sorted(found), np.int32).reshape(-1, 2)

    def pair_collide_time(self, pairs) -> float:
        """Seconds for one fcl.collide call per pair (transforms already set), pairs (M, 2) given as
        Python ints (numpy scalars would add their own overhead to fcl's figure)."""
        fcl, objs = self.fcl, self.objs
        request, pairs = fcl.CollisionRequest(), np.asarray(pairs).tolist()
        t0 = time.perf_counter()
        for a, b in pairs:
            fcl.collide(objs[a], objs[b], request, fcl.CollisionResult())
        return time.perf_counter() - t0


def _fcl_convex_arrays(pset, b):
    """(vertices (V, 3), face count, flat [k, i0..ik-1, ...] local indices) of body b."""
    v0, f0, f1 = pset.vert_range[b], pset.face_range[b], pset.face_range[b + 1]
    flat = []
    for f in range(f0, f1):
        corners = pset.face_verts[pset.face_start[f]:pset.face_start[f + 1]] - v0
        flat += [len(corners), *corners.tolist()]
    return pset.vertices[v0:pset.vert_range[b + 1]], f1 - f0, np.array(flat, np.int64)
