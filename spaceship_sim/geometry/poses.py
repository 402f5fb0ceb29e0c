"""Relative poses of rigid bodies, one implementation for the whole package.

A pair test works in body A's frame: B's points come in by B's pose relative to A, x_A = R x_B + t
with R = Ra^T Rb and t = Ra^T (pb - pa), for body->world poses (Ra, pa) and (Rb, pb). Every exact
strategy (BSP, SSV, face octree, sphere leaves) and the Lin–Canny walk composes it here. The numpy
oracle is `reference.relative_poses_ref`.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def relative_pose(Ra, pa, Rb, pb, R, t):
    """B's pose in A's frame written into R (3, 3) and t (3,): R = Ra^T Rb, t = Ra^T (pb - pa), from
    rotations Ra, Rb (3, 3) and positions pa, pb (3,) body->world. Sums run over the rows of Ra, in
    order."""
    for i in range(3):
        t[i] = 0.0
        for j in range(3):
            t[i] += Ra[j, i] * (pb[j] - pa[j])
            acc = 0.0
            for m in range(3):
                acc += Ra[m, i] * Rb[m, j]
            R[i, j] = acc


@njit(cache=True)
def relative_poses_into(Ta, Tb, R, t):
    """`relative_poses` written into R (k, 3, 3) and t (k, 3)."""
    for r in range(len(Ta)):
        relative_pose(Ta[r, :3, :3], Ta[r, :3, 3], Tb[r, :3, :3], Tb[r, :3, 3], R[r], t[r])


@njit(cache=True)
def relative_poses(Ta, Tb):
    """B's body frame in A's for each row of (k, 4, 4) rigid body->world transforms:
    R (k, 3, 3) = Ra^T Rb and t (k, 3) = Ra^T (tb - ta), so that x_A = R x_B + t."""
    k = len(Ta)
    R = np.empty((k, 3, 3))
    t = np.empty((k, 3))
    relative_poses_into(Ta, Tb, R, t)
    return R, t
