"""Separation-distance intervals: per candidate pair, lower <= true surface distance <= upper, narrowed
with the time a frame has left.

The verdict (refine.py) stops at the first colliding node pair of a level; what it knows of the
distance is an upper bound from that chain of pairs. Narrowing is a branch-and-bound over the two
sphere trees, one pair row at a time, nearest node pair first:

- every node's enclosing sphere (volumes.enclosing_spheres) holds the part of the surface its
  subtree covers, so the gap between two nodes' spheres, |c_a - c_b| - r_a - r_b, is at most the
  distance between any point of A's part and any of B's: a lower bound for them;
- the node pairs still to expand form a cut of the pair of trees: every pair of surface points is
  covered by one of them or by a leaf pair already resolved, so the least gap over the cut and the
  least triangle distance over the resolved leaf pairs bound the surface distance from below;
- a resolved leaf pair's triangle distance (geometry.triangles), the distance between two
  nodes' witnesses (sphere trees keep a surface point per node), and that between each node's
  leaf vertex farthest toward the other (BankParts.toward) are distances between real surface
  points, so they bound from above: these give a near upper bound after a few pops, which
  prunes most leaf pairs before their triangles are measured;
- a pair is expanded (the node with the larger sphere split into its children) only while its gap
  is below the upper bound: the interval closes (lower = upper, the exact distance) when no pair
  left could hold a nearer point pair.

An interval also carries from one sample to the next (CarriedIntervals): a rigid body whose pose
moves from (R0, t0) to (R1, t1) moves each of its surface points p by at most |t1 - t0| +
||R1 - R0|| |p|, and the surface distance of two bodies changes by at most the sum of their
points' largest moves, so [lower - m, upper + m] holds at the new poses (m that sum). A sample
with no time to narrow carries the last narrowed intervals too, when its own are read after it.

A call that runs out of pops keeps the best lower bound any of its cuts gave (a child's sphere may
reach nearer than its parent's: the least gap over a cut can fall as it is expanded). Both bounds
are valid at every step, so a call with more pops ends at least as narrow as one with fewer (it
makes the same first steps), and a caller keeps the larger lower and the smaller upper of every
call: more time never widens an interval (tests/narrowphase/test_intervals.py checks it, and the bounds,
against brute force on every shipped model pair).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
from numba import njit

from ..clock import read_clock
from ..geometry.poses import relative_pose
from ..geometry.triangles import closest_point_triangle, distance_triangle_triangle
from ..sorting import argsort_stable, heap_pop, heap_push
from .kernels import Leaves, leaves_of
from .volumes import moved

HEAP_START = 256  # node pairs a row's heap holds before it grows
TRIANGLES_PER_POP = 8  # triangle pairs measured that count as one node pair of a call's `pops`
EMPTY = np.int64(0)  # an empty heap's size, typed: a literal 0 would compile heap_push twice


class BankParts(NamedTuple):
    """What narrow_rows reads of one bank (bank_parts; a plain tuple to the kernels, kernels.py says
    why)."""

    first_child: np.ndarray  # (N,) int64
    child_count: np.ndarray  # (N,) int64
    spheres: np.ndarray      # (N, 8) enclosing spheres (volumes.enclosing_spheres)
    witness: np.ndarray      # (N, 3) a surface point of each node's part; (0, 3): none
    level: np.ndarray        # (N,) int64, each node's level
    leaves: Leaves           # its leaves' triangles (kernels.Leaves)
    hubbard: tuple           # sphere trees' (centre (N, 3), radius (N,), error (N,)): _error_bound; else empty
    toward: np.ndarray       # (N, 27, 3) each node's farthest leaf vertex along 26 directions (_toward_witness),
                             # from the leaves' triangles, as their distances are measured


@njit(cache=True)
def _gap(ea, a, eb, b, R, t, r):
    """Gap between node a's enclosing sphere (A's frame) and node b's (B's, moved into A's)."""
    x0, x1, x2 = moved(R, t, r, eb, b)
    d0, d1, d2 = ea[a, 0] - x0, ea[a, 1] - x1, ea[a, 2] - x2
    return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - ea[a, 3] - eb[b, 3]


@njit(cache=True)
def _witness_distance(wa, a, wb, b, R, t, r, best):
    """min(best, distance between the nodes' witnesses: surface points of A and B, so an upper bound),
    best where the banks have no witnesses (wa empty)."""
    if len(wa) == 0:
        return best
    x0, x1, x2 = moved(R, t, r, wb, b)
    d0, d1, d2 = wa[a, 0] - x0, wa[a, 1] - x1, wa[a, 2] - x2
    return min(best, np.sqrt(d0 * d0 + d1 * d1 + d2 * d2))


# The 26 directions a node's part is summarised along (axes, face and body diagonals) and the null one:
# direction index (sx + 1) 9 + (sy + 1) 3 + (sz + 1) of signs s in {-1, 0, 1}; 13 is (0, 0, 0)
DIRECTIONS = np.array([(x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1)], np.float64)
NULL_DIRECTION = 13
TAN_EIGHTH = np.tan(np.pi / 8)  # a component counts where it is at least this share of the largest


@njit(cache=True)
def _direction_of(x, y, z):
    """The index into DIRECTIONS nearest in angle (nearly: each component rounded to a sign or 0 by
    its share of the largest) to (x, y, z); NULL_DIRECTION for 0."""
    m = max(abs(x), abs(y), abs(z)) * TAN_EIGHTH
    sx = 0 if abs(x) <= m else (1 if x > 0 else -1)
    sy = 0 if abs(y) <= m else (1 if y > 0 else -1)
    sz = 0 if abs(z) <= m else (1 if z > 0 else -1)
    return (sx + 1) * 9 + (sy + 1) * 3 + (sz + 1)


@njit(cache=True)
def _toward_witness(ta, ea, a, tb, eb, b, R, t, r, best):
    """min(best, distance between node a's point toward b and b's toward a): each node's leaf vertex
    farthest along the direction of the other's enclosing sphere (BankParts.toward; B moved into A's
    frame). Any two surface points bound the distance from above, and where two parts nearly touch,
    their nearest points lie on the sides that face each other: there a point toward the other is a
    much nearer witness than one near the node's centre (`bench intervals`, near-touching poses, what
    the spheres down to level 1 know: the lamp's medial trees 0.15 R above the true distance, against
    0.52 R with the centres' witnesses alone)."""
    x0, x1, x2 = moved(R, t, r, eb, b)
    d0, d1, d2 = x0 - ea[a, 0], x1 - ea[a, 1], x2 - ea[a, 2]
    i = _direction_of(d0, d1, d2)
    j = _direction_of(-(R[r, 0, 0] * d0 + R[r, 1, 0] * d1 + R[r, 2, 0] * d2),  # -d in B's frame
                      -(R[r, 0, 1] * d0 + R[r, 1, 1] * d1 + R[r, 2, 1] * d2),
                      -(R[r, 0, 2] * d0 + R[r, 1, 2] * d1 + R[r, 2, 2] * d2))
    if np.isnan(ta[a, i, 0]) or np.isnan(tb[b, j, 0]):  # a node with no triangles below it
        return best
    y0, y1, y2 = moved(R, t, r, tb[b], j)
    e0, e1, e2 = ta[a, i, 0] - y0, ta[a, i, 1] - y1, ta[a, i, 2] - y2
    return min(best, np.sqrt(e0 * e0 + e1 * e1 + e2 * e2))


@njit(cache=True)
def toward_points(first_child, child_count, level, tri_ptr, tri_idx, tri_verts):
    """BankParts.toward: per node (N) and direction of DIRECTIONS (27), the vertex of its subtree's
    leaf triangles farthest along it ((N, 27, 3); nan where no triangle lies below the node; for the
    null direction, any of them). From the leaves up, deepest level first: a parent's farthest point
    along a direction is its children's farthest."""
    n, nd = len(first_child), len(DIRECTIONS)
    out = np.full((n, nd, 3), np.nan)
    score = np.full((n, nd), -np.inf)
    for i in np.argsort(-level, kind="mergesort"):
        for k in range(tri_ptr[i], tri_ptr[i + 1]):
            for c in range(3):
                _keep_farthest(out, score, i, tri_verts[tri_idx[k], c])
        for ch in range(first_child[i], first_child[i] + child_count[i]):
            for d in range(nd):
                if score[ch, d] > -np.inf:
                    _keep_farthest(out, score, i, out[ch, d])
    return out


@njit(cache=True)
def _keep_farthest(out, score, i, p):
    """Point p (3,) replaces node i's point along each direction it lies farther along."""
    for d in range(len(DIRECTIONS)):
        s = DIRECTIONS[d, 0] * p[0] + DIRECTIONS[d, 1] * p[1] + DIRECTIONS[d, 2] * p[2]
        if s > score[i, d]:
            score[i, d] = s
            out[i, d, 0], out[i, d, 1], out[i, d, 2] = p[0], p[1], p[2]


@njit(cache=True)
def _error_bound(ha, a, hb, b, R, t, r, best):
    """min(best, max(gap, 0) + e_a + e_b) for sphere-tree nodes a and b (ha, hb: their banks'
    (centre, radius, error), B's moved into A's frame; best where the banks have none): each
    node's sphere holds a point of its sphere nearest the other's, and every point of a sphere is
    within its error of the ship (Hubbard's bound, spheres apart or not). For closed meshes the
    error is measured to the solid, so this bounds the surface distance except where one hull lies
    wholly inside the other (the bodies then meet, and the exact level does not see it either)."""
    ca, ra, ea = ha
    cb, rb, eb = hb
    if len(ea) == 0:
        return best
    x0, x1, x2 = moved(R, t, r, cb, b)
    d0, d1, d2 = ca[a, 0] - x0, ca[a, 1] - x1, ca[a, 2] - x2
    gap = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - ra[a] - rb[b]
    return min(best, max(gap, 0.0) + ea[a] + eb[b])


@njit(cache=True)
def _grown(key, hx, hy):
    """The heap's arrays at twice their size (the first len(key) entries kept)."""
    n = len(key)
    k2, x2, y2 = np.empty(2 * n), np.empty(2 * n, np.int64), np.empty(2 * n, np.int64)
    for j in range(n):  # element by element: an array assigned into an array compiles numba's shape-mismatch
        k2[j], x2[j], y2[j] = key[j], hx[j], hy[j]  # message (string formatting), seconds on a first start
    return k2, x2, y2


@njit(cache=True, _nrt=False)
def _leaf_distance(A, a, B, b, R, t, r, best, work, limit):
    """min(best, the least distance between leaf a's triangles and leaf b's) of banks A, B
    (BankParts), B's moved into A's frame, over the surface the leaves' spheres hold: a triangle
    `best` or more from the other leaf's sphere, or a triangle pair whose bounding spheres are,
    holds no point of the leaves' parts nearer than best, and is not measured. work: _Work
    scratch. Stops after `limit` triangle pairs. Returns (least distance measured, or best;
    triangle pairs measured; whether every pair that needed measuring was). Compiled without
    reference counting (it allocates nothing): the increfs of the two BankParts' arrays on every
    call made narrowing 2-3% slower."""
    ea, eb = A[2], B[2]
    _, tpa, tia, tva, tca, tra = A[5]
    _, tpb, tib, tvb, tcb, trb = B[5]
    sel_a, tris_b, sel_b, va, out = work
    measured = 0
    b0, b1, b2 = moved(R, t, r, eb, b)
    na = 0
    for i in range(tpa[a], tpa[a + 1]):
        if _reaches(tva[tia[i]], b0, b1, b2, eb[b, 3], best):
            sel_a[na] = tia[i]
            na += 1
    nb = 0
    for j in range(tpb[b], tpb[b + 1]):
        g = tib[j]
        for c in range(3):
            tris_b[nb, c, 0], tris_b[nb, c, 1], tris_b[nb, c, 2] = moved(R, t, r, tvb[g], c)
        if _reaches(tris_b[nb], ea[a, 0], ea[a, 1], ea[a, 2], ea[a, 3], best):
            sel_b[nb] = g
            nb += 1
    for j in range(nb):
        g = sel_b[j]
        y0, y1, y2 = moved(R, t, r, tcb, g)
        for i in range(na):
            f = sel_a[i]
            d0, d1, d2 = tca[f, 0] - y0, tca[f, 1] - y1, tca[f, 2] - y2
            if np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - tra[f] - trb[g] >= best:
                continue
            for v in range(3):  # element by element: a slice copy compiles a second signature
                va[v, 0], va[v, 1], va[v, 2] = tva[f, v, 0], tva[f, v, 1], tva[f, v, 2]
            if measured >= limit:
                return best, measured, False
            best = min(best, distance_triangle_triangle(va, tris_b[j], out))
            measured += 1
            if best == 0.0:
                return 0.0, measured, True
    return best, measured, True


@njit(cache=True)
def _reaches(tri, x0, x1, x2, radius, best):
    """Whether triangle tri (3, 3) comes nearer than `best` to the sphere (x, radius)."""
    q0, q1, q2, _ = closest_point_triangle(x0, x1, x2, tri)
    d0, d1, d2 = q0 - x0, q1 - x1, q2 - x2
    return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - radius < best


@njit(cache=True)
def _most_per_leaf(tri_ptr):
    most = 1
    for i in range(len(tri_ptr) - 1):
        most = max(most, tri_ptr[i + 1] - tri_ptr[i])
    return most


@njit(cache=True)
def narrow_rows(A, B, R, t, rows, root_a, root_b, pops, max_level, lower, upper):
    """Narrow lower[r] and upper[r] of each pair row r in `rows` by a branch-and-bound of at most
    `pops` node pairs (module docstring; every TRIANGLES_PER_POP triangle pairs measured count as
    one more, so that a row's work, leaves included, is bounded by `pops`), in place; returns the
    work done: node pairs popped (and triangle pairs measured, as pops), over all the rows. A, B:
    the banks' BankParts; R, t: B's pose in A's frame per row; root_a, root_b: each row's root nodes. max_level: no node of that level is split
    and no leaf of it has its triangles measured (what the spheres down to it know: a pair that
    cannot go deeper counts with its gap and its witnesses' distance; a cap past the leaves, e.g.
    NO_LEVEL_CAP, lets every pair go on to its leaves' triangles)."""
    return narrow_rows_with(A, B, R, t, rows, root_a, root_b, pops, max_level, lower, upper, scratch_for(A, B))[0]


@njit(cache=True)
def scratch_for(A, B):
    """narrow_rows_with's scratch for banks A and B (BankParts): a heap of node pairs (key, a, b)
    and _leaf_distance's work arrays."""
    most = max(_most_per_leaf(A[5][1]), _most_per_leaf(B[5][1]))
    work = (np.empty(most, np.int64), np.empty((most, 3, 3)), np.empty(most, np.int64), np.empty((3, 3)),
            np.empty((2, 3)))
    return np.empty(HEAP_START), np.empty(HEAP_START, np.int64), np.empty(HEAP_START, np.int64), work


@njit(cache=True)
def narrow_rows_with(A, B, R, t, rows, root_a, root_b, pops, max_level, lower, upper, scratch):
    """narrow_rows with its scratch (scratch_for) given: returns (its work, the scratch with its heap
    grown where it had to), so that a caller narrowing a row at a time allocates it once (~2 µs a
    row less on the lamps)."""
    fca, cca, ea, wa, la, leaves_a, ha, ta = A
    fcb, ccb, eb, wb, lb, leaves_b, hb, tb = B
    key, hx, hy, work = scratch
    done = 0
    for r in rows:
        best = _witness_distance(wa, root_a[r], wb, root_b[r], R, t, r, upper[r])
        best = _error_bound(ha, root_a[r], hb, root_b[r], R, t, r, best)
        resolved = np.inf  # least triangle distance over the leaf pairs resolved
        n = heap_push(key, hx, hy, EMPTY, _gap(ea, root_a[r], eb, root_b[r], R, t, r), root_a[r], root_b[r])
        left, low = pops, 0.0
        while n > 0 and left > 0 and key[0] < best and best > 0.0:  # at 0 the interval is [0, 0]
            low = max(low, min(key[0], resolved))  # every cut's bound holds: keep the best seen
            _, a, b = heap_pop(key, hx, hy, n)
            n -= 1
            left -= 1
            grow_a, grow_b = cca[a] > 0 and la[a] < max_level, ccb[b] > 0 and lb[b] < max_level
            if not (grow_a or grow_b):
                if cca[a] == 0 and ccb[b] == 0 and la[a] < max_level and lb[b] < max_level:
                    # two leaves above the cap (the exact level lies past the leaves): the pair's own
                    # distance where under best, else best (still a lower bound for it: the
                    # triangle pairs left unmeasured are best or more apart)
                    best, measured, whole = _leaf_distance(A, a, B, b, R, t, r, best, work,
                                                           max(left, 1) * TRIANGLES_PER_POP)
                    # a pair cut short keeps its gap as its lower bound (its distance may be below best)
                    resolved = min(resolved, best if whole else _gap(ea, a, eb, b, R, t, r))
                    left -= measured // TRIANGLES_PER_POP  # the work a call may do is bounded, leaves' too
                else:  # at the level cap: its gap is what the spheres know
                    resolved = min(resolved, _gap(ea, a, eb, b, R, t, r))
                continue
            split_a = not grow_b or (grow_a and ea[a, 3] >= eb[b, 3])
            first, count = (fca[a], cca[a]) if split_a else (fcb[b], ccb[b])
            for c in range(first, first + count):
                ca, cb = (c, b) if split_a else (a, c)
                gap = _gap(ea, ca, eb, cb, R, t, r)
                best = _error_bound(ha, ca, hb, cb, R, t, r, _witness_distance(wa, ca, wb, cb, R, t, r, best))
                best = _toward_witness(ta, ea, ca, tb, eb, cb, R, t, r, best)
                if gap < best:
                    if n == len(key):
                        key, hx, hy = _grown(key, hx, hy)
                    n = heap_push(key, hx, hy, n, gap, ca, cb)
        cut = key[0] if n > 0 and key[0] < best and best > 0.0 else np.inf
        low = min(max(low, min(cut, resolved)), best)
        upper[r] = best
        if low > lower[r]:
            lower[r] = low
        done += pops - min(left, pops)
    return done, (key, hx, hy, work)


@njit(cache=True)
def row_price(now, begun, done, first):
    """What a round's next row is priced at [s]: `first` for its first (done 0), then the time per
    row its rows have taken so far (begun: its first reading, now: the last)."""
    return first if done == 0 else (now - begun) / done


@njit(cache=True)
def narrow_round(A, B, R, t, order, root_a, root_b, pops, lower, upper, clk, deadline, first):
    """One round of the narrowing (refine._Search._narrow_rounds): rows `order` one at a time,
    `pops` node pairs each (narrow_rows's other arguments), the clock (clk: clock.kernel_clock) read
    after each, until the next row, at its row_price, would end past the deadline. One call a round,
    where a call a batch cost ~6 µs of dispatch each, caches cold after the render. Returns (rows
    narrowed, node pairs popped, the round's first reading, its last)."""
    begun = now = read_clock(clk)
    work = done = 0
    scratch = scratch_for(A, B)
    for i in range(len(order)):
        if now + row_price(now, begun, done, first) >= deadline:
            break
        popped, scratch = narrow_rows_with(A, B, R, t, order[i:i + 1], root_a, root_b, pops, NO_LEVEL_CAP, lower,
                                           upper, scratch)
        work += popped
        now = read_clock(clk)
        done += 1
    return done, work, begun, now


def narrow_round_reference(A, B, R, t, order, root_a, root_b, pops, lower, upper, clock, deadline, first):
    """narrow_round with the clock read in Python: for clocks no kernel reads (a recording's, a
    replay's), and the reference its tests compare it with (the same readings, the same rows)."""
    begun = now = clock()
    work = done = 0
    for i in range(len(order)):
        if now + row_price(now, begun, done, first) >= deadline:
            break
        work += narrow_rows(A, B, R, t, order[i:i + 1], root_a, root_b, pops, NO_LEVEL_CAP, lower, upper)
        now = clock()
        done += 1
    return done, work, begun, now


NO_WITNESS = np.zeros((0, 3))
NO_SPHERES = (np.zeros((0, 3)), np.zeros(0), np.zeros(0))
NO_LEVEL_CAP = 1 << 30
_PARTS = weakref.WeakKeyDictionary()  # bank -> its bank_parts


def bank_parts(bank) -> tuple:
    """What narrow_rows needs of one prebuilt bank (a TreeBank): its BankParts, as a plain tuple,
    made once per bank (its arrays are never replaced; a flexing ship's change in place)."""
    if bank not in _PARTS:
        levels, nodes = node_levels(bank.first_child, bank.child_count, bank.node_offset), bank.nodes
        hubbard = (nodes.center, nodes.radius, nodes.error) if hasattr(nodes, "error") else NO_SPHERES
        toward = toward_points(bank.first_child, bank.child_count, levels, bank.tri_ptr, bank.tri_idx, bank.tri_verts)
        _PARTS[bank] = tuple(BankParts(bank.first_child, bank.child_count, bank.spheres,
                                       getattr(nodes, "witness", NO_WITNESS), levels, leaves_of(bank), hubbard, toward))
    return _PARTS[bank]


@njit(cache=True)
def node_levels(first_child, child_count, node_offset):
    """Each node's level below its model's root (roots: node_offset[:-1]), parents before children."""
    level = np.zeros(len(first_child), np.int64)
    for m in range(len(node_offset) - 1):
        stack = [node_offset[m]]
        while stack:
            i = stack.pop()
            for c in range(first_child[i], first_child[i] + child_count[i]):
                level[c] = level[i] + 1
                stack.append(c)
    return level


@njit(cache=True)
def row_poses(T, pairs):
    """B's rotation (k, 3, 3) and origin (k, 3) in A's frame per pair row (pairs (k, 2); T: the
    ships' world poses), as geometry.poses.relative_poses makes them, with no gathered copies."""
    k = len(pairs)
    R, t = np.empty((k, 3, 3)), np.empty((k, 3))
    for r in range(k):
        i, j = pairs[r, 0], pairs[r, 1]
        relative_pose(T[i, :3, :3], T[i, :3, 3], T[j, :3, :3], T[j, :3, 3], R[r], t[r])
    return R, t


def verdict_bounds(answer, A, B, T) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) per pair row of a refinement's answer (refine.FrameNarrowResult over banks A
    and B, the ships' world poses T), from what the verdict knows (_verdict_bounds)."""
    R, t = row_poses(T, answer.pairs)
    return _verdict_bounds(bank_parts(A), bank_parts(B), R, t, answer._spheres[3], answer._spheres[4],
                           answer.colliding, answer.certain, answer.separation_bound, answer.distance)


@njit(cache=True)
def _verdict_bounds(A, B, R, t, root_a, root_b, colliding, certain, separation_bound, distance):
    """The root spheres' gap and witnesses (narrow_rows with no pops); for pairs colliding at a
    sphere level 0 and their separation bound; [0, 0] where triangles intersect (certain); the
    exact distance where a strategy measured it."""
    k = len(root_a)
    lower, upper = np.zeros(k), np.full(k, np.inf)
    narrow_rows(A, B, R, t, np.arange(k), root_a, root_b, 0, NO_LEVEL_CAP, lower, upper)
    for r in range(k):
        if colliding[r]:
            lower[r] = 0.0
            if not separation_bound[r] >= upper[r]:  # np.minimum's: a nan bound is kept
                upper[r] = separation_bound[r]
        if np.isfinite(distance[r]):
            lower[r] = upper[r] = distance[r]
        if colliding[r] and certain[r]:
            lower[r] = upper[r] = 0.0
    return lower, upper


# added to 3 - trace(R0^T R1) before its square root: rounding in a trace of nearly equal rotations
# (~1e-15) must not make a pose change look smaller than it is
ROTATION_PAD = 1e-14


@njit(cache=True)
def pose_motion(T0, T1, reach):
    """Bound [m] on how far any point within `reach` [m] of a body's origin moves between poses T0
    and T1 (4, 4): |t1 - t0| + ||R1 - R0|| reach, with ||R1 - R0|| (the spectral norm) =
    2 sin(angle / 2) = sqrt(3 - trace(R0^T R1)) for rotations."""
    d0, d1, d2 = T1[0, 3] - T0[0, 3], T1[1, 3] - T0[1, 3], T1[2, 3] - T0[2, 3]
    trace = 0.0
    for i in range(3):
        for j in range(3):
            trace += T0[i, j] * T1[i, j]
    return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) + np.sqrt(max(3.0 - trace, 0.0) + ROTATION_PAD) * reach


@njit(cache=True)
def _reach(spheres, root):
    """How far a root node's surface reaches from its model's origin [m]: its enclosing sphere's
    centre distance plus radius (the root's sphere holds the whole surface)."""
    return np.sqrt(spheres[root, 0] ** 2 + spheres[root, 1] ** 2 + spheres[root, 2] ** 2) + spheres[root, 3]


@njit(cache=True)
def pair_key(i, j):
    """One int64 per body pair (i, j), ordered as the pairs (bodies < 2^31)."""
    return (i << 32) | j


@njit(cache=True)
def pair_keys(pairs):
    """pair_key of each row of pairs (k, 2)."""
    keys = np.empty(len(pairs), np.int64)
    for r in range(len(pairs)):
        keys[r] = pair_key(pairs[r, 0], pairs[r, 1])
    return keys


@njit(cache=True)
def carry_rows(kept, pairs, model_id, T, spheres, root_a, root_b, lower, upper):
    """Narrow the open intervals [lower, upper] of pair rows (pairs (k, 2), bodies' models model_id,
    poses T) in place by those `kept` (CarriedIntervals.kept: sorted pair keys, models, poses and
    intervals then), each widened by its bodies' pose_motion since. spheres: the bank's enclosing
    spheres; root_a, root_b: each row's root nodes."""
    keys, models, Ta, Tb, low, up = kept
    for r in range(len(pairs)):
        i, j = pairs[r, 0], pairs[r, 1]
        key = pair_key(i, j)
        at = np.searchsorted(keys, key)
        if not lower[r] < upper[r] or at == len(keys) or keys[at] != key \
                or models[at, 0] != model_id[i] or models[at, 1] != model_id[j]:
            continue
        moved = pose_motion(Ta[at], T[i], _reach(spheres, root_a[r])) + \
            pose_motion(Tb[at], T[j], _reach(spheres, root_b[r]))
        upper[r] = min(upper[r], up[at] + moved)
        lower[r] = min(max(lower[r], low[at] - moved), upper[r])


@njit(cache=True)
def widest_first(lower, upper, size, apart_only, colliding):
    """The rows whose interval is open (and, with apart_only, not colliding) by interval width
    relative to the pair's size (k,), widest first, ties in row order."""
    rows = np.empty(len(lower), np.int64)
    n = 0
    for r in range(len(lower)):
        if lower[r] < upper[r] and not (apart_only and colliding[r]):
            rows[n] = r
            n += 1
    key = np.empty(n)
    for i in range(n):
        key[i] = -(upper[rows[i]] - lower[rows[i]]) / size[rows[i]]
    return rows[:n][argsort_stable(key)]


@njit(cache=True)
def opened(A, B, T, pairs, model_id, root_a, root_b, colliding, certain, separation_bound, distance, kept):
    """(R, t, lower, upper): the pair rows' poses (row_poses) and their intervals from what the
    verdict knows (_verdict_bounds), narrowed by the intervals `kept` carried to T (carry_rows;
    NO_KEPT: none), in one call: what a tightening sample starts from (a call of each costs some
    20 µs more a sample, caches cold after the render)."""
    R, t = row_poses(T, pairs)
    lower, upper = _verdict_bounds(A, B, R, t, root_a, root_b, colliding, certain, separation_bound, distance)
    carry_rows(kept, pairs, model_id, T, A[2], root_a, root_b, lower, upper)
    return R, t, lower, upper


@njit(cache=True)
def kept_of(pairs, model_id, T, lower, upper):
    """CarriedIntervals.kept of pair rows (pairs (k, 2)) with intervals [lower, upper] at poses T:
    sorted pair keys, the pairs' models, their bodies' poses and intervals in key order."""
    keys = pair_keys(pairs)
    order = argsort_stable(keys)
    k = len(order)
    models, Ta, Tb = np.empty((k, 2), np.int64), np.empty((k, 4, 4)), np.empty((k, 4, 4))
    for n in range(k):
        i, j = pairs[order[n], 0], pairs[order[n], 1]
        models[n, 0], models[n, 1] = model_id[i], model_id[j]
        Ta[n], Tb[n] = T[i], T[j]
    return keys[order], models, Ta, Tb, lower[order], upper[order]


NO_KEPT = (np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 4, 4)), np.zeros((0, 4, 4)),
           np.zeros(0), np.zeros(0))


def _carried(kept, bank, answer, model_id, T, lower, upper):
    """(lower, upper) of answer's rows narrowed in place by the intervals `kept`, carried to T."""
    carry_rows(kept, answer.pairs, model_id, T, bank.spheres, answer._spheres[3], answer._spheres[4], lower, upper)
    return lower, upper


class CarriedIntervals:
    """Each candidate pair's separation interval at the poses it was made at, carried into later
    samples (module docstring): a pair's interval there is [lower - m, upper + m], m the two bodies'
    pose_motion since, and intersected with the new sample's own bounds it can only be narrower.
    So narrowing done in one sample is not lost in the next, and tightening accumulates from sample
    to sample. Rigid bodies only: a pair whose models changed, or a bank other than the one the
    intervals were made over, is not carried."""

    def __init__(self):
        self.bank = None  # weakref to the bank the intervals were made over
        # (sorted pair keys (k,), the pairs' models (k, 2), their bodies' poses (k, 4, 4) twice,
        # lower and upper (k,) [m]): what the last remembered sample knew
        self.kept = None

    def carry(self, bank, answer, model_id, T) -> None:
        """Narrow answer's open intervals (in place) by those kept for its pairs, moved to T."""
        if len(answer.pairs):
            _carried(self.kept_for(bank), bank, answer, model_id, T, answer.lower, answer.upper)

    def kept_for(self, bank) -> tuple:
        """What is kept, if made over `bank`; else NO_KEPT."""
        return self.kept if self.kept is not None and self.bank() is bank else NO_KEPT

    def carry_when_read(self, bank, answer, model_id, T) -> None:
        """Have answer's intervals, when first read, narrowed by those kept now, carried to T: for a
        sample that had no time to narrow, which pays nothing for them then (a display or a tally
        reads them after the frame). Its verdicts stay as they are; what is kept is not changed, so
        the next sample carries from the same poses and nothing depends on whether anyone read."""
        source = answer.interval_source  # None: the verdict's own (no sphere tree's): not carried
        if self.kept is None or self.bank() is not bank or not len(answer.pairs) or source is None:
            return
        kept = self.kept

        def carried(ans):
            return _carried(kept, bank, ans, model_id, T, *source(ans))
        answer.interval_source = carried

    def remember(self, bank, answer, model_id, T) -> None:
        """Keep answer's intervals, its pairs' models and poses T, in place of those kept before."""
        self.bank = weakref.ref(bank)
        self.kept = kept_of(answer.pairs, model_id, T, answer.lower, answer.upper)
