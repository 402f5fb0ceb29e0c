"""The BSP pair test (numba): one model's triangles classified down the other's BSP tree.

Arrays are a bank of several models' trees concatenated (node and triangle ids global, child ids
global); see detector.BSPBank for their layout. Inside, the bank's node and triangle arrays travel
as one BSPNodes tuple and the growing outputs as one Hits tuple, so that no function takes more
than a dozen arguments.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..geometry.buffers import grow
from ..geometry.triangles import intersect_triangle_triangle

# The bank's trees (detector.BSPBank): plane (N, 4), front, back (N,) int64 (-1: leaf), tri_ptr
# (N+1,), tri_idx (K,) the triangles held at each node; tri_verts (F, 3, 3), tri_center (F, 3),
# tri_radius (F,) float64 [m], body frames.
BSPNodes = namedtuple("BSPNodes", "plane front back tri_ptr tri_idx tri_verts tri_center tri_radius")
# Intersecting triangle pairs found so far, global ids: hit_a, hit_b (capacity,) int64, grown as
# needed; the count travels beside them.
Hits = namedtuple("Hits", "hit_a hit_b")



@njit(cache=True)
def bsp_collide_pairs(plane, front, back, tri_ptr, tri_idx, tri_verts, tri_center, tri_radius, root, tri_offset, box,
                      eps, ma, mb, R, t, first):
    """Intersecting triangle pairs of k placed model pairs: B's triangles down A's tree.

    plane (N, 4), front (N,), back (N,), tri_ptr (N+1,), tri_idx (K,) : the bank's trees
    tri_verts  : (F, 3, 3) float64, every model's triangles, body frame [m]
    tri_center : (F, 3), tri_radius : (F,) float64, a sphere about each triangle [m]
    root       : (M,) int64, each model's root node;  tri_offset : (M+1,) int64
    box        : (M, 2, 3) float64 [m], each model's bounding box (lo, hi) in its body frame;  eps : (M,) [m]
    ma, mb     : (k,) int64 models of A (the tree) and B (classified);  R, t : (k, 3, 3), (k, 3)
                 B's body frame in A's (x_A = R x_B + t)
    first      : stop each pair at its first intersecting triangle pair
    Returns ptr (k+1,), hit_a (P,), hit_b (P,) int64: CSR of (face of A, face of B), local ids,
    each intersecting pair once.
    """
    tree = BSPNodes(plane, front, back, tri_ptr, tri_idx, tri_verts, tri_center, tri_radius)
    k = len(ma)
    ptr = np.zeros(k + 1, np.int64)
    hits = Hits(np.empty(64, np.int64), np.empty(64, np.int64))
    n_hits = np.int64(0)  # typed, not a literal: one compilation of the walk
    stamp = np.full(len(tri_verts), -1, np.int64)  # last query triangle tested against each triangle
    stack = np.empty(256, np.int64)
    X = np.empty((3, 3))
    query = 0
    for r in range(k):
        a, b = ma[r], mb[r]
        start = n_hits
        for j in range(tri_offset[b], tri_offset[b + 1]):
            _place_triangle(tri_verts, j, R, t, r, X)
            if _outside_box(X, box, a, eps[a]):  # then it meets none of A's triangles
                continue
            query += 1
            stack, hits, found = _classify(tree, root[a], eps[a], X, j, query, stamp, stack, hits, n_hits, first)
            n_hits += found
            if first and found:
                break
        for i in range(start, n_hits):  # global triangle ids -> each model's own
            hits.hit_a[i] -= tri_offset[a]
            hits.hit_b[i] -= tri_offset[b]
        ptr[r + 1] = n_hits
    return ptr, hits.hit_a[:n_hits], hits.hit_b[:n_hits]


@njit(cache=True)
def _place_triangle(tri_verts, j, R, t, r, X):
    """X (3, 3) = B's triangle j moved into A's frame by pair r's pose."""
    for v in range(3):
        for i in range(3):
            X[v, i] = (R[r, i, 0] * tri_verts[j, v, 0] + R[r, i, 1] * tri_verts[j, v, 1]
                       + R[r, i, 2] * tri_verts[j, v, 2] + t[r, i])


@njit(cache=True)
def _outside_box(X, box, a, e):
    """Triangle X (3, 3) lies beyond one face of model a's bounding box, grown by e [m]."""
    outside = False
    for i in range(3):
        lo_i = min(X[0, i], min(X[1, i], X[2, i]))
        hi_i = max(X[0, i], max(X[1, i], X[2, i]))
        outside = outside or lo_i > box[a, 1, i] + e or hi_i < box[a, 0, i] - e
    return outside


@njit(cache=True)
def _bounding_sphere(X):
    """(cx, cy, cz, radius) [m]: triangle X's centroid and its farthest vertex's distance."""
    cx = (X[0, 0] + X[1, 0] + X[2, 0]) / 3.0
    cy = (X[0, 1] + X[1, 1] + X[2, 1]) / 3.0
    cz = (X[0, 2] + X[1, 2] + X[2, 2]) / 3.0
    rad = 0.0
    for v in range(3):
        rad = max(rad, np.sqrt((X[v, 0] - cx) ** 2 + (X[v, 1] - cy) ** 2 + (X[v, 2] - cz) ** 2))
    return cx, cy, cz, rad


@njit(cache=True)
def _plane_range(plane, node, X):
    """(lo, hi) signed distances [m] of X's vertices from inner node `node`'s plane."""
    lo, hi = np.inf, -np.inf
    for v in range(3):
        s = plane[node, 0] * X[v, 0] + plane[node, 1] * X[v, 1] + plane[node, 2] * X[v, 2] - plane[node, 3]
        lo, hi = min(lo, s), max(hi, s)
    return lo, hi


@njit(cache=True)
def _classify(tree, root, e, X, j, query, stamp, stack, hits, n, first):
    """Walk query triangle X (B's triangle j, in A's frame) down A's tree from `root`, into the
    subtrees its vertices reach (within e [m] of a plane: both), testing the triangles each
    reached node holds. Appends the intersecting pairs (A's, B's global ids) to hits from n; with
    `first`, ends at the first. `query` tags the triangles tested for this X in stamp, so that one
    referenced from several nodes is tested once. Returns (stack, hits: both possibly grown, and
    the number of pairs appended)."""
    sphere = _bounding_sphere(X)
    m = n
    top = 1
    stack[0] = root
    while top > 0:
        top -= 1
        node = stack[top]
        inner = tree.front[node] >= 0
        lo, hi = _plane_range(tree.plane, node, X) if inner else (-np.inf, np.inf)
        # an inner node holds triangles in its plane: only a triangle touching it can meet them
        if lo <= e and hi >= -e:
            hits, m = _node_hits(tree, node, X, sphere, j, query, stamp, hits, m, first)
            if first and m > n:
                break
        if not inner:
            continue
        if top + 2 > len(stack):
            stack = grow(stack, top + 2)
        if lo <= e:
            stack[top] = tree.back[node]
            top += 1
        if hi >= -e:
            stack[top] = tree.front[node]
            top += 1
    return stack, hits, m - n


@njit(cache=True)
def _node_hits(tree, node, X, sphere, j, query, stamp, hits, n, first):
    """Test query triangle X (B's triangle j; sphere (cx, cy, cz, radius) around it) against the
    triangles `node` holds not yet tested for this query; append the intersecting pairs to hits
    from n (only the first with `first`). Returns (hits, possibly grown, and the new n)."""
    cx, cy, cz, rad = sphere
    for q in range(tree.tri_ptr[node], tree.tri_ptr[node + 1]):
        f = tree.tri_idx[q]
        if stamp[f] == query:  # reached again through a duplicated reference
            continue
        stamp[f] = query
        c = tree.tri_center
        d2 = (c[f, 0] - cx) ** 2 + (c[f, 1] - cy) ** 2 + (c[f, 2] - cz) ** 2
        if d2 > (tree.tri_radius[f] + rad) ** 2:  # `>`, not `not <=`: a nan distance goes on to the exact test
            continue
        if intersect_triangle_triangle(tree.tri_verts[f], X):
            hits = Hits(grow(hits.hit_a, n + 1), grow(hits.hit_b, n + 1))
            hits.hit_a[n], hits.hit_b[n] = f, j
            n += 1
            if first:
                break
    return hits, n
