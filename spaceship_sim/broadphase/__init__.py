"""Broad phases: which ship pairs' bounding spheres overlap at a sample time.

`registry.make_broadphase(name, radius, min_resolution=...)` builds one of
  space_time  — Hubbard's space-time bounds with a priority queue of pair wake-up times,
  sweep_prune — I-COLLIDE sweep-and-prune with insertion sort across calls,
  brute_force — every pair, the reference.
All return identical pair sets (see base.BroadPhase for the interface).

Adding a broad phase touches three files: its module here (a BroadPhase subclass with a `name`,
`find_pairs(t, pos, vel, accel)` and `invalidate(ships)`), its class in `registry.BROADPHASES`
and its name in `config.BROADPHASE_NAMES` (which config validation, the CLI's --broadphase and the
overlay's combo box read); tests/broadphase/test_broadphase.py compares every registered broad
phase against brute force on random motion.
"""
from __future__ import annotations

from .base import BroadPhase, BroadPhaseNameError
from .brute_force import BruteForce
from .space_time import SpaceTime
from .sweep_prune import SweepPrune

__all__ = ["BroadPhase", "BroadPhaseNameError", "SpaceTime", "SweepPrune", "BruteForce"]
