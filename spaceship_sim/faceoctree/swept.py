"""Swept-space face test (Smith & Kitamura, ch. 4): does a face meet the space another face
sweeps between two samples?

In ship A's body frame A's faces stand still and B's move; B's face sweeps (for vertex motion
along straight lines in that frame, e.g. any relative translation) a set inside the convex hull
H of its start and end positions — six points. The paper tests hull against hull; in A's frame
A's hull is its triangle, so the test is triangle T against H, decided exactly from existing
predicates:

- H's boundary is made of triangles on its points, so if T meets the boundary it meets one of
  the 20 triangles on three of the six points (all inside H, so any hit is a true one);
- otherwise T meets H only by lying inside it, and then T's vertices are in H, which is the
  union of the tetrahedra on four of the six points (Carathéodory): 15 point-in-tetrahedron tests.
Degenerate triangles and tetrahedra (coincident or coplanar points, e.g. a face that did not
move) are skipped: the non-degenerate ones still cover H.

A hit is necessary, not sufficient, for a collision between the samples (the paper says so too):
the hull is larger than the swept set. `swept_hits_ref` is an independent reference: a linear
programme for a common point of the two hulls (scipy).
"""
from __future__ import annotations

import itertools

import numpy as np
from numba import njit

from ..geometry.triangles import intersect_triangle_triangle, orient

_TRIS = np.array(list(itertools.combinations(range(6), 3)), np.int64)  # (20, 3)
_TETS = np.array(list(itertools.combinations(range(6), 4)), np.int64)  # (15, 4)


@njit(cache=True)
def _in_tet(P, q, i, X, x):
    """Closed tetrahedron P[q[i, 0..3]] contains X[x]; False when it is flat."""
    a, b, c, d = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
    vol = orient(P, a, P, b, P, c, P, d)
    if vol == 0.0:
        return False
    s1 = orient(P, a, P, b, P, c, X, x)
    s2 = orient(P, a, P, b, X, x, P, d)
    s3 = orient(P, a, X, x, P, c, P, d)
    s4 = orient(X, x, P, b, P, c, P, d)
    if vol > 0.0:
        return s1 >= 0.0 and s2 >= 0.0 and s3 >= 0.0 and s4 >= 0.0
    return s1 <= 0.0 and s2 <= 0.0 and s3 <= 0.0 and s4 <= 0.0


@njit(cache=True)
def swept_hits(T, B0, B1):
    """Closed triangle T (3, 3) meets the convex hull of triangles B0 and B1 (3, 3), all float64
    in one frame: B's face at the start and the end of the step."""
    P = np.empty((6, 3))
    for k in range(3):
        for j in range(3):
            P[j, k], P[j + 3, k] = B0[j, k], B1[j, k]
        lo, hi = min(P[0, k], P[1, k], P[2, k]), max(P[0, k], P[1, k], P[2, k])
        lo, hi = min(lo, P[3, k], P[4, k], P[5, k]), max(hi, P[3, k], P[4, k], P[5, k])
        if min(T[0, k], T[1, k], T[2, k]) > hi or max(T[0, k], T[1, k], T[2, k]) < lo:  # boxes first
            return False
    tri = np.empty((3, 3))
    for i in range(len(_TRIS)):
        for j in range(3):
            for k in range(3):
                tri[j, k] = P[_TRIS[i, j], k]
        ux, uy, uz = tri[1, 0] - tri[0, 0], tri[1, 1] - tri[0, 1], tri[1, 2] - tri[0, 2]
        vx, vy, vz = tri[2, 0] - tri[0, 0], tri[2, 1] - tri[0, 1], tri[2, 2] - tri[0, 2]
        if uy * vz - uz * vy == 0.0 and uz * vx - ux * vz == 0.0 and ux * vy - uy * vx == 0.0:
            continue  # collinear points: not a triangle
        if intersect_triangle_triangle(T, tri):
            return True
    for x in range(3):
        for i in range(len(_TETS)):
            if _in_tet(P, _TETS, i, T, x):
                return True
    return False


def swept_hits_ref(T, B0, B1) -> bool:
    """Reference: a common point of triangle T and hull(B0, B1) exists iff the linear programme
    sum(l) = 1, sum(m) = 1, l T - m P = 0, l, m >= 0 is feasible (T, B0, B1 (3, 3))."""
    from scipy.optimize import linprog

    P = np.concatenate([B0, B1])
    A_eq = np.zeros((5, 9))
    A_eq[0, :3] = 1.0
    A_eq[1, 3:] = 1.0
    A_eq[2:, :3] = np.asarray(T, float).T
    A_eq[2:, 3:] = -P.T
    res = linprog(np.zeros(9), A_eq=A_eq, b_eq=[1, 1, 0, 0, 0], bounds=(0, None), method="highs")
    return res.status == 0
