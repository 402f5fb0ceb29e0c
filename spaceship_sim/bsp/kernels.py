"""The BSP pair test (numba): one model's triangles classified down the other's BSP tree.

The bank is several models' trees concatenated (node and triangle ids global, child ids global),
taken as one tuple: see detector.BSPArrays for its layout.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.triangles import intersect_triangle_triangle


@njit(cache=True)
def _grow(arr, need):
    if need <= len(arr):
        return arr
    out = np.empty(max(need, 2 * len(arr)), arr.dtype)
    out[:len(arr)] = arr
    return out


@njit(cache=True)
def bsp_collide_pairs(bank, ma, mb, R, t, first):
    """Intersecting triangle pairs of k placed model pairs: B's triangles down A's tree.

    bank   : detector.BSPArrays, the trees of every model
    ma, mb : (k,) int64 models of A (the tree) and B (classified);  R, t : (k, 3, 3), (k, 3)
             B's body frame in A's (x_A = R x_B + t)
    first  : stop each pair at its first intersecting triangle pair
    Returns ptr (k+1,), hit_a (P,), hit_b (P,) int64: CSR of (face of A, face of B), local ids,
    each intersecting pair once.
    """
    tri_verts, tri_offset, box, eps = bank.tri_verts, bank.tri_offset, bank.box, bank.eps
    k = len(ma)
    ptr = np.zeros(k + 1, np.int64)
    hit_a, hit_b = np.empty(64, np.int64), np.empty(64, np.int64)
    n_hits = 0
    stamp = np.full(len(tri_verts), -1, np.int64)  # last query triangle tested against each triangle
    # sized never to grow (a walk pushes each node at most once and finds each triangle at most once):
    # an array reassigned in the walk costs reference counting on every step (measured: half the time)
    stack, found = np.empty(len(bank.front), np.int64), np.empty(len(tri_verts), np.int64)
    X = np.empty((3, 3))
    query = 0
    for r in range(k):
        a, b = ma[r], mb[r]
        for j in range(tri_offset[b], tri_offset[b + 1]):
            _place(tri_verts, j, R, t, r, X)
            if _outside_box(X, box, a, eps[a]):  # then it meets none of A's triangles
                continue
            query += 1
            n = _tree_hits(bank, a, X, query, stamp, stack, found, first)
            if n == 0:
                continue
            hit_a, hit_b = _grow(hit_a, n_hits + n), _grow(hit_b, n_hits + n)
            for i in range(n):
                hit_a[n_hits], hit_b[n_hits] = found[i] - tri_offset[a], j - tri_offset[b]
                n_hits += 1
            if first:
                break
        ptr[r + 1] = n_hits
    return ptr, hit_a[:n_hits], hit_b[:n_hits]


@njit(cache=True)
def _place(tri_verts, j, R, t, r, X):
    """X (3, 3) = triangle j moved by (R[r], t[r]): B's triangle in A's frame."""
    for v in range(3):
        for i in range(3):
            X[v, i] = (R[r, i, 0] * tri_verts[j, v, 0] + R[r, i, 1] * tri_verts[j, v, 1]
                       + R[r, i, 2] * tri_verts[j, v, 2] + t[r, i])


@njit(cache=True)
def _outside_box(X, box, a, e):
    """Triangle X (3, 3) lies beyond one side of model a's bounding box padded by e."""
    outside = False
    for i in range(3):
        lo_i = min(X[0, i], min(X[1, i], X[2, i]))
        hi_i = max(X[0, i], max(X[1, i], X[2, i]))
        outside = outside or lo_i > box[a, 1, i] + e or hi_i < box[a, 0, i] - e
    return outside


@njit(cache=True, inline="always")
def _tree_hits(bank, a, X, query, stamp, stack, found, first):
    """Model a's triangles that triangle X (3, 3) intersects, down a's tree: found[:n] (global
    ids, in traversal order; only the first when `first`); returns n. query: X's stamp number
    (each triangle is tested once per query). Inlined: a call per query triangle cost 30-50% on
    deep first contacts."""
    plane, front, back, tri_ptr = bank.plane, bank.front, bank.back, bank.tri_ptr
    e = bank.eps[a]
    cx = (X[0, 0] + X[1, 0] + X[2, 0]) / 3.0
    cy = (X[0, 1] + X[1, 1] + X[2, 1]) / 3.0
    cz = (X[0, 2] + X[1, 2] + X[2, 2]) / 3.0
    rad = 0.0
    for v in range(3):
        rad = max(rad, np.sqrt((X[v, 0] - cx) ** 2 + (X[v, 1] - cy) ** 2 + (X[v, 2] - cz) ** 2))
    n = 0
    top = 1
    stack[0] = bank.root[a]
    while top > 0:
        top -= 1
        node = stack[top]
        inner = front[node] >= 0
        lo, hi = _plane_range(plane, node, X) if inner else (-np.inf, np.inf)
        # an inner node holds triangles in its plane: only a triangle touching it can meet them
        if lo <= e and hi >= -e and tri_ptr[node] < tri_ptr[node + 1]:
            n = _node_hits(bank, node, X, (cx, cy, cz, rad), query, stamp, found, n, first)
            if first and n:
                break
        if not inner:
            continue
        if lo <= e:
            stack[top] = back[node]
            top += 1
        if hi >= -e:
            stack[top] = front[node]
            top += 1
    return n


@njit(cache=True, inline="always")
def _plane_range(plane, node, X):
    """(lowest, highest) signed distance of triangle X's vertices from node's plane."""
    lo, hi = np.inf, -np.inf
    for v in range(3):
        s = plane[node, 0] * X[v, 0] + plane[node, 1] * X[v, 1] + plane[node, 2] * X[v, 2] - plane[node, 3]
        lo, hi = min(lo, s), max(hi, s)
    return lo, hi


@njit(cache=True, inline="always")
def _node_hits(bank, node, X, sphere, query, stamp, found, n, first):
    """Node's triangles that triangle X (3, 3), inside `sphere` (cx, cy, cz, radius), intersects,
    appended to found[n:] (only one when `first`); each triangle tested once per query (stamp).
    Returns the new n."""
    tri_idx, tri_verts, tri_center, tri_radius = bank.tri_idx, bank.tri_verts, bank.tri_center, bank.tri_radius
    cx, cy, cz, rad = sphere
    for q in range(bank.tri_ptr[node], bank.tri_ptr[node + 1]):
        f = tri_idx[q]
        if stamp[f] == query:  # reached again through a duplicated reference
            continue
        stamp[f] = query
        d2 = (tri_center[f, 0] - cx) ** 2 + (tri_center[f, 1] - cy) ** 2 + (tri_center[f, 2] - cz) ** 2
        if d2 > (tri_radius[f] + rad) ** 2:
            continue
        if intersect_triangle_triangle(tri_verts[f], X):
            found[n] = f
            n += 1
            if first:
                break
    return n
