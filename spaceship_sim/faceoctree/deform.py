"""Deforming ships: hulls that flex every frame, and the narrow phase that handles them.

A deforming model's vertices at time t are its rest vertices with the cross-section (body y
and z) scaled by 1 + a sin(2 pi (f t - x / wavelength)): a bulge running along the ship's
length (config section [deform]). The shape is a smooth, deterministic function of time, so a
replay or a test recomputes it exactly, and it never leaves the rest shape's bounding sphere
scaled by 1 + a (`hull_scale`), which the broad phase uses.

Narrow phase: a sphere tree fits only the rest shape, so pairs with a deforming ship go to the
face octree (FaceOctreeExact), which prepares nothing per model — there is no tree to rebuild
or refit: the detector's vertices are overwritten with the current shape before each sample's
test. Rigid pairs keep Hubbard's time-critical sphere-tree path (refine_frame). The face-octree
pairs are always answered exactly (first contact), outside the sphere levels' budget.
"""
from __future__ import annotations

import math

import numpy as np

from dataclasses import dataclass

from ..clock import WALL
from ..config import Config, DeformConfig
from ..narrowphase import FrameNarrowResult, NarrowPhase
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


class DeformingShips:
    """The scenario's deforming models and the narrow phase that mixes them with rigid ones.

    models : list of meshes.Mesh (the world's, rest shapes); cfg : the scenario's Config;
    now    : callable returning the simulation time [s] of the sample being tested.
    """

    def __init__(self, cfg: Config, models, now):
        self.cfg, self.now = cfg.deform, now
        self.ids = [i for i, m in enumerate(models) if m.name in cfg.deform.models]
        self.rest = {i: np.array(models[i].vertices, np.float64) for i in self.ids}
        self.is_deforming = np.isin(np.arange(len(models)), self.ids)
        self.detector = FaceOctreeExact(models)
        self.last_t = math.nan

    def shapes(self, t: float | None = None) -> dict[int, np.ndarray]:
        """model id -> (nv, 3) float64 body-frame vertices at time t (default: now())."""
        t = self.now() if t is None else t
        return {m: flexed(self.rest[m], t, self.cfg) for m in self.ids}

    def refine(self, rigid_phase, bank, model_id, T, pairs, deadline: float, clock=WALL) -> FrameNarrowResult:
        """NarrowPhase's contract: rigid pairs refined by `rigid_phase` (a NarrowPhase call);
        pairs with a deforming ship tested exactly by the face octree on the current shapes."""
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        model_id = np.asarray(model_id, np.int64)
        flex = self.is_deforming[model_id[pairs]].any(1)
        rigid = rigid_phase(bank, model_id, T, pairs[~flex], deadline, clock=clock)
        if not flex.any():
            return rigid
        start = clock()
        self.last_t = self.now()  # the time of the shapes tested (tests recompute them)
        for m, v in self.shapes(self.last_t).items():
            self.detector.set_vertices(m, v)
        ia, ib = pairs[flex, 0], pairs[flex, 1]
        answer = self.detector.collide(model_id[ia], model_id[ib], T[ia], T[ib], all_contacts=False)
        return _merge(bank, self.detector, model_id, T, pairs, flex, rigid, answer, rigid.time_used + clock() - start)


@dataclass(frozen=True)
class DeformingNarrowPhase(NarrowPhase):
    """The frame's narrow phase when some models flex: NarrowPhase's settings for the rigid pairs,
    `ships` (DeformingShips) for the pairs with a flexing ship."""

    ships: DeformingShips | None = None

    def __call__(self, bank, model_id, T, pairs, deadline: float, clock=WALL) -> FrameNarrowResult:
        return self.ships.refine(super().__call__, bank, model_id, T, pairs, deadline, clock)


def narrow_phase(cfg: Config, models, now, detector=None) -> NarrowPhase:
    """The scenario's narrow phase: NarrowPhase, or DeformingNarrowPhase when [deform] names models
    (models: the world's meshes; now: callable returning the simulation time [s]; detector: the
    exact level's strategy, as NarrowPhase's)."""
    c = cfg.collision
    settings = dict(min_level=c.min_level, exact=c.exact, all_contacts=c.all_contacts, detector=detector)
    if not cfg.deform.models:
        return NarrowPhase(**settings)
    return DeformingNarrowPhase(**settings, ships=DeformingShips(cfg, models, now))


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


def _merge(bank, detector, model_id, T, pairs, flex, rigid, answer, time_used) -> FrameNarrowResult:
    """FrameNarrowResult over all pairs from the rigid rows' result and the flexing rows'
    ExactAnswer (exact level, bound 0 or inf, contact at the first hit triangle's centroid in
    its current shape, normal along the centre line)."""
    k = len(pairs)
    rr, fr = np.flatnonzero(~flex), np.flatnonzero(flex)
    ma, mb = model_id[pairs[:, 0]], model_id[pairs[:, 1]]
    colliding = np.zeros(k, bool)
    colliding[rr], colliding[fr] = rigid.colliding, answer.colliding
    level = np.zeros(k, np.int64)
    level[rr], level[fr] = rigid.level, bank.max_level
    exact = np.ones(k, bool)
    exact[rr] = rigid.exact
    bound = np.where(colliding, 0.0, np.inf)
    bound[rr] = rigid.separation_bound
    point, normal = np.full((k, 3), np.nan), np.zeros((k, 3))
    point[rr], normal[rr] = rigid.contact_point, rigid.contact_normal
    distance = np.full(k, np.nan)  # the face octree measures no distances, only contact
    distance[rr], distance[fr[answer.colliding]] = rigid.distance, 0.0
    hit = fr[answer.colliding]
    if len(hit):
        first = answer.tri_ptr[:-1][answer.colliding]
        Ta = T[pairs[hit, 0]]
        m = ma[hit]
        corners = detector.voff[m][:, None] + detector.F[detector.foff[m] + answer.tri_a[first]]
        tri = detector.V[corners].mean(1)
        point[hit] = np.einsum("kij,kj->ki", Ta[:, :3, :3], tri) + Ta[:, :3, 3]
        d = T[pairs[hit, 1], :3, 3] - Ta[:, :3, 3]
        length = np.linalg.norm(d, axis=1, keepdims=True)
        normal[hit] = np.divide(d, length, out=np.tile([1.0, 0.0, 0.0], (len(hit), 1)), where=length > 0)
    flex_rows = np.repeat(fr, np.diff(answer.tri_ptr))
    tris = _csr(k, [(rr, *rigid._tris[:3]),
                    (fr, answer.tri_ptr, answer.tri_a + bank.tri_offset[ma[flex_rows]],
                     answer.tri_b + bank.tri_offset[mb[flex_rows]])])
    empty = np.zeros(0, np.int64)
    spheres = _csr(k, [(rr, *rigid._spheres[:3]), (fr, np.zeros(len(fr) + 1, np.int64), empty, empty)])
    n_levels = max(len(rigid.level_histogram), bank.max_level + 1)
    return FrameNarrowResult(
        pairs=pairs, colliding=colliding, level=level, exact=exact, separation_bound=bound, contact_point=point,
        contact_normal=normal, distance=distance, time_used=time_used,
        level_histogram=np.bincount(level[colliding], minlength=n_levels).astype(np.int64),
        _spheres=(*spheres, bank.node_offset[ma], bank.node_offset[mb]),
        _tris=(*tris, bank.tri_offset[ma], bank.tri_offset[mb]))
