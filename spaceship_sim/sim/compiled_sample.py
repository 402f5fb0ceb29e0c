"""The common detection sample in one numba call: pipeline.step's loop body, compiled.

Why: at a render load of target − 1 ms the narrow phase's budget is zero (the safety margin takes
the rest) and the frame is all fixed cost, run with cold caches after the render, where every
distinct Python function and numba dispatch costs 10–40 µs (README, "what a cold call costs").
The Python sample makes ~170 Python-level calls (builtins included) and 11 numba dispatches; this one
makes one dispatch and the bookkeeping around it (cProfile, a lamps frame of two samples: 351 → 219 calls).

What: `_sample` runs `_advance` — the integration, the arena rule, the acceleration bound, the
space-time broad phase and the narrow phase's budget (pipeline._advance) — then, when that budget is
zero, `_detect_forced` — the forced levels of the refinement and its summary, the response and the
verdict tally (pipeline._detect with a deadline already passed, where the Python refinement's clock
checks all stop it at once). Both read the world's clock inside the kernel (clock.read_clock)
exactly where the Python stages read it, and both call the stages' own kernels, so a TickClock run
ends in the same state, stats and clock as the Python sample (tests/sim/test_compiled_sample.py).

When (`for_world`): the common case only — compiled stages, time-critical, ships only (no
asteroids, no swept test, no exact-only strategy), prebuilt trees with the leaves as exact level,
forced levels that stop above the exact level, the space-time broad phase, the serial integrator
and a clock a kernel can read. A sample whose budget is not zero, or whose broad phase must rebuild
its grid or make room in its schedule, goes on in Python from where the kernel stopped; one with
more pairs than the scratch holds gets a larger scratch and `_detect_forced` alone.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..broadphase.space_time import SCHEDULED, SpaceTime, _due_ships, _mark_dirty, _reball_kernel, _st_pairs
from ..clock import kernel_clock, read_clock, read_wall, sync_clock
from ..convex.field import NoField
from ..dynamics.integrator import PARALLEL_MIN_SHIPS, StepStats, _heun_adaptive_serial
from ..dynamics.ships import _accel_bound_kernel, _contain_kernel
from ..narrowphase.bank import TreeBank
from ..narrowphase.kernels import SCRATCH_FLOATS, scratch_views, search_levels, stack_width, summarize_stacks
from ..narrowphase.refine import NO_LIMIT, NarrowPhase, Scratch, bank_args, frame_answer
from ..response.impulse import _respond_hits_kernel
from ..state import _poses
from .stats import _tally_verdicts, detection_budget_kernel

BAD_BOUND = -1  # _advance's status when the acceleration bound is negative or NaN (find_pairs says why)
NO_PAIRS = np.zeros((0, 2), np.int32)


def for_world(world) -> "CompiledSample | None":
    """The world's compiled sample for this frame, or None where the Python sample must run."""
    if not (world.compiled_sample and world.compiled and world.time_critical and world.exact is None
            and world.swept is None and type(world.field) is NoField and type(world.bank) is TreeBank
            and type(world.narrow) is NarrowPhase and world.narrow.detector is None
            and world.narrow.min_level <= int(world.bank.depth.min())
            and isinstance(world.broad, SpaceTime) and world.broad.grid.h_want is not None
            and world.integrator.backend == "numba" and world.state.n < PARALLEL_MIN_SHIPS
            and kernel_clock(world.clock) is not None):
        return None
    key = (world.narrow, world.bank, world.clock)
    fused = world.sample_kernel
    if fused is None or fused.key != key:
        fused = world.sample_kernel = CompiledSample(world.bank, world.narrow, world.clock)
        fused.key = key
    return fused


class CompiledSample:
    """What the kernel needs of a world's bank and refinement settings, made once."""

    def __init__(self, bank: TreeBank, narrow: NarrowPhase, clock):
        deepest = bank.max_level - 1
        max_level = NO_LIMIT if narrow.max_level is None else max(int(narrow.max_level), 0)
        self.width = stack_width(bank, bank, deepest if narrow.max_level is None else min(deepest, max_level))
        args = bank_args(bank, bank, None, None)
        self.narrow_args = (args.VA, args.VB, args.banks, max_level, bank.max_level + 1,
                            int(narrow.min_level), bool(narrow.exact))
        self.scratch = Scratch(64, 64 * self.width)
        self.T = np.empty((0, 4, 4))
        self.clock, self.clk = clock, kernel_clock(clock)

    def sample(self, world, stats, start: float, samples_left: int, dt: float):
        """pipeline.step's sample in one kernel call, and what Python must finish. Returns (pairs,
        budget, narrow): the narrow phase's answer when the kernel ran it (a zero budget), else None
        with the pairs and budget for pipeline._detect — the budget None too where the kernel stopped
        in the broad phase (pipeline.sample_budget's then)."""
        cfg, state, broad, clock = world.config, world.state, world.broad, self.clock
        t = world.t + dt
        broad._track_calls(t)  # before the kernel's re-ball (the Python broad phase's first step)
        broad._set_lead(t)
        if len(self.T) != state.n:
            self.T = np.empty((state.n, 4, 4))
        budget_args = (start, stats.target, stats.render_predicted, cfg.collision.safety_margin, samples_left,
                       world.overrun_predictor.predict(), world.fixed_predictor.predict(samples_left))
        s = broad.schedule
        advanced, detected, done = _sample(
            kernel_clock(clock, self.clk), world.integrator.kernel_args(state, dt), 0.5 * cfg.arena.size,
            (float(cfg.controls.max_thrust), float(cfg.controls.drag)), t, broad.reball_args(),
            (s.pa, s.pb, s.wake, s.heap, s.hpos, s.due, s.dpos, s.counts, s.buf, s.out), budget_args,
            self._detection(world))
        sync_clock(clock, self.clk)
        pairs, budget = self._advanced(world, stats, t, advanced)
        if done:
            return pairs, budget, self._detected(world, stats, detected)
        if budget == 0.0:  # the kernel's scratch was too small for the pairs: a larger one, and the rest
            k = len(pairs)
            self.scratch = Scratch(2 * k, 2 * k * self.width)
            detected = _detect_forced(kernel_clock(clock, self.clk), state.pos, state.vel, broad.dirty, pairs,
                                      self._detection(world))
            sync_clock(clock, self.clk)
            return pairs, budget, self._detected(world, stats, detected)
        return pairs, budget, None

    def _detection(self, world) -> tuple:
        """_detect_forced's `detection` argument for this world."""
        state, c = world.state, world.config.collision
        return (state.quat, state.inv_mass, state.model_id, state.radius, self.T, self.narrow_args, self.scratch.flat,
                self.width, world.fair.kernel_args(state.n), (float(c.restitution), float(c.separation_speed)))

    def _advanced(self, world, stats, t, advanced):
        """The Python side of the kernel's pipeline._advance: (pairs, budget or None)."""
        status, r1, r2, r3, r4, budget, steps, bound, due, rmax, n_outside, found, examined, pairs = advanced
        state, broad = world.state, world.broad
        stats.add_integration(StepStats(*steps))
        world.t = t
        stats.t_integrate = stats.t_integrate + r2 - r1
        if status == BAD_BOUND:
            broad.find_pairs(t, state.pos, state.vel, bound)  # raises, naming the bound
        broad.last_t = t
        added = 0
        if len(due):
            g = broad.grid
            rebuilds, g.rmax, g.n_outside = g.rebuilds, rmax, n_outside
            added = broad.reballed(due, status, found, rebuilds)
        if status != SCHEDULED:  # the kernel stopped in the re-ball: the broad phase goes on in Python
            pairs = broad._wake_pairs(t, state.pos, state.vel, len(due), added)
            stats.t_broad = stats.t_broad + self.clock() - r3
            return pairs, None
        broad.took_call(examined, len(pairs), added, len(due))
        stats.t_broad = stats.t_broad + r4 - r3
        return pairs, budget

    def _detected(self, world, stats, detected):
        """The Python side of the kernel's pipeline._detect: the narrow phase's answer."""
        r6, r8, r9, r10, pairs, summary, hit_ptr, time_used, busy, changed, tally = detected
        narrow = frame_answer(pairs, summary, (hit_ptr, NO_IDS, NO_IDS), time_used, busy, world.fair)
        stats.t_narrow = stats.t_narrow + r8 - r6
        stats.t_response = stats.t_response + r10 - r9
        stats.add_tally(narrow, 0.0, changed, tally)
        return narrow


NO_IDS = np.zeros(0, np.int64)


@njit(cache=True)
def _sample(clk, integration, half, controls, t, reball, schedule, budget_args, detection):
    """_advance, then, when its budget is zero and the scratch holds its pairs, _detect_forced
    (detection: its argument of that name). Returns (_advance's answer, _detect_forced's — empty
    arrays of the same types where it did not run —, whether it ran)."""
    advanced = _advance(clk, integration, half, controls, t, reball, schedule, budget_args)
    narrow, scratch, width, fair = detection[5:9]
    pairs = advanced[-1]
    k = len(pairs)
    fits = k <= len(scratch[2]) // SCRATCH_FLOATS and k * width <= scratch[3].shape[1]
    if advanced[0] != SCHEDULED or advanced[5] != 0.0 or not fits:
        return advanced, _no_detection(narrow, scratch, width, fair), False
    return advanced, _detect_forced(clk, integration[0], integration[1], reball[6], pairs, detection), True


@njit(cache=True)
def _no_detection(narrow, scratch, width, fair):
    """_detect_forced's answer for no pairs, read off no clock: what _sample returns where it did not run."""
    VA, VB, levels = narrow[0], narrow[1], narrow[4]
    rows = np.zeros((0, 2), np.int64)
    hit_ptr = np.zeros(1, np.int64)
    summary = summarize_stacks(VA, VB, scratch, 0, width, hit_ptr, levels, rows, fair)
    tally = _tally_verdicts(summary[0], summary[1], summary[2], rows, np.zeros(0), summary[3])
    return 0.0, 0.0, 0.0, 0.0, rows, summary, hit_ptr, 0.0, 0.0, 0, tally


@njit(cache=True)
def _advance(clk, integration, half, controls, t, reball, schedule, budget_args):
    """The integration (integration: Integrator.kernel_args), the arena rule (half: half the
    arena's size), the acceleration bound (controls: max_thrust, drag) and the space-time broad
    phase at time t (reball: SpaceTime.reball_args, schedule: its pair schedule's arrays for
    _st_pairs), then the budget (budget_args: detection_budget's but for `spent`, with the frame's
    start first), reading the clock `clk` where pipeline._advance does.
    Returns (status: SCHEDULED, or where the kernel stopped: the re-ball's REGRID or NO_ROOM, or
    BAD_BOUND; the integration's clock reads r1, r2, the broad phase's r3, r4; the budget; the
    integration's step stats; the acceleration bound; the ships re-balled; the re-ball's rmax,
    n_outside and partners found; the pairs examined; the pairs found (k, 2) int32)."""
    pos, vel, thrust = integration[0], integration[1], integration[4]
    ship_end, a_ref, dirty = reball[4], reball[5], reball[6]
    r1 = read_clock(clk)
    steps = _heun_adaptive_serial(*integration)
    _mark_dirty(_contain_kernel(pos, vel, half), dirty)
    r2 = read_clock(clk)
    r3 = read_clock(clk)
    bound = _accel_bound_kernel(thrust, vel, controls[0], controls[1])
    due = np.zeros(0, np.int64)
    if not bound.min() >= 0.0:  # NaN fails it too
        return BAD_BOUND, r1, r2, r3, r3, 0.0, steps, bound, due, 0.0, 0, 0, 0, NO_PAIRS
    due = _due_ships(t, bound, a_ref, ship_end, dirty)
    status, rmax, n_outside, found = SCHEDULED, 0.0, 0, 0
    if len(due):
        status, rmax, n_outside, found = _reball_kernel(due, t, pos, vel, bound, *reball)
        if status != SCHEDULED:
            return status, r1, r2, r3, r3, 0.0, steps, bound, due, rmax, n_outside, found, 0, NO_PAIRS
    examined, pairs = _st_pairs(t, pos, vel, a_ref, reball[2], *schedule)
    r4 = read_clock(clk)
    start, target, render, margin, samples_left, overrun, rest = budget_args
    budget = detection_budget_kernel(target, render, read_clock(clk) - start, margin, samples_left, overrun, rest)
    return SCHEDULED, r1, r2, r3, r4, budget, steps, bound, due, rmax, n_outside, found, examined, pairs


@njit(cache=True)
def _detect_forced(clk, pos, vel, dirty, pairs, detection):
    """The narrow phase of a sample with no budget (its forced levels, refine._Search.levels and
    exact_level with the deadline passed), its summary, the response and the verdict tally, reading
    the clock `clk` where pipeline._detect and the refinement do, moving the ships `pos`, `vel` and
    marking `dirty` those the response moved. detection (CompiledSample._detection): (quat, inv_mass,
    model_id, radius, T, narrow, scratch, width, fair, response) — narrow: (VA, VB, banks, max_level,
    levels, min_level, exact) of CompiledSample; scratch, width, fair: search_levels'; response:
    (restitution, separation_speed). Returns (the narrow phase's clock reads r6, r8, the response's
    r9, r10; the pairs (k, 2) int64; summarize_stacks's arrays; the hits' CSR pointers (none);
    time_used; the wall time inside search_levels; the ships moved; the tally)."""
    quat, inv_mass, model_id, radius, T, narrow, scratch, width, fair, response = detection
    VA, VB, banks, max_level, levels, min_level, exact = narrow
    r6 = read_clock(clk)
    read_clock(clk)  # the deadline: that read plus a zero budget
    _poses(quat, pos, T)
    rows = pairs.astype(np.int64)
    k = len(rows)
    start = read_clock(clk)
    plan = scratch_views(scratch, k, width)[4]
    plan[0] = -1
    read_clock(clk)
    w0 = read_wall()
    n, more, leaves = search_levels(VA, VB, banks, (model_id.astype(np.int64), T, rows, max_level), scratch, k, width,
                                    fair, min_level, 0)
    busy = read_wall() - w0 if n else 0.0
    if n:
        read_clock(clk)
    if more:  # a level's first read, then the check that finds the deadline passed
        read_clock(clk)
        read_clock(clk)
    if exact and leaves:  # the exact level's batches: their first read, then the same check
        read_clock(clk)
        read_clock(clk)
    hit_ptr = np.zeros(k + 1, np.int64)
    summary = summarize_stacks(VA, VB, scratch, k, width, hit_ptr, levels, rows, fair)
    time_used = read_clock(clk) - start
    r8 = read_clock(clk)
    r9 = read_clock(clk)
    changed = _respond_hits_kernel(vel, inv_mass, pos, rows, summary[0], summary[5], response[0], response[1])
    _mark_dirty(changed, dirty)
    r10 = read_clock(clk)
    tally = _tally_verdicts(summary[0], summary[1], summary[2], rows, radius, summary[3])
    return r6, r8, r9, r10, rows, summary, hit_ptr, time_used, busy, len(changed), tally
