"""Closest points of two segments, one implementation for the whole package (the triangle distance,
the Lin–Canny walk's feature pairs and the SSV cores' edge pairs all call it).

Ericson's clamp, recompute, clamp (RTCD 5.1.9) on closed segments p1 q1 and p2 q2 (3-tuples,
either possibly a point): s from the two infinite lines, clamped to [0, 1]; t for that s, and
where t leaves [0, 1], t clamped and s recomputed for it. For nearly parallel segments the lines'
solution (b f - c e) / (a e - b^2) loses its digits to cancellation: a e - b^2 = a e sin^2 of
their angle, so below PARALLEL a e more than 4 of 16 digits are gone and the cross-product form
n . (d2 x r) / |n|^2 (n = d1 x d2, no squared cancellation: 1 / sin instead of 1 / sin^2) takes
over. Exactly parallel lines leave s free: any s in [0, 1] gives a closest pair once t and the
clamps follow, and s = 0 is taken.

The numpy oracle is `reference.segment_distance_ref` (tests/geometry/test_segments.py).
"""
from __future__ import annotations

from numba import njit

from .vectors import cross, dot, lerp, sub

PARALLEL = 1e-4  # a e - b^2 below this fraction of a e: nearly parallel (within 0.01 rad), cross-product form
POINT = 1e-300   # a squared length at most this: the segment is a point


@njit(cache=True, inline="always")
def _line_param(d1, d2, r, a, b, c, e, f):
    """s in [0, 1] of the point of line p1 + s d1 closest to line p2 + t d2 (r = p1 - p2; a, b, c,
    e, f the dot products of `segment_params`), clamped."""
    denom = a * e - b * b
    if denom > PARALLEL * a * e:
        return min(max((b * f - c * e) / denom, 0.0), 1.0)
    n = cross(d1, d2)
    nn = dot(n, n)
    if nn > 0.0:
        return min(max(dot(n, cross(d2, r)) / nn, 0.0), 1.0)
    return 0.0


@njit(cache=True, inline="always")
def segment_params(p1, q1, p2, q2):
    """Parameters (s, t) in [0, 1] of the closest points p1 + s (q1 - p1), p2 + t (q2 - p2) of two
    closed segments given as 3-tuples, either possibly a point."""
    d1, d2, r = sub(q1, p1), sub(q2, p2), sub(p1, p2)
    a, e, f = dot(d1, d1), dot(d2, d2), dot(d2, r)
    if a <= POINT and e <= POINT:
        return 0.0, 0.0
    if a <= POINT:
        return 0.0, min(max(f / e, 0.0), 1.0)
    c = dot(d1, r)
    if e <= POINT:
        return min(max(-c / a, 0.0), 1.0), 0.0
    b = dot(d1, d2)
    s = _line_param(d1, d2, r, a, b, c, e, f)
    t = (b * s + f) / e
    if t < 0.0:
        return min(max(-c / a, 0.0), 1.0), 0.0
    if t > 1.0:
        return min(max((b - c) / a, 0.0), 1.0), 1.0
    return s, t


@njit(cache=True, inline="always")
def closest_points_segments(p1, q1, p2, q2):
    """(x, y, s, t): the closest points x on segment p1 q1 and y on p2 q2 (3-tuples) and their
    parameters (`segment_params`)."""
    s, t = segment_params(p1, q1, p2, q2)
    return lerp(p1, q1, s), lerp(p2, q2, t), s, t
