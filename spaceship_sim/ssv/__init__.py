"""Swept-sphere volumes (Larsen et al. 1999): SSV trees, exact collision and distance queries.

Names load on first use (numba compiles on import of the kernels)."""
import importlib

_HOMES = {"SSVExact": "exact", "DistanceAnswer": "exact", "SSVTree": "tree", "SSVBank": "tree",
          "build_ssv": "tree", "load_or_build_ssv": "tree"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
