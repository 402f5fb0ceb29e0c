"""Vertex data the renderer uploads: rings, stars, tree levels and the collision story in the world frame.

Plain numpy, no GL.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# colliding spheres by tree level 0, 1, 2, ... (deeper levels repeat the last), and the exact
# (triangle) level: saturated, apart from the muted hull colours, and the same in the overlay
LEVEL_COLORS = ((0.0, 0.85, 1.0), (0.2, 1.0, 0.35), (1.0, 0.9, 0.1), (1.0, 0.5, 0.0))
EXACT_COLOR = (1.0, 0.15, 0.65)


def level_color(level: int, exact_level: int) -> tuple[float, float, float]:
    """RGB of a pair at `level` (exact_level: the triangle level, tree depth + 1)."""
    return EXACT_COLOR if level >= exact_level else LEVEL_COLORS[min(level, len(LEVEL_COLORS) - 1)]


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


@dataclass
class Hits:
    """The collision story of one narrow-phase result, in the world frame.

    spheres   : (k, 4) float64 [cx, cy, cz, r], colliding spheres of every colliding pair at its level
    levels    : (k,) int, the level of each sphere's pair (colour)
    triangles : (t * 3, 3) float64, intersecting triangles' vertices (pairs at the exact level)
    segments  : (s, 2, 3) float64, per colliding pair with sphere pairs: the two surface witness
                points of the sphere pair the separation bound comes from (narrow.bound_pairs: the
                witness or an ancestor), or else of the drawn pair that bounds it best
    labels    : list of (point (3,), text, level): the bound, at the segment's middle (or at the
                contact point when triangles intersect)
    """
    spheres: np.ndarray
    levels: np.ndarray
    triangles: np.ndarray
    segments: np.ndarray
    labels: list


def hit_geometry(state, R, trees, models, narrow) -> Hits | None:
    """What to draw for the colliding pairs of `narrow` (a FrameNarrowResult); None when there
    is no candidate pair. R: (n, 3, 3) ship rotations."""
    if narrow is None or len(narrow.pairs) == 0:
        return None
    spheres, levels, tris, segments, labels = [], [], [], [], []
    sphere_pairs, tri_pairs = narrow.sphere_pairs, narrow.tri_pairs
    for k in np.flatnonzero(np.asarray(narrow.colliding)):
        ships, level = narrow.pairs[k], int(narrow.level[k])
        nodes = np.asarray(sphere_pairs[k]).reshape(-1, 2)
        faces = np.asarray(tri_pairs[k]).reshape(-1, 2)
        for side in (0, 1):
            i = int(ships[side])
            pose = (R[i], state.pos[i])
            tree = trees[state.model_id[i]]
            used = np.unique(nodes[:, side])
            spheres.append(np.c_[_to_world(tree.center[used], pose), tree.radius[used]])
            levels.append(np.full(len(used), level))
            mesh = models[state.model_id[i]]
            tris.append(_to_world(mesh.vertices[mesh.faces[np.unique(faces[:, side])]].reshape(-1, 3), pose))
        name = f"{ships[0]}-{ships[1]}"
        bound = float(narrow.separation_bound[k])
        if bound == 0.0 or len(nodes) == 0:  # intersecting triangles: the ships touch
            labels.append((np.asarray(narrow.contact_point[k], np.float64), f"{name} touching", level))
            continue
        bound_pairs = getattr(narrow, "bound_pairs", None)  # the pair the bound comes from, when known
        if bound_pairs is not None and bound_pairs[k, 0] >= 0:
            nodes = np.asarray(bound_pairs[k]).reshape(1, 2)
        segment = _witness_segment(state, R, trees, ships, nodes)
        segments.append(segment)
        labels.append((segment.mean(0), f"{name} sep <= {bound:.2f} m", level))
    return Hits(np.concatenate(spheres) if spheres else np.zeros((0, 4)),
                np.concatenate(levels) if levels else np.zeros(0, int),
                np.concatenate(tris) if tris else np.zeros((0, 3)),
                np.array(segments).reshape(-1, 2, 3), labels)


def _to_world(points: np.ndarray, pose) -> np.ndarray:
    R, pos = pose
    return points @ R.T + pos


def _witness_segment(state, R, trees, ships, nodes: np.ndarray) -> np.ndarray:
    """(2, 3) world witness points of the colliding sphere pair (rows of `nodes`: local node
    ids of ship A, of ship B) whose bound min(e_a + e_b, |w_a - w_b|) is smallest: the pair the
    narrow phase's separation bound comes from."""
    ends, errors = [], []
    for side in (0, 1):
        i = int(ships[side])
        tree = trees[state.model_id[i]]
        ends.append(_to_world(tree.witness[nodes[:, side]], (R[i], state.pos[i])))
        errors.append(tree.error[nodes[:, side]])
    bound = np.minimum(errors[0] + errors[1], np.linalg.norm(ends[0] - ends[1], axis=1))
    best = int(np.argmin(bound))
    return np.stack([ends[0][best], ends[1][best]])


def in_frustum(centers: np.ndarray, radii: np.ndarray, view_proj: np.ndarray) -> np.ndarray:
    """(k,) bool: which spheres (centres (k, 3) world, radii (k,)) may touch the view frustum
    of the (4, 4) view-projection matrix. Conservative (Gribb-Hartmann planes): a sphere is
    dropped only when it lies wholly outside one plane, so nothing visible is culled."""
    m = np.asarray(view_proj, np.float64)
    planes = np.stack([m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1], m[3] + m[2], m[3] - m[2]])
    planes /= np.linalg.norm(planes[:, :3], axis=1, keepdims=True)
    dist = np.asarray(centers, np.float64) @ planes[:, :3].T + planes[:, 3]   # (k, 6) signed
    return np.all(dist >= -np.asarray(radii, np.float64)[:, None], axis=1)


def faceted_vertices(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Unshared triangle vertices for per-face lighting: (3 T, 9) float32 rows (position, the
    triangle's unit normal, its centre), body frame, from a mesh's vertices (V, 3) and
    counter-clockwise faces (T, 3)."""
    tri = np.asarray(vertices, np.float64)[np.asarray(faces)]            # (T, 3 corners, 3)
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    per_corner = lambda a: np.repeat(a[:, None, :], 3, axis=1)          # noqa: E731
    return np.concatenate([tri, per_corner(normal), per_corner(tri.mean(axis=1))], axis=2).reshape(-1, 9).astype("f4")
