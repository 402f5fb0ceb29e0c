"""Sphere-tree build parameters and their checks (light: no builder imports, so the CLI can
refuse bad parameters before scipy and numba load)."""
from __future__ import annotations

import numpy as np

from ..config import MAX_TREE_NODES, PREBUILT_TREE_METHODS, tree_nodes
from ..errors import InputError

METHODS = PREBUILT_TREE_METHODS
MAX_DEPTH = 6


class SphereTreeError(InputError):
    """Bad sphere-tree build parameters or mesh; str() names the source and the field."""


def _check_params(method, branching, depth, seed, source="build_tree"):
    if method not in METHODS:
        raise SphereTreeError(source, "method", f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    for name, val, lo, hi in (("branching", branching, 2, 64), ("depth", depth, 1, MAX_DEPTH),
                              ("seed", seed, 0, 2**63 - 1)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
            raise SphereTreeError(source, name, f"must be an integer, got {val!r}")
        if not lo <= int(val) <= hi:
            raise SphereTreeError(source, name, f"must be in {lo}..{hi}, got {val}")
    nodes = tree_nodes(branching if method == "medial" else 8, depth)  # the octree is always 8-way
    if nodes > MAX_TREE_NODES:
        raise SphereTreeError(source, "branching", f"{branching} children over {depth} levels would need "
                              f"{nodes:.3g} spheres per tree, limit {MAX_TREE_NODES}")
