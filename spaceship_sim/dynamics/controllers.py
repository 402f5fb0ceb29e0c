"""Controllers: who sets each ship's controls (state.thrust, state.omega_cmd).

Body axes: +x nose, +y left (port), +z up. Controls are Hubbard's: a forward acceleration
along +x (thrust [m/s^2], |thrust| <= max_thrust) and a commanded body-frame rotational
velocity (omega_cmd [rad/s], each component within ±max_angular_rate).

- KeyboardController: the user's ship from an abstract KeyState (the app maps real keys to
  action names). Brake (overrides the other keys while held): zero rotation command and thrust
  against the forward velocity component, v_fwd = v · nose, thrust = clip(-v_fwd / BRAKE_TIME,
  ±max_thrust) — full thrust while fast, easing off so the ship stops without oscillating
  (sideways velocity is left to drag).
- RandomAutopilot: the paper's autonomous ships; each draws a new thrust U[0, thrust_fraction_max
  · max_thrust] and omega_cmd U[-max_angular_rate, max_angular_rate]^3 at t = 0 and then every
  U[change_interval_min, change_interval_max] s of simulation time; one seeded generator, draws
  in ship order, so equal call times give equal controls.
- ScriptedAutopilot: ships of cfg.script.paths fly through their waypoints (see its docstring).

Each `update(t, state, ...)` writes the controls of its ships and returns an (n,) bool mask of
the ships whose controls changed (the broad phase re-predicts them).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from ..config import Config
from ..state import ShipState, quat_to_matrix

BRAKE_TIME = 0.5     # [s] forward speed the brake removes per second of full thrust, as a time scale
STEER_GAIN = 3.0     # [1/s] rotation command per radian between the nose and the wanted direction
SPEED_TIME = 1.0     # [s] scripted ships correct velocity errors over about this time
LOOKAHEAD_TIME = 1.0  # [s] scripted ships aim this far ahead along their leg (cross-track decay time)


class KeyState(set):
    """The set of pressed action names. Use the constants; press/release check the name."""

    THRUST_FORWARD = "thrust_forward"
    THRUST_BACK = "thrust_back"
    YAW_LEFT = "yaw_left"
    YAW_RIGHT = "yaw_right"
    PITCH_UP = "pitch_up"
    PITCH_DOWN = "pitch_down"
    ROLL_LEFT = "roll_left"
    ROLL_RIGHT = "roll_right"
    BRAKE = "brake"
    ACTIONS = (THRUST_FORWARD, THRUST_BACK, YAW_LEFT, YAW_RIGHT, PITCH_UP, PITCH_DOWN, ROLL_LEFT,
               ROLL_RIGHT, BRAKE)

    def press(self, action: str) -> None:
        if action not in self.ACTIONS:
            raise ValueError(f"unknown action {action!r} (known: {', '.join(self.ACTIONS)})")
        self.add(action)

    def release(self, action: str) -> None:
        self.discard(action)


def _set_controls(state: ShipState, ships: np.ndarray, thrust: np.ndarray, omega_cmd: np.ndarray) -> np.ndarray:
    """Write controls of `ships` ((k,) int); returns the (n,) mask of ships whose controls changed."""
    changed = np.zeros(state.n, bool)
    diff = (state.thrust[ships] != thrust) | np.any(state.omega_cmd[ships] != omega_cmd, axis=1)
    changed[ships[diff]] = True
    state.thrust[ships] = thrust
    state.omega_cmd[ships] = omega_cmd
    return changed


class KeyboardController:
    """Flies `ship` from a KeyState. Yaw left turns the nose toward +y (about +z), pitch up toward
    +z (about -y), roll left lowers the left wing (about -x)."""

    # (action, body axis, sign) of each rotation key
    _ROTATIONS = ((KeyState.ROLL_LEFT, 0, -1.0), (KeyState.ROLL_RIGHT, 0, 1.0), (KeyState.PITCH_UP, 1, -1.0),
                  (KeyState.PITCH_DOWN, 1, 1.0), (KeyState.YAW_LEFT, 2, 1.0), (KeyState.YAW_RIGHT, 2, -1.0))

    def __init__(self, cfg: Config, ship: int = 0):
        self.controls, self.ship = cfg.controls, int(ship)

    def commands(self, state: ShipState, keys: set) -> tuple[float, np.ndarray]:
        """(thrust, omega_cmd (3,)) that the keys ask for."""
        c, omega = self.controls, np.zeros(3)
        if KeyState.BRAKE in keys:
            v_fwd = float(state.vel[self.ship] @ quat_to_matrix(state.quat[self.ship])[:, 0])
            return float(np.clip(-v_fwd / BRAKE_TIME, -c.max_thrust, c.max_thrust)), omega
        thrust = c.max_thrust * ((KeyState.THRUST_FORWARD in keys) - (KeyState.THRUST_BACK in keys))
        for action, axis, sign in self._ROTATIONS:
            if action in keys:
                omega[axis] += sign * c.max_angular_rate
        return float(thrust), omega

    def update(self, t: float, state: ShipState, keys: set) -> np.ndarray:
        thrust, omega = self.commands(state, keys)
        return _set_controls(state, np.array([self.ship]), np.array([thrust]), omega[None])


class RandomAutopilot:
    """The paper's random autopilot for `ships` ((k,) int array), seeded and deterministic."""

    def __init__(self, cfg: Config, ships: np.ndarray, seed: int):
        self.controls, self.autopilot = cfg.controls, cfg.autopilot
        self.ships = np.asarray(ships, dtype=np.int64).reshape(-1)
        self.rng = np.random.default_rng(seed)
        self.next_change = np.zeros(len(self.ships))  # [s] simulation time of each ship's next draw
        self.soonest = -np.inf  # [s] no ship is due before this (the earliest next_change once known)
        # rng's standard uniforms drawn ahead and consumed in order from u_next: a block of them is
        # the same sequence as the draws one at a time, and one generator call per block, not per draw
        self.u, self.u_next = np.zeros(0), 0

    def update(self, t: float, state: ShipState, compiled: bool = False) -> np.ndarray:
        """compiled: find the due ships and apply their draws in one numba call (_apply_due; the
        same numbers) — False: numpy, which needs no compiling."""
        if t < self.soonest:  # no ship due (many frames): no array work at all
            return np.zeros(state.n, bool)
        self._draw_ahead(DRAWS * len(self.ships))  # enough for every ship at once
        c, a = self.controls, self.autopilot
        limits = (a.thrust_fraction_max * c.max_thrust, c.max_angular_rate, a.change_interval_min,
                  a.change_interval_max)
        if compiled:  # a draw is due in most frames: its dozen small numpy calls in one
            changed, self.soonest, self.u_next = _apply_due(t, self.u, self.u_next, self.ships, self.next_change,
                                                            *limits, state.thrust, state.omega_cmd)
            return changed
        due = np.flatnonzero(self.next_change <= t)
        if len(due) == 0:
            self.soonest = float(self.next_change.min()) if len(self.ships) else np.inf
            return np.zeros(state.n, bool)
        k = len(due)
        # each ship's 5 uniforms split as three uniform() calls would draw them (thrust, omega, interval)
        u = self.u[self.u_next:self.u_next + DRAWS * k]
        self.u_next += DRAWS * k
        thrust = _uniform(u[:k], 0.0, limits[0])
        omega = _uniform(u[k:4 * k].reshape(k, 3), -limits[1], limits[1])
        interval = _uniform(u[4 * k:], limits[2], limits[3])
        # from the scheduled time, not from t, so the schedule does not drift with the frame rate
        self.next_change[due] = np.maximum(self.next_change[due] + interval, t)
        self.soonest = float(self.next_change.min())
        return _set_controls(state, self.ships[due], thrust, omega)

    def _draw_ahead(self, count: int) -> None:
        """At least `count` uniforms not consumed yet in self.u."""
        if len(self.u) - self.u_next < count:
            self.u = np.concatenate([self.u[self.u_next:], self.rng.random(max(DRAW_BLOCK, count))])
            self.u_next = 0


DRAWS = 5  # standard uniforms per ship draw: thrust, omega (3), interval
DRAW_BLOCK = 4096  # uniforms drawn ahead at a time (RandomAutopilot.u)


@njit(cache=True)
def _apply_due(t, u, u_next, ships, next_change, thrust_max, max_rate, interval_min, interval_max, thrust, omega_cmd):
    """RandomAutopilot.update's numpy lines, ship by ship in the same order and with the same
    operations: the k ships with next_change <= t (in index order) get controls from u[u_next:]
    (5k uniforms: the thrust block, the omega block, the interval block) and their next draw times;
    returns (the (n,) mask of ships whose controls changed, the earliest next draw, the new u_next)."""
    k = 0
    for i in range(len(next_change)):
        k += next_change[i] <= t
    changed = np.zeros(len(thrust), np.bool_)
    q = 0
    for i in range(len(next_change)):
        if next_change[i] > t:
            continue
        s = ships[i]
        new_thrust = 0.0 + (thrust_max - 0.0) * u[u_next + q]
        diff = thrust[s] != new_thrust
        for c in range(3):
            w = -max_rate + (max_rate - -max_rate) * u[u_next + k + 3 * q + c]
            diff |= omega_cmd[s, c] != w
            omega_cmd[s, c] = w
        thrust[s] = new_thrust
        changed[s] |= diff
        interval = interval_min + (interval_max - interval_min) * u[u_next + 4 * k + q]
        next_change[i] = max(next_change[i] + interval, t)
        q += 1
    soonest = next_change.min() if len(next_change) else np.inf
    return changed, soonest, u_next + DRAWS * k


def _uniform(u: np.ndarray, low: float, high: float) -> np.ndarray:
    """Generator.uniform(low, high) from its standard uniform draws u, computed as numpy computes
    it (low + (high - low) · u), so bit for bit the values uniform() would have returned."""
    return low + (high - low) * u


class ScriptedAutopilot:
    """Flies the ships of cfg.script.paths through their waypoints.

    Each ship flies the leg from its previous waypoint to the current one: it aims at the carrot,
    the point LOOKAHEAD_TIME · speed further along the leg than the ship's projection onto it (the
    waypoint itself once that is nearer; before its first waypoint, the waypoint), so a ship pushed
    off its leg (a collision, an overshot turn) returns to the drawn line and crosses other paths
    where they were drawn. It wants the velocity v_want = speed · (carrot - x)/|carrot - x| and asks
    for the acceleration a = (v_want - v) / SPEED_TIME + drag · v (the drag term holds cruise speed).
    It turns its nose toward a (omega_cmd = STEER_GAIN · angle about nose × a, clipped to
    max_angular_rate) and thrusts with the part of a along the nose (clipped to [0, max_thrust]).
    Within arrive_radius the next waypoint becomes the goal; after the last one the path starts
    again when `loop`, otherwise the ship holds station at the last point.
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.paths = cfg.script.paths
        self.ships = np.array([p.ship for p in self.paths], dtype=np.int64)
        self.target = np.zeros(len(self.paths), np.int64)  # index of each path's current waypoint
        self.laps = np.zeros(len(self.paths), np.int64)    # waypoints reached so far

    def goals(self, state: ShipState) -> np.ndarray:
        """Advance past reached waypoints; return the (k, 3) current goal of each path."""
        goals = np.zeros((len(self.paths), 3))
        for j, p in enumerate(self.paths):
            pts = np.asarray(p.points, dtype=np.float64)
            if np.linalg.norm(pts[self.target[j]] - state.pos[p.ship]) < p.arrive_radius:
                last = self.target[j] == len(pts) - 1
                if not last or p.loop:
                    self.laps[j] += 1
                    self.target[j] = (self.target[j] + 1) % len(pts)
            goals[j] = pts[self.target[j]]
        return goals

    def leg_starts(self, state: ShipState) -> np.ndarray:
        """(k, 3) start of each path's current leg: the previous waypoint, or the ship's own
        position while it has not reached a waypoint yet (it then flies straight to it)."""
        starts = state.pos[self.ships].copy()
        for j, p in enumerate(self.paths):
            if self.laps[j] > 0:
                starts[j] = p.points[self.target[j] - 1]  # index -1: the last point, when looping
        return starts

    def carrots(self, state: ShipState, goals: np.ndarray) -> np.ndarray:
        """(k, 3) the point each ship aims at: LOOKAHEAD_TIME · speed past its projection onto
        its leg, capped at the leg's end (the goal)."""
        start = self.leg_starts(state)
        leg = goals - start
        length = np.linalg.norm(leg, axis=1)
        unit = np.divide(leg, length[:, None], out=np.zeros_like(leg), where=length[:, None] > 0)
        along = np.einsum("kj,kj->k", state.pos[self.ships] - start, unit)
        lookahead = LOOKAHEAD_TIME * np.array([p.speed for p in self.paths])
        ahead = np.clip(along + lookahead, 0.0, length)
        return start + unit * ahead[:, None]

    def update(self, t: float, state: ShipState) -> np.ndarray:
        if len(self.paths) == 0:
            return np.zeros(state.n, bool)
        c, s = self.cfg.controls, self.ships
        goals = self.goals(state)
        dist = np.linalg.norm(goals - state.pos[s], axis=1, keepdims=True)
        speed = np.array([[p.speed] for p in self.paths])
        # hold station at a final, non-looping waypoint reached: aim to stop there
        speed = np.where(dist < np.array([[p.arrive_radius] for p in self.paths]), 0.0, speed)
        to_carrot = self.carrots(state, goals) - state.pos[s]
        v_want = speed * to_carrot / np.maximum(np.linalg.norm(to_carrot, axis=1, keepdims=True), 1e-9)
        accel = (v_want - state.vel[s]) / SPEED_TIME + c.drag * state.vel[s]
        rot = quat_to_matrix(state.quat[s])                # body -> world
        a_body = np.einsum("kji,kj->ki", rot, accel)       # R^T a
        thrust = np.clip(a_body[:, 0], 0.0, c.max_thrust)
        return _set_controls(state, s, thrust, self._steer(a_body, c.max_angular_rate))

    @staticmethod
    def _steer(a_body: np.ndarray, max_rate: float) -> np.ndarray:
        """(k, 3) body rotation command turning +x toward the body-frame directions a_body (k, 3)."""
        axis = np.stack([np.zeros(len(a_body)), -a_body[:, 2], a_body[:, 1]], axis=1)  # e_x × a
        sin = np.linalg.norm(axis, axis=1)
        angle = np.arctan2(sin, a_body[:, 0])
        unit = np.divide(axis, sin[:, None], out=np.zeros_like(axis), where=sin[:, None] > 1e-12)
        # straight behind: any perpendicular axis will do
        behind = (sin <= 1e-12) & (a_body[:, 0] < 0)
        unit[behind] = (0.0, 0.0, 1.0)
        return np.clip(STEER_GAIN * angle[:, None] * unit, -max_rate, max_rate)


class Controllers:
    """All ships' controllers composed. Who flies whom (`from_config`):
    - ships named in cfg.script.paths: ScriptedAutopilot,
    - ship 0 with user="keyboard": KeyboardController (a script path for ship 0 is then ignored:
      the person at the keyboard flies),
    - every other ship (ship 0 too with user="autopilot" unless scripted): RandomAutopilot
      seeded with cfg.sim.seed.
    `.keys` is the KeyState the keyboard reads (the app presses/releases actions in it).
    """

    def __init__(self, n: int, keyboard: KeyboardController | None, random: RandomAutopilot,
                 scripted: ScriptedAutopilot):
        self.n, self.keyboard, self.random, self.scripted = n, keyboard, random, scripted
        self.keys = KeyState()

    @classmethod
    def from_config(cls, cfg: Config, n: int, user: str = "keyboard") -> "Controllers":
        if user not in ("keyboard", "autopilot"):
            raise ValueError(f"user must be 'keyboard' or 'autopilot', got {user!r}")
        keyboard = KeyboardController(cfg, 0) if user == "keyboard" and n > 0 else None
        paths = tuple(p for p in cfg.script.paths if p.ship < n and not (keyboard and p.ship == 0))
        script_cfg = dataclasses.replace(cfg, script=dataclasses.replace(cfg.script, paths=paths))
        taken = {p.ship for p in paths} | ({0} if keyboard else set())
        others = np.array([i for i in range(n) if i not in taken], dtype=np.int64)
        return cls(n, keyboard, RandomAutopilot(cfg, others, cfg.sim.seed), ScriptedAutopilot(script_cfg))

    def update(self, t: float, state: ShipState, compiled: bool = False) -> np.ndarray:
        """Run every controller at simulation time t [s]; (n,) bool mask of changed controls.
        compiled: the random autopilot's numba kernel (the same controls; False: numpy only)."""
        changed = self.random.update(t, state, compiled)  # a fresh mask: or-ed into in place
        if self.scripted.paths:
            changed |= self.scripted.update(t, state)
        if self.keyboard is not None:
            changed |= self.keyboard.update(t, state, self.keys)
        return changed
