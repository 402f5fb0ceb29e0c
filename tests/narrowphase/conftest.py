"""Fixtures for the narrow-phase tests: small generated meshes, convex and concave."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def meshes():
    """name -> (vertices, faces): small generated meshes, convex and concave."""
    import trimesh
    out = {"ico": trimesh.creation.icosphere(subdivisions=1, radius=1.0),
           "box": trimesh.creation.box(extents=(2.0, 0.6, 1.2)),
           "torus": trimesh.creation.torus(major_radius=1.0, minor_radius=0.3, major_sections=12,
                                           minor_sections=6)}
    return {k: (np.asarray(m.vertices, float), np.asarray(m.faces, np.int32)) for k, m in out.items()}
