"""Collision response (Hubbard 1996): exchange momentum along the contact normal.

For a colliding pair (a, b) with unit normal n pointing from a toward b, the relative
normal velocity is u = (v_b - v_a)·n. Only converging pairs (u < 0) respond; the impulse
J = -(1 + e)·u / (1/m_a + 1/m_b) is applied as v_a -= J n / m_a, v_b += J n / m_b.
This conserves momentum always and kinetic energy when e = 1. The user's ship has
inv_mass 0 (infinite mass), so it is never deflected. Rotation is ignored.
"""
from __future__ import annotations

import numpy as np


def respond(vel: np.ndarray, inv_mass: np.ndarray, pairs: np.ndarray, normal: np.ndarray,
            restitution: float) -> np.ndarray:
    """Apply impulses in place, pair by pair (in order, so a ship hit twice sees both).

    vel      : (n, 3) float64 world frame [m/s], modified in place
    inv_mass : (n,) float64 [1/kg]
    pairs    : (k, 2) int ship indices
    normal   : (k, 3) float64 unit contact normals, world frame, from pairs[:,0] toward pairs[:,1]
    Returns the sorted indices of ships whose velocity changed.
    """
    changed = []
    for (a, b), n in zip(pairs, normal):
        w = inv_mass[a] + inv_mass[b]
        u = float(np.dot(vel[b] - vel[a], n))
        if u >= 0.0 or w == 0.0:
            continue  # separating or resting, or two immovable ships
        j = -(1.0 + restitution) * u / w
        vel[a] -= j * inv_mass[a] * n
        vel[b] += j * inv_mass[b] * n
        changed += [a, b]
    return np.unique(np.asarray(changed, dtype=np.int64))
