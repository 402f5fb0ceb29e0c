"""The SSV tree builder's kernel (numba): tree.py's method, compiled.

`build_nodes` fits and splits every node of the hierarchy in one call; `ssv/reference.py` is the
same method in numpy (the definition, ~100x slower), which the tests compare it with.
Two things make it fast besides compiling:
- a node's points are its triangles' distinct vertices, each weighted by how many of its triangles
  share it: the mean and covariance are the same sums, and every min and max (the turned
  rectangles' 2 x RECT_TURNS projections, the fits) runs over a sixth as many points on a closed mesh;
- the covariance's axes come from a 3 x 3 Jacobi rotation loop, not a LAPACK call per fit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .core import LSS, PSS, RSS

CUT_QUANTILES = (0.3, 0.7)  # besides the mean and the middle, the split tries cuts at these quantiles

FIT = 14  # a fit's row: kind, centre (3), u (3), v (3), a, b, r, area
JACOBI_SWEEPS = 32


@njit(cache=True)
def _axes(S, E):
    """Eigenvectors of the symmetric 3 x 3 S (overwritten) into E's columns, largest eigenvalue first."""
    for i in range(3):
        for j in range(3):
            E[i, j] = 1.0 if i == j else 0.0
    for _ in range(JACOBI_SWEEPS):
        off = S[0, 1] ** 2 + S[0, 2] ** 2 + S[1, 2] ** 2
        if off <= 1e-30 * (S[0, 0] ** 2 + S[1, 1] ** 2 + S[2, 2] ** 2) or off == 0.0:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            if S[p, q] == 0.0:
                continue
            theta = (S[q, q] - S[p, p]) / (2.0 * S[p, q])
            t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
            c = 1.0 / np.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):  # S <- J^T S J, E <- E J
                skp, skq = S[k, p], S[k, q]
                S[k, p], S[k, q] = c * skp - s * skq, s * skp + c * skq
            for k in range(3):
                spk, sqk = S[p, k], S[q, k]
                S[p, k], S[q, k] = c * spk - s * sqk, s * spk + c * sqk
            for k in range(3):
                ekp, ekq = E[k, p], E[k, q]
                E[k, p], E[k, q] = c * ekp - s * ekq, s * ekp + c * ekq
    # columns by eigenvalue, largest first (a 3-element sort)
    lam = np.array([S[0, 0], S[1, 1], S[2, 2]])
    order = np.argsort(-lam)
    F = E.copy()
    for j in range(3):
        for i in range(3):
            E[i, j] = F[i, order[j]]


@njit(cache=True)
def _principal(P, w, n, E, mean, S):
    """Weighted mean (into mean) and principal axes (into E, longest first) of points P[:n] with
    weights w[:n]; S: (3, 3) scratch."""
    total = 0.0
    mean[:] = 0.0
    for i in range(n):
        total += w[i]
        for k in range(3):
            mean[k] += w[i] * P[i, k]
    mean /= total
    S[:] = 0.0
    for i in range(n):
        d0, d1, d2 = P[i, 0] - mean[0], P[i, 1] - mean[1], P[i, 2] - mean[2]
        S[0, 0] += w[i] * d0 * d0
        S[0, 1] += w[i] * d0 * d1
        S[0, 2] += w[i] * d0 * d2
        S[1, 1] += w[i] * d1 * d1
        S[1, 2] += w[i] * d1 * d2
        S[2, 2] += w[i] * d2 * d2
    S[1, 0], S[2, 0], S[2, 1] = S[0, 1], S[0, 2], S[1, 2]
    _axes(S, E)


@njit(cache=True)
def _turn(P, n, mean, E, turns):
    """Turn E's two longest axes about the shortest to the least bounding rectangle of the points
    P[:n] among `turns` (tree.TURNS; reference._turned_axes). Only the corners of the points' outline
    in the plane of the two axes (their convex hull) can be extreme, so only points that may be
    corners are turned."""
    X2 = np.empty((n, 2))
    for i in range(n):
        d0, d1, d2 = P[i, 0] - mean[0], P[i, 1] - mean[1], P[i, 2] - mean[2]
        X2[i, 0] = d0 * E[0, 0] + d1 * E[1, 0] + d2 * E[2, 0]
        X2[i, 1] = d0 * E[0, 1] + d1 * E[1, 1] + d2 * E[2, 1]
    H = _hull(X2) if n > 8 else X2
    best, bc, bs = np.inf, 1.0, 0.0
    for k in range(turns.shape[0]):
        c, s = turns[k, 0], turns[k, 1]
        lo1, hi1, lo2, hi2 = np.inf, -np.inf, np.inf, -np.inf
        for i in range(H.shape[0]):
            x, y = H[i, 0], H[i, 1]
            y1, y2 = x * c + y * s, y * c - x * s
            lo1, hi1 = min(lo1, y1), max(hi1, y1)
            lo2, hi2 = min(lo2, y2), max(hi2, y2)
        area = (hi1 - lo1) * (hi2 - lo2)
        if area < best:
            best, bc, bs = area, c, s
    for i in range(3):
        e0, e1 = E[i, 0], E[i, 1]
        E[i, 0], E[i, 1] = bc * e0 + bs * e1, bc * e1 - bs * e0


@njit(cache=True)
def _hull(X2):
    """The plane points X2 (n, 2) that may be corners of their convex hull, as rows: all but those
    strictly inside the octagon of the points farthest along the axes and diagonals (Akl and
    Toussaint's filter; no sort). Along any direction they reach as far as all the points."""
    n = X2.shape[0]
    ext = np.zeros(8, np.int64)  # farthest along E, NE, N, NW, W, SW, S, SE: counter-clockwise
    best = np.full(8, -np.inf)
    for i in range(n):
        x, y = X2[i, 0], X2[i, 1]
        for k, d in enumerate((x, x + y, y, y - x, -x, -x - y, -y, x - y)):
            if d > best[k]:
                best[k], ext[k] = d, i
    H = np.empty((n, 2))
    m = 0
    for i in range(n):
        inside = True
        for k in range(8):
            a, b = X2[ext[k]], X2[ext[(k + 1) % 8]]
            if (b[0] - a[0]) * (X2[i, 1] - a[1]) - (b[1] - a[1]) * (X2[i, 0] - a[0]) <= 0.0:
                inside = False
                break
        if not inside:
            H[m] = X2[i]
            m += 1
    return H[:m]


@njit(cache=True)
def _pull_in(x, slack2, n):
    """Interval [lo, hi] such that every x_i lies within sqrt(slack2_i) of it (reference._pull_in)."""
    lo, hi = np.inf, -np.inf
    for i in range(n):
        s = np.sqrt(max(slack2[i], 0.0))
        lo, hi = min(lo, x[i] + s), max(hi, x[i] - s)
    if lo > hi:
        lo = hi = (lo + hi) / 2
    return lo, hi


@njit(cache=True)
def _volume(a, b, r):
    return 4 / 3 * np.pi * r ** 3 + 2 * np.pi * r ** 2 * (a + b) + 8 * r * a * b


@njit(cache=True)
def _work(p):
    """_fit's scratch for up to p points: axes, mean, covariance, coordinates and three per-point rows."""
    return np.empty((3, 3)), np.empty(3), np.empty((3, 3)), np.empty((p, 3)), np.empty(p), np.empty(p), np.empty(p)


@njit(cache=True)
def _fit(P, w, n, turns, out, work):
    """The smallest of the PSS, LSS and RSS fitted to the points P[:n] (weights w: how many
    triangles share each) along their turned principal axes (reference.fit_ssv): out[:FIT] = kind,
    centre, u, v, a, b, r, surface area. work: scratch (_work) for at least n points."""
    E, mean, S, Xw, rho2, budget, left = work
    _principal(P, w, n, E, mean, S)
    _turn(P, n, mean, E, turns)
    X = Xw[:n]
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for i in range(n):
        for k in range(3):
            X[i, k] = (P[i, 0] - mean[0]) * E[0, k] + (P[i, 1] - mean[1]) * E[1, k] + (P[i, 2] - mean[2]) * E[2, k]
            lo[k], hi[k] = min(lo[k], X[i, k]), max(hi[k], X[i, k])
    mid = (lo + hi) / 2
    # PSS
    r2 = 0.0
    for i in range(n):
        r2 = max(r2, (X[i, 0] - mid[0]) ** 2 + (X[i, 1] - mid[1]) ** 2 + (X[i, 2] - mid[2]) ** 2)
    best = (_volume(0.0, 0.0, np.sqrt(r2)), PSS, mid[0], mid[1], mid[2], 0.0, 0.0, np.sqrt(r2))
    # LSS: the perpendicular bounding box's centre, caps pulled in along the axis
    r2 = 0.0
    for i in range(n):
        rho2[i] = (X[i, 1] - mid[1]) ** 2 + (X[i, 2] - mid[2]) ** 2
        r2 = max(r2, rho2[i])
    for i in range(n):
        rho2[i] = r2 - rho2[i]  # each point's room along the axis, squared
    x0, x1 = _pull_in(X[:, 0], rho2, n)
    fit = (_volume((x1 - x0) / 2, 0.0, np.sqrt(r2)), LSS, (x0 + x1) / 2, mid[1], mid[2], (x1 - x0) / 2, 0.0,
           np.sqrt(r2))
    if fit[0] < best[0]:
        best = fit
    # RSS: half the thickness; long sides pulled in with each point's whole budget, short ones with the rest
    r = (hi[2] - lo[2]) / 2
    for i in range(n):
        budget[i] = max(r * r - (X[i, 2] - mid[2]) ** 2, 0.0)
    x0, x1 = _pull_in(X[:, 0], budget, n)
    for i in range(n):
        dx = max(max(x0 - X[i, 0], X[i, 0] - x1), 0.0)
        left[i] = budget[i] - dx * dx
    y0, y1 = _pull_in(X[:, 1], left, n)
    fit = (_volume((x1 - x0) / 2, (y1 - y0) / 2, r), RSS, (x0 + x1) / 2, (y0 + y1) / 2, mid[2], (x1 - x0) / 2,
           (y1 - y0) / 2, r)
    if fit[0] < best[0]:
        best = fit
    _, kind, c0, c1, c2, a, b, r = best
    uu, vv = 0, 1
    if b > a:
        a, b, uu, vv = b, a, 1, 0
    out[0] = RSS if b > 0 else (LSS if a > 0 else PSS)  # the kind the extents really have
    for k in range(3):
        out[1 + k] = mean[k] + E[k, 0] * c0 + E[k, 1] * c1 + E[k, 2] * c2
        out[4 + k], out[7 + k] = E[k, uu], E[k, vv]
    out[10], out[11], out[12] = a, b, r
    out[13] = 8 * a * b + 4 * np.pi * r * (a + b + r)


@njit(cache=True)
def _gather(faces, vertices, tri, lo, hi, stamp, mark, count, P, w):
    """The distinct vertices of triangles tri[lo:hi] into P, how many of them share each into w;
    returns how many. mark/count: per-vertex scratch, stamp: a value mark holds nowhere yet."""
    n = 0
    for j in range(lo, hi):
        for k in range(3):
            vid = faces[tri[j], k]
            if mark[vid] != stamp:
                mark[vid], count[vid] = stamp, n
                P[n] = vertices[vid]
                w[n] = 0.0
                n += 1
            w[count[vid]] += 1.0
    return n


@njit(cache=True)
def _quantile(xs, q):
    """numpy's linear quantile q of the sorted xs."""
    pos = q * (len(xs) - 1)
    i = int(np.floor(pos))
    if i + 1 >= len(xs):
        return xs[-1]
    return xs[i] + (xs[i + 1] - xs[i]) * (pos - i)


@njit(cache=True)
def _cut_offsets(C, turns):
    """(3, m) coordinates of the centroids C (m, 3) along their principal axis and the two sides of
    their least rectangle, centred on their mean, and (3, 4) offsets of the cuts along each: the
    mean, the middle of their extent and the CUT_QUANTILES (reference._cuts)."""
    m = C.shape[0]
    E, mean = np.empty((3, 3)), np.empty(3)
    _principal(C, np.ones(m), m, E, mean, np.empty((3, 3)))
    E0 = E.copy()
    _turn(C, m, mean, E, turns)  # E[:, 0], E[:, 1]: the turned sides; E0[:, 0]: the principal axis
    x, cuts = np.empty((3, m)), np.empty((3, 4))
    for a in range(3):
        col = E0[:, 0] if a == 0 else E[:, a - 1]
        for i in range(m):
            x[a, i] = (C[i, 0] - mean[0]) * col[0] + (C[i, 1] - mean[1]) * col[1] + (C[i, 2] - mean[2]) * col[2]
        xs = np.sort(x[a])
        cuts[a, 0], cuts[a, 1] = 0.0, (xs[0] + xs[-1]) / 2
        cuts[a, 2], cuts[a, 3] = _quantile(xs, CUT_QUANTILES[0]), _quantile(xs, CUT_QUANTILES[1])
    return x, cuts


@njit(cache=True)
def _halves_mask(x, off, left):
    """left[i]: triangle i goes to the left half (x - off < 0; the lower half by x when one side
    would be empty, reference._halves). Returns the left count."""
    m, n_left = len(x), 0
    for i in range(m):
        left[i] = x[i] - off < 0.0
        n_left += left[i]
    if n_left == 0 or n_left == m:
        order = np.argsort(x - off, kind="mergesort")
        left[:] = False
        for i in range(m // 2):
            left[order[i]] = True
        n_left = m // 2
    return n_left


@njit(cache=True)
def _split(tri, lo, hi, centroids, faces, vertices, turns, scratch, fits):
    """Reorder tri[lo:hi] into its two halves (the left one first, each in its order) by the cut whose
    halves' SSVs have the least surface area in all (reference._split); their fits into fits[0], fits[1].
    Returns where the right half starts."""
    mark, count, P, w, stamp, work = scratch
    m = hi - lo
    C = centroids[tri[lo:hi]]
    x, cuts = _cut_offsets(C, turns)
    seen = np.zeros((12, m), np.bool_)
    n_seen, best, best_left = 0, np.inf, np.zeros(m, np.bool_)
    left, part = np.empty(m, np.bool_), np.empty(m, np.int64)
    trial = np.empty((2, FIT))
    for a in range(3):
        for c in range(4):
            n_left = _halves_mask(x[a], cuts[a, c], left)
            repeat = False
            for s in range(n_seen):
                if np.array_equal(seen[s], left):
                    repeat = True  # cuts often agree (always at two or three triangles)
                    break
            if repeat:
                continue
            seen[n_seen] = left
            n_seen += 1
            _order(tri[lo:hi], left, n_left, part)
            for side in range(2):
                a0, a1 = (0, n_left) if side == 0 else (n_left, m)
                stamp[0] += 1
                n = _gather(faces, vertices, part, a0, a1, stamp[0], mark, count, P, w)
                _fit(P, w, n, turns, trial[side], work)
            if trial[0, 13] + trial[1, 13] < best:
                best = trial[0, 13] + trial[1, 13]
                best_left[:] = left
                fits[:] = trial
    n_left = 0
    for i in range(m):
        n_left += best_left[i]
    _order(tri[lo:hi], best_left, n_left, part)
    tri[lo:hi] = part
    return lo + n_left


@njit(cache=True)
def _order(idx, left, n_left, out):
    """idx's left entries, then the others, each in their order, into out."""
    i, j = 0, n_left
    for k in range(len(idx)):
        if left[k]:
            out[i] = idx[k]
            i += 1
        else:
            out[j] = idx[k]
            j += 1


@njit(cache=True)
def _box(P, n, u, v, slack, center, half):
    """The box holding P[:n] with axes u, v, u x v (reference.fit_box): centre and half-extents + slack."""
    E = np.empty((3, 3))
    E[:, 0], E[:, 1] = u, v
    E[0, 2], E[1, 2], E[2, 2] = u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for i in range(n):
        for k in range(3):
            x = P[i, 0] * E[0, k] + P[i, 1] * E[1, k] + P[i, 2] * E[2, k]
            lo[k], hi[k] = min(lo[k], x), max(hi[k], x)
    for k in range(3):
        center[k] = E[k, 0] * (lo[0] + hi[0]) / 2 + E[k, 1] * (lo[1] + hi[1]) / 2 + E[k, 2] * (lo[2] + hi[2]) / 2
        half[k] = (hi[k] - lo[k]) / 2 + slack


@njit(cache=True)
def build_nodes(vertices, faces, slack, turns, center, u, v, half, radius, kind, child, face, box_center, box_half,
                depth):
    """Fill the node arrays (tree._Nodes, n = 2 F - 1, root 0, depth (n,) int64 per node) of the
    mesh vertices (nv, 3) float64, faces (F, 3) int64; slack [m] grows radii and boxes. Nodes are
    numbered as reference.py numbers them (children after their parent)."""
    F, nv = faces.shape[0], vertices.shape[0]
    centroids = np.empty((F, 3))
    for t in range(F):
        for k in range(3):
            centroids[t, k] = (vertices[faces[t, 0], k] + vertices[faces[t, 1], k] + vertices[faces[t, 2], k]) / 3
    tri = np.arange(F)
    p = min(3 * F, nv)  # distinct points of a node at most
    work = _work(p)
    scratch = (np.full(nv, -1, np.int64), np.zeros(nv, np.int64), np.empty((p, 3)), np.empty(p),
               np.zeros(1, np.int64), work)
    mark, count, P, w, stamp, _ = scratch
    fits, fit = np.empty((2, FIT)), np.empty(FIT)
    n = _gather(faces, vertices, tri, 0, F, stamp[0], mark, count, P, w)
    _fit(P, w, n, turns, fit, work)
    _store(fit, 0, slack, center, u, v, half, radius, kind)
    stack = np.empty((2 * F, 3), np.int64)  # (first, end, node) of tri
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, F, 0
    top, used = 1, 1
    depth[0] = 0
    while top:
        top -= 1
        lo, hi, node = stack[top, 0], stack[top, 1], stack[top, 2]
        stamp[0] += 1
        n = _gather(faces, vertices, tri, lo, hi, stamp[0], mark, count, P, w)
        _box(P, n, u[node], v[node], slack, box_center[node], box_half[node])
        if hi - lo == 1:
            face[node] = tri[lo]
            continue
        cut = _split(tri, lo, hi, centroids, faces, vertices, turns, scratch, fits)
        for side in range(2):
            child[node, side] = used
            depth[used] = depth[node] + 1
            _store(fits[side], used, slack, center, u, v, half, radius, kind)
            stack[top, 0], stack[top, 1], stack[top, 2] = (lo, cut, used) if side == 0 else (cut, hi, used)
            top += 1
            used += 1


@njit(cache=True)
def _store(fit, node, slack, center, u, v, half, radius, kind):
    kind[node] = int(fit[0])
    center[node], u[node], v[node] = fit[1:4], fit[4:7], fit[7:10]
    half[node, 0], half[node, 1], radius[node] = fit[10], fit[11], fit[12] + slack
