"""Random ship motions that honour the broad-phase contract, for tests and benchmarks.

Ships fly in the box [0, L]^3 with piecewise-constant random accelerations |a| <= A_i, integrated
exactly (x += v·dt + a·dt²/2), so between steps each centre obeys |d²x/dt²| <= A_i. Wall bounces
and random velocity jumps are discontinuities: `step` returns those ships for `invalidate`.
"""
from __future__ import annotations

import math

import numpy as np


def box_for_volume_fraction(radius: np.ndarray, fraction: float) -> float:
    """Side L [m] of the cube in which the ships' spheres fill `fraction` of the volume."""
    return float((4 / 3 * math.pi * np.sum(radius ** 3) / fraction) ** (1 / 3))


class RandomMotion:
    """n ships: radius (n,), box side [m], speed limit [m/s] (ships above it brake), max acceleration
    bound [m/s²].

    accel_change : probability per step that a ship picks a new acceleration (no invalidation).
    jump_rate : probability per step that a ship's velocity jumps (invalidated).
    """

    def __init__(self, radius, box: float, speed: float, accel: float, seed: int = 0,
                 accel_change: float = 0.05, jump_rate: float = 0.0):
        self.rng = rng = np.random.default_rng(seed)
        self.radius = np.asarray(radius, np.float64)
        n = len(self.radius)
        self.box, self.speed, self.accel = float(box), float(speed), float(accel)
        self.accel_change, self.jump_rate = accel_change, jump_rate
        self.pos = rng.uniform(0.0, box, (n, 3))
        self.vel = self._random_vectors(n, speed)
        self.accel_bound = accel * rng.uniform(0.5, 1.0, n)
        self.acc = self._random_vectors(n, 1.0) * self.accel_bound[:, None]
        self.t = 0.0

    def _random_vectors(self, m: int, max_norm: float) -> np.ndarray:
        """(m, 3) vectors of uniformly random direction and norm in [0, max_norm]."""
        d = self.rng.normal(size=(m, 3))
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-300)
        return d * (max_norm * self.rng.uniform(0.0, 1.0, (m, 1)))

    def change_bounds(self, fraction: float) -> np.ndarray:
        """New controls for a random `fraction` of the ships: acceleration bounds redrawn in
        [0, accel] (raised or lowered) with an acceleration within them. Position and velocity
        stay continuous, so nothing is invalidated; pass the new bounds at the next call, before
        stepping (they bound the motion from that call on). Returns the (m,) int64 ships."""
        ships = np.flatnonzero(self.rng.random(len(self.radius)) < fraction)
        self.accel_bound[ships] = self.accel * self.rng.uniform(0.0, 1.0, len(ships))
        self.acc[ships] = self._random_vectors(len(ships), 1.0) * self.accel_bound[ships, None]
        return ships

    def step(self, dt: float) -> np.ndarray:
        """Advance dt [s]; returns the (m,) int64 ships whose motion jumped (to invalidate)."""
        rng, n = self.rng, len(self.radius)
        change = np.flatnonzero(rng.random(n) < self.accel_change)
        self.acc[change] = self._random_vectors(len(change), 1.0) * self.accel_bound[change, None]
        # over the speed limit: brake at full bound (keeps speeds, hence reach, bounded)
        v = np.linalg.norm(self.vel, axis=1)
        fast = v > self.speed
        self.acc[fast] = -self.vel[fast] * (self.accel_bound[fast] / v[fast])[:, None]
        self.pos += self.vel * dt + 0.5 * self.acc * dt * dt
        self.vel += self.acc * dt
        low, high = self.pos < 0.0, self.pos > self.box
        self.pos = np.where(low, -self.pos, np.where(high, 2 * self.box - self.pos, self.pos))
        self.vel = np.where(low | high, -self.vel, self.vel)
        jump = rng.random(n) < self.jump_rate
        self.vel[jump] = self._random_vectors(int(jump.sum()), self.speed)
        self.t += dt
        return np.flatnonzero(jump | (low | high).any(axis=1))
