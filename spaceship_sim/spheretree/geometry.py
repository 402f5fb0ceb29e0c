"""Geometry for the sphere-tree builders: distances to a triangle mesh, inside tests, bounding spheres.

The one heavy query is `MeshQuery.query(points)`: for each point the closest point of the mesh
surface, its distance and (for closed meshes) the side. Triangles are kept in Z order, in blocks of 8
with a box each; a binary box tree over the blocks (split where the blocks' Morton codes first differ,
as in a linear BVH) lets `nearest_on_mesh` descend nearest child first and skip every subtree whose
box is farther than the best triangle so far: O(log m) box tests per point where `closest_on_mesh`,
the plain reference, tests every block's box. Both give the same triangle, bit for bit.

The side comes from the angle-weighted pseudo-normal of the closest feature (face, edge or vertex;
Baerentzen & Aanaes 2005): for a closed, consistently oriented 2-manifold, (p - q) . n > 0 exactly when
p is outside. `winding_number` (plain numpy) backs the tests.

All coordinates are in the ship's body frame [m].
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, prange

from ..geometry.triangles import closest_point_triangle
from ..geometry.vectors import unit_rows
from ..threads import ThreadChoice

_BLOCK = 8  # triangles per block: a leaf of the box tree


# the arrays a kernel needs for distance queries on one mesh (MeshQuery.mesh_args): tris (m, 3, 3)
# float64 in Z order; pseudo (m, 7, 3) float64 pseudo-normal per region code (row 0 face, 1-3
# vertices, 4-6 edges); signed: compute the side; and the box tree over blocks of 8 triangles:
# lo, hi (k, 3) float64 node boxes, kid (k,) int64 the first of a node's two children (the second is
# kid + 1; -1 for a leaf), span (k, 2) int64 a leaf's triangle rows [start, stop). Node 0 is the root.
MeshArrays = namedtuple("MeshArrays", "tris pseudo signed lo hi kid span")
_STACK = 128  # tree depth bound: at most 30 Morton-bit splits, then halvings of equal codes
_QUERY_CHUNK = 64  # points per chunk of `_mesh_query` (a thread's unit of work)


@njit(cache=True, parallel=True)
def _mesh_query(points, mesh):
    """Closest surface point, distance and side for each point (the box tree of `MeshArrays`).

    points : (n, 3) float64. Returns dist (n,), closest (n, 3), side (n,) (+1 outside / on a
    shell, -1 inside), tri (n,) int64 (row of mesh.tris). Chunks of points go to numba's threads;
    a point's answer does not depend on its chunk, so neither do the results on the thread count.
    """
    n = points.shape[0]
    dist = np.empty(n)
    closest = np.empty((n, 3))
    side = np.ones(n)
    tri = np.empty(n, np.int64)
    for c in prange((n + _QUERY_CHUNK - 1) // _QUERY_CHUNK):
        hint = 0
        for i in range(c * _QUERY_CHUNK, min(n, (c + 1) * _QUERY_CHUNK)):
            # start from the previous point's triangle: batches are spatially coherent
            d, qx, qy, qz, s, hint = nearest_on_mesh(points[i, 0], points[i, 1], points[i, 2], mesh, hint)
            dist[i], closest[i, 0], closest[i, 1], closest[i, 2], side[i], tri[i] = d, qx, qy, qz, s, hint
    return dist, closest, side, tri


@njit(cache=True)
def _box_d2(lo, hi, k, px, py, pz):
    """Squared distance from the point to box k of (lo, hi): a lower bound for what it holds."""
    ex = max(lo[k, 0] - px, 0.0, px - hi[k, 0])
    ey = max(lo[k, 1] - py, 0.0, py - hi[k, 1])
    ez = max(lo[k, 2] - pz, 0.0, pz - hi[k, 2])
    return ex * ex + ey * ey + ez * ez


@njit(cache=True)
def nearest_on_mesh(px, py, pz, mesh, hint):
    """`closest_on_mesh` over the box tree of `mesh` (MeshArrays), starting from triangle `hint`:
    (dist, qx, qy, qz, side, tri), the same answer (the triangle of least (squared distance,
    index)). A node is skipped by the same rule as a block there: clearly farther than the best
    triangle so far; a node's box holds its blocks' boxes, so it is never skipped where one of its
    blocks would not be."""
    tris, lo, hi, kid, span = mesh.tris, mesh.lo, mesh.hi, mesh.kid, mesh.span
    qx, qy, qz, reg = closest_point_triangle(px, py, pz, tris[hint])
    best = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
    bt, bx, by, bz, br = hint, qx, qy, qz, reg
    stack = np.empty(_STACK, np.int64)
    gap = np.empty(_STACK)
    stack[0], gap[0], top = 0, _box_d2(lo, hi, 0, px, py, pz), 1
    while top > 0:
        top -= 1
        k = stack[top]
        if gap[top] * (1.0 - 1e-9) > best:
            continue
        if kid[k] < 0:
            for j in range(span[k, 0], span[k, 1]):
                qx, qy, qz, reg = closest_point_triangle(px, py, pz, tris[j])
                d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
                if d2 < best or (d2 == best and j < bt):
                    best, bt, bx, by, bz, br = d2, j, qx, qy, qz, reg
            continue
        a, b = kid[k], kid[k] + 1
        ga, gb = _box_d2(lo, hi, a, px, py, pz), _box_d2(lo, hi, b, px, py, pz)
        if ga < gb:  # the nearer child on top: it lowers `best` before the other is looked at
            a, b, ga, gb = b, a, gb, ga
        stack[top], gap[top] = a, ga
        stack[top + 1], gap[top + 1] = b, gb
        top += 2
    side = 1.0
    if mesh.signed:
        nrm = mesh.pseudo[bt, br]
        if (px - bx) * nrm[0] + (py - by) * nrm[1] + (pz - bz) * nrm[2] < 0.0:
            side = -1.0
    return np.sqrt(best), bx, by, bz, side, bt


@njit(cache=True)
def _block_tree(code, lo, hi, m):
    """The box tree over blocks of 8 triangles (`MeshArrays` lo, hi, kid, span).

    code : (nb,) int64 ascending Morton code of each block's first triangle; lo, hi (nb, 3) the
    blocks' boxes; m the number of triangles. A range of blocks splits where the highest bit in which
    its first and last codes differ turns on (each side then lies in one half of the Morton cell the
    range spans); a range of equal codes splits in the middle."""
    nb = len(code)
    k_max = 2 * nb - 1
    nlo, nhi = np.empty((k_max, 3)), np.empty((k_max, 3))
    kid = np.full(k_max, -1, np.int64)
    span = np.zeros((k_max, 2), np.int64)
    first, last = np.empty(k_max, np.int64), np.empty(k_max, np.int64)  # block range [first, last]
    first[0], last[0], count = 0, nb - 1, 1
    for k in range(k_max):  # parents come before their children: one pass down, one back up
        if k >= count:
            break
        b0, b1 = first[k], last[k]
        if b0 == b1:
            span[k, 0], span[k, 1] = _BLOCK * b0, min(m, _BLOCK * b0 + _BLOCK)
            continue
        split = (b0 + b1 + 1) // 2
        x = code[b0] ^ code[b1]
        if x != 0:
            bit = np.int64(1)
            while bit <= x >> 1:  # the highest bit of x
                bit <<= 1
            split = b0 + 1
            while code[split] & bit == 0:  # codes ascend: the bit turns on once
                split += 1
        kid[k] = count
        first[count], last[count] = b0, split - 1
        first[count + 1], last[count + 1] = split, b1
        count += 2
    for k in range(count - 1, -1, -1):
        if kid[k] < 0:
            nlo[k], nhi[k] = lo[first[k]], hi[first[k]]
        else:
            for a in range(3):
                nlo[k, a] = min(nlo[kid[k], a], nlo[kid[k] + 1, a])
                nhi[k, a] = max(nhi[kid[k], a], nhi[kid[k] + 1, a])
    return nlo[:count], nhi[:count], kid[:count], span[:count]


@njit(cache=True, inline="always")
def closest_on_mesh(px, py, pz, tris, lo, hi, pseudo, signed, hint, blocks):
    """The plain reference of `nearest_on_mesh`: the closest point of the mesh to one point,
    starting from triangle `hint`, looking at every block's box among the triangle blocks
    `blocks` (ascending; leaving out only blocks farther than the point's closest triangle gives the
    same answer as all of them): (dist, qx, qy, qz, side, tri).

    The answer is the triangle of least (squared distance, index), whatever the hint and the blocks:
    triangles sharing the closest point (an edge or vertex) tie to within an ulp, and the winner's
    point and side must not depend on the search order (callers compare runs bit for bit). Blocks are
    skipped only when clearly farther (a 1e-9 relative margin covers the box bound's rounding)."""
    qx, qy, qz, reg = closest_point_triangle(px, py, pz, tris[hint])
    best = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
    bt, bx, by, bz, br = hint, qx, qy, qz, reg
    for blk in blocks:
        # squared distance to the block's box: a lower bound on the distance to its triangles
        ex = max(lo[blk, 0] - px, 0.0, px - hi[blk, 0])
        ey = max(lo[blk, 1] - py, 0.0, py - hi[blk, 1])
        ez = max(lo[blk, 2] - pz, 0.0, pz - hi[blk, 2])
        if (ex * ex + ey * ey + ez * ez) * (1.0 - 1e-9) > best:
            continue
        for j in range(blk * 8, min(tris.shape[0], blk * 8 + 8)):
            qx, qy, qz, reg = closest_point_triangle(px, py, pz, tris[j])
            d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
            if d2 < best or (d2 == best and j < bt):
                best, bt, bx, by, bz, br = d2, j, qx, qy, qz, reg
    side = 1.0
    if signed:
        nrm = pseudo[bt, br]
        if (px - bx) * nrm[0] + (py - by) * nrm[1] + (pz - bz) * nrm[2] < 0.0:
            side = -1.0
    return np.sqrt(best), bx, by, bz, side, bt


def _morton_codes(p: np.ndarray) -> np.ndarray:
    """(n,) int64 Z-order codes of points (n,3) (10 bits per axis)."""
    q = p - p.min(axis=0)
    q = np.floor(q / max(float(q.max()), 1e-300) * 1023).astype(np.int64)
    code = np.zeros(len(p), np.int64)
    for bit in range(10):
        for ax in range(3):
            code |= ((q[:, ax] >> bit) & 1) << (3 * bit + ax)
    return code


def block_tree(tris: np.ndarray):
    """Triangles (m, 3, 3) in Z order, in blocks of 8, with the box tree over the blocks: (order (m,)
    int64 the Z order's rows of tris, block boxes lo, hi (ceil(m / 8), 3), (lo, hi, kid, span) of
    the tree's nodes as in `MeshArrays`)."""
    code = _morton_codes(tris.mean(axis=1))
    order = np.argsort(code, kind="stable")
    zt = tris[order]
    nb = -(-len(zt) // _BLOCK)
    blocks = np.concatenate([zt, np.repeat(zt[-1:], nb * _BLOCK - len(zt), 0)]).reshape(nb, _BLOCK * 3, 3)
    lo, hi = np.ascontiguousarray(blocks.min(axis=1)), np.ascontiguousarray(blocks.max(axis=1))
    return order, lo, hi, _block_tree(code[order][::_BLOCK].copy(), lo, hi, len(zt))


def triangles_meeting_boxes(tris: np.ndarray, qlo: np.ndarray, qhi: np.ndarray):
    """(tri_idx, box_idx) int64 of every triangle (m,3,3) whose bounding box meets a box [qlo, qhi]
    ((n, 3) each), sorted by triangle then box: the comparisons of a test of every pair, found by
    descending the triangles' box tree."""
    if len(tris) == 0 or len(qlo) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order, _, _, tree = block_tree(tris)
    zt = tris[order]
    t, k = _boxes_meeting(np.ascontiguousarray(zt.min(axis=1)), np.ascontiguousarray(zt.max(axis=1)), *tree[2:],
                          tree[0], tree[1], np.ascontiguousarray(qlo, np.float64), np.ascontiguousarray(qhi, np.float64))
    t = order[t]
    rows = np.lexsort((k, t))
    return t[rows], k[rows]


@njit(cache=True)
def _boxes_meeting(tlo, thi, kid, span, lo, hi, qlo, qhi):
    """(rows of tlo, query ids) of each triangle box [tlo, thi] meeting a query box, per query box
    down the node boxes lo, hi (kid, span: `MeshArrays`)."""
    out_t, out_k, n = np.empty(1024, np.int64), np.empty(1024, np.int64), 0
    stack = np.empty(_STACK, np.int64)
    for q in range(len(qlo)):
        stack[0], top = 0, 1
        while top > 0:
            top -= 1
            k = stack[top]
            if not _boxes_meet(lo, hi, k, qlo, qhi, q):
                continue
            if kid[k] >= 0:
                stack[top], stack[top + 1] = kid[k], kid[k] + 1
                top += 2
                continue
            for j in range(span[k, 0], span[k, 1]):
                if _boxes_meet(tlo, thi, j, qlo, qhi, q):
                    if n == len(out_t):
                        out_t, out_k = _grown(out_t, n), _grown(out_k, n)
                    out_t[n], out_k[n] = j, q
                    n += 1
    return out_t[:n], out_k[:n]


@njit(cache=True)
def _boxes_meet(lo, hi, k, qlo, qhi, q):
    """Box k of (lo, hi) and box q of (qlo, qhi) share a point (closed boxes)."""
    for a in range(3):
        if not (lo[k, a] <= qhi[q, a] and hi[k, a] >= qlo[q, a]):
            return False
    return True


@njit(cache=True)
def _grown(a, n):
    b = np.empty(2 * len(a), a.dtype)
    b[:n] = a[:n]
    return b


def face_normals(tris: np.ndarray) -> np.ndarray:
    """(m, 3) unit normals of triangles (m, 3, 3), right-handed winding."""
    return unit_rows(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]))


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

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, closed: bool, pseudo: np.ndarray | None = None):
        """pseudo: (m, 7, 3) pseudo-normals of `faces` when known — a query over part of a closed
        mesh passes the whole mesh's (the part's own boundary edges would get wrong normals)."""
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(faces, dtype=np.int64)
        self.closed = bool(closed)
        self.tris = np.ascontiguousarray(self.vertices[self.faces])
        if pseudo is None:
            pseudo = (_pseudo_normals(self.vertices, self.faces) if self.closed
                      else np.zeros((len(self.faces), 7, 3)))
        self.pseudo = pseudo = np.asarray(pseudo, np.float64)  # (m,7,3), faces order
        self._order, self._lo, self._hi, tree = block_tree(self.tris)
        self._tris = np.ascontiguousarray(self.tris[self._order])
        self._pseudo = np.ascontiguousarray(pseudo[self._order])
        self._mesh = MeshArrays(self._tris, self._pseudo, self.closed, *tree)
        self._threads = ThreadChoice()  # serial or parallel queries, whichever runs faster now

    def kernel_args(self):
        """(tris, lo, hi, pseudo, signed): the blocks of `closest_on_mesh`, the plain reference."""
        return self._tris, self._lo, self._hi, self._pseudo, self.closed

    def mesh_args(self) -> MeshArrays:
        """The arrays of `nearest_on_mesh` and `_mesh_query`, for calling them from other kernels."""
        return self._mesh

    def query(self, points: np.ndarray):
        """points (n, 3) -> dist (n,) to the surface, closest (n, 3), side (n,) +-1, tri (n,) int64
        (index into faces)."""
        p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        if len(p) == 0:
            return np.zeros(0), np.zeros((0, 3)), np.ones(0), np.zeros(0, np.int64)
        with self._threads.threads_for(len(p)):
            d, q, side, t = _mesh_query(p, self._mesh)
        return d, q, side, self._order[t]

    def signed_distance(self, points: np.ndarray) -> np.ndarray:
        """(n,) distance to the surface, negative inside (closed meshes; open: unsigned)."""
        d, _, side, _ = self.query(points)
        return d * side

    def solid_distance(self, points: np.ndarray) -> np.ndarray:
        """(n,) distance to the ship: to the solid (0 inside) when closed, to the surface when open."""
        return np.maximum(self.signed_distance(points), 0.0)


# ---------------------------------------------------------------- numpy references

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

    def outside(c, r2, start, stop):
        """Indices start <= i < stop, ascending, of points outside the sphere (c, r2) at the
        time they are reached: the scan stops at the first one, as the sequential loop would
        recompute the sphere there (numpy in chunks instead of a Python loop per point)."""
        i, chunk = start, 256
        while i < stop:
            hit = np.flatnonzero(np.sum((pts[i:min(stop, i + chunk)] - c) ** 2, axis=1) > r2 + tol)
            if len(hit):
                return i + int(hit[0])
            i, chunk = i + chunk, 4 * chunk
        return stop

    c, r2 = _sphere_through(pts[:1])
    i = outside(c, r2, 1, len(pts))
    while i < len(pts):
        c, r2 = _sphere_through(pts[i:i + 1])
        j = outside(c, r2, 0, i)
        while j < i:
            c, r2 = _sphere_through(pts[[i, j]])
            k = outside(c, r2, 0, j)
            while k < j:
                c, r2 = _sphere_through(pts[[i, j, k]])
                m = outside(c, r2, 0, k)
                while m < k:
                    c, r2 = _sphere_through(pts[[i, j, k, m]])
                    m = outside(c, r2, m + 1, k)
                k = outside(c, r2, k + 1, j)
            j = outside(c, r2, j + 1, i)
        i = outside(c, r2, i + 1, len(pts))
    r = float(np.sqrt(np.max(np.sum((pts - c) ** 2, axis=1))))
    return c, r
