"""SphereTree: a ship's sphere hierarchy as flat arrays that numba kernels can walk.

Nodes are stored level by level (breadth first): level 0 is the single bounding sphere,
level k's nodes are contiguous, and each node's children are contiguous at level k+1.
All coordinates are in the ship's body (model) frame, metres.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False, init=False)
class SphereTree:
    """Flat sphere tree.

    center      : (m, 3) float64, body frame [m]
    radius      : (m,)   float64 [m]
    error       : (m,)   float64 [m] upper bound on max distance from any point of the
                  sphere to the ship (solid for closed meshes, surface for open ones)
    witness     : (m, 3) float64, body frame [m] a point on the ship's surface inside the sphere
                  (lets the narrow phase bound separation with real surface points)
    node_level  : (m,)   int32, depth of the node (0 = root); the constructor also accepts it as
                  `level=` (the name `level` itself is the method `level(k)`; a dataclass field of
                  the same name would take the method as its default and break the class)
    parent      : (m,)   int32, parent index (-1 for the root)
    first_child : (m,)   int32, index of the first child (-1 for leaves)
    child_count : (m,)   int32, number of children (0 for leaves)
    leaf_tri_ptr: (m+1,) int64, CSR row pointer: triangles touched by node i are
                  leaf_tri_idx[leaf_tri_ptr[i]:leaf_tri_ptr[i+1]] (empty for interior nodes)
    leaf_tri_idx: (k,)   int32, triangle indices into the mesh's faces
    level_start : (depth+2,) int64, nodes of level k are level_start[k]:level_start[k+1]
    vertices    : (nv, 3) float64, body frame [m] the mesh the tree was built from
    faces       : (nf, 3) int32, triangles of that mesh (the exact level tests these)
    closed      : bool, whether the mesh was watertight (solid) when built
    method      : str, builder name ("medial" or "octree")
    key         : str, hash of mesh + build parameters (cache key)
    build_seconds: float, wall time the build took [s] (nan when unknown; reports only)
    """

    center: np.ndarray
    radius: np.ndarray
    error: np.ndarray
    witness: np.ndarray
    node_level: np.ndarray
    parent: np.ndarray
    first_child: np.ndarray
    child_count: np.ndarray
    leaf_tri_ptr: np.ndarray
    leaf_tri_idx: np.ndarray
    level_start: np.ndarray
    vertices: np.ndarray
    faces: np.ndarray
    closed: bool = True
    method: str = "octree"
    key: str = ""
    build_seconds: float = float("nan")

    def __init__(self, center, radius, error, witness, level=None, parent=None, first_child=None,
                 child_count=None, leaf_tri_ptr=None, leaf_tri_idx=None, level_start=None, vertices=None,
                 faces=None, closed=True, method="octree", key="", *, node_level=None,
                 build_seconds=float("nan")):
        values = dict(center=center, radius=radius, error=error, witness=witness,
                      node_level=node_level if node_level is not None else level, parent=parent,
                      first_child=first_child, child_count=child_count, leaf_tri_ptr=leaf_tri_ptr,
                      leaf_tri_idx=leaf_tri_idx, level_start=level_start, vertices=vertices, faces=faces)
        missing = [k for k, v in values.items() if v is None]
        if missing:
            raise TypeError(f"SphereTree missing arrays: {', '.join(missing)}")
        for k, v in values.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "closed", bool(closed))
        object.__setattr__(self, "method", str(method))
        object.__setattr__(self, "key", str(key))
        object.__setattr__(self, "build_seconds", float(build_seconds))

    @property
    def depth(self) -> int:
        """Number of levels below the root."""
        return len(self.level_start) - 2

    @property
    def n_nodes(self) -> int:
        return len(self.radius)

    def level_slice(self, k: int) -> slice:
        if not 0 <= k <= self.depth:
            raise IndexError(f"level {k} outside 0..{self.depth}")
        return slice(int(self.level_start[k]), int(self.level_start[k + 1]))

    def level(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(centers (n,3), radii (n,), errors (n,)) of level k."""
        s = self.level_slice(k)
        return self.center[s], self.radius[s], self.error[s]

    def leaf_triangles(self, node: int) -> np.ndarray:
        return self.leaf_tri_idx[self.leaf_tri_ptr[node]:self.leaf_tri_ptr[node + 1]]

    # --- persistence -------------------------------------------------------------
    _ARRAYS = ("center", "radius", "error", "witness", "node_level", "parent", "first_child",
               "child_count", "leaf_tri_ptr", "leaf_tri_idx", "level_start", "vertices", "faces")

    def save(self, path) -> None:
        """Write to .npz atomically (temp file + rename: never half-written)."""
        write_npz_atomic(path, **{a: getattr(self, a) for a in self._ARRAYS}, closed=np.array(self.closed),
                         method=np.array(self.method), key=np.array(self.key),
                         build_seconds=np.array(self.build_seconds))

    @classmethod
    def load(cls, path) -> "SphereTree":
        with np.load(path, allow_pickle=False) as z:
            arrays = {a: z[a] for a in cls._ARRAYS}
            extra = {"build_seconds": float(z["build_seconds"])} if "build_seconds" in z else {}
            return cls(**arrays, closed=bool(z["closed"]), method=str(z["method"]),
                       key=str(z["key"]), **extra)


CHECKSUM = "checksum"  # the array of a cache file holding the SHA-256 of all the others


def npz_checksum(arrays: dict) -> str:
    """Hex SHA-256 over arrays' names, dtypes, shapes and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def write_npz_atomic(path, **arrays) -> None:
    """np.savez to `path`, sealed with npz_checksum, through a temp file and a rename: never
    half-written; folder created."""
    import os
    import tempfile
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    arrays = {k: np.asarray(v) for k, v in arrays.items() if k != CHECKSUM}
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays, **{CHECKSUM: np.array(npz_checksum(arrays))})
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def seal_problem(path) -> str | None:
    """Why the cache file `path` cannot be trusted (None: its checksum matches its contents):
    unreadable, unsealed (written before caches were sealed) or altered after writing."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # zip, npy header or decompression errors: a damaged file
        return f"unreadable ({type(e).__name__}: {e})"
    stored = arrays.pop(CHECKSUM, None)
    if stored is None:
        return "no checksum (written by an older version)"
    if str(stored) != npz_checksum(arrays):
        return "checksum mismatch: its contents were altered after it was written"
    return None
