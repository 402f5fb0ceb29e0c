"""Shared builders for the dynamics tests: configs, random states, closed-form motion."""
from __future__ import annotations

import dataclasses

import numpy as np

from spaceship_sim.config import Config
from spaceship_sim.state import ShipState, quat_to_matrix


def make_cfg(integrator=None, controls=None, **sections) -> Config:
    """Config() with fields of the integrator/controls sections (dicts) and whole sections replaced."""
    cfg = Config()
    if integrator:
        sections["integrator"] = dataclasses.replace(cfg.integrator, **integrator)
    if controls:
        sections["controls"] = dataclasses.replace(cfg.controls, **controls)
    return dataclasses.replace(cfg, **sections)


def fixed_step_cfg(h: float) -> Config:
    """Every attempt accepted at exactly h: min_step = max_step = h, tolerance out of reach."""
    return make_cfg(integrator=dict(min_step=h, max_step=h, tolerance=1e9, max_substeps=100_000))


def random_state(rng, n: int, spin: bool = True) -> ShipState:
    """n ships with random pose, velocity (<= 30 m/s), controls within the default limits;
    spin=False gives ω = omega_cmd = 0 (the closed-form case)."""
    s = ShipState.zeros(n)
    s.pos[:] = rng.uniform(-100, 100, (n, 3))
    s.vel[:] = rng.uniform(-1, 1, (n, 3)) * 17
    q = rng.normal(size=(n, 4))
    s.quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    s.thrust[:] = rng.uniform(-20, 20, n)
    if spin:
        s.omega[:] = rng.uniform(-1.5, 1.5, (n, 3))
        s.omega_cmd[:] = rng.uniform(-1.5, 1.5, (n, 3))
    return s


def closed_form(s0: ShipState, drag: float, t: float):
    """Exact (pos, vel) after t [s] for ω = omega_cmd = 0: constant nose d, thrust a, so
    v(t) = v∞ + (v0 − v∞) e^(−drag t), x(t) = x0 + v∞ t + (v0 − v∞)(1 − e^(−drag t))/drag, v∞ = a d / drag."""
    nose = quat_to_matrix(s0.quat)[:, :, 0]
    v_inf = s0.thrust[:, None] * nose / drag
    decay = np.exp(-drag * t)
    vel = v_inf + (s0.vel - v_inf) * decay
    pos = s0.pos + v_inf * t + (s0.vel - v_inf) * (1 - decay) / drag
    return pos, vel


def integrate(integrator, state: ShipState, total: float, dt: float):
    """Call integrator.step until `total` [s] has passed in calls of dt; returns the StepStats list."""
    calls = int(round(total / dt))
    return [integrator.step(state, dt) for _ in range(calls)]
