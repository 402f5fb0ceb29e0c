"""Public entry points: `build_tree`, `tree_key`, `load_or_build`.

Trees are cached as .npz files named ``<mesh name>-<method>-<key[:12]>.npz`` (default folder
``assets/trees/``). The key hashes the mesh arrays, every build parameter and `BUILDER_VERSION`, so a
changed mesh, parameter or builder produces a different file name and is rebuilt, never reused.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
import warnings
from pathlib import Path

import numpy as np

from .finish import assemble
from .geometry import MeshQuery, min_enclosing_sphere
from .params import MAX_DEPTH, METHODS, SphereTreeError, _check_params  # noqa: F401 (re-exported)
from .progress import BuildProgress
from .tree import SphereTree, seal_problem

# bump whenever a builder's output changes: old cache files then no longer match any key
BUILDER_VERSION = "8"  # 8: medial clusters balanced by size as they merge


def _mesh_arrays(vertices, faces, source="build_tree"):
    """Validated (vertices (n,3) float64, faces (m,3) int32, closed) via the mesh loader's checks."""
    from ..meshes import MeshError, validate_mesh_arrays

    try:
        mesh = validate_mesh_arrays(vertices, faces, source)
    except MeshError as e:
        raise SphereTreeError(e.file, e.key, e.problem) from None
    return np.array(mesh.vertices), np.array(mesh.faces), mesh.closed


def tree_key(vertices, faces, method: str, branching: int, depth: int, seed: int) -> str:
    """Hex SHA-256 of the mesh bytes (float64 vertices, int32 faces), the parameters and BUILDER_VERSION."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(vertices, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(faces, dtype=np.int32).tobytes())
    h.update(f"|{method}|{int(branching)}|{int(depth)}|{int(seed)}|v{BUILDER_VERSION}".encode())
    return h.hexdigest()


def build_tree(vertices, faces, method: str = "medial", branching: int = 8, depth: int = 3,
               seed: int = 0, closed: bool | None = None, progress: bool = False) -> SphereTree:
    """Build a sphere tree of a triangle mesh.

    vertices : (n, 3) float64, body frame [m]; faces : (m, 3) int, counter-clockwise from outside.
    method   : "medial" (Hubbard's medial-axis merging) or "octree" (baseline; always 8-way).
    branching: children per node (medial); depth: levels below the root; seed: sampling seed.
    closed   : override the closedness detected by the mesh checks (None = detect). Open meshes
               are treated as shells: distances are to the surface and nothing is "inside".
    progress : print each stage and bars through the long ones on stderr (the CLI; big meshes
               take minutes).
    Raises SphereTreeError (an InputError) for bad meshes or parameters.
    """
    _check_params(method, branching, depth, seed)
    t0 = time.perf_counter()
    report = BuildProgress(progress)
    report.stage(f"checking the mesh ({len(faces):,} triangles)")
    v, f, is_closed = _mesh_arrays(vertices, faces)
    if closed is not None:
        is_closed = bool(closed)
    report.stage("distance index")
    query = MeshQuery(v, f, is_closed)
    if method == "octree":
        from .octree import octree_levels
        report.stage(f"octree, {depth} levels")
        levels = octree_levels(query, depth, seed=seed)
    else:
        from .medial import medial_levels
        levels = medial_levels(query, branching, depth, seed=seed, progress=report)
    # octree cells nest, so their spheres chain by construction; medial spheres need the check
    tree = assemble(levels, query, method, key=tree_key(v, f, method, branching, depth, seed), progress=report,
                    chains=method == "medial")
    return dataclasses.replace(tree, build_seconds=time.perf_counter() - t0)


STAND_IN = "bounding"  # the method name of `bounding_tree`'s trees


def bounding_tree(mesh) -> SphereTree:
    """A stand-in for a tree still building: the root alone, the smallest sphere around the mesh's
    vertices. Its error 2 r is a true bound (every point of the ball is within its diameter of any
    surface point in it) and its witness a vertex. Milliseconds where a tree takes seconds: a ship
    flies on it at once, on bounding spheres (sim/tree_builds.py), so the leaf lists no triangle: a
    warm-up refining it against itself then costs nothing, whatever the mesh."""
    v, f = np.asarray(mesh.vertices, np.float64), np.asarray(mesh.faces, np.int32)
    used = np.unique(f)
    c, r = min_enclosing_sphere(v[used])
    none = np.full(1, -1, np.int32)
    return SphereTree(center=c[None], radius=np.array([r]), error=np.array([2.0 * r]), witness=v[used[:1]],
                      level=np.zeros(1, np.int32), parent=none, first_child=none, child_count=np.zeros(1, np.int32),
                      leaf_tri_ptr=np.zeros(2, np.int64), leaf_tri_idx=np.zeros(0, np.int32),
                      level_start=np.array([0, 1], np.int64), vertices=v, faces=f, closed=mesh.closed, method=STAND_IN)


def is_cached(mesh, method: str = "medial", branching: int = 8, depth: int = 3, seed: int = 0,
              cache_dir=None) -> bool:
    """Whether `load_or_build` finds a cache file for these parameters (it may still rebuild a
    damaged one)."""
    key = tree_key(mesh.vertices, mesh.faces, method, branching, depth, seed)
    return tree_path(mesh, method, key, cache_dir).is_file()


def tree_path(mesh, method: str, key: str, cache_dir=None) -> Path:
    """Cache file of a tree: <cache_dir>/<mesh name>-<method>-<key[:12]>.npz."""
    if cache_dir is None:
        from ..meshes import assets_dir
        cache_dir = assets_dir() / "trees"
    return Path(cache_dir) / f"{mesh.name}-{method}-{key[:12]}.npz"


def load_or_build(mesh, method: str = "medial", branching: int = 8, depth: int = 3, seed: int = 0,
                  cache_dir=None, force: bool = False, progress: bool = False) -> SphereTree:
    """The cached tree of `mesh` (a spaceship_sim.meshes.Mesh) for these parameters, building it if needed.

    A cache file whose stored key or mesh differs from the expected one is rebuilt (and overwritten).
    Unreadable cache files are rebuilt with a warning; the cache folder is created when missing.
    progress: report the build's stages on stderr (see build_tree).
    """
    _check_params(method, branching, depth, seed, source=getattr(mesh, "path", "mesh"))
    key = tree_key(mesh.vertices, mesh.faces, method, branching, depth, seed)
    path = tree_path(mesh, method, key, cache_dir)
    def fits(tree):
        return tree.key == key and np.array_equal(tree.vertices, mesh.vertices) \
            and np.array_equal(tree.faces, mesh.faces)

    def build():
        return build_tree(mesh.vertices, mesh.faces, method=method, branching=branching, depth=depth,
                          seed=seed, closed=mesh.closed, progress=progress)

    return cached(path, SphereTree.load, fits, build, "sphere tree", force)


def cached(path: Path, load, fits, build, what: str, force: bool = False):
    """The object cached at `path` if `load(path)` reads it and `fits(obj)` accepts it (not when
    `force`); else `build()`, saved there with its `save(path)`. A corrupt, truncated or foreign
    file is rebuilt with a warning, and so is one whose contents fail their checksum (tree.seal_problem:
    altered after writing, or written before caches were sealed); a cache that cannot be written
    (read-only install, full disk) only warns: the object is still good to use."""
    if path.is_file() and not force:
        problem = seal_problem(path)
        try:
            obj = None if problem else load(path)
        except Exception as exc:
            problem = f"unreadable ({type(exc).__name__}: {exc})"
        if problem:
            warnings.warn(f"{path}: {what} cache not used, {problem}; rebuilding", stacklevel=3)
        elif fits(obj):
            return obj
    obj = build()
    try:
        obj.save(path)
    except OSError as exc:
        warnings.warn(f"{path}: cannot cache {what} ({exc}); it will be rebuilt next time", stacklevel=3)
    return obj
