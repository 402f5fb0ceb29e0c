"""Camera math and renderer geometry (numpy only, no GL)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spaceship_sim.app import geometry
from spaceship_sim.app.camera import Camera, action_focus, look_at, perspective, project
from spaceship_sim.state import quat_to_matrix

vec = st.tuples(*[st.floats(-100, 100)] * 3).map(np.array)


@settings(max_examples=40, deadline=None)
@given(vec, vec)
def test_look_at_target_projects_to_the_centre(eye, target):
    if np.linalg.norm(target - eye) < 1e-3:
        return
    view = look_at(eye, target, [0.0, 0.0, 1.0])
    assert np.allclose(view[:3, :3] @ view[:3, :3].T, np.eye(3), atol=1e-9)  # rotation
    px, front = project(target[None], perspective(60, 16 / 9, 0.1, 1000) @ view, 1280, 720)
    assert front[0] and np.allclose(px[0], [640, 360], atol=1e-6)


def test_project_matches_a_hand_computed_point():
    # camera at the origin looking down -z; a point 1 m right and 10 m ahead, 90 degree fov
    vp = perspective(90, 1.0, 0.1, 100) @ look_at([0, 0, 0], [0, 0, -1], [0, 1, 0])
    px, front = project(np.array([[1.0, 0.0, -10.0], [0.0, 0.0, 5.0]]), vp, 200, 200)
    assert np.allclose(px[0], [100 + 100 * 0.1, 100]) and front[0] and not front[1]


def test_chase_camera_sits_behind_the_ship_and_looks_along_its_nose():
    q = np.array([[np.cos(0.4), 0, 0, np.sin(0.4)]])  # yawed 0.8 rad about z
    pos, radius = np.array([[10.0, -5.0, 3.0]]), np.array([8.0])
    cam = Camera("chase")
    cam.update(pos, q, radius, 300.0, 1 / 30)
    nose = quat_to_matrix(q[0])[:, 0]
    look = cam.target - cam.eye
    assert np.dot(pos[0] - cam.eye, nose) > 0          # ship is ahead of the camera
    assert np.dot(look / np.linalg.norm(look), nose) > 0.9
    cam.toggle()
    assert cam.mode == "orbit"
    cam.toggle()
    assert cam.mode == "chase"


def test_action_focus_is_the_closest_pair():
    pos = np.array([[0.0, 0, 0], [100, 0, 0], [103, 0, 0], [300, 0, 0]])
    centre, span, pair = action_focus(pos, np.ones(4))
    assert np.allclose(centre, [101.5, 0, 0]) and span == 5.0 and pair == (1, 2)
    centre, span, pair = action_focus(pos, np.ones(4), colliding=np.array([[0, 3]]))  # a collision first
    assert np.allclose(centre, [150, 0, 0]) and span == 302.0 and pair == (0, 3)
    hits = np.array([[0, 3], [1, 2]])
    assert action_focus(pos, np.ones(4), hits, current=(1, 2))[2] == (1, 2)  # stays on its colliding pair
    assert action_focus(pos, np.ones(4), hits, follow=(0, 1))[2] == (0, 1)   # a picked pair wins


def test_action_camera_stays_on_a_pair_nearly_as_close_as_the_closest():
    pos = np.array([[0.0, 0, 0], [10, 0, 0], [100, 0, 0], [111, 0, 0], [300, 0, 0]])
    r = np.ones(5)  # gaps: 0-1 8 m, 2-3 9 m, others far
    assert action_focus(pos, r)[2] == (0, 1)
    assert action_focus(pos, r, current=(2, 3))[2] == (2, 3)   # 9 <= 1.2 * 8 + 2: no swing
    pos[3, 0] = 130  # 2-3 now 28 m apart: the closer pair takes over
    assert action_focus(pos, r, current=(2, 3))[2] == (0, 1)


def test_rings_and_stars():
    r = geometry.rings(16)
    assert r.shape == (3 * 16 * 2, 3) and np.allclose(np.linalg.norm(r, axis=1), 1, atol=1e-6)
    s = geometry.starfield(100, seed=1)
    assert s.shape == (100, 4) and np.allclose(np.linalg.norm(s[:, :3], axis=1), 1, atol=1e-6)
    assert np.array_equal(s, geometry.starfield(100, seed=1))


class _Tree:
    """Just what the drawing helpers read from a SphereTree: node arrays + level()."""

    def __init__(self, rng, depth=2, per_level=(1, 3, 7)):
        self.depth = depth
        self.level_start = np.concatenate([[0], np.cumsum(per_level)])
        self.center = rng.normal(size=(self.level_start[-1], 3))
        self.radius = rng.random(self.level_start[-1]) + 0.1
        self.witness = self.center + rng.normal(size=self.center.shape) * 0.1
        self.error = rng.random(self.level_start[-1]) * 3

    def level(self, k):
        s = slice(self.level_start[k], self.level_start[k + 1])
        return self.center[s], self.radius[s], np.zeros_like(self.radius[s])


def _ships(rng, n, n_models):
    from spaceship_sim.state import ShipState
    s = ShipState.zeros(n)
    s.pos = rng.normal(size=(n, 3)) * 50
    q = rng.normal(size=(n, 4))
    s.quat = q / np.linalg.norm(q, axis=1, keepdims=True)
    s.model_id = rng.integers(0, n_models, n).astype(np.int32)
    return s


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(0, 3))
def test_level_spheres_match_a_per_ship_loop(seed, n, level):
    rng = np.random.default_rng(seed)
    trees = [_Tree(rng), _Tree(rng, depth=1, per_level=(1, 4))]
    s = _ships(rng, n, len(trees))
    R = quat_to_matrix(s.quat)
    got = geometry.level_spheres(s, R, trees, level)
    expected = []
    for m, tree in enumerate(trees):  # same order: by model, then by ship
        for i in range(n):
            if s.model_id[i] == m:
                c, r, _ = tree.level(min(level, tree.depth))
                expected += [[*(R[i] @ ci + s.pos[i]), ri] for ci, ri in zip(c, r)]
    assert np.allclose(got, np.array(expected).reshape(-1, 4), atol=1e-4)


def test_hit_geometry_places_colliding_nodes_and_triangles_in_the_world():
    from types import SimpleNamespace
    rng = np.random.default_rng(3)
    trees = [_Tree(rng)]
    mesh = SimpleNamespace(vertices=rng.normal(size=(6, 3)), faces=np.array([[0, 1, 2], [3, 4, 5]]))
    s = _ships(rng, 3, 1)
    R = quat_to_matrix(s.quat)
    narrow = SimpleNamespace(pairs=np.array([[0, 2], [1, 2]]), colliding=np.array([True, False]),
                             level=np.array([2, 1]), separation_bound=np.array([0.5, np.inf]),
                             contact_point=np.zeros((2, 3)),
                             sphere_pairs=[np.array([[4, 5], [4, 6]]), np.zeros((0, 2), int)],
                             tri_pairs=[np.array([[1, 0]]), np.zeros((0, 2), int)])
    hits = geometry.hit_geometry(s, R, trees, [mesh], narrow)
    t = trees[0]
    expected_spheres = [[*(R[0] @ t.center[4] + s.pos[0]), t.radius[4]]] + \
        [[*(R[2] @ t.center[k] + s.pos[2]), t.radius[k]] for k in (5, 6)]
    assert np.allclose(hits.spheres, expected_spheres) and list(hits.levels) == [2, 2, 2]
    expected_tris = np.concatenate([mesh.vertices[[3, 4, 5]] @ R[0].T + s.pos[0],
                                    mesh.vertices[[0, 1, 2]] @ R[2].T + s.pos[2]])
    assert np.allclose(hits.triangles, expected_tris)
    # the segment joins the witnesses of the sphere pair with the smallest min(e_a + e_b, |w_a - w_b|)
    bounds = [min(t.error[4] + t.error[b], np.linalg.norm(R[0] @ t.witness[4] + s.pos[0]
                                                          - R[2] @ t.witness[b] - s.pos[2])) for b in (5, 6)]
    b = (5, 6)[int(np.argmin(bounds))]
    expected_segment = [R[0] @ t.witness[4] + s.pos[0], R[2] @ t.witness[b] + s.pos[2]]
    assert np.allclose(hits.segments, [expected_segment])
    (point, text, level), = hits.labels
    assert np.allclose(point, np.mean(expected_segment, 0)) and text == "0-2 sep <= 0.50 m" and level == 2
    narrow.bound_pairs = np.array([[4, (11 - b)], [-1, -1]])  # the bound from the other pair (an ancestor)
    other = [R[0] @ t.witness[4] + s.pos[0], R[2] @ t.witness[11 - b] + s.pos[2]]
    assert np.allclose(geometry.hit_geometry(s, R, trees, [mesh], narrow).segments, [other])
    narrow.separation_bound[0] = 0.0  # intersecting triangles: a label at the contact, no segment
    touching = geometry.hit_geometry(s, R, trees, [mesh], narrow)
    assert len(touching.segments) == 0 and touching.labels[0][1] == "0-2 touching"
    assert geometry.hit_geometry(s, R, trees, [mesh], None) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_frustum_culling_never_drops_a_visible_sphere(seed):
    rng = np.random.default_rng(seed)
    vp = perspective(60, 16 / 9, 0.5, 500) @ look_at(rng.normal(size=3) * 20, rng.normal(size=3) * 20, [0, 0, 1])
    centers, radii = rng.normal(size=(40, 3)) * 80, rng.random(40) * 20 + 0.1
    keep = geometry.in_frustum(centers, radii, vp)
    # reference: sample points of each ball; any point inside the clip volume makes it visible
    d = rng.normal(size=(400, 3))
    d *= (rng.random(400) ** (1 / 3) / np.linalg.norm(d, axis=1))[:, None]
    for c, r, k in zip(centers, radii, keep):
        p = np.c_[c + r * d, np.ones(400)] @ vp.T
        inside = np.all(np.abs(p[:, :3]) <= p[:, 3:4], axis=1) & (p[:, 3] > 0)
        assert k or not inside.any()
    # and it does cull: spheres far behind the camera are dropped
    eye_vp = perspective(60, 1, 0.5, 500) @ look_at([0, 0, 0], [1, 0, 0], [0, 0, 1])
    assert not geometry.in_frustum(np.array([[-100.0, 0, 0]]), np.array([5.0]), eye_vp)[0]
    assert geometry.in_frustum(np.array([[100.0, 0, 0]]), np.array([5.0]), eye_vp)[0]


def test_action_camera_frames_both_ships_of_the_followed_pair():
    rng = np.random.default_rng(3)
    pos = rng.uniform(-200, 200, (8, 3))
    radius = rng.uniform(2, 12, 8)
    quat = np.tile([1.0, 0, 0, 0], (8, 1))
    directions = rng.normal(size=(500, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    for width, height, pair in ((1280, 720, (2, 5)), (600, 800, (1, 7)), (800, 600, (0, 3))):
        camera = Camera("action")
        camera.follow, camera.aspect = pair, width / height
        camera.update(pos, quat, radius, 400.0, 1 / 30, colliding=np.array([[4, 6]]))  # the followed pair wins
        view_proj = camera.projection(width / height) @ camera.view()
        surface = np.concatenate([pos[i] + radius[i] * directions for i in pair])
        px, front = project(surface, view_proj, width, height)
        assert front.all()
        assert (px >= 0).all() and (px[:, 0] <= width).all() and (px[:, 1] <= height).all(), (width, height)
        # the sphere holding both fills most of the view's narrower side: the pair is not a speck
        i, j = pair
        span = np.linalg.norm(pos[i] - pos[j]) + radius[i] + radius[j]
        px, _ = project((pos[i] + pos[j]) / 2 + span / 2 * directions, view_proj, width, height)
        extent = px.max(0) - px.min(0)
        narrower = extent[0] / width if width < height else extent[1] / height
        assert narrower > 0.6, (narrower, width, height)
        assert (px >= 0).all() and (px[:, 0] <= width).all() and (px[:, 1] <= height).all()
