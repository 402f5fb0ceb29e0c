"""Vertex data the renderer uploads: low-poly spheres, rings, stars, tree levels and hits in the world frame.

Plain numpy, no GL: every array here is float32 and ready for a vertex buffer.
"""
from __future__ import annotations

import numpy as np


def icosphere(subdivisions: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Unit sphere: (v, 3) float64 vertices on the unit sphere and (f, 3) int32 outward faces.

    subdivisions=0 is the icosahedron (20 faces); each subdivision quadruples the faces.
    """
    p = (1 + 5 ** 0.5) / 2
    v = [(-1, p, 0), (1, p, 0), (-1, -p, 0), (1, -p, 0), (0, -1, p), (0, 1, p),
         (0, -1, -p), (0, 1, -p), (p, 0, -1), (p, 0, 1), (-p, 0, -1), (-p, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [np.array(x, float) / np.linalg.norm(x) for x in v]
    faces = f
    for _ in range(subdivisions):
        midpoint: dict[tuple[int, int], int] = {}

        def mid(a: int, b: int) -> int:
            key = (min(a, b), max(a, b))
            if key not in midpoint:  # shared edges get one new vertex
                m = verts[a] + verts[b]
                verts.append(m / np.linalg.norm(m))
                midpoint[key] = len(verts) - 1
            return midpoint[key]

        new = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    return np.array(verts), np.array(faces, np.int32)


def rings(segments: int = 48) -> np.ndarray:
    """Three orthogonal unit great circles as GL_LINES: (3 * segments * 2, 3) float32."""
    a = np.linspace(0, 2 * np.pi, segments + 1)
    c, s, z = np.cos(a), np.sin(a), np.zeros_like(a)
    out = []
    for circle in (np.stack([c, s, z], 1), np.stack([c, z, s], 1), np.stack([z, c, s], 1)):
        out.append(np.stack([circle[:-1], circle[1:]], 1).reshape(-1, 3))
    return np.concatenate(out).astype(np.float32)


def starfield(n: int = 1500, seed: int = 7) -> np.ndarray:
    """Stars on the unit sphere: (n, 4) float32 rows [dx, dy, dz, brightness in (0.3, 1)]."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    b = 0.3 + 0.7 * rng.random(n) ** 3  # mostly faint stars, a few bright ones
    return np.concatenate([d, b[:, None]], 1).astype(np.float32)


def level_spheres(state, R, trees, level: int) -> np.ndarray:
    """World-frame spheres of one tree level for every ship: (k, 4) float32 [cx, cy, cz, r].
    Trees shallower than `level` show their deepest level."""
    out = []
    for m, tree in enumerate(trees):
        sel = np.flatnonzero(state.model_id == m)
        if len(sel) == 0:
            continue
        centers, radii, _ = tree.level(min(level, tree.depth))
        world = np.einsum("sij,cj->sci", R[sel], centers) + state.pos[sel][:, None, :]
        out.append(np.c_[world.reshape(-1, 3), np.tile(radii, len(sel))])
    return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 4), np.float32)


def hit_geometry(state, R, trees, models, narrow):
    """Colliding spheres (k, 4) [world centre, radius] and colliding triangles (t*3, 3) world
    vertices of the current narrow-phase result; None when there is none."""
    if narrow is None or len(narrow.pairs) == 0:
        return None
    spheres, tris = [], []
    sphere_pairs = _or_empty(getattr(narrow, "sphere_pairs", None))
    tri_pairs = _or_empty(getattr(narrow, "tri_pairs", None))
    for k in np.flatnonzero(np.asarray(narrow.colliding)):
        ships = narrow.pairs[k]
        for side in (0, 1):
            i = int(ships[side])
            tree = trees[state.model_id[i]]
            if k < len(sphere_pairs) and len(sphere_pairs[k]):
                nodes = np.unique(np.asarray(sphere_pairs[k])[:, side])
                c = tree.center[nodes] @ R[i].T + state.pos[i]
                spheres.append(np.c_[c, tree.radius[nodes]])
            if k < len(tri_pairs) and len(tri_pairs[k]):
                mesh = models[state.model_id[i]]
                faces = mesh.faces[np.unique(np.asarray(tri_pairs[k])[:, side])]
                tris.append(mesh.vertices[faces].reshape(-1, 3) @ R[i].T + state.pos[i])
    return (np.concatenate(spheres) if spheres else np.zeros((0, 4)),
            np.concatenate(tris) if tris else np.zeros((0, 3)))


def _or_empty(per_pair):
    return [] if per_pair is None else per_pair


def in_frustum(centers: np.ndarray, radii: np.ndarray, view_proj: np.ndarray) -> np.ndarray:
    """(k,) bool: which spheres (centres (k, 3) world, radii (k,)) may touch the view frustum
    of the (4, 4) view-projection matrix. Conservative (Gribb-Hartmann planes): a sphere is
    dropped only when it lies wholly outside one plane, so nothing visible is culled."""
    m = np.asarray(view_proj, np.float64)
    planes = np.stack([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] + m[2], m[3] - m[2]])
    planes /= np.linalg.norm(planes[:, :3], axis=1, keepdims=True)
    dist = np.asarray(centers, np.float64) @ planes[:, :3].T + planes[:, 3]   # (k, 6) signed
    return np.all(dist >= -np.asarray(radii, np.float64)[:, None], axis=1)
