"""The asteroid field's visual aids and per-face lighting data as vertex data (no GL)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.app.asteroids import BOX_COLOR, FEATURE_COLOR, PAIR_BOX_COLOR, TOUCH_COLOR, box_edges, field_lines
from spaceship_sim.app.geometry import faceted_vertices
from spaceship_sim.convex.field import ConvexPairs, polytope_mesh
from spaceship_sim.convex.polytope import random_polytope


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_box_edges_are_the_twelve_axis_parallel_edges(seed):
    rng = np.random.default_rng(seed)
    lo = rng.normal(size=(3, 3))
    hi = lo + rng.uniform(0.1, 3.0, (3, 3))
    e = box_edges(lo, hi).reshape(3, 12, 2, 3).astype(float)
    for b in range(3):
        d = e[b, :, 1] - e[b, :, 0]
        axis = np.abs(d).argmax(axis=1)
        assert np.bincount(axis, minlength=3).tolist() == [4, 4, 4]  # four edges along each axis
        assert np.allclose(np.abs(d).sum(axis=1), (hi[b] - lo[b])[axis], atol=1e-5)  # each spans the box
        corners = {tuple(np.round(p, 4)) for p in e[b].reshape(-1, 3)}
        assert len(corners) == 8 and all(np.all((c >= lo[b] - 1e-4) & (c <= hi[b] + 1e-4)) for c in corners)


class _Field:
    """Three asteroids after two ships: 2-3 in an active pair, apart; 3-4 interpenetrating."""
    count, n_ships = 3, 2
    box_lo, box_hi = np.zeros((3, 3)), np.ones((3, 3))
    last = ConvexPairs(np.array([[2, 3], [3, 4]]), np.array([False, True]), np.array([0.5, 0.0]),
                       np.array([[[0, 0, 0], [0.5, 0, 0]], [[np.nan] * 3] * 2]), np.zeros((2, 2), np.int64))


def test_field_lines_colour_boxes_by_pair_state_and_draw_separated_pairs_closest_points():
    lines = {rgba: v for v, rgba, _, _ in field_lines(_Field, True, True)}
    assert len(lines[BOX_COLOR]) == 0                         # every asteroid is in some active pair
    assert len(lines[PAIR_BOX_COLOR]) == 24                   # asteroid 2 (index 0): its pair is apart
    assert len(lines[TOUCH_COLOR]) == 48                      # asteroids 3 and 4 touch
    assert np.allclose(lines[FEATURE_COLOR], [[0, 0, 0], [0.5, 0, 0]])  # only the separated pair's segment
    assert field_lines(_Field, False, False) == []


@settings(max_examples=20, deadline=None)
@given(st.integers(8, 60), st.integers(0, 2**32 - 1))
def test_faceted_vertices_carry_each_triangles_outward_normal_and_centre(faces, seed):
    """Per-face lighting data of a convex asteroid: three unshared corners per triangle, in the
    mesh's order, each with the triangle's unit outward normal (its plane holds all three) and centre."""
    mesh = polytope_mesh(random_polytope(faces, np.random.default_rng(seed)), "rock")
    rows = faceted_vertices(mesh.vertices, mesh.faces).reshape(len(mesh.faces), 3, 9).astype(np.float64)
    corners, normal, centre = rows[..., :3], rows[..., 3:6], rows[..., 6:]
    np.testing.assert_allclose(corners, mesh.vertices[mesh.faces], atol=1e-6)
    assert (normal == normal[:, :1]).all() and (centre == centre[:, :1]).all()
    n = normal[:, 0]
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(centre[:, 0], corners.mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(((corners - centre[:, :1]) * n[:, None]).sum(axis=2), 0.0, atol=1e-5)
    heights = mesh.vertices @ n.T - (centre[:, 0] * n).sum(axis=1)  # every vertex on or below each plane
    assert heights.max() <= 1e-5 and ((centre[:, 0] * n).sum(axis=1) > 0).all()  # origin (mass centre) inside
