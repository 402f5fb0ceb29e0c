"""Batched narrow-phase kernels (numba) over many ship pairs at once.

A pair's state is a CSR list of colliding node pairs (global node ids of a TreeBank): row i's
pairs are fa[ptr[i]:ptr[i+1]], fb[ptr[i]:ptr[i+1]]. Each pair row r has the relative pose of
ship B in ship A's body frame, R[r] (3, 3) and t[r] (3,): x_A = R[r] @ x_B + t[r]; every test
runs in A's frame (rigid motions keep radii and distances). Kernels handle rows s..e of the
active list (`rows[i]` is the pose row of active row i) so the Python caller can watch the clock
between batches.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .triangles import distance_triangle_triangle, intersect_triangle_triangle


@njit(cache=True)
def _to_a(R, t, r, x, out):
    """out = R[r] @ x + t[r]: a point of B's body frame in A's body frame."""
    for k in range(3):
        out[k] = R[r, k, 0] * x[0] + R[r, k, 1] * x[1] + R[r, k, 2] * x[2] + t[r, k]


@njit(cache=True)
def _dist2(a, b):
    return (a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2


@njit(cache=True)
def descend_pairs(ca, ra, fca, cca, cb, rb, fcb, ccb, R, t, rows, ptr, fa, fb, s, e):
    """One level deeper for active rows s..e: every child pair of a colliding node pair whose
    spheres overlap (a leaf stands in for its own children, so trees of unequal depth mix).

    Returns (out_ptr (e-s+1,) int64, out_a (n,) int32, out_b (n,) int32), CSR over rows s..e.
    """
    cap = 0
    for j in range(ptr[s], ptr[e]):
        cap += max(cca[fa[j]], 1) * max(ccb[fb[j]], 1)
    out_a = np.empty(cap, np.int32)
    out_b = np.empty(cap, np.int32)
    out_ptr = np.zeros(e - s + 1, np.int64)
    xb = np.empty(3)
    n = 0
    for i in range(s, e):
        r = rows[i]
        for j in range(ptr[i], ptr[i + 1]):
            a0, na, b0, nb = fa[j], 1, fb[j], 1
            if cca[a0] > 0:
                a0, na = fca[a0], cca[a0]
            if ccb[b0] > 0:
                b0, nb = fcb[b0], ccb[b0]
            for b in range(b0, b0 + nb):
                _to_a(R, t, r, cb[b], xb)
                for a in range(a0, a0 + na):
                    rr = ra[a] + rb[b]
                    if _dist2(ca[a], xb) <= rr * rr:
                        out_a[n] = a
                        out_b[n] = b
                        n += 1
        out_ptr[i - s + 1] = n
    return out_ptr, out_a[:n], out_b[:n]


@njit(cache=True)
def _grow(arr, need):
    if need <= len(arr):
        return arr
    out = np.empty(max(need, 2 * len(arr)), arr.dtype)
    out[:len(arr)] = arr
    return out


@njit(cache=True)
def _candidate_triangles(ca, ra, tpa, tia, tca, tra, cb, rb, tpb, tib, tcb, trb, R, t, r, lo, hi, fa, fb,
                         n_tri_b, codes):
    """Triangle pairs (code ta * n_tri_b + tb) of leaf pairs lo..hi worth an exact test: each
    triangle's bounding sphere meets the other leaf's sphere and the two triangles' bounding
    spheres meet (triangles outside a sphere cannot meet anything inside it). Returns (codes, m)."""
    m = 0
    xb = np.empty(3)
    xt = np.empty(3)
    sel_b = np.empty(0, np.int64)
    pos_b = np.empty((0, 3))
    for j in range(lo, hi):
        a, b = fa[j], fb[j]
        _to_a(R, t, r, cb[b], xb)
        nbt = tpb[b + 1] - tpb[b]
        sel_b = _grow(sel_b, nbt)
        if len(pos_b) < len(sel_b):
            pos_b = np.empty((len(sel_b), 3))
        k = 0
        for q in range(tpb[b], tpb[b + 1]):
            tb = tib[q]
            _to_a(R, t, r, tcb[tb], xt)
            rr = trb[tb] + ra[a]
            if _dist2(xt, ca[a]) <= rr * rr:
                sel_b[k] = tb
                pos_b[k] = xt
                k += 1
        if k == 0:
            continue
        for q in range(tpa[a], tpa[a + 1]):
            ta = tia[q]
            rr = tra[ta] + rb[b]
            if _dist2(tca[ta], xb) > rr * rr:
                continue
            codes = _grow(codes, m + k)
            for u in range(k):
                rr = tra[ta] + trb[sel_b[u]]
                if _dist2(tca[ta], pos_b[u]) <= rr * rr:
                    codes[m] = ta * n_tri_b + sel_b[u]
                    m += 1
    return codes, m


@njit(cache=True)
def exact_pairs(ca, ra, tpa, tia, tva, tca, tra, cb, rb, tpb, tib, tvb, tcb, trb, R, t, rows, ptr, fa, fb,
                s, e, n_tri_b):
    """Exact level for active rows s..e whose node pairs are colliding leaves: every distinct
    triangle pair (one from each leaf) that intersects. Triangle ids are global bank ids.

    Returns (out_ptr (e-s+1,) int64, hit_a (h,) int32, hit_b (h,) int32), CSR over rows s..e.
    """
    out_ptr = np.zeros(e - s + 1, np.int64)
    hit_a = np.empty(64, np.int32)
    hit_b = np.empty(64, np.int32)
    codes = np.empty(256, np.int64)
    V2 = np.empty((3, 3))
    h = 0
    for i in range(s, e):
        r = rows[i]
        codes, m = _candidate_triangles(ca, ra, tpa, tia, tca, tra, cb, rb, tpb, tib, tcb, trb, R, t, r,
                                        ptr[i], ptr[i + 1], fa, fb, n_tri_b, codes)
        cand = np.sort(codes[:m])  # a triangle pair met in several leaf pairs is tested once
        for u in range(m):
            if u > 0 and cand[u] == cand[u - 1]:
                continue
            ta, tb = cand[u] // n_tri_b, cand[u] % n_tri_b
            for v in range(3):
                _to_a(R, t, r, tvb[tb, v], V2[v])
            if intersect_triangle_triangle(tva[ta], V2):
                hit_a = _grow(hit_a, h + 1)
                hit_b = _grow(hit_b, h + 1)
                hit_a[h] = ta
                hit_b[h] = tb
                h += 1
        out_ptr[i - s + 1] = h
    return out_ptr, hit_a[:h], hit_b[:h]


@njit(cache=True)
def summarize_pairs(ca, ra, ea, wa, cb, rb, eb, wb, R, t, ptr, fa, fb):
    """Per row i (pose row i) over its colliding node pairs, in A's body frame:

    bound  : (k,) min over pairs of min(e_a + e_b, |witness_a - witness_b|) — both are true upper
             bounds on the ships' separation (a point in both spheres is within e_a of A and e_b
             of B; witnesses are real surface points); +inf for rows without pairs
    point  : (k, 3) mean over pairs of the middle of the spheres' overlap on their centre line
             (nan for rows without pairs)
    normal : (k, 3) unit, mean direction from A's sphere centres to B's (A's origin to B's when
             those cancel, +x when the origins coincide too)
    """
    k = len(ptr) - 1
    bound = np.full(k, np.inf)
    point = np.full((k, 3), np.nan)
    normal = np.zeros((k, 3))
    xb = np.empty(3)
    xw = np.empty(3)
    for i in range(k):
        lo, hi = ptr[i], ptr[i + 1]
        if hi == lo:
            continue
        p = np.zeros(3)
        nrm = np.zeros(3)
        best = np.inf
        for j in range(lo, hi):
            a, b = fa[j], fb[j]
            _to_a(R, t, i, cb[b], xb)
            _to_a(R, t, i, wb[b], xw)
            best = min(best, ea[a] + eb[b], np.sqrt(_dist2(wa[a], xw)))
            d = np.sqrt(_dist2(ca[a], xb))
            # the overlap of the two spheres along the centre line, measured from A's centre
            mid = 0.5 * (max(-ra[a], d - rb[b]) + min(ra[a], d + rb[b]))
            for c in range(3):
                u = (xb[c] - ca[a, c]) / d if d > 0.0 else 0.0
                p[c] += ca[a, c] + mid * u
                nrm[c] += u
        bound[i] = best
        point[i] = p / (hi - lo)
        length = np.sqrt(nrm[0] ** 2 + nrm[1] ** 2 + nrm[2] ** 2)
        if length < 1e-9:
            nrm[:] = t[i]
            length = np.sqrt(nrm[0] ** 2 + nrm[1] ** 2 + nrm[2] ** 2)
        if length < 1e-12:
            nrm[:] = 0.0
            nrm[0] = length = 1.0
        normal[i] = nrm / length
    return bound, point, normal


@njit(cache=True)
def min_distance_all_pairs(TA, TB):
    """Brute force: smallest distance between any triangle of TA (n, 3, 3) and any of TB (m, 3, 3),
    same frame. Pairs whose bounding boxes are already farther apart than the best so far are
    skipped (their distance can only be larger). 0 when some pair intersects."""
    lo_a = np.empty((len(TA), 3))
    hi_a = np.empty((len(TA), 3))
    lo_b = np.empty((len(TB), 3))
    hi_b = np.empty((len(TB), 3))
    for T, lo, hi in ((TA, lo_a, hi_a), (TB, lo_b, hi_b)):
        for i in range(len(T)):
            for c in range(3):
                lo[i, c] = min(T[i, 0, c], T[i, 1, c], T[i, 2, c])
                hi[i, c] = max(T[i, 0, c], T[i, 1, c], T[i, 2, c])
    best2 = np.inf
    out = np.empty((2, 3))
    for i in range(len(TA)):
        for j in range(len(TB)):
            g2 = 0.0
            for c in range(3):
                g = max(lo_b[j, c] - hi_a[i, c], lo_a[i, c] - hi_b[j, c], 0.0)
                g2 += g * g
            if g2 >= best2:
                continue
            d = distance_triangle_triangle(TA[i], TB[j], out)
            if d * d < best2:
                best2 = d * d
                if d == 0.0:
                    return 0.0
    return np.sqrt(best2)
