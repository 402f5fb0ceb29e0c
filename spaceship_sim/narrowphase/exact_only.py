"""Exact-only frames: a frame's candidate pairs answered by one exact strategy alone (Hubbard's
exact-only baselines), root spheres first, in the shape the time-critical loop answers in."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..clock import WALL
from .exact import ExactDetector
from .refine import refine_roots


def exact_frame(detector: ExactDetector, bank, model_id, T, pairs, all_contacts: bool = True, clock=WALL):
    """A frame's candidate pairs answered by an exact strategy alone (Hubbard's exact-only baselines):
    root spheres first, then `detector` on the pairs whose roots overlap. Arguments and result as
    refine.refine_frame's: colliding pairs sit at the exact level with bound 0, their contact normal
    along the centre line of the root spheres (as Hubbard's BSP run used bounding spheres for response)."""
    start = clock()
    roots = refine_roots(bank, model_id, T, pairs, clock=clock)
    k, hit = len(roots.pairs), np.flatnonzero(roots.colliding)
    ship_a, ship_b = roots.pairs[hit, 0], roots.pairs[hit, 1]
    ans = detector.collide(model_id[ship_a], model_id[ship_b], T[ship_a], T[ship_b], all_contacts)
    colliding = np.zeros(k, bool)
    colliding[hit] = ans.colliding
    n_tris = np.zeros(k, np.int64)
    n_tris[hit] = np.diff(ans.tri_ptr)
    tri_ptr = np.concatenate([[0], np.cumsum(n_tris)])
    level = np.zeros(k, np.int64)
    level[hit] = np.maximum(bank.depth[model_id[ship_a]], bank.depth[model_id[ship_b]]) + 1
    sphere_ptr = np.concatenate([[0], np.cumsum(colliding)])
    ra, rb = roots._spheres[3], roots._spheres[4]  # each pair's root node (global id)
    none = np.zeros(k, np.int64)
    distance = np.full(k, np.nan)  # what the strategy measured (the SSV trees: every pair they saw)
    distance[hit] = ans.distance
    return dataclasses.replace(
        roots, colliding=colliding, level=level, certain=np.ones(k, bool),
        separation_bound=np.where(colliding, 0.0, np.inf),
        contact_point=np.where(colliding[:, None], roots.contact_point, np.nan),
        contact_normal=np.where(colliding[:, None], roots.contact_normal, 0.0), time_used=clock() - start,
        level_histogram=np.bincount(level[colliding], minlength=bank.max_level + 1).astype(np.int64),
        distance=distance, _spheres=(sphere_ptr, ra[colliding], rb[colliding], ra, rb),
        _tris=(tri_ptr, ans.tri_a, ans.tri_b, none, none))
