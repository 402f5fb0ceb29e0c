"""Closest features of convex polytopes with coherence: Lin–Canny's Voronoi-region walk.

A feature is a vertex, an edge or a face of one body, coded as ``3 * index + kind`` (kind 0 vertex,
1 edge, 2 face; global indices of a `PolytopeSet`). For a pair of features the walk computes their
closest points p_a, p_b and checks Lin–Canny's criterion: p_b lies in the Voronoi region of the
feature of A and p_a in that of the feature of B. Then (p_a, p_b) is the closest pair of the two
convex bodies and the walk stops. Otherwise one feature steps to the neighbour across the Voronoi
plane p violates (vertex -> edge, edge -> end vertex or face, face -> the boundary feature holding
the closest point): a step lowers the distance, or keeps it and lowers the feature's dimension.

Interpenetration is found in two ways: the two features touch (distance within `tol`), or a point
of B lies in a face's prism below the face (a local minimum of the walk) and inside every face plane
of A. I-COLLIDE walks pseudo-Voronoi regions inside the bodies for the second case; testing the
point against all face planes (Mirtich's V-Clip rule) finds the same answer with no extra structure.
If the point is outside some plane, the walk jumps to the face it is furthest above.

A pair is walked in A's frame: A's features are read as stored, B's are moved by B's pose relative
to A (composed once per pair), and only the two closest points go back to the world.
Kernels allocate nothing (the caller keeps a `walk_scratch` array) and are compiled without numba's
reference counting (`_nrt=False`): with it, every array taken out of the 14-array feature tuple or
handed to another function was counted in the walk's loop, most of a walk's time. They use numba's "numpy"
error model (no ZeroDivisionError checks on every division: ~13% of a walk's time; every division
here has a non-zero denominator by construction). The Voronoi-region tests are called, not
inlined (fewer copies of their branches to compile).

Guard against cycling (degenerate configurations, round-off at region boundaries): every test
has a tolerance, and a walk longer than `max_iter` steps falls back to the brute-force search over
all face pairs (counted in the kernels' return value). A vertex's or an edge's Voronoi planes pass
through the feature, so how far the other's closest point lies past one of them shrinks with the gap:
their tolerance is relative to the gap (TOL_REL of it, at least PLANE_FLOOR * tol, above round-off).
With the absolute `tol` a nearly touching pair stopped at a vertex whose edge sloped gently down
towards the other body (slope under tol / gap), reporting them apart when they touched.
A face's side planes measure distances in its plane, and keep `tol`.

Coherence is state the caller owns: the feature pair found for a body pair, passed back next frame
(`feats` in `walk_pairs`; `Closest.features` for `closest_features`), e.g. in a dict keyed by
the body pair, and dropped when the pair leaves the broad phase.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..geometry.poses import relative_pose
from ..geometry.segments import closest_points_segments
from ..geometry.vectors import cross, dot, row
from .polytope import PolytopeSet

SEPARATED, PENETRATING, CAPPED = 0, 1, 2
NO_STEP, LOCAL_MIN, INSIDE = -1, -2, -3
TOL_REL = 1e-9     # tolerance of every test, relative to the sum of the two bodies' radii
PLANE_FLOOR = 1e-4  # least Voronoi-plane tolerance of a vertex or an edge, as a fraction of tol
MAX_ITER = 200     # walk steps before the brute-force fallback
_V, _E, _F = 0, 1, 2
# numba options of every kernel: "numpy" error model, no reference counting (module docstring)
_OPTS = dict(cache=True, error_model="numpy", _nrt=False)
# rows of a `walk_scratch` array after the two features' corners (2 * max face size rows)
_NORMALS, _PTS, _Q, _REL, _TMP, _SCRATCH_ROWS = 0, 2, 4, 5, 9, 11
# indices into the kernel tuple S = PolytopeSet.kernel_args()
_VERTS, _FSTART, _FVERTS, _FEDGES, _FNORMAL, _FOFFSET, _EDGES, _EFACES, _VSTART, _VNBRS, _VEDGES, \
    _VRANGE, _FRANGE, _MAXFACE = range(14)


@njit(inline="always", **_OPTS)
def _to_frame(R, t, V, v, out, row):
    """out[row] = R V[v] + t: vertex v of a body into the frame its pose (R, t) maps to."""
    for i in range(3):
        out[row, i] = R[i, 0] * V[v, 0] + R[i, 1] * V[v, 1] + R[i, 2] * V[v, 2] + t[i]


@njit(inline="always", **_OPTS)
def _to_body(R, t, p, q):
    """q (3,) = R^T (p - t): a point (3,) into the frame of a body at pose (R, t); returns q."""
    for i in range(3):
        q[i] = R[0, i] * (p[0] - t[0]) + R[1, i] * (p[1] - t[1]) + R[2, i] * (p[2] - t[2])
    return q


@njit(inline="always", **_OPTS)
def _where(i, s, k):
    """Sub-feature of a k-corner feature holding the point at parameter s of its side i:
    2 * j for corner j, 2 * i + 1 for the inside of side i."""
    if k == 1 or s <= 0.0:
        return 2 * i
    if s >= 1.0:
        return 2 * ((i + 1) % k)
    return 2 * i + 1


@njit(inline="always", **_OPTS)
def _inside_polygon(Q, m, n, x0, x1, x2):
    """Whether point x, on the plane of the convex polygon Q[:m] (normal n (3,)), lies inside it."""
    for j in range(m):
        j1 = (j + 1) % m
        e0, e1, e2 = Q[j1, 0] - Q[j, 0], Q[j1, 1] - Q[j, 1], Q[j1, 2] - Q[j, 2]
        u0, u1, u2 = e1 * n[2] - e2 * n[1], e2 * n[0] - e0 * n[2], e0 * n[1] - e1 * n[0]  # e x n: outward
        if (x0 - Q[j, 0]) * u0 + (x1 - Q[j, 1]) * u1 + (x2 - Q[j, 2]) * u2 > 1e-12 * (e0 * e0 + e1 * e1 + e2 * e2):
            return False
    return True


@njit(inline="always", **_OPTS)
def _row_dot(P, i, n):
    """P[i] . n for a row of a (., 3) array and a (3,) array."""
    return P[i, 0] * n[0] + P[i, 1] * n[1] + P[i, 2] * n[2]


@njit(**_OPTS)
def _project_into(P, k, Q, m, nQ, best, out, oP, oQ):
    """Corners of P[:k] projecting inside the face Q[:m], and sides of P crossing it.

    Improves on squared distance `best`: writes the points to rows out[oP] and out[oQ] and
    returns (best, where on P, where on Q = -1 the face's inside); where on P is -2 if no better."""
    wP = -2
    plane = _row_dot(Q, 0, nQ)
    for i in range(k):
        sd = _row_dot(P, i, nQ) - plane
        if sd * sd >= best:
            continue
        x0, x1, x2 = P[i, 0] - sd * nQ[0], P[i, 1] - sd * nQ[1], P[i, 2] - sd * nQ[2]
        if _inside_polygon(Q, m, nQ, x0, x1, x2):
            best, wP = sd * sd, 2 * i
            for c in range(3):
                out[oP, c] = P[i, c]
            out[oQ, 0], out[oQ, 1], out[oQ, 2] = x0, x1, x2
    for i in range(k if k >= 3 else k - 1):  # sides: none for a vertex, one for an edge
        i1 = (i + 1) % k
        d0, d1 = _row_dot(P, i, nQ) - plane, _row_dot(P, i1, nQ) - plane
        if d0 * d1 < 0.0:
            s = d0 / (d0 - d1)
            x0, x1, x2 = (P[i, 0] + s * (P[i1, 0] - P[i, 0]), P[i, 1] + s * (P[i1, 1] - P[i, 1]),
                          P[i, 2] + s * (P[i1, 2] - P[i, 2]))
            if _inside_polygon(Q, m, nQ, x0, x1, x2):
                out[oP, 0], out[oP, 1], out[oP, 2] = x0, x1, x2
                out[oQ, 0], out[oQ, 1], out[oQ, 2] = x0, x1, x2
                return 0.0, 2 * i + 1
    return best, wP


@njit(**_OPTS)
def _closest_polygons(P, k, nP, Q, m, nQ, out):
    """Closest points of two features given as convex point sets: a vertex (1 corner), an edge (2)
    or a face (>= 3 corners, counter-clockwise about its unit normal), all (3,) rows, same frame.

    Writes the point on P to out[0] and on Q to out[1] (out (2, 3)); returns (squared distance, where on P,
    where on Q) with `where` as in `_where`, -1 for a face's inside."""
    best, wP, wQ = np.inf, 0, 0
    for i in range(1 if k <= 2 else k):
        i1 = (i + 1) % k
        for j in range(1 if m <= 2 else m):
            j1 = (j + 1) % m
            # 3-tuples, not rows: no temporary arrays in the hot loop
            x, y, s, t = closest_points_segments(row(P, i), row(P, i1), row(Q, j), row(Q, j1))
            d2 = 0.0
            for c in range(3):  # x - q - t (q1 - q), not x - y: the rounding the walk's distances carry
                d2 += (x[c] - Q[j, c] - t * (Q[j1, c] - Q[j, c])) ** 2
            if d2 < best:
                best, wP, wQ = d2, _where(i, s, k), _where(j, t, m)
                for c in range(3):
                    out[0, c], out[1, c] = x[c], y[c]
    if m >= 3:
        best, w = _project_into(P, k, Q, m, nQ, best, out, 0, 1)
        if w != -2:
            wP, wQ = w, -1
    if k >= 3 and best > 0.0:
        best, w = _project_into(Q, m, P, k, nP, best, out, 1, 0)
        if w != -2:
            wP, wQ = -1, w
    return best, wP, wQ


@njit(inline="always", **_OPTS)
def _corner(R, t, V, v, out, row, moved):
    """out[row] = vertex v, moved by the pose (R, t) or copied (the walk's own frame)."""
    if moved:
        _to_frame(R, t, V, v, out, row)
    else:
        out[row, 0], out[row, 1], out[row, 2] = V[v, 0], V[v, 1], V[v, 2]


@njit(inline="always", **_OPTS)
def _feature_points(S, R, t, feat, out, normal, moved):
    """Corners of a feature into out[:k] (and a face's normal into normal (3,)) in the walk's frame:
    its body's frame, or moved by the pose (R, t) from it; returns k."""
    kind, idx = feat % 3, feat // 3
    V = S[_VERTS]
    if kind == _V:
        _corner(R, t, V, idx, out, 0, moved)
        return 1
    if kind == _E:
        _corner(R, t, V, S[_EDGES][idx, 0], out, 0, moved)
        _corner(R, t, V, S[_EDGES][idx, 1], out, 1, moved)
        return 2
    start, end = S[_FSTART][idx], S[_FSTART][idx + 1]
    for c in range(start, end):
        _corner(R, t, V, S[_FVERTS][c], out, c - start, moved)
    N = S[_FNORMAL]
    for i in range(3):
        normal[i] = R[i, 0] * N[idx, 0] + R[i, 1] * N[idx, 1] + R[i, 2] * N[idx, 2] if moved else N[idx, i]
    return end - start


@njit(inline="always", **_OPTS)
def _subfeature(S, feat, where):
    """The feature holding a point: `where` (see `_where`) on feature `feat`, -1 keeps feat."""
    kind, idx = feat % 3, feat // 3
    if where < 0 or kind == _V:
        return feat
    if kind == _E:
        return feat if where == 1 else 3 * S[_EDGES][idx, where // 2]
    c = S[_FSTART][idx] + where // 2
    return 3 * S[_FVERTS][c] if where % 2 == 0 else 3 * S[_FEDGES][c] + 1


@njit(**_OPTS)
def _step_vertex(S, v, q, tol):
    """Vertex v's Voronoi region: planes through v normal to its edges; q (3,) body frame.
    Returns the edge across the most violated plane, or NO_STEP."""
    V = S[_VERTS]
    best, new = tol, NO_STEP
    for s in range(S[_VSTART][v], S[_VSTART][v + 1]):
        w = S[_VNBRS][s]
        e0, e1, e2 = V[w, 0] - V[v, 0], V[w, 1] - V[v, 1], V[w, 2] - V[v, 2]
        viol = ((q[0] - V[v, 0]) * e0 + (q[1] - V[v, 1]) * e1 + (q[2] - V[v, 2]) * e2) / \
            np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        if viol > best:
            best, new = viol, 3 * S[_VEDGES][s] + 1
    return new


@njit(**_OPTS)
def _step_edge(S, e, q, where, tol):
    """Edge e's Voronoi region: the wedge between its faces' normals, between the planes normal to
    it through its ends. `where` locates the closest point on e (0 tail, 1 inside, 2 head)."""
    V, E, N = S[_VERTS], S[_EDGES], S[_FNORMAL]
    ta, he = E[e, 0], E[e, 1]
    d0, d1, d2 = V[he, 0] - V[ta, 0], V[he, 1] - V[ta, 1], V[he, 2] - V[ta, 2]
    length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    r0, r1, r2 = V[ta, 0] - q[0], V[ta, 1] - q[1], V[ta, 2] - q[2]
    along = -(r0 * d0 + r1 * d1 + r2 * d2)
    past_tail, past_head = -along / length, along / length - length
    if where == 0 and past_tail > tol:
        return 3 * E[e, 0]
    if where == 2 and past_head > tol:
        return 3 * E[e, 1]
    left, right = S[_EFACES][e, 0], S[_EFACES][e, 1]
    # (tail - q) . u over |u| for u_left = d x n_left (outward from the left face across e) and
    # u_right = n_right x d (the edge runs head -> tail in the right face)
    d, r = (d0, d1, d2), (r0, r1, r2)
    u_left, u_right = cross(d, row(N, left)), cross(d, row(N, right))
    over_left = dot(u_left, r) / np.sqrt(dot(u_left, u_left))
    over_right = -dot(u_right, r) / np.sqrt(dot(u_right, u_right))
    if max(over_left, over_right) > tol:
        return 3 * (left if over_left >= over_right else right) + 2
    if max(past_tail, past_head) > tol:
        return 3 * E[e, 0] if past_tail >= past_head else 3 * E[e, 1]
    return NO_STEP


@njit(**_OPTS)
def _step_face(S, f, q, where, tol):
    """Face f's Voronoi region: the prism over f bounded by planes normal to f through its edges,
    above f's plane. Outside the prism: step to the boundary feature holding the closest point
    (`where`) or else across the most violated side; below the plane: LOCAL_MIN."""
    V, N = S[_VERTS], S[_FNORMAL]
    n0, n1, n2 = N[f, 0], N[f, 1], N[f, 2]
    start, end = S[_FSTART][f], S[_FSTART][f + 1]
    best, worst = tol, -1
    for c in range(start, end):
        a, b = S[_FVERTS][c], S[_FVERTS][start + (c - start + 1) % (end - start)]
        e0, e1, e2 = V[b, 0] - V[a, 0], V[b, 1] - V[a, 1], V[b, 2] - V[a, 2]
        # (q - a) . u / |u| for u = (b - a) x n, the side's outward normal in the face's plane
        u = cross((e0, e1, e2), (n0, n1, n2))
        viol = dot(u, (q[0] - V[a, 0], q[1] - V[a, 1], q[2] - V[a, 2])) / np.sqrt(dot(u, u))
        if viol > best:
            best, worst = viol, c
    if worst >= 0:
        return _subfeature(S, 3 * f + 2, where) if where >= 0 else 3 * S[_FEDGES][worst] + 1
    if q[0] * n0 + q[1] * n1 + q[2] * n2 - S[_FOFFSET][f] < -tol:
        return LOCAL_MIN
    return NO_STEP


@njit(**_OPTS)
def _highest_face(S, body, q):
    """(face, signed distance) of the face plane of `body` that q (3,), body frame, is furthest above."""
    best, face = -np.inf, -1
    for f in range(S[_FRANGE][body], S[_FRANGE][body + 1]):
        sd = _row_dot(S[_FNORMAL], f, q) - S[_FOFFSET][f]
        if sd > best:
            best, face = sd, f
    return face, best


@njit(inline="always", **_OPTS)
def _feature_step(S, body, feat, q, where, tol, plane_tol):
    """Next feature of `body` given the other body's closest point q (3,), body frame:
    NO_STEP when q is in feat's Voronoi region, INSIDE when q is inside the body. plane_tol: the
    tolerance of a vertex's or an edge's planes (module docstring)."""
    kind, idx = feat % 3, feat // 3
    if kind == _V:
        return _step_vertex(S, idx, q, plane_tol)
    if kind == _E:
        return _step_edge(S, idx, q, where, plane_tol)
    new = _step_face(S, idx, q, where, tol)
    if new != LOCAL_MIN:
        return new
    face, height = _highest_face(S, body, q)
    return INSIDE if height <= tol else 3 * face + 2


@njit(inline="always", **_OPTS)
def _support_vertex(S, rot, pos, body, other):
    """The vertex of `body` furthest towards `other`'s centre: hill-climbed over the vertex
    adjacency from the body's first vertex (a linear function on a convex polytope has no other
    local maximum). A new pair's walk starts there: its closest features are usually near."""
    V, o = S[_VERTS], body
    g0, g1, g2 = pos[other, 0] - pos[o, 0], pos[other, 1] - pos[o, 1], pos[other, 2] - pos[o, 2]
    d0 = rot[o, 0, 0] * g0 + rot[o, 1, 0] * g1 + rot[o, 2, 0] * g2  # R^T g: the body's frame
    d1 = rot[o, 0, 1] * g0 + rot[o, 1, 1] * g1 + rot[o, 2, 1] * g2
    d2 = rot[o, 0, 2] * g0 + rot[o, 1, 2] * g1 + rot[o, 2, 2] * g2
    v = S[_VRANGE][o]
    best, moved = V[v, 0] * d0 + V[v, 1] * d1 + V[v, 2] * d2, True
    while moved:
        moved = False
        for s in range(S[_VSTART][v], S[_VSTART][v + 1]):
            w = S[_VNBRS][s]
            h = V[w, 0] * d0 + V[w, 1] * d1 + V[w, 2] * d2
            if h > best:
                best, v, moved = h, w, True
    return v


@njit(inline="always", **_OPTS)
def _walk(S, a, b, fa, fb, tol, max_iter, R, t, PA, PB, nrm, pts, q):
    """Lin–Canny walk from features (fa, fb) in A's frame, B at pose (R, t) in it; closest points
    left in pts[0] (on A) and pts[1] (on B), A's frame. Returns (status, distance, fa, fb, steps);
    status CAPPED after max_iter steps. nrm (2, 3), q (3,): scratch."""
    for it in range(max_iter):
        kA = _feature_points(S, R, t, fa, PA, nrm[0], False)
        kB = _feature_points(S, R, t, fb, PB, nrm[1], True)
        d2, wA, wB = _closest_polygons(PA, kA, nrm[0], PB, kB, nrm[1], pts)
        if d2 <= tol * tol:
            return PENETRATING, 0.0, fa, fb, it
        plane_tol = max(TOL_REL * np.sqrt(d2), PLANE_FLOOR * tol)
        new = _feature_step(S, a, fa, pts[1], wA, tol, plane_tol)
        if new == NO_STEP:
            new = _feature_step(S, b, fb, _to_body(R, t, pts[0], q), wB, tol, plane_tol)
            if new == NO_STEP:
                return SEPARATED, np.sqrt(d2), fa, fb, it
            if new == INSIDE:
                return PENETRATING, 0.0, fa, fb, it
            fb = new
        elif new == INSIDE:
            return PENETRATING, 0.0, fa, fb, it
        else:
            fa = new
    return CAPPED, np.nan, fa, fb, max_iter


@njit(**_OPTS)
def _first_vertex_inside(S, a, b, R, t, tol, tmp):
    """Whether B's first vertex lies inside A or A's inside B (within tol); B at pose (R, t) in
    A's frame. tmp: (2, 3) scratch."""
    V = S[_VERTS]
    _to_frame(R, t, V, S[_VRANGE][b], tmp, 0)
    _to_body(R, t, V[S[_VRANGE][a]], tmp[1])
    return _highest_face(S, a, tmp[0])[1] <= tol or _highest_face(S, b, tmp[1])[1] <= tol


@njit(**_OPTS)
def _brute(S, a, b, tol, R, t, PA, PB, nrm, pts, tmp):
    """Reference: minimum over all face pairs (covers every vertex-face and edge-edge pair), and
    containment of one body in the other; frames and results like `_walk`'s. Returns (status,
    distance, fa, fb)."""
    best, fa, fb = np.inf, -1, -1
    for f in range(S[_FRANGE][a], S[_FRANGE][a + 1]):
        kA = _feature_points(S, R, t, 3 * f + 2, PA, nrm[0], False)
        for g in range(S[_FRANGE][b], S[_FRANGE][b + 1]):
            kB = _feature_points(S, R, t, 3 * g + 2, PB, nrm[1], True)
            d2, wA, wB = _closest_polygons(PA, kA, nrm[0], PB, kB, nrm[1], tmp)
            if d2 < best:
                best = d2
                for c in range(6):  # pts[:] = tmp would allocate (numba copies a source that may overlap)
                    pts[c // 3, c % 3] = tmp[c // 3, c % 3]
                fa, fb = _subfeature(S, 3 * f + 2, wA), _subfeature(S, 3 * g + 2, wB)
    if best <= tol * tol or _first_vertex_inside(S, a, b, R, t, tol, tmp):
        return PENETRATING, 0.0, fa, fb
    return SEPARATED, np.sqrt(best), fa, fb


@njit(**_OPTS)
def walk_pairs(S, radius, rot, pos, pairs, feats, max_iter, brute, dist, status, points, scratch):
    """Closest features of many body pairs (the fast path, or `brute` force for reference).

    S : PolytopeSet.kernel_args(); radius : (B,) float64; rot : (B, 3, 3), pos : (B, 3) float64,
    body -> world; pairs : (P, 2) int32; feats : (P, 2) int64 feature codes, in: last frame's (-1:
    none, start from the vertices furthest towards each other), out: this frame's. Outputs: dist
    (P,) float64 (0 when penetrating), status (P,) int8 (SEPARATED / PENETRATING), points (P, 2, 3)
    float64 world closest points (undefined when penetrating). scratch: `walk_scratch(pset)`, any
    contents (every entry is written before it is read). Returns (walk steps, brute-force fallbacks)."""
    m = max(3, S[_MAXFACE])
    if scratch.shape[0] < 2 * m + _SCRATCH_ROWS:
        raise ValueError("walk_pairs: scratch too small for the polytopes' faces (use walk_scratch)")
    PA, PB, rows = scratch[:m], scratch[m:2 * m], scratch[2 * m:]
    nrm, pts, q = rows[_NORMALS:_NORMALS + 2], rows[_PTS:_PTS + 2], rows[_Q]
    R, t, tmp = rows[_REL:_REL + 3], rows[_REL + 3], rows[_TMP:_TMP + 2]
    steps = fallbacks = 0
    for p in range(len(pairs)):
        a, b = pairs[p, 0], pairs[p, 1]
        tol = TOL_REL * (radius[a] + radius[b])
        fa = feats[p, 0] if feats[p, 0] >= 0 else 3 * _support_vertex(S, rot, pos, a, b)
        fb = feats[p, 1] if feats[p, 1] >= 0 else 3 * _support_vertex(S, rot, pos, b, a)
        relative_pose(rot[a], pos[a], rot[b], pos[b], R, t)  # the walk runs in A's frame
        st = CAPPED
        if not brute:
            st, d, fa, fb, it = _walk(S, a, b, fa, fb, tol, max_iter, R, t, PA, PB, nrm, pts, q)
            steps += it
        if st == CAPPED:
            fallbacks += not brute
            st, d, fa, fb = _brute(S, a, b, tol, R, t, PA, PB, nrm, pts, tmp)
        feats[p, 0], feats[p, 1], dist[p], status[p] = fa, fb, d, st
        _to_frame(rot[a], pos[a], pts, 0, points[p], 0)  # A's frame -> world
        _to_frame(rot[a], pos[a], pts, 1, points[p], 1)
    return steps, fallbacks


def walk_scratch(pset: PolytopeSet) -> np.ndarray:
    """Scratch for `walk_pairs` over bodies of `pset`: (2 * max face size + 11, 3) float64, kept by
    the caller from call to call (the kernels allocate nothing)."""
    return np.empty((2 * max(3, pset.max_face_size) + _SCRATCH_ROWS, 3))


@dataclass(frozen=True)
class Closest:
    """One pair's answer: distance [body units] (0 when penetrating), the closest feature pair
    (codes, pass back as `start` next frame), world closest points (2, 3) (undefined when penetrating)."""

    distance: float
    penetrating: bool
    features: tuple[int, int]
    points: np.ndarray
    steps: int
    fell_back: bool


def closest_features(pset: PolytopeSet, rot, pos, a: int, b: int, start=None,
                     brute: bool = False, max_iter: int = MAX_ITER) -> Closest:
    """Closest features of bodies a and b of `pset` at poses rot (B, 3, 3), pos (B, 3) (body ->
    world), walking from `start` (last frame's `Closest.features`; None: cold start)."""
    feats = np.array([start if start is not None else (-1, -1)], np.int64)
    dist, status, points = np.empty(1), np.empty(1, np.int8), np.empty((1, 2, 3))
    steps, fallbacks = walk_pairs(pset.kernel_args(), pset.radius, np.ascontiguousarray(rot, float),
                                  np.ascontiguousarray(pos, float), np.array([[a, b]], np.int32), feats,
                                  max_iter, brute, dist, status, points, walk_scratch(pset))
    return Closest(float(dist[0]), bool(status[0] == PENETRATING), (int(feats[0, 0]), int(feats[0, 1])),
                   points[0], int(steps), bool(fallbacks))


def feature_name(code: int) -> str:
    """'vertex 3', 'edge 7', 'face 2' (global indices)."""
    return f"{('vertex', 'edge', 'face')[code % 3]} {code // 3}"
