"""Deforming ships: hulls that flex every frame, and the narrow phase that handles them.

A deforming model's vertices at time t are its rest vertices with the cross-section (body y
and z) scaled by 1 + a sin(2 pi (f t - x / wavelength)): a bulge running along the ship's
length (config section [deform]). The shape is a smooth, deterministic function of time, so a
replay or a test recomputes it exactly, and it never leaves the rest shape's bounding sphere
scaled by 1 + a (`hull_scale`), which the broad phase uses.

Narrow phase (time-critical, as the rigid ships'): a point of the flexed surface is the
combination, with the same barycentric coordinates, of its triangle's flexed vertices, so it is
within the largest of their moves of its rest point (convexity of the norm). Each sample, every
node of the rest shape's sphere tree grows by D_node = the largest move of a vertex of a face
touching a leaf at or below it (`node_displacements`): a contact point's rest point p lies in a
chain of spheres, each the parent of the next, from the root to a leaf that touches p's face (what
the refinement relies on to find a contact on the rest shape: tested on the lamp), and the flexed
point lies within D_node of p for every sphere of that chain — so the grown tree covers the flexed
shape as the rest tree covers the rest shape. Errors grow by D_node + D_max (a point of a grown
sphere is within D_node of the rest sphere, whose points are within e of the rest surface,
which moved at most D_max = the largest vertex move), and the witnesses are moved onto the
flexed surface (their barycentric coordinates on the rest surface, found once). Pairs with a
flexing ship are refined on these trees within the frame's budget by the same loop as rigid
pairs (Hubbard's levels, min_level forced), and their exact level is the face octree
(FaceOctreeExact, no per-model preprocessing: its vertices are overwritten with the current
shape each sample), run in batches while time allows.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..clock import WALL
from ..config import Config, DeformConfig
from ..narrowphase import FrameNarrowResult, NarrowPhase, TreeBank
from ..spheretree.geometry import MeshQuery
from .detector import FaceOctreeExact


def hull_scale(cfg: Config, name: str) -> float:
    """Factor on model `name`'s bounding radius that bounds every shape it takes [-]."""
    return 1.0 + cfg.deform.amplitude if name in cfg.deform.models else 1.0


def flexed(rest: np.ndarray, t: float, d: DeformConfig) -> np.ndarray:
    """(nv, 3) float64 body-frame vertices [m] at time t [s] of a hull whose rest vertices are
    `rest` (nv, 3): y and z scaled by 1 + a sin(2 pi (f t - x / wavelength))."""
    s = 1.0 + d.amplitude * np.sin(2.0 * math.pi * (d.frequency * t - rest[:, 0] / d.wavelength))
    out = rest.copy()
    out[:, 1:] *= s[:, None]
    return out


def node_displacements(tree, moved: np.ndarray) -> np.ndarray:
    """(n_nodes,) float64 [m]: per node of `tree`, the largest of `moved` ((nv,) each vertex's
    distance from its rest position) over the vertices of the faces touching a leaf at or below it."""
    D = np.zeros(tree.n_nodes)
    per_face = moved[np.asarray(tree.faces)].max(axis=1)
    ptr, idx = np.asarray(tree.leaf_tri_ptr), np.asarray(tree.leaf_tri_idx)
    rows = np.flatnonzero(np.diff(ptr) > 0)
    if len(rows):
        D[rows] = np.maximum.reduceat(per_face[idx], ptr[rows])
    for level in range(tree.depth, 0, -1):  # leaves up: a parent takes its children's largest
        nodes = np.arange(tree.level_start[level], tree.level_start[level + 1])
        np.maximum.at(D, tree.parent[nodes], D[nodes])
    return D


def surface_coordinates(vertices: np.ndarray, faces: np.ndarray, closed: bool, points: np.ndarray):
    """Where surface points (n, 3) lie on the mesh: triangle (n,) int64 and barycentric
    coordinates (n, 3) float64 of the closest point on it (the point itself, up to rounding)."""
    _, q, _, tri = MeshQuery(vertices, faces, closed).query(points)
    a, b, c = (vertices[faces[tri, j]] for j in range(3))
    e0, e1, e2 = b - a, c - a, q - a
    d00, d01, d11 = (e0 * e0).sum(1), (e0 * e1).sum(1), (e1 * e1).sum(1)
    d20, d21 = (e2 * e0).sum(1), (e2 * e1).sum(1)
    den = np.where(d00 * d11 - d01 * d01 > 0, d00 * d11 - d01 * d01, 1.0)  # degenerate: the first vertex
    v, w = (d11 * d20 - d01 * d21) / den, (d00 * d21 - d01 * d20) / den
    bary = np.clip(np.stack([1.0 - v - w, v, w], 1), 0.0, 1.0)
    return tri, bary / bary.sum(axis=1, keepdims=True)


class DeformingShips:
    """The scenario's deforming models and the narrow phase that mixes them with rigid ones.

    models : list of meshes.Mesh (the world's, rest shapes); cfg : the scenario's Config;
    now    : callable returning the simulation time [s] of the sample being tested.
    """

    def __init__(self, cfg: Config, models, now):
        self.cfg, self.now = cfg.deform, now
        self.models = list(models)
        self.ids = [i for i, m in enumerate(models) if m.name in cfg.deform.models]
        self.rest = {i: np.array(models[i].vertices, np.float64) for i in self.ids}
        self.is_deforming = np.isin(np.arange(len(models)), self.ids)
        self.detector = FaceOctreeExact(models)
        self.last_t = math.nan
        self._bank = self._for = None  # the flexed shapes' bank, and the rigid bank it was made from
        self._witness = {}  # model id -> (triangle, barycentric coordinates) of its nodes' witnesses

    def shapes(self, t: float | None = None) -> dict[int, np.ndarray]:
        """model id -> (nv, 3) float64 body-frame vertices at time t (default: now())."""
        t = self.now() if t is None else t
        return {m: flexed(self.rest[m], t, self.cfg) for m in self.ids}

    def bank(self, rigid: TreeBank) -> TreeBank:
        """A copy of `rigid` whose flexing models' radii, errors and witnesses `flex_to` sets for
        each sample's shapes (made once; the one bank whose arrays change: in place, so the node
        tuple the kernels take, which refers to them, sees each sample's values)."""
        if not isinstance(rigid, TreeBank):
            raise TypeError("deforming ships need prebuilt sphere trees (a TreeBank), got " + type(rigid).__name__)
        if self._for is not rigid:
            for m in self.ids:
                tree = rigid.trees[m]
                self._witness[m] = surface_coordinates(self.rest[m], tree.faces, tree.closed, tree.witness)
            self._bank, self._for = TreeBank.from_trees(rigid.trees), rigid
        return self._bank

    def flex_to(self, t: float, bank: TreeBank) -> None:
        """Shapes at time t [s] into the face octree's vertices and `bank` (from `self.bank`): each
        flexing model's spheres grown by their node displacements, errors by those plus the
        largest vertex move, witnesses moved onto the flexed surface (see the module doc)."""
        self.last_t = t  # the time of the shapes tested (tests recompute them)
        for m, v in self.shapes(t).items():
            self.detector.set_vertices(m, v)
            tree, s, e = bank.trees[m], bank.node_offset[m], bank.node_offset[m + 1]
            moved = np.linalg.norm(v - self.rest[m], axis=1)
            D = node_displacements(tree, moved)
            bank.radius[s:e] = tree.radius + D
            bank.error[s:e] = tree.error + D + moved.max(initial=0.0)
            tri, bary = self._witness[m]
            bank.witness[s:e] = np.einsum("nj,njk->nk", bary, v[np.asarray(tree.faces)[tri]])
        bank.refresh_spheres()  # the grown radii

    def refine(self, rigid_phase: NarrowPhase, flex_phase: NarrowPhase, bank, model_id, T, pairs,
               deadline: float, clock=WALL) -> FrameNarrowResult:
        """NarrowPhase's contract: rigid pairs refined by `rigid_phase` on `bank`, pairs with a
        flexing ship by `flex_phase` (its detector: the face octree) on the bank of grown spheres, each
        within the deadline; the rigid pairs get their share of the time (by count), and what
        they leave goes to the flexing ones."""
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        model_id = np.asarray(model_id, np.int64)
        flex = self.is_deforming[model_id[pairs]].any(1)
        if not flex.any():
            return rigid_phase(bank, model_id, T, pairs, deadline, clock=clock)
        start = clock()
        share = deadline if not math.isfinite(deadline) else start + (deadline - start) * np.mean(~flex)
        rigid = rigid_phase(bank, model_id, T, pairs[~flex], share, clock=clock)
        flex_bank = self.bank(bank)
        self.flex_to(self.now(), flex_bank)
        flexing = flex_phase(flex_bank, model_id, T, pairs[flex], deadline, clock=clock)
        return _merge(pairs, [(np.flatnonzero(~flex), rigid), (np.flatnonzero(flex), flexing)], clock, start)


@dataclasses.dataclass(frozen=True)
class DeformingNarrowPhase(NarrowPhase):
    """The frame's narrow phase when some models flex: NarrowPhase's settings for every pair, the
    exact level of pairs with a flexing ship by `ships` (DeformingShips)' face octree."""

    ships: DeformingShips | None = None

    def __call__(self, bank, model_id, T, pairs, deadline: float, clock=WALL, fair=None,
                 tighten_until: float = math.inf) -> FrameNarrowResult:
        """NarrowPhase's call (its parts give verdicts only: `tighten_until` has no narrowing to stop).
        A FairOrder `fair` orders all the pairs before they are split into rigid and flexing ones,
        and records all their levels after: it forgets the pairs a record leaves out, so the two
        parts cannot each take it to their own refine_frame."""
        rigid = NarrowPhase(self.min_level, self.max_level, self.triangle_tests, self.all_contacts,
                            self.detector)
        flexing = dataclasses.replace(rigid, detector=self.ships.detector)
        if fair is not None:
            pairs = np.asarray(pairs)[fair.order(pairs, len(model_id))]
        result = self.ships.refine(rigid, flexing, bank, model_id, T, pairs, deadline, clock)
        if fair is not None:
            fair.record(result.pairs, result.level, len(model_id))
        return result


def _scatter(k, rows, ptr):
    """Per-entry row ids and per-row counts (k,) of a CSR `ptr` over the rows `rows` of k."""
    counts = np.zeros(k, np.int64)
    counts[rows] = np.diff(ptr)
    return np.repeat(rows, np.diff(ptr)), counts


def _csr(k, parts):
    """One CSR over k rows from [(rows, ptr, a, b)] pieces over disjoint row sets."""
    row_of, a, b, counts = [], [], [], np.zeros(k, np.int64)
    for rows, ptr, pa, pb in parts:
        r, c = _scatter(k, rows, ptr)
        row_of.append(r), a.append(pa), b.append(pb)
        counts += c
    order = np.argsort(np.concatenate(row_of), kind="stable")
    ptr = np.zeros(k + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, np.concatenate(a)[order], np.concatenate(b)[order]


def _merge(pairs, parts, clock, start: float) -> FrameNarrowResult:
    """One FrameNarrowResult over all k pairs from [(rows, result over pairs[rows])] on disjoint
    row sets covering them (results over banks with the same node and triangle layout), its
    time_used from `start` on `clock` to the end of the merge: joining two deep overlaps' every
    contact took up to 12 ms, which the budget must see."""
    k = len(pairs)

    def scatter(name, shape=(), dtype=np.float64):
        out = np.zeros((k, *shape), dtype)
        for rows, r in parts:
            out[rows] = getattr(r, name)
        return out

    def csr(attr):
        ptr, a, b = _csr(k, [(rows, *getattr(r, attr)[:3]) for rows, r in parts])
        offsets = [np.zeros(k, np.int64), np.zeros(k, np.int64)]
        for rows, r in parts:
            offsets[0][rows], offsets[1][rows] = getattr(r, attr)[3:]
        return (ptr, a, b, *offsets)

    colliding, level = scatter("colliding", dtype=bool), scatter("level", dtype=np.int64)
    n_levels = max(len(r.level_histogram) for _, r in parts)
    return FrameNarrowResult(  # keyword arguments run in order: time_used, last, counts the rest
        pairs=pairs, colliding=colliding, level=level, certain=scatter("certain", dtype=bool),
        separation_bound=scatter("separation_bound"), contact_point=scatter("contact_point", (3,)),
        contact_normal=scatter("contact_normal", (3,)), distance=scatter("distance"),
        level_histogram=np.bincount(level[colliding], minlength=n_levels).astype(np.int64),
        _spheres=csr("_spheres"), _tris=csr("_tris"), time_used=clock() - start)
