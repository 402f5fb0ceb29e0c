"""Simple numpy references for the narrow-phase kernels (slow, obviously correct; tests and the
benchmark compare the fast paths against them). Triangle-level oracles: `geometry.reference`.

- one level of sphere-tree descent for one node pair, and breadth-first descent from the roots;
- a brute-force pair test over all triangle pairs.
"""
from __future__ import annotations

import numpy as np

from ..geometry.reference import intersect_tri_tri


def descend_ref(tree_a, node_a, tree_b, node_b, R, t) -> set[tuple[int, int]]:
    """Child pairs (local node ids) of node pair (node_a, node_b) whose spheres overlap, B's body
    frame mapped into A's by x -> R x + t (a leaf stands in for its own children)."""
    def kids(tree, n):
        c = int(tree.child_count[n])
        return np.arange(tree.first_child[n], tree.first_child[n] + c) if c else np.array([n])

    ka, kb = kids(tree_a, node_a), kids(tree_b, node_b)
    xb = tree_b.center[kb] @ R.T + t
    d = np.linalg.norm(tree_a.center[ka][:, None] - xb[None], axis=2)
    hit = d <= tree_a.radius[ka][:, None] + tree_b.radius[kb][None]
    return {(int(ka[i]), int(kb[j])) for i, j in zip(*np.nonzero(hit))}


def frontiers_ref(tree_a, tree_b, R, t, max_level: int) -> list[set[tuple[int, int]]]:
    """Breadth-first descent from the roots: the set of colliding node pairs (local ids) at each
    level 0..max_level, stopping after the first empty one (the ships are apart there)."""
    xb = tree_b.center[0] @ R.T + t
    front = {(0, 0)} if np.linalg.norm(tree_a.center[0] - xb) <= tree_a.radius[0] + tree_b.radius[0] else set()
    out = [front]
    while front and len(out) <= max_level:
        front = set().union(*(descend_ref(tree_a, a, tree_b, b, R, t) for a, b in front))
        out.append(front)
    return out


def world_triangles(vertices, faces, T) -> np.ndarray:
    """(nf, 3, 3) triangles of a mesh placed by the (4, 4) body->world transform T."""
    return (vertices @ T[:3, :3].T + T[:3, 3])[faces]


def brute_force_pair(vertices_a, faces_a, T_a, vertices_b, faces_b, T_b) -> np.ndarray:
    """All intersecting triangle pairs of two placed meshes: (q, 2) int (face of A, face of B),
    sorted. Every pair is considered; pairs whose bounding boxes are disjoint cannot meet."""
    TA, TB = world_triangles(vertices_a, faces_a, T_a), world_triangles(vertices_b, faces_b, T_b)
    lo_a, hi_a, lo_b, hi_b = TA.min(1), TA.max(1), TB.min(1), TB.max(1)
    near = np.all((lo_a[:, None] <= hi_b[None]) & (lo_b[None] <= hi_a[:, None]), axis=2)
    ia, ib = np.nonzero(near)
    hit = intersect_tri_tri(TA[ia], TB[ib]) if len(ia) else np.zeros(0, bool)
    out = np.stack([ia[hit], ib[hit]], 1)
    return out[np.lexsort((out[:, 1], out[:, 0]))]
