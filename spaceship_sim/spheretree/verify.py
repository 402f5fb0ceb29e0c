"""Re-checking a sphere tree against its mesh (`build-trees --verify`).

A cache file's checksum proves that it is what was written, not that what was written is sound.
`verify_tree` tests again, from the mesh, each promise the narrow phase relies on: every level's
spheres cover every triangle, medial trees hold every surface point in a root-to-leaf chain,
witnesses lie on the surface inside their sphere, the stored errors bound the distance from any
point of a sphere to the ship, and each leaf lists every triangle it touches.
"""
from __future__ import annotations

import numpy as np

from .finish import coverage_verified, enforce_chains, error_bounds, min_piece_size, triangle_sphere_pairs
from .geometry import MeshQuery
from .progress import BuildProgress
from .tree import SphereTree

REL_TOL = 0.03  # the error bounds' own slack (finish.error_bounds): a stored error may sit this far below


def verify_tree(tree: SphereTree, progress: BuildProgress = BuildProgress(False)) -> list[str]:
    """The promises `tree` breaks, one line each (empty: sound)."""
    broken = _structure(tree)
    if broken:
        return [broken]
    tris = tree.vertices[tree.faces]
    query = MeshQuery(tree.vertices, tree.faces, tree.closed)
    problems = _coverage(tree, tris, progress) + _witnesses(tree, query) + _errors(tree, query, progress) \
        + _leaf_triangles(tree, tris)
    return problems


def _coverage(tree: SphereTree, tris: np.ndarray, progress: BuildProgress) -> list[str]:
    """Sampled surface points first (a tree with a gap fails in milliseconds), then the builder's
    exhaustive checks, whose subdivision would grow without bound on a tree with wide gaps."""
    inside = _inside(tree, _surface_samples(tris))
    chained = _chained(tree, inside)
    missed = [k for k in range(tree.depth + 1) if not inside[:, tree.level_slice(k)].any(axis=1).all()]
    problems = [f"level {k}'s spheres leave surface points uncovered" for k in missed]
    if tree.method == "medial" and not chained.all():
        problems.append(f"{np.count_nonzero(~chained)} sampled surface points lie in no root-to-leaf chain")
    if problems:
        return problems
    min_piece = min_piece_size(tris)
    for k in progress.bar(range(tree.depth + 1), "coverage", unit="level"):
        if not coverage_verified(tris, *tree.level(k)[:2], min_piece):
            problems.append(f"level {k}'s spheres leave part of the mesh uncovered")
    if tree.method == "medial":  # octree cells nest: their chains hold by construction
        progress.stage("root-to-leaf chains")
        _, grown = enforce_chains(tris, tree.center, tree.radius, tree.first_child.astype(np.int64),
                                  tree.child_count.astype(np.int64), tree.depth, min_piece)
        if grown:
            problems.append(f"{grown} spheres would have to grow to hold every surface point in a root-to-leaf chain")
    return problems


def _surface_samples(tris: np.ndarray, total: int = 20_000) -> np.ndarray:
    """(p, 3): every corner and centroid, and seeded random points spread over the triangles."""
    rng = np.random.default_rng(0)
    per = max(1, total // len(tris))
    u, v = rng.random((2, len(tris), per))
    flip = u + v > 1
    u, v = np.where(flip, 1 - u, u), np.where(flip, 1 - v, v)
    a, b, c = tris[:, None, 0], tris[:, None, 1], tris[:, None, 2]
    random = a + u[..., None] * (b - a) + v[..., None] * (c - a)
    return np.concatenate([tris.reshape(-1, 3), tris.mean(axis=1), random.reshape(-1, 3)])


def _inside(tree: SphereTree, points: np.ndarray, chunk: int = 2_000) -> np.ndarray:
    """(p, n) bool: point in sphere (closed, with the builder's rounding slack)."""
    out = np.empty((len(points), tree.n_nodes), bool)
    for s in range(0, len(points), chunk):
        d = np.linalg.norm(points[s:s + chunk, None] - tree.center[None], axis=2)
        out[s:s + chunk] = d <= tree.radius * (1 + 1e-9)
    return out


def _chained(tree: SphereTree, inside: np.ndarray) -> np.ndarray:
    """(p,) bool: the point lies in spheres from the root to a leaf, each the child of the one
    before (what the refinement's descent follows); parents come before their children."""
    chain = np.zeros_like(inside)
    chain[:, 0] = inside[:, 0]
    for n in np.flatnonzero(tree.child_count > 0):
        kids = slice(tree.first_child[n], tree.first_child[n] + tree.child_count[n])
        chain[:, kids] |= chain[:, [n]] & inside[:, kids]
    return (chain & (tree.child_count == 0)[None]).any(axis=1)


def _structure(tree: SphereTree) -> str | None:
    n = tree.n_nodes
    sizes = {len(a) for a in (tree.center, tree.radius, tree.error, tree.witness, tree.node_level, tree.parent,
                              tree.first_child, tree.child_count)}
    starts = tree.level_start
    if sizes != {n} or len(tree.leaf_tri_ptr) != n + 1 or starts[0] != 0 or starts[-1] != n \
            or np.any(np.diff(starts) < 1):
        return "its arrays disagree on the number of spheres or levels"
    if np.any((tree.first_child >= n) | (tree.first_child + tree.child_count > n)) or len(tree.faces) == 0 \
            or np.any((tree.faces < 0) | (tree.faces >= len(tree.vertices))):
        return "children or triangles point outside their arrays"
    return None


def _witnesses(tree: SphereTree, query: MeshQuery) -> list[str]:
    d = query.query(tree.witness)[0]
    extent = float(np.ptp(tree.vertices, axis=0).max())
    off = np.count_nonzero(np.abs(d) > 1e-9 * extent)
    outside = np.count_nonzero(np.linalg.norm(tree.witness - tree.center, axis=1) > tree.radius * (1 + 1e-9))
    return ([f"{off} witness points lie off the surface"] if off else []) + \
        ([f"{outside} witness points lie outside their sphere"] if outside else [])


def _errors(tree: SphereTree, query: MeshQuery, progress: BuildProgress) -> list[str]:
    """Stored errors against a fresh upper bound whose slack is at most REL_TOL * r: a stored
    error below bound - REL_TOL * r is below the true largest distance."""
    bound = error_bounds(query, tree.center, tree.radius, rel_tol=REL_TOL, progress=progress)
    low = ~(tree.error >= bound - REL_TOL * tree.radius * (1 + 1e-9))  # NaN counts as low
    if not low.any():
        return []
    i = int(np.argmax(np.where(low, bound - np.nan_to_num(tree.error), -np.inf)))
    return [f"{np.count_nonzero(low)} spheres' errors are below the distance their points can be from the ship "
            f"(sphere {i}: stored {tree.error[i]:.4g} m, at least {bound[i] - REL_TOL * tree.radius[i]:.4g} m)"]


def _leaf_triangles(tree: SphereTree, tris: np.ndarray) -> list[str]:
    leaves = np.flatnonzero(tree.child_count == 0)
    t, s = triangle_sphere_pairs(tris, tree.center[leaves], tree.radius[leaves])
    node = leaves[s]
    listed = np.repeat(np.arange(tree.n_nodes), np.diff(tree.leaf_tri_ptr))
    stored = set(zip(listed.tolist(), tree.leaf_tri_idx.tolist()))
    missing = sum((a, b) not in stored for a, b in zip(node.tolist(), t.tolist()))
    return [f"{missing} triangles touching a leaf are missing from its list"] if missing else []
