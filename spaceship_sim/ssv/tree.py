"""SSV hierarchies (Larsen et al. 1999): a binary tree of swept-sphere volumes per model, built top
down, stored as flat arrays (Box2D-style node arrays), cached next to the sphere trees.

Building: a node holds a set of triangles; the principal axes of their vertices (eigenvectors of the
covariance), the two longest turned to the least bounding rectangle, orient the node's three fits — PSS (a sphere about the box centre), LSS (a segment along
the longest axis, radius from the perpendicular bounding circle, ends pulled in while the caps still
cover), RSS (a rectangle across the two longest axes, radius half the thickness along the shortest,
long then short sides pulled in while the rounded edges still cover) — and the node keeps the smallest by volume
(the paper's static rule picks by axis ratios with an unstated factor; the volume is the criterion
that rule approximates). The triangles are split by a plane across their centroids — of twelve
candidates (three axes, each cut at the mean, the middle and two quantiles), the one whose halves'
SSVs have the least surface area in all — down to one triangle a leaf.
Each node also keeps the oriented box of its triangles' vertices along its axes u, v, u x v (fcl's
OBBRSS likewise pairs an OBB with its RSS): collide tests the boxes, distance the SSVs.
Radii and box half-extents carry a slack of SLACK x the model's size so that rounding never
uncovers a touching contact.
"""
from __future__ import annotations

import hashlib
import time
from collections import namedtuple
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .build import CUT_QUANTILES, build_nodes  # noqa: F401 (CUT_QUANTILES: the method's, re-exported)

SSV_BUILDER_VERSION = "8"  # 3: boxes per node; 4: split on the centroids' principal axis; 5: turned
# rectangles; 6: the cut whose halves' SSVs are least; 7: by area, twelve cuts; 8: compiled (rounding)
SLACK = 1e-9  # radius slack as a fraction of the model's bounding-box diagonal [-]
RECT_TURNS = 32  # in-plane turns of the two longest axes tried, evenly over a quarter turn (0 among them)
# (RECT_TURNS, 2) cos, sin of the turns
TURNS = np.stack([np.cos(np.arange(RECT_TURNS) * (np.pi / 2 / RECT_TURNS)),
                  np.sin(np.arange(RECT_TURNS) * (np.pi / 2 / RECT_TURNS))], 1)


@dataclass(frozen=True, eq=False)
class _Nodes:
    """SSV node and triangle arrays (n nodes, F triangles), body frame, metres.

    center : (n, 3) float64, centre of the node's core (point, segment middle, rectangle centre)
    u, v   : (n, 3) float64, unit axes of the core (u along a segment; u, v span a rectangle)
    half   : (n, 2) float64, half-extents (a, b) along u, v, a >= b >= 0 (PSS: 0, 0; LSS: a, 0)
    radius : (n,) float64, radius of the swept sphere
    kind   : (n,) int64, PSS 0, LSS 1, RSS 2
    child  : (n, 2) int64, the two children, -1 at leaves
    face   : (n,) int64, the leaf's triangle (index into tris), -1 for inner nodes
    tris   : (F, 3, 3) float64, the mesh's triangles (faces' order), one vertex per row
    box_center, box_half : (n, 3) float64, the oriented box holding the node's triangles: axes u, v,
             u x v, centre box_center (body frame), half-extents box_half along them (collide's
             cheap test, as fcl's OBB beside its RSS)
    """

    center: np.ndarray
    u: np.ndarray
    v: np.ndarray
    half: np.ndarray
    radius: np.ndarray
    kind: np.ndarray
    child: np.ndarray
    face: np.ndarray
    tris: np.ndarray
    box_center: np.ndarray
    box_half: np.ndarray

    _ARRAYS = ("center", "u", "v", "half", "radius", "kind", "child", "face", "tris", "box_center", "box_half")


# The arrays the query kernels take (ssv/query.py) as one argument: the _Nodes arrays, and extent (n,)
# float64 [m], how far each node's SSV reaches from its core's centre (front tracking).
SSVArrays = namedtuple("SSVArrays", (*_Nodes._ARRAYS, "extent"))


@dataclass(frozen=True, eq=False)
class SSVTree(_Nodes):
    """One model's SSV hierarchy (the _Nodes arrays; n = 2 F - 1 nodes, root 0), plus
    depth : int, edges on the longest root-leaf path
    key   : str, cache key (mesh + builder version); build_seconds: float [s]
    """

    depth: int = 0
    key: str = ""
    build_seconds: float = float("nan")

    @property
    def n_nodes(self) -> int:
        return len(self.radius)

    def save(self, path) -> None:
        """Write to .npz atomically (temp file + rename: never half-written)."""
        from ..spheretree.tree import write_npz_atomic
        write_npz_atomic(path, **{a: getattr(self, a) for a in self._ARRAYS}, depth=np.array(self.depth),
                         key=np.array(self.key), build_seconds=np.array(self.build_seconds))

    @classmethod
    def load(cls, path) -> "SSVTree":
        with np.load(path, allow_pickle=False) as z:
            return cls(**{a: z[a] for a in cls._ARRAYS}, depth=int(z["depth"]), key=str(z["key"]),
                       build_seconds=float(z["build_seconds"]))


# ---------------------------------------------------------------- building

def _volumes(a, b, r):
    """Volumes of the PSS, LSS and RSS with these half-extents and radius [m^3]."""
    return 4 / 3 * np.pi * r ** 3 + 2 * np.pi * r ** 2 * (a + b) + 8 * r * a * b


def build_ssv(vertices, faces, key: str = "") -> SSVTree:
    """SSV tree of a triangle mesh: vertices (nv, 3) float64 body frame [m], faces (F, 3) int (the
    compiled builder, ssv/build.py; ssv/reference.py is the same method in numpy)."""
    t0 = time.perf_counter()
    vertices = np.array(vertices, np.float64, order="C")  # writable copies: one compiled signature
    faces = np.array(faces, np.int64, order="C")
    n_faces = len(faces)
    if n_faces == 0:
        raise ValueError("build_ssv needs at least one triangle")
    tris = vertices[faces]
    used = vertices[np.unique(faces)]
    slack = SLACK * float(np.linalg.norm(used.max(0) - used.min(0)))
    n = 2 * n_faces - 1
    a = dict(center=np.zeros((n, 3)), u=np.zeros((n, 3)), v=np.zeros((n, 3)), half=np.zeros((n, 2)),
             radius=np.zeros(n), kind=np.zeros(n, np.int64), child=np.full((n, 2), -1, np.int64),
             face=np.full(n, -1, np.int64), box_center=np.zeros((n, 3)), box_half=np.zeros((n, 3)))
    depth = np.zeros(n, np.int64)
    build_nodes(vertices, faces, slack, TURNS, a["center"], a["u"], a["v"], a["half"], a["radius"], a["kind"],
                a["child"], a["face"], a["box_center"], a["box_half"], depth)
    return SSVTree(**a, tris=tris, depth=int(depth.max()), key=key, build_seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------- cache

def ssv_key(vertices, faces) -> str:
    """Hex SHA-256 of the mesh bytes (float64 vertices, int32 faces) and SSV_BUILDER_VERSION."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(vertices, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(faces, dtype=np.int32).tobytes())
    h.update(f"|ssv|v{SSV_BUILDER_VERSION}".encode())
    return h.hexdigest()


def load_or_build_ssv(mesh, cache_dir=None, force: bool = False) -> SSVTree:
    """The cached SSV tree of `mesh` (spaceship_sim.meshes.Mesh), built and cached when missing,
    stale (another mesh or builder version) or unreadable; cache_dir as the sphere trees'."""
    from ..spheretree.build import cached, tree_path

    key = ssv_key(mesh.vertices, mesh.faces)

    def fits(tree):
        return tree.key == key and np.array_equal(tree.tris, np.asarray(mesh.vertices)[np.asarray(mesh.faces)])

    return cached(tree_path(mesh, "ssv", key, cache_dir), SSVTree.load, fits,
                  lambda: build_ssv(mesh.vertices, mesh.faces, key=key), "SSV tree", force)


# ---------------------------------------------------------------- bank

@dataclass(frozen=True, eq=False)
class SSVBank(_Nodes):
    """The SSV trees of M models concatenated (N nodes, F triangles in all), global ids throughout:
    the _Nodes arrays, plus node_offset (M+1,) int64 (model m's root is node_offset[m]), tri_offset
    (M+1,) int64 (its faces are tri_offset[m]:tri_offset[m+1]) and depth (M,) int64."""

    node_offset: np.ndarray = None
    tri_offset: np.ndarray = None
    depth: np.ndarray = None

    @classmethod
    def from_trees(cls, trees) -> "SSVBank":
        trees = list(trees)
        node_offset = np.concatenate([[0], np.cumsum([t.n_nodes for t in trees])]).astype(np.int64)
        tri_offset = np.concatenate([[0], np.cumsum([len(t.tris) for t in trees])]).astype(np.int64)
        cat = {a: np.ascontiguousarray(np.concatenate([getattr(t, a) for t in trees])) for a in SSVTree._ARRAYS}
        cat["child"] = np.concatenate([np.where(t.child >= 0, t.child + o, -1)
                                       for t, o in zip(trees, node_offset)]).astype(np.int64)
        cat["face"] = np.concatenate([np.where(t.face >= 0, t.face + o, -1)
                                      for t, o in zip(trees, tri_offset)]).astype(np.int64)
        return cls(**cat, node_offset=node_offset, tri_offset=tri_offset,
                   depth=np.array([t.depth for t in trees], np.int64))

    @cached_property
    def arrays(self) -> tuple:
        """SSVArrays's fields, a plain tuple: the argument the query kernels take (see ssv/query.py)."""
        extent = np.hypot(self.half[:, 0], self.half[:, 1]) + self.radius
        return tuple(SSVArrays(*(getattr(self, a) for a in self._ARRAYS), extent))
