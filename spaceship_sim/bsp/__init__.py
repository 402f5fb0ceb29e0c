"""Hubbard's baseline: exact collision detection on per-model BSP trees (Thibault & Naylor 1987).

`EXACT_METHODS["bsp"]` (spaceship_sim.registry) builds a `BSPExact` from a scenario's meshes.
"""
from .build import BSPTree, build_bsp
from .detector import BSPBank, BSPExact

__all__ = ["BSPTree", "build_bsp", "BSPBank", "BSPExact"]
