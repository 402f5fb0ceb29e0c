"""Distances between swept-sphere cores (numba): points, segments and rectangles (Larsen et al. 1999).

Every swept-sphere volume (SSV) is stored as a rectangle swept by a sphere: centre c, unit axes u, v,
half-extents a >= b >= 0 and radius r; a PSS has a = b = 0 (a point), an LSS b = 0 (a segment), an
RSS a, b > 0. The distance of two SSVs is the distance of their cores minus both radii, so all a
query needs is the distance between two cores. `rect_distance` gives it for every pair of kinds: a
point or a segment is a rectangle whose edges have length zero, which its formulas take as they are.

Points are 3-tuples of float64 (registers, no arrays). A numpy brute-force oracle (every face of the
parameter box, least squares) is `core_distance_ref` in tests/ssv.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.vectors import cross, dot, sub

PSS, LSS, RSS = 0, 1, 2


@njit(cache=True)
def _clamp(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(cache=True)
def core_frame(c1, u1, v1, c2, u2, v2):
    """Core 2 seen from core 1's frame (u1, v1, n1 = u1 x v1; centre c1 at 0): (T, U, V, tu, tv), its
    centre T and axes U, V there, and d . u2, d . v2 (d = c2 - c1: T in core 2's own axes)."""
    n1 = cross(u1, v1)
    d = sub(c2, c1)
    T = (dot(d, u1), dot(d, v1), dot(d, n1))
    U = (dot(u2, u1), dot(u2, v1), dot(u2, n1))
    V = (dot(v2, u1), dot(v2, v1), dot(v2, n1))
    return T, U, V, dot(d, u2), dot(d, v2)


@njit(cache=True)
def normal_gaps(T, U, V, a1, b1, a2, b2):
    """A lower bound on the distance of two cores (core 2 as `core_frame` gives it, half-extents
    a, b): the larger gap of their projections on the two normals, along which each has no extent
    of its own."""
    n2 = cross(U, V)
    return max(abs(T[2]) - a2 * abs(U[2]) - b2 * abs(V[2]), abs(dot(T, n2)) - a1 * abs(n2[0]) - b1 * abs(n2[1]))


@njit(cache=True)
def _edge_pair(T, wk, wl, ha_m, ha_o, hb_k, hb_l, sm, sk):
    """|q - p| for the closest points p, q of edge x = sm ha_m of rectangle 1 and edge y_k = sk hb_k
    of rectangle 2 (coordinates as in `_edge_pairs`) if they are the rectangles' closest points,
    else -1. Ericson's clamp, recompute, clamp (RTCD 5.1.9), the lines' solution in its
    cross-product form (1 - c^2 = |y x wl|^2), which keeps its accuracy for nearly parallel edges,
    where the other cancels. They are the rectangles' when q - p points out of rectangle 1's edge
    (then p is q's projection onto it) and p - q out of rectangle 2's: the optimality condition of
    the convex problem (to 1e-12 |q - p| of rounding)."""
    w = (T[0] + sk * hb_k * wk[0] - sm * ha_m, T[1] + sk * hb_k * wk[1], T[2] + sk * hb_k * wk[2])
    denom = wl[0] * wl[0] + wl[2] * wl[2]
    s = _clamp(w[1] - wl[1] * (w[0] * wl[0] + w[2] * wl[2]) / denom, -ha_o, ha_o) if denom > 0.0 else 0.0
    t = s * wl[1] - dot(wl, w)
    if t < -hb_l or t > hb_l:  # the lines' closest point lies off edge 2: its end, then s again
        t = _clamp(t, -hb_l, hb_l)
        s = _clamp(w[1] + t * wl[1], -ha_o, ha_o)
    r = (w[0] + t * wl[0], w[1] + t * wl[1] - s, w[2] + t * wl[2])
    nr = np.sqrt(dot(r, r))
    if nr == 0.0 or (sm * r[0] >= -1e-12 * nr and sk * dot(r, wk) <= 1e-12 * nr):
        return nr
    return -1.0


@njit(cache=True)
def _edge_pairs(T, wk, wl, ha_m, ha_o, hb_k, hb_l, tw_k):
    """`_edge_pair` over the edges x = +-ha_m of rectangle 1 and y_k = +-hb_k of rectangle 2, in
    coordinates where rectangle 1 is {|x| <= ha_m, |y| <= ha_o, z = 0} and rectangle 2 is centred
    at T with axes wk (its edges' normal, half-extent hb_k) and wl (its edges' direction, hb_l);
    tw_k = T.wk. Returns the first answer found, else -1. A pair is screened out, without branches
    (they would mostly be mispredicted), when either edge does not reach past the other's edge line."""
    p, q = hb_k * wk[0], ha_m * wk[0]
    e1 = hb_l * abs(wl[0]) - ha_m  # 2's edge sk reaches past x = sm ha_m: sm (T0 + sk p) + e1 >= 0
    e2 = ha_o * abs(wk[1]) - hb_k  # 1's edge sm reaches past y_k = sk hb_k: sk (sm q - tw_k) + e2 >= 0
    yp, ym, zp, zm = T[0] + p, T[0] - p, q - tw_k, -q - tw_k
    pp = (yp + e1 >= 0.0) & (zp + e2 >= 0.0)
    mp = (e1 - yp >= 0.0) & (zm + e2 >= 0.0)
    pm = (ym + e1 >= 0.0) & (e2 - zp >= 0.0)
    mm = (e1 - ym >= 0.0) & (e2 - zm >= 0.0)
    if not (pp | mp | pm | mm):
        return -1.0
    for sm, sk, ok in ((1.0, 1.0, pp), (-1.0, 1.0, mp), (1.0, -1.0, pm), (-1.0, -1.0, mm)):
        if ok:
            g = _edge_pair(T, wk, wl, ha_m, ha_o, hb_k, hb_l, sm, sk)
            if g >= 0.0:
                return g
    return -1.0


@njit(cache=True)
def _swap(p):
    """p with x and y swapped (a reflection: distances and dot products stay)."""
    return (p[1], p[0], p[2])


@njit(cache=True)
def _face_gap(T, U, V, a1, b1, a2, b2):
    """(gap, inside): the gap between rectangle 1 {|x| <= a1, |y| <= b1, z = 0} and rectangle 2
    (centre T, axes U, V, half-extents a2, b2) along 1's normal, and whether 2's point nearest 1's
    plane projects into 1 with a gap > 0 — then that gap is their distance (the point and its
    projection are each other's nearest points). Ties (an edge or face of 2 parallel to the
    plane) take its middle."""
    s = np.sign(T[2])  # the side of 1's plane that 2's centre is on (0: none, no gap)
    ku, kv = -a2 * np.sign(s * U[2]), -b2 * np.sign(s * V[2])
    gap = s * T[2] - a2 * abs(U[2]) - b2 * abs(V[2])
    inside = (gap > 0.0) & (abs(T[0] + ku * U[0] + kv * V[0]) <= a1) & (abs(T[1] + ku * U[1] + kv * V[1]) <= b1)
    return gap, inside


@njit(cache=True)
def rect_distance(c1, u1, v1, a1, b1, c2, u2, v2, a2, b2):
    """Distance between the cores {c + s u + t v : |s| <= a, |t| <= b} (u, v orthonormal, a, b >= 0:
    rectangles, segments or points), in the manner of PQP's RectDist (Larsen et al. 1999): the
    closest points lie in a face of one (`_face_gap`, cheap: tried first), or on an edge of each
    (`_edge_pairs`, 4 x 4 pairs), or the rectangles cross (0; the gaps along the two normals, each
    a lower bound, are the distance where a tie hid a face case). A point or a segment is a
    rectangle whose edges may have length zero. Works in rectangle 1's frame (`core_frame`)."""
    T, U, V, tu, tv = core_frame(c1, u1, v1, c2, u2, v2)
    return framed_rect_distance(T, U, V, tu, tv, a1, b1, a2, b2)


@njit(cache=True)
def framed_rect_distance(T, U, V, tu, tv, a1, b1, a2, b2):
    """`rect_distance` of core 2 as `core_frame` gives it (a caller that has the frame already)."""
    g1, inside = _face_gap(T, U, V, a1, b1, a2, b2)
    if inside:
        return g1
    n2 = cross(U, V)  # rectangle 1 seen from rectangle 2's frame (u2, v2, n2)
    g2, inside = _face_gap((-tu, -tv, -dot(T, n2)), (U[0], V[0], n2[0]), (U[1], V[1], n2[1]), a2, b2, a1, b1)
    if inside:
        return g2
    # rectangle 1's edges x = +-a1 (as they are), then y = +-b1 (x, y swapped)
    g = _edge_pairs(T, U, V, a1, b1, a2, b2, tu)
    if g < 0.0:
        g = _edge_pairs(T, V, U, a1, b1, b2, a2, tv)
    if g < 0.0:
        g = _edge_pairs(_swap(T), _swap(U), _swap(V), b1, a1, a2, b2, tu)
    if g < 0.0:
        g = _edge_pairs(_swap(T), _swap(V), _swap(U), b1, a1, b2, a2, tv)
    return g if g >= 0.0 else max(g1, g2, 0.0)


BOX_EPS = 1e-9  # added to every |cosine| of the box test: rounding never separates touching boxes


@njit(cache=True)
def box_gap(T, U, V, N, ea, eb):
    """Separating-axis test of two oriented boxes (Gottschalk et al. 1996, as in RAPID, PQP and fcl):
    box 1 {|x| <= ea[0], |y| <= ea[1], |z| <= ea[2]}; box 2 centred at T with unit axes U, V, N
    (a right-handed frame) and half-extents eb, all in box 1's frame. > 0 when a separating axis
    was found (the first found's margin, unscaled on the 9 edge-edge axes: only its sign means
    anything), else <= 0: the largest of the 6 face axes' margins (a penetration depth along them
    when negative, used to order overlapping pairs). Face axes first (1's, then 2's), then the
    edge-edge axes, each returning at once. Cosines get BOX_EPS: near-parallel edges, whose cross
    product is rounding noise, never separate."""
    R00, R01, R02 = abs(U[0]) + BOX_EPS, abs(V[0]) + BOX_EPS, abs(N[0]) + BOX_EPS
    R10, R11, R12 = abs(U[1]) + BOX_EPS, abs(V[1]) + BOX_EPS, abs(N[1]) + BOX_EPS
    R20, R21, R22 = abs(U[2]) + BOX_EPS, abs(V[2]) + BOX_EPS, abs(N[2]) + BOX_EPS
    a0, a1, a2 = ea[0], ea[1], ea[2]
    b0, b1, b2 = eb[0], eb[1], eb[2]
    g = abs(T[0]) - a0 - b0 * R00 - b1 * R01 - b2 * R02
    if g > 0.0:
        return g
    m = g
    g = abs(T[1]) - a1 - b0 * R10 - b1 * R11 - b2 * R12
    if g > 0.0:
        return g
    m = max(m, g)
    g = abs(T[2]) - a2 - b0 * R20 - b1 * R21 - b2 * R22
    if g > 0.0:
        return g
    m = max(m, g)
    g = abs(dot(T, U)) - b0 - a0 * R00 - a1 * R10 - a2 * R20
    if g > 0.0:
        return g
    m = max(m, g)
    g = abs(dot(T, V)) - b1 - a0 * R01 - a1 * R11 - a2 * R21
    if g > 0.0:
        return g
    m = max(m, g)
    g = abs(dot(T, N)) - b2 - a0 * R02 - a1 * R12 - a2 * R22
    if g > 0.0:
        return g
    m = max(m, g)
    # edge-edge axes e_j x (axis k of box 2), T.(e_j x w) = (w x T)_j-style expansions
    if abs(T[2] * U[1] - T[1] * U[2]) > a1 * R20 + a2 * R10 + b1 * R02 + b2 * R01:
        return 1.0
    if abs(T[2] * V[1] - T[1] * V[2]) > a1 * R21 + a2 * R11 + b0 * R02 + b2 * R00:
        return 1.0
    if abs(T[2] * N[1] - T[1] * N[2]) > a1 * R22 + a2 * R12 + b0 * R01 + b1 * R00:
        return 1.0
    if abs(T[0] * U[2] - T[2] * U[0]) > a0 * R20 + a2 * R00 + b1 * R12 + b2 * R11:
        return 1.0
    if abs(T[0] * V[2] - T[2] * V[0]) > a0 * R21 + a2 * R01 + b0 * R12 + b2 * R10:
        return 1.0
    if abs(T[0] * N[2] - T[2] * N[0]) > a0 * R22 + a2 * R02 + b0 * R11 + b1 * R10:
        return 1.0
    if abs(T[1] * U[0] - T[0] * U[1]) > a0 * R10 + a1 * R00 + b1 * R22 + b2 * R21:
        return 1.0
    if abs(T[1] * V[0] - T[0] * V[1]) > a0 * R11 + a1 * R01 + b0 * R22 + b2 * R20:
        return 1.0
    if abs(T[1] * N[0] - T[0] * N[1]) > a0 * R12 + a1 * R02 + b0 * R21 + b1 * R20:
        return 1.0
    return m


@njit(cache=True)
def ssv_box_gap(c1, u1, v1, a1, b1, r1, c2, u2, v2, a2, b2, r2):
    """`box_gap` of the boxes holding two SSVs (core centre c, unit axes u, v, half-extents a, b,
    radius r): axes u, v, u x v, half-extents (a + r, b + r, r). > 0 only when the SSVs are apart."""
    n1 = cross(u1, v1)
    d = sub(c2, c1)
    T = (dot(d, u1), dot(d, v1), dot(d, n1))
    U = (dot(u2, u1), dot(u2, v1), dot(u2, n1))
    V = (dot(v2, u1), dot(v2, v1), dot(v2, n1))
    return box_gap(T, U, V, cross(U, V), (a1 + r1, b1 + r1, r1), (a2 + r2, b2 + r2, r2))
