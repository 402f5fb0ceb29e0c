"""Numpy oracles for the triangle kernels of `geometry.triangles` (slow, obviously correct, and
computed differently from the kernels so that tests comparing them mean something).

- triangle–triangle intersection from segment–triangle tests: two closed triangles meet iff an
  edge of one meets the other (their intersection is convex; its boundary lies on an edge);
- point–triangle closest point by plane projection, else the closest of the three edges;
- triangle distance by dense sampling (an upper bound that converges to the distance);
- triangle-box overlap by the separating axes, vectorised (the kernel repeats its arithmetic);
- segment–segment distance in exact rational arithmetic: the least of the squared distance over the
  parameter square, at its stationary point or on one of the square's four sides;
- relative poses by matrix products.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np


def _orient(a, b, c, d):
    """Signed volume of (a, b, c, d) (x6), same convention as the kernels; (..., 3) arrays."""
    return np.einsum("...i,...i->...", d - c, np.cross(a - c, b - c))


def _orient2(a, b, c):
    return (a[..., 0] - c[..., 0]) * (b[..., 1] - c[..., 1]) - (a[..., 1] - c[..., 1]) * (b[..., 0] - c[..., 0])


def _segment_triangle_2d(a, b, T) -> bool:
    """Closed 2D segment ab meets closed 2D triangle T (3, 2)."""
    def on_seg(p, q, x):
        return np.all(np.minimum(p, q) <= x) and np.all(x <= np.maximum(p, q))

    def seg_seg(p, q, r, s):
        o1, o2, o3, o4 = _orient2(p, q, r), _orient2(p, q, s), _orient2(r, s, p), _orient2(r, s, q)
        if o1 * o2 < 0 and o3 * o4 < 0:
            return True
        return bool((o1 == 0 and on_seg(p, q, r)) or (o2 == 0 and on_seg(p, q, s))
                    or (o3 == 0 and on_seg(r, s, p)) or (o4 == 0 and on_seg(r, s, q)))

    def inside(x):
        d = np.array([_orient2(T[i], T[(i + 1) % 3], x) for i in range(3)])
        return not (np.any(d < 0) and np.any(d > 0))

    return inside(a) or inside(b) or any(seg_seg(a, b, T[i], T[(i + 1) % 3]) for i in range(3))


def segment_triangle(a, b, T) -> np.ndarray:
    """Closed segments ab ((n, 3) each) meet closed triangles T (n, 3, 3)."""
    p, q, r = T[:, 0], T[:, 1], T[:, 2]
    sa, sb = _orient(p, q, r, a), _orient(p, q, r, b)
    crosses = ~(((sa > 0) & (sb > 0)) | ((sa < 0) & (sb < 0)))
    # the line ab passes through the triangle iff it sees the three edges turning one way
    e = np.stack([_orient(a, b, p, q), _orient(a, b, q, r), _orient(a, b, r, p)], 1)
    through = np.all(e >= 0, 1) | np.all(e <= 0, 1)
    out = crosses & through
    for i in np.flatnonzero((sa == 0) & (sb == 0)):  # segment in the triangle's plane: go 2D
        n = np.abs(np.cross(q[i] - p[i], r[i] - p[i]))
        keep = [c for c in range(3) if c != int(np.argmax(n))]
        out[i] = _segment_triangle_2d(a[i, keep], b[i, keep], T[i][:, keep])
    return out


def intersect_tri_tri(T1, T2) -> np.ndarray:
    """Closed triangles T1[i], T2[i] ((n, 3, 3) each, same frame) intersect: (n,) bool."""
    T1, T2 = np.asarray(T1, float).reshape(-1, 3, 3), np.asarray(T2, float).reshape(-1, 3, 3)
    hit = np.zeros(len(T1), bool)
    for X, Y in ((T1, T2), (T2, T1)):
        for i in range(3):
            hit |= segment_triangle(X[:, i], X[:, (i + 1) % 3], Y)
    return hit


def closest_point_triangle(p, T) -> np.ndarray:
    """Closest points on closed triangles T (n, 3, 3) to points p (n, 3)."""
    a, b, c = T[:, 0], T[:, 1], T[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    proj = p - np.einsum("ij,ij->i", p - a, n)[:, None] * n
    edges_in = [np.einsum("ij,ij->i", np.cross(v - u, proj - u), n) >= 0 for u, v in ((a, b), (b, c), (c, a))]
    best = proj.copy()
    outside = ~(edges_in[0] & edges_in[1] & edges_in[2])
    cands = [closest_point_segment(p, u, v) for u, v in ((a, b), (b, c), (c, a))]
    d = np.stack([np.linalg.norm(x - p, axis=1) for x in cands], 1)
    pick = np.argmin(d, 1)
    for k in range(3):
        m = outside & (pick == k)
        best[m] = cands[k][m]
    return best


def closest_point_segment(p, u, v) -> np.ndarray:
    """Closest points on segments uv to p, all (n, 3)."""
    s = np.clip(np.einsum("ij,ij->i", p - u, v - u) / np.einsum("ij,ij->i", v - u, v - u), 0, 1)
    return u + s[:, None] * (v - u)


def sample_triangle(T, n: int) -> np.ndarray:
    """Points on a regular barycentric grid (n + 1 per edge, vertices included) of T (3, 3)."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    u, v = i[keep] / n, j[keep] / n
    return T[0] + u[:, None] * (T[1] - T[0]) + v[:, None] * (T[2] - T[0])


def sampled_distance(T1, T2, n: int = 40) -> float:
    """Smallest distance between sample points of T1 and T2: an upper bound on their distance."""
    P, Q = sample_triangle(T1, n), sample_triangle(T2, n)
    # each sample against the other triangle exactly, so the bound is tight to O(h^2)
    d1 = np.linalg.norm(P - closest_point_triangle(P, np.broadcast_to(T2, (len(P), 3, 3))), axis=1).min()
    d2 = np.linalg.norm(Q - closest_point_triangle(Q, np.broadcast_to(T1, (len(Q), 3, 3))), axis=1).min()
    return float(min(d1, d2))


def triangle_distances(points: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(n, m) distances from points (n, 3) to triangles (m, 3, 3); O(n m) memory."""
    n, m = len(points), len(tris)
    P = np.repeat(points, m, axis=0)
    q = closest_point_triangle(P, np.tile(tris, (n, 1, 1)))
    return np.linalg.norm(P - q, axis=1).reshape(n, m)


def triangle_box_overlap_ref(tris: np.ndarray, box_center: np.ndarray, half: float | np.ndarray) -> np.ndarray:
    """(n,) bool: closed triangle tris[i] (3,3) meets the cube box_center[i] +- half (Akenine-Moller SAT).

    tris (n,3,3), box_center (n,3), half scalar or (n,); plain numpy, vectorised over pairs (the
    oracle of triangles.overlap_triangles_boxes).
    A small relative padding keeps touching-but-rounded cases occupied (conservative).
    """
    h = np.broadcast_to(np.asarray(half, np.float64), (len(tris),)) * (1 + 1e-9)
    v = tris - box_center[:, None, :]
    ok = (v.min(axis=1) <= h[:, None]).all(axis=1) & (v.max(axis=1) >= -h[:, None]).all(axis=1)
    e = v[:, [1, 2, 0]] - v  # the three edges
    n = np.cross(e[:, 0], e[:, 1])
    ok &= np.abs(np.einsum("ij,ij->i", n, v[:, 0])) <= h * np.abs(n).sum(axis=1)
    for i in range(3):
        axis_unit = np.zeros(3)
        axis_unit[i] = 1.0
        a = np.cross(axis_unit[None, None, :], e)  # (n, 3 edges, 3)
        p = np.einsum("nek,nvk->nev", a, v)  # projections of the 3 vertices on the 3 axes
        r = h[:, None] * np.abs(a).sum(axis=2)
        ok &= ((p.min(axis=2) <= r) & (p.max(axis=2) >= -r)).all(axis=1)
    return ok


def _segment_d2_exact(p1, q1, p2, q2) -> Fraction:
    """Squared distance of closed segments p1 q1 and p2 q2 (3 floats each), exact: the squared
    distance |r + s d1 - t d2|^2 is a convex quadratic on the unit square, least at its stationary
    point when that lies in the square, else on a side, where one parameter is 0 or 1 and the
    other the clamped projection of that endpoint onto the other segment."""
    P1, Q1, P2, Q2 = ([Fraction(float(x)) for x in v] for v in (p1, q1, p2, q2))
    d1 = [q - p for p, q in zip(P1, Q1)]
    d2 = [q - p for p, q in zip(P2, Q2)]
    r = [p - q for p, q in zip(P1, P2)]

    def dot(u, v):
        return sum(x * y for x, y in zip(u, v))

    def d2_at(s, t):
        w = [ri + s * x - t * y for ri, x, y in zip(r, d1, d2)]
        return dot(w, w)

    def clamp(x):
        return min(max(x, Fraction(0)), Fraction(1))

    a, b, c, e, f = dot(d1, d1), dot(d1, d2), dot(d1, r), dot(d2, d2), dot(d2, r)
    cands = []
    det = a * e - b * b
    if det != 0:
        s, t = (b * f - c * e) / det, (a * f - b * c) / det
        if 0 <= s <= 1 and 0 <= t <= 1:
            cands.append(d2_at(s, t))
    for t in (Fraction(0), Fraction(1)):  # t fixed: s projects p2 + t d2 onto segment 1
        cands.append(d2_at(clamp((t * b - c) / a) if a else Fraction(0), t))
    for s in (Fraction(0), Fraction(1)):  # s fixed: t projects p1 + s d1 onto segment 2
        cands.append(d2_at(s, clamp((s * b + f) / e) if e else Fraction(0)))
    return min(cands)


def segment_distance_ref(p1, q1, p2, q2) -> np.ndarray:
    """(n,) distances of closed segments p1[i] q1[i] and p2[i] q2[i] ((n, 3) arrays; a segment may
    be a point), exact up to the final rounding (rational arithmetic; slow: tests only)."""
    rows = zip(*(np.asarray(v, float).reshape(-1, 3) for v in (p1, q1, p2, q2)))
    return np.array([np.sqrt(float(_segment_d2_exact(*x))) for x in rows])


def relative_poses_ref(Ta, Tb):
    """(R (k, 3, 3), t (k, 3)): B's pose in A's frame, x_A = R x_B + t, from (k, 4, 4) body->world
    transforms, as matrix products (R = Ra^T Rb, t = Ra^T (pb - pa))."""
    Ra, Rb = Ta[:, :3, :3], Tb[:, :3, :3]
    R = np.transpose(Ra, (0, 2, 1)) @ Rb
    t = np.einsum("kji,kj->ki", Ra, Tb[:, :3, 3] - Ta[:, :3, 3])
    return R, t
