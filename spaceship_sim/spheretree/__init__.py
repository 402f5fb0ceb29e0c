"""Sphere trees (Hubbard 1996): medial-axis and octree builders, error bounds, coverage, cache."""
from .build import BUILDER_VERSION, SphereTreeError, build_tree, load_or_build, tree_key, tree_path
from .tree import SphereTree

__all__ = ["BUILDER_VERSION", "SphereTree", "SphereTreeError", "build_tree", "load_or_build", "tree_key",
           "tree_path"]
