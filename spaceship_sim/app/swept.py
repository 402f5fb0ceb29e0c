"""The swept-space catch, drawn (faceoctree.continuous): where the moving ship was at the end of
the sample in which it crossed another (the discrete test found them apart there), the path of
its centre, and the first face pair the swept test found — B's face swept over the sample (the
convex hull of its start and end positions: both triangles and the three edges joining them)
and A's face the hull meets. Plain numpy, no GL: the renderer draws the lines.
"""
from __future__ import annotations

import numpy as np

SWEPT_COLOR = (1.0, 0.55, 0.1, 1.0)        # B's hull at the sample's end, its centre's path
SWEPT_FACE_COLOR = (1.0, 1.0, 0.3, 1.0)    # the hit: B's face hull and A's face, over everything
PATH_POINT_PX = 7.0                        # the path's end points as dots


def mesh_edges(faces: np.ndarray) -> np.ndarray:
    """(e, 2) int64 unique undirected edges (vertex ids) of triangles faces (f, 3)."""
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    return np.unique(e, axis=0)


def _world(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """points (..., 3) body frame -> world by the (4, 4) body->world transform T."""
    return points @ T[:3, :3].T + T[:3, 3]


def crossing_lines(crossing, models, model_id: np.ndarray, edges: dict | None = None) -> list:
    """[(GL_LINES vertices (v, 3) float32, rgba, end point size [px], on top)] of a Crossing
    (None: []); models: the world's meshes, model_id (n,) each ship's model; edges: a cache
    {model id: mesh_edges} filled on first use."""
    if crossing is None:
        return []
    edges = {} if edges is None else edges
    hull, path, faces = [], [], []
    for (a, b), T0, T1, fa, fb in zip(crossing.pairs, crossing.start, crossing.end, crossing.face_a,
                                      crossing.face_b):
        ma, mb = int(model_id[a]), int(model_id[b])
        if mb not in edges:
            edges[mb] = mesh_edges(np.asarray(models[mb].faces))
        vb = np.asarray(models[mb].vertices, np.float64)
        hull.append(_world(T1[1], vb[edges[mb]].reshape(-1, 3)))
        path.append(np.stack([T0[1, :3, 3], T1[1, :3, 3]]))
        tri0, tri1 = _world(T0[1], vb[models[mb].faces[fb]]), _world(T1[1], vb[models[mb].faces[fb]])
        tri_a = _world(T0[0], np.asarray(models[ma].vertices, np.float64)[models[ma].faces[fa]])
        ring = [0, 1, 1, 2, 2, 0]
        faces += [tri0[ring], tri1[ring], np.stack([tri0, tri1], 1).reshape(-1, 3), tri_a[ring]]
    return [(np.concatenate(hull).astype(np.float32), SWEPT_COLOR, 0.0, False),
            (np.concatenate(path).astype(np.float32), SWEPT_COLOR, PATH_POINT_PX, True),
            (np.concatenate(faces).astype(np.float32), SWEPT_FACE_COLOR, 0.0, True)]


def crossing_text(crossing, frame: int) -> str:
    """The overlay's line for a Crossing caught at `frame` ('' for None)."""
    if crossing is None:
        return ""
    a, b = crossing.pairs[0]
    moved = np.linalg.norm((crossing.end[0, 1, :3, 3] - crossing.start[0, 1, :3, 3])
                           - (crossing.end[0, 0, :3, 3] - crossing.start[0, 0, :3, 3]))
    more = f" (+{len(crossing.pairs) - 1} more)" if len(crossing.pairs) > 1 else ""
    return (f"swept-space hit at frame {frame}: ships {a}-{b}{more}\n"
            f"crossed in a sample ({moved:.1f} m), apart at its end")
