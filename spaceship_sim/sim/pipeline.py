"""The frame, in the order Hubbard gives it.

controllers -> [integrate -> broad phase -> narrow phase within budget -> response] per
detection sample. A frame advances simulation time by `sim.frame_dt`, cut into equal samples
no longer than `sim.min_temporal_resolution` so collision detection never samples coarser.
The narrow phase gets what is left of the target frame time after the predicted render time,
the stages already run, those still to come (predicted from recent frames: response, the later
samples' integration and broad phase, the bookkeeping) and a safety margin, shared out over the
frame's remaining samples, less
the predicted overrun: what recent samples spent past their deadline (the refinement checks the
clock only between batches, and its final summary runs after the last check).

A sample is `_advance` (integration to the budget) then `_detect` (narrow phase, response,
statistics); in the common case both run as one numba call instead (compiled_sample.py), which
hands back to them wherever it stops early.
"""
from __future__ import annotations

import math
from time import perf_counter, thread_time
from typing import NamedTuple

import numpy as np

from . import compiled_sample
from ..config import Config, samples_per_frame
from ..dynamics import accel_bound, contain
from ..narrowphase import refine_roots
from ..narrowphase.exact_only import exact_frame
from ..response import respond, respond_hits
from .frame import SimState, Stages, Timing
from .stats import FrameStats, detection_budget

NO_PAIRS = np.zeros((0, 2), np.int64)
# the lateness the narrowing leaves free: the second highest of the last frames' (the budgets hold back
# the third highest): all but a lone outlier, since the more of the core a frame uses, the more a busy
# machine's scheduler takes back later in it (measured with both cores taken, the same runs alternating:
# planned against the third highest, the narrowing cost 8 points of frames within target at a 28.3 ms render).
# The frame's last sample leaves the highest free: what the OS takes from an earlier sample, the samples
# after it give back from their budgets, but what it takes from the last delays the render (measured the
# same way at a 26 ms render: 92.9% of frames within target in three runs, 94.6-95.6% leaving the highest)
NARROWING_LATENESS_QUANTILE = 0.975
LAST_SAMPLE_LATENESS_QUANTILE = 1.0


class _Sample(NamedTuple):
    """A sample's inputs: the frame's and the sample's own."""

    stages: Stages
    sim: SimState
    timing: Timing
    config: Config
    stats: FrameStats
    start: float        # the frame's start on the clock [s]
    samples_left: int   # this sample and those after it in the frame
    dt: float           # the sample's simulated time [s]


def step(stages: Stages, sim: SimState, timing: Timing, config: Config) -> FrameStats:
    """Advance `sim` by one frame; returns the frame's stats (render fields filled later)."""
    clock, state, t0 = timing.clock, sim.state, sim.t
    start = clock()
    wall, cpu = perf_counter(), thread_time()  # instruments (t_off_core), never a decision
    stats = FrameStats(frame=sim.frame, target=timing.target_frame_time, render_predicted=timing.render.predict(),
                       margin=timing.margin())
    # each stage's time: a clock read on either side (no context manager: its three Python-level
    # calls a stage are frame objects more to run with cold caches after the render)
    t = clock()
    stages.broad.invalidate(stages.controllers.update(sim.t, state, stages.compiled))  # a mask
    stats.t_controls = clock() - t
    n_samples = samples_per_frame(config.sim.frame_dt, config.sim.min_temporal_resolution)
    dt = config.sim.frame_dt / n_samples
    one_call = compiled_sample.for_frame(stages, sim, timing)  # the common sample in one numba call, or None
    for sample in range(n_samples):
        s = _Sample(stages, sim, timing, config, stats, start, n_samples - sample, dt)
        if one_call is None:
            pairs, budget, before = _advance(s)
            narrow = _detect(s, pairs, budget, before)
        else:
            pairs, budget, narrow = one_call.sample(s)
            if narrow is None:  # the kernel stopped early: Python goes on from there
                budget = sample_budget(s) if budget is None else budget
                narrow = _detect(s, pairs, budget, None)
        if math.isfinite(budget):  # what the narrow phase overran its deadline by
            timing.overrun.observe(max(0.0, narrow.time_used - budget))
        sim.last_narrow = narrow
    sim.t = t0 + config.sim.frame_dt  # no drift from summing sample steps
    stats.sim_time = sim.t
    stats.samples = n_samples
    stats.t_other = max(0.0, clock() - start - stats.t_sim)  # the frame's time is all of it, not the stages'
    stats.t_off_core = max(0.0, (perf_counter() - wall) - (thread_time() - cpu))
    timing.fixed.record(stats)
    return stats


def _advance(s: _Sample):
    """A sample's first half: integration over dt [s] (and the arena rule), the broad phase and the
    narrow phase's budget. Returns (pairs, budget, before: the swept test's start poses or None)."""
    p, sim, stats, clock = s.stages, s.sim, s.stats, s.timing.clock
    state, field = sim.state, p.field
    t = clock()
    before = field.transforms(state, p.compiled) if p.swept else None  # start poses of the swept test
    stats.add_integration(p.integrator.step(state, s.dt))
    p.broad.invalidate(contain(state, s.config.arena.size, p.compiled))
    field.integrate(s.dt, p.compiled)  # asteroids (convex/field.py), bodies n.. after the ships; NoField when none
    sim.t += s.dt
    stats.t_integrate = stats.t_integrate + clock() - t

    t = clock()
    bound = accel_bound(state, s.config.controls, p.compiled)
    pairs = p.broad.find_pairs(sim.t, state.pos, state.vel, bound)
    if field.count:  # ship–asteroid pairs
        pairs = np.concatenate([pairs, field.ship_pairs(state, p.compiled)])
    stats.t_broad = stats.t_broad + clock() - t
    return pairs, sample_budget(s), before


def sample_budget(s: _Sample) -> float:
    """The narrow phase's budget for this sample [s] (inf when not time-critical)."""
    timing = s.timing
    if not timing.time_critical:
        return math.inf
    return detection_budget(s.stats.target, s.stats.render_predicted, spent=timing.clock() - s.start,
                            margin=s.stats.margin, samples_left=s.samples_left,
                            overrun=timing.overrun.predict(), rest=timing.fixed.predict(s.samples_left))


def _detect(s: _Sample, pairs, budget: float, before):
    """A sample's second half: the narrow phase within `budget`, the response, the sample's stats.
    Returns the narrow phase's answer."""
    p, sim, stats, clock = s.stages, s.sim, s.stats, s.timing.clock
    state, field = sim.state, p.field
    t = clock()
    deadline = t + budget  # first: on-collide trees' evictions (maintain) count against it
    p.bank.maintain(sim.t)  # on-collide trees evict what went unused (prebuilt: nothing)
    convex = field.collide(p.compiled)  # asteroid pairs: exact and cheap, first on the budget
    model_id, T = field.model_ids(state), field.transforms(state, p.compiled)
    # the narrowing (and the exact distances of pairs found apart) is work a frame can do without: it leaves
    # the lateness the machine has shown free, so that when the OS takes the core mid-sample the verdicts
    # of the samples after it and the frame keep their time (on a quiet machine it is nothing)
    narrow = _narrow(p, model_id, T, pairs, deadline, clock,
                     tighten_until=deadline - s.timing.lateness(LAST_SAMPLE_LATENESS_QUANTILE if s.samples_left == 1
                                                                else NARROWING_LATENESS_QUANTILE))
    if before is not None and p.compiled:  # crossings between samples (faceoctree.continuous)
        moved = p.swept.catch(narrow, state, before, T, p.bank.max_level)
        p.broad.invalidate(moved)
    stats.t_narrow = stats.t_narrow + clock() - t

    t = clock()
    changed = collision_response(field, state, narrow, convex, s.config.collision, p.compiled)
    if len(changed):
        p.broad.invalidate(changed[changed < state.n])
    stats.t_response = stats.t_response + clock() - t
    stats.add_detection(narrow, budget, len(changed), field.radii(state), convex, p.compiled)
    return narrow


def _narrow(p: Stages, model_id, T, pairs, deadline: float, clock, tighten_until: float = math.inf):
    """The sample's narrow phase over the bodies of models model_id (n,) at poses T (n, 4, 4)
    (ships, then asteroids): the exact-only strategy alone when there is one (a baseline), else the
    sphere trees refined until the deadline, the pairs least refined so far first (fairness.py) —
    on root spheres only while numba compiles their kernels."""
    if p.exact_only is not None:
        return exact_frame(p.exact_only, p.bank, model_id, T, pairs, all_contacts=p.narrow.all_contacts, clock=clock)
    if not p.compiled:
        return refine_roots(p.bank, model_id, T, pairs, clock=clock)
    return p.narrow(p.bank, model_id, T, pairs, deadline=deadline, clock=clock, fair=p.fair,
                    tighten_until=tighten_until)


def collision_response(field, state, narrow, convex, collision, compiled: bool) -> np.ndarray:
    """Impulses for the sample's colliding pairs — ship pairs along their contact normals,
    asteroid pairs along their centre lines — applied to the bodies' velocities in place (by the
    numba kernel once compiled); returns the sorted indices of the bodies whose velocity changed."""
    hit = narrow.colliding
    pos, vel, inv_mass = field.bodies(state)
    convex_hits = convex.hits if len(convex.pairs) else NO_PAIRS  # most samples have no asteroid pair
    if compiled and not len(convex_hits):  # the usual sample: ship pairs only, one kernel call
        changed = respond_hits(vel, inv_mass, pos, narrow.pairs, hit, narrow.contact_normal, collision.restitution,
                               collision.separation_speed)
        field.set_velocities(state, vel)
        return changed
    if not hit.any() and not len(convex_hits):
        return np.zeros(0, np.int64)
    hits, normals = narrow.pairs[hit], narrow.contact_normal[hit]
    if len(convex_hits):
        hits = np.concatenate([hits, convex_hits])
        normals = np.concatenate([normals, centre_line(pos, convex_hits)])
    changed = respond(vel, inv_mass, hits, normals, collision.restitution, centre_line(pos, hits),
                      collision.separation_speed, compiled=compiled)
    field.set_velocities(state, vel)
    return changed


def centre_line(pos: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(k, 3) unit directions from each pair's first ship centre to its second (0 if coincident)."""
    d = pos[pairs[:, 1]] - pos[pairs[:, 0]]
    length = np.linalg.norm(d, axis=1, keepdims=True)
    return np.divide(d, length, out=np.zeros_like(d), where=length > 0)
