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

Scaling (n = 10,000 cannot schedule n² pairs). Each ship i has its own horizon: at time t_i it
gets a "reach ball" centred halfway along its straight flight, x + v·S/2, of radius
ρ = r + |v|·S/2 + A·S²/2, which holds the ship until its horizon ends at e_i = t_i + S. Only
pairs whose reach balls meet are scheduled; any other pair cannot touch before min(e_i, e_j).
At the first call with t >= e_i (or when ship i is invalidated) the ship is "re-balled": its
pairs are dropped, it gets a new ball from its current state, and a uniform grid of all ships'
balls (ship_grid.py) gives its new partners, scheduled due at once. So every unscheduled pair
always has disjoint current balls.

Staggering (a real-time broad phase must not pay for all ships in one frame). Horizons end on
a per-ship phase φ_i in a cycle u(t) that advances by 1 every H seconds: e_i is the first time
after t + (spacing of calls) with u(e_i) - φ_i a whole number. The phases are the ships' ranks
in the grid's cell order, (rank + ½)/n, so the ends are spread evenly over every cycle whatever
the ships' history: each call re-balls n·Δt/H ships, a crowd invalidated in the same frame is
spread again at its next re-ball instead of expiring together, and the ships re-balled in one
call are neighbours (a slab of the grid), whose queries share cache lines. Ranks are refreshed
every few horizons as ships drift; that only nudges phases. A new H changes the cycle's rate,
not its count, so it does not reshuffle the ends either. H trades re-balls per call (n·Δt/H)
against the schedule's size (grows like H³ once reach exceeds ship spacing): it aims at
`horizon_calls` calls per horizon (growing ×1.2) and shrinks (×0.7) while more than
`max_pairs_per_ship` pairs per ship are scheduled, adapted once per horizon.

Invalidation (velocity jumps, new controls, a larger acceleration bound than predictions
assumed) breaks both the pair predictions and the ship's reach ball: the ship is re-balled at
the next call, so all its pairs are re-predicted from the current state.

Sampling. Exactness holds at the times the pipeline calls (every pair due by t is tested at
t), so correctness needs no particular call spacing; min_resolution (the longest spacing the
pipeline uses) only seeds the horizon, H = horizon_calls × min_resolution, after which H
follows the measured spacing of calls. A pair overlapping now is due again at the next call.
The exact test at sample times uses the same predicate as the brute-force reference.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .base import BroadPhase, pairs_from_ids, ships_overlap
from .pair_schedule import N_DUE, N_FREE, SIZE, TOP, PairSchedule, add_pairs, drop_pairs, heap_push, heap_remove, \
    make_due
from .ship_grid import ShipGrid, cells_fit, crowded, grid_move, grid_query

T0, U0, PERIOD, LEAD = 0, 1, 2, 3  # cycle[]: u(t) = U0 + (t - T0) / PERIOD; ends come after LEAD
SCHEDULED, REGRID, NO_ROOM = 0, 1, 2  # how far reball_kernel got (SpaceTime._reball finishes the rest)
BALL_SLACK = 1e-9  # reach balls grow by this × (radius + |centre|): rounding must never make one too small


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
def _st_step(t, pos, vel, accel, radius, pa, pb, wake, heap, hpos, due, dpos, counts, buf, out):
    """Test every pair due by t exactly: the due list, and the heap's pairs whose wake-up has
    come (collected first, so a pair put to sleep until t is not tested twice in a row).
    Overlapping pairs join the due list and out; the others sleep until their predicted wake-up.

    Returns (pairs examined, pairs overlapping); overlapping pair ids in out[:k].
    """
    m = counts[N_DUE]
    for q in range(m):
        buf[q] = due[q]
    counts[N_DUE] = 0
    while counts[SIZE] > 0 and wake[heap[0]] <= t:
        buf[m] = heap[0]
        m += 1
        counts[SIZE] = heap_remove(heap, hpos, wake, counts[SIZE], heap[0])
    k = 0
    for q in range(m):
        p = buf[q]
        dpos[p] = -1
        i, j = pa[p], pb[p]
        if ships_overlap(pos, radius, i, j):
            make_due(p, wake, due, dpos, counts)
            out[k] = p
            k += 1
        else:
            wake[p] = t + _wake_delay(pos, vel, accel, radius, i, j)
            counts[SIZE] = heap_push(heap, hpos, wake, counts[SIZE], p)
    return m, k


@njit(cache=True)
def mark_dirty(ships, dirty):
    """dirty[ships] = True when every index is in range (returns True); else marks none, False."""
    for s in ships:
        if s < 0 or s >= len(dirty):
            return False
    for s in ships:
        dirty[s] = True
    return True


@njit(cache=True)
def scheduled_pairs(t, pos, vel, accel, radius, pa, pb, wake, heap, hpos, due, dpos, counts, buf, out):
    """_st_step, then its overlapping pairs as pairs_from_ids gives them: (pairs examined, (k, 2)
    int32 pairs sorted), in one call (a frame calls it every sample: each call costs ~10 µs)."""
    m, k = _st_step(t, pos, vel, accel, radius, pa, pb, wake, heap, hpos, due, dpos, counts, buf, out)
    return m, pairs_from_ids(pa, pb, out[:k], len(radius))


class Balls(NamedTuple):
    """The ships' reach balls and what their horizons assume (SpaceTime's arrays)."""

    cycle: np.ndarray     # the horizon's cycle (LEAD: when the lead ends) [s]
    phase: np.ndarray     # (n,) float64, each ship's phase in the cycle
    radius: np.ndarray    # (n,) float64 [m], bounding radii
    ball: np.ndarray      # (n, 4) float64, reach balls: centre [m], radius [m]
    ship_end: np.ndarray  # (n,) float64 [s], when each ship's ball ends
    a_ref: np.ndarray     # (n,) float64 [m/s^2], the acceleration bound each ball assumes
    dirty: np.ndarray     # (n,) bool, invalidated ships


class Schedule(NamedTuple):
    """The pair schedule's arrays (pair_schedule.PairSchedule) a re-ball reads and writes."""

    pa: np.ndarray
    pb: np.ndarray
    head: np.ndarray
    nxt: np.ndarray
    prv: np.ndarray
    wake: np.ndarray
    heap: np.ndarray
    hpos: np.ndarray
    due: np.ndarray
    dpos: np.ndarray
    free: np.ndarray
    counts: np.ndarray


class Grid(NamedTuple):
    """The ship grid's arrays (ship_grid.ShipGrid) a re-ball reads and writes, and its query's output."""

    origin: np.ndarray
    h: float
    dims: np.ndarray
    h_want: float
    n_outside: int
    home: np.ndarray
    outside: np.ndarray
    heads: np.ndarray
    link: np.ndarray
    batch: np.ndarray
    out_a: np.ndarray
    out_b: np.ndarray


class ReballArgs(NamedTuple):
    """reball_kernel's arguments after (ships, t, pos, vel, accel): SpaceTime.reball_args()."""

    balls: Balls
    schedule: Schedule
    grid: Grid


@njit(cache=True)
def _balls_and_drop(ships, t, pos, vel, accel, balls, schedule):
    """_new_balls for these ships, then their scheduled pairs dropped (drop_pairs), in one call;
    returns the largest ball radius of all ships (ShipGrid.move's rmax)."""
    _new_balls(ships, t, balls.cycle, balls.phase, pos, vel, accel, balls.radius, balls.ball, balls.ship_end,
               balls.a_ref, balls.dirty)
    pa, pb, head, nxt, prv, wake, heap, hpos, due, dpos, free, counts = schedule
    drop_pairs(ships, pa, pb, head, nxt, prv, wake, heap, hpos, due, dpos, free, counts)
    return balls.ball[:, 3].max() if len(balls.ball) else 0.0


@njit(cache=True)
def reball_kernel(ships, t, pos, vel, accel, args):
    """SpaceTime._reball in one call (a frame re-balls some ships every sample; each call from
    Python costs ~10-30 µs in a frame): _balls_and_drop, the ships re-filed in the grid
    (ShipGrid.move), their new partners (ShipGrid.pairs, into out_a, out_b) scheduled
    (PairSchedule.add). Stops early where Python must go on: REGRID when the grid needs a rebuild
    (the cells no longer suit the balls: nothing re-filed; or too many ships left the box: re-filed),
    NO_ROOM when the partners overflow out_a or the schedule (found, nothing scheduled).
    args: ReballArgs. Returns (status, rmax, n_outside, partners found)."""
    ball = args.balls.ball
    pa, pb, head, nxt, prv, wake, heap, hpos, due, dpos, free, counts = args.schedule
    origin, h, dims, h_want, n_outside, home, outside, heads, link, batch, out_a, out_b = args.grid
    rmax = _balls_and_drop(ships, t, pos, vel, accel, args.balls, args.schedule)
    if not cells_fit(rmax, h_want):
        return REGRID, rmax, n_outside, 0
    n_outside = grid_move(ships, ball, origin, h, dims, n_outside, home, outside, heads, link)
    if crowded(n_outside, len(ball)):
        return REGRID, rmax, n_outside, 0
    found = grid_query(ships, ball, rmax, origin, h, dims, batch, heads, link, out_a, out_b)
    if found > len(out_a) or found > len(pa) - counts[TOP] + counts[N_FREE]:
        return NO_ROOM, rmax, n_outside, found
    add_pairs(out_a[:found], out_b[:found], pa, pb, head, nxt, prv, wake, due, dpos, free, counts)
    return SCHEDULED, rmax, n_outside, found


@njit(cache=True)
def due_ships(t, accel, a_ref, ship_end, dirty):
    """Ships to re-ball at t: invalidated, horizon ended, or given a larger acceleration bound
    than their ball and predictions assume (which invalidates them). Marks them all dirty."""
    count = 0
    for i in range(len(dirty)):
        dirty[i] |= accel[i] > a_ref[i] or ship_end[i] <= t
        count += dirty[i]
    ships = np.empty(count, np.int64)
    k = 0
    for i in range(len(dirty)):
        if dirty[i]:
            ships[k] = i
            k += 1
    return ships


@njit(cache=True)
def _new_balls(ships, t, cycle, phase, pos, vel, accel, radius, ball, ship_end, a_ref, dirty):
    """Each ship's new horizon end (its next phase time after cycle[LEAD]) and the reach ball
    holding it until then: centred halfway along the straight flight x + v·τ, so the drift term
    is |v|·span/2. The ship's bound becomes its reference."""
    t0, u0, period = cycle[T0], cycle[U0], cycle[PERIOD]
    u_lead = u0 + (cycle[LEAD] - t0) / period
    for i in ships:
        dirty[i] = False
        a_ref[i] = accel[i]
        end = t0 + (math.floor(u_lead - phase[i]) + 1.0 + phase[i] - u0) * period
        ship_end[i] = end
        span = max(end - t, 0.0)
        far = 0.0
        for a in range(3):
            ball[i, a] = pos[i, a] + vel[i, a] * (0.5 * span)
            far = max(far, abs(ball[i, a]))
        speed = math.sqrt(vel[i, 0] ** 2 + vel[i, 1] ** 2 + vel[i, 2] ** 2)
        reach = radius[i] + speed * (0.5 * span) + 0.5 * accel[i] * span * span
        ball[i, 3] = reach + BALL_SLACK * (reach + far)


class SpaceTime(BroadPhase):
    """Hubbard's space-time bounds with a priority queue of pair wake-up times and staggered
    per-ship horizons (see the module doc).

    horizon : initial horizon period H [s] (None: horizon_calls × min_resolution), adapted once
    per horizon unless adaptive=False.
    horizon_calls : calls per horizon the adaptation aims at [-].
    max_pairs_per_ship : above this many scheduled pairs per ship the horizon shrinks [-].
    last_stats : pairs_examined (popped and tested), pairs_scheduled, pairs_found, pairs_added
    (new partners of re-balled ships), ships_reballed, horizon [s].
    """

    name = "space_time"

    def __init__(self, radius, *, min_resolution, horizon=None, adaptive=True, horizon_calls=16,
                 max_pairs_per_ship=4.0):
        super().__init__(radius, min_resolution=min_resolution)
        self.horizon_calls, self.max_pairs = int(horizon_calls), float(max_pairs_per_ship)
        horizon = float(horizon) if horizon is not None else self.horizon_calls * self.min_resolution
        if not (np.isfinite(horizon) and horizon > 0):
            raise ValueError(f"horizon must be > 0 and finite, got {horizon}")
        self.cycle = np.array([0.0, 0.0, horizon, 0.0])
        self.adaptive = adaptive
        self.call_dt = self.min_resolution  # running mean of the spacing of calls [s]
        self.prev_t = None
        self.calls = 0
        self.rephase_calls = 4 * self.horizon_calls  # ships drift: phases re-ranked this often
        n = self.n
        self.phase = np.full(n, 0.5)  # until the first grid ranks the ships
        self.dirty = np.zeros(n, bool)
        self.ship_end = np.full(n, -np.inf)  # each ship's horizon end e_i [s]
        self.a_ref = np.zeros(n)  # acceleration bound its ball and predictions assume
        self.ball = np.zeros((n, 4))  # reach balls: centre x, y, z [m], radius [m]
        self.grid = ShipGrid(n)
        self.schedule = PairSchedule(n)

    @classmethod
    def warm_rare_paths(cls) -> None:
        """The kernels of _reball's Python fallback (a grid rebuild, out of room), which the
        compiled path never calls: left cold, the first fallback of a run loaded them in the middle
        of a frame (measured: an 8 ms frame among 0.4 ms ones at 10,000 ships)."""
        grid, schedule = ShipGrid(2), PairSchedule(2, cap=1)
        ball = np.array([[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]])
        grid.move(np.arange(2, dtype=np.int64), ball)
        schedule.add(*grid.pairs(np.zeros(1, np.int64), ball))

    @property
    def horizon(self) -> float:
        """The period H of the horizon cycle [s]."""
        return float(self.cycle[PERIOD])

    def _set_horizon(self, t, horizon):
        """New period from t on; the cycle's count u(t) carries on, so phases keep their order in
        time. A shorter period brings the ends already set forward in proportion (safe: a ball
        holds its ship until any earlier time), which puts them on the new cycle at once. A longer
        one leaves them (they cannot be delayed), so for about a horizon the calls keep roughly the
        old, higher rate of re-balls; growing by ×1.2 at a time keeps that transient mild."""
        old = self.cycle[PERIOD]
        self.cycle[U0] += (t - self.cycle[T0]) / old
        self.cycle[T0], self.cycle[PERIOD] = t, horizon
        if horizon < old:
            pending = self.ship_end > t
            self.ship_end[pending] = t + (self.ship_end[pending] - t) * (horizon / old)

    @property
    def ball_c(self):
        return self.ball[:, :3]

    @property
    def ball_r(self):
        return self.ball[:, 3]

    def invalidate(self, ships) -> None:
        if isinstance(ships, np.ndarray):  # the pipeline's (attributes, not numpy calls: a frame makes ~4)
            if not ships.size:  # most calls name no ship
                return
            if ships.dtype == np.bool_ and ships.shape == (self.n,):
                self.dirty |= ships  # a mask (the controllers'): no index to check
                return
            if ships.dtype == np.int64 and ships.ndim == 1:
                # indices from kernels: checked and marked in one call
                if not mark_dirty(ships, self.dirty):
                    raise ValueError(f"ship index out of range [0, {self.n})")
                return
        elif not np.size(ships):
            return
        self.dirty[self._check_ships(ships)] = True

    # --- the frame's work ------------------------------------------------------------------
    def _find_pairs(self, t, pos, vel, accel) -> np.ndarray:
        self.track_calls(t)
        # predictions and reach balls assume the bound a_ref[i]; a larger one invalidates them
        due = due_ships(t, accel, self.a_ref, self.ship_end, self.dirty)
        added = self._reball(t, due, pos, vel, accel) if len(due) else 0
        return self.wake_pairs(t, pos, vel, len(due), added)

    def wake_pairs(self, t, pos, vel, reballed: int, added: int) -> np.ndarray:
        """The pairs due by t, tested (scheduled_pairs), and the call's last_stats."""
        m, pairs = scheduled_pairs(t, pos, vel, self.a_ref, self.radius, *self.schedule_args())
        self.took_call(m, len(pairs), added, reballed)
        return pairs

    def schedule_args(self) -> tuple:
        """scheduled_pairs's arguments after (t, pos, vel, a_ref, radius): the pair schedule's arrays."""
        s = self.schedule
        return s.pa, s.pb, s.wake, s.heap, s.hpos, s.due, s.dpos, s.counts, s.buf, s.out

    def took_call(self, examined: int, found: int, added: int, reballed: int) -> None:
        """last_stats of a call (compiled_sample.py makes its calls in its own kernel)."""
        self.last_stats = {"pairs_examined": int(examined), "pairs_scheduled": self.schedule.size,
                           "pairs_found": found, "pairs_added": int(added), "ships_reballed": reballed,
                           "horizon": self.horizon}

    def track_calls(self, t):
        """Running mean of the call spacing; the horizon adapted once per horizon_calls calls."""
        if self.prev_t is not None and t > self.prev_t:
            self.call_dt += 0.1 * (t - self.prev_t - self.call_dt)
        self.prev_t = t
        self.calls += 1
        if self.adaptive and self.calls % self.horizon_calls == 0:
            if self.schedule.size > self.max_pairs * self.n:
                horizon = 0.7 * self.horizon
            else:
                horizon = min(1.2 * self.horizon, self.horizon_calls * self.call_dt)
            self._set_horizon(t, max(horizon, 2 * self.call_dt))

    def _reball(self, t, ships, pos, vel, accel) -> int:
        """New reach balls for these ships from the current state; their pairs dropped, their
        partners found again, due at once. Returns how many pairs were scheduled."""
        g, s = self.grid, self.schedule
        if g.h_want is None:
            self._first_phases(t, ships, pos, vel, accel)
        self.set_lead(t)
        rebuilds = g.rebuilds
        status, g.rmax, g.n_outside, found = reball_kernel(ships, t, pos, vel, accel, self.reball_args())
        return self.reballed(ships, status, found, rebuilds)

    def reball_args(self) -> ReballArgs:
        """reball_kernel's arguments after (ships, t, pos, vel, accel): this broad phase's own."""
        g, s = self.grid, self.schedule
        return ReballArgs(
            Balls(self.cycle, self.phase, self.radius, self.ball, self.ship_end, self.a_ref, self.dirty),
            Schedule(s.pa, s.pb, s.head, s.nxt, s.prv, s.wake, s.heap, s.hpos, s.due, s.dpos, s.free, s.counts),
            Grid(g.origin, g.h, g.dims, g.h_want, g.n_outside, g.home, g.outside, g.heads, g.link, g.batch, g.out_a,
                 g.out_b))

    def reballed(self, ships, status: int, found: int, rebuilds: int) -> int:
        """After reball_kernel (status, partners found; `rebuilds`: the grid's count before it):
        the rest done in Python when it stopped early (a new grid or more room), and the phases
        re-ranked when due. Returns how many pairs were scheduled."""
        g, s = self.grid, self.schedule
        if status != SCHEDULED:  # the rest as the kernel would have done it, with a new grid or more room
            if status == REGRID:
                g.rebuild(self.ball)
            a, b = g.pairs(ships, self.ball)
            s.add(a, b)
            found = len(a)
            if found > len(g.out_a):  # room for the kernel's next queries
                g.out_a, g.out_b = np.empty(2 * found, np.int64), np.empty(2 * found, np.int64)
        if g.rebuilds != rebuilds or self.calls % self.rephase_calls == 0:
            self._rephase()
        return found

    def set_lead(self, t):
        """Before re-balling at t: the lead cycle ends at least one call spacing away, so the ships
        re-balled are not due again at once."""
        self.cycle[LEAD] = t + self.call_dt

    def _new_balls(self, t, ships, pos, vel, accel):
        self.set_lead(t)
        _new_balls(ships, t, self.cycle, self.phase, pos, vel, accel, self.radius, self.ball, self.ship_end,
                   self.a_ref, self.dirty)

    def _first_phases(self, t, ships, pos, vel, accel):
        """Rank the ships in a first grid before any end is set: re-ranking later only nudges
        phases (ships drift little between re-rankings), while replacing the initial phases
        wholesale would bring some ships back early and crowd a horizon's calls."""
        self._new_balls(t, ships, pos, vel, accel)
        self.grid.move(ships, self.ball)
        self._rephase()

    def _rephase(self):
        """Phases by rank in the grid's cell order: evenly spread (a permutation of
        (k + ½)/n), and the ships re-balled in one call are neighbours in space and in the grid's
        memory, so their queries share cache lines. Ends already set are kept."""
        self.phase[self.grid.cell_order()] = (np.arange(self.n) + 0.5) / self.n
