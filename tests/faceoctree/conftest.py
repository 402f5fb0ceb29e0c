"""Fixtures for the face-octree tests: small generated meshes the project's assets do not cover
(a capsule, a torus, a thin plate)."""
from __future__ import annotations

import pytest

from spaceship_sim.meshes import validate_mesh_arrays


@pytest.fixture(scope="session")
def shapes():
    """name -> validated Mesh, each a few hundred triangles at most."""
    import trimesh
    made = {"capsule": trimesh.creation.capsule(height=2.0, radius=0.6, count=[10, 10]),
            "torus": trimesh.creation.torus(major_radius=1.0, minor_radius=0.35, major_sections=14,
                                            minor_sections=7),
            "plate": trimesh.creation.box(extents=(3.0, 2.0, 0.05))}
    return {k: validate_mesh_arrays(m.vertices, m.faces, k) for k, m in made.items()}
