"""Ship meshes: the one place that reads mesh files (through trimesh) and validates them.

Everything downstream (sphere-tree builder, narrow phase, renderer) gets plain numpy arrays in a
`Mesh`, checked once here:

- missing / unreadable / corrupt file, empty mesh, vertices not finite, face indices out of range,
  degenerate faces (repeated index or zero area), inside-out closed mesh  ->  `MeshError`
  (an `InputError`: one line naming the file and the field, CLI exit code 2);
- an open surface (boundary edges, non-manifold edges or inconsistent winding) is accepted with one
  `OpenMeshWarning` and `closed=False`: it has no inside, so solid-sphere tests treat it as a shell.

trimesh is imported lazily and always with ``process=False``, so the file's vertices and faces are
seen exactly as written (no merging, no silent repair); the checks are ours.

Ship models live in the repository's ``assets/`` folder (override with the environment variable
``SPACESHIP_SIM_ASSETS``); `load_model("lamp")` loads ``assets/lamp.ply``.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spaceship_sim.errors import InputError
from spaceship_sim.files import check_input

ASSETS_ENV = "SPACESHIP_SIM_ASSETS"
MODEL_SUFFIX = ".ply"
# formats trimesh reads as triangle meshes; anything else is refused before parsing
MESH_SUFFIXES = (".ply", ".stl", ".obj", ".off", ".glb", ".gltf")
# formats whose trimesh readers return an empty mesh, not an error, for a file that is not one
LENIENT_SUFFIXES = (".stl", ".obj", ".off")
# meshes above this many triangles are refused (sphere trees of more take many minutes to build);
# $SPACESHIP_SIM_MAX_TRIANGLES sets another limit
MAX_TRIANGLES_ENV = "SPACESHIP_SIM_MAX_TRIANGLES"
DEFAULT_MAX_TRIANGLES = 500_000
# a medial sphere tree's build: a fixed part (sampling, Qhull on at most 6,000 samples, merging) and
# a part per triangle (distance index, inside tests, coverage, error bounds); rough, from builds on a
# 2-core machine (7,000 triangles: 7 s; 200,000: minutes)
TREE_SECONDS_FIXED, TREE_SECONDS_PER_TRIANGLE = 5.0, 1e-3
# a file bigger than this per allowed triangle is refused unread (ASCII STL: ~260); below MIN_BYTE_LIMIT a
# file is read, and refused by its count of triangles
MAX_BYTES_PER_TRIANGLE, MIN_BYTE_LIMIT = 1024, 64_000_000
# a face is degenerate when twice its area is below this fraction of the squared mesh extent
# (relative, so a model in millimetres and one in kilometres are judged alike)
ZERO_AREA_REL = 1e-12


class MeshError(InputError):
    """A mesh file or mesh arrays that cannot be used; str() names the file and the field."""


class OpenMeshWarning(UserWarning):
    """The mesh is not a closed, consistently oriented surface; it is used as an open shell."""


@dataclass(frozen=True, eq=False)
class Mesh:
    """A validated triangle mesh in the ship's body frame.

    name     : model name (file stem, or the `source` given to `validate_mesh_arrays`)
    path     : file it was read from (or the in-memory source label)
    vertices : (n, 3) float64, body frame [m], read-only; body origin = bounding-sphere centre
    faces    : (m, 3) int32, vertex indices, counter-clockwise seen from outside, read-only
    closed   : True when every edge is shared by exactly two faces with opposite directions
               (watertight, consistently oriented, outward): the mesh bounds a solid
    """

    name: str
    path: str
    vertices: np.ndarray
    faces: np.ndarray
    closed: bool

    @property
    def bounding_radius(self) -> float:
        """Radius [m] of the sphere about the body origin enclosing every vertex."""
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", self.vertices, self.vertices))))

    @property
    def triangles(self) -> np.ndarray:
        """(m, 3, 3) float64 corner coordinates of each face, body frame [m]."""
        return self.vertices[self.faces]

    @property
    def volume(self) -> float:
        """Signed enclosed volume [m^3] (divergence theorem); meaningful only when closed."""
        t = self.triangles
        return float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)

    def __repr__(self) -> str:
        return (f"Mesh({self.name!r}, {len(self.vertices)} vertices, {len(self.faces)} faces, "
                f"closed={self.closed}, radius={self.bounding_radius:.3g} m)")


# ---------------------------------------------------------------- validation

def validate_mesh_arrays(vertices, faces, source, name: str | None = None) -> Mesh:
    """Check raw arrays and return a read-only `Mesh` (copies the inputs).

    vertices : array-like (n, 3), finite reals [m]
    faces    : array-like (m, 3), integers in [0, n), m >= 1
    source   : file path or label used in error messages and as `Mesh.path`
    name     : model name (default: the stem of `source`)
    Raises MeshError on the first problem; warns OpenMeshWarning (once) for an open surface.
    """
    source = str(source)
    v = _as_vertices(vertices, source)
    f = _as_faces(faces, source, len(v))
    _check_face_areas(v, f, source)
    closed = _check_closed(v, f, source)
    v.flags.writeable = False
    f.flags.writeable = False
    return Mesh(name or Path(source).stem, source, v, f, closed)


def _as_vertices(vertices, source: str) -> np.ndarray:
    try:
        v = np.array(vertices, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MeshError(source, "vertices", f"not an array of numbers ({exc})") from None
    if v.ndim != 2 or v.shape[1] != 3:
        raise MeshError(source, "vertices", f"expected shape (n, 3), got {v.shape}")
    bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
    if bad.size:
        i = int(bad[0])
        raise MeshError(source, f"vertices[{i}]", f"not finite {tuple(v[i].tolist())}"
                        + (f" (and {bad.size - 1} more)" if bad.size > 1 else ""))
    return v


def _as_faces(faces, source: str, n_vertices: int) -> np.ndarray:
    f = np.asarray(faces)
    if f.size == 0:
        raise MeshError(source, "faces", "empty mesh (no triangles)")
    if f.ndim != 2 or f.shape[1] != 3:
        raise MeshError(source, "faces", f"expected triangles, shape (m, 3), got {f.shape}")
    if not np.issubdtype(f.dtype, np.integer):
        raise MeshError(source, "faces", f"indices must be integers, got {f.dtype}")
    bad = np.flatnonzero(((f < 0) | (f >= n_vertices)).any(axis=1))
    if bad.size:
        j = int(bad[0])
        raise MeshError(source, f"faces[{j}]",
                        f"vertex index out of range {f[j].tolist()} (mesh has {n_vertices} vertices)")
    f = f.astype(np.int32)
    rep = np.flatnonzero((f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0]))
    if rep.size:
        j = int(rep[0])
        raise MeshError(source, f"faces[{j}]", f"degenerate (repeated vertex index {f[j].tolist()})")
    return f


def _check_face_areas(v: np.ndarray, f: np.ndarray, source: str) -> None:
    t = v[f]
    twice_area = np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1)
    used = v[np.unique(f)]
    extent = float(np.max(used.max(axis=0) - used.min(axis=0)))
    bad = np.flatnonzero(twice_area <= ZERO_AREA_REL * extent**2)
    if bad.size:
        raise MeshError(source, f"faces[{int(bad[0])}]", "degenerate (zero area)"
                        + (f" (and {bad.size - 1} more)" if bad.size > 1 else ""))


def _check_closed(v: np.ndarray, f: np.ndarray, source: str) -> bool:
    """True when every directed edge occurs once and its reverse once (closed, oriented).

    A closed but inside-out mesh (negative volume) raises; an open one warns and returns False.
    """
    n = np.int64(len(v))
    a = f.astype(np.int64)
    tails, heads = a.ravel(), a[:, [1, 2, 0]].ravel()
    keys = tails * n + heads
    uniq, counts = np.unique(keys, return_counts=True)
    repeated = int(np.count_nonzero(counts > 1))  # same direction twice: flipped face / non-manifold
    unmatched = int(np.count_nonzero(~np.isin(heads * n + tails, uniq)))  # boundary edges
    if repeated == 0 and unmatched == 0:
        t = v[f]
        vol = np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0
        if vol < 0:
            raise MeshError(source, "faces", "closed mesh is inside-out (negative volume); "
                            "faces must wind counter-clockwise seen from outside")
        return True
    warnings.warn(OpenMeshWarning(
        f"{source}: mesh is not closed ({unmatched} boundary edges, {repeated} edges with "
        "inconsistent winding or more than two faces); using it as an open surface"), stacklevel=3)
    return False


# ---------------------------------------------------------------- files

def load_mesh(path) -> Mesh:
    """Read a triangle mesh file (PLY, STL, OBJ, OFF, glTF) and validate it (see module doc).

    The returned vertices are exactly the file's (float64), in the file's frame and units.
    """
    p = Path(path)
    check_input(p, max(MIN_BYTE_LIMIT, max_triangles() * MAX_BYTES_PER_TRIANGLE), "mesh", MeshError)
    if p.suffix.lower() not in MESH_SUFFIXES:
        raise MeshError(p, "format", f"unsupported mesh format {p.suffix or '(none)'!r}; "
                        f"use one of {', '.join(MESH_SUFFIXES)}")
    import trimesh  # lazy: keeps `import spaceship_sim` light

    try:
        loaded = trimesh.load(str(p), file_type=p.suffix.lower()[1:], process=False,
                              force="mesh", validate=False)
    except Exception as exc:  # trimesh raises many types for corrupt input; all mean "unreadable"
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        raise MeshError(p, "", f"cannot read {p.suffix[1:].upper()} file ({reason})") from None
    faces = getattr(loaded, "faces", None)
    vertices = getattr(loaded, "vertices", np.zeros((0, 3)))
    if faces is None:
        faces = np.zeros((0, 3), dtype=np.int64)
    if len(vertices) == 0 and p.suffix.lower() in LENIENT_SUFFIXES:
        raise MeshError(p, "", f"not a valid {p.suffix[1:].upper()} mesh (no vertices could be read)")
    if len(faces) > max_triangles():
        raise MeshError(p, "faces", f"{len(faces):,} triangles, over the limit of {max_triangles():,}: its sphere "
                        f"trees would take {tree_build_estimate(len(faces))} to build (${MAX_TRIANGLES_ENV} raises "
                        "the limit)")
    return validate_mesh_arrays(vertices, faces, p, name=p.stem)


def max_triangles() -> int:
    """The triangle limit of a mesh: $SPACESHIP_SIM_MAX_TRIANGLES, else DEFAULT_MAX_TRIANGLES. A bad
    value is an InputError naming the variable."""
    text = os.environ.get(MAX_TRIANGLES_ENV)
    if text is None:
        return DEFAULT_MAX_TRIANGLES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10**9:
        raise InputError("environment", MAX_TRIANGLES_ENV, f"must be an integer in 1..1000000000, got {text!r}")
    return value


def tree_build_estimate(n_triangles: int) -> str:
    """How long sphere trees of a mesh of n_triangles take to build, in words (a rough estimate)."""
    seconds = TREE_SECONDS_FIXED + TREE_SECONDS_PER_TRIANGLE * n_triangles
    return f"about {seconds / 60:.0f} minutes" if seconds >= 120 else f"about {seconds:.0f} s"


def assets_dir() -> Path:
    """Folder holding the ship models: $SPACESHIP_SIM_ASSETS, else the repository's assets/."""
    env = os.environ.get(ASSETS_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "assets"


def available_models() -> list[str]:
    """Sorted names of the models (``*.ply`` stems) in `assets_dir()`."""
    d = assets_dir()
    return sorted(p.stem for p in d.glob(f"*{MODEL_SUFFIX}") if p.is_file()) if d.is_dir() else []


def model_path(name: str) -> Path:
    """Path of model `name` in `assets_dir()` (not checked for existence)."""
    return assets_dir() / f"{name}{MODEL_SUFFIX}"


def check_model(name: str, file=None, key: str = "model") -> Path:
    """Path of model `name` in `assets_dir()`. When there is none, MeshError naming `file` and
    `key` (where the name came from, e.g. a config file and its key; default: the assets folder)
    and listing the known models."""
    p = model_path(name)
    if not os.path.isfile(p):  # (False, not an error, for a name too long)
        known = ", ".join(available_models()) or "none"
        raise MeshError(assets_dir() if file is None else file, key,
                        f"unknown model {name!r} (no {p}; available: {known})")
    return p


def load_model(name: str) -> Mesh:
    """Load and validate model `name` from `assets_dir()`; MeshError lists the known models."""
    return load_mesh(check_model(name))
