"""The SSV tree builder in numpy: the definition of the method `ssv/build.py` compiles (see tree.py
for the method), kept to test the compiled builder against; ~100x slower."""
from __future__ import annotations

import time

import numpy as np

from .core import LSS, PSS, RSS
from .tree import CUT_QUANTILES, RECT_TURNS, SLACK, SSVTree, _volumes

_TURN = np.arange(RECT_TURNS) * (np.pi / 2 / RECT_TURNS)
_TURNED = np.concatenate([np.stack([np.cos(_TURN), np.sin(_TURN)]), np.stack([-np.sin(_TURN), np.cos(_TURN)])], 1)


def _pull_in(x, slack):
    """Interval [lo, hi] such that every x_i lies within slack_i of it (smallest such)."""
    lo, hi = np.min(x + slack), np.max(x - slack)
    if lo > hi:  # any point between them will do: take the middle
        lo = hi = (lo + hi) / 2
    return lo, hi


def _turned_axes(X2):
    """(cos, sin) of the turn, among RECT_TURNS (none among them), that leaves the bounding
    rectangle of the plane points X2 (p, 2) the least area. The principal axes follow the points'
    spread, not their outline: on a ring or a bent strip the rectangle along them is loose. Turned,
    a distance query visits 7-19% fewer node pairs on the bench models' deep poses (fcl fits its
    RSS along the principal axes)."""
    Y = X2 @ _TURNED
    ext = Y.max(0) - Y.min(0)
    k = int(np.argmin(ext[:RECT_TURNS] * ext[RECT_TURNS:]))
    return np.cos(_TURN[k]), np.sin(_TURN[k])


def fit_ssv(points):
    """The smallest of the PSS, LSS and RSS fitted to points (p, 3) along their principal axes, the
    two longest turned about the shortest to the least bounding rectangle (`_turned_axes`):
    (kind, centre (3,), u (3,), v (3,), a, b, r)."""
    mean = points.mean(0)
    D = points - mean
    _, E = np.linalg.eigh(D.T @ D)  # the covariance's axes (np.cov: the same, 2x the build time)
    E = E[:, ::-1].copy()  # columns: longest axis first
    c, s = _turned_axes(D @ E[:, :2])
    E[:, 0], E[:, 1] = c * E[:, 0] + s * E[:, 1], c * E[:, 1] - s * E[:, 0]
    X = D @ E
    lo, hi = X.min(0), X.max(0)
    mid = (lo + hi) / 2
    fits = []
    # PSS
    fits.append((PSS, mid, 0.0, 0.0, np.sqrt(np.max(((X - mid) ** 2).sum(1)))))
    # LSS: the perpendicular bounding box's centre, caps pulled in along the axis
    rho2 = ((X[:, 1:] - mid[1:]) ** 2).sum(1)
    r = np.sqrt(rho2.max())
    x0, x1 = _pull_in(X[:, 0], np.sqrt(np.maximum(r * r - rho2, 0.0)))
    fits.append((LSS, np.array([(x0 + x1) / 2, mid[1], mid[2]]), (x1 - x0) / 2, 0.0, r))
    # RSS: half the thickness along the shortest axis; the long sides pulled in with each point's
    # whole leftover budget, then the short ones with what the first pull left it
    r = (hi[2] - lo[2]) / 2
    budget = np.maximum(r * r - (X[:, 2] - mid[2]) ** 2, 0.0)
    x0, x1 = _pull_in(X[:, 0], np.sqrt(budget))
    dx = np.maximum(np.maximum(x0 - X[:, 0], X[:, 0] - x1), 0.0)
    y0, y1 = _pull_in(X[:, 1], np.sqrt(np.maximum(budget - dx * dx, 0.0)))
    fits.append((RSS, np.array([(x0 + x1) / 2, (y0 + y1) / 2, mid[2]]), (x1 - x0) / 2, (y1 - y0) / 2, r))
    kind, c, a, b, r = min(fits, key=lambda f: _volumes(f[2], f[3], f[4]))
    u, v = E[:, 0], E[:, 1]
    if b > a:
        a, b, u, v = b, a, v, u
    kind = RSS if b > 0 else (LSS if a > 0 else PSS)  # the kind the extents really have
    return kind, mean + E @ c, u, v, a, b, r


def fit_box(points, u, v, slack=0.0):
    """The box holding points (p, 3) with axes u, v, u x v: (centre (3,), half-extents (3,)), the
    half-extents grown by slack."""
    E = np.stack([u, v, np.cross(u, v)], 1)
    X = points @ E
    lo, hi = X.min(0), X.max(0)
    return E @ ((lo + hi) / 2), (hi - lo) / 2 + slack


def _cuts(c):
    """Candidate cuts of centroids c (m, 3), each a signed offset (m,) (< 0: the left half): along
    the centroids' principal axis and the two sides of their least rectangle (`_turned_axes`),
    through their mean, the middle of their extent, and their 30% and 70% quantiles."""
    D = c - c.mean(0)
    _, E = np.linalg.eigh(D.T @ D)
    E = E[:, ::-1]
    cos, sin = _turned_axes(D @ E[:, :2])
    for axis in (E[:, 0], cos * E[:, 0] + sin * E[:, 1], cos * E[:, 1] - sin * E[:, 0]):
        x = D @ axis
        yield x
        yield x - (x.max() + x.min()) / 2
        for q in np.quantile(x, CUT_QUANTILES):
            yield x - q


def _area(a, b, r):
    """Surface area of the RSS (LSS, PSS) with these half-extents and radius [m^2]."""
    return 8 * a * b + 4 * np.pi * r * (a + b + r)


def _halves(tris_idx, x):
    """tris_idx split by the sign of x (at the median when one side would be empty)."""
    left = x < 0.0
    if left.all() or not left.any():
        order = np.argsort(x, kind="stable")
        left = np.zeros(len(x), bool)
        left[order[: len(x) // 2]] = True
    return tris_idx[left], tris_idx[~left]


def _split(tris_idx, tris, centroids):
    """Two non-empty halves of tris_idx, each with its fit_ssv: of the cuts `_cuts` offers, the one
    whose halves' SSVs have the least surface area in all. Against the one cut at the mean along
    the centroids' principal axis (builder version 4; fcl cuts so), a distance query visits 27-51%
    fewer node pairs on the bench models' deep poses (a cross, a ring, a lamp's arms: the principal
    axis runs between the parts); the build takes ~4x as long (the freighter 17 s, cached). By
    volume the twelve cuts did worse than six on the capsules (+46%); by area 0-24% better."""
    best, seen = (np.inf,), set()
    for x in _cuts(centroids[tris_idx]):
        halves = _halves(tris_idx, x)
        if halves[0].tobytes() in seen:  # cuts often agree (always at two or three triangles)
            continue
        seen.add(halves[0].tobytes())
        fits = [fit_ssv(tris[h].reshape(-1, 3)) for h in halves]
        area = sum(_area(*f[4:]) for f in fits)
        if area < best[0]:
            best = (area, zip(halves, fits))
    return best[1]


def build_ssv_reference(vertices, faces, key: str = "") -> SSVTree:
    """SSV tree of a triangle mesh (numpy): vertices (nv, 3) float64 body frame [m], faces (F, 3) int."""
    t0 = time.perf_counter()
    tris = np.asarray(vertices, np.float64)[np.asarray(faces, np.int64)]
    n_faces = len(tris)
    if n_faces == 0:
        raise ValueError("build_ssv needs at least one triangle")
    centroids = tris.mean(1)
    slack = SLACK * float(np.linalg.norm(tris.reshape(-1, 3).max(0) - tris.reshape(-1, 3).min(0)))
    n = 2 * n_faces - 1
    center, u, v = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    half, radius = np.zeros((n, 2)), np.zeros(n)
    box_center, box_half = np.zeros((n, 3)), np.zeros((n, 3))
    kind, child, face = np.zeros(n, np.int64), np.full((n, 2), -1, np.int64), np.full(n, -1, np.int64)
    depth = np.zeros(n, np.int64)
    todo, used = [(np.arange(n_faces), 0, fit_ssv(tris.reshape(-1, 3)))], 1
    while todo:
        idx, node, fit = todo.pop()
        points = tris[idx].reshape(-1, 3)
        kind[node], center[node], u[node], v[node], a, b, r = fit
        half[node], radius[node] = (a, b), r + slack
        box_center[node], box_half[node] = fit_box(points, u[node], v[node], slack)
        if len(idx) == 1:
            face[node] = idx[0]
            continue
        for side, (part, part_fit) in enumerate(_split(idx, tris, centroids)):
            child[node, side] = used
            depth[used] = depth[node] + 1
            todo.append((part, used, part_fit))
            used += 1
    return SSVTree(center=center, u=u, v=v, half=half, radius=radius, kind=kind, child=child, face=face,
                   tris=tris, box_center=box_center, box_half=box_half, depth=int(depth.max()), key=key, build_seconds=time.perf_counter() - t0)
