"""Sweep-and-prune with coherence (I-COLLIDE, Cohen et al. 1995).

Each ship is enclosed in a fixed-size axis-aligned cube of half-size r (plus a rounding margin),
which contains it at any orientation, so only translation moves the cube. Per axis, the 2n cube
endpoints are kept in a list sorted by (value, is_max) — minima first on ties, so "min of a
before max of b" means exactly lo_a <= hi_b. Each call refreshes the values and re-sorts every
list by insertion sort: with frame-to-frame coherence almost sorted, so nearly linear.

Overlap flags toggled on swaps. A swap that moves a's minimum left past b's maximum starts
their overlap on that axis; a's maximum left past b's minimum ends it. Rather than a counter
per pair (n² storage, or a table holding every pair that overlaps on one axis — millions at
n = 10,000), the start event tests the other two axes directly on the current values and sets
the pair's flag iff all three overlap; the end event clears it. The flags live in a hash set of
the pairs overlapping on all three axes. The last event of a pair decides its flag, and it reads
final values (an end leaves that axis final and apart; a start reads the other axes' final
values), so after the three sorts the set holds exactly the pairs whose cubes overlap. Those
pairs then get the exact sphere test.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .base import BroadPhase, overlap_mask, pairs_from_keys

EMPTY = -1
MARGIN_REL = 1e-9  # cube half-size r·(1 + MARGIN_REL) + MARGIN_ABS: rounding in p ± r never
MARGIN_ABS = 1e-9  # makes a cube miss a sphere contact the exact test would report [m]


@njit(cache=True, inline="always")
def _slot(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))


@njit(cache=True)
def _set_insert(table, key):
    """Insert key into the linear-probing hash set (room assumed); True if it was absent."""
    mask = len(table) - 1
    i = _slot(key, mask)
    while table[i] != EMPTY:
        if table[i] == key:
            return False
        i = (i + 1) & mask
    table[i] = key
    return True


@njit(cache=True)
def _set_add(table, count, key):
    """Insert key, doubling the table first when it would pass half full; returns the table."""
    if 2 * (count[0] + 1) > len(table):
        old = table
        table = np.full(2 * len(old), EMPTY, np.int64)
        for x in old:
            if x != EMPTY:
                _set_insert(table, x)
    if _set_insert(table, key):
        count[0] += 1
    return table


@njit(cache=True)
def _set_remove(table, count, key):
    """Remove key if present (backward-shift deletion keeps probe chains intact)."""
    mask = len(table) - 1
    i = _slot(key, mask)
    while table[i] != key:
        if table[i] == EMPTY:
            return
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        if table[j] == EMPTY:
            break
        h = _slot(table[j], mask)
        # the entry at j may fill the hole at i unless its home slot lies cyclically in (i, j]
        if (i <= j and i < h <= j) or (i > j and (h > i or h <= j)):
            continue
        table[i] = table[j]
        i = j
    table[i] = EMPTY
    count[0] -= 1


@njit(cache=True, inline="always")
def _cubes_overlap(lo, hi, a, b):
    return (lo[a, 0] <= hi[b, 0] and lo[b, 0] <= hi[a, 0] and lo[a, 1] <= hi[b, 1] and lo[b, 1] <= hi[a, 1]
            and lo[a, 2] <= hi[b, 2] and lo[b, 2] <= hi[a, 2])


@njit(cache=True)
def _sap_init(lo, hi, order0, table, count):
    """Fill the set by one sweep along axis 0 (order0: endpoint ids sorted on that axis)."""
    n = lo.shape[0]
    open_ = np.empty(n, np.int64)
    where = np.empty(n, np.int64)
    m = 0
    for e in order0:
        a = e >> 1
        if e & 1:  # max: a leaves the open list
            last = open_[m - 1]
            open_[where[a]] = last
            where[last] = where[a]
            m -= 1
        else:
            for q in range(m):
                b = open_[q]
                if _cubes_overlap(lo, hi, a, b):
                    table = _set_add(table, count, min(a, b) * n + max(a, b))
            open_[m] = a
            where[a] = m
            m += 1
    return table


@njit(cache=True)
def _sap_update(lo, hi, ep, val, table, count, deg):
    """Refresh endpoint values, insertion-sort each axis, toggle flags on swaps.

    ep, val : (3, 2n) endpoint ids (2·ship + is_max) and values, sorted per axis.
    deg : (n,) flagged pairs per ship; a clear needs no hash probe when either ship has none
    (most end events, since few ships overlap anything).
    Returns (table, swaps).
    """
    n = lo.shape[0]
    swaps = 0
    for k in range(3):
        for idx in range(2 * n):
            e = ep[k, idx]
            val[k, idx] = hi[e >> 1, k] if e & 1 else lo[e >> 1, k]
        for idx in range(1, 2 * n):
            e = ep[k, idx]
            v = val[k, idx]
            emax = e & 1
            j = idx - 1
            while j >= 0 and (val[k, j] > v or (val[k, j] == v and (ep[k, j] & 1) > emax)):
                f = ep[k, j]
                if emax != (f & 1):
                    a, b = min(e >> 1, f >> 1), max(e >> 1, f >> 1)
                    before = count[0]
                    if emax == 0 and _cubes_overlap(lo, hi, a, b):  # start on axis k, others read now
                        table = _set_add(table, count, a * n + b)
                    elif deg[a] > 0 and deg[b] > 0:
                        _set_remove(table, count, a * n + b)
                    if count[0] != before:
                        step = count[0] - before
                        deg[a] += step
                        deg[b] += step
                ep[k, j + 1] = f
                val[k, j + 1] = val[k, j]
                j -= 1
                swaps += 1
            ep[k, j + 1] = e
            val[k, j + 1] = v
    return table, swaps


class SweepPrune(BroadPhase):
    """I-COLLIDE sweep-and-prune over fixed-size cubes; velocities and invalidations are not needed."""

    name = "sweep_prune"

    def __init__(self, radius, *, min_resolution):
        super().__init__(radius, min_resolution=min_resolution)
        self.half = self.radius * (1 + MARGIN_REL) + MARGIN_ABS
        self.ep = None
        self.count = np.zeros(1, np.int64)
        self.table = np.full(1024, EMPTY, np.int64)

    def _find_pairs(self, t, pos, vel, accel_bound) -> np.ndarray:
        lo, hi = pos - self.half[:, None], pos + self.half[:, None]
        swaps = 0
        if self.ep is None:
            self._init(lo, hi)
        else:
            self.table, swaps = _sap_update(lo, hi, self.ep, self.val, self.table, self.count, self.deg)
        keys = self.table[self.table != EMPTY]
        a, b = keys // self.n, keys % self.n
        keys = keys[overlap_mask(pos, self.radius, a, b)]
        self.last_stats = {"swaps": int(swaps), "cube_pairs": len(a), "pairs_found": len(keys)}
        return pairs_from_keys(keys, self.n)

    def _init(self, lo, hi):
        n = self.n
        ids = np.arange(2 * n, dtype=np.int64)
        is_max = ids & 1
        self.ep = np.empty((3, 2 * n), np.int64)
        self.val = np.empty((3, 2 * n), np.float64)
        for k in range(3):
            v = np.where(is_max == 1, hi[ids >> 1, k], lo[ids >> 1, k])
            order = np.lexsort((is_max, v))
            self.ep[k], self.val[k] = ids[order], v[order]
        self.table = _sap_init(lo, hi, self.ep[0], self.table, self.count)
        keys = self.table[self.table != EMPTY]
        self.deg = np.bincount(np.concatenate([keys // n, keys % n]), minlength=n).astype(np.int64)
