"""Ships in the arena: the initial placement, the arena rule and the acceleration bound.

Arena rule (`contain`): the arena is the cube [-size/2, size/2]^3 centred at the origin. Its
faces are elastic walls acting on a ship's centre: a ship whose centre lies beyond a face and
whose velocity points outward through it has that velocity component reflected (negated); the
other components are untouched. Ships may poke out by up to their radius and drift out while
the reflected velocity carries them back in (thrust can keep them outside for a while; each
outward excursion is reflected again). This is a velocity discontinuity, so the broad phase
must re-predict the ships it returns.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..config import Config, ConfigError, ControlConfig
from ..state import ShipState

DENSITY = 100.0  # [kg/m^3] of a ship's bounding sphere: mass = DENSITY * 4/3 pi r^3
PLACEMENT_TRIES = 300  # failed random positions for one ship before giving up


def accel_bound(state: ShipState, controls: ControlConfig, compiled: bool = False) -> np.ndarray:
    """(n,) float64 [m/s^2]: a bound on |dv/dt| of each ship valid from now until its velocity
    next jumps (collision response, arena wall), whatever the controls do meanwhile.

    |dv/dt| = |thrust nose - drag v| <= T + drag |v| with T = max(max_thrust, |thrust|), and
    d|v|/dt <= T - drag |v| keeps |v| <= max(|v_now|, T / drag) for all later time.
    compiled: by the numba kernel (the same numbers; False: numpy, which needs no compiling).
    """
    if compiled:
        return accel_bound_kernel(state.thrust, state.vel, float(controls.max_thrust), float(controls.drag))
    t_max = np.maximum(controls.max_thrust, np.abs(state.thrust))
    speed = np.linalg.norm(state.vel, axis=1)
    return t_max + controls.drag * np.maximum(speed, t_max / controls.drag)


def contain(state: ShipState, arena_size: float, compiled: bool = False) -> np.ndarray:
    """Apply the arena rule (module docstring) to state.vel in place.
    Returns (k,) int64: indices of the ships whose velocity changed.
    compiled: by the numba kernel (the same result; False: numpy, which needs no compiling)."""
    half = 0.5 * arena_size
    if compiled:
        return contain_kernel(state.pos, state.vel, half)
    out = ((state.pos > half) & (state.vel > 0)) | ((state.pos < -half) & (state.vel < 0))
    state.vel[out] = -state.vel[out]
    return np.flatnonzero(out.any(axis=1))


@njit(cache=True)
def accel_bound_kernel(thrust, vel, max_thrust, drag):
    """accel_bound's numpy lines ship by ship (the same operations in the same order)."""
    bound = np.empty(len(thrust))
    for i in range(len(thrust)):
        t_max = max(max_thrust, abs(thrust[i]))
        speed = math.sqrt(vel[i, 0] * vel[i, 0] + vel[i, 1] * vel[i, 1] + vel[i, 2] * vel[i, 2])
        bound[i] = t_max + drag * max(speed, t_max / drag)
    return bound


@njit(cache=True)
def contain_kernel(pos, vel, half):
    """contain's numpy lines ship by ship."""
    changed = np.zeros(len(pos), np.bool_)
    for i in range(len(pos)):
        for c in range(3):
            if (pos[i, c] > half and vel[i, c] > 0) or (pos[i, c] < -half and vel[i, c] < 0):
                vel[i, c] = -vel[i, c]
                changed[i] = True
    return np.flatnonzero(changed)


def initial_state(cfg: Config, model_names: list[str], model_radii: np.ndarray) -> ShipState:
    """The seeded state at time 0.

    model_names : the loaded models; model_id indexes this list
    model_radii : (k,) float64 bounding radius of each model [m]
    Ship 0 is the user's (cfg.ships.user_model, inv_mass 0, at rest); ships 1.. take
    cfg.ships.models round-robin with speeds uniform in [0, initial_speed] along random
    directions. Centres are uniform inside the arena (the bounding sphere inside the walls)
    with centre distances >= spacing * (r_i + r_j); orientations are uniform random rotations.
    Scripted ships (cfg.script.paths, ship 0 too) start instead at their path's first waypoint,
    nose and velocity toward the second at the path's speed, so scripted crossings happen on
    cue; the random ships are placed around them.
    Raises ConfigError (key ships.count) when the ships cannot be placed.
    """
    s = cfg.ships
    radii_of = dict(zip(model_names, np.asarray(model_radii, dtype=np.float64)))
    for key, name in [("ships.user_model", s.user_model)] + [(f"ships.models[{j}]", m) for j, m in enumerate(s.models)]:
        if name not in radii_of:
            raise ConfigError(cfg.source, key, f"model {name!r} is not loaded (have: {', '.join(model_names)})")
    names = [s.user_model] + [s.models[(i - 1) % len(s.models)] for i in range(1, s.count)]
    radius = np.array([radii_of[m] for m in names])
    rng = np.random.default_rng(cfg.sim.seed)
    state = ShipState.zeros(s.count)
    state.model_id[:] = [model_names.index(m) for m in names]
    state.radius[:] = radius
    starts = {p.ship: p for p in cfg.script.paths if p.ship < s.count}
    state.pos[:] = _place(radius, cfg, rng, fixed={i: p.points[0] for i, p in starts.items()})
    q = rng.normal(size=(s.count, 4))  # normalised 4D Gaussian = uniform rotation
    state.quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    d = rng.normal(size=(s.count, 3))
    speed = rng.uniform(0.0, s.initial_speed, s.count)
    state.vel[:] = d / np.linalg.norm(d, axis=1, keepdims=True) * speed[:, None]
    state.vel[0] = 0.0
    state.inv_mass[:] = 1.0 / (DENSITY * 4.0 / 3.0 * math.pi * radius ** 3)
    state.inv_mass[0] = 0.0
    for i, path in starts.items():
        _start_on_path(state, i, path)
    return state


def _start_on_path(state: ShipState, i: int, path) -> None:
    """Ship i at the path's first waypoint, nose and velocity toward its next one."""
    pts = np.asarray(path.points, dtype=np.float64)
    leg = pts[1] - pts[0] if len(pts) > 1 else np.zeros(3)
    length = np.linalg.norm(leg)
    if length == 0:
        return  # a one-point path: keep the random heading, hold station from rest
    nose = leg / length
    state.quat[i] = _quat_facing(nose)
    state.vel[i] = path.speed * nose


def _quat_facing(d: np.ndarray) -> np.ndarray:
    """(w, x, y, z) turning body +x onto the unit vector d, body +z kept up: yaw about z
    after a pitch about y."""
    yaw, pitch = math.atan2(d[1], d[0]), -math.asin(float(np.clip(d[2], -1.0, 1.0)))
    c1, s1, c2, s2 = math.cos(yaw / 2), math.sin(yaw / 2), math.cos(pitch / 2), math.sin(pitch / 2)
    return np.array([c1 * c2, -s1 * s2, c1 * s2, s1 * c2])


def _place(radius: np.ndarray, cfg: Config, rng, fixed: dict | None = None) -> np.ndarray:
    """(n, 3) centres, largest ships first, by random trials against a uniform grid of cells
    no smaller than the largest exclusion distance (so only the 27 neighbouring cells matter).
    fixed: {ship: centre} of ships placed as given (not checked against each other)."""
    half, spacing, n = 0.5 * cfg.arena.size, cfg.ships.spacing, len(radius)
    if radius.max() >= half:
        _no_room(cfg, f"a ship of radius {radius.max():g} m does not fit in arena.size {cfg.arena.size:g} m")
    # spheres of radius spacing * r must not overlap; random trials jam near 38% volume fraction
    packed = np.sum(4 / 3 * math.pi * (spacing * radius) ** 3)
    if packed > 0.5 * (2 * half) ** 3:
        _no_room(cfg, f"{n} ships fill {packed / (2 * half) ** 3:.0%} of the arena volume")
    cell = 2 * spacing * radius.max()
    grid: dict[tuple, list[int]] = {}
    pos = np.zeros((n, 3))
    for i, p in (fixed or {}).items():
        pos[i] = p
        grid.setdefault(tuple((pos[i] // cell).astype(int)), []).append(i)
    free = [i for i in np.argsort(-radius, kind="stable") if i not in (fixed or {})]
    for placed, i in enumerate(free):
        lim = half - radius[i]
        for _ in range(PLACEMENT_TRIES):
            p = rng.uniform(-lim, lim, 3)
            key = tuple((p // cell).astype(int))
            near = [j for dk in _NEIGHBOURS for j in grid.get((key[0] + dk[0], key[1] + dk[1], key[2] + dk[2]), ())]
            if not near or np.all(np.linalg.norm(pos[near] - p, axis=1) >= spacing * (radius[near] + radius[i])):
                break
        else:
            _no_room(cfg, f"placed only {placed} of {n} ships without overlap")
        pos[i] = p
        grid.setdefault(key, []).append(i)
    return pos


_NEIGHBOURS = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)]


def _no_room(cfg: Config, why: str):
    raise ConfigError(cfg.source, "ships.count",
                      f"cannot place {cfg.ships.count} ships: {why} (enlarge arena.size, or lower "
                      f"ships.count or ships.spacing)")
