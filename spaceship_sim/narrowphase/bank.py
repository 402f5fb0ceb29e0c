"""TreeBank: every model's sphere tree concatenated into flat arrays, so one numba kernel walks
node pairs of any two models (Box2D-style node arrays; nodes and triangles have global ids).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .volumes import SPHERE, enclosing_spheres

if TYPE_CHECKING:
    from ..spheretree.tree import SphereTree


class TreeError(InputError):
    """A sphere tree whose arrays are inconsistent (e.g. a corrupt or hand-edited .npz)."""


@dataclass(frozen=True, eq=False)
class TreeBank:
    """Sphere trees of M models as global arrays (N nodes, F triangles in all).

    center      : (N, 3) float64, body frame of the node's model [m]
    radius      : (N,)   float64 [m]
    error       : (N,)   float64 [m] bound on the distance from any point of the sphere to its ship
    witness     : (N, 3) float64, body frame [m] a surface point of the ship inside the sphere
    first_child : (N,)   int64, global index of the first child, -1 for leaves
    child_count : (N,)   int64
    tri_ptr     : (N+1,) int64, CSR: triangles of leaf i are tri_idx[tri_ptr[i]:tri_ptr[i+1]]
    tri_idx     : (K,)   int64, global triangle ids
    tri_verts   : (F, 3, 3) float64, body frame [m], one vertex per row
    tri_center  : (F, 3) float64, centroid of each triangle [m]
    tri_radius  : (F,)   float64, radius around tri_center enclosing the triangle [m]
    node_offset : (M+1,) int64, model m's nodes are node_offset[m]:node_offset[m+1] (root first)
    tri_offset  : (M+1,) int64, model m's triangles are tri_offset[m]:tri_offset[m+1]
    depth       : (M,)   int64, levels below the root of each model's tree
    trees       : tuple of the M SphereTrees

    Its nodes are spheres (`volume`, volumes.SPHERE: center, radius, error, witness).
    """

    volume = SPHERE  # what the refinement loop's kernels test its nodes as (a class attribute)

    center: np.ndarray
    radius: np.ndarray
    error: np.ndarray
    witness: np.ndarray
    first_child: np.ndarray
    child_count: np.ndarray
    tri_ptr: np.ndarray
    tri_idx: np.ndarray
    tri_verts: np.ndarray
    tri_center: np.ndarray
    tri_radius: np.ndarray
    node_offset: np.ndarray
    tri_offset: np.ndarray
    depth: np.ndarray
    trees: tuple

    @property
    def n_models(self) -> int:
        return len(self.trees)

    @cached_property  # a bank's topology never changes: computed once, not on every refinement call
    def max_level(self) -> int:
        """Deepest level any pair can reach: the exact triangle level below the deepest leaves."""
        return int(self.depth.max()) + 1 if len(self.depth) else 0

    @classmethod
    def from_trees(cls, trees) -> "TreeBank":
        trees = tuple(trees)
        if not trees:
            raise ValueError("TreeBank needs at least one tree")
        for tree in trees:
            check_tree(tree)
        n_nodes = np.array([t.n_nodes for t in trees])
        n_tris = np.array([len(t.faces) for t in trees])
        node_offset = np.concatenate([[0], np.cumsum(n_nodes)]).astype(np.int64)
        tri_offset = np.concatenate([[0], np.cumsum(n_tris)]).astype(np.int64)

        def cat(name, dtype):
            return np.ascontiguousarray(np.concatenate([getattr(t, name) for t in trees]), dtype=dtype)

        first_child = np.concatenate([np.where(t.first_child >= 0, t.first_child + o, -1)
                                      for t, o in zip(trees, node_offset)]).astype(np.int64)
        tri_idx = np.concatenate([t.leaf_tri_idx + o for t, o in zip(trees, tri_offset)]).astype(np.int64)
        counts = np.concatenate([np.diff(t.leaf_tri_ptr) for t in trees])
        tri_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        tri_verts = np.ascontiguousarray(np.concatenate([t.vertices[t.faces] for t in trees]), dtype=np.float64)
        tri_center = tri_verts.mean(axis=1)
        tri_radius = np.sqrt(((tri_verts - tri_center[:, None, :]) ** 2).sum(axis=2)).max(axis=1)
        return cls(center=cat("center", np.float64), radius=cat("radius", np.float64),
                   error=cat("error", np.float64), witness=cat("witness", np.float64),
                   first_child=first_child, child_count=cat("child_count", np.int64),
                   tri_ptr=tri_ptr, tri_idx=tri_idx, tri_verts=tri_verts,
                   tri_center=np.ascontiguousarray(tri_center),
                   tri_radius=np.ascontiguousarray(tri_radius),
                   node_offset=node_offset, tri_offset=tri_offset,
                   depth=np.array([t.depth for t in trees], dtype=np.int64), trees=trees)

    @cached_property
    def max_children(self) -> int:
        """Most children of any node (>= 1)."""
        return max(int(self.child_count.max(initial=1)), 1)

    def maintain(self, now: float) -> None:
        """Called before each detection sample at simulation time `now` [s]: prebuilt trees keep
        every node (on-collide trees, ocst.OcstBank, evict unused ones here)."""

    @cached_property
    def spheres(self) -> np.ndarray:
        """(N, 8): spheres around each node's volume and its children's (volumes.enclosing_spheres),
        what the loop tests before a node's child pairs."""
        return enclosing_spheres(self)

    def refresh_spheres(self) -> None:
        """Remake `spheres` in place after the node arrays changed in place (faceoctree.deform's
        flexing ships): the kernels' cached arguments refer to that array."""
        enclosing_spheres(self, out=self.spheres)

    @cached_property
    def nodes(self):
        """The node arrays as the bounding volume's tuple (what the kernels take as VA or VB)."""
        return self.volume.arrays(self)


_SINGLE: "weakref.WeakKeyDictionary[SphereTree, TreeBank]" = weakref.WeakKeyDictionary()


def bank_of(tree: SphereTree) -> TreeBank:
    """A one-model bank for `tree`, cached for as long as the tree lives."""
    bank = _SINGLE.get(tree)
    if bank is None:
        bank = _SINGLE[tree] = TreeBank.from_trees([tree])
    return bank


def check_tree(tree: SphereTree) -> None:
    """Raise TreeError naming the field when the tree's arrays do not fit together."""
    src = tree.key or "sphere tree"
    m = tree.n_nodes
    shapes = {"center": (m, 3), "witness": (m, 3), "error": (m,), "first_child": (m,),
              "child_count": (m,), "leaf_tri_ptr": (m + 1,)}
    for name, shape in shapes.items():
        if getattr(tree, name).shape != shape:
            raise TreeError(src, name, f"shape {getattr(tree, name).shape}, expected {shape}")
    if m == 0 or tree.level_start[0] != 0 or tree.level_start[-1] != m or tree.level_start[1] != 1:
        raise TreeError(src, "level_start", "must start with [0, 1, ...] (one root) and end at the node count")
    fc, cc = tree.first_child, tree.child_count
    inner = cc > 0
    if np.any(fc[inner] <= np.flatnonzero(inner)) or np.any(fc[inner] + cc[inner] > m):
        raise TreeError(src, "first_child", "children must come after their parent and inside the node arrays")
    nf = len(tree.faces)
    if len(tree.leaf_tri_idx) and (tree.leaf_tri_idx.min() < 0 or tree.leaf_tri_idx.max() >= nf):
        raise TreeError(src, "leaf_tri_idx", f"triangle index outside 0..{nf - 1}")
    if np.any(np.diff(tree.leaf_tri_ptr) < 0) or tree.leaf_tri_ptr[-1] != len(tree.leaf_tri_idx):
        raise TreeError(src, "leaf_tri_ptr", "must be non-decreasing and end at len(leaf_tri_idx)")
    if not (np.all(np.isfinite(tree.center)) and np.all(tree.radius >= 0) and np.all(np.isfinite(tree.error))):
        raise TreeError(src, "radius", "centers/errors must be finite and radii >= 0")
