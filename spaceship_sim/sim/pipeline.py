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

import numpy as np

from . import compiled_sample
from ..config import samples_per_frame
from ..dynamics import accel_bound, contain
from ..narrowphase import refine_roots
from ..narrowphase.exact_only import exact_frame
from ..response import respond, respond_hits
from .stats import FrameStats, detection_budget

NO_PAIRS = np.zeros((0, 2), np.int64)


def step(world) -> FrameStats:
    """Advance `world` by one frame; returns the frame's stats (render fields filled later)."""
    cfg, state, clock = world.config, world.state, world.clock
    start, t0 = clock(), world.t
    stats = FrameStats(frame=world.frame, target=world.target_frame_time,
                       render_predicted=world.render_predictor.predict())
    # each stage's time: a clock read on either side (no context manager: its three Python-level
    # calls a stage are frame objects more to run with cold caches after the render)
    t = clock()
    world.broad.invalidate(world.controllers.update(world.t, state, world.compiled))  # a mask
    stats.t_controls = clock() - t
    n_samples = samples_per_frame(cfg.sim.frame_dt, cfg.sim.min_temporal_resolution)
    dt = cfg.sim.frame_dt / n_samples
    fused = compiled_sample.for_world(world)  # the common sample in one numba call, or None
    for sample in range(n_samples):
        left = n_samples - sample
        if fused is None:
            pairs, budget, before = _advance(world, stats, start, left, dt)
            narrow = _detect(world, stats, pairs, budget, before)
        else:
            pairs, budget, narrow = fused.sample(world, stats, start, left, dt)
            if narrow is None:  # the kernel stopped early: Python goes on from there
                budget = sample_budget(world, stats, start, left) if budget is None else budget
                narrow = _detect(world, stats, pairs, budget, None)
        if math.isfinite(budget):  # what the narrow phase overran its deadline by
            world.overrun_predictor.record(max(0.0, narrow.time_used - budget))
        world.last_narrow = narrow
    world.t = t0 + cfg.sim.frame_dt  # no drift from summing sample steps
    stats.sim_time = world.t
    stats.samples = n_samples
    stats.t_other = max(0.0, clock() - start - stats.t_sim)  # the frame's time is all of it, not the stages'
    world.fixed_predictor.record(stats)
    return stats


def _advance(world, stats: FrameStats, start: float, samples_left: int, dt: float):
    """A sample's first half: integration over dt [s] (and the arena rule), the broad phase and the
    narrow phase's budget. Returns (pairs, budget, before: the swept test's start poses or None)."""
    cfg, state, clock, field = world.config, world.state, world.clock, world.field
    t = clock()
    before = field.transforms(state, world.compiled) if world.swept else None  # start poses of the swept test
    stats.add_integration(world.integrator.step(state, dt))
    world.broad.invalidate(contain(state, cfg.arena.size, world.compiled))
    field.integrate(dt, world.compiled)  # asteroids (convex/field.py), bodies n.. after the ships; NoField when none
    world.t += dt
    stats.t_integrate = stats.t_integrate + clock() - t

    t = clock()
    bound = accel_bound(state, cfg.controls, world.compiled)
    pairs = world.broad.find_pairs(world.t, state.pos, state.vel, bound)
    if field.count:  # ship–asteroid pairs
        pairs = np.concatenate([pairs, field.ship_pairs(state, world.compiled)])
    stats.t_broad = stats.t_broad + clock() - t
    return pairs, sample_budget(world, stats, start, samples_left), before


def sample_budget(world, stats: FrameStats, start: float, samples_left: int) -> float:
    """The narrow phase's budget for this sample [s] (inf when not time-critical)."""
    if not world.time_critical:
        return math.inf
    return detection_budget(stats.target, stats.render_predicted, spent=world.clock() - start,
                            margin=world.config.collision.safety_margin, samples_left=samples_left,
                            overrun=world.overrun_predictor.predict(),
                            rest=world.fixed_predictor.predict(samples_left))


def _detect(world, stats: FrameStats, pairs, budget: float, before):
    """A sample's second half: the narrow phase within `budget`, the response, the sample's stats.
    Returns the narrow phase's answer."""
    cfg, state, clock, field = world.config, world.state, world.clock, world.field
    t = clock()  # two reads, as before: a TickClock run counts them
    deadline = clock() + budget  # first: on-collide trees' evictions (maintain) count against it
    world.bank.maintain(world.t)  # on-collide trees evict what went unused (prebuilt: nothing)
    convex = field.collide(world.compiled)  # asteroid pairs: exact and cheap, first on the budget
    model_id, T = field.model_ids(state), field.transforms(state, world.compiled)
    narrow = narrow_phase(world, model_id, T, pairs, deadline=deadline)
    if before is not None and world.compiled:  # crossings between samples (faceoctree.continuous)
        moved = world.swept.catch(narrow, state, before, T, world.bank.max_level)
        world.broad.invalidate(moved)
    stats.t_narrow = stats.t_narrow + clock() - t

    t = clock()
    changed = collision_response(field, state, narrow, convex, cfg.collision, world.compiled)
    if len(changed):
        world.broad.invalidate(changed[changed < state.n])
    stats.t_response = stats.t_response + clock() - t
    stats.add_detection(narrow, budget, len(changed), field.radii(state), convex, world.compiled)
    return narrow


def narrow_phase(world, model_id, T, pairs, deadline: float):
    """The sample's narrow phase over the bodies of models model_id (n,) at poses T (n, 4, 4)
    (ships, then asteroids): the world's exact strategy alone when it has one (an exact-only
    baseline), else the sphere trees refined until the deadline, the pairs least refined so far
    first (fairness.py) — on root spheres only while numba compiles their kernels."""
    clock = world.clock
    if world.exact is not None:
        return exact_frame(world.exact, world.bank, model_id, T, pairs, all_contacts=world.narrow.all_contacts,
                           clock=clock)
    if not world.compiled:
        return refine_roots(world.bank, model_id, T, pairs, clock=clock)
    return world.narrow(world.bank, model_id, T, pairs, deadline=deadline, clock=clock, fair=world.fair)


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
