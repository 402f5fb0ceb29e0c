"""Exact strategies: the certain answer for a batch of ship pairs, one contract for all of them.

The time-critical loop (refine.py) ends, when time allows, in an exact level. Several strategies
can give it — triangles of colliding sphere-tree leaves (Hubbard), an SSV tree (Larsen et al.),
a face octree on the bounding-box overlap (Smith–Kitamura), a BSP tree (Hubbard's baseline) —
and each answers the same question the same way:

    detector = registry.EXACT_METHODS[name](meshes)  # once per scenario: any preprocessing
    answer = detector.collide(ma, mb, Ta, Tb, all_contacts)

so that benchmarks, the pipeline and the tests treat them alike, and a new strategy is one module
plus one line in `spaceship_sim/registry.py`. `BruteForceExact` is the reference every strategy is
tested against. This module is the contract: it imports no strategy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

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
