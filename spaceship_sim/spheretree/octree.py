"""Octree baseline (Hubbard 1996's comparison): circumscribed spheres of occupied octants.

The mesh's bounding cube is split recursively in 8; a cell is occupied when a triangle meets it
(exact triangle/box separating-axis test). Level k's spheres circumscribe the occupied cells of side
L / 2^k. Every point of a triangle lies in some occupied cell, so coverage holds by construction
(`finish.assemble` still verifies it). The branching factor is always 8: `branching` is ignored.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.triangles import triangle_meets_box
from .geometry import MeshQuery, min_enclosing_sphere

_OCT = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=np.int64)


def bounding_cube(tris: np.ndarray) -> tuple[np.ndarray, float]:
    """(origin (3,), side) of the cube the octree splits: centred on the triangles' box, a hair larger."""
    lo, hi = tris.min(axis=(0, 1)), tris.max(axis=(0, 1))
    side = float(np.max(hi - lo)) * (1 + 1e-6)
    return (lo + hi) / 2 - side / 2, side


def cell_spheres(origin: np.ndarray, cells: np.ndarray, size: float) -> tuple[np.ndarray, np.ndarray]:
    """(centers (n,3), radii (n,)) circumscribing the cells (n,3) int64 of side `size` [m]."""
    return origin + (cells + 0.5) * size, np.full(len(cells), size * np.sqrt(3) / 2)


def occupied_children(tris, pair_tri, pair_cell, cells, origin, size):
    """The children of side `size` of `cells` (n,3) int64 that triangles meet (exact SAT test).

    (pair_tri[i], pair_cell[i]): triangle (row of tris (m,3,3)) meets cells[pair_cell[i]]; only
    those triangles are tested against that cell's 8 children. Returns (children (c,3) int64,
    parent (c,) index into cells, ascending; pair_tri (p,), pair_child (p,) index into children).
    """
    pt, pc = _children_met(np.ascontiguousarray(tris, np.float64), np.asarray(pair_tri, np.int64),
                           np.asarray(pair_cell, np.int64), np.asarray(cells, np.int64),
                           np.asarray(origin, np.float64), float(size))
    kids = (2 * cells[:, None, :] + _OCT[None]).reshape(-1, 3)  # child j of cell i at 8 i + j
    used, pair_child = np.unique(pc, return_inverse=True)
    return kids[used], used // 8, pt, pair_child.reshape(-1)


@njit(cache=True)
def _children_met(tris, pair_tri, pair_cell, cells, origin, size):
    """(pt, pc): each candidate (pair_tri[i], child 8 pair_cell[i] + j of its cell) whose triangle meets
    the child's cube, pair by pair and child j = 4x + 2y + z (_OCT's order) within a pair. The child's
    centre is origin + (cell index + 0.5) size, as numpy would compute it. No (pairs x 8) arrays of
    triangles and centres gathered first: a 200,000-triangle mesh's first split gathered ~150 MB."""
    pt, pc = np.empty(8 * len(pair_tri), np.int64), np.empty(8 * len(pair_tri), np.int64)
    v, e = np.empty((3, 3)), np.empty((3, 3))
    n = 0
    for i in range(len(pair_tri)):
        t, cell = pair_tri[i], pair_cell[i]
        for j in range(8):
            cx = origin[0] + (2 * cells[cell, 0] + (j >> 2 & 1) + 0.5) * size
            cy = origin[1] + (2 * cells[cell, 1] + (j >> 1 & 1) + 0.5) * size
            cz = origin[2] + (2 * cells[cell, 2] + (j & 1) + 0.5) * size
            if triangle_meets_box(tris, t, cx, cy, cz, size / 2, v, e):
                pt[n], pc[n] = t, 8 * cell + j
                n += 1
    return pt[:n], pc[:n]


def octree_levels(query: MeshQuery, depth: int, seed: int = 0):
    """Per-level (centers (n_k,3), radii (n_k,), parent (n_k,)) for `finish.assemble`.

    Level 0 is the smallest sphere enclosing the vertices; level k >= 1 circumscribes occupied cells.
    """
    tris = query.tris
    origin, side = bounding_cube(tris)
    c0, r0 = min_enclosing_sphere(query.vertices[np.unique(query.faces)], seed=seed)
    levels = [(c0[None], np.array([r0]), np.array([-1]))]
    cells = np.zeros((1, 3), np.int64)
    pair_tri = np.arange(len(tris))
    pair_cell = np.zeros(len(tris), np.int64)
    for k in range(1, depth + 1):
        size = side / 2 ** k
        cells, parent, pair_tri, pair_cell = occupied_children(tris, pair_tri, pair_cell, cells, origin, size)
        levels.append((*cell_spheres(origin, cells, size), parent))
    return levels
