"""BSPExact: Hubbard's baseline exact detector behind the narrowphase.exact contract.

Each pair classifies the model with fewer triangles down the BSP tree of the other (fewer
descents), after dropping the triangles that lie outside the tree model's bounding box.
Answers are exact triangle–triangle tests; distance is not computed (nan).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from ..geometry.poses import relative_poses
from ..narrowphase.exact import ExactAnswer
from .build import BSPTree, build_bsp
from .kernels import bsp_collide_pairs


class BSPArrays(NamedTuple):
    """M models' BSP trees concatenated (global node and triangle ids; children global), as the
    pair kernel takes them."""

    plane: np.ndarray       # (N, 4) float64, as in BSPTree
    front: np.ndarray       # (N,) int64, global child ids (-1 at leaves)
    back: np.ndarray        # (N,) int64
    tri_ptr: np.ndarray     # (N+1,) int64, CSR of tri_idx per node
    tri_idx: np.ndarray     # (K,) int64, global triangle ids
    tri_verts: np.ndarray   # (F, 3, 3) float64, every model's triangles, body frames [m]
    tri_center: np.ndarray  # (F, 3) float64, centroid of each triangle [m]
    tri_radius: np.ndarray  # (F,) float64, radius about it enclosing the triangle [m]
    root: np.ndarray        # (M,) int64, root node of each model
    tri_offset: np.ndarray  # (M+1,) int64, model m's triangles are tri_offset[m]:tri_offset[m+1]
    box: np.ndarray         # (M, 2, 3) float64 [m], bounding box (lo, hi) of each model, body frame
    eps: np.ndarray         # (M,) float64 [m], each tree's side tolerance


@dataclass(frozen=True, eq=False)
class BSPBank:
    """M models' BSP trees: their arrays concatenated (BSPArrays) and the BSPTrees themselves."""

    arrays: BSPArrays
    trees: tuple

    @classmethod
    def from_meshes(cls, meshes, **build_options) -> "BSPBank":
        meshes = list(meshes)
        tris = [np.asarray(m.vertices, np.float64)[m.faces] for m in meshes]
        trees = tuple(build_bsp(t, **build_options) for t in tris)
        root = np.concatenate([[0], np.cumsum([t.n_nodes for t in trees])]).astype(np.int64)
        tri_offset = np.concatenate([[0], np.cumsum([len(t) for t in tris])]).astype(np.int64)

        def child(name):
            return np.concatenate([np.where(getattr(t, name) >= 0, getattr(t, name) + o, -1)
                                   for t, o in zip(trees, root)]).astype(np.int64)

        ptr = np.concatenate([[0], np.cumsum(np.concatenate([np.diff(t.tri_ptr) for t in trees]))]).astype(np.int64)
        verts = np.ascontiguousarray(np.concatenate(tris))
        center = verts.mean(1)
        arrays = BSPArrays(
            plane=np.ascontiguousarray(np.concatenate([t.plane for t in trees])), front=child("front"),
            back=child("back"), tri_ptr=ptr,
            tri_idx=np.concatenate([t.tri_idx + o for t, o in zip(trees, tri_offset)]).astype(np.int64),
            tri_verts=verts, tri_center=center, tri_radius=np.linalg.norm(verts - center[:, None], axis=2).max(1),
            root=root[:-1], tri_offset=tri_offset,
            box=np.array([[t.reshape(-1, 3).min(0), t.reshape(-1, 3).max(0)] for t in tris]),
            eps=np.array([t.eps for t in trees]))
        return cls(arrays=arrays, trees=trees)


class BSPExact:
    """Exact pair test on per-model BSP trees (Thibault & Naylor), built when constructed."""

    def __init__(self, meshes: Sequence, **build_options):
        self.bank = BSPBank.from_meshes(meshes, **build_options)

    def collide(self, ma, mb, Ta, Tb, all_contacts=True) -> ExactAnswer:
        ma, mb = np.asarray(ma, np.int64), np.asarray(mb, np.int64)
        Ta, Tb = np.asarray(Ta, np.float64).reshape(-1, 4, 4), np.asarray(Tb, np.float64).reshape(-1, 4, 4)
        if not (len(ma) == len(mb) == len(Ta) == len(Tb)):
            raise ValueError(f"ma, mb, Ta, Tb must have one row per pair, got {len(ma)}, {len(mb)}, {len(Ta)}, "
                             f"{len(Tb)}")
        bank = self.bank.arrays
        n_tris = np.diff(bank.tri_offset)
        swap = n_tris[ma] < n_tris[mb]  # the tree belongs to the model with more triangles
        tree_m, query_m = np.where(swap, mb, ma), np.where(swap, ma, mb)
        Tt, Tq = np.where(swap[:, None, None], Tb, Ta), np.where(swap[:, None, None], Ta, Tb)
        R, t = relative_poses(np.ascontiguousarray(Tt), np.ascontiguousarray(Tq))
        ptr, h_tree, h_query = bsp_collide_pairs(bank, tree_m, query_m, R, t, not all_contacts)
        rows = np.repeat(np.arange(len(ma)), np.diff(ptr))
        flip = swap[rows]
        hit_a, hit_b = np.where(flip, h_query, h_tree), np.where(flip, h_tree, h_query)
        return ExactAnswer(colliding=np.diff(ptr) > 0, tri_ptr=ptr, tri_a=hit_a, tri_b=hit_b,
                           distance=np.full(len(ma), np.nan))


__all__ = ["BSPArrays", "BSPBank", "BSPExact", "BSPTree", "build_bsp"]
