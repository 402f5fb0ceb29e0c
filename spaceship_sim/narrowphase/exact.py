"""Exact strategies: the certain answer for a batch of ship pairs, one contract for all of them.

The time-critical loop (refine.py) ends, when time allows, in an exact level. Several strategies
can give it — triangles of colliding sphere-tree leaves (Hubbard), an SSV tree (Larsen et al.),
a face octree on the bounding-box overlap (Smith–Kitamura), a BSP tree (Hubbard's baseline) —
and each answers the same question the same way:

    detector = EXACT_METHODS[name](meshes)          # once per scenario: any preprocessing
    answer = detector.collide(ma, mb, Ta, Tb, all_contacts)

so that benchmarks, the pipeline and the tests treat them alike, and a new strategy is one module
plus one registry line. `BruteForceExact` is the reference every strategy is tested against.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

from ..clock import WALL
from .reference import brute_force_pair


@dataclass(frozen=True, eq=False)
class ExactAnswer:
    """Exact verdicts for k pairs (arrays over the pairs, in input order).

    colliding : (k,) bool, some triangle of A meets some triangle of B
    tri_ptr   : (k+1,) int64, CSR: pair i's intersecting triangle pairs are
                (tri_a, tri_b)[tri_ptr[i]:tri_ptr[i+1]] (at most one per pair for first contact)
    tri_a     : (P,) int64, face index local to model A's mesh
    tri_b     : (P,) int64, face index local to model B's mesh
    distance  : (k,) float64 [m], exact separation of the two surfaces when the strategy computes
                it (0 when colliding), nan where it does not
    """

    colliding: np.ndarray
    tri_ptr: np.ndarray
    tri_a: np.ndarray
    tri_b: np.ndarray
    distance: np.ndarray

    @classmethod
    def from_lists(cls, hits: Sequence[np.ndarray], distance=None) -> "ExactAnswer":
        """From one (q_i, 2) int array of (face of A, face of B) per pair."""
        counts = np.array([len(h) for h in hits], np.int64)
        ptr = np.zeros(len(hits) + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        flat = np.concatenate([np.asarray(h, np.int64).reshape(-1, 2) for h in hits]) if hits else np.zeros((0, 2), np.int64)
        dist = np.full(len(hits), np.nan) if distance is None else np.asarray(distance, np.float64)
        return cls(colliding=counts > 0, tri_ptr=ptr, tri_a=flat[:, 0], tri_b=flat[:, 1], distance=dist)

    def pairs_of(self, i: int) -> np.ndarray:
        """(q, 2) int64 intersecting (face of A, face of B) of pair i."""
        s, e = self.tri_ptr[i], self.tri_ptr[i + 1]
        return np.stack([self.tri_a[s:e], self.tri_b[s:e]], 1)


class ExactDetector(Protocol):
    def collide(self, ma: np.ndarray, mb: np.ndarray, Ta: np.ndarray, Tb: np.ndarray,
                all_contacts: bool = True) -> ExactAnswer:
        """ma, mb : (k,) int64 model indices (into the meshes the detector was built from);
        Ta, Tb : (k, 4, 4) float64 rigid body->world transforms of each pair's ships;
        all_contacts : False may stop each pair at its first intersecting triangle pair."""


class BruteForceExact:
    """Every triangle pair, in numpy: slow and obviously correct — the oracle of the others."""

    def __init__(self, meshes):
        self.meshes = list(meshes)

    def collide(self, ma, mb, Ta, Tb, all_contacts=True) -> ExactAnswer:
        hits = []
        for a, b, ta, tb in zip(np.asarray(ma).tolist(), np.asarray(mb).tolist(), Ta, Tb):
            A, B = self.meshes[a], self.meshes[b]
            h = brute_force_pair(A.vertices, A.faces, ta, B.vertices, B.faces, tb)
            hits.append(h if all_contacts else h[:1])
        return ExactAnswer.from_lists(hits)


def _bsp(meshes) -> ExactDetector:
    from ..bsp import BSPExact  # imported when asked for: spaceship_sim.bsp imports this module

    return BSPExact(meshes)


def _fcl(meshes) -> ExactDetector:
    from .fcl_exact import FclExact  # python-fcl is optional: an InputError when it is missing

    return FclExact(meshes)


def _ssv(meshes) -> ExactDetector:
    from ..ssv.exact import SSVExact  # numba kernels: loaded only when asked for

    return SSVExact(meshes)


def _ocst(meshes) -> ExactDetector:
    from .ocst import OcstExact  # imports the refinement loop, which imports this module

    return OcstExact(meshes)


def _face_octree(meshes) -> ExactDetector:
    from ..faceoctree import FaceOctreeExact  # imported when asked for: faceoctree imports this module

    return FaceOctreeExact(meshes)


# name -> constructor from the scenario's meshes (list of meshes.Mesh); strategies register here
EXACT_METHODS: dict[str, Callable[[Sequence], ExactDetector]] = {
    "brute": BruteForceExact,
    "bsp": _bsp,
    "fcl": _fcl,
    "ssv": _ssv,  # swept-sphere-volume trees (Larsen et al.): fills `distance` for pairs found apart
    "ocst": _ocst,  # on-collide sphere trees (Franquesa et al.): sphere levels built as pairs reach them
    "faceoctree": _face_octree,  # face octree on the boxes' overlap (Smith–Kitamura): no preprocessing
}


def exact_frame(detector: ExactDetector, bank, model_id, T, pairs, all_contacts: bool = True, clock=WALL):
    """A frame's candidate pairs answered by an exact strategy alone (Hubbard's exact-only baselines):
    root spheres first, then `detector` on the pairs whose roots overlap. Arguments and result as
    refine.refine_frame's: colliding pairs sit at the exact level with bound 0, their contact normal
    along the centre line of the root spheres (as Hubbard's BSP run used bounding spheres for response)."""
    from .refine import refine_roots

    start = clock()
    roots = refine_roots(bank, model_id, T, pairs, clock=clock)
    k, hit = len(roots.pairs), np.flatnonzero(roots.colliding)
    ship_a, ship_b = roots.pairs[hit, 0], roots.pairs[hit, 1]
    ans = detector.collide(model_id[ship_a], model_id[ship_b], T[ship_a], T[ship_b], all_contacts)
    colliding = np.zeros(k, bool)
    colliding[hit] = ans.colliding
    n_tris = np.zeros(k, np.int64)
    n_tris[hit] = np.diff(ans.tri_ptr)
    tri_ptr = np.concatenate([[0], np.cumsum(n_tris)])
    level = np.zeros(k, np.int64)
    level[hit] = np.maximum(bank.depth[model_id[ship_a]], bank.depth[model_id[ship_b]]) + 1
    sphere_ptr = np.concatenate([[0], np.cumsum(colliding)])
    ra, rb = roots._spheres[3], roots._spheres[4]  # each pair's root node (global id)
    none = np.zeros(k, np.int64)
    distance = np.full(k, np.nan)  # what the strategy measured (the SSV trees: every pair they saw)
    distance[hit] = ans.distance
    return dataclasses.replace(
        roots, colliding=colliding, level=level, exact=np.ones(k, bool),
        separation_bound=np.where(colliding, 0.0, np.inf),
        contact_point=np.where(colliding[:, None], roots.contact_point, np.nan),
        contact_normal=np.where(colliding[:, None], roots.contact_normal, 0.0), time_used=clock() - start,
        level_histogram=np.bincount(level[colliding], minlength=bank.max_level + 1).astype(np.int64),
        distance=distance, _spheres=(sphere_ptr, ra[colliding], rb[colliding], ra, rb),
        _tris=(tri_ptr, ans.tri_a, ans.tri_b, none, none))
