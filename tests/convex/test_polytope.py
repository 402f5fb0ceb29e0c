"""Convex polytopes: the paper's random bodies and mesh input, checked for a consistent
vertex-edge-face structure (Euler, winding, adjacency) and the non-convex / degenerate input rules."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.convex.polytope import (NonConvexWarning, pack, polytope_from_mesh,
                                           polytope_from_points, random_polytope)
from spaceship_sim.errors import InputError

CUBE = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)


def check_structure(p):
    """Euler's formula, outward planes, edge faces wound as documented, vertex adjacency symmetric."""
    V, E, F = len(p.vertices), len(p.edges), p.n_faces
    assert V - E + F == 2
    heights = p.vertices @ p.face_normal.T - p.face_offset  # (V, F): <= 0 for a convex body
    assert heights.max() <= 1e-9 * p.radius
    for f in range(F):
        assert np.abs(heights[p.face(f), f]).max() <= 1e-9 * p.radius  # corners on their plane
    for e, (tail, head) in enumerate(p.edges):
        left, right = p.edge_faces[e]
        for face, a, b in ((left, tail, head), (right, head, tail)):
            loop = list(p.face(face))
            assert loop[(loop.index(a) + 1) % len(loop)] == b
    for v in range(V):
        for s in range(p.vert_start[v], p.vert_start[v + 1]):
            w, e = p.vert_nbrs[s], p.vert_edges[s]
            assert {v, w} == set(p.edges[e])
    assert np.abs(p.vertices.mean(axis=0)).max() < p.radius  # roughly centred (mass centre at 0)


@settings(max_examples=20, deadline=None)
@given(st.integers(8, 300), st.integers(0, 2**32 - 1))
def test_random_polytope_structure(n_faces, seed):
    p = random_polytope(n_faces, np.random.default_rng(seed))
    check_structure(p)
    assert n_faces <= p.n_faces <= n_faces + 1
    assert p.radius <= 2.0


def test_mass_centre_is_origin_and_faces_merge():
    box = polytope_from_points(CUBE * [1, 2, 3] + 5)
    check_structure(box)
    assert box.n_faces == 6 and len(box.edges) == 12
    assert np.allclose(box.vertices.mean(axis=0), 0) and box.volume == pytest.approx(6.0)


def test_nonconvex_mesh_is_hulled_with_a_warning_or_refused():
    import trimesh

    m = trimesh.creation.icosphere(1)
    v = m.vertices.copy()
    v[0] *= 0.5  # a dent
    with pytest.warns(NonConvexWarning, match="1 of 42 vertices"):
        p = polytope_from_mesh(v, m.faces, "dented.ply")
    check_structure(p)
    with pytest.raises(InputError, match="dented.ply: faces: not convex"):
        polytope_from_mesh(v, m.faces, "dented.ply", strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_structure(polytope_from_mesh(m.vertices, m.faces))  # convex: no warning


@pytest.mark.parametrize("points", [CUBE[:3], CUBE[[0, 1, 2, 3]], np.full((5, 3), np.nan)])
def test_degenerate_input_refused(points):
    with pytest.raises(InputError):
        polytope_from_points(points)


def test_face_count_range():
    with pytest.raises(InputError, match="faces: must be in 8..1000"):
        random_polytope(4, np.random.default_rng(0))


def test_pack_shifts_indices():
    rng = np.random.default_rng(1)
    a, b = random_polytope(20, rng), polytope_from_points(CUBE)
    s = pack([a, b])
    nv, nf, ne = len(a.vertices), a.n_faces, len(a.edges)
    assert np.array_equal(s.edges[ne:], b.edges + nv)
    assert np.array_equal(s.edge_faces[ne:], b.edge_faces + nf)
    assert np.array_equal(s.face_verts[len(a.face_verts):], b.face_verts + nv)
    assert np.array_equal(s.vert_nbrs[len(a.vert_nbrs):], b.vert_nbrs + nv)
    assert list(s.vert_range) == [0, nv, nv + 8] and s.max_face_size == 4
