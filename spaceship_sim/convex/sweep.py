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
        pad = pad_rel * radius[b]
        for k in range(3):
            r0, r1, r2 = rot[b, k, 0], rot[b, k, 1], rot[b, k, 2]  # world axis k in the body frame
            for side in range(2):
                sign, slot = (-1.0, k) if side == 0 else (1.0, k + 3)
                v = ext[b, slot]
                best = sign * (r0 * verts[v, 0] + r1 * verts[v, 1] + r2 * verts[v, 2])
                moved = True
                while moved:
                    moved = False
                    for s in range(vert_start[v], vert_start[v + 1]):
                        w = vert_nbrs[s]
                        c = sign * (r0 * verts[w, 0] + r1 * verts[w, 1] + r2 * verts[w, 2])
                        if c > best:
                            best, v, moved = c, w, True
                            steps += 1
                            break
                ext[b, slot] = v
                if side == 0:
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
def _sweep(ends, order, count, listed, act, feats, n_act):
    """Insertion-sort each axis' box ends (ends (3, 2N) float64: ends[k, 2 b] body b's min on axis
    k, ends[k, 2 b + 1] its max; order (3, 2N) int32 of such end indices) and keep the pair
    counters and the active list (act (cap, 2) int32, feats (cap, 2) int64) up to date.
    Returns (n_act, swaps, complete): complete is False when act filled up and pairs that came to
    overlap were left unlisted (`SweepAndPrune` lists them after growing act: growing here, by
    rebinding act inside the loop, made numba reference-count it on every step, 4x slower)."""
    swaps, complete = 0, True
    for k in range(3):
        o, e = order[k], ends[k]
        for i in range(1, len(o)):
            x = o[i]
            vx = e[x]
            j = i - 1
            while j >= 0 and e[o[j]] > vx:
                y = o[j]
                o[j + 1] = y
                swaps += 1
                if (x ^ y) & 1 and (x >> 1) != (y >> 1):
                    a, b = min(x >> 1, y >> 1), max(x >> 1, y >> 1)
                    if x & 1:   # a max moved below a min: one fewer overlap condition holds
                        count[a, b] -= 1
                    else:       # a min moved below a max
                        count[a, b] += 1
                        if count[a, b] == 3 and not listed[a, b]:
                            if n_act == len(act):
                                complete = False
                            else:
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
    return kept, swaps, complete


@njit(cache=True)
def _count_overlaps(ends, order, count):
    """Counters from scratch (first frame): for each axis, walk its sorted ends keeping the open
    boxes; a box opening overlaps every open one on that axis. O(N + overlaps per axis), where
    insertion sort from an arbitrary order would swap O(N^2) times."""
    n = ends.shape[1] // 2
    open_, slot = np.empty(n, np.int32), np.empty(n, np.int32)
    for k in range(3):
        n_open = 0
        for x in order[k]:
            b = x >> 1
            if x & 1:   # b closes: the last open box takes its slot
                last = open_[n_open - 1]
                open_[slot[b]], slot[last] = last, slot[b]
                n_open -= 1
            else:
                for i in range(n_open):
                    c = open_[i]
                    count[min(b, c), max(b, c)] += 1
                open_[n_open], slot[b] = b, n_open
                n_open += 1


def _box_ends(lo, hi) -> np.ndarray:
    """(3, 2N) float64: per axis, body b's min at 2 b and its max at 2 b + 1."""
    ends = np.empty((3, 2 * len(lo)))
    ends[:, 0::2], ends[:, 1::2] = lo.T, hi.T
    return ends


class SweepAndPrune:
    """Incremental sweep-and-prune over N boxes; `update(lo, hi)` once per frame.

    State: per-axis orders of box ends, counters (N, N) uint8 (pairs a < b: on how many axes
    their intervals overlap; 3 = the boxes overlap), the active list `pairs` (M, 2) int32 (a < b)
    and their closest-feature codes `feats` (M, 2) int64. The first update sorts from scratch
    and counts the overlaps directly; later ones insertion-sort from the last order."""

    def __init__(self, n: int):
        self.order = None
        self.count = np.zeros((n, n), np.uint8)
        self.listed = np.zeros((n, n), np.uint8)
        self._act = np.empty((max(16, n), 2), np.int32)
        self._feats = np.empty((max(16, n), 2), np.int64)
        self.n_active = 0
        self.last_swaps = 0

    def update(self, lo, hi) -> np.ndarray:
        """Sort the boxes lo, hi (N, 3) float64 world; returns the active pairs (M, 2) int32."""
        ends = _box_ends(lo, hi)
        if self.order is None:
            self.order = np.argsort(ends, axis=1, kind="stable").astype(np.int32)
            _count_overlaps(ends, self.order, self.count)
            self.last_swaps, complete = 0, False
        else:
            self.n_active, self.last_swaps, complete = _sweep(
                ends, self.order, self.count, self.listed, self._act, self._feats, self.n_active)
        if not complete:
            self._list_unlisted()
        return self.pairs

    def _list_unlisted(self) -> None:
        """Append every overlapping pair not yet listed (first frame, or the list filled up),
        growing the list to fit."""
        a, b = np.nonzero((self.count == 3) & (self.listed == 0))
        n, m = self.n_active, self.n_active + len(a)
        if m > len(self._act):
            cap = max(m, 2 * len(self._act))
            self._act = np.concatenate([self._act[:n], np.empty((cap - n, 2), np.int32)])
            self._feats = np.concatenate([self._feats[:n], np.empty((cap - n, 2), np.int64)])
        self._act[n:m, 0], self._act[n:m, 1], self._feats[n:m] = a, b, -1
        self.listed[a, b] = 1
        self.n_active = m

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
