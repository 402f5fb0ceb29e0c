"""Sphere trees (Hubbard 1996): medial-axis and octree builders, error bounds, coverage, cache.

The names load on first use (PEP 562): the builder pulls in scipy and numba, which the CLI's
registration of `build-trees` (this package's `cli` module) must not pay for."""
import importlib

_HOMES = {"BUILDER_VERSION": "build", "SphereTreeError": "build", "build_tree": "build", "load_or_build": "build",
          "tree_key": "build", "tree_path": "build", "SphereTree": "tree", "STAND_IN": "build",
          "bounding_tree": "build", "is_cached": "build"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
