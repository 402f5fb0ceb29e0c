"""Hubbard's medial-axis sphere-tree builder (Hubbard 1996, section 5).

1. `surface_samples`: evenly spread points on the surface (mesh vertices first, then area-weighted
   random points, thinned on a grid), each with the outward normal of its polygon.
2. Qhull's 3-D Delaunay triangulation of the samples (scipy.spatial.Delaunay). Its dual is the Voronoi
   diagram: each tetrahedron's circumcentre is a Voronoi vertex, the tetrahedron's corners are that
   vertex's forming points, and two Voronoi vertices share a Voronoi edge exactly when their
   tetrahedra share a face - so `Delaunay.neighbors` is the Voronoi-vertex adjacency (the same
   information as walking scipy.spatial.Voronoi's ridges, without rebuilding it).
3. Voronoi vertices inside the mesh (signed distance < 0, pseudo-normal test) approximate the medial
   axis; each is a sphere touching its forming points.
   Open meshes have no inside: we warn (`MedialFallbackWarning`) and keep the Voronoi vertices on
   both sides of the shell whose spheres are local (radius <= 1/4 of the bounding radius); errors
   and coverage are then measured to the surface.
4. Aliasing repair: a sample that forms no kept Voronoi vertex marks a spot where the sampled
   medial surface is missing or disconnected (thin plates, narrow gaps). Extra samples are added on
   the triangles around such samples and the diagram is rebuilt (up to `REPAIR_ROUNDS` times).
5. Greedy merging (`merge_clusters`): clusters of medial spheres, each covered by the Ritter bounding
   sphere of its forming points; a priority queue of adjacent cluster pairs ranked by Hubbard's cost
   (max over forming points p of how far the merged sphere reaches past p's tangent plane,
   r + n_p . (c - p), an estimate of its Hausdorff distance to the object), scaled up by the
   merged cluster's size over its fair share (`_priority`: by cost alone, one cluster swallows the
   rest and single spheres are left that no deeper level can split); merge the first until the
   wanted number remain. If the adjacency graph falls apart before that, each cluster is
   linked to its nearest few clusters and merging goes on.
6. The hierarchy: level 1 merges all medial spheres into `branching` clusters; each deeper level
   restarts, per parent, from the medial spheres merged into that parent. Conservative coverage,
   error bounds, witnesses and leaf triangles are added by `finish.assemble`.
"""
from __future__ import annotations

import heapq
import warnings
from collections import namedtuple

import numpy as np
from numba import njit
from scipy.spatial import Delaunay, QhullError, cKDTree

from .geometry import MeshQuery, face_normals, min_enclosing_sphere, nearest_on_mesh
from .progress import QUIET, BuildProgress, chunks

REPAIR_ROUNDS = 2
# samples per medial builder, scaled with the number of leaves wanted (each leaf should merge
# a few dozen medial spheres), clamped to keep Qhull and merging fast
MIN_SAMPLES, MAX_SAMPLES, SAMPLES_PER_LEAF = 1500, 6000, 6
SMALL_COMPONENT = 64  # _bridge_components: components up to this size query a tree of all the points
# the repair rounds stop adding samples at this multiple of the samples asked for: on flat open
# parts (a box without a lid) every sample is an orphan, and more samples there make more orphans
MAX_REPAIR_GROWTH = 2
INSIDE_CHUNK = 2048  # Voronoi vertices per inside-test call (one bar step; ~1 s at 200k triangles)


STATS = {"evaluations": 0, "walked": 0}  # merge work counters (for benchmarks)


class MedialFallbackWarning(UserWarning):
    """The mesh is open (the medial axis is replaced by local Voronoi spheres on both sides), or no
    medial sphere was found (the octree builder is used)."""


# ---------------------------------------------------------------- samples

def surface_samples(query: MeshQuery, n: int, seed: int):
    """About n evenly spread surface points: (points (k,3), normals (k,3) unit, outward when closed).

    Candidates are the mesh vertices, then 6 n area-weighted random points; a grid keeps the first
    candidate per cell, the cell size bisected so that about n remain (vertices win their cells).
    """
    rng = np.random.default_rng(seed)
    tris = query.tris
    fn = face_normals(tris)
    area = 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)
    k = 6 * n
    t = rng.choice(len(tris), size=k, p=area / area.sum())
    u, v = rng.random(k), rng.random(k)
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    rnd = tris[t, 0] + u[:, None] * (tris[t, 1] - tris[t, 0]) + v[:, None] * (tris[t, 2] - tris[t, 0])
    used = np.unique(query.faces)
    vn = query.pseudo[:, 1:4].reshape(-1, 3) if query.closed else np.repeat(fn, 3, axis=0)
    vert_n = np.zeros((len(query.vertices), 3))
    vert_n[query.faces.ravel()] = vn  # any incident face's entry: pseudo-normals agree per vertex
    cand = np.concatenate([query.vertices[used], rnd])
    cand_n = np.concatenate([vert_n[used], fn[t]])
    cand_n /= np.linalg.norm(cand_n, axis=1, keepdims=True)
    lo = cand.min(axis=0)
    ext = float(np.max(cand.max(axis=0) - lo))
    a, b = ext / 2000.0, ext  # cell size bracket: many points .. one point
    for _ in range(16):
        h = np.sqrt(a * b)
        keep = _first_per_cell(cand, lo, h)
        if len(keep) > n:
            a = h
        else:
            b = h
    keep = _first_per_cell(cand, lo, a)
    return cand[keep], cand_n[keep]


def _first_per_cell(p, lo, h):
    cell = np.floor((p - lo) / h).astype(np.int64)
    key = (cell[:, 0] * (cell[:, 1].max() + 1) + cell[:, 1]) * (cell[:, 2].max() + 1) + cell[:, 2]
    _, first = np.unique(key, return_index=True)
    return np.sort(first)


# ---------------------------------------------------------------- medial spheres

def _circumspheres(pts: np.ndarray, simplices: np.ndarray):
    """Circumcentres (t,3) and circumradii (t,) of tetrahedra (nan where degenerate)."""
    a = pts[simplices[:, 0]]
    m = pts[simplices[:, 1:]] - a[:, None, :]  # (t,3,3)
    rhs = 0.5 * np.einsum("tij,tij->ti", m, m)
    det = np.linalg.det(m)
    scale = np.einsum("tij,tij->t", m, m) ** 1.5
    ok = np.abs(det) > 1e-12 * scale
    x = np.full((len(m), 3), np.nan)
    x[ok] = np.linalg.solve(m[ok], rhs[ok][..., None])[..., 0]
    return a + x, np.linalg.norm(x, axis=1)


def medial_spheres(query: MeshQuery, n_samples: int, seed: int, progress: BuildProgress = QUIET):
    """Medial spheres from the Voronoi vertices of surface samples.

    Returns dict: points (k,3), normals (k,3) of the samples; center (s,3), radius (s,), forming
    (s,4) int64 sample indices, adjacency as (e,2) int64 pairs of sphere indices.
    """
    progress.stage(f"sampling {n_samples:,} surface points of {len(query.faces):,} triangles")
    pts, nrm = surface_samples(query, n_samples, seed)
    R = float(np.max(np.ptp(query.vertices, axis=0)))
    lo, hi = query.tris.min(axis=(0, 1)), query.tris.max(axis=(0, 1))
    box_mid, box_half = (lo + hi) / 2, (hi - lo) / 2 + 1e-6 * R
    rng = np.random.default_rng(seed + 1)
    for rnd in range(REPAIR_ROUNDS + 1):
        progress.stage(f"Voronoi (Qhull) of {len(pts):,} samples" + (f", repair round {rnd}" if rnd else ""))
        try:
            tet = Delaunay(pts, qhull_options="Qbb Qc Qz Q12")
        except QhullError:  # flat or otherwise degenerate samples: no medial axis to find
            return dict(points=pts, normals=nrm, center=np.zeros((0, 3)), radius=np.zeros(0),
                        forming=np.zeros((0, 4), np.int64), edges=np.zeros((0, 2), np.int64), orphans=len(pts))
        cen, rad = _circumspheres(pts, tet.simplices)
        ok = np.isfinite(rad)
        if query.closed:
            sd = np.full(len(rad), np.inf)
            # circumcentres of flat tetrahedra lie far out, where a distance query looks at nearly
            # every triangle: those clearly outside the mesh's box are outside the solid
            near = ok & np.all(np.abs(cen - box_mid) <= box_half, axis=1)
            sd[near] = _signed_distance_chunked(query, cen[near], progress)
            keep = near & (sd < 0)
        else:  # R is the largest extent, about twice the bounding radius
            keep = ok & (rad <= 0.125 * R)
        formed = np.zeros(len(pts), bool)
        formed[tet.simplices[keep].ravel()] = True
        orphans = np.flatnonzero(~formed)
        room = MAX_REPAIR_GROWTH * n_samples - len(pts)
        if rnd == REPAIR_ROUNDS or len(orphans) == 0 or room < 4:
            break
        pts, nrm = _densify(query, pts, nrm, orphans, rng, room)
    idx = np.flatnonzero(keep)
    new = np.full(len(rad), -1)
    new[idx] = np.arange(len(idx))
    nb = tet.neighbors[idx]  # (s,4), -1 = none
    src = np.repeat(np.arange(len(idx)), 4)
    dst = new[np.where(nb >= 0, nb, 0)].ravel()
    valid = (nb.ravel() >= 0) & (dst >= 0) & (src < dst)
    edges = np.stack([src[valid], dst[valid]], axis=1)
    return dict(points=pts, normals=nrm, center=cen[idx], radius=rad[idx],
                forming=tet.simplices[idx].astype(np.int64), edges=edges, orphans=len(orphans))


def _signed_distance_chunked(query: MeshQuery, points: np.ndarray, progress: BuildProgress) -> np.ndarray:
    """query.signed_distance in chunks, so that the bar moves during the slowest early stage."""
    out = np.empty(len(points))
    parts = chunks(len(points), INSIDE_CHUNK)
    for part in progress.bar(parts, f"inside test of {len(points):,} Voronoi vertices", unit="chunk"):
        out[part] = query.signed_distance(points[part])
    return out


def _densify(query: MeshQuery, pts, nrm, orphans, rng, room: int, per: int = 4):
    """Add `per` random points around each orphan sample on the triangles nearest to it, at most
    `room` points in all (around a random choice of the orphans when there are too many)."""
    if per * len(orphans) > room:
        orphans = np.sort(rng.choice(orphans, size=max(room, 0) // per, replace=False))
    spacing = np.median(cKDTree(pts).query(pts, k=2)[0][:, 1])
    p = pts[orphans]
    jitter = rng.normal(size=(len(p), per, 3)) * (0.5 * spacing)
    _, closest, _, tri = query.query((p[:, None, :] + jitter).reshape(-1, 3))
    fn = face_normals(query.tris[tri])
    return np.concatenate([pts, closest]), np.concatenate([nrm, fn])


# ---------------------------------------------------------------- merging

# 13 directions (cube axes, face diagonals, body diagonals): a cluster is summarised during
# merging by its extreme points along them (26 at most), enough to place its bounding sphere
_DIRS = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, -1, 0], [1, 0, 1], [1, 0, -1],
                  [0, 1, 1], [0, 1, -1], [1, 1, 1], [1, 1, -1], [1, -1, 1], [-1, 1, 1]], dtype=np.float64)


@njit(cache=True)
def _d2(p, i, x, y, z):
    return (p[i, 0] - x) ** 2 + (p[i, 1] - y) ** 2 + (p[i, 2] - z) ** 2


@njit(cache=True)
def _ritter(p):
    """Ritter's nearly minimal bounding sphere of points p (k,3): (centre (3,), radius).

    The radius is finally the exact farthest distance from the centre, so every point is inside.
    (Scalar arithmetic throughout: numba would allocate a temporary per vector expression.)
    """
    n = len(p)
    iy, best = 0, -1.0
    for i in range(n):
        d = _d2(p, i, p[0, 0], p[0, 1], p[0, 2])
        if d > best:
            iy, best = i, d
    iz, best = iy, -1.0
    for i in range(n):
        d = _d2(p, i, p[iy, 0], p[iy, 1], p[iy, 2])
        if d > best:
            iz, best = i, d
    cx, cy, cz = (p[iy, 0] + p[iz, 0]) / 2, (p[iy, 1] + p[iz, 1]) / 2, (p[iy, 2] + p[iz, 2]) / 2
    r = 0.5 * np.sqrt(best)
    for i in range(n):  # grow to include stragglers
        d = np.sqrt(_d2(p, i, cx, cy, cz))
        if d > r:
            nr = 0.5 * (r + d)
            f = (nr - r) / d
            cx, cy, cz = cx + (p[i, 0] - cx) * f, cy + (p[i, 1] - cy) * f, cz + (p[i, 2] - cz) * f
            r = nr
    r2 = 0.0
    for i in range(n):
        r2 = max(r2, _d2(p, i, cx, cy, cz))
    c = np.empty(3)
    c[0], c[1], c[2] = cx, cy, cz
    return c, np.sqrt(r2)


# _greedy_merge's state. Clusters, indexed by their representative unit: reps (u, R, 3) float64
# the points standing for each cluster [m] (its extreme points along the directions, at most R),
# cnt (u,) int64 how many; label (u,) int64 the union-find parent (a unit's own index while it
# represents a cluster); ver (u,) int64 bumped on each merge, so that queue entries pushed before it
# are recognised as stale; own (u,) float64 each cluster's own cost; size (u,) float64 the medial
# spheres in each cluster; quota: the fair share of them per cluster (inf: none, plain greedy, see
# _priority); buf (2R, 3) scratch for the points of two clusters.
Clusters = namedtuple("Clusters", "reps cnt label ver own size quota buf")
# Adjacency of the clusters: per cluster a linked list of edge slots, slot 2e being edge e seen
# from edges[e, 0] (far end edges[e, 1]) and 2e+1 the reverse. far (2e,) int64 the slot's far end
# (re-pointed at representatives as merging goes), nxt (2e,) the next slot (-1: end), head (u,) a
# cluster's first slot (-1: none), cost (2e,) float64 the last exact cost seen on each slot.
Adjacency = namedtuple("Adjacency", "far nxt head cost")


@njit(cache=True)
def _gather_points(cl, a, b):
    """cl.buf[:k] = the representative points of clusters a and b (a's alone when b == a), from
    cl.reps; returns k."""
    reps, cnt, buf = cl.reps, cl.cnt, cl.buf
    k = 0
    for i in range(cnt[a]):
        buf[k, 0], buf[k, 1], buf[k, 2] = reps[a, i, 0], reps[a, i, 1], reps[a, i, 2]
        k += 1
    if b != a:
        for i in range(cnt[b]):
            buf[k, 0], buf[k, 1], buf[k, 2] = reps[b, i, 0], reps[b, i, 1], reps[b, i, 2]
            k += 1
    return k


@njit(cache=True)
def _merge_candidate(cl, a, b, mesh):
    """(centre (3,), radius, cost) of the sphere of clusters a and b merged (Clusters cl; mesh: the
    geometry.MeshArrays of the distance query); leaves their representative points in cl.buf.

    cost = r + s(c): r from Ritter over both clusters' representatives, s the signed distance of
    the centre to the surface (unsigned for open meshes). Since s is 1-Lipschitz, r + s(c) bounds
    how far the sphere reaches out of the solid, and equals it for convex parts - the quantity
    Hubbard's tangent-plane cost estimates.
    """
    k = _gather_points(cl, a, b)
    c, r = _ritter(cl.buf[:k])
    d, _, _, _, side, _ = nearest_on_mesh(c[0], c[1], c[2], mesh, 0)
    return c, r, r + d * side


@njit(cache=True)
def _priority(cl, a, b, cost):
    """The queue's order for merging clusters a and b at merge cost `cost`: the cost scaled up by
    the merged cluster's medial spheres over the quota, cost (1 + (size_a + size_b) / quota).

    By cost alone the merge is rich-get-richer: a cluster deep inside a thick part swallows its
    neighbours at no extra reach, and the spheres it leaves for last stay single. A single medial
    sphere cannot be split at the next level, so that node's part stops shrinking there (a torus or
    a capsule got 1 child under 18-37 of 64 level-2 nodes). Scaling by size keeps clusters near their
    share while the cost still decides among merges of like size. cost >= 0 (a sphere holding its
    forming points on the surface reaches at least as far as its centre is deep), so the order is
    monotone in both."""
    return cost * (1.0 + (cl.size[a] + cl.size[b]) / cl.quota)


@njit(cache=True)
def _greedy_merge(unit_ptr, pts, edges, target, dirs, mesh, own, size, quota, lazy=True):
    """Greedy priority-queue merging of units (groups of sample points) along edges.

    unit_ptr : (u+1,) int64, unit i owns rows unit_ptr[i]:unit_ptr[i+1] of pts (k,3);
    edges (e,2) int64 unit pairs; target: stop when this many clusters remain (or no edge is left).
    dirs (13,3): directions whose extreme points represent a cluster; mesh: the geometry.MeshArrays
    of the distance query. own (u,) float64: each unit's own cost where known, nan where not (filled
    in here). size (u,) float64: the medial spheres in each unit; quota: their fair share per cluster
    (_priority; inf: by cost alone). lazy=False evaluates every pair when queued (plain greedy, for tests).
    Returns label (u,) int64: representative unit of each unit's cluster (the lower index of a
    merged pair survives), and the numbers of exact cost evaluations and adjacency slots walked.
    The adjacency of a cluster is a linked list of edge slots whose far end is found by union-find.

    Lazy greedy: a pair enters the queue with an estimate (flag 0) and is evaluated only when it
    reaches the top (re-queued with its true cost, flag 1). Merging more rarely makes a sphere
    cheaper, so the estimate is the larger of both sides' own costs and the last exact cost seen
    between the two (kept on the adjacency slot).
    """
    u = len(unit_ptr) - 1
    cl = _start_clusters(unit_ptr, pts, len(dirs), mesh, own, size, quota)
    adj = _adjacency(edges, u)
    mark = np.full(u, -1, np.int64)
    heap = _first_queue(cl, adj, mark, mesh, lazy)
    mark[:] = -1
    stamp, n_eval, n_walk, count = 0, 0, 0, u
    while count > target and len(heap) > 0:
        _, a, b, va, vb, exact, slot, cost = heapq.heappop(heap)
        if cl.label[a] != a or cl.label[b] != b or cl.ver[a] != va or cl.ver[b] != vb:
            continue  # stale: one side merged or changed since this entry was pushed
        if exact == 0:  # an estimate on top: queue the pair again with its true cost
            c2 = _merge_candidate(cl, a, b, mesh)[2]
            n_eval += 1
            adj.cost[slot] = c2
            _push(heap, cl, a, b, va, vb, 1, slot, c2)
            continue
        _merge(cl, a, b, cost, dirs)
        count -= 1
        _append_edges(adj, a, b)
        stamp += 1
        n_walk += _relink(cl, adj, a, mark, stamp, heap, mesh, lazy)
    _flatten_labels(cl.label)
    return cl.label, n_eval, n_walk


@njit(cache=True)
def _start_clusters(unit_ptr, pts, n_dirs, mesh, own, size, quota):
    """Clusters of one unit each: its first points (at most 2 n_dirs, 8 at least) represent it, its
    own cost is its Ritter sphere's r + s(c) (_merge_candidate), taken from `own` where not nan and
    written there where it was; size and quota as _greedy_merge's."""
    u = len(unit_ptr) - 1
    reps = np.zeros((u, max(2 * n_dirs, 8), 3))
    cnt = np.zeros(u, np.int64)
    for i in range(u):
        m = min(unit_ptr[i + 1] - unit_ptr[i], reps.shape[1])
        reps[i, :m] = pts[unit_ptr[i]:unit_ptr[i] + m]
        cnt[i] = m
    cl = Clusters(reps, cnt, np.arange(u), np.zeros(u, np.int64), np.empty(u), size.copy(), quota,
                  np.empty((2 * reps.shape[1], 3)))
    for i in range(u):
        if np.isnan(own[i]):
            own[i] = _merge_candidate(cl, i, i, mesh)[2]
        cl.own[i] = own[i]
    return cl


@njit(cache=True)
def _adjacency(edges, u):
    """The Adjacency of u clusters joined by edges (e, 2) int64; no cost seen yet (0)."""
    ne = len(edges)
    adj = Adjacency(np.empty(2 * ne, np.int64), np.full(2 * ne, -1, np.int64), np.full(u, -1, np.int64),
                    np.zeros(2 * ne))
    far, nxt, head = adj.far, adj.nxt, adj.head
    for e in range(ne):
        a, b = edges[e, 0], edges[e, 1]
        far[2 * e], far[2 * e + 1] = b, a
        nxt[2 * e], head[a] = head[a], 2 * e
        nxt[2 * e + 1], head[b] = head[b], 2 * e + 1
    return adj


@njit(cache=True)
def _first_queue(cl, adj, mark, mesh, lazy):
    """The queue (a heapq list of (_priority, a, b, version of a, of b, exact, slot, cost)) holding
    each adjacent pair a < b once (mark: scratch (u,) int64, all -1 on entry), with the estimate
    max(own costs) when lazy, else its exact cost."""
    heap = [(0.0, 0, 0, 0, 0, 0, 0, 0.0)]
    heap.pop()
    for a in range(len(adj.head)):
        s = adj.head[a]
        while s >= 0:
            b = adj.far[s]
            if a < b and mark[b] != a:
                mark[b] = a
                _queue_pair(heap, cl, a, b, max(cl.own[a], cl.own[b]), s, mesh, lazy)
            s = adj.nxt[s]
    return heap


@njit(cache=True)
def _queue_pair(heap, cl, a, b, estimate, slot, mesh, lazy):
    """Push clusters a < b (met on adjacency slot `slot`) with their current versions: with
    `estimate` (flag 0) when lazy, else with their exact merge cost (flag 1)."""
    if lazy:
        _push(heap, cl, a, b, cl.ver[a], cl.ver[b], 0, slot, estimate)
    else:
        _push(heap, cl, a, b, cl.ver[a], cl.ver[b], 1, slot, _merge_candidate(cl, a, b, mesh)[2])


@njit(cache=True)
def _push(heap, cl, a, b, va, vb, exact, slot, cost):
    """Queue the merge of clusters a and b (versions va, vb; cost exact or an estimate) at its _priority."""
    heapq.heappush(heap, (_priority(cl, a, b, cost), a, b, va, vb, exact, slot, cost))


@njit(cache=True)
def _merge(cl, a, b, cost, dirs):
    """Merge cluster b into a (cost: the merged sphere's): b's label points at a, a's version moves
    on, and a is represented by the extreme points of the union along each direction of dirs."""
    cl.own[a] = cost
    cl.size[a] += cl.size[b]
    k = _gather_points(cl, a, b)
    cl.label[b] = a
    cl.ver[a] += 1
    m = np.int64(0)  # indices typed, not literals: one compilation of _holds_point
    for j in range(len(dirs)):
        imax = imin = np.int64(0)
        vmax, vmin = -np.inf, np.inf
        for i in range(k):
            v = cl.buf[i, 0] * dirs[j, 0] + cl.buf[i, 1] * dirs[j, 1] + cl.buf[i, 2] * dirs[j, 2]
            if v > vmax:
                imax, vmax = i, v
            if v < vmin:
                imin, vmin = i, v
        for bi in (imax, imin):
            if not _holds_point(cl.reps, a, m, cl.buf, bi):
                cl.reps[a, m, 0], cl.reps[a, m, 1], cl.reps[a, m, 2] = cl.buf[bi, 0], cl.buf[bi, 1], cl.buf[bi, 2]
                m += 1
    cl.cnt[a] = m


@njit(cache=True)
def _holds_point(reps, a, m, buf, i):
    """Point buf[i] is one of cluster a's first m representatives reps[a, :m]."""
    for j in range(m):
        if reps[a, j, 0] == buf[i, 0] and reps[a, j, 1] == buf[i, 1] and reps[a, j, 2] == buf[i, 2]:
            return True
    return False


@njit(cache=True)
def _append_edges(adj, a, b):
    """Cluster b's list of edge slots concatenated onto a's."""
    s = adj.head[a]
    if s < 0:
        adj.head[a] = adj.head[b]
    else:
        while adj.nxt[s] >= 0:
            s = adj.nxt[s]
        adj.nxt[s] = adj.head[b]


@njit(cache=True)
def _relink(cl, adj, a, mark, stamp, heap, mesh, lazy):
    """Walk merged cluster a's edge slots: re-point each at its far end's representative, unlink
    self-loops and repeats (mark[k] == stamp: seen in this walk), and queue a's pair with each
    neighbour (lazy estimate: the larger own cost and the slot's last exact cost). Returns the
    number of slots walked."""
    mark[a] = stamp
    prev, walked = -1, 0
    s = adj.head[a]
    while s >= 0:
        walked += 1
        k = _find(cl.label, adj.far[s])
        adj.far[s] = k
        if mark[k] == stamp:  # self-loop or seen: unlink slot
            if prev < 0:
                adj.head[a] = adj.nxt[s]
            else:
                adj.nxt[prev] = adj.nxt[s]
        else:
            mark[k] = stamp
            lo_i, hi_i = min(a, k), max(a, k)
            _queue_pair(heap, cl, lo_i, hi_i, max(cl.own[a], cl.own[k], adj.cost[s]), s, mesh, lazy)
            prev = s
        s = adj.nxt[s]
    return walked


@njit(cache=True)
def _find(label, k):
    """The representative of unit k (union-find with path halving: label is shortened on the way)."""
    while label[k] != k:
        label[k] = label[label[k]]
        k = label[k]
    return k


@njit(cache=True)
def _flatten_labels(label):
    """label[i] = the representative of unit i, for every i."""
    for i in range(len(label)):
        k = i
        while label[k] != k:
            k = label[k]
        label[i] = k


def merge_clusters(members: np.ndarray, forming: np.ndarray, edges: np.ndarray, target: int,
                   pts: np.ndarray, query: MeshQuery, own: np.ndarray | None = None):
    """Greedily merge the medial spheres `members` into `target` clusters.

    members (s,) int64 medial-sphere ids; forming (S,4) their sample ids; edges (e,2) adjacency over
    all medial spheres (only pairs inside `members` are used); pts (k,3) samples; own (S,) float64
    the own cost of each medial sphere alone where known, nan where not (filled in: every level
    starts from the same single spheres).
    Returns a list of clusters (centre (3,), radius, medial-sphere ids (sorted int64)), ordered by
    smallest member id; each sphere is the Ritter sphere of all the cluster's forming points.
    Components of the adjacency graph are first linked to nearby spheres of other components; if
    merging still runs out of edges, the clusters are linked by proximity and merging resumes.
    """
    members = np.asarray(members, np.int64)
    n = len(members)
    loc = np.full(len(forming), -1, np.int64)
    loc[members] = np.arange(n)
    e = loc[edges]
    e = e[(e >= 0).all(axis=1)]
    e = np.concatenate([e, _bridge_components(pts[forming[members]].mean(axis=1), e)])
    groups = [np.array([i]) for i in range(n)]  # member positions in each unit
    known = np.full(n, np.nan) if own is None else own[members]
    while True:
        ids = [forming[members[g]].ravel() for g in groups]
        unit_ptr = np.concatenate([[0], np.cumsum([len(x) for x in ids])]).astype(np.int64)
        unit_pts = np.ascontiguousarray(pts[np.concatenate(ids)])
        sizes = np.array([len(g) for g in groups], np.float64)
        label, n_eval, n_walk = _greedy_merge(unit_ptr, unit_pts, e.astype(np.int64), target, _DIRS,
                                              query.mesh_args(), known, sizes, n / target, True)
        if own is not None and len(groups) == n:  # single spheres: their costs serve the next levels
            own[members] = known
        reps = np.unique(label)
        STATS["evaluations"] += n_eval
        STATS["walked"] += n_walk
        groups = [np.concatenate([groups[x] for x in np.flatnonzero(label == r)]) for r in reps]
        if len(reps) <= target or len(reps) == len(unit_ptr) - 1:
            break
        # ran out of edges: clusters become units, linked to their nearest clusters
        e = _knn_edges(np.array([pts[forming[members[g]]].reshape(-1, 3).mean(axis=0) for g in groups]), 3)
        known = np.full(len(groups), np.nan)
    out = []
    for g in groups:
        c, r = _ritter(pts[np.unique(forming[members[g]])])
        out.append((c, float(r), np.sort(members[g])))
    out.sort(key=lambda c: int(c[2][0]))
    return out


def _knn_edges(c: np.ndarray, k: int) -> np.ndarray:
    """(e,2) edges from each point of c (n,3) to its k nearest others."""
    if len(c) < 2:
        return np.zeros((0, 2), np.int64)
    k = min(k + 1, len(c))
    _, nb = cKDTree(c).query(c, k=k)
    src = np.repeat(np.arange(len(c)), k - 1)
    return np.stack([src, nb[:, 1:].ravel()], axis=1).astype(np.int64)


def _bridge_components(c: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Edges that make graph (points c (n,3), edges e) connected (Boruvka on nearest outside points).

    Each round links every connected component to the nearest point outside it; at least half the
    components disappear per round. Without this, a small isolated piece of the sampled medial
    surface (aliasing on a thin part) can never merge and wastes a whole cluster of the level.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(c)
    added = [np.zeros((0, 2), np.int64)]
    whole = None  # a tree of all the points, for small components
    while n > 1:
        all_e = np.concatenate([e, *added])
        g = coo_matrix((np.ones(len(all_e)), (all_e[:, 0], all_e[:, 1])), shape=(n, n))
        ncomp, comp = connected_components(g, directed=False)
        if ncomp == 1:
            break
        new = []
        for k in range(ncomp):
            inside = np.flatnonzero(comp == k)
            if len(inside) <= SMALL_COMPONENT:
                whole = cKDTree(c) if whole is None else whole
                d, j = _nearest_outside(whole, c, inside, comp != k)
            else:
                outside = np.flatnonzero(comp != k)
                d, j = cKDTree(c[outside]).query(c[inside], k=1)
                j = outside[j]
            i = int(np.argmin(d))
            new.append((inside[i], j[i]))
        added.append(np.array(new, np.int64))
    return np.concatenate(added)


def _nearest_outside(whole: cKDTree, c: np.ndarray, inside: np.ndarray, out: np.ndarray):
    """(distance, index) of the nearest point of c outside a component to each of its points
    `inside` (out: (n,) bool, outside it): among a point's len(inside) + 1 nearest points of the
    whole set one at least lies outside (a tree of the outside points, built anew per component,
    costs more than the query when the component is small)."""
    d, j = whole.query(c[inside], k=len(inside) + 1)
    d, j = d.reshape(len(inside), -1), j.reshape(len(inside), -1)
    first = np.argmax(out[j], axis=1)
    rows = np.arange(len(inside))
    return d[rows, first], j[rows, first]


# ---------------------------------------------------------------- levels

def medial_levels(query: MeshQuery, branching: int, depth: int, seed: int = 0,
                  n_samples: int | None = None, progress: BuildProgress = QUIET):
    """Per-level (centers (n_k,3), radii (n_k,), parent (n_k,)) for `finish.assemble`."""
    if not query.closed:
        warnings.warn(MedialFallbackWarning(
            "mesh is open: no inside, so the medial axis is approximated by local Voronoi spheres on "
            "both sides of the surface; errors and coverage are measured to the surface"), stacklevel=3)
    if n_samples is None:
        n_samples = int(np.clip(SAMPLES_PER_LEAF * branching ** depth, MIN_SAMPLES, MAX_SAMPLES))
    med = medial_spheres(query, n_samples, seed, progress)
    if len(med["radius"]) == 0:  # e.g. a flat or degenerate mesh: no Voronoi vertex inside
        from .octree import octree_levels
        warnings.warn(MedialFallbackWarning("no medial spheres found; using the octree builder"), stacklevel=3)
        return octree_levels(query, depth, seed=seed)
    used = np.unique(query.faces)
    progress.stage(f"bounding sphere of {len(used):,} vertices")
    c0, r0 = min_enclosing_sphere(query.vertices[used], seed=seed)
    levels = [(c0[None], np.array([r0]), np.array([-1]))]
    groups = [np.arange(len(med["radius"]), dtype=np.int64)]  # medial spheres under each node
    own = np.full(len(med["radius"]), np.nan)  # each medial sphere's own merge cost, once
    # each level re-merges every medial sphere: count spheres, so the bar runs in step with time
    merges = progress.counter(f"merging {len(groups[0]):,} medial spheres, {depth} levels", unit="sphere",
                              total=depth * len(groups[0]))
    for _ in range(depth):
        centers, radii, parent, next_groups = [], [], [], []
        for p, members in enumerate(groups):
            for c, r, ids in merge_clusters(members, med["forming"], med["edges"], branching,
                                            med["points"], query, own):
                centers.append(c)
                radii.append(r)
                parent.append(p)
                next_groups.append(ids)
            merges.update(len(members))
        levels.append((np.array(centers), np.array(radii), np.array(parent)))
        groups = next_groups
    merges.close()
    return levels
