"""Collision response (Hubbard 1996): exchange momentum along the contact normal.

For a colliding pair (a, b) with unit normal n pointing from a toward b, the relative
normal velocity is u = (v_b - v_a)·n. Only converging pairs (u < 0) respond; the impulse
J = -(1 + e)·u / (1/m_a + 1/m_b) is applied as v_a -= J n / m_a, v_b += J n / m_b.
This conserves momentum always and kinetic energy when e = 1. The user's ship has
inv_mass 0 (infinite mass), so it is never deflected. Rotation is ignored.

No sticking: Hubbard's impulse alone leaves pairs in contact for seconds when the mean contact
normal of interlocked concave ships is nearly perpendicular to their approach, when they fly
side by side touching (u = 0), or when thrust or an arena wall keeps pushing them together.
So, after the impulse, a pair whose centres part slower than `separation_speed` gets a second
impulse along the centre line that makes them part at exactly that speed. Momentum is still
conserved; the energy added is at most ½·μ·separation_speed² per pair (μ the reduced mass).
Parting along the centre line ends any contact, since the bounding spheres then separate.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

ROW0 = np.int64(0)  # the centre line's row in respond_hits_kernel, typed: a literal 0 would compile _respond_pair twice


def respond(vel: np.ndarray, inv_mass: np.ndarray, pairs: np.ndarray, normal: np.ndarray,
            restitution: float, centre_line: np.ndarray | None = None,
            separation_speed: float = 0.0, compiled: bool = True) -> np.ndarray:
    """Apply impulses in place, pair by pair (in order, so a ship hit twice sees both).

    vel         : (n, 3) float64 world frame [m/s], modified in place
    inv_mass    : (n,) float64 [1/kg]
    pairs       : (k, 2) int ship indices
    normal      : (k, 3) float64 unit contact normals, world frame, from pairs[:,0] toward pairs[:,1]
    centre_line : (k, 3) float64 unit directions from ship a's centre to b's (zero rows: coincident
                  centres), or None for Hubbard's impulse alone
    separation_speed : least parting speed of the centres after response [m/s]
    compiled    : the numba kernel (False: the numpy reference, which needs no compiling)
    Returns the sorted indices of ships whose velocity changed.
    """
    if not compiled:
        return respond_reference(vel, inv_mass, pairs, normal, restitution, centre_line, separation_speed)
    pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
    normal = np.ascontiguousarray(normal, dtype=np.float64).reshape(-1, 3)
    line = np.zeros_like(normal) if centre_line is None else np.ascontiguousarray(centre_line, dtype=np.float64)
    return _respond_kernel(vel, np.asarray(inv_mass, dtype=np.float64), pairs, normal, float(restitution), line,
                           float(separation_speed))


def respond_hits(vel: np.ndarray, inv_mass: np.ndarray, pos: np.ndarray, pairs: np.ndarray, hit: np.ndarray,
                 normal: np.ndarray, restitution: float, separation_speed: float) -> np.ndarray:
    """respond(vel, inv_mass, pairs[hit], normal[hit], restitution, centre lines from pos, separation_speed)
    in one kernel call, bit for bit: the pipeline's response to a sample's colliding pairs. A frame
    has a few colliding pairs, where the half-dozen numpy calls that select them and build their
    centre lines cost far more than the impulses (pos (n, 3) [m]; hit (k,) bool; the rest as respond's)."""
    return respond_hits_kernel(vel, inv_mass, pos, pairs, hit, normal, float(restitution), float(separation_speed))


@njit(cache=True)
def _respond_kernel(vel, inv_mass, pairs, normal, restitution, line, separation_speed):
    """respond_reference's loop; rows of `line` all zero skip the centre-line impulse. Returns the
    sorted indices of the ships whose velocity changed."""
    moved = np.zeros(len(vel), np.bool_)
    for i in range(len(pairs)):
        _respond_pair(vel, inv_mass, pairs[i, 0], pairs[i, 1], normal, i, line, i, restitution, separation_speed,
                      moved)
    return np.flatnonzero(moved)


@njit(cache=True)
def respond_hits_kernel(vel, inv_mass, pos, pairs, hit, normal, restitution, separation_speed):
    """respond_hits: the rows of `pairs` where `hit`, in order, each with its centre line computed
    as pipeline.centre_line does (the same operations in the same order)."""
    moved = np.zeros(len(vel), np.bool_)
    line = np.zeros((1, 3))
    for i in range(len(pairs)):
        if hit[i]:
            a, b = pairs[i, 0], pairs[i, 1]
            for c in range(3):
                line[0, c] = pos[b, c] - pos[a, c]
            length = math.sqrt(line[0, 0] * line[0, 0] + line[0, 1] * line[0, 1] + line[0, 2] * line[0, 2])
            for c in range(3):
                line[0, c] = line[0, c] / length if length > 0.0 else 0.0
            _respond_pair(vel, inv_mass, a, b, normal, i, line, ROW0, restitution, separation_speed, moved)
    return np.flatnonzero(moved)


@njit(cache=True)
def _respond_pair(vel, inv_mass, a, b, normal, i, line, j, restitution, separation_speed, moved):
    """One pair (a, b) of respond_reference's loop: contact normal normal[i], centre line line[j]
    (all zero: no centre-line impulse); marks the ships it moves in `moved`."""
    if inv_mass[a] + inv_mass[b] == 0.0:
        return  # two immovable ships
    u = _closing_nb(vel, a, b, normal, i)
    if u < 0.0:  # converging along the contact normal: Hubbard's impulse
        _impulse_nb(vel, inv_mass, a, b, normal, i, -(1.0 + restitution) * u)
        moved[a] = moved[b] = True
    if line[j, 0] != 0.0 or line[j, 1] != 0.0 or line[j, 2] != 0.0:
        u = _closing_nb(vel, a, b, line, j)
        if u < separation_speed:  # centres part too slowly: push them apart up to that speed
            _impulse_nb(vel, inv_mass, a, b, line, j, separation_speed - u)
            moved[a] = moved[b] = True


@njit(cache=True)
def _closing_nb(vel, a, b, n, i):
    return (vel[b, 0] - vel[a, 0]) * n[i, 0] + (vel[b, 1] - vel[a, 1]) * n[i, 1] + (vel[b, 2] - vel[a, 2]) * n[i, 2]


@njit(cache=True)
def _impulse_nb(vel, inv_mass, a, b, n, i, du):
    j = du / (inv_mass[a] + inv_mass[b])
    for c in range(3):
        vel[a, c] -= j * inv_mass[a] * n[i, c]
        vel[b, c] += j * inv_mass[b] * n[i, c]


def respond_reference(vel, inv_mass, pairs, normal, restitution, centre_line=None, separation_speed=0.0):
    """respond in numpy, pair by pair: the reference the kernel is tested against, and what runs
    before numba has compiled it (arguments and result as respond's)."""
    changed = []
    for i, (a, b) in enumerate(pairs):
        if inv_mass[a] + inv_mass[b] == 0.0:
            continue  # two immovable ships
        moved = False
        u = _closing(vel, a, b, normal[i])
        if u < 0.0:  # converging along the contact normal: Hubbard's impulse
            _impulse(vel, inv_mass, a, b, normal[i], -(1.0 + restitution) * u)
            moved = True
        if centre_line is not None and np.any(centre_line[i]):
            u = _closing(vel, a, b, centre_line[i])
            if u < separation_speed:  # centres part too slowly: push them apart up to that speed
                _impulse(vel, inv_mass, a, b, centre_line[i], separation_speed - u)
                moved = True
        if moved:
            changed += [a, b]
    return np.unique(np.asarray(changed, dtype=np.int64))


def _closing(vel, a, b, n) -> float:
    """Relative velocity of b with respect to a along unit n (negative: converging)."""
    return float(np.dot(vel[b] - vel[a], n))


def _impulse(vel, inv_mass, a, b, n, du) -> None:
    """Change the pair's relative velocity along unit n by du with an impulse along n
    (momentum conserved)."""
    j = du / (inv_mass[a] + inv_mass[b])
    vel[a] -= j * inv_mass[a] * n
    vel[b] += j * inv_mass[b] * n
