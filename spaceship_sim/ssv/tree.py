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
from dataclasses import dataclass

import numpy as np

from .core import LSS, PSS, RSS

SSV_BUILDER_VERSION = "7"  # 3: boxes per node; 4: split on the centroids' principal axis; 5: turned
# rectangles; 6: the cut whose halves' SSVs are least; 7: by area, twelve cuts
SLACK = 1e-9  # radius slack as a fraction of the model's bounding-box diagonal [-]
CUT_QUANTILES = (0.3, 0.7)  # besides the mean and the middle, the split tries cuts at these quantiles
RECT_TURNS = 32  # in-plane turns of the two longest axes tried, evenly over a quarter turn (0 among them)
_TURN = np.arange(RECT_TURNS) * (np.pi / 2 / RECT_TURNS)
_TURNED = np.concatenate([np.stack([np.cos(_TURN), np.sin(_TURN)]), np.stack([-np.sin(_TURN), np.cos(_TURN)])], 1)


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


# ---------------------------------------------------------------- fitting

def _volumes(a, b, r):
    """Volumes of the PSS, LSS and RSS with these half-extents and radius [m^3]."""
    return 4 / 3 * np.pi * r ** 3 + 2 * np.pi * r ** 2 * (a + b) + 8 * r * a * b


def _pull_in(x, slack):
    """Interval [lo, hi] such that every x_i lies within slack_i of it (smallest such)."""
    lo, hi = np.min(x + slack), np.max(x - slack)
    if lo > hi:  # any point between them will do: take the middle
        lo = hi = (lo + hi) / 2
    return lo, hi


def _turned_axes(X2):
    """(cos, sin) of the turn, among RECT_TURNS (none among them), that leaves the bounding
    rectangle of the plane points X2 (p, 2) the least area. The principal axes follow the points'
    spread, not their outline: on a ring or a bent strip the rectangle along them is loose. Turned,
    a distance query visits 7-19% fewer node pairs on the bench models' deep poses (fcl fits its
    RSS along the principal axes)."""
    Y = X2 @ _TURNED
    ext = Y.max(0) - Y.min(0)
    k = int(np.argmin(ext[:RECT_TURNS] * ext[RECT_TURNS:]))
    return np.cos(_TURN[k]), np.sin(_TURN[k])


def fit_ssv(points):
    """The smallest of the PSS, LSS and RSS fitted to points (p, 3) along their principal axes, the
    two longest turned about the shortest to the least bounding rectangle (`_turned_axes`):
    (kind, centre (3,), u (3,), v (3,), a, b, r)."""
    mean = points.mean(0)
    D = points - mean
    _, E = np.linalg.eigh(D.T @ D)  # the covariance's axes (np.cov: the same, 2x the build time)
    E = E[:, ::-1].copy()  # columns: longest axis first
    c, s = _turned_axes(D @ E[:, :2])
    E[:, 0], E[:, 1] = c * E[:, 0] + s * E[:, 1], c * E[:, 1] - s * E[:, 0]
    X = D @ E
    lo, hi = X.min(0), X.max(0)
    mid = (lo + hi) / 2
    fits = []
    # PSS
    fits.append((PSS, mid, 0.0, 0.0, np.sqrt(np.max(((X - mid) ** 2).sum(1)))))
    # LSS: the perpendicular bounding box's centre, caps pulled in along the axis
    rho2 = ((X[:, 1:] - mid[1:]) ** 2).sum(1)
    r = np.sqrt(rho2.max())
    x0, x1 = _pull_in(X[:, 0], np.sqrt(np.maximum(r * r - rho2, 0.0)))
    fits.append((LSS, np.array([(x0 + x1) / 2, mid[1], mid[2]]), (x1 - x0) / 2, 0.0, r))
    # RSS: half the thickness along the shortest axis; the long sides pulled in with each point's
    # whole leftover budget, then the short ones with what the first pull left it
    r = (hi[2] - lo[2]) / 2
    budget = np.maximum(r * r - (X[:, 2] - mid[2]) ** 2, 0.0)
    x0, x1 = _pull_in(X[:, 0], np.sqrt(budget))
    dx = np.maximum(np.maximum(x0 - X[:, 0], X[:, 0] - x1), 0.0)
    y0, y1 = _pull_in(X[:, 1], np.sqrt(np.maximum(budget - dx * dx, 0.0)))
    fits.append((RSS, np.array([(x0 + x1) / 2, (y0 + y1) / 2, mid[2]]), (x1 - x0) / 2, (y1 - y0) / 2, r))
    kind, c, a, b, r = min(fits, key=lambda f: _volumes(f[2], f[3], f[4]))
    u, v = E[:, 0], E[:, 1]
    if b > a:
        a, b, u, v = b, a, v, u
    kind = RSS if b > 0 else (LSS if a > 0 else PSS)  # the kind the extents really have
    return kind, mean + E @ c, u, v, a, b, r


def fit_box(points, u, v, slack=0.0):
    """The box holding points (p, 3) with axes u, v, u x v: (centre (3,), half-extents (3,)), the
    half-extents grown by slack."""
    E = np.stack([u, v, np.cross(u, v)], 1)
    X = points @ E
    lo, hi = X.min(0), X.max(0)
    return E @ ((lo + hi) / 2), (hi - lo) / 2 + slack


def _cuts(c):
    """Candidate cuts of centroids c (m, 3), each a signed offset (m,) (< 0: the left half): along
    the centroids' principal axis and the two sides of their least rectangle (`_turned_axes`),
    through their mean, the middle of their extent, and their 30% and 70% quantiles."""
    D = c - c.mean(0)
    _, E = np.linalg.eigh(D.T @ D)
    E = E[:, ::-1]
    cos, sin = _turned_axes(D @ E[:, :2])
    for axis in (E[:, 0], cos * E[:, 0] + sin * E[:, 1], cos * E[:, 1] - sin * E[:, 0]):
        x = D @ axis
        yield x
        yield x - (x.max() + x.min()) / 2
        for q in np.quantile(x, CUT_QUANTILES):
            yield x - q


def _area(a, b, r):
    """Surface area of the RSS (LSS, PSS) with these half-extents and radius [m^2]."""
    return 8 * a * b + 4 * np.pi * r * (a + b + r)


def _halves(tris_idx, x):
    """tris_idx split by the sign of x (at the median when one side would be empty)."""
    left = x < 0.0
    if left.all() or not left.any():
        order = np.argsort(x, kind="stable")
        left = np.zeros(len(x), bool)
        left[order[: len(x) // 2]] = True
    return tris_idx[left], tris_idx[~left]


def _split(tris_idx, tris, centroids):
    """Two non-empty halves of tris_idx, each with its fit_ssv: of the cuts `_cuts` offers, the one
    whose halves' SSVs have the least surface area in all. Against the one cut at the mean along
    the centroids' principal axis (builder version 4; fcl cuts so), a distance query visits 27-51%
    fewer node pairs on the bench models' deep poses (a cross, a ring, a lamp's arms: the principal
    axis runs between the parts); the build takes ~4x as long (the freighter 17 s, cached). By
    volume the twelve cuts did worse than six on the capsules (+46%); by area 0-24% better."""
    best, seen = (np.inf,), set()
    for x in _cuts(centroids[tris_idx]):
        halves = _halves(tris_idx, x)
        if halves[0].tobytes() in seen:  # cuts often agree (always at two or three triangles)
            continue
        seen.add(halves[0].tobytes())
        fits = [fit_ssv(tris[h].reshape(-1, 3)) for h in halves]
        area = sum(_area(*f[4:]) for f in fits)
        if area < best[0]:
            best = (area, zip(halves, fits))
    return best[1]


def build_ssv(vertices, faces, key: str = "") -> SSVTree:
    """SSV tree of a triangle mesh: vertices (nv, 3) float64 body frame [m], faces (F, 3) int."""
    t0 = time.perf_counter()
    tris = np.asarray(vertices, np.float64)[np.asarray(faces, np.int64)]
    n_faces = len(tris)
    if n_faces == 0:
        raise ValueError("build_ssv needs at least one triangle")
    centroids = tris.mean(1)
    slack = SLACK * float(np.linalg.norm(tris.reshape(-1, 3).max(0) - tris.reshape(-1, 3).min(0)))
    n = 2 * n_faces - 1
    center, u, v = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    half, radius = np.zeros((n, 2)), np.zeros(n)
    box_center, box_half = np.zeros((n, 3)), np.zeros((n, 3))
    kind, child, face = np.zeros(n, np.int64), np.full((n, 2), -1, np.int64), np.full(n, -1, np.int64)
    depth = np.zeros(n, np.int64)
    todo, used = [(np.arange(n_faces), 0, fit_ssv(tris.reshape(-1, 3)))], 1
    while todo:
        idx, node, fit = todo.pop()
        points = tris[idx].reshape(-1, 3)
        kind[node], center[node], u[node], v[node], a, b, r = fit
        half[node], radius[node] = (a, b), r + slack
        box_center[node], box_half[node] = fit_box(points, u[node], v[node], slack)
        if len(idx) == 1:
            face[node] = idx[0]
            continue
        for side, (part, part_fit) in enumerate(_split(idx, tris, centroids)):
            child[node, side] = used
            depth[used] = depth[node] + 1
            todo.append((part, used, part_fit))
            used += 1
    return SSVTree(center=center, u=u, v=v, half=half, radius=radius, kind=kind, child=child, face=face,
                   tris=tris, box_center=box_center, box_half=box_half, depth=int(depth.max()), key=key, build_seconds=time.perf_counter() - t0)


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

    @property
    def arrays(self) -> tuple:
        """The node and triangle arrays in the order the kernels take them."""
        return (self.center, self.u, self.v, self.half, self.radius, self.kind, self.child, self.face, self.tris,
                self.box_center, self.box_half)
