"""Convex polytopes as flat arrays for feature walks (I-COLLIDE, Cohen et al. 1995).

A `Polytope` is one convex body in its own frame (origin at its centre of mass). Faces are true
faces: coplanar hull triangles are merged into one convex polygon, because a triangulated square
has a diagonal edge whose Voronoi region is a zero-width wedge, a degenerate case the closest-feature
walk would have to step around. Vertex, edge and face adjacency is stored so that walks move to a
neighbouring feature in constant time.

`PolytopeSet` packs many polytopes into one set of arrays with global indices (vertex, edge and
face numbers are unique across bodies), the form the numba kernels in `closest` and `sweep` take.

Non-convex mesh input (`polytope_from_mesh`) is replaced by its convex hull with one
`NonConvexWarning` (I-COLLIDE's own rule: "for non-convex polyhedral models, the algorithm is applied
to their convex hulls"); `strict=True` refuses it with an InputError instead. Input with no volume
(fewer than 4 points, all points coplanar) or non-finite coordinates is always an InputError.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from ..errors import InputError

MIN_FACES, MAX_FACES = 8, 1000
COPLANAR_TOL = 1e-9  # relative to the body's size: planes this close are one face


class NonConvexWarning(UserWarning):
    """A mesh given as a convex body was not convex and was replaced by its hull."""


@dataclass(frozen=True)
class _Features:
    """The feature arrays shared by `Polytope` (local indices) and `PolytopeSet` (global)."""

    vertices: np.ndarray
    face_start: np.ndarray
    face_verts: np.ndarray
    face_edges: np.ndarray
    face_normal: np.ndarray
    face_offset: np.ndarray
    edges: np.ndarray
    edge_faces: np.ndarray
    vert_start: np.ndarray
    vert_nbrs: np.ndarray
    vert_edges: np.ndarray


@dataclass(frozen=True)
class Polytope(_Features):
    """One convex polytope, body frame, origin at its centre of mass.

    vertices : (V, 3) float64
    face_start : (F + 1,) int32; face f's corners are face_verts[face_start[f]:face_start[f+1]]
    face_verts : (K,) int32, counter-clockwise seen from outside
    face_edges : (K,) int32; face_edges[k] runs from face_verts[k] to the next corner of that face
    face_normal : (F, 3) float64 unit outward normals; face_offset : (F,) float64, n . x = offset on the face
    edges : (E, 2) int32 (tail, head); edge_faces : (E, 2) int32 (left, right): the edge runs
        tail -> head in the left face's counter-clockwise order
    vert_start : (V + 1,) int32; vertex v's neighbours are vert_nbrs[vert_start[v]:vert_start[v+1]],
        reached along vert_edges[...] (same slots)
    """

    volume: float

    @property
    def n_faces(self) -> int:
        return len(self.face_start) - 1

    @property
    def radius(self) -> float:
        """Largest distance of a vertex from the origin [body units]."""
        return float(np.sqrt((self.vertices ** 2).sum(axis=1).max()))

    def face(self, f: int) -> np.ndarray:
        return self.face_verts[self.face_start[f]:self.face_start[f + 1]]


def random_polytope(n_faces: int, rng: np.random.Generator, radius: float = 1.0) -> Polytope:
    """The paper's bodies: convex hull of random points on a sphere of `radius`.

    Points in general position give a simplicial hull with F = 2V - 4 triangles, so V = F/2 + 2
    points are drawn for `n_faces` (rounded up to even, 8..1000)."""
    if not MIN_FACES <= n_faces <= MAX_FACES:
        raise InputError("polytope", "faces", f"must be in {MIN_FACES}..{MAX_FACES}, got {n_faces}")
    n_points = (n_faces + 1) // 2 + 2
    p = rng.normal(size=(n_points, 3))
    p *= radius / np.linalg.norm(p, axis=1, keepdims=True)
    return polytope_from_points(p, "random polytope")


def polytope_from_mesh(vertices, faces, source: str = "mesh", strict: bool = False) -> Polytope:
    """A convex body from a triangle mesh (V, 3) / (T, 3): its convex hull.

    A mesh vertex strictly inside the hull means the mesh is not convex: with strict=False the hull
    is used and a NonConvexWarning says so; strict=True raises InputError."""
    v = np.asarray(vertices, float)
    if v.ndim != 2 or v.shape[1] != 3 or not np.isfinite(v).all():
        raise InputError(source, "vertices", "expected finite (n, 3) coordinates")
    poly, centre = _hull_polytope(v, source)
    used = np.unique(np.asarray(faces, np.int64).ravel()) if len(faces) else np.arange(len(v))
    centred = v[used] - centre
    depth = (poly.face_offset[None, :] - centred @ poly.face_normal.T).min(axis=1)
    inside = int((depth > 1e-7 * poly.radius).sum())
    if inside:
        why = f"not convex: {inside} of {len(used)} vertices lie inside its convex hull"
        if strict:
            raise InputError(source, "faces", why)
        warnings.warn(f"{source}: {why}; using the hull", NonConvexWarning, stacklevel=2)
    return poly


def polytope_from_points(points, source: str = "points") -> Polytope:
    """Convex hull of (n, 3) points, coplanar triangles merged into faces, centred on its mass centre."""
    return _hull_polytope(np.asarray(points, float), source)[0]


def _hull_polytope(p: np.ndarray, source: str) -> tuple[Polytope, np.ndarray]:
    """The hull polytope and its mass centre (3,) in the points' frame (subtracted from them)."""
    if len(p) < 4 or not np.isfinite(p).all():
        raise InputError(source, "vertices", f"need at least 4 finite points, got {len(p)}")
    try:
        hull = ConvexHull(p)
    except QhullError:
        raise InputError(source, "vertices", "points are coplanar or coincident: no volume") from None
    scale = np.ptp(p, axis=0).max()
    groups = _coplanar_groups(hull, COPLANAR_TOL * scale)
    tris = _outward_triangles(hull)
    polygons = [_boundary_loop(tris[g]) for g in groups]
    used = np.unique(np.concatenate(polygons))
    remap = np.full(len(p), -1, np.int64)
    remap[used] = np.arange(len(used))
    centre = _mass_centre(p, tris)
    return _assemble(p[used] - centre, [remap[loop] for loop in polygons], hull.volume), centre


def _coplanar_groups(hull: ConvexHull, tol: float) -> list[np.ndarray]:
    """Triangle indices grouped by face: union of hull neighbours whose planes agree within tol."""
    parent = np.arange(len(hull.simplices))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    eq = hull.equations
    for t, nbrs in enumerate(hull.neighbors):
        for u in nbrs:
            if u > t and np.abs(eq[t] - eq[u]).max() <= tol:
                parent[root(u)] = root(t)
    roots = np.array([root(i) for i in range(len(parent))])
    return [np.flatnonzero(roots == r) for r in np.unique(roots)]


def _outward_triangles(hull: ConvexHull) -> np.ndarray:
    """(T, 3) hull triangles wound counter-clockwise seen from outside (Qhull's are not)."""
    tris = hull.simplices.copy()
    a, b, c = (hull.points[tris[:, k]] for k in range(3))
    flip = (np.cross(b - a, c - a) * hull.equations[:, :3]).sum(axis=1) < 0
    tris[flip] = tris[flip][:, ::-1]
    return tris


def _boundary_loop(tris: np.ndarray) -> np.ndarray:
    """Corners of the polygon made by coplanar triangles (T, 3), in their winding order."""
    directed = {(int(t[k]), int(t[(k + 1) % 3])) for t in tris for k in range(3)}
    nxt = {a: b for a, b in directed if (b, a) not in directed}
    start = next(iter(nxt))
    loop = [start]
    while nxt[loop[-1]] != start:
        loop.append(nxt[loop[-1]])
    return np.array(loop, np.int64)


def _mass_centre(p: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """Centre of mass of the solid bounded by outward triangles (signed tetrahedra from the origin)."""
    a, b, c = (p[tris[:, k]] for k in range(3))
    vol = (a * np.cross(b, c)).sum(axis=1)
    return ((a + b + c) * vol[:, None]).sum(axis=0) / (4.0 * vol.sum())


def _assemble(verts: np.ndarray, loops: list[np.ndarray], volume: float) -> Polytope:
    """Faces, edges and vertex adjacency from the face loops (indices into verts)."""
    face_start = np.cumsum([0] + [len(l) for l in loops]).astype(np.int32)
    face_verts = np.concatenate(loops).astype(np.int32)
    edge_of, edges, edge_faces = {}, [], []
    face_edges = np.empty(len(face_verts), np.int32)
    for f, loop in enumerate(loops):
        for k, a in enumerate(loop):
            b = loop[(k + 1) % len(loop)]
            key = (min(a, b), max(a, b))
            if key not in edge_of:
                edge_of[key] = len(edges)
                edges.append((a, b))
                edge_faces.append([f, -1])  # left face: the first face to walk a -> b
            else:
                edge_faces[edge_of[key]][1] = f
            face_edges[face_start[f] + k] = edge_of[key]
    edges = np.array(edges, np.int32)
    edge_faces = np.array(edge_faces, np.int32)
    if (edge_faces[:, 1] < 0).any():
        raise InputError("polytope", "faces", "hull faces do not close up (degenerate input)")
    normal, offset = _face_planes(verts, loops)
    vert_start, vert_nbrs, vert_edges = _vertex_adjacency(len(verts), edges)
    return Polytope(verts, face_start, face_verts, face_edges, normal, offset, edges, edge_faces,
                    vert_start, vert_nbrs, vert_edges, float(volume))


def _face_planes(verts: np.ndarray, loops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Unit outward normals (Newell's method: robust for polygons) and plane offsets."""
    normal = np.empty((len(loops), 3))
    offset = np.empty(len(loops))
    for f, loop in enumerate(loops):
        p = verts[loop]
        n = np.cross(p, np.roll(p, -1, axis=0)).sum(axis=0)
        normal[f] = n / np.linalg.norm(n)
        offset[f] = (p @ normal[f]).mean()
    return normal, offset


def _vertex_adjacency(n_verts: int, edges: np.ndarray):
    """CSR lists of each vertex's neighbour vertices and the edges leading there."""
    ends = np.concatenate([edges[:, 0], edges[:, 1]])
    others = np.concatenate([edges[:, 1], edges[:, 0]])
    ids = np.concatenate([np.arange(len(edges))] * 2)
    order = np.argsort(ends, kind="stable")
    start = np.zeros(n_verts + 1, np.int32)
    np.add.at(start, ends + 1, 1)
    return np.cumsum(start).astype(np.int32), others[order].astype(np.int32), ids[order].astype(np.int32)


@dataclass(frozen=True)
class PolytopeSet(_Features):
    """Many polytopes in one set of arrays with global indices, for the numba kernels.

    Same fields as `Polytope` with every index global (vertex, edge and face numbers offset by the
    earlier bodies'), plus per body: vert_range / edge_range / face_range (B + 1,) int32 offsets and
    radius (B,) float64. Feature codes: 3 * index + kind, kind 0 vertex, 1 edge, 2 face."""

    vert_range: np.ndarray
    edge_range: np.ndarray
    face_range: np.ndarray
    radius: np.ndarray
    max_face_size: int

    @property
    def n_bodies(self) -> int:
        return len(self.radius)

    def kernel_args(self) -> tuple:
        """The arrays, in the order the closest-feature kernels take them."""
        return (self.vertices, self.face_start, self.face_verts, self.face_edges, self.face_normal,
                self.face_offset, self.edges, self.edge_faces, self.vert_start, self.vert_nbrs,
                self.vert_edges, self.vert_range, self.face_range, self.max_face_size)


def pack(polytopes: list[Polytope]) -> PolytopeSet:
    """Concatenate polytopes, shifting every index by the earlier bodies' counts."""
    nv = np.cumsum([0] + [len(p.vertices) for p in polytopes])
    ne = np.cumsum([0] + [len(p.edges) for p in polytopes])
    nf = np.cumsum([0] + [p.n_faces for p in polytopes])
    nk = np.cumsum([0] + [len(p.face_verts) for p in polytopes])
    nn = np.cumsum([0] + [len(p.vert_nbrs) for p in polytopes])

    def cat(attr, shift):
        return np.concatenate([getattr(p, attr) + s for p, s in zip(polytopes, shift)]).astype(np.int32)

    face_start = np.concatenate([p.face_start[:-1] + s for p, s in zip(polytopes, nk)] + [[nk[-1]]])
    vert_start = np.concatenate([p.vert_start[:-1] + s for p, s in zip(polytopes, nn)] + [[nn[-1]]])
    i32 = lambda a: np.ascontiguousarray(a, np.int32)  # noqa: E731
    return PolytopeSet(
        vertices=np.concatenate([p.vertices for p in polytopes]),
        face_start=i32(face_start), face_verts=cat("face_verts", nv), face_edges=cat("face_edges", ne),
        face_normal=np.concatenate([p.face_normal for p in polytopes]),
        face_offset=np.concatenate([p.face_offset for p in polytopes]),
        edges=cat("edges", nv), edge_faces=cat("edge_faces", nf),
        vert_start=i32(vert_start), vert_nbrs=cat("vert_nbrs", nv), vert_edges=cat("vert_edges", ne),
        vert_range=i32(nv), edge_range=i32(ne), face_range=i32(nf),
        radius=np.array([p.radius for p in polytopes]),
        max_face_size=int(max(np.diff(p.face_start).max() for p in polytopes)))
