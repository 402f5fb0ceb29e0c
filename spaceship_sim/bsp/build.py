"""Thibault–Naylor BSP trees over a model's triangles, built once per model (preprocessing).

Each inner node splits space by the plane of one of its triangles (an autopartition), chosen among
a few candidate faces to minimise  SPLIT_WEIGHT * splits + |front - back|  (Thibault & Naylor's
face-split-avoiding heuristic; Hubbard's baseline used it). Triangles lying in the plane stay at
the node; the others go to the side(s) they reach. A triangle that straddles the plane is not cut:
its index goes down both sides (a "split" costs a duplicated reference, not new geometry), so the
exact triangle tests at the nodes test the model's own triangles. Sets of at most LEAF_SIZE
triangles become leaves.

Sides are closed and padded by `eps`: a triangle goes front when some vertex has s >= -eps and
back when some vertex has s <= eps (s = n.x - d). A query triangle classified the same way reaches
every node holding a triangle it could touch: if the two meet at p with s(p) >= 0, both have a
vertex with s >= 0, and likewise on the back — so rounding in either classification only adds
candidates, never loses one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEAF_SIZE = 16       # triangles in a set that is not split further
CANDIDATES = 12      # candidate splitting faces scored per node
SPLIT_WEIGHT = 2.0   # a split (duplicated reference) costs this many triangles of imbalance
MAX_DEPTH = 48       # a set still this deep becomes a leaf (duplication cannot recurse forever)
EPS_REL = 1e-9       # side tolerance as a fraction of the model's size


@dataclass(frozen=True, eq=False)
class BSPTree:
    """One model's BSP tree as flat arrays (node 0 is the root; nodes in depth-first order).

    plane   : (N, 4) float64, body frame: unit normal n (3) and offset d [m]; s(x) = n.x - d
    front   : (N,) int64, child on the side s >= -eps, -1 at leaves
    back    : (N,) int64, child on the side s <= eps, -1 at leaves
    tri_ptr : (N+1,) int64, CSR: node i holds triangles tri_idx[tri_ptr[i]:tri_ptr[i+1]] (those in its
              plane at inner nodes, the whole set at leaves)
    tri_idx : (K,) int64, face indices into the model's mesh (a straddling face appears more than once)
    eps     : float [m], side tolerance
    depth   : int, longest root-to-leaf path (edges)
    """

    plane: np.ndarray
    front: np.ndarray
    back: np.ndarray
    tri_ptr: np.ndarray
    tri_idx: np.ndarray
    eps: float
    depth: int

    @property
    def n_nodes(self) -> int:
        return len(self.front)


def build_bsp(triangles: np.ndarray, leaf_size: int = LEAF_SIZE, candidates: int = CANDIDATES,
              split_weight: float = SPLIT_WEIGHT, seed: int = 0) -> BSPTree:
    """BSP tree of a model's triangles ((F, 3, 3) float64, body frame [m]); deterministic for a seed."""
    tri = np.asarray(triangles, np.float64)
    if tri.ndim != 3 or tri.shape[1:] != (3, 3) or not len(tri):
        raise ValueError(f"triangles must be (F, 3, 3) with F >= 1, got {tri.shape}")
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    offset = np.einsum("ij,ij->i", normal, tri[:, 0])
    eps = EPS_REL * float(np.abs(tri).max())
    rng = np.random.default_rng(seed)
    plane, front, back, held, depth = [], [], [], [], 0
    stack = [(np.arange(len(tri)), -1, False, 0)]  # (set, parent, is back child, depth)
    while stack:
        idx, parent, is_back, level = stack.pop()
        node = len(front)
        if parent >= 0:
            (back if is_back else front)[parent] = node
        front.append(-1), back.append(-1)
        depth = max(depth, level)
        split = None
        if len(idx) > leaf_size and level < MAX_DEPTH:
            split = _best_split(tri, normal, offset, idx, rng, candidates, split_weight, eps)
        if split is None:
            plane.append(np.zeros(4)), held.append(idx)
            continue
        p, on, f_side, b_side = split
        plane.append(np.append(normal[p], offset[p])), held.append(idx[on])
        # pushed back first, so the front subtree follows its parent (depth-first order)
        stack.append((idx[b_side], node, True, level + 1))
        stack.append((idx[f_side], node, False, level + 1))
    ptr = np.zeros(len(held) + 1, np.int64)
    np.cumsum([len(h) for h in held], out=ptr[1:])
    return BSPTree(plane=np.array(plane, np.float64).reshape(-1, 4), front=np.array(front, np.int64),
                   back=np.array(back, np.int64), tri_ptr=ptr,
                   tri_idx=np.concatenate(held).astype(np.int64), eps=eps, depth=depth)


def _best_split(tri, normal, offset, idx, rng, candidates, split_weight, eps):
    """(face, in plane, front mask, back mask) of the best-scoring candidate face plane for the set
    `idx`, or None when no candidate separates anything (every triangle would go down both sides)."""
    cand = idx if len(idx) <= candidates else rng.choice(idx, candidates, replace=False)
    s = np.einsum("cj,mkj->cmk", normal[cand], tri[idx]) - offset[cand][:, None, None]  # (C, m, 3)
    hi, lo = s.max(2), s.min(2)
    on = (hi <= eps) & (lo >= -eps)
    f_side, b_side = ~on & (hi >= -eps), ~on & (lo <= eps)
    n_front, n_back = f_side.sum(1), b_side.sum(1)
    splits = (f_side & b_side).sum(1)
    score = split_weight * splits + np.abs(n_front - n_back)
    # a plane that sends everything left down both sides makes no progress
    useless = (n_front == len(idx) - on.sum(1)) & (n_back == n_front)
    score = np.where(useless, np.inf, score)
    c = int(np.argmin(score))
    if not np.isfinite(score[c]):
        return None
    return int(cand[c]), on[c], f_side[c], b_side[c]
