"""I-COLLIDE's broad phase: sweep-and-prune over axis-aligned boxes, fixed cubes or dynamic boxes.

Boxes (Cohen et al. 1995, section 4.1):
- fixed cubes: centre +- the body's radius, large enough for any orientation (`fixed_cubes`);
- dynamically resized boxes: the tightest box at the current orientation, from six extremal
  vertices per body tracked by hill-climbing (`DynamicBoxes`): from last frame's extremal vertex,
  step to the neighbour with the smaller (larger) coordinate until none is; on a convex polytope a
  vertex no neighbour improves on is the extreme one. Only one coordinate of each visited vertex
  is transformed.

Sweep (section 5.1, `SweepAndPrune`): per axis a list of the 2N box ends kept sorted by insertion
sort from last frame's order (nearly sorted under coherence: expected O(N + swaps)). Every swap of a
min past a max of another body (or back) changes that pair's overlap on that axis; a per-pair
counter (an upper-triangular N x N matrix, as in the paper's section 6.1) reaches 3 when the boxes
overlap on all three axes, and the pair joins the active list. The list also carries each pair's
closest-feature pair (coherence for the exact test), dropped when the pair leaves the list.
"""
from __future__ import annotations

import numpy as np
from numba import njit

BOX_PAD_REL = 1e-6  # boxes grow by this times the body radius: overlap tests stay conservative


def fixed_cubes(radius, pos, pad_rel: float = BOX_PAD_REL):
    """(lo, hi) (B, 3) float64 world: cubes of half-side radius (B,) around pos (B, 3) (the mass
    centre, the origin of each body frame)."""
    half = (radius * (1.0 + pad_rel))[:, None]
    return pos - half, pos + half


@njit(cache=True)
def _climb_extremes(verts, vert_start, vert_nbrs, rot, pos, ext, radius, pad_rel, lo, hi):
    """Hill-climb ext (B, 6) int32 (global vertex of min x, y, z, max x, y, z) to this frame's
    extremes; write the padded boxes into lo, hi (B, 3). Returns the number of steps taken."""
    steps = 0
    for b in range(len(ext)):
        for slot in range(6):
            k, sign = slot % 3, (-1.0 if slot < 3 else 1.0)
            R = rot[b]
            v = ext[b, slot]
            best = sign * (R[k, 0] * verts[v, 0] + R[k, 1] * verts[v, 1] + R[k, 2] * verts[v, 2])
            moved = True
            while moved:
                moved = False
                for s in range(vert_start[v], vert_start[v + 1]):
                    w = vert_nbrs[s]
                    c = sign * (R[k, 0] * verts[w, 0] + R[k, 1] * verts[w, 1] + R[k, 2] * verts[w, 2])
                    if c > best:
                        best, v, moved = c, w, True
                        steps += 1
                        break
            ext[b, slot] = v
            pad = pad_rel * radius[b]
            if slot < 3:
                lo[b, k] = pos[b, k] - best - pad
            else:
                hi[b, k] = pos[b, k] + best + pad
    return steps


class DynamicBoxes:
    """Tight boxes tracked by hill-climbing the hull's vertex adjacency (coherence state: `ext`)."""

    def __init__(self, pset, rot):
        self.pset = pset
        self.ext = self._brute_extremes(pset, rot)
        self.last_steps = 0

    @staticmethod
    def _brute_extremes(pset, rot) -> np.ndarray:
        """(B, 6) int32 extremal vertices found by transforming every vertex (first frame only)."""
        ext = np.empty((pset.n_bodies, 6), np.int32)
        for b in range(pset.n_bodies):
            v0, v1 = pset.vert_range[b], pset.vert_range[b + 1]
            world = pset.vertices[v0:v1] @ rot[b].T
            ext[b, :3], ext[b, 3:] = v0 + world.argmin(axis=0), v0 + world.argmax(axis=0)
        return ext

    def boxes(self, rot, pos, pad_rel: float = BOX_PAD_REL):
        """(lo, hi) (B, 3) float64 world boxes at poses rot (B, 3, 3), pos (B, 3)."""
        lo, hi = np.empty_like(pos), np.empty_like(pos)
        p = self.pset
        self.last_steps = _climb_extremes(p.vertices, p.vert_start, p.vert_nbrs, rot, pos, self.ext,
                                          p.radius, pad_rel, lo, hi)
        return lo, hi


@njit(cache=True)
def _sweep(lo, hi, order, count, listed, act, feats, n_act):
    """Insertion-sort each axis' box ends (order (3, 2N) int32: 2 * body for a min, 2 * body + 1
    for a max) and keep the pair counters and the active list (act (cap, 2) int32, feats (cap, 2)
    int64) up to date. Returns (act, feats, n_act, swaps); act and feats are new arrays if they grew."""
    swaps = 0
    for k in range(3):
        o = order[k]
        for i in range(1, len(o)):
            x = o[i]
            vx = hi[x >> 1, k] if x & 1 else lo[x >> 1, k]
            j = i - 1
            while j >= 0:
                y = o[j]
                if (hi[y >> 1, k] if y & 1 else lo[y >> 1, k]) <= vx:
                    break
                o[j + 1] = y
                swaps += 1
                if (x & 1) != (y & 1) and (x >> 1) != (y >> 1):
                    a, b = min(x >> 1, y >> 1), max(x >> 1, y >> 1)
                    if x & 1:   # a max moved below a min: one fewer overlap condition holds
                        count[a, b] -= 1
                    else:       # a min moved below a max
                        count[a, b] += 1
                        if count[a, b] == 3 and not listed[a, b]:
                            if n_act == len(act):
                                act, feats = _grown(act), _grown(feats)
                            act[n_act, 0], act[n_act, 1] = a, b
                            feats[n_act, 0], feats[n_act, 1] = -1, -1
                            listed[a, b] = 1
                            n_act += 1
                j -= 1
            o[j + 1] = x
    kept = 0
    for r in range(n_act):  # drop pairs no longer overlapping, keep the others' features
        a, b = act[r, 0], act[r, 1]
        if count[a, b] == 3:
            act[kept], feats[kept] = act[r], feats[r]
            kept += 1
        else:
            listed[a, b] = 0
    return act, feats, kept, swaps


@njit(cache=True)
def _grown(a):
    out = np.empty((2 * len(a), a.shape[1]), a.dtype)
    out[:len(a)] = a
    return out


class SweepAndPrune:
    """Incremental sweep-and-prune over N boxes; `update(lo, hi)` once per frame.

    State: per-axis orders of box ends, counters (N, N) uint8 (pairs a < b: how many of the six
    conditions lo_a < hi_b, lo_b < hi_a beyond three hold; 3 = overlap on all axes), the active
    list `pairs` (M, 2) int32 (a < b) and their closest-feature codes `feats` (M, 2) int64."""

    def __init__(self, n: int):
        # ends listed body by body (min_0 max_0 min_1 max_1 ...) describe disjoint boxes, so all
        # counters start at 0 and the first update's swaps bring them to this frame's overlaps
        self.order = np.tile(np.arange(2 * n, dtype=np.int32), (3, 1))
        self.count = np.zeros((n, n), np.uint8)
        self.listed = np.zeros((n, n), np.uint8)
        self._act = np.empty((max(16, n), 2), np.int32)
        self._feats = np.empty((max(16, n), 2), np.int64)
        self.n_active = 0
        self.last_swaps = 0

    def update(self, lo, hi) -> np.ndarray:
        """Sort the boxes lo, hi (N, 3) float64 world; returns the active pairs (M, 2) int32."""
        self._act, self._feats, self.n_active, self.last_swaps = _sweep(
            lo, hi, self.order, self.count, self.listed, self._act, self._feats, self.n_active)
        return self.pairs

    @property
    def pairs(self) -> np.ndarray:
        return self._act[:self.n_active]

    @property
    def feats(self) -> np.ndarray:
        """(M, 2) int64 view: the closest-feature codes of `pairs`, -1 until first computed."""
        return self._feats[:self.n_active]


def box_pairs_brute(lo, hi) -> np.ndarray:
    """Reference: all pairs a < b whose boxes overlap on every axis, (M, 2) int64 sorted."""
    overlap = ((lo[:, None, :] < hi[None, :, :]) & (lo[None, :, :] < hi[:, None, :])).all(axis=2)
    a, b = np.nonzero(np.triu(overlap, 1))
    return np.stack([a, b], axis=1)


def sorted_pairs(pairs) -> np.ndarray:
    """Pairs (M, 2) in lexicographic order (for comparing with `box_pairs_brute`)."""
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
