"""Proximity queries on SSV trees (numba), batched over a frame's ship pairs, parallel over pairs.

Every kernel takes the SSVBank arrays, the relative pose of each pair (x_A = R[i] x_B + t[i], as in
narrowphase.kernels) and the two root nodes, and works in ship A's body frame. Pairs are split into
chunks handed to numba's prange; a pair's answer depends on nothing but its own row, so any number
of threads gives the same result (numba.set_num_threads(1) is the serial run).

The kernels take their arrays in groups, plain tuples unpacked into named locals once at each
kernel's top (tree.SSVArrays's fields: the bank's; the pairs' poses and roots; a distance query's
asks, its fronts, a row's pending pairs, work arrays and answers). Plain tuples, not named ones:
numba types a named tuple's fields in Python on every call (~2 us a call more, which a one-pair
query each frame would pay), a plain tuple's in C.

- collide_pairs: depth-first over node pairs whose boxes overlap (each SSV node also stores the
  oriented box of its triangles, as fcl's OBBRSS pairs an OBB with its RSS: a 15-axis test is
  cheaper than the SSV distance and, on these trees, prunes about as well), deeper overlap first,
  exact triangle–triangle tests at leaf pairs; first contact (cap 1) or all contacts.
- distance_pairs: the paper's distance query: node pairs pruned when their SSV distance, a lower
  bound on any two triangles below them, cannot improve the best triangle distance found so far by
  more than the tolerance (prune when lb >= best / (1 + rel) or lb >= best - abs, so the answer d
  obeys d <= max((1 + rel) d*, d* + abs)); depth-first with the nearer child pair first, or
  priority-directed (a binary heap on the lower bound: stop when the closest pending pair cannot
  help); triangle caching: a seed triangle pair per row (last frame's closest) sets the first best;
  front tracking: the node pairs a row's search left undescended (its front, with their lower
  bounds) can start next frame's search instead of the roots, each bound lowered by how far the
  pose moved (see `_distance_row`); `stop_at` ends a row once a pair that close is found (the
  tolerance query "closer than d?").
"""
from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from ..geometry.triangles import (distance_triangle_triangle, distance_triangle_triangle_disjoint, intersect_triangle_triangle,
                                  triangle_plane_gap)
from ..geometry.vectors import cross, dot
from ..sorting import heap_pop, heap_push
from .core import box_gap, core_frame, framed_rect_distance, normal_gaps

CHUNKS_PER_THREAD = 4
PRUNE_ROUNDING = 1e-12  # relative: far above a few ulps, far below any tolerance asked for
MIN_GAP = 5e-324  # the least positive float: a lower bound on the distance of triangles found disjoint
FRONT_GROWTH = 1.5  # a front this many times its fresh size is dropped (capsules, lamp, freighter trajectories)
# The traversal's helpers take the node arrays: called, each array argument costs reference counting
# (atomic) on every call, which numba cannot prune across calls. Inlined into the row functions
# (numba IR inlining), the distance query took 0.75-0.85x the time (same-process A/B, lamp).
INLINE = "always"


@njit(cache=True, inline=INLINE)
def _rot(R, i, X, j):
    return (R[i, 0, 0] * X[j, 0] + R[i, 0, 1] * X[j, 1] + R[i, 0, 2] * X[j, 2],
            R[i, 1, 0] * X[j, 0] + R[i, 1, 1] * X[j, 1] + R[i, 1, 2] * X[j, 2],
            R[i, 2, 0] * X[j, 0] + R[i, 2, 1] * X[j, 1] + R[i, 2, 2] * X[j, 2])


@njit(cache=True, inline=INLINE)
def _moved_frame(c, u, v, R, t, i, y):
    """Node y's centre (box_center, or the core's: center) and axes u, v moved by pose i into A's frame."""
    c = _rot(R, i, c, y)
    return (c[0] + t[i, 0], c[1] + t[i, 1], c[2] + t[i, 2]), _rot(R, i, u, y), _rot(R, i, v, y)


@njit(cache=True, inline=INLINE)
def _node_gap(center, u, v, half, radius, R, t, i, x, y, enough):
    """Distance between the SSVs of node x (A's frame) and node y (B's, moved by pose i), negative
    when they overlap — or, where a cheap lower bound on it is above `enough`, that bound (the
    caller prunes there). `_moved_gap` with y moved here."""
    cy, uy, vy = _moved_frame(center, u, v, R, t, i, y)
    return _moved_gap(center, u, v, half, radius, x, cy, uy, vy, y, enough)


@njit(cache=True, inline=INLINE)
def _moved_gap(center, u, v, half, radius, x, cy, uy, vy, y, enough):
    """`_node_gap` where node y's core centre and axes cy, uy, vy are already in A's frame
    (`_moved_frame`: a split of x tests both its children against the same y). Cheap first: the
    projections on the centre line, then on the cores' normals (a flat core has no extent along
    its own), then the exact core distance."""
    cx = (center[x, 0], center[x, 1], center[x, 2])
    ux, vx = (u[x, 0], u[x, 1], u[x, 2]), (v[x, 0], v[x, 1], v[x, 2])
    T, U, V, tu, tv = core_frame(cx, ux, vx, cy, uy, vy)  # y's core in x's frame, once for all three
    ax, bx, ay, by = half[x, 0], half[x, 1], half[y, 0], half[y, 1]
    rr = radius[x] + radius[y]
    dd = np.sqrt(dot(T, T))
    if dd > 0.0:
        quick = dd - (ax * abs(T[0]) + bx * abs(T[1]) + ay * abs(tu) + by * abs(tv)) / dd - rr
        if quick > enough:
            return quick
    flat = normal_gaps(T, U, V, ax, bx, ay, by) - rr
    if flat > enough:  # the cores are flat: their normals often separate near-touching surfaces
        return flat
    return framed_rect_distance(T, U, V, tu, tv, ax, bx, ay, by) - rr


@njit(cache=True, inline=INLINE)
def _box_gap(box_center, box_half, u, v, x, cy, uy, vy, y):
    """`box_gap` of node x's box (A's frame) and node y's, whose centre and axes cy, uy, vy are
    already in A's frame (`_moved_frame`): > 0 only when the boxes are apart (collide prunes
    there), else <= 0, the deepest face-axis overlap (orders the children). In x's box frame."""
    ux, vx = (u[x, 0], u[x, 1], u[x, 2]), (v[x, 0], v[x, 1], v[x, 2])
    nx = cross(ux, vx)
    d = (cy[0] - box_center[x, 0], cy[1] - box_center[x, 1], cy[2] - box_center[x, 2])
    U = (dot(uy, ux), dot(uy, vx), dot(uy, nx))
    V = (dot(vy, ux), dot(vy, vx), dot(vy, nx))
    return box_gap((dot(d, ux), dot(d, vx), dot(d, nx)), U, V, cross(U, V),
                   (box_half[x, 0], box_half[x, 1], box_half[x, 2]), (box_half[y, 0], box_half[y, 1], box_half[y, 2]))


@njit(cache=True, inline=INLINE)
def _descend_a(half, radius, child, x, y):
    """Split node x (else y): x when y is a leaf, or x is not and is the bigger one by the volume of
    the box about its SSV, (a + r)(b + r) r (against a + b + r: 1-12% fewer node pairs to a distance
    query on the five bench models' deep poses)."""
    if child[y, 0] < 0:
        return True
    if child[x, 0] < 0:
        return False
    return (half[x, 0] + radius[x]) * (half[x, 1] + radius[x]) * radius[x] \
        >= (half[y, 0] + radius[y]) * (half[y, 1] + radius[y]) * radius[y]


@njit(cache=True, inline=INLINE)
def _triangle_b(tris, R, t, i, f, out):
    """Triangle f of B moved into A's frame by pose i, into out (3, 3)."""
    for j in range(3):
        for k in range(3):
            out[j, k] = R[i, k, 0] * tris[f, j, 0] + R[i, k, 1] * tris[f, j, 1] + R[i, k, 2] * tris[f, j, 2] + t[i, k]


def chunks(k: int) -> np.ndarray:
    """Chunk bounds (n + 1,) int64 over k rows for prange: a few per thread, as rows differ in cost
    (numba's thread count is read here: a kernel reading it could not be cached)."""
    n = max(1, min(k, get_num_threads() * CHUNKS_PER_THREAD))
    return np.arange(n + 1, dtype=np.int64) * k // n


@njit(cache=True, parallel=True)
def collide_pairs(tree, pairs, bounds, depth, cap):
    """Intersecting triangle pairs of k ship pairs.

    tree   : SSVBank.arrays (tree.SSVArrays's fields), the bank's node and triangle arrays (global ids)
    pairs  : (R, t, root_a, root_b), the k pairs' relative poses and (k,) int64 root nodes
    bounds : chunks(k); depth: int, the deepest tree's depth (sizes the stack)
    cap    : int >= 1, triangle pairs stored per row (1: stop at the first contact)
    Returns count (k,) int64 — all contacts found, which may exceed cap: the caller reruns those
    rows with a larger cap when it wants them all — and hits (k, cap, 2) int64 global face ids
    (face of A, face of B), the first min(count, cap) valid.
    Node pairs are tested on the nodes' boxes (`_box_gap`: fcl's OBB test; the SSVs' exact distance
    costs more than the pairs it would prune save), the split node's child pairs with the deeper
    overlap first; the other node's frame is moved into A's once per split.
    """
    k = len(pairs[2])
    count = np.zeros(k, np.int64)
    hits = np.full((k, cap, 2), -1, np.int64)
    for c in prange(len(bounds) - 1):
        _collide_chunk(tree, pairs, bounds[c], bounds[c + 1], depth, count, hits)
    return count, hits


@njit(cache=True)
def _collide_chunk(tree, pairs, lo, hi, depth, count, hits):
    """collide_pairs for rows lo..hi-1: count[i], and hits[i] its first len(hits[i]) contacts (a
    row stops at the first when hits[i] holds one). A function of its own, not the prange loop's
    body: the helpers inlined into it (see `_moved_gap`) would trip numba's parfor analysis there."""
    _, u, v, half, radius, _, child, face, tris, box_center, box_half, _ = tree
    R, t, root_a, root_b = pairs
    sx, sy, Vb = np.empty(2 * depth + 4, np.int64), np.empty(2 * depth + 4, np.int64), np.empty((3, 3))
    cap = hits.shape[1]
    for i in range(lo, hi):
        n, top, ra, rb = 0, 0, root_a[i], root_b[i]
        cy, uy, vy = _moved_frame(box_center, u, v, R, t, i, rb)
        if _box_gap(box_center, box_half, u, v, ra, cy, uy, vy, rb) <= 0.0:
            sx[0], sy[0], top = ra, rb, 1
        while top > 0:
            top -= 1
            x, y = sx[top], sy[top]
            if child[x, 0] < 0 and child[y, 0] < 0:
                _triangle_b(tris, R, t, i, face[y], Vb)
                if intersect_triangle_triangle(tris[face[x]], Vb):
                    if n < cap:
                        hits[i, n, 0], hits[i, n, 1] = face[x], face[y]
                    n += 1
                    if cap == 1:
                        break
                continue
            split_a = _descend_a(half, radius, child, x, y)
            if split_a:
                c0, c1 = child[x, 0], child[x, 1]
                cy, uy, vy = _moved_frame(box_center, u, v, R, t, i, y)
                g0 = _box_gap(box_center, box_half, u, v, c0, cy, uy, vy, y)
                g1 = _box_gap(box_center, box_half, u, v, c1, cy, uy, vy, y)
            else:
                c0, c1 = child[y, 0], child[y, 1]
                cy, uy, vy = _moved_frame(box_center, u, v, R, t, i, c0)
                g0 = _box_gap(box_center, box_half, u, v, x, cy, uy, vy, c0)
                cy, uy, vy = _moved_frame(box_center, u, v, R, t, i, c1)
                g1 = _box_gap(box_center, box_half, u, v, x, cy, uy, vy, c1)
            if g0 < g1:  # the deeper overlap on top
                c0, c1, g0, g1 = c1, c0, g1, g0
            for cc, g in ((c0, g0), (c1, g1)):
                if g <= 0.0:
                    sx[top], sy[top] = (cc, y) if split_a else (x, cc)
                    top += 1
        count[i] = n


@njit(cache=True, inline=INLINE)
def _prune_at(best, rel, abs_tol):
    """Node pairs with a lower bound at least this cannot improve `best` beyond the tolerance. The
    bounds are rounded (a triangle pair's plane gap can come out an ulp above its computed distance
    where a vertex over a face is the closest pair): a pair within PRUNE_ROUNDING of the limit is
    looked at, so the search finds the distance as the triangle distance computes it, and a
    tolerance query at exactly that distance says so."""
    return min(best / (1.0 + rel), best - abs_tol) * (1.0 + PRUNE_ROUNDING)


@njit(cache=True)
def _pending(cap):
    """Room for cap pending node pairs: (key, x, y) of the heap and of the stack."""
    return (np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64),
            np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64))


@njit(cache=True, parallel=True)
def distance_pairs(tree, pairs, bounds, room, ask, fronts):
    """Closest triangle pair of k ship pairs, within a tolerance.

    tree   : SSVBank.arrays (tree.SSVArrays's fields), the bank's node and triangle arrays (global
             ids) and each node's extent [m], how far its SSV reaches from its core's centre
    pairs  : (R, t, root_a, root_b), the k pairs' relative poses and (k,) int64 root nodes; bounds: chunks(k)
    room   : int >= 1, pending node pairs a row has room for at first (doubled while short; the
             answers do not depend on it)
    ask    : (seed_a, seed_b, bound, stop_at, rel, abs_tol, priority):
      seed_a, seed_b : (k,) int64 global faces of a triangle pair to start from (-1: none)
      bound          : (k,) float64 [m], only pairs closer than this are looked for (inf: all)
      stop_at        : (k,) float64 [m] >= 0, a row stops at its first triangle pair this close (0:
                       when the ships are found intersecting, nothing can be closer)
      rel, abs_tol   : relative [-] and absolute [m] tolerance (0, 0: exact)
      priority       : bool, priority-directed search (else depth-first, nearer pair first)
    fronts : (fx, fy, fl, fn, fresh, pivot, R0, t0):
      fx, fy, fl, fn : the search fronts, read and rewritten in place: row i's fn[i] node pairs
                       (fx[i, j], fy[i, j]), each with a lower bound fl[i, j] on its triangles' distance
                       at last frame's pose, cover every triangle pair (fn[i] <= 0: no front, the search
                       starts at the roots). Out: this search's front, fn[i] = -1 where it did not fit in
                       fx.shape[1] (shape (k, 0): fronts are not kept)
      fresh          : (k,) int64, the size of the last front a search from the roots left, read and
                       rewritten: a front grown past FRONT_GROWTH times it is dropped, the row searched
                       from the roots (a front only refines: as the closest points wander, the pairs it
                       descended on the way stay fine-grained; on the capsules it grew 8x in 600 frames)
      pivot          : (k,) int64 global face of B whose centroid is the pivot of row i's motion since
                       its front's pose (`_motion`; last frame's closest; -1: B's origin)
      R0, t0         : (k, 3, 3), (k, 3), the pose each front's bounds hold at, set to (R[i], t[i]) by
                       the rows that rework their front (R, t themselves when fronts are not kept); a row
                       whose seed answers at once (touching) leaves its front and pose as they were
    Returns dist (k,) float64 [m] (0 when the ships intersect; `bound` when nothing closer was
    found), tri (k, 2) int64 global faces (-1 when nothing closer than `bound`), points (k, 2, 3)
    float64 closest points in A's frame (nan when intersecting or none found).
    """
    R, t, root_a, root_b = pairs
    fn, fresh = fronts[3], fronts[4]
    k = len(root_a)
    answer = (np.empty(k), np.full((k, 2), -1, np.int64), np.full((k, 2, 3), np.nan))  # dist, tri, points
    dist, tri, points = answer
    for c in prange(len(bounds) - 1):
        work = (np.empty((3, 3)), np.empty((2, 3)))  # B's triangle in A's frame, a distance's closest points
        cap = room + fronts[0].shape[1]  # room for a whole front besides
        pending = _pending(cap)
        for i in range(bounds[c], bounds[c + 1]):
            m = fn[i] if fn[i] <= FRONT_GROWTH * fresh[i] else 0
            while True:
                fn[i] = 0
                dist[i] = _distance_row(tree, pairs, ask, fronts, pending, work, answer, i, m)
                if dist[i] >= 0.0:
                    break
                # the pending pairs overflowed: the row again from the roots (the front was spent) with twice the room
                tri[i, 0], tri[i, 1] = -1, -1
                points[i] = np.nan
                cap, m = cap * 2, 0
                pending = _pending(cap)
            if m <= 0:
                fresh[i] = fn[i]
    return dist, tri, points


@njit(cache=True, inline=INLINE)
def _put_points(points, i, out):
    """points[i] = out ((2, 3)), element by element: an array assigned into an array compiles numba's
    shape-mismatch message (string formatting), seconds on a first start."""
    for p in range(2):
        for r in range(3):
            points[i, p, r] = out[p, r]


@njit(cache=True, inline=INLINE)
def _keep(fx, fy, fl, fn, i, x, y, lb):
    """Put node pair (x, y), lower bound lb, on row i's front (fn[i] = -1 once it is full: none kept)."""
    n = fn[i]
    if n >= 0:
        if n < fx.shape[1]:
            fx[i, n], fy[i, n], fl[i, n] = x, y, lb
            fn[i] = n + 1
        else:
            fn[i] = -1


@njit(cache=True, inline=INLINE)
def _motion(R0, t0, R, t, tris, i, f):
    """How far row i's pose (R[i], t[i]) moved from (R0[i], t0[i]), about a pivot o in B's body frame,
    the centroid of B's face f (last frame's closest; B's origin where f < 0): a point p of B moved
    by (R - R0)(p - o) + (R - R0) o + t - t0, at most a |p - o| + m. Returns (a, m, ox, oy, oz):
    a = |R - R0|_F / sqrt(2) bounds the spectral norm (exactly it for two rotations, whose difference
    has two equal singular values and a zero), m = |(R - R0) o + t - t0|. Rounding: the matrices are
    orthonormal to ~1e-16; the 1e-15 terms cover it."""
    o = (0.0, 0.0, 0.0)
    if f >= 0:
        o = ((tris[f, 0, 0] + tris[f, 1, 0] + tris[f, 2, 0]) / 3.0, (tris[f, 0, 1] + tris[f, 1, 1] + tris[f, 2, 1]) / 3.0,
             (tris[f, 0, 2] + tris[f, 1, 2] + tris[f, 2, 2]) / 3.0)
    a, m, size = 0.0, 0.0, abs(o[0]) + abs(o[1]) + abs(o[2])
    for r in range(3):
        w = t[i, r] - t0[i, r]
        size += abs(t[i, r]) + abs(t0[i, r])
        for c in range(3):
            a += (R[i, r, c] - R0[i, r, c]) ** 2
            w += (R[i, r, c] - R0[i, r, c]) * o[c]
        m += w * w
    return np.sqrt(a / 2.0) + 1e-15, np.sqrt(m) + 1e-15 * size, o[0], o[1], o[2]


SEED_ANSWERS = -2  # _row_start: the seed triangle pair answers the row (touching)
OVERFLOW = -1      # the pending pairs outgrew their arrays


@njit(cache=True)
def _distance_row(tree, pairs, ask, fronts, pending, work, answer, i, m):
    """distance_pairs for row i, m pairs on its front (coherence, `_front_pending`): writes its
    answer (tri[i], points[i]) and new front, returns the distance, or -1 when the pending pairs
    outgrow their arrays (the caller reruns the row with more room; arrays grown in the search would
    cost reference counting on every use, ~20% of the time)."""
    best, ns, nh = _row_start(tree, pairs, ask, fronts, pending, work, answer, i, m)
    if ns == SEED_ANSWERS:  # touching: the front stays as it was, at its pose
        fronts[3][i] = m
        return best
    if ns == OVERFLOW:
        return -1.0
    return _search(tree, pairs, ask, fronts, pending, work, answer, i, ns, nh, best)


@njit(cache=True)
def _row_start(tree, pairs, ask, fronts, pending, work, answer, i, m):
    """Row i's first best distance (its seed's, `_seeded`) and first pending pairs: its m front pairs
    below the prune limit, or its root pair. Returns (best, ns, nh): the pairs on the stack and heap,
    ns = SEED_ANSWERS where the seed answers the row, OVERFLOW where the pending pairs do not fit.
    Sets the pose the new front's bounds hold at (element by element: _put_points says why)."""
    center, u, v, half, radius, _, _, _, tris, _, _, _ = tree
    R, t, root_a, root_b = pairs
    seed_a, seed_b, bound, stop_at, rel, abs_tol, priority = ask
    R0, t0 = fronts[6], fronts[7]
    best = _seeded(tris, R, t, i, seed_a[i], seed_b[i], bound[i], work, answer)
    if m > 0 and best <= stop_at[i]:
        return best, SEED_ANSWERS, 0
    limit = _prune_at(best, rel, abs_tol)
    ns, nh = 1, 0
    if m > 0:
        ns, nh = _front_pending(tree, pairs, fronts, pending, i, m, limit, priority)
    else:
        sk, sx, sy = pending[3], pending[4], pending[5]
        sk[0] = _node_gap(center, u, v, half, radius, R, t, i, root_a[i], root_b[i], limit)
        sx[0], sy[0] = root_a[i], root_b[i]
    for r in range(3):
        t0[i, r] = t[i, r]
        for c in range(3):
            R0[i, r, c] = R[i, r, c]
    return best, ns, nh


@njit(cache=True)
def _seeded(tris, R, t, i, sa, sb, bound, work, answer):
    """Row i's best distance to start from: `bound`, or its seed triangle pair's (sa, sb) distance
    where that is nearer (then tri[i] and points[i] say so)."""
    Vb, out = work
    best = bound
    if sa >= 0:
        _triangle_b(tris, R, t, i, sb, Vb)
        d = distance_triangle_triangle(tris[sa], Vb, out)
        if d < best:
            best, answer[1][i, 0], answer[1][i, 1] = d, sa, sb
            _put_points(answer[2], i, out)
    return best


@njit(cache=True)
def _front_pending(tree, pairs, fronts, pending, i, m, limit, priority):
    """Row i's m front pairs (coherence), read and rewritten in place: those still above the prune
    `limit` stay on the front, the others go pending; returns (ns, nh), (OVERFLOW, OVERFLOW) when
    they do not fit.

    Every node pair a search evaluates and does not descend (pruned, a leaf pair, or pending at the
    end) goes on the row's front with its lower bound; together they cover all triangle pairs. A
    pair's old bound less how far its B node can have moved (`_motion`, about a pivot near last
    frame's closest point, where the bounds that matter are) is still a lower bound, so pairs that
    stay above the limit are kept without a test; the others go pending with that stale bound
    (marked by x stored as -x - 1) and get a fresh one when popped. Most of a query's work is the
    proof that nothing is closer, and between close frames most of it stays proven."""
    center, _, _, _, _, _, _, _, tris, _, _, extent = tree
    fx, fy, fl, fn, _, pivot, R0, t0 = fronts
    key, hx, hy, sk, sx, sy = pending
    cap = len(key)
    dR, dT, ox, oy, oz = _motion(R0, t0, pairs[0], pairs[1], tris, i, pivot[i])
    ns, nh = 0, 0
    for j in range(m):
        x, y = fx[i, j], fy[i, j]
        r = np.sqrt((center[y, 0] - ox) ** 2 + (center[y, 1] - oy) ** 2 + (center[y, 2] - oz) ** 2) + extent[y]
        g = fl[i, j] - (dR * r + dT) * (1.0 + 1e-12) - 1e-15 * r
        if g >= limit:
            _keep(fx, fy, fl, fn, i, x, y, g)
        elif ns == cap or nh == cap:
            return OVERFLOW, OVERFLOW
        elif g > 0.0 and priority:
            nh = heap_push(key, hx, hy, nh, g, -x - 1, y)
        else:
            sk[ns], sx[ns], sy[ns] = g, -x - 1, y
            ns += 1
    return ns, nh


@njit(cache=True)
def _pending_to_front(fronts, pending, i, ns, nh):
    """What is still pending when row i's search ends stays on its front (stale marks undone)."""
    fx, fy, fl, fn = fronts[0], fronts[1], fronts[2], fronts[3]
    key, hx, hy, sk, sx, sy = pending
    for j in range(ns):
        x = sx[j]
        _keep(fx, fy, fl, fn, i, -x - 1 if x < 0 else x, sy[j], sk[j])
    for j in range(nh):
        x = hx[j]
        _keep(fx, fy, fl, fn, i, -x - 1 if x < 0 else x, hy[j], key[j])


LEAF_DISTANCE, LEAF_PRUNED, LEAF_WAITS = 0, 1, 2  # _leaf_pair's verdicts


@njit(cache=True, inline=INLINE)
def _leaf_pair(tris, R, t, i, fa, fb, g, limit, work):
    """A leaf pair, triangle fa of A and fb of B, whose SSVs are g apart (<= 0: they overlap).
    Returns (LEAF_DISTANCE, d): their distance (closest points in work[1], nan where they intersect);
    (LEAF_PRUNED, lb): a lower bound >= limit (apart SSVs: the triangles' plane gaps, a dozen
    products, before the 15-feature distance); or (LEAF_WAITS, lb): triangles found disjoint though
    their SSVs overlap, with a lower bound lb > 0 (they wait until no overlapping pair is left:
    where the ships intersect elsewhere their distance is never needed)."""
    Vb, out = work
    _triangle_b(tris, R, t, i, fb, Vb)
    if g > 0.0:  # their SSVs, which hold them, are apart: no intersection test
        lb = triangle_plane_gap(tris[fa], Vb)
        if lb >= limit:
            return LEAF_PRUNED, lb
        return LEAF_DISTANCE, distance_triangle_triangle_disjoint(tris[fa], Vb, out)
    if intersect_triangle_triangle(tris[fa], Vb):
        for r in range(3):
            out[0, r], out[1, r] = np.nan, np.nan
        return LEAF_DISTANCE, 0.0
    return LEAF_WAITS, max(triangle_plane_gap(tris[fa], Vb), MIN_GAP)


@njit(cache=True)
def _search(tree, pairs, ask, fronts, pending, work, answer, i, ns, nh, best):
    """Row i's search from its ns + nh pending pairs and first `best` distance: returns the distance
    found (its pair written to answer, what it left undescended to the front) or -1 when the pending
    pairs outgrow their arrays. Pending pairs whose SSVs overlap (lower bound <= 0, all equally
    promising) go on the stack and are worked first, depth first, as a collide query would: where
    the ships intersect, that finds a touching pair soonest. The others go on a heap by lower bound
    (priority) or on the same stack (depth-first). Pop, push and child pairs stay written out (as
    inlined functions: 4-16% slower, lamp, same run); the leaf pair as one costs 1-3%."""
    center, u, v, half, radius, _, child, face, tris, _, _, _ = tree
    R, t = pairs[0], pairs[1]
    rel, abs_tol, priority, stop_at = ask[4], ask[5], ask[6], ask[3][i]
    fx, fy, fl, fn = fronts[0], fronts[1], fronts[2], fronts[3]
    key, hx, hy, sk, sx, sy = pending
    tri, cap = answer[1], len(key)
    while ns + nh > 0 and best > stop_at:  # stop_at >= 0: nothing beats touching
        from_heap = ns == 0
        if from_heap:
            g, x, y = heap_pop(key, hx, hy, nh)
            nh -= 1
        else:
            ns -= 1
            g, x, y = sk[ns], sx[ns], sy[ns]
        stale = x < 0
        x = -x - 1 if stale else x
        limit = _prune_at(best, rel, abs_tol)
        if g >= limit:
            _keep(fx, fy, fl, fn, i, x, y, g)
            if from_heap:
                break  # the closest pending pair, none on the stack, cannot help: none can
            continue  # (one off the stack says nothing of the heap's: depth-first, leaf pairs wait there)
        if stale and (child[x, 0] >= 0 or child[y, 0] >= 0):  # a front pair's bound, refreshed
            g = _node_gap(center, u, v, half, radius, R, t, i, x, y, limit)
            if g >= limit:
                _keep(fx, fy, fl, fn, i, x, y, g)
                continue
        # dive to a leaf pair along the nearer child pair, leaving the farther one pending:
        # a first triangle distance early, which then prunes
        while True:
            if child[x, 0] < 0 and child[y, 0] < 0:
                verdict, d = _leaf_pair(tris, R, t, i, face[x], face[y], g, limit, work)
                if verdict == LEAF_WAITS:  # pending as apart (lower bound > 0)
                    if nh == cap:
                        return -1.0
                    nh = heap_push(key, hx, hy, nh, d, x, y)
                    break
                _keep(fx, fy, fl, fn, i, x, y, d)
                if verdict == LEAF_DISTANCE and d < best:
                    best, tri[i, 0], tri[i, 1] = d, face[x], face[y]
                    _put_points(answer[2], i, work[1])
                break
            limit = _prune_at(best, rel, abs_tol)
            split_a = _descend_a(half, radius, child, x, y)
            p = x if split_a else y
            c0, c1 = child[p, 0], child[p, 1]
            if split_a:  # y moved once for both
                cy, uy, vy = _moved_frame(center, u, v, R, t, i, y)
                g0 = _moved_gap(center, u, v, half, radius, c0, cy, uy, vy, y, limit)
                g1 = _moved_gap(center, u, v, half, radius, c1, cy, uy, vy, y, limit)
            else:
                g0 = _node_gap(center, u, v, half, radius, R, t, i, x, c0, limit)
                g1 = _node_gap(center, u, v, half, radius, R, t, i, x, c1, limit)
            if g1 < g0:  # c0 the nearer
                c0, c1, g0, g1 = c1, c0, g1, g0
            xx, yy = (c1, y) if split_a else (x, c1)
            x, y, g = (c0, y, g0) if split_a else (x, c0, g0)
            if g1 >= limit:
                _keep(fx, fy, fl, fn, i, xx, yy, g1)
            elif nh == cap or ns == cap:
                return -1.0
            elif g1 > 0.0 and priority:
                nh = heap_push(key, hx, hy, nh, g1, xx, yy)
            else:
                sk[ns], sx[ns], sy[ns] = g1, xx, yy
                ns += 1
            if g >= limit:
                _keep(fx, fy, fl, fn, i, x, y, g)
                break
    _pending_to_front(fronts, pending, i, ns, nh)
    return best
