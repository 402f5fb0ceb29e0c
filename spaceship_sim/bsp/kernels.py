"""The BSP pair test (numba): one model's triangles classified down the other's BSP tree.

Arrays are a bank of several models' trees concatenated (node and triangle ids global, child ids
global); see detector.BSPBank for their layout.
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
    k = len(ma)
    ptr = np.zeros(k + 1, np.int64)
    hit_a = np.empty(64, np.int64)
    hit_b = np.empty(64, np.int64)
    n_hits = 0
    stamp = np.full(len(tri_verts), -1, np.int64)  # last query triangle tested against each triangle
    stack = np.empty(256, np.int64)
    X = np.empty((3, 3))
    query = 0
    for r in range(k):
        a, b = ma[r], mb[r]
        oa = tri_offset[a]
        e = eps[a]
        done = False
        for j in range(tri_offset[b], tri_offset[b + 1]):
            # B's triangle in A's frame
            for v in range(3):
                for i in range(3):
                    X[v, i] = (R[r, i, 0] * tri_verts[j, v, 0] + R[r, i, 1] * tri_verts[j, v, 1]
                               + R[r, i, 2] * tri_verts[j, v, 2] + t[r, i])
            cx = (X[0, 0] + X[1, 0] + X[2, 0]) / 3.0
            cy = (X[0, 1] + X[1, 1] + X[2, 1]) / 3.0
            cz = (X[0, 2] + X[1, 2] + X[2, 2]) / 3.0
            # B's triangle outside A's bounding box meets none of A's triangles
            outside = False
            for i in range(3):
                lo_i = min(X[0, i], min(X[1, i], X[2, i]))
                hi_i = max(X[0, i], max(X[1, i], X[2, i]))
                outside = outside or lo_i > box[a, 1, i] + e or hi_i < box[a, 0, i] - e
            if outside:
                continue
            rad = 0.0
            for v in range(3):
                rad = max(rad, np.sqrt((X[v, 0] - cx) ** 2 + (X[v, 1] - cy) ** 2 + (X[v, 2] - cz) ** 2))
            query += 1
            top = 1
            stack[0] = root[a]
            while top > 0:
                top -= 1
                node = stack[top]
                inner = front[node] >= 0
                lo, hi = -np.inf, np.inf
                if inner:
                    lo, hi = np.inf, -np.inf
                    for v in range(3):
                        s = (plane[node, 0] * X[v, 0] + plane[node, 1] * X[v, 1] + plane[node, 2] * X[v, 2]
                             - plane[node, 3])
                        lo, hi = min(lo, s), max(hi, s)
                # an inner node holds triangles in its plane: only a triangle touching it can meet them
                if lo <= e and hi >= -e:
                    for q in range(tri_ptr[node], tri_ptr[node + 1]):
                        f = tri_idx[q]
                        if stamp[f] == query:  # reached again through a duplicated reference
                            continue
                        stamp[f] = query
                        d2 = (tri_center[f, 0] - cx) ** 2 + (tri_center[f, 1] - cy) ** 2 + (tri_center[f, 2] - cz) ** 2
                        if d2 > (tri_radius[f] + rad) ** 2:
                            continue
                        if intersect_triangle_triangle(tri_verts[f], X):
                            hit_a = _grow(hit_a, n_hits + 1)
                            hit_b = _grow(hit_b, n_hits + 1)
                            hit_a[n_hits] = f - oa
                            hit_b[n_hits] = j - tri_offset[b]
                            n_hits += 1
                            if first:
                                done = True
                                break
                if done:
                    break
                if not inner:
                    continue
                if top + 2 > len(stack):
                    stack = _grow(stack, top + 2)
                if lo <= e:
                    stack[top] = back[node]
                    top += 1
                if hi >= -e:
                    stack[top] = front[node]
                    top += 1
            if done:
                break
        ptr[r + 1] = n_hits
    return ptr, hit_a[:n_hits], hit_b[:n_hits]
