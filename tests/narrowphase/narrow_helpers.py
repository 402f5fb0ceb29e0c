"""Helpers for the narrow-phase tests: a hand-built octree sphere tree and random poses."""
from __future__ import annotations

import numpy as np

from spaceship_sim.geometry.reference import closest_point_triangle


def hand_octree(vertices, faces, depth=2):
    """A plain octree sphere tree built here, independent of the project's builders: each
    occupied cell's circumscribed sphere; a cell keeps the triangles whose boxes meet it (a
    superset of those touching it). Error = radius + distance from the centre to the nearest
    surface point (the witness): every point of the sphere is that close to the witness."""
    from spaceship_sim.spheretree.tree import SphereTree

    vertices = np.asarray(vertices, float)
    faces = np.asarray(faces, np.int32)
    tri = vertices[faces]
    tlo, thi = tri.min(1), tri.max(1)
    lo, hi = vertices.min(0), vertices.max(0)
    levels = [[((lo + hi) / 2, (hi - lo).max() / 2 * 1.001, np.arange(len(faces)), -1)]]
    for _ in range(depth):
        nxt = []
        for p, (c, h, tris, _) in enumerate(levels[-1]):
            for o in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T:
                cc, hh = c + o * h / 2, h / 2
                inside = np.all((tlo[tris] <= cc + hh) & (thi[tris] >= cc - hh), axis=1)
                if inside.any():
                    nxt.append((cc, hh, tris[inside], p))
        levels.append(nxt)
    center, radius, error, witness, lev, parent, tri_lists = [], [], [], [], [], [], []
    start = [0]
    first_child, child_count = [], []
    for L, nodes in enumerate(levels):
        for c, h, tris, p in nodes:
            q = closest_point_triangle(np.repeat(c[None], len(tris), 0), tri[tris])
            d = np.linalg.norm(q - c, axis=1)
            center.append(c), radius.append(h * np.sqrt(3)), error.append(h * np.sqrt(3) + d.min())
            witness.append(q[np.argmin(d)]), lev.append(L), parent.append(p + (start[L - 1] if L else 0))
            tri_lists.append(tris if L == depth else np.zeros(0, np.int32))
        start.append(start[-1] + len(nodes))
    parent = np.array(parent)
    for i in range(len(center)):
        kids = np.flatnonzero(parent == i)
        first_child.append(kids[0] if len(kids) else -1), child_count.append(len(kids))
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in tri_lists])])
    return SphereTree(center=np.array(center), radius=np.array(radius), error=np.array(error),
                      witness=np.array(witness), level=np.array(lev, np.int32), parent=parent.astype(np.int32),
                      first_child=np.array(first_child, np.int32), child_count=np.array(child_count, np.int32),
                      leaf_tri_ptr=ptr.astype(np.int64), leaf_tri_idx=np.concatenate(tri_lists).astype(np.int32),
                      level_start=np.array(start, np.int64), vertices=vertices, faces=faces, method="octree",
                      key="hand-octree")


def random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_pose(rng, reach) -> np.ndarray:
    """(4, 4) rigid transform: random rotation, translation uniform in a ball of radius `reach`."""
    T = np.eye(4)
    T[:3, :3] = random_rotation(rng)
    v = rng.normal(size=3)
    T[:3, 3] = v / np.linalg.norm(v) * reach * rng.uniform() ** (1 / 3)
    return T


def with_every_child_pair(bank):
    """`bank` with unbounded spheres, so that the loop skips no child pair (what its own spheres must
    not change); set before any refinement call caches the bank's arguments."""
    from spaceship_sim.narrowphase.volumes import unbounded_spheres
    bank.__dict__["spheres"] = unbounded_spheres(len(bank.first_child))
    return bank
