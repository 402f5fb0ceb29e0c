"""Fixtures for the SSV tests: small generated meshes and the lamp, one SSVExact over all of them."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def meshes():
    """name -> (vertices, faces): small generated meshes, convex and concave."""
    import trimesh
    out = {"ico": trimesh.creation.icosphere(subdivisions=1, radius=1.0),
           "torus": trimesh.creation.torus(major_radius=1.0, minor_radius=0.3, major_sections=12, minor_sections=6)}
    return {k: (np.asarray(m.vertices, float), np.asarray(m.faces, np.int32)) for k, m in out.items()}


@pytest.fixture(scope="session")
def models(meshes):
    """[Mesh]: ico, torus, lamp (model indices 0, 1, 2)."""
    from spaceship_sim.meshes import load_model, validate_mesh_arrays
    return [validate_mesh_arrays(v, f, name, name) for name, (v, f) in meshes.items()] + [load_model("lamp")]


@pytest.fixture(scope="session")
def ssv(models):
    from spaceship_sim.ssv.exact import SSVExact
    return SSVExact(models, cache=False)
