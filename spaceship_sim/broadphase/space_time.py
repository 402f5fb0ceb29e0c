"""Space-time bounds (Hubbard 1996): pairs scheduled in a priority queue of wake-up times.

The bound. Between invalidations a ship's centre obeys |d²x/dt²| <= A, so τ seconds after a
moment where it was at x with velocity v, the ship lies inside the sphere centred x + v·τ of
radius r + A·τ²/2 (Hubbard's parabolic horn). For a pair predicted at time t with relative
position d = p_j - p_i, relative velocity w, radii sum R and A = A_i + A_j, the centre distance
at t + τ is at least  d̂·(d + w·τ) - A·τ²/2 = |d| - c·τ - A·τ²/2  with closing speed
c = -d̂·w (projection onto a fixed unit vector never exceeds the length). The spheres can only
touch once that lower bound reaches R, i.e. not before the positive root τ* of
A·τ²/2 + c·τ - (|d| - R) = 0. This is a conservative bound on the earliest root of Hubbard's
quartic: the pair sleeps until t + τ*, and when it wakes it is tested exactly and re-predicted
from the current state. A pair that overlaps at a sample time therefore woke at or before it.

Scaling (n = 10,000 cannot schedule n² pairs). Time is cut into horizons [t_b, t_b + H]. At
t_b every ship's whole horizon fits in a "reach ball" centred at its position, radius
ρ = r + |v|·H + A·H²/2; a uniform grid (numba) gathers the pairs whose reach balls meet, and
only those are scheduled. Any other pair's spheres stay apart until t_b + H, where everything
is gathered afresh: far pairs all "wake at H" together. H trades the restart (O(n)) against
the schedule's size (grows like H³ once reach exceeds ship spacing): it aims at one restart
every `restart_calls` calls and shrinks while more than `max_pairs_per_ship` pairs per ship
get scheduled.

Invalidation (velocity jumps, new controls, a larger acceleration bound than predictions
assumed) breaks both the pair predictions and the ship's reach ball. At the next call, with the
current state, each invalidated ship's scheduled pairs are woken at once, and it gets a new
reach ball centred at its current position covering the rest of the horizon; pairs with every
ship whose current reach ball meets it (the restart's grid for ships still on their original ball,
a direct test against ships already moved) are added to the schedule. When too many ships
have moved, the horizon is simply restarted.

Sampling. Exactness holds at the times the pipeline calls (every pair due by t is tested at
t), so correctness needs no particular call spacing; min_resolution (the longest spacing the
pipeline uses) only seeds the horizon, H = restart_calls × min_resolution, after which H
follows the measured spacing of calls. A pair overlapping now is due again at the next call.
The exact test at sample times uses the same predicate as the brute-force reference.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .base import BroadPhase, EMPTY_PAIRS, overlap_sphere_sphere, pairs_from_keys

NEG_INF = -np.inf


@njit(cache=True)
def _sift_up(heap, hpos, key, i):
    """Move heap[i] towards the root of the indexed min-heap ordered by key[heap[.]]."""
    p = heap[i]
    k = key[p]
    while i > 0:
        parent = (i - 1) >> 1
        q = heap[parent]
        if key[q] <= k:
            break
        heap[i] = q
        hpos[q] = i
        i = parent
    heap[i] = p
    hpos[p] = i


@njit(cache=True)
def _sift_down(heap, hpos, key, i, size):
    p = heap[i]
    k = key[p]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and key[heap[c + 1]] < key[heap[c]]:
            c += 1
        q = heap[c]
        if key[q] >= k:
            break
        heap[i] = q
        hpos[q] = i
        i = c
    heap[i] = p
    hpos[p] = i


@njit(cache=True)
def _wake_delay(pos, vel, accel, radius, i, j):
    """Conservative lower bound τ* >= 0 [s] on the time until spheres i, j can touch (see module doc)."""
    dx = pos[j, 0] - pos[i, 0]
    dy = pos[j, 1] - pos[i, 1]
    dz = pos[j, 2] - pos[i, 2]
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    gap = dist - (radius[i] + radius[j])
    if gap <= 0.0:
        return 0.0
    c = -((vel[j, 0] - vel[i, 0]) * dx + (vel[j, 1] - vel[i, 1]) * dy + (vel[j, 2] - vel[i, 2]) * dz) / dist
    a = accel[i] + accel[j]
    disc = math.hypot(c, math.sqrt(2.0 * a * gap))  # sqrt(c² + 2·a·gap) without underflow of c²
    if c > 0.0:
        tau = 2.0 * gap / (c + disc)  # stable form when closing
    elif a > 0.0:
        tau = (disc - c) / a
    else:
        return np.inf  # separating without acceleration: never
    return tau * (1.0 - 1e-9)  # round towards earlier: rounding must never make it late


@njit(cache=True)
def _st_step(t, pos, vel, accel, radius, pa, pb, wake, heap, hpos, size, buf, out):
    """Pop every pair due by t, test it exactly, re-predict it, push it back.

    Returns (heap size, pairs examined, pairs overlapping); overlapping pair ids in out[:k].
    """
    m = 0
    while size > 0 and wake[heap[0]] <= t:
        buf[m] = heap[0]
        m += 1
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            hpos[heap[0]] = 0
            _sift_down(heap, hpos, wake, 0, size)
    k = 0
    for q in range(m):
        p = buf[q]
        i, j = pa[p], pb[p]
        if overlap_sphere_sphere(pos, radius, i, j):
            out[k] = p
            k += 1
            wake[p] = t  # due again at the next call
        else:
            wake[p] = t + _wake_delay(pos, vel, accel, radius, i, j)
        heap[size] = p
        hpos[p] = size
        _sift_up(heap, hpos, wake, size)
        size += 1
    return size, m, k


@njit(cache=True)
def _st_schedule(new_a, new_b, dedup, dirty, pa, pb, head, nxt, wake, heap, hpos, n_pairs, size):
    """Add pairs (new_a[k] < new_b[k]) due at once, skipping ones already scheduled when dedup;
    then make every scheduled pair of the `dirty` ships due at once. Returns (n_pairs, size)."""
    for k in range(len(new_a)):
        a, b = new_a[k], new_b[k]
        if dedup:
            p = head[a]
            found = False
            while p >= 0:
                if pa[p] == a:
                    if pb[p] == b:
                        found = True
                        break
                    p = nxt[p, 0]
                else:
                    p = nxt[p, 1]
            if found:
                continue
        p = n_pairs
        n_pairs += 1
        pa[p], pb[p] = a, b
        nxt[p, 0], nxt[p, 1] = head[a], head[b]
        head[a], head[b] = p, p
        wake[p] = -np.inf
        heap[size] = p
        hpos[p] = size
        _sift_up(heap, hpos, wake, size)
        size += 1
    for s in dirty:
        p = head[s]
        while p >= 0:
            wake[p] = -np.inf
            _sift_up(heap, hpos, wake, hpos[p])
            p = nxt[p, 0] if pa[p] == s else nxt[p, 1]
    return n_pairs, size


@njit(cache=True)
def _ball_pairs(ids_a, c_a, r_a, ids_b, c_b, r_b):
    """Pairs (min, max) of ship ids ids_a[k] != ids_b[l] whose balls (c, r) meet; two passes
    (count, fill) so the output is allocated once."""
    cnt = 0
    for rep in range(2):
        if rep == 1:
            lo = np.empty(cnt, np.int64)
            hi = np.empty(cnt, np.int64)
            cnt = 0
        for k in range(len(ids_a)):
            for l in range(len(ids_b)):
                if ids_a[k] == ids_b[l]:
                    continue
                dx = c_b[l, 0] - c_a[k, 0]
                dy = c_b[l, 1] - c_a[k, 1]
                dz = c_b[l, 2] - c_a[k, 2]
                rr = r_a[k] + r_b[l]
                if dx * dx + dy * dy + dz * dz <= rr * rr:
                    if rep == 1:
                        lo[cnt] = min(ids_a[k], ids_b[l])
                        hi[cnt] = max(ids_a[k], ids_b[l])
                    cnt += 1
    return lo, hi


@njit(cache=True)
def _grid_build(c, origin, cell, dims):
    """Uniform grid over points c (n, 3): counting sort into cells.
    Returns start (ncells + 1,) and items (n,) with cell q's points items[start[q]:start[q+1]]."""
    n = c.shape[0]
    key = np.empty(n, np.int64)
    start = np.zeros(dims[0] * dims[1] * dims[2] + 1, np.int64)
    for i in range(n):
        q = 0
        for a in range(3):
            ca = min(max(int((c[i, a] - origin[a]) / cell), 0), dims[a] - 1)
            q = q * dims[a] + ca
        key[i] = q
        start[q + 1] += 1
    for q in range(1, len(start)):
        start[q] += start[q - 1]
    cursor = start[:-1].copy()
    items = np.empty(n, np.int64)
    for i in range(n):
        items[cursor[key[i]]] = i
        cursor[key[i]] += 1
    return start, items


@njit(cache=True)
def _grid_pairs(qid, qc, qr, c, r, skip, upper, origin, cell, dims, start, items, out_a, out_b):
    """Pairs (min, max) of query ship qid[k] (ball qc[k], qr[k]) with gridded ship j (ball c[j],
    r[j]) whose balls meet; j skipped when skip[j] or j == qid[k].
    upper: the all-pairs query, qid must equal items (queries in grid order); each pair is then
    found once, from the ship earlier in grid order (half the scan: the ball test is symmetric).
    Writes the first len(out_a) pairs into out_a, out_b; returns how many there are in all."""
    rmax = r.max() if len(r) else 0.0
    cap = len(out_a)
    cnt = 0
    for k in range(len(qid)):
        i = qid[k]
        reach = qr[k] + rmax
        x0 = max(math.floor((qc[k, 0] - reach - origin[0]) / cell), 0)
        x1 = min(math.floor((qc[k, 0] + reach - origin[0]) / cell), dims[0] - 1)
        y0 = max(math.floor((qc[k, 1] - reach - origin[1]) / cell), 0)
        y1 = min(math.floor((qc[k, 1] + reach - origin[1]) / cell), dims[1] - 1)
        z0 = max(math.floor((qc[k, 2] - reach - origin[2]) / cell), 0)
        z1 = min(math.floor((qc[k, 2] + reach - origin[2]) / cell), dims[2] - 1)
        own_row = -1
        if upper:
            # the cell row of the query ship, clamped exactly as _grid_build placed it
            ox = min(max(int((qc[k, 0] - origin[0]) / cell), 0), dims[0] - 1)
            oy = min(max(int((qc[k, 1] - origin[1]) / cell), 0), dims[1] - 1)
            own_row = ox * dims[1] + oy
        for x in range(x0, x1 + 1):
            for y in range(y0, y1 + 1):
                if x * dims[1] + y < own_row:
                    continue  # earlier rows: their ships found this pair
                row = (x * dims[1] + y) * dims[2]
                # cells z0..z1 of one row are contiguous in items
                first = start[row + z0]
                if x * dims[1] + y == own_row:
                    first = k + 1
                for s in range(first, start[row + z1 + 1]):
                    j = items[s]
                    if j == i or skip[j]:
                        continue
                    dx = c[j, 0] - qc[k, 0]
                    dy = c[j, 1] - qc[k, 1]
                    dz = c[j, 2] - qc[k, 2]
                    rr = qr[k] + r[j]
                    if dx * dx + dy * dy + dz * dz <= rr * rr:
                        if cnt < cap:
                            out_a[cnt] = min(i, j)
                            out_b[cnt] = max(i, j)
                        cnt += 1
    return cnt


class ReachGrid:
    """Uniform grid over the reach balls (centres c (n, 3), radii r (n,)) of a restart."""

    def __init__(self, c, r, max_cells_per_ship=4):
        self.c, self.r = c, r
        # per-column min/max: numpy's axis-0 reduction over an (n, 3) array is ~10× slower
        self.origin = np.array([c[:, a].min() for a in range(3)])
        extent = np.maximum(np.array([c[:, a].max() for a in range(3)]) - self.origin, 1e-9)
        cell = max(2.0 * float(r.max()), 1e-9)
        # big enough that the cell array stays O(n) whatever the spread of the ships
        cell = max(cell, float(np.prod(extent) / (max_cells_per_ship * len(c))) ** (1 / 3))
        self.cell = cell
        self.dims = (np.floor(extent / cell).astype(np.int64) + 1)
        self.start, self.items = _grid_build(c, self.origin, cell, self.dims)

    def all_pairs(self):
        """Every pair of gridded ships whose balls meet, each once: (a, b) int64, a < b."""
        q = self.items
        return self._pairs(q, self.c[q], self.r[q], np.zeros(len(q), np.bool_), True)

    def pairs(self, qid, qc, qr, skip):
        """(a, b) int64 arrays, a < b: query ships qid (m,) with balls qc (m, 3), qr (m,) against
        the gridded ships not in skip (n,) bool."""
        return self._pairs(qid, qc, qr, skip, False)

    def _pairs(self, qid, qc, qr, skip, upper):
        """(a, b) int64 arrays, a < b: query ships qid (m,) with balls qc (m, 3), qr (m,) against
        the gridded ships not in skip (n,) bool."""
        cap = 4 * len(qid) + 256
        while True:
            out_a, out_b = np.empty(cap, np.int64), np.empty(cap, np.int64)
            cnt = _grid_pairs(qid, qc, qr, self.c, self.r, skip, upper, self.origin, self.cell, self.dims,
                              self.start, self.items, out_a, out_b)
            if cnt <= cap:
                return out_a[:cnt], out_b[:cnt]
            cap = cnt


def reach_radius(radius, vel, accel, span):
    """Radius [m] of the ball around the current centre that holds the ship for `span` seconds."""
    return radius + np.linalg.norm(vel, axis=1) * span + 0.5 * accel * span * span


class SpaceTime(BroadPhase):
    """Hubbard's space-time bounds with a priority queue of pair wake-up times.

    horizon : initial horizon H [s] (None: restart_calls × min_resolution), adapted after each
    restart unless adaptive=False (see the module doc for the rule).
    restart_calls : calls per horizon the adaptation aims at [-].
    max_pairs_per_ship : above this many scheduled pairs per ship the horizon shrinks [-].
    last_stats : pairs_examined (popped and tested), pairs_scheduled, pairs_found, pairs_added
    (by invalidations this call), restart (bool), horizon [s].
    """

    name = "space_time"

    def __init__(self, radius, *, min_resolution, horizon=None, adaptive=True, restart_calls=16,
                 max_pairs_per_ship=4.0):
        super().__init__(radius, min_resolution=min_resolution)
        self.restart_calls, self.max_pairs = int(restart_calls), float(max_pairs_per_ship)
        self.horizon = float(horizon) if horizon is not None else self.restart_calls * self.min_resolution
        self.adaptive = adaptive
        self.call_dt = self.min_resolution  # running mean of the spacing of calls [s]
        self.prev_t = None
        self.dirty = np.zeros(self.n, bool)
        self.horizon_end = -np.inf
        self.restarts = 0
        self.a_ref = np.zeros(self.n)
        self.moved_count = 0
        self._alloc(0)

    def _alloc(self, cap):
        self.cap = cap
        self.pa = np.zeros(cap, np.int64)
        self.pb = np.zeros(cap, np.int64)
        self.nxt = np.full((cap, 2), -1, np.int64)
        self.wake = np.zeros(cap, np.float64)
        self.heap = np.zeros(cap, np.int64)
        self.hpos = np.zeros(cap, np.int64)
        self.buf = np.zeros(cap, np.int64)
        self.out = np.zeros(cap, np.int64)
        self.head = np.full(self.n, -1, np.int64)
        self.n_pairs = self.size = 0

    def _grow(self, need):
        """Make room for `need` pairs, keeping the schedule (pair ids stay valid)."""
        if need <= self.cap:
            return
        cap = max(need, 2 * self.cap)
        for name in ("pa", "pb", "wake", "heap", "hpos", "buf", "out"):
            old = getattr(self, name)
            new = np.zeros(cap, old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)
        nxt = np.full((cap, 2), -1, np.int64)
        nxt[: len(self.nxt)] = self.nxt
        self.nxt = nxt
        self.cap = cap

    def invalidate(self, ships) -> None:
        self.dirty[self._check_ships(ships)] = True

    # --- the frame's work ------------------------------------------------------------------
    def _find_pairs(self, t, pos, vel, accel) -> np.ndarray:
        if self.prev_t is not None and t > self.prev_t:
            self.call_dt += 0.1 * (t - self.prev_t - self.call_dt)
        self.prev_t = t
        # predictions and reach balls assume the bound a_ref[i]; a larger one invalidates them
        self.dirty |= accel > self.a_ref
        restart = t >= self.horizon_end or self.moved_count + self.dirty.sum() > max(self.n // 4, 8)
        added = 0
        if restart:
            self._restart(t, pos, vel, accel)
        elif self.dirty.any():
            added = self._update_dirty(t, pos, vel, accel)
        self.size, m, k = _st_step(t, pos, vel, self.a_ref, self.radius, self.pa, self.pb, self.wake,
                                   self.heap, self.hpos, self.size, self.buf, self.out)
        ids = self.out[:k]
        pairs = pairs_from_keys(self.pa[ids] * self.n + self.pb[ids], self.n) if k else EMPTY_PAIRS.copy()
        self.last_stats = {"pairs_examined": int(m), "pairs_scheduled": int(self.n_pairs),
                           "pairs_found": len(pairs), "pairs_added": int(added), "restart": bool(restart),
                           "horizon": self.horizon}
        return pairs

    def _restart(self, t, pos, vel, accel):
        """New horizon from t: gather the pairs whose reach balls meet, all due at once."""
        if self.adaptive and self.restarts:
            if self.n_pairs > self.max_pairs * self.n:
                self.horizon *= 0.7
            else:
                self.horizon = min(1.4 * self.horizon, self.restart_calls * self.call_dt)
            self.horizon = max(self.horizon, 2 * self.call_dt)
        self.restarts += 1
        span = self.horizon
        self.a_ref = accel.copy()
        self.tree_c, self.tree_r = pos.copy(), reach_radius(self.radius, vel, accel, span)
        self.grid = ReachGrid(self.tree_c, self.tree_r)
        a, b = self.grid.all_pairs()
        self._alloc(max(len(a) + self.n, 1024))
        self.n_pairs, self.size = _st_schedule(a, b, False,
                                               np.zeros(0, np.int64), self.pa, self.pb, self.head, self.nxt,
                                               self.wake, self.heap, self.hpos, 0, 0)
        self.horizon_end = t + span
        self.moved = np.zeros(self.n, bool)
        self.moved_count = 0
        self.ball_c, self.ball_r = self.tree_c.copy(), self.tree_r.copy()
        self.dirty[:] = False

    def _update_dirty(self, t, pos, vel, accel) -> int:
        """New reach balls for the dirty ships, their new partners scheduled, their pairs due now."""
        d = np.flatnonzero(self.dirty)
        self.dirty[:] = False
        self.a_ref[d] = accel[d]  # every prediction involving d is redone below, from now
        self.ball_c[d] = pos[d]
        self.ball_r[d] = reach_radius(self.radius[d], vel[d], self.a_ref[d], self.horizon_end - t)
        self.moved_count += int((~self.moved[d]).sum())
        self.moved[d] = True
        # partners still on their original ball: from the grid of the restart
        i, j = self.grid.pairs(d, self.ball_c[d], self.ball_r[d], self.moved)
        # partners that moved already (this call's dirty ships included): direct test
        mv = np.flatnonzero(self.moved)
        lo, hi = _ball_pairs(d, self.ball_c[d], self.ball_r[d], mv, self.ball_c[mv], self.ball_r[mv])
        a, b = np.concatenate([i, lo]), np.concatenate([j, hi])
        self._grow(self.n_pairs + len(a))
        before = self.n_pairs
        self.n_pairs, self.size = _st_schedule(a, b, True, d, self.pa, self.pb, self.head, self.nxt, self.wake,
                                               self.heap, self.hpos, self.n_pairs, self.size)
        return self.n_pairs - before
