"""FaceOctreeExact: Smith & Kitamura's face-octree narrow phase behind the ExactAnswer contract.

No per-model preprocessing: the constructor only packs the meshes' vertex and face arrays side
by side (kernels.py); every call recomputes boxes, region, face lists and octree from the
vertices as they are then. A deforming model therefore needs nothing rebuilt — `set_vertices`
overwrites its vertices and the next call sees the new shape.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..geometry.poses import relative_poses
from ..narrowphase.exact import ExactAnswer
from .kernels import ALL_HITS, CANDIDATES, FIRST_HIT, face_octree, test_candidates_parallel

MAX_DEPTH = 4    # octree levels below the overlap region [-]
LEAF_PAIRS = 16  # a cell with at most this many (face of A) x (face of B) pairs is not split [-]


class PackedMeshes(NamedTuple):
    """Every model's mesh side by side, as the kernels take them."""

    V: np.ndarray     # (N, 3) float64 vertices of every model, body frames [m]
    F: np.ndarray     # (M, 3) int64 faces, vertex ids local to their model
    voff: np.ndarray  # (n_models + 1,) int64: model m's vertices are V[voff[m]:voff[m + 1]]
    foff: np.ndarray  # (n_models + 1,) int64: its faces F[foff[m]:foff[m + 1]]


class PairPoses(NamedTuple):
    """A batch's k pairs, as the kernels take them: B's pose in A's frame, x_A = R[r] @ x_B + t[r]."""

    ma: np.ndarray  # (k,) int64, A's model
    mb: np.ndarray  # (k,) int64, B's model
    R: np.ndarray   # (k, 3, 3) float64, at the start (the only pose when not swept)
    t: np.ndarray   # (k, 3) float64 [m]
    R1: np.ndarray  # (k, 3, 3) float64, at the end of a swept step
    t1: np.ndarray  # (k, 3) float64 [m]


class OctreeSettings(NamedTuple):
    """How far the kernels split the region, and what they return."""

    max_depth: int   # octree levels below the region
    leaf_pairs: int  # a cell with at most this many face pairs is a leaf
    mode: int        # kernels.CANDIDATES, ALL_HITS or FIRST_HIT


class FaceOctreeExact:
    """Exact collision of mesh pairs by face octrees on the bounding-box overlap region.

    meshes     : sequence of meshes.Mesh (vertices (nv, 3) body frame [m], faces (nf, 3))
    max_depth  : octree levels below the region (the paper's resolution: 6 below the world cube)
    leaf_pairs : cells with at most this many face pairs are leaves (splitting costs more)
    parallel   : step 4 (triangle tests) over all candidates in a numba prange (the paper's
                 SPMD strategy); same answers as serial
    """

    def __init__(self, meshes: Sequence, max_depth: int = MAX_DEPTH, leaf_pairs: int = LEAF_PAIRS,
                 parallel: bool = False):
        if max_depth < 0 or leaf_pairs < 0:
            raise ValueError(f"max_depth and leaf_pairs must be >= 0, got {max_depth}, {leaf_pairs}")
        meshes = list(meshes)
        self.meshes = PackedMeshes(
            V=np.concatenate([np.asarray(m.vertices, np.float64) for m in meshes]),
            F=np.concatenate([np.asarray(m.faces, np.int64) for m in meshes]),
            voff=np.concatenate([[0], np.cumsum([len(m.vertices) for m in meshes])]).astype(np.int64),
            foff=np.concatenate([[0], np.cumsum([len(m.faces) for m in meshes])]).astype(np.int64))
        self.max_depth, self.leaf_pairs, self.parallel = int(max_depth), int(leaf_pairs), bool(parallel)

    def set_vertices(self, model: int, vertices: np.ndarray) -> None:
        """Model `model`'s vertices (nv, 3) float64, body frame [m], from now on (a deformed shape
        with the same faces)."""
        s, e = self.meshes.voff[model], self.meshes.voff[model + 1]
        vertices = np.asarray(vertices, np.float64)
        if vertices.shape != (e - s, 3) or not np.isfinite(vertices).all():
            raise ValueError(f"model {model} needs finite ({e - s}, 3) vertices, got shape {vertices.shape}")
        self.meshes.V[s:e] = vertices

    def collide(self, ma, mb, Ta, Tb, all_contacts=True) -> ExactAnswer:
        """ExactDetector.collide: ma, mb (k,) int model ids; Ta, Tb (k, 4, 4) body->world."""
        return self._run(ma, mb, Ta, Tb, None, None, all_contacts)

    def collide_swept(self, ma, mb, Ta0, Tb0, Ta1, Tb1, all_contacts=True) -> ExactAnswer:
        """Swept-space test between two samples: for each pair, the faces of A (at rest in A's
        frame) against the convex hulls of B's faces' start and end positions in A's frame
        (poses 0: start, 1: end of the step). Catches a crossing between the samples when B's
        vertices move along straight lines relative to A (exact for relative translations);
        a hit is necessary, not sufficient, for contact between the samples."""
        return self._run(ma, mb, Ta0, Tb0, Ta1, Tb1, all_contacts)

    def candidates(self, ma, mb, Ta, Tb):
        """Steps 1-3 only: CSR (ptr (k+1,), ca, cb) of candidate face pairs (local ids)."""
        ma, mb, R, t = self._pairs(ma, mb, Ta, Tb)
        return face_octree(self.meshes, PairPoses(ma, mb, R, t, R, t), False, self._settings(CANDIDATES))

    def _settings(self, mode: int) -> OctreeSettings:
        """The kernels' settings for a call returning `mode` (kernels.CANDIDATES, ...)."""
        return OctreeSettings(self.max_depth, self.leaf_pairs, mode)

    def _pairs(self, ma, mb, Ta, Tb):
        ma, mb = np.asarray(ma, np.int64).reshape(-1), np.asarray(mb, np.int64).reshape(-1)
        Ta, Tb = (np.ascontiguousarray(T, dtype=np.float64).reshape(-1, 4, 4) for T in (Ta, Tb))
        if not (len(ma) == len(mb) == len(Ta) == len(Tb)):
            raise ValueError(f"ma, mb, Ta, Tb must have one row per pair, got {len(ma)}, {len(mb)}, {len(Ta)}, "
                             f"{len(Tb)}")
        n_models = len(self.meshes.voff) - 1
        if len(ma) and (min(ma.min(), mb.min()) < 0 or max(ma.max(), mb.max()) >= n_models):
            raise ValueError(f"model ids outside 0..{n_models - 1}")
        R, t = relative_poses(Ta, Tb)
        return ma, mb, R, t

    def _run(self, ma, mb, Ta, Tb, Ta1, Tb1, all_contacts) -> ExactAnswer:
        ma, mb, R, t = self._pairs(ma, mb, Ta, Tb)
        swept = Ta1 is not None
        R1, t1 = self._pairs(ma, mb, Ta1, Tb1)[2:] if swept else (R, t)
        poses = PairPoses(ma, mb, R, t, R1, t1)
        if self.parallel:  # steps 1-3 serial, step 4 over all candidates in a prange
            ptr, fa, fb = face_octree(self.meshes, poses, swept, self._settings(CANDIDATES))
            row = np.repeat(np.arange(len(ma)), np.diff(ptr))
            hit = test_candidates_parallel(self.meshes, poses, swept, row, fa, fb)
            if not all_contacts:  # each pair's first hit in candidate order
                _, at = np.unique(row[hit], return_index=True)
                hit = np.isin(np.arange(len(hit)), np.flatnonzero(hit)[at])
            fa, fb, row = fa[hit], fb[hit], row[hit]
        else:
            mode = ALL_HITS if all_contacts else FIRST_HIT
            ptr, fa, fb = face_octree(self.meshes, poses, swept, self._settings(mode))
            row = np.repeat(np.arange(len(ma)), np.diff(ptr))
        counts = np.bincount(row, minlength=len(ma))
        tri_ptr = np.zeros(len(ma) + 1, np.int64)
        np.cumsum(counts, out=tri_ptr[1:])
        return ExactAnswer(colliding=counts > 0, tri_ptr=tri_ptr, tri_a=fa, tri_b=fb,
                           distance=np.full(len(ma), np.nan))
