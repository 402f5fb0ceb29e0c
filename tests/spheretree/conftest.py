"""Fixtures for the sphere-tree tests: small generated meshes and trees built once per session."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from spaceship_sim.spheretree import build_tree


def _arrays(m):
    return np.asarray(m.vertices, np.float64), np.asarray(m.faces, np.int32)


@pytest.fixture(scope="session")
def shapes():
    """name -> (vertices (n,3), faces (m,3), closed): convex, concave (notched box, torus), open."""
    import trimesh
    box = trimesh.creation.box((2.0, 1.0, 1.0))
    cut = trimesh.creation.box((0.6, 0.6, 2.0))
    cut.apply_translation((0.5, 0.3, 0.0))
    notched = box.difference(cut)
    ico = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    torus = trimesh.creation.torus(major_radius=1.0, minor_radius=0.3, major_sections=16, minor_sections=8)
    v, f = _arrays(ico)
    keep = v[f].mean(axis=1)[:, 2] < 0.7
    return {"notched": (*_arrays(notched), True), "ico": (v, f, True), "torus": (*_arrays(torus), True),
            "open": (v, f[keep], False)}


@pytest.fixture(scope="session")
def trees(shapes):
    """(shape, method) -> SphereTree, depth 2, branching 8, seed 0."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # open-mesh warnings are tested on their own
        for name in ("notched", "torus", "open"):
            v, f, _ = shapes[name]
            for method in ("medial", "octree"):
                out[name, method] = build_tree(v, f, method=method, depth=2)
    return out
