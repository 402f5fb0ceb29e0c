"""A uniform grid of the ships' reach balls over a box, updated one ship at a time.

Each ship sits in the cell of its ball's centre, clamped into the grid's box: clamping is
monotone, so a ship whose centre lies in a query's coordinate range is in its clamped cell
range too, and ships outside the box only crowd the border cells. Cells hold doubly linked
lists of ships, so moving a ship is O(1); cells are stored z fastest, so a query's cells along
z are adjacent in memory. A query visits the cells within (query radius + largest ball radius)
of its centre and tests the balls there; when that range holds more cells than there are
ships, it scans the ships instead.

The box and the cell size are set at a rebuild (O(n) inserts, no pair work): cells of 2 × the
largest ball radius (a query then covers 2 to 3 cells a side), enlarged where needed to keep
the cell count within CELLS_PER_SHIP × n. It happens when the largest radius leaves [h/4, h] or
more than 1/16 of the ships are outside the box.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry.spheres import overlap_sphere_sphere

MIN_CELL = 1e-9  # [m], the cell size when every ball has radius 0
CELLS_PER_SHIP = 4
NEXT, PREV = 0, 1  # link[i]: neighbours in its cell's list


@njit(cache=True, inline="always")
def _axis_cell(x, origin, h, dim):
    """Cell index along one axis, clamped to [0, dim) (in float first: no int overflow)."""
    return int(math.floor(min(max((x - origin) / h, 0.0), dim - 1.0)))


@njit(cache=True)
def _is_outside(x, origin, h, dim):
    return x < origin or (x - origin) / h >= dim


@njit(cache=True)
def grid_insert(ships, ball, origin, h, dims, home, outside, heads, link):
    """Put these ships into the cells of their ball centres; returns how many are outside the box."""
    count = 0
    for i in ships:
        q = 0
        outside[i] = False
        for a in range(3):
            q = q * dims[a] + _axis_cell(ball[i, a], origin[a], h, dims[a])
            outside[i] |= _is_outside(ball[i, a], origin[a], h, dims[a])
        count += outside[i]
        home[i] = q
        j = heads[q]
        link[i, NEXT], link[i, PREV] = j, -1
        if j >= 0:
            link[j, PREV] = i
        heads[q] = i
    return count


@njit(cache=True)
def grid_remove(ships, home, outside, heads, link):
    """Take these ships (all in the grid) out of their cells; returns how many were outside the box."""
    count = 0
    for i in ships:
        after, before = link[i, NEXT], link[i, PREV]
        if before >= 0:
            link[before, NEXT] = after
        else:
            heads[home[i]] = after
        if after >= 0:
            link[after, PREV] = before
        count += outside[i]
    return count


@njit(cache=True)
def crowded(n_outside, n):
    """More ships outside the grid's box than a rebuild tolerates."""
    return n_outside > n // 16 + 8


@njit(cache=True)
def cell_size_wanted(rmax):
    """The cell size a rebuild aims at for the largest ball radius rmax: 2 rmax."""
    return max(2.0 * rmax, MIN_CELL)


@njit(cache=True)
def cells_fit(rmax, h_want):
    """The cells still suit the largest ball radius: cell_size_wanted within [h_want / 2, 2 h_want]."""
    return 0.5 * h_want <= cell_size_wanted(rmax) <= 2.0 * h_want


@njit(cache=True)
def grid_move(ships, ball, origin, h, dims, n_outside, home, outside, heads, link):
    """These ships re-filed in the cells of their new ball centres; returns the new count of
    ships outside the box."""
    n_outside -= grid_remove(ships, home, outside, heads, link)
    return n_outside + grid_insert(ships, ball, origin, h, dims, home, outside, heads, link)


@njit(cache=True)
def grid_query(ships, ball, rmax, origin, h, dims, batch, heads, link, out_a, out_b):
    """Pairs of query ship i (from `ships`, all gridded) with every gridded ship j whose ball
    meets i's; a pair of two query ships only from the smaller one, so each pair once (batch:
    (n,) bool all False, marks the query ships meanwhile). Writes the first len(out_a) pairs
    (min, max) into out_a, out_b and returns how many there are. rmax >= every gridded ball radius.
    One loop body for both ways of finding candidates (cells' lists, or all ships when the
    cells would outnumber them): numba compiles a function called from two loops ~2× slower."""
    n, cnt, cap = len(batch), 0, len(out_a)
    for i in ships:
        batch[i] = True
    for i in ships:
        cx, cy, cz, ri = ball[i, 0], ball[i, 1], ball[i, 2], ball[i, 3]
        reach = ri + rmax
        x0, x1 = _axis_cell(cx - reach, origin[0], h, dims[0]), _axis_cell(cx + reach, origin[0], h, dims[0])
        y0, y1 = _axis_cell(cy - reach, origin[1], h, dims[1]), _axis_cell(cy + reach, origin[1], h, dims[1])
        z0, z1 = _axis_cell(cz - reach, origin[2], h, dims[2]), _axis_cell(cz + reach, origin[2], h, dims[2])
        scan = float(x1 - x0 + 1) * float(y1 - y0 + 1) * float(z1 - z0 + 1) > n
        if scan:
            x1, y1, z1 = x0, y0, z0  # one pass over ships 0..n-1
        for x in range(x0, x1 + 1):
            for y in range(y0, y1 + 1):
                row = (x * dims[1] + y) * dims[2]
                for q in range(row + z0, row + z1 + 1):
                    j = 0 if scan else heads[q]
                    while j >= 0:
                        if j != i and not (batch[j] and j < i):
                            if overlap_sphere_sphere(ball[j, 0] - cx, ball[j, 1] - cy, ball[j, 2] - cz, ri, ball[j, 3]):
                                if cnt < cap:
                                    out_a[cnt] = min(i, j)
                                    out_b[cnt] = max(i, j)
                                cnt += 1
                        if scan:
                            j = j + 1 if j + 1 < n else -1
                        else:
                            j = link[j, NEXT]
    for i in ships:
        batch[i] = False
    return cnt


@njit(cache=True)
def grid_order(heads, link, order):
    """Every gridded ship into `order`, cell by cell in memory order."""
    k = 0
    for q in range(len(heads)):
        j = heads[q]
        while j >= 0:
            order[k] = j
            k += 1
            j = link[j, NEXT]


class ShipGrid:
    """The grid of n ships' balls (ball (n, 4): centre x, y, z and radius; owned by the caller)."""

    def __init__(self, n: int):
        self.n = n
        self.home = np.zeros(n, np.int64)
        self.outside = np.zeros(n, np.bool_)
        self.link = np.full((n, 2), -1, np.int64)
        self.batch = np.zeros(n, np.bool_)
        self.h_want = None  # 2 × the largest radius at the last rebuild [m]
        self.rebuilds = 0
        # the compiled re-ball's query room (SpaceTime._reball grows it)
        self.out_a, self.out_b = np.empty(8 * n + 256, np.int64), np.empty(8 * n + 256, np.int64)

    def move(self, ships, ball, rmax=None) -> None:
        """These ships' balls changed (every ship's ball must be set before the first call); rmax:
        the largest ball radius when the caller has it (None: computed here)."""
        self.rmax = float(ball[:, 3].max() if rmax is None else rmax) if len(ball) else 0.0
        if self.h_want is None or not cells_fit(self.rmax, self.h_want):
            self.rebuild(ball)
            return
        self.n_outside = grid_move(ships, ball, self.origin, self.h, self.dims, self.n_outside, self.home,
                                   self.outside, self.heads, self.link)
        if crowded(self.n_outside, self.n):
            self.rebuild(ball)

    def rebuild(self, ball) -> None:
        """New box around the centres (with room to move) and cell size (from self.rmax); every
        ship inserted."""
        want = cell_size_wanted(self.rmax)
        lo = np.array([ball[:, a].min() for a in range(3)])  # per column: ~10× faster than axis=0
        extent = np.array([ball[:, a].max() for a in range(3)]) - lo
        margin = 0.125 * extent + want
        self.origin, extent = lo - margin, extent + 2 * margin
        self.h_want = want
        self.h = max(want, float(np.prod(extent) / (CELLS_PER_SHIP * self.n)) ** (1 / 3))
        self.dims = np.floor(extent / self.h).astype(np.int64) + 1
        self.heads = np.full(int(np.prod(self.dims)), -1, np.int64)
        self.rebuilds += 1
        self.n_outside = grid_insert(np.arange(self.n, dtype=np.int64), ball, self.origin, self.h, self.dims,
                                     self.home, self.outside, self.heads, self.link)

    def cell_order(self):
        """(n,) int64: the ships in the order of their cells in memory (x, then y, then z)."""
        order = np.empty(self.n, np.int64)
        grid_order(self.heads, self.link, order)
        return order

    def pairs(self, ships, ball):
        """(a, b) int64 arrays, a < b: every pair of a query ship with a ship whose ball meets its
        ball, each pair once (call `move` for the query ships first)."""
        cap = 8 * len(ships) + 256
        while True:
            out_a, out_b = np.empty(cap, np.int64), np.empty(cap, np.int64)
            cnt = grid_query(ships, ball, self.rmax, self.origin, self.h, self.dims, self.batch, self.heads,
                             self.link, out_a, out_b)
            if cnt <= cap:
                break
            cap = cnt
        return out_a[:cnt], out_b[:cnt]
