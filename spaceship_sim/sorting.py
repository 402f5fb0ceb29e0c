"""Compiled sorting shared by the kernels: a stable argsort, and a binary min-heap over three
parallel arrays (a key and two ids: the SSV distance query's and the separation intervals'
best-first searches; inlined where they are called).

numba compiles its own np.sort / np.argsort into every function that calls them, ~6 s each on
these machines (measured: an empty cache, one core); the kernels had four such call sites, each
paid again on a first start. One dispatcher, compiled once per key type and cached, serves them
all.
"""
from __future__ import annotations

import numpy as np
from numba import njit

RUN = 16  # runs sorted by insertion before merging


@njit(cache=True)
def argsort_stable(keys):
    """Indices (n,) int64 that sort `keys` (n,) (no NaN) ascending, equal keys in index order:
    np.argsort(keys, kind="stable"). Insertion-sorted runs of RUN, then bottom-up merges."""
    n = len(keys)
    order = np.arange(n)
    for s in range(0, n, RUN):
        for i in range(s + 1, min(s + RUN, n)):
            v = order[i]
            j = i - 1
            while j >= s and keys[order[j]] > keys[v]:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = v
    src, dst = order, np.empty(n, np.int64)
    width = RUN
    while width < n:
        for s in range(0, n, 2 * width):
            m, e = min(s + width, n), min(s + 2 * width, n)
            i, j = s, m
            for o in range(s, e):  # the left run wins ties: stable
                if j >= e or (i < m and not keys[src[j]] < keys[src[i]]):
                    dst[o] = src[i]
                    i += 1
                else:
                    dst[o] = src[j]
                    j += 1
        src, dst = dst, src
        width *= 2
    return src


@njit(cache=True, inline="always")
def heap_push(key, hx, hy, n, g, x, y):
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


@njit(cache=True, inline="always")
def heap_pop(key, hx, hy, n):
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
