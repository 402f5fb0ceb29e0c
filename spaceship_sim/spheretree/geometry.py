"""Geometry for the sphere-tree builders: distances to a triangle mesh, inside tests, bounding spheres.

The one heavy query is `MeshQuery.query(points)`: for each point the closest point of the mesh
surface, its distance and (for closed meshes) the side. It runs as one numba kernel that loops over
all triangles with a bounding-box early-out (the meshes here have at most a few thousand triangles
and the builders batch their points, so a brute-force loop is simpler than a BVH and fast enough).

The side comes from the angle-weighted pseudo-normal of the closest feature (face, edge or vertex;
Baerentzen & Aanaes 2005): for a closed, consistently oriented 2-manifold, (p - q) . n > 0 exactly when
p is outside. The plain-numpy references (`closest_point_triangles`, `winding_number`) back the tests.

All coordinates are in the ship's body frame [m].
"""
from __future__ import annotations

import numpy as np
from numba import njit

# region codes of the closest point on a triangle (a, b, c)
_FACE, _VA, _VB, _VC, _EAB, _EBC, _ECA = 0, 1, 2, 3, 4, 5, 6


@njit(cache=True)
def _closest_on_triangle(px, py, pz, t):
    """Ericson's closest point on triangle t (3,3) to p; returns (qx, qy, qz, region)."""
    ax, ay, az = t[0, 0], t[0, 1], t[0, 2]
    abx, aby, abz = t[1, 0] - ax, t[1, 1] - ay, t[1, 2] - az
    acx, acy, acz = t[2, 0] - ax, t[2, 1] - ay, t[2, 2] - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, _VA
    bpx, bpy, bpz = px - t[1, 0], py - t[1, 1], pz - t[1, 2]
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return t[1, 0], t[1, 1], t[1, 2], _VB
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz, _EAB
    cpx, cpy, cpz = px - t[2, 0], py - t[2, 1], pz - t[2, 2]
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return t[2, 0], t[2, 1], t[2, 2], _VC
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz, _ECA
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        bx, by, bz = t[1, 0], t[1, 1], t[1, 2]
        return bx + w * (t[2, 0] - bx), by + w * (t[2, 1] - by), bz + w * (t[2, 2] - bz), _EBC
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return (ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w, _FACE)


_BLOCK = 8  # triangles per bounding box in the query's two-level culling


@njit(cache=True)
def _mesh_query(points, tris, lo, hi, pseudo, signed):
    """Closest surface point, distance and side for each point (brute force with box culling).

    points : (n, 3) float64; tris : (m, 3, 3) float64, ideally in spatially coherent order;
    lo, hi : (ceil(m / 8), 3) boxes of consecutive blocks of 8 triangles;
    pseudo : (m, 7, 3) float64 pseudo-normal per region code (row 0 face, 1-3 vertices, 4-6 edges);
    signed : bool, compute the side (else side = +1).
    Returns dist (n,), closest (n, 3), side (n,) (+1 outside / on a shell, -1 inside), tri (n,) int64
    (row of tris).
    """
    n = points.shape[0]
    m = tris.shape[0]
    nb = lo.shape[0]
    dist = np.empty(n)
    closest = np.empty((n, 3))
    side = np.ones(n)
    tri = np.empty(n, np.int64)
    hint = 0
    for i in range(n):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        # start from the previous point's triangle: batches are spatially coherent
        qx, qy, qz, reg = _closest_on_triangle(px, py, pz, tris[hint])
        best = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
        bt, bx, by, bz, br = hint, qx, qy, qz, reg
        for blk in range(nb):
            # squared distance to the block's box: a lower bound on the distance to its triangles
            ex = max(lo[blk, 0] - px, 0.0, px - hi[blk, 0])
            ey = max(lo[blk, 1] - py, 0.0, py - hi[blk, 1])
            ez = max(lo[blk, 2] - pz, 0.0, pz - hi[blk, 2])
            if ex * ex + ey * ey + ez * ez >= best:
                continue
            for j in range(blk * 8, min(m, blk * 8 + 8)):
                qx, qy, qz, reg = _closest_on_triangle(px, py, pz, tris[j])
                d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
                if d2 < best:
                    best, bt, bx, by, bz, br = d2, j, qx, qy, qz, reg
        dist[i] = np.sqrt(best)
        closest[i, 0], closest[i, 1], closest[i, 2] = bx, by, bz
        tri[i] = bt
        hint = bt
        if signed:
            nrm = pseudo[bt, br]
            s = (px - bx) * nrm[0] + (py - by) * nrm[1] + (pz - bz) * nrm[2]
            side[i] = -1.0 if s < 0.0 else 1.0
    return dist, closest, side, tri


def _morton_order(p: np.ndarray) -> np.ndarray:
    """Permutation sorting points (n,3) along a Z-order curve (10 bits per axis)."""
    q = p - p.min(axis=0)
    q = np.floor(q / max(float(q.max()), 1e-300) * 1023).astype(np.int64)
    code = np.zeros(len(p), np.int64)
    for bit in range(10):
        for ax in range(3):
            code |= ((q[:, ax] >> bit) & 1) << (3 * bit + ax)
    return np.argsort(code, kind="stable")


def face_normals(tris: np.ndarray) -> np.ndarray:
    """(m, 3) unit normals of triangles (m, 3, 3), right-handed winding."""
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def _pseudo_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(m, 7, 3) angle-weighted pseudo-normals per face region (see `_mesh_query`).

    Edge normal = sum of the two adjacent face normals; vertex normal = sum of incident face normals
    weighted by the face's angle at the vertex. Only meaningful on closed oriented meshes.
    """
    tris = vertices[faces]
    fn = face_normals(tris)
    m = len(faces)
    out = np.empty((m, 7, 3))
    out[:, 0] = fn
    # vertex normals, angle weighted
    vn = np.zeros_like(vertices)
    for k in range(3):
        e1 = tris[:, (k + 1) % 3] - tris[:, k]
        e2 = tris[:, (k + 2) % 3] - tris[:, k]
        cosang = np.einsum("ij,ij->i", e1, e2) / (np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1))
        ang = np.arccos(np.clip(cosang, -1.0, 1.0))
        np.add.at(vn, faces[:, k], fn * ang[:, None])
    out[:, 1:4] = vn[faces]
    # edge normals: directed edge (u, v) of one face meets (v, u) of its neighbour
    nv = np.int64(len(vertices))
    tails = faces.astype(np.int64)
    heads = faces[:, [1, 2, 0]].astype(np.int64)
    key = (tails * nv + heads).ravel()
    twin_key = (heads * nv + tails).ravel()
    order = np.argsort(key)
    pos = np.searchsorted(key[order], twin_key)
    pos = np.clip(pos, 0, len(key) - 1)
    found = key[order][pos] == twin_key
    twin_face = np.where(found, order[pos] // 3, np.repeat(np.arange(m), 3))
    en = fn.repeat(3, axis=0) + fn[twin_face]
    out[:, 4:7] = en.reshape(m, 3, 3)  # edges ab, bc, ca in that order
    return out


class MeshQuery:
    """Distance / closest-point / inside queries against one triangle mesh (body frame).

    vertices : (nv, 3) float64; faces : (m, 3) int; closed : the mesh bounds a solid
    (then `signed_distance` is negative inside and `solid_distance` is 0 inside).
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, closed: bool):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(faces, dtype=np.int64)
        self.closed = bool(closed)
        self.tris = np.ascontiguousarray(self.vertices[self.faces])
        self.pseudo = pseudo = (_pseudo_normals(self.vertices, self.faces) if self.closed
                                else np.zeros((len(self.faces), 7, 3)))  # (m,7,3), faces order
        # kernel copies in Z order so that blocks of 8 consecutive triangles have tight boxes
        self._order = _morton_order(self.tris.mean(axis=1))
        self._tris = np.ascontiguousarray(self.tris[self._order])
        self._pseudo = np.ascontiguousarray(pseudo[self._order])
        nb = -(-len(self._tris) // _BLOCK)
        pad = np.concatenate([self._tris, np.repeat(self._tris[-1:], nb * _BLOCK - len(self._tris), 0)])
        blocks = pad.reshape(nb, _BLOCK * 3, 3)
        self._lo = np.ascontiguousarray(blocks.min(axis=1))
        self._hi = np.ascontiguousarray(blocks.max(axis=1))

    def kernel_args(self):
        """(tris, lo, hi, pseudo, signed) for calling `_mesh_query` from other kernels."""
        return self._tris, self._lo, self._hi, self._pseudo, self.closed

    def query(self, points: np.ndarray):
        """points (n, 3) -> dist (n,) to the surface, closest (n, 3), side (n,) +-1, tri (n,) int64
        (index into faces)."""
        p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        if len(p) == 0:
            return np.zeros(0), np.zeros((0, 3)), np.ones(0), np.zeros(0, np.int64)
        d, q, side, t = _mesh_query(p, *self.kernel_args())
        return d, q, side, self._order[t]

    def signed_distance(self, points: np.ndarray) -> np.ndarray:
        """(n,) distance to the surface, negative inside (closed meshes; open: unsigned)."""
        d, _, side, _ = self.query(points)
        return d * side

    def solid_distance(self, points: np.ndarray) -> np.ndarray:
        """(n,) distance to the ship: to the solid (0 inside) when closed, to the surface when open."""
        return np.maximum(self.signed_distance(points), 0.0)


# ---------------------------------------------------------------- numpy references

def closest_point_triangles(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Closest points on triangles (a, b, c) to points p; all (..., 3), broadcast. Plain numpy.

    Reference implementation (Ericson, vectorised with masks) for the numba kernel, and the
    pairwise sphere/triangle test of the builders.
    """
    p, a, b, c = np.broadcast_arrays(p, a, b, c)
    ab, ac, ap = b - a, c - a, p - a
    dot = lambda u, v: np.einsum("...i,...i->...", u, v)  # noqa: E731
    d1, d2 = dot(ab, ap), dot(ac, ap)
    bp = p - b
    d3, d4 = dot(ab, bp), dot(ac, bp)
    cp = p - c
    d5, d6 = dot(ab, cp), dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = va + vb + vc
        v = np.where(denom != 0, vb / denom, 0.0)
        w = np.where(denom != 0, vc / denom, 0.0)
        out = a + ab * v[..., None] + ac * w[..., None]  # face region by default
        t_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        m = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
        out = np.where(m[..., None], b + (c - b) * t_bc[..., None], out)
        t_ac = d2 / (d2 - d6)
        m = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        out = np.where(m[..., None], a + ac * t_ac[..., None], out)
        m = (d6 >= 0) & (d5 <= d6)
        out = np.where(m[..., None], c, out)
        t_ab = d1 / (d1 - d3)
        m = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        out = np.where(m[..., None], a + ab * t_ab[..., None], out)
        m = (d3 >= 0) & (d4 <= d3)
        out = np.where(m[..., None], b, out)
        m = (d1 <= 0) & (d2 <= 0)
        out = np.where(m[..., None], a, out)
    return out


def triangle_distances(points: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(n, m) distances from points (n, 3) to triangles (m, 3, 3). Plain numpy, O(n m) memory."""
    q = closest_point_triangles(points[:, None, :], tris[None, :, 0], tris[None, :, 1], tris[None, :, 2])
    return np.linalg.norm(points[:, None, :] - q, axis=-1)


def winding_number(points: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(n,) generalized winding number of a triangle soup at points (Van Oosterom-Strackee)."""
    a = tris[None, :, 0] - points[:, None]
    b = tris[None, :, 1] - points[:, None]
    c = tris[None, :, 2] - points[:, None]
    la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
    det = np.einsum("...i,...i->...", a, np.cross(b, c))
    den = (la * lb * lc + np.einsum("...i,...i->...", a, b) * lc
           + np.einsum("...i,...i->...", b, c) * la + np.einsum("...i,...i->...", c, a) * lb)
    return (2.0 * np.arctan2(det, den)).sum(axis=1) / (4.0 * np.pi)


# ---------------------------------------------------------------- bounding spheres

def _sphere_through(pts: np.ndarray) -> tuple[np.ndarray, float]:
    """Smallest sphere with 1-4 points on its boundary: (centre (3,), squared radius)."""
    p0 = pts[0]
    if len(pts) == 1:
        return p0.copy(), 0.0
    a = pts[1:] - p0
    lam = np.linalg.lstsq(a @ a.T, 0.5 * np.einsum("ij,ij->i", a, a), rcond=None)[0]
    c = p0 + a.T @ lam
    return c, float(np.sum((c - p0) ** 2))


def min_enclosing_sphere(points: np.ndarray, seed: int = 0) -> tuple[np.ndarray, float]:
    """Smallest sphere containing points (n, 3) (Welzl, iterative, expected O(n)).

    Returns (centre (3,), radius); the radius is finally raised to the farthest point's distance,
    so containment holds exactly in floating point whatever rounding the solver did.
    """
    pts = np.asarray(points, dtype=np.float64)
    pts = pts[np.random.default_rng(seed).permutation(len(pts))]
    tol = 1e-12 * (1.0 + float(np.abs(pts).max()))

    def out(c, r2, p):
        return np.sum((p - c) ** 2) > r2 + tol

    c, r2 = _sphere_through(pts[:1])
    for i in range(1, len(pts)):
        if not out(c, r2, pts[i]):
            continue
        c, r2 = _sphere_through(pts[i:i + 1])
        for j in range(i):
            if not out(c, r2, pts[j]):
                continue
            c, r2 = _sphere_through(pts[[i, j]])
            for k in range(j):
                if not out(c, r2, pts[k]):
                    continue
                c, r2 = _sphere_through(pts[[i, j, k]])
                for m in range(k):
                    if out(c, r2, pts[m]):
                        c, r2 = _sphere_through(pts[[i, j, k, m]])
    r = float(np.sqrt(np.max(np.sum((pts - c) ** 2, axis=1))))
    return c, r
