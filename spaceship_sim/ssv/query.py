"""Proximity queries on SSV trees (numba), batched over a frame's ship pairs, parallel over pairs.

Every kernel takes the SSVBank's node arrays (`tree.NodeArrays`, one named tuple), the relative pose
of each pair (x_A = R[i] x_B + t[i], geometry.poses) and the two root nodes, and works in ship A's
body frame. Pairs are split into chunks handed to numba's prange; a pair's answer depends on nothing
but its own row, so any number of threads gives the same result (numba.set_num_threads(1) is the
serial run).

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
  pose moved (see `_distance_row`, `_reopen_front`); `stop_at` ends a row once a pair that close is
  found (the tolerance query "closer than d?"). A row's search is split into small functions
  (seed, reopened front, search loop, dive, split, leaf pair), all inlined into `_distance_row`.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import get_num_threads, njit, prange

from ..geometry.triangles import (distance_triangle_triangle, distance_triangle_triangle_disjoint, intersect_triangle_triangle,
                                  triangle_plane_gap)
from ..geometry.vectors import cross, dist2, dot, row
from .core import box_gap, core_frame, frame_of, framed_rect_distance, normal_gaps

CHUNKS_PER_THREAD = 4
PRUNE_ROUNDING = 1e-12  # relative: far above a few ulps, far below any tolerance asked for
MIN_GAP = 5e-324  # the least positive float: a lower bound on the distance of triangles found disjoint
FRONT_GROWTH = 1.5  # a front this many times its fresh size is dropped (capsules, lamp, freighter trajectories)
# The traversal's small functions take the node arrays: called, each array argument costs reference counting
# (atomic) on every call, which numba cannot prune across calls. Inlined into the row functions
# (numba IR inlining), the distance query took 0.75-0.85x the time (same-process A/B, lamp).
INLINE = "always"

# The distance query's arguments, grouped (numba takes named tuples of arrays as they are):
# per-row inputs, (k,) each: root nodes, seed faces (-1: none), bound [m], stop_at [m], pivot face
Rows = namedtuple("Rows", "root_a root_b seed_a seed_b bound stop_at pivot")
# the tolerances, shared by all rows: rel [-], abs_tol [m], priority (bool)
Tolerance = namedtuple("Tolerance", "rel abs_tol priority")
# the search fronts, read and rewritten in place: node pairs x, y (k, F) with lower bounds lb (k, F),
# n (k,) per row, fresh (k,), and the pose R0 (k, 3, 3), t0 (k, 3) their bounds hold at
Front = namedtuple("Front", "x y lb n fresh R0 t0")
# a chunk's pending node pairs: the heap (key, hx, hy) and the stack (sk, sx, sy), (cap,) each
Pending = namedtuple("Pending", "key hx hy sk sx sy")
# the answer arrays tri (k, 2), points (k, 2, 3), and a chunk's scratch Vb (3, 3), out (2, 3)
Answer = namedtuple("Answer", "tri points Vb out")


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
def _node_gap(nodes, R, t, i, x, y, enough):
    """Distance between the SSVs of node x (A's frame) and node y (B's, moved by pose i), negative
    when they overlap — or, where a cheap lower bound on it is above `enough`, that bound (the
    caller prunes there). `_moved_gap` with y moved here."""
    cy, uy, vy = _moved_frame(nodes.center, nodes.u, nodes.v, R, t, i, y)
    return _moved_gap(nodes, x, cy, uy, vy, y, enough)


@njit(cache=True, inline=INLINE)
def _moved_gap(nodes, x, cy, uy, vy, y, enough):
    """`_node_gap` where node y's core centre and axes cy, uy, vy are already in A's frame
    (`_moved_frame`: a split of x tests both its children against the same y). Cheap first: the
    projections on the centre line, then on the cores' normals (a flat core has no extent along
    its own), then the exact core distance."""
    half, radius = nodes.half, nodes.radius
    T, U, V, tu, tv = core_frame(row(nodes.center, x), row(nodes.u, x), row(nodes.v, x), cy, uy, vy)  # once for all three
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
def _box_gap(nodes, x, cy, uy, vy, y):
    """`box_gap` of node x's box (A's frame) and node y's, whose centre and axes cy, uy, vy are
    already in A's frame (`_moved_frame`): > 0 only when the boxes are apart (collide prunes
    there), else <= 0, the deepest face-axis overlap (orders the children). In x's box frame."""
    T, U, V = frame_of(row(nodes.box_center, x), row(nodes.u, x), row(nodes.v, x), cy, uy, vy)
    return box_gap(T, U, V, cross(U, V), row(nodes.box_half, x), row(nodes.box_half, y))


@njit(cache=True, inline=INLINE)
def _descend_a(nodes, x, y):
    """Split node x (else y): x when y is a leaf, or x is not and is the bigger one by the volume of
    the box about its SSV, (a + r)(b + r) r (against a + b + r: 1-12% fewer node pairs to a distance
    query on the five bench models' deep poses)."""
    half, radius, child = nodes.half, nodes.radius, nodes.child
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
def collide_pairs(nodes, R, t, root_a, root_b, bounds, depth, cap):
    """Intersecting triangle pairs of k ship pairs.

    nodes          : tree.NodeArrays of the bank
    root_a, root_b : (k,) int64 root nodes; bounds: chunks(k); depth: int, the deepest tree's depth (sizes the stack)
    cap            : int >= 1, triangle pairs stored per row (1: stop at the first contact)
    Returns count (k,) int64 — all contacts found, which may exceed cap: the caller reruns those
    rows with a larger cap when it wants them all — and hits (k, cap, 2) int64 global face ids
    (face of A, face of B), the first min(count, cap) valid.
    Node pairs are tested on the nodes' boxes (`_box_gap`: fcl's OBB test; the SSVs' exact distance
    costs more than the pairs it would prune save), the split node's child pairs with the deeper
    overlap first; the other node's frame is moved into A's once per split.
    """
    k = len(root_a)
    count = np.zeros(k, np.int64)
    hits = np.full((k, cap, 2), -1, np.int64)
    for c in prange(len(bounds) - 1):
        sx, sy = np.empty(2 * depth + 4, np.int64), np.empty(2 * depth + 4, np.int64)
        Vb = np.empty((3, 3))
        for i in range(bounds[c], bounds[c + 1]):
            count[i] = _collide_row(nodes, R, t, i, root_a[i], root_b[i], sx, sy, Vb, hits)
    return count, hits


@njit(cache=True)
def _collide_row(nodes, R, t, i, ra, rb, sx, sy, Vb, hits):
    """collide_pairs for row i (roots ra, rb; stack sx, sy; scratch Vb): stores its first
    len(hits[i]) contacts in hits[i], returns how many it found (stops at the first when
    hits[i] holds one). A function of its own, not the prange loop's body: the functions inlined
    into it (see `_moved_gap`) would trip numba's parfor analysis there."""
    child, face, tris, bc, u, v = nodes.child, nodes.face, nodes.tris, nodes.box_center, nodes.u, nodes.v
    cap = hits.shape[1]
    count, top = 0, 0
    cy, uy, vy = _moved_frame(bc, u, v, R, t, i, rb)
    if _box_gap(nodes, ra, cy, uy, vy, rb) <= 0.0:
        sx[0], sy[0], top = ra, rb, 1
    while top > 0:
        top -= 1
        x, y = sx[top], sy[top]
        if child[x, 0] < 0 and child[y, 0] < 0:
            _triangle_b(tris, R, t, i, face[y], Vb)
            if intersect_triangle_triangle(tris[face[x]], Vb):
                if count < cap:
                    hits[i, count, 0], hits[i, count, 1] = face[x], face[y]
                count += 1
                if cap == 1:
                    break
            continue
        split_a = _descend_a(nodes, x, y)
        if split_a:
            c0, c1 = child[x, 0], child[x, 1]
            cy, uy, vy = _moved_frame(bc, u, v, R, t, i, y)
            g0 = _box_gap(nodes, c0, cy, uy, vy, y)
            g1 = _box_gap(nodes, c1, cy, uy, vy, y)
        else:
            c0, c1 = child[y, 0], child[y, 1]
            cy, uy, vy = _moved_frame(bc, u, v, R, t, i, c0)
            g0 = _box_gap(nodes, x, cy, uy, vy, c0)
            cy, uy, vy = _moved_frame(bc, u, v, R, t, i, c1)
            g1 = _box_gap(nodes, x, cy, uy, vy, c1)
        if g0 < g1:  # the deeper overlap on top
            c0, c1, g0, g1 = c1, c0, g1, g0
        for cc, g in ((c0, g0), (c1, g1)):
            if g <= 0.0:
                sx[top], sy[top] = (cc, y) if split_a else (x, cc)
                top += 1
    return count


@njit(cache=True, inline=INLINE)
def _prune_at(best, tol):
    """Node pairs with a lower bound at least this cannot improve `best` beyond the tolerance. The
    bounds are rounded (a triangle pair's plane gap can come out an ulp above its computed distance
    where a vertex over a face is the closest pair): a pair within PRUNE_ROUNDING of the limit is
    looked at, so the search finds the distance as the triangle distance computes it, and a
    tolerance query at exactly that distance says so."""
    return min(best / (1.0 + tol.rel), best - tol.abs_tol) * (1.0 + PRUNE_ROUNDING)


@njit(cache=True, inline=INLINE)
def _heap_push(key, hx, hy, n, g, x, y):
    """Push (g, x, y) on the binary min-heap (key, hx, hy)[:n]; returns n + 1."""
    j = n
    while j > 0:
        parent = (j - 1) // 2
        if key[parent] <= g:
            break
        key[j], hx[j], hy[j] = key[parent], hx[parent], hy[parent]
        j = parent
    key[j], hx[j], hy[j] = g, x, y
    return n + 1


@njit(cache=True, inline=INLINE)
def _heap_pop(key, hx, hy, n):
    """Remove the smallest of the heap (key, hx, hy)[:n]; returns (g, x, y)."""
    g, x, y = key[0], hx[0], hy[0]
    n -= 1
    lk, lx, ly = key[n], hx[n], hy[n]
    j = 0
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and key[c + 1] < key[c]:
            c += 1
        if key[c] >= lk:
            break
        key[j], hx[j], hy[j] = key[c], hx[c], hy[c]
        j = c
    key[j], hx[j], hy[j] = lk, lx, ly
    return g, x, y


@njit(cache=True)
def _pending(cap):
    """Room for cap pending node pairs: (key, x, y) of the heap and of the stack."""
    return Pending(np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64),
                   np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64))


@njit(cache=True, parallel=True)
def distance_pairs(nodes, R, t, rows, tol, front, bounds, room):
    """Closest triangle pair of k ship pairs, within a tolerance.

    nodes  : tree.NodeArrays of the bank (its extent: how far each node's SSV reaches from its
             core's centre [m])
    R, t   : (k, 3, 3), (k, 3) float64, B's pose in A's frame per row
    rows   : Rows of (k,) arrays —
             root_a, root_b  int64 root nodes;
             seed_a, seed_b  int64 global faces of a triangle pair to start from (-1: none);
             bound   float64 [m], only pairs closer than this are looked for (inf: all);
             stop_at float64 [m] >= 0, a row stops at its first triangle pair this close (0: when
                     the ships are found intersecting, nothing can be closer);
             pivot   int64 global face of B whose centroid is the pivot of row i's motion since its
                     front's pose (`_motion`; last frame's closest; -1: B's origin)
    tol    : Tolerance(rel [-], abs_tol [m], priority: priority-directed search, else depth-first,
             nearer pair first); 0, 0: exact
    front  : Front, the search fronts, read and rewritten in place: row i's n[i] node pairs
             (x[i, j], y[i, j]), each with a lower bound lb[i, j] on its triangles' distance at
             last frame's pose, cover every triangle pair (n[i] <= 0: no front, the search starts
             at the roots). Out: this search's front, n[i] = -1 where it did not fit in
             x.shape[1] (shape (k, 0): fronts are not kept). fresh (k,) int64, the size of the last
             front a search from the roots left, read and rewritten: a front grown past
             FRONT_GROWTH times it is dropped, the row searched from the roots (a front only
             refines: as the closest points wander, the pairs it descended on the way stay
             fine-grained; on the capsules it grew 8x in 600 frames). R0 (k, 3, 3), t0 (k, 3), the
             pose each front's bounds hold at, set to (R[i], t[i]) by the rows that rework their
             front (R, t themselves when fronts are not kept); a row whose seed answers at once
             (touching) leaves its front and pose as they were
    bounds : chunks(k); room: int >= 1, pending node pairs a row has room for at first (doubled
             while short; the answers do not depend on it)
    Returns dist (k,) float64 [m] (0 when the ships intersect; `bound` when nothing closer was
    found), tri (k, 2) int64 global faces (-1 when nothing closer than `bound`), points (k, 2, 3)
    float64 closest points in A's frame (nan when intersecting or none found).
    """
    k = len(rows.root_a)
    dist = np.empty(k)
    tri = np.full((k, 2), -1, np.int64)
    points = np.full((k, 2, 3), np.nan)
    for c in prange(len(bounds) - 1):
        _distance_chunk(nodes, R, t, rows, tol, front, bounds[c], bounds[c + 1], room, dist, tri, points)
    return dist, tri, points


@njit(cache=True)
def _distance_chunk(nodes, R, t, rows, tol, front, start, stop, room, dist, tri, points):
    """distance_pairs for rows start..stop-1, one after the other in this chunk's scratch: each row
    from its front when that has not outgrown FRONT_GROWTH times its fresh size, again from the
    roots with twice the room when its pending pairs overflow."""
    ans = Answer(tri, points, np.empty((3, 3)), np.empty((2, 3)))
    cap = room + front.x.shape[1]  # room for a whole front besides
    pend = _pending(cap)
    fn, fresh = front.n, front.fresh
    for i in range(start, stop):
        m = fn[i] if fn[i] <= FRONT_GROWTH * fresh[i] else 0
        while True:
            fn[i] = 0
            dist[i] = _distance_row(nodes, R, t, i, rows, tol, front, m, pend, ans)
            if dist[i] >= 0.0:
                break
            # the pending pairs overflowed: the row again from the roots (the front was spent) with twice the room
            tri[i, 0], tri[i, 1] = -1, -1
            points[i] = np.nan
            cap, m = cap * 2, 0
            pend = _pending(cap)
        if m <= 0:
            fresh[i] = fn[i]


@njit(cache=True, inline=INLINE)
def _keep(front, i, x, y, lb):
    """Put node pair (x, y), lower bound lb, on row i's front (n[i] = -1 once it is full: none kept)."""
    n = front.n[i]
    if n >= 0:
        if n < front.x.shape[1]:
            front.x[i, n], front.y[i, n], front.lb[i, n] = x, y, lb
            front.n[i] = n + 1
        else:
            front.n[i] = -1


@njit(cache=True, inline=INLINE)
def _pend(pend, ns, nh, g, x, y, to_heap):
    """Node pair (x, y), lower bound g, pending: on the heap (to_heap) or the stack, which hold
    ns and nh pairs. Returns the new (ns, nh), or (-1, -1) when either is full."""
    cap = len(pend.key)
    if ns == cap or nh == cap:
        return -1, -1
    if to_heap:
        return ns, _heap_push(pend.key, pend.hx, pend.hy, nh, g, x, y)
    pend.sk[ns], pend.sx[ns], pend.sy[ns] = g, x, y
    return ns + 1, nh


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


@njit(cache=True)
def _distance_row(nodes, R, t, i, rows, tol, front, m, pend, ans):
    """distance_pairs for row i (m pairs on its front, which moved as `_motion` says, about B's face
    rows.pivot[i]); writes ans.tri[i], ans.points[i] and the new front, returns the distance, or -1
    when the pending pairs' arrays are full (the caller reruns the row with more room): arrays that
    grew in the loop would cost reference counting on every use, ~20% of the time.

    Pending pairs whose SSVs overlap (lower bound <= 0, all equally promising) go on a stack, worked
    first and depth first, as a collide query would: where the ships intersect that finds a touching
    triangle pair soonest. The others go on a heap by lower bound (priority) or on the same stack
    (depth-first), both in `pend` (`_search`).

    Front tracking (coherence): every node pair the search evaluates and does not descend (pruned,
    a leaf pair, or pending at the end) goes on the row's front with its lower bound; together they
    cover all triangle pairs. Next frame starts from that front instead of the roots
    (`_reopen_front`). Most of a query's work is the proof that nothing is closer, and between close
    frames most of it stays proven."""
    best = _seeded(nodes, R, t, i, rows, ans)
    if m > 0 and best <= rows.stop_at[i]:  # the seed answers (touching): the front stays as it was, at its pose
        front.n[i] = m
        return best
    motion = _motion(front.R0, front.t0, R, t, nodes.tris, i, rows.pivot[i]) if m > 0 else (0.0, 0.0, 0.0, 0.0, 0.0)
    for r in range(3):
        front.t0[i, r] = t[i, r]
        for c in range(3):
            front.R0[i, r, c] = R[i, r, c]
    if m > 0:  # last frame's front, read and rewritten in place
        ns, nh = _reopen_front(nodes, front, i, m, motion, best, tol, pend)
        if ns < 0:
            return -1.0
    else:
        ra, rb = rows.root_a[i], rows.root_b[i]
        pend.sk[0], pend.sx[0], pend.sy[0] = _node_gap(nodes, R, t, i, ra, rb, _prune_at(best, tol)), ra, rb
        ns, nh = 1, 0
    best, ns, nh = _search(nodes, R, t, i, rows.stop_at[i], tol, front, best, pend, ns, nh, ans)
    if ns < 0:
        return -1.0
    for j in range(ns):  # what is still pending stays on the front
        x = pend.sx[j]
        _keep(front, i, -x - 1 if x < 0 else x, pend.sy[j], pend.sk[j])
    for j in range(nh):
        x = pend.hx[j]
        _keep(front, i, -x - 1 if x < 0 else x, pend.hy[j], pend.key[j])
    return best


@njit(cache=True, inline=INLINE)
def _seeded(nodes, R, t, i, rows, ans):
    """The row's first best distance: its seed triangle pair's (triangle caching; written to
    ans.tri[i] and ans.points[i]) where that is below its bound, else the bound."""
    best, sa, sb = rows.bound[i], rows.seed_a[i], rows.seed_b[i]
    if sa >= 0:
        _triangle_b(nodes.tris, R, t, i, sb, ans.Vb)
        d = distance_triangle_triangle(nodes.tris[sa], ans.Vb, ans.out)
        if d < best:
            best, ans.tri[i, 0], ans.tri[i, 1] = d, sa, sb
            ans.points[i] = ans.out
    return best


@njit(cache=True, inline=INLINE)
def _reopen_front(nodes, front, i, m, motion, best, tol, pend):
    """Row i's m front pairs, each with its old bound less how far its B node can have moved
    (`motion`, `_motion`'s answer: about a pivot near last frame's closest point, where the bounds
    that matter are) — still a lower bound. Pairs that stay above the prune limit go back on the
    front without a test; the others go pending with that stale bound (marked by x stored as
    -x - 1) and get a fresh one when popped. Returns (ns, nh), or (-1, -1) when pending is full."""
    dR, dT, ox, oy, oz = motion
    ns, nh = 0, 0
    for j in range(m):  # a pair kept at once goes no further on: the front is rewritten behind the read
        x, y = front.x[i, j], front.y[i, j]
        r = np.sqrt(dist2(row(nodes.center, y), (ox, oy, oz))) + nodes.extent[y]
        g = front.lb[i, j] - (dR * r + dT) * (1.0 + 1e-12) - 1e-15 * r
        if g >= _prune_at(best, tol):
            _keep(front, i, x, y, g)
            continue
        ns, nh = _pend(pend, ns, nh, g, -x - 1, y, g > 0.0 and tol.priority)
        if ns < 0:
            break
    return ns, nh


@njit(cache=True, inline=INLINE)
def _search(nodes, R, t, i, stop_at, tol, front, best, pend, ns, nh, ans):
    """Work row i's pending pairs until none is left or a pair within stop_at is found: the next
    pending pair is an overlapping one off the stack, else the closest (priority) off the heap; a
    pair that cannot help goes on the front, a stale front pair gets a fresh bound, the others are
    descended (`_dive`). Returns (best, ns, nh); ns = -1 when pending is full."""
    child = nodes.child
    while ns + nh > 0 and best > stop_at:  # stop_at >= 0: nothing beats touching
        from_heap = ns == 0
        if from_heap:
            g, x, y = _heap_pop(pend.key, pend.hx, pend.hy, nh)
            nh -= 1
        else:
            ns -= 1
            g, x, y = pend.sk[ns], pend.sx[ns], pend.sy[ns]
        stale = x < 0
        x = -x - 1 if stale else x
        limit = _prune_at(best, tol)
        if g >= limit:
            _keep(front, i, x, y, g)
            if from_heap:
                break  # the closest pending pair, none on the stack, cannot help: none can
            continue  # (one off the stack says nothing of the heap's: depth-first, leaf pairs wait there)
        if stale and (child[x, 0] >= 0 or child[y, 0] >= 0):  # a front pair's bound, refreshed
            g = _node_gap(nodes, R, t, i, x, y, limit)
            if g >= limit:
                _keep(front, i, x, y, g)
                continue
        best, ns, nh = _dive(nodes, R, t, i, x, y, g, tol, front, best, pend, ns, nh, ans)
        if ns < 0 or nh < 0:
            return best, -1, -1
    return best, ns, nh


@njit(cache=True, inline=INLINE)
def _dive(nodes, R, t, i, x, y, g, tol, front, best, pend, ns, nh, ans):
    """Dive from node pair (x, y), lower bound g, to a leaf pair along the nearer child pair, leaving
    the farther one pending (`_split`): a first triangle distance early, which then prunes.
    Returns (best, ns, nh); ns or nh = -1 when pending is full."""
    while nodes.child[x, 0] >= 0 or nodes.child[y, 0] >= 0:
        x, y, g, ns, nh = _split(nodes, R, t, i, x, y, tol, front, best, pend, ns, nh)
        if ns < 0:
            return best, ns, nh
        if g >= _prune_at(best, tol):
            _keep(front, i, x, y, g)
            return best, ns, nh
    best, nh = _leaf_pair(nodes, R, t, i, x, y, g, tol, front, best, pend, nh, ans)
    return best, ns, nh


@njit(cache=True, inline=INLINE)
def _split(nodes, R, t, i, x, y, tol, front, best, pend, ns, nh):
    """Split node pair (x, y) (`_descend_a` picks the node): the farther child pair goes on the
    front where it cannot help, else pending. Returns the nearer (x, y, g) and (ns, nh); ns = -1
    when pending is full."""
    split_a = _descend_a(nodes, x, y)
    p = x if split_a else y
    c0, c1 = nodes.child[p, 0], nodes.child[p, 1]
    limit = _prune_at(best, tol)
    if split_a:  # y moved once for both
        cy, uy, vy = _moved_frame(nodes.center, nodes.u, nodes.v, R, t, i, y)
        g0 = _moved_gap(nodes, c0, cy, uy, vy, y, limit)
        g1 = _moved_gap(nodes, c1, cy, uy, vy, y, limit)
    else:
        g0 = _node_gap(nodes, R, t, i, x, c0, limit)
        g1 = _node_gap(nodes, R, t, i, x, c1, limit)
    if g1 < g0:  # c0 the nearer
        c0, c1, g0, g1 = c1, c0, g1, g0
    xx, yy = (c1, y) if split_a else (x, c1)
    if g1 >= limit:
        _keep(front, i, xx, yy, g1)
    else:
        ns, nh = _pend(pend, ns, nh, g1, xx, yy, g1 > 0.0 and tol.priority)
    x, y = (c0, y) if split_a else (x, c0)
    return x, y, g0, ns, nh


@njit(cache=True, inline=INLINE)
def _leaf_pair(nodes, R, t, i, x, y, g, tol, front, best, pend, nh, ans):
    """Leaf pair (x, y), lower bound g: where their SSVs are apart (g > 0), the triangles' plane
    gaps (a dozen products) first, the 15-feature triangle distance only where those cannot prune;
    where their SSVs overlap, the intersection test, and triangles found disjoint wait on the heap
    (in either search order) with their plane gap as bound until no overlapping pair is left: where
    the ships intersect elsewhere their distance is never needed. Returns (best, nh); nh = -1 when
    the heap is full."""
    tris, face, Vb, out = nodes.tris, nodes.face, ans.Vb, ans.out
    _triangle_b(tris, R, t, i, face[y], Vb)
    if g > 0.0:  # their SSVs, which hold them, are apart: no intersection test
        lb = triangle_plane_gap(tris[face[x]], Vb)  # most leaf pairs cannot help: a cheap proof first
        if lb >= _prune_at(best, tol):
            _keep(front, i, x, y, lb)
            return best, nh
        d = distance_triangle_triangle_disjoint(tris[face[x]], Vb, out)
    elif intersect_triangle_triangle(tris[face[x]], Vb):
        d = 0.0
        for r in range(3):
            out[0, r], out[1, r] = np.nan, np.nan
    else:  # among pairs that overlap, the ships may intersect elsewhere: this one's distance
        # waits until no pair overlaps (pending as apart, lower bound > 0)
        if nh == len(pend.key):
            return best, -1
        return best, _heap_push(pend.key, pend.hx, pend.hy, nh, max(triangle_plane_gap(tris[face[x]], Vb), MIN_GAP), x, y)
    _keep(front, i, x, y, d)
    if d < best:
        best, ans.tri[i, 0], ans.tri[i, 1] = d, face[x], face[y]
        ans.points[i] = out
    return best, nh
