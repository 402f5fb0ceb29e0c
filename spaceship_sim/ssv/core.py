"""Distances between swept-sphere cores (numba): points, segments and rectangles (Larsen et al. 1999).

Every swept-sphere volume (SSV) is stored as a rectangle swept by a sphere: centre c, unit axes u, v,
half-extents a >= b >= 0 and radius r; a PSS has a = b = 0 (a point), an LSS b = 0 (a segment), an
RSS a, b > 0. The distance of two SSVs is the distance of their cores minus both radii, so all a
query needs is the squared distance between two cores, dispatched on their kinds:

    point-anything : clamp the point into the rectangle's frame (a segment is a rectangle with b = 0)
    segment-segment: Ericson (RTCD 5.1.9), degenerate segments included (geometry.triangles.segment_params)
    segment-rect   : 0 if the segment crosses the rectangle, else the best of its two end points
                     against the rectangle and the segment against the rectangle's four edges
    rect-rect      : 0 if an edge of one crosses the other, else the best of the 16 edge pairs and
                     the 8 corners against the other rectangle (two disjoint convex polygons have a
                     closest pair with a point on the boundary of one: an edge)

Points are 3-tuples of float64 (registers, no arrays). A numpy brute-force oracle (every face of the
parameter box, least squares) is `core_distance_ref` in tests/ssv.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.triangles import segment_params

PSS, LSS, RSS = 0, 1, 2
TIGHT = 1e-12  # bounds this close (relative) are the exact distance


@njit(cache=True)
def _sub(p, q):
    return (p[0] - q[0], p[1] - q[1], p[2] - q[2])


@njit(cache=True)
def _dot(p, q):
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


@njit(cache=True)
def _axpy(p, s, d):
    """p + s d."""
    return (p[0] + s * d[0], p[1] + s * d[1], p[2] + s * d[2])


@njit(cache=True)
def _clamp(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(cache=True)
def dist2_point_rect(p, c, u, v, a, b):
    """Squared distance from point p to the rectangle {c + s u + t v : |s| <= a, |t| <= b}."""
    d = _sub(p, c)
    q = _axpy(_axpy(c, _clamp(_dot(d, u), -a, a), u), _clamp(_dot(d, v), -b, b), v)
    e = _sub(p, q)
    return _dot(e, e)


@njit(cache=True)
def clamp_to_rect(p, c, u, v, a, b):
    """The point of the rectangle {c + s u + t v : |s| <= a, |t| <= b} closest to p."""
    d = _sub(p, c)
    return _axpy(_axpy(c, _clamp(_dot(d, u), -a, a), u), _clamp(_dot(d, v), -b, b), v)


@njit(cache=True)
def normal_gap(d, u1, v1, u2, v2, a2, b2):
    """A lower bound on the distance of two cores whose centres differ by d (= c2 - c1): the gap of
    their projections on the first's normal u1 x v1, along which the first has no extent."""
    n = (u1[1] * v1[2] - u1[2] * v1[1], u1[2] * v1[0] - u1[0] * v1[2], u1[0] * v1[1] - u1[1] * v1[0])
    return abs(_dot(d, n)) - a2 * abs(_dot(u2, n)) - b2 * abs(_dot(v2, n))


@njit(cache=True)
def _bounds_at(p, q, c1, u1, v1, a1, b1, c2, u2, v2, a2, b2):
    """(lower, upper) bounds on the distance of two cores from a point p of the first and q of the
    second: |q - p|, and the gap of the cores' extents along q - p (a separating axis)."""
    d = _sub(q, p)
    upper = np.sqrt(_dot(d, d))
    if upper == 0.0:
        return 0.0, 0.0
    hi1 = _dot(d, c1) + a1 * abs(_dot(d, u1)) + b1 * abs(_dot(d, v1))
    lo2 = _dot(d, c2) - a2 * abs(_dot(d, u2)) - b2 * abs(_dot(d, v2))
    return max((lo2 - hi1) / upper, 0.0), upper


@njit(cache=True)
def _edge_near(q, c, u, v, a, b):
    """The edge of a core that its point nearest q lies on, as a segment (p0, p1), and whether
    there is one: the whole core for a segment or point; for a rectangle the edge whose bound
    the clamp of q hits (s first), none when q projects inside."""
    if b == 0.0:
        return _axpy(c, -a, u), _axpy(c, a, u), True
    d = _sub(q, c)
    s, t = _dot(d, u), _dot(d, v)
    if abs(s) > a:
        e = _axpy(c, a if s > 0.0 else -a, u)
        return _axpy(e, -b, v), _axpy(e, b, v), True
    if abs(t) > b:
        e = _axpy(c, b if t > 0.0 else -b, v)
        return _axpy(e, -a, u), _axpy(e, a, u), True
    return c, c, False


@njit(cache=True)
def core_bounds(c1, u1, v1, a1, b1, c2, u2, v2, a2, b2, rounds):
    """(lower, upper) bounds on the distance between two cores (any kinds), cheaply: alternating
    projections from c2 give two core points p, q — |p - q| is an upper bound — and the gap of the
    two cores' extents along q - p a lower bound (a separating axis). They meet when p, q are the
    closest pair, which a few rounds reach unless the cores are near parallel edges: there, when
    p and q lie on edges, the closest points of those two edges (segment_params) usually are the
    pair, and the bounds from it are kept where tighter."""
    q = c2
    p = c1
    for _ in range(rounds):
        p = clamp_to_rect(q, c1, u1, v1, a1, b1)
        q = clamp_to_rect(p, c2, u2, v2, a2, b2)
    lo, hi = _bounds_at(p, q, c1, u1, v1, a1, b1, c2, u2, v2, a2, b2)
    if hi - lo > TIGHT * hi:
        e0, e1, on1 = _edge_near(q, c1, u1, v1, a1, b1)
        f0, f1, on2 = _edge_near(p, c2, u2, v2, a2, b2)
        if on1 and on2:
            s, t = segment_params(e0, e1, f0, f1)
            lo2, hi2 = _bounds_at(_axpy(e0, s, _sub(e1, e0)), _axpy(f0, t, _sub(f1, f0)),
                                  c1, u1, v1, a1, b1, c2, u2, v2, a2, b2)
            lo, hi = max(lo, lo2), min(hi, hi2)
    return lo, hi


@njit(cache=True)
def dist2_segment_segment(p1, q1, p2, q2):
    """Squared distance between closed segments p1q1 and p2q2 (either may be a point)."""
    s, t = segment_params(p1, q1, p2, q2)
    w = _sub(_axpy(p1, s, _sub(q1, p1)), _axpy(p2, t, _sub(q2, p2)))
    return _dot(w, w)


# corners of a rectangle in turn, as multiples of (a, b): edge k runs from corner k to corner k + 1
_SU = (1.0, -1.0, -1.0, 1.0)
_SV = (1.0, 1.0, -1.0, -1.0)


@njit(cache=True)
def _corner(c, u, v, a, b, k):
    return _axpy(_axpy(c, _SU[k] * a, u), _SV[k] * b, v)


@njit(cache=True)
def _crosses(p, q, c, u, v, a, b):
    """Segment pq meets the rectangle's plane inside the rectangle (ends on both closed sides;
    a segment in the plane is left to the edge and corner tests)."""
    n = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    hp, hq = _dot(_sub(p, c), n), _dot(_sub(q, c), n)
    if (hp > 0.0 and hq > 0.0) or (hp < 0.0 and hq < 0.0) or hp == hq:
        return False
    d = _sub(_axpy(p, hp / (hp - hq), _sub(q, p)), c)
    return abs(_dot(d, u)) <= a and abs(_dot(d, v)) <= b


@njit(cache=True)
def dist2_segment_rect(p, q, c, u, v, a, b):
    """Squared distance between segment pq and a rectangle with a, b > 0."""
    if _crosses(p, q, c, u, v, a, b):
        return 0.0
    best = min(dist2_point_rect(p, c, u, v, a, b), dist2_point_rect(q, c, u, v, a, b))
    for k in range(4):
        best = min(best, dist2_segment_segment(p, q, _corner(c, u, v, a, b, k), _corner(c, u, v, a, b, (k + 1) % 4)))
    return best


@njit(cache=True)
def dist2_rect_rect(c1, u1, v1, a1, b1, c2, u2, v2, a2, b2):
    """Squared distance between two rectangles with all half-extents > 0."""
    best = np.inf
    for k in range(4):
        p1, q1 = _corner(c1, u1, v1, a1, b1, k), _corner(c1, u1, v1, a1, b1, (k + 1) % 4)
        p2, q2 = _corner(c2, u2, v2, a2, b2, k), _corner(c2, u2, v2, a2, b2, (k + 1) % 4)
        if _crosses(p1, q1, c2, u2, v2, a2, b2) or _crosses(p2, q2, c1, u1, v1, a1, b1):
            return 0.0
        best = min(best, dist2_point_rect(p1, c2, u2, v2, a2, b2), dist2_point_rect(p2, c1, u1, v1, a1, b1))
        for m in range(4):
            best = min(best, dist2_segment_segment(p1, q1, _corner(c2, u2, v2, a2, b2, m),
                                                   _corner(c2, u2, v2, a2, b2, (m + 1) % 4)))
    return best


@njit(cache=True)
def dist2_core(k1, c1, u1, v1, a1, b1, k2, c2, u2, v2, a2, b2):
    """Squared distance between two cores of kinds k1, k2 (PSS, LSS, RSS), all in one frame."""
    if k1 == PSS:
        return dist2_point_rect(c1, c2, u2, v2, a2, b2)
    if k2 == PSS:
        return dist2_point_rect(c2, c1, u1, v1, a1, b1)
    if k1 == LSS and k2 == LSS:
        return dist2_segment_segment(_axpy(c1, -a1, u1), _axpy(c1, a1, u1), _axpy(c2, -a2, u2), _axpy(c2, a2, u2))
    if k1 == LSS:
        return dist2_segment_rect(_axpy(c1, -a1, u1), _axpy(c1, a1, u1), c2, u2, v2, a2, b2)
    if k2 == LSS:
        return dist2_segment_rect(_axpy(c2, -a2, u2), _axpy(c2, a2, u2), c1, u1, v1, a1, b1)
    return dist2_rect_rect(c1, u1, v1, a1, b1, c2, u2, v2, a2, b2)
