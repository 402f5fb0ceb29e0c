"""The common detection sample in one numba call: pipeline.step's loop body, compiled.

Why: at a render load of target − 1 ms the narrow phase's budget is zero (the safety margin takes
the rest) and the frame is all fixed cost, run with cold caches after the render, where every
distinct Python function and numba dispatch costs 10–40 µs (README, "what a cold call costs").
The Python sample makes ~170 Python-level calls (builtins included) and 11 numba dispatches; this one
makes one dispatch and the bookkeeping around it (cProfile, a lamps frame of two samples: 351 → 219 calls).

What: `_sample` runs `_advance` — the integration, the arena rule, the acceleration bound, the
space-time broad phase and the narrow phase's budget (pipeline._advance) — then, when that budget is
zero, `_detect_forced` — the forced levels of the refinement and its summary, the response and the
verdict tally (pipeline._detect with a deadline already passed, where the Python refinement runs its
forced work and reads the clock no more: refine._Search.out_of_time). Both read the world's clock
inside the kernel (clock.read_clock) at the stages' ends, where the Python stages read it, and both
call the stages' own kernels, so a TickClock run ends in the same state, stats and clock as the
Python sample (tests/sim/test_compiled_sample.py).

When (`for_frame`): the common case only — compiled stages, time-critical, ships only (no
asteroids, no swept test, no exact-only strategy), prebuilt trees with the leaves as exact level,
forced levels that stop above the exact level, the space-time broad phase, the serial integrator
and a clock a kernel can read. A sample whose budget is not zero, or whose broad phase must rebuild
its grid or make room in its schedule, goes on in Python from where the kernel stopped; one with
more pairs than the scratch holds gets a larger scratch and `_detect_forced` alone.
"""
from __future__ import annotations

import functools

from typing import NamedTuple

import numpy as np
from numba import njit

from ..broadphase.space_time import SCHEDULED, SpaceTime, due_ships, mark_dirty, reball_kernel, scheduled_pairs
from ..clock import kernel_clock, read_clock, read_wall, sync_clock
from ..convex.field import NoField
from ..dynamics.integrator import PARALLEL_MIN_SHIPS, StepStats, heun_adaptive_serial
from ..dynamics.ships import accel_bound_kernel, contain_kernel
from ..narrowphase.bank import TreeBank
from ..narrowphase.kernels import SCRATCH_FLOATS, scratch_views, search_levels, stack_width, summarize_stacks
from ..narrowphase.intervals import verdict_bounds
from ..narrowphase.refine import NO_LIMIT, NarrowPhase, Scratch, bank_args, frame_answer
from ..response.impulse import respond_hits_kernel
from ..state import poses_kernel
from .frame import SimState, Stages, Timing
from .stats import tally_verdicts_kernel, detection_budget_kernel

BAD_BOUND = -1  # _advance's status when the acceleration bound is negative or NaN (find_pairs says why)


class NarrowArgs(NamedTuple):
    """The refinement's settings and the bank's arrays, as the kernels take them."""

    A: tuple              # the bank's kernels.Tree (refine.tree_of: kernels.search_levels's A and B)
    B: tuple
    models: tuple         # kernels.search_levels's `models`
    max_level: int        # the deepest level a row may reach (refine.NO_LIMIT: none)
    levels: int           # the bank's levels, exact level included (summarize_stacks's histogram)
    min_level: int        # every colliding pair is refined at least this deep


class BudgetArgs(NamedTuple):
    """stats.detection_budget's arguments but `spent`, with the frame's start [s] on the clock."""

    start: float
    target: float
    render: float
    margin: float
    samples_left: int
    overrun: float
    rest: float


class Detection(NamedTuple):
    """What _detect_forced needs of the stages besides the ships' positions and velocities."""

    quat: np.ndarray       # (n, 4) float64, the ships' orientations
    inv_mass: np.ndarray   # (n,) float64 [1/kg]
    model_id: np.ndarray   # (n,) int64
    radius: np.ndarray     # (n,) float64 [m], bounding radii (the tally's relative bounds)
    T: np.ndarray          # (n, 4, 4) float64 scratch: the ships' poses
    narrow: NarrowArgs
    scratch: tuple         # refine.Scratch.flat
    width: int             # stack entries a row
    fair: tuple            # fairness.FairOrder.kernel_args
    response: tuple        # (restitution, separation_speed)


class Advanced(NamedTuple):
    """_advance's answer: where it stopped, its clock reads and what the Python side needs."""

    status: int               # SCHEDULED, or where the kernel stopped: the re-ball's REGRID or NO_ROOM, or BAD_BOUND
    integrate_start: float    # clock reads around the integration and the arena rule
    integrate_end: float
    broad_start: float        # ... and around the broad phase
    broad_end: float
    budget: float             # the narrow phase's budget [s]
    steps: tuple              # the integration's StepStats fields
    bound: np.ndarray         # (n,) float64, the ships' acceleration bounds
    due: np.ndarray           # (d,) int64, the ships re-balled
    rmax: float               # the re-ball's largest ball radius [m]
    n_outside: int            # ... ships outside its grid
    found: int                # ... partners found
    examined: int             # pairs the schedule examined
    pairs: np.ndarray         # (k, 2) int32, the pairs found


class Detected(NamedTuple):
    """_detect_forced's answer: its clock reads and what the Python side needs."""

    narrow_start: float       # clock reads around the narrow phase
    narrow_end: float
    response_start: float     # ... and around the response
    response_end: float
    rows: np.ndarray          # (k, 2) int64, the pairs
    summary: tuple            # kernels.summarize_stacks's arrays
    hit_ptr: np.ndarray       # (k+1,) int64, the hits' CSR pointers (none)
    time_used: float          # the narrow phase's time on the clock [s]
    busy: float               # wall seconds inside search_levels
    moved: int                # ships the response moved
    tally: tuple              # stats' verdict tally


def for_frame(stages: Stages, sim: SimState, timing: Timing) -> "CompiledSample | None":
    """The compiled sample for this frame's stages, or None where the Python sample must run."""
    p = stages
    if not (p.use_compiled_sample and p.compiled and timing.time_critical and p.exact_only is None
            and p.swept is None and type(p.field) is NoField and type(p.bank) is TreeBank
            and type(p.narrow) is NarrowPhase and p.narrow.detector is None
            and p.narrow.min_level <= int(p.bank.depth.min())
            and isinstance(p.broad, SpaceTime) and p.broad.grid.h_want is not None
            and p.integrator.backend == "numba" and sim.state.n < PARALLEL_MIN_SHIPS
            and kernel_clock(timing.clock) is not None):
        return None
    key = (p.narrow, p.bank, timing.clock)
    made = p.compiled_sample
    if made is None or made.key != key:
        made = p.compiled_sample = CompiledSample(p.bank, p.narrow, timing.clock)
        made.key = key
    return made


class CompiledSample:
    """What the kernel needs of the stages' bank and refinement settings, made once."""

    def __init__(self, bank: TreeBank, narrow: NarrowPhase, clock):
        deepest = bank.max_level - 1
        max_level = NO_LIMIT if narrow.max_level is None else max(int(narrow.max_level), 0)
        self.width = stack_width(bank, bank, deepest if narrow.max_level is None else min(deepest, max_level))
        args = bank_args(bank, bank)
        self.narrow_args = NarrowArgs(*args.trees, args.models, max_level, bank.max_level + 1,
                                      int(narrow.min_level))
        self.scratch = Scratch(64, 64 * self.width)
        self.T = np.empty((0, 4, 4))
        self.clock, self.clk = clock, kernel_clock(clock)

    def sample(self, s):
        """pipeline.step's sample (s: pipeline._Sample) in one kernel call, and what Python must
        finish. Returns (pairs, budget, narrow): the narrow phase's answer when the kernel ran it (a
        zero budget), else None with the pairs and budget for pipeline._detect — the budget None too
        where the kernel stopped in the broad phase (pipeline.sample_budget's then)."""
        cfg, state, broad, clock, stats = s.config, s.sim.state, s.stages.broad, self.clock, s.stats
        t = s.sim.t + s.dt
        broad.track_calls(t)  # before the kernel's re-ball (the Python broad phase's first step)
        broad.set_lead(t)
        if len(self.T) != state.n:
            self.T = np.empty((state.n, 4, 4))
        budget_args = BudgetArgs(s.start, stats.target, stats.render_predicted, stats.margin,
                                 s.samples_left, s.timing.overrun.predict(), s.timing.fixed.predict(s.samples_left))
        advanced, detected, done = _sample(
            kernel_clock(clock, self.clk), s.stages.integrator.kernel_args(state, s.dt), 0.5 * cfg.arena.size,
            (float(cfg.controls.max_thrust), float(cfg.controls.drag)), t, broad.reball_args(),
            broad.schedule_args(), budget_args, self._detection(s))
        sync_clock(clock, self.clk)
        pairs, budget = self._advanced(s, t, advanced)
        if done:
            return pairs, budget, self._detected(s, detected)
        if budget == 0.0:  # the kernel's scratch was too small for the pairs: a larger one, and the rest
            k = len(pairs)
            self.scratch = Scratch(2 * k, 2 * k * self.width)
            detected = _detect_forced(kernel_clock(clock, self.clk), state.pos, state.vel, broad.dirty, pairs,
                                      self._detection(s))
            sync_clock(clock, self.clk)
            return pairs, budget, self._detected(s, detected)
        return pairs, budget, None

    def _detection(self, s) -> Detection:
        """_detect_forced's `detection` argument for this sample."""
        state, c = s.sim.state, s.config.collision
        return Detection(state.quat, state.inv_mass, state.model_id, state.radius, self.T, self.narrow_args,
                         self.scratch.flat, self.width, s.stages.fair.kernel_args(state.n),
                         (float(c.restitution), float(c.separation_speed)))

    def _advanced(self, s, t, advanced: Advanced):
        """The Python side of the kernel's pipeline._advance: (pairs, budget or None)."""
        a, state, broad, stats = advanced, s.sim.state, s.stages.broad, s.stats
        status, bound, due, pairs = a.status, a.bound, a.due, a.pairs
        stats.add_integration(StepStats(*a.steps))
        s.sim.t = t
        stats.t_integrate = stats.t_integrate + a.integrate_end - a.integrate_start
        if status == BAD_BOUND:
            broad.find_pairs(t, state.pos, state.vel, bound)  # raises, naming the bound
        broad.last_t = t
        added = 0
        if len(due):
            g = broad.grid
            rebuilds, g.rmax, g.n_outside = g.rebuilds, a.rmax, a.n_outside
            added = broad.reballed(due, status, a.found, rebuilds)
        if status != SCHEDULED:  # the kernel stopped in the re-ball: the broad phase goes on in Python
            pairs = broad.wake_pairs(t, state.pos, state.vel, len(due), added)
            stats.t_broad = stats.t_broad + self.clock() - a.broad_start
            return pairs, None
        broad.took_call(a.examined, len(pairs), added, len(due))
        stats.t_broad = stats.t_broad + a.broad_end - a.broad_start
        return pairs, a.budget

    def _detected(self, s, detected: Detected):
        """The Python side of the kernel's pipeline._detect: the narrow phase's answer."""
        d, stats = detected, s.stats
        narrow = frame_answer(d.rows, d.summary, (d.hit_ptr, NO_IDS, NO_IDS), d.time_used, d.busy, s.stages.fair)
        bank, T = s.stages.bank, self.T.copy()
        narrow.interval_source = functools.partial(verdict_bounds, A=bank, B=bank, T=T)
        if s.stages.narrow.tighten:  # a sample with no budget does not narrow: refine._Search.tighten
            s.stages.narrow.carried.carry_when_read(bank, narrow, s.sim.state.model_id, T)
        stats.t_narrow = stats.t_narrow + d.narrow_end - d.narrow_start
        stats.t_response = stats.t_response + d.response_end - d.response_start
        stats.add_tally(narrow, 0.0, d.moved, d.tally)
        return narrow


NO_IDS = np.zeros(0, np.int64)


@njit(cache=True)
def _sample(clk, integration, half, controls, t, reball, schedule, budget_args, detection):
    """_advance, then, when its budget is zero and the scratch holds its pairs, _detect_forced
    (detection: its argument of that name). Returns (_advance's answer, _detect_forced's — empty
    arrays of the same types where it did not run —, whether it ran)."""
    advanced = _advance(clk, integration, half, controls, t, reball, schedule, budget_args)
    scratch, width = detection.scratch, detection.width
    k = len(advanced.pairs)
    fits = k <= len(scratch[2]) // SCRATCH_FLOATS and k * width <= scratch[3].shape[1]
    if advanced.status != SCHEDULED or advanced.budget != 0.0 or not fits:
        return advanced, _no_detection(detection.narrow, scratch, width, detection.fair), False
    ships = integration.ships
    return advanced, _detect_forced(clk, ships.pos, ships.vel, reball.balls.dirty, advanced.pairs, detection), True


@njit(cache=True)
def _no_detection(narrow, scratch, width, fair):
    """_detect_forced's answer for no pairs, read off no clock: what _sample returns where it did not run."""
    rows = np.zeros((0, 2), np.int64)
    hit_ptr = np.zeros(1, np.int64)
    summary = summarize_stacks(narrow.A[0], narrow.B[0], scratch, 0, width, hit_ptr, narrow.levels, rows, fair)
    tally = tally_verdicts_kernel(summary[0], summary[1], summary[2], rows, np.zeros(0), summary[3])
    return Detected(0.0, 0.0, 0.0, 0.0, rows, summary, hit_ptr, 0.0, 0.0, 0, tally)


@njit(cache=True)
def _advance(clk, integration, half, controls, t, reball, schedule, budget_args):
    """The integration (integration: Integrator.kernel_args), the arena rule (half: half the
    arena's size), the acceleration bound (controls: max_thrust, drag) and the space-time broad
    phase at time t (reball: SpaceTime.reball_args, schedule: its pair schedule's arrays for
    scheduled_pairs), then the budget (budget_args: BudgetArgs), reading the clock `clk` where
    pipeline._advance does. Returns Advanced."""
    pos, vel, thrust = integration.ships.pos, integration.ships.vel, integration.ships.thrust
    ship_end, a_ref, dirty = reball.balls.ship_end, reball.balls.a_ref, reball.balls.dirty
    integrate_start = read_clock(clk)
    steps = heun_adaptive_serial(integration)
    mark_dirty(contain_kernel(pos, vel, half), dirty)
    integrate_end = read_clock(clk)
    broad_start = read_clock(clk)
    bound = accel_bound_kernel(thrust, vel, controls[0], controls[1])
    due = np.zeros(0, np.int64)
    none = np.zeros((0, 2), np.int32)  # made here: numba reads a global array as read-only, another type
    if not bound.min() >= 0.0:  # NaN fails it too
        return Advanced(BAD_BOUND, integrate_start, integrate_end, broad_start, broad_start, 0.0, steps, bound, due,
                        0.0, 0, 0, 0, none)
    due = due_ships(t, bound, a_ref, ship_end, dirty)
    status, rmax, n_outside, found = SCHEDULED, 0.0, 0, 0
    if len(due):
        status, rmax, n_outside, found = reball_kernel(due, t, pos, vel, bound, reball)
        if status != SCHEDULED:
            return Advanced(status, integrate_start, integrate_end, broad_start, broad_start, 0.0, steps, bound, due,
                            rmax, n_outside, found, 0, none)
    examined, pairs = scheduled_pairs(t, pos, vel, a_ref, reball.balls.radius, *schedule)
    broad_end = read_clock(clk)
    b = budget_args
    budget = detection_budget_kernel(b.target, b.render, read_clock(clk) - b.start, b.margin, b.samples_left,
                                     b.overrun, b.rest)
    return Advanced(SCHEDULED, integrate_start, integrate_end, broad_start, broad_end, budget, steps, bound, due, rmax,
                    n_outside, found, examined, pairs)


@njit(cache=True)
def _detect_forced(clk, pos, vel, dirty, pairs, detection):
    """The narrow phase of a sample with no budget (its forced levels, refine._Search.levels and
    exact_level with the deadline passed), its summary, the response and the verdict tally, reading
    the clock `clk` where pipeline._detect and the refinement do, moving the ships `pos`, `vel` and
    marking `dirty` those the response moved (detection: Detection). Returns Detected."""
    quat, inv_mass, model_id, radius, T, narrow, scratch, width, fair, response = detection
    A, B, models, max_level, levels, min_level = narrow
    narrow_start = read_clock(clk)
    poses_kernel(quat, pos, T)
    rows = pairs.astype(np.int64)
    k = len(rows)
    start = read_clock(clk)
    plan = scratch_views(scratch, k, width)[4]
    plan[0] = -1
    w0 = read_wall()
    n = search_levels(A, B, models, (model_id.astype(np.int64), T, rows, max_level), scratch, k, width, fair,
                      min_level, 0)[0]
    busy = read_wall() - w0 if n else 0.0
    hit_ptr = np.zeros(k + 1, np.int64)
    summary = summarize_stacks(A[0], B[0], scratch, k, width, hit_ptr, levels, rows, fair)
    time_used = read_clock(clk) - start
    narrow_end = read_clock(clk)
    response_start = read_clock(clk)
    changed = respond_hits_kernel(vel, inv_mass, pos, rows, summary[0], summary[5], response[0], response[1])
    mark_dirty(changed, dirty)
    response_end = read_clock(clk)
    tally = tally_verdicts_kernel(summary[0], summary[1], summary[2], rows, radius, summary[3])
    return Detected(narrow_start, narrow_end, response_start, response_end, rows, summary, hit_ptr, time_used, busy,
                    len(changed), tally)
