"""Broad phases: which ship pairs' bounding spheres overlap at a sample time.

`make_broadphase(name, radius, min_resolution=...)` builds one of
  space_time  — Hubbard's space-time bounds with a priority queue of pair wake-up times,
  sweep_prune — I-COLLIDE sweep-and-prune with insertion sort across calls,
  brute_force — every pair, the reference.
All return identical pair sets (see base.BroadPhase for the interface).

Adding a broad phase touches two files: its module here (a BroadPhase subclass with a `name`,
`find_pairs(t, pos, vel, accel)` and `invalidate(ships)`), and its line in BROADPHASES below.
Config validation, the CLI's --broadphase, the overlay's combo box and the benches all read the
names from BROADPHASES; tests/broadphase/test_broadphase.py compares every registered broad
phase against brute force on random motion.
"""
from __future__ import annotations

from .base import BroadPhase, BroadPhaseNameError
from .brute_force import BruteForce
from .space_time import SpaceTime
from .sweep_prune import SweepPrune

BROADPHASES = {cls.name: cls for cls in (SpaceTime, SweepPrune, BruteForce)}


def make_broadphase(name: str, radius, *, min_resolution: float, **options) -> BroadPhase:
    """The broad phase called `name` for ships of bounding radius `radius` ((n,) float64 [m])."""
    try:
        cls = BROADPHASES[name]
    except KeyError:
        raise BroadPhaseNameError("config", "collision.broadphase",
                                  f"unknown broad phase {name!r}; choose one of {sorted(BROADPHASES)}") from None
    return cls(radius, min_resolution=min_resolution, **options)


__all__ = ["BroadPhase", "BroadPhaseNameError", "BROADPHASES", "make_broadphase",
           "SpaceTime", "SweepPrune", "BruteForce"]
