"""Continuous mode (config `collision.swept = true`): a ship that crosses another between two
detection samples is caught by the face octree's swept-space test.

After a sample's narrow phase, its candidate pairs found apart are checked for speed: a pair is
fast when B's vertices may move, in A's frame, farther than the thinner ship's thickness (the
smallest edge of its body-frame box) during the sample — |t1 - t0| + |R1 - R0|_F r_B with (R, t)
B's pose in A's frame at the sample's start and end. Fast pairs get `collide_swept` between the
two poses. A hit is reported as a collision at the exact level, with the normal against B's
motion relative to A, and both ships are put back where they were at the sample's start, so
that the response parts them on the side they came from (left where the sample ended, they
would be interlocked, or already through the wall).

Only the sample's candidate pairs are checked: a pair whose bounding spheres are apart at the
end of the sample (the broad phase's answer) is not, however fast. Shapes are the rest shapes
(deforming ships are swept as rigid).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.poses import relative_poses
from .detector import FaceOctreeExact


@dataclass(frozen=True)
class Crossing:
    """One sample's swept hits, kept for display (the app draws and names them).

    pairs  : (k, 2) int64 ship indices (A, B) caught crossing
    start  : (k, 2, 4, 4) float64 body->world transforms of A and B at the sample's start
    end    : (k, 2, 4, 4) float64 ... at its end (where the discrete test found them apart)
    face_a : (k,) int64 A's face (local id) hit by ...
    face_b : (k,) int64 ... the hull of B's face (local id) swept over the sample: the first hit found
    """
    pairs: np.ndarray
    start: np.ndarray
    end: np.ndarray
    face_a: np.ndarray
    face_b: np.ndarray


class SweptCatch:
    """models : list of meshes.Mesh, the world's (index = model id).

    last   : the latest sample's Crossing with a hit (None before the first)
    caught : pairs caught so far (a new catch is a change of it)
    """

    def __init__(self, models):
        self.detector = FaceOctreeExact(models)
        self.thickness = np.array([float(np.ptp(m.vertices, axis=0).min()) for m in models])
        self.radius = np.array([m.bounding_radius for m in models])
        self.last: Crossing | None = None
        self.caught = 0

    def fast(self, ma, mb, Ta0, Tb0, Ta1, Tb1) -> np.ndarray:
        """(k,) bool: B may move farther than the thinner ship's thickness in A's frame."""
        R0, t0 = relative_poses(Ta0, Tb0)
        R1, t1 = relative_poses(Ta1, Tb1)
        reach = np.linalg.norm(t1 - t0, axis=1) + np.linalg.norm(R1 - R0, axis=(1, 2)) * self.radius[mb]
        return reach > np.minimum(self.thickness[ma], self.thickness[mb])

    def catch(self, narrow, state, T0, T1, exact_level: int) -> np.ndarray:
        """Check narrow's (FrameNarrowResult) apart fast pairs between the ships' transforms T0
        and T1 ((n, 4, 4) at the sample's start and end); mark the caught ones colliding in
        place and put their ships back at their T0 positions (state.pos). Returns the indices
        of the ships moved back."""
        pairs = narrow.pairs
        ma, mb = state.model_id[pairs[:, 0]].astype(np.int64), state.model_id[pairs[:, 1]].astype(np.int64)
        a, b = pairs[:, 0], pairs[:, 1]
        rows = np.flatnonzero(~narrow.colliding)
        rows = rows[self.fast(ma[rows], mb[rows], T0[a[rows]], T0[b[rows]], T1[a[rows]], T1[b[rows]])]
        if not len(rows):
            return np.zeros(0, np.int64)
        answer = self.detector.collide_swept(ma[rows], mb[rows], T0[a[rows]], T0[b[rows]], T1[a[rows]], T1[b[rows]],
                                             all_contacts=False)
        rows = rows[answer.colliding]
        if not len(rows):
            return np.zeros(0, np.int64)
        first = answer.tri_ptr[:-1][answer.colliding]
        self.last = Crossing(pairs[rows].copy(), T0[pairs[rows]], T1[pairs[rows]], answer.tri_a[first],
                             answer.tri_b[first])
        self.caught += len(rows)
        motion = (T1[b[rows], :3, 3] - T0[b[rows], :3, 3]) - (T1[a[rows], :3, 3] - T0[a[rows], :3, 3])
        length = np.linalg.norm(motion, axis=1, keepdims=True)
        narrow.colliding[rows] = narrow.certain[rows] = True
        narrow.level[rows] = exact_level
        narrow.separation_bound[rows] = 0.0
        narrow.contact_normal[rows] = np.divide(-motion, length, out=np.zeros_like(motion), where=length > 0)
        narrow.contact_point[rows] = 0.5 * (T0[a[rows], :3, 3] + T0[b[rows], :3, 3])
        narrow.level_histogram[exact_level] += len(rows)
        ships = np.unique(pairs[rows])
        state.pos[ships] = T0[ships, :3, 3]
        return ships
