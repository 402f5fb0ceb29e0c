"""Lin–Canny closest features against the brute-force search over all face pairs, and that search
against independent oracles (scipy's QP for the distance, an LP for intersection): random polytopes
at random poses, coherent pose sequences, touching and degenerate configurations."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy.optimize import linprog, minimize
from scipy.spatial.transform import Rotation

from spaceship_sim.convex.closest import (MAX_ITER, PENETRATING, Closest, _support_vertex, closest_features,
                                          feature_name,
                                          walk_pairs, walk_scratch)
from spaceship_sim.convex.polytope import pack, polytope_from_points, random_polytope

CUBE = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
FACES = st.sampled_from([8, 20, 36, 60, 200])
SEEDS = st.integers(0, 2**32 - 1)


def random_pair(rng, faces_a, faces_b, gap_scale):
    """Two random polytopes; body 1 at a random direction, centre distance gap_scale * (r0 + r1)."""
    s = pack([random_polytope(faces_a, rng), random_polytope(faces_b, rng)])
    rot = Rotation.random(2, random_state=rng).as_matrix()
    pos = np.zeros((2, 3))
    d = rng.normal(size=3)
    pos[1] = d / np.linalg.norm(d) * gap_scale * s.radius.sum()
    return s, rot, pos


def world_vertices(s, rot, pos, b):
    return s.vertices[s.vert_range[b]:s.vert_range[b + 1]] @ rot[b].T + pos[b]


def agree(fast, ref, scale, tol=1e-7):
    """Same verdict and distance, verdicts free within tol of touching."""
    if ref.penetrating or ref.distance <= tol * scale:
        assert fast.penetrating or fast.distance <= tol * scale, (fast, ref)
    else:
        assert not fast.penetrating, (fast, ref)
        assert fast.distance == pytest.approx(ref.distance, rel=1e-9, abs=1e-9 * scale)


def check_witnesses(s, rot, pos, c, pair=(0, 1)):
    """The closest points lie on (or within) bodies pair = (a, b) and are c.distance apart."""
    if c.penetrating:
        return
    assert np.linalg.norm(c.points[0] - c.points[1]) == pytest.approx(c.distance, rel=1e-9, abs=1e-12)
    for b, p in zip(pair, c.points):
        q = (p - pos[b]) @ rot[b]  # body frame
        f0, f1 = s.face_range[b], s.face_range[b + 1]
        assert (s.face_normal[f0:f1] @ q - s.face_offset[f0:f1]).max() <= 1e-9 * s.radius[b]


@settings(max_examples=60, deadline=None)
@given(FACES, FACES, st.floats(0.3, 1.6), SEEDS)
def test_cold_start_equals_brute_force(faces_a, faces_b, gap_scale, seed):
    s, rot, pos = random_pair(np.random.default_rng(seed), faces_a, faces_b, gap_scale)
    fast = closest_features(s, rot, pos, 0, 1)
    agree(fast, closest_features(s, rot, pos, 0, 1, brute=True), s.radius.sum())
    check_witnesses(s, rot, pos, fast)
    assert not fast.fell_back


@settings(max_examples=15, deadline=None)
@given(FACES, FACES, SEEDS)
def test_coherent_sequences_equal_brute_force(faces_a, faces_b, seed):
    """A tumbling approach, contact and retreat; each frame walks from the last frame's features
    (the caller's dict keyed by pair), and matches a cold start and brute force."""
    rng = np.random.default_rng(seed)
    s, rot, pos = random_pair(rng, faces_a, faces_b, 1.5)
    spin = Rotation.from_rotvec(rng.normal(size=(2, 3)) * 0.15).as_matrix()
    state, steps = {}, []
    for frame in range(40):
        rot = np.einsum("bij,bjk->bik", rot, spin)
        pos[1] *= 0.96 if frame < 25 else 1.06
        warm = closest_features(s, rot, pos, 0, 1, start=state.get((0, 1)))
        state[(0, 1)] = warm.features
        agree(warm, closest_features(s, rot, pos, 0, 1, brute=True), s.radius.sum())
        agree(warm, closest_features(s, rot, pos, 0, 1), s.radius.sum())
        assert not warm.fell_back
        steps.append(warm.steps)
    assert np.mean(steps[1:]) < 10  # coherence: a few steps a frame, not a walk across the body


@settings(max_examples=8, deadline=None)
@given(FACES, FACES, st.floats(0.3, 1.4), SEEDS)
def test_brute_force_against_qp_and_lp(faces_a, faces_b, gap_scale, seed):
    s, rot, pos = random_pair(np.random.default_rng(seed), faces_a, faces_b, gap_scale)
    A, B = world_vertices(s, rot, pos, 0), world_vertices(s, rot, pos, 1)
    ref = closest_features(s, rot, pos, 0, 1, brute=True)
    assert ref.penetrating == hulls_intersect(A, B)
    if not ref.penetrating:
        assert ref.distance == pytest.approx(qp_distance(A, B), rel=1e-4, abs=1e-6)


def hulls_intersect(A, B) -> bool:
    """LP: is there lambda, mu >= 0 summing to 1 with A^T lambda = B^T mu?"""
    na, nb = len(A), len(B)
    eq = np.zeros((5, na + nb))
    eq[:3, :na], eq[:3, na:] = A.T, -B.T
    eq[3, :na], eq[4, na:] = 1, 1
    return linprog(np.zeros(na + nb), A_eq=eq, b_eq=[0, 0, 0, 1, 1], bounds=(0, None)).status == 0


def qp_distance(A, B) -> float:
    """min |A^T lambda - B^T mu| over the two simplices, SLSQP."""
    na = len(A)
    f = lambda x: np.sum((A.T @ x[:na] - B.T @ x[na:]) ** 2)  # noqa: E731
    cons = [{"type": "eq", "fun": lambda x: x[:na].sum() - 1}, {"type": "eq", "fun": lambda x: x[na:].sum() - 1}]
    x0 = np.concatenate([np.full(na, 1 / na), np.full(len(B), 1 / len(B))])
    res = minimize(f, x0, constraints=cons, bounds=[(0, 1)] * len(x0), method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 500})
    return float(np.sqrt(res.fun))


def cubes(offset, rot_b=np.eye(3)):
    """Two axis-aligned 2 m cubes, the second at `offset`."""
    s = pack([polytope_from_points(CUBE), polytope_from_points(CUBE)])
    return s, np.stack([np.eye(3), rot_b]), np.array([[0.0, 0, 0], offset])


@pytest.mark.parametrize("offset, distance", [
    ((3.0, 0, 0), 1.0),             # parallel faces, full overlap
    ((3.0, 0.5, 0.25), 1.0),        # parallel faces, partial overlap
    ((3.0, 2.0, 0), 1.0),           # parallel faces meeting along an edge
    ((3.0, 3.0, 0), np.sqrt(2)),    # parallel edges
    ((3.0, 3.0, 3.0), np.sqrt(3)),  # coincident directions: vertex to vertex
    ((2.0, 0, 0), 0.0),             # touching faces
    ((2.0, 2.0, 2.0), 0.0),         # touching vertices
    ((1.0, 0.3, 0), 0.0),           # deep
    ((0.0, 0, 0), 0.0),             # coincident bodies
])
@pytest.mark.parametrize("start", [None, (0, 3 * 15), (3 * 5 + 2, 3 * 9 + 2), (3 * 3 + 1, 3 * 20 + 1)])
def test_degenerate_cube_pairs_do_not_cycle(offset, distance, start):
    s, rot, pos = cubes(offset)
    c = closest_features(s, rot, pos, 0, 1, start=start)
    assert not c.fell_back and c.steps < 20
    assert c.penetrating == (distance == 0.0)
    assert c.distance == pytest.approx(distance, abs=1e-12)
    check_witnesses(s, rot, pos, c)


def test_rotated_cube_edge_on_face():
    """An edge of a cube turned 45 degrees about z, parallel to the other's face."""
    s, rot, pos = cubes((1 + np.sqrt(2) + 0.5, 0, 0), Rotation.from_euler("z", 45, degrees=True).as_matrix())
    c = closest_features(s, rot, pos, 0, 1)
    assert not c.penetrating and c.distance == pytest.approx(0.5, abs=1e-12) and not c.fell_back
    assert feature_name(c.features[1]).startswith(("edge", "vertex"))


def test_iteration_cap_falls_back_to_brute_force():
    s, rot, pos = random_pair(np.random.default_rng(5), 200, 200, 1.1)
    capped = closest_features(s, rot, pos, 0, 1, max_iter=1)
    full = closest_features(s, rot, pos, 0, 1)
    assert capped.fell_back and not full.fell_back
    agree(capped, full, s.radius.sum())


@settings(max_examples=40, deadline=None)
@given(FACES, SEEDS, st.sampled_from(["random", "axis", "cube-axis", "cube-diagonal"]))
def test_support_vertex_is_the_extreme_vertex(faces, seed, how):
    """A new pair's cold start: the hill-climbed vertex furthest towards the other centre is the
    brute-force maximum (ties, e.g. a cube's face turned to the other body, accept any tied vertex)."""
    rng = np.random.default_rng(seed)
    cube = how.startswith("cube")
    s = pack([polytope_from_points(CUBE) if cube else random_polytope(faces, rng), random_polytope(8, rng)])
    rot = np.stack([np.eye(3) if how != "random" else Rotation.random(random_state=rng).as_matrix(), np.eye(3)])
    direction = {"random": rng.normal(size=3), "axis": np.array([0.0, 0, 1]), "cube-axis": np.array([1.0, 0, 0]),
                 "cube-diagonal": np.array([1.0, 1, 0])}[how]
    pos = np.stack([np.zeros(3), 5.0 * direction])
    v = _support_vertex(s.kernel_args(), rot, pos, 0, 1)
    heights = world_vertices(s, rot, pos, 0) @ direction
    assert s.vert_range[0] <= v < s.vert_range[1]
    assert heights[v] >= heights.max() - 1e-12


def random_bodies(rng, n, faces, spread):
    """n random polytopes at random poses in a cube of side spread * (mean radius): some pairs
    overlap, some are apart; no body sits at the origin (the walk runs in body A's frame)."""
    s = pack([random_polytope(faces, rng) for _ in range(n)])
    rot = Rotation.random(n, random_state=rng).as_matrix()
    pos = rng.uniform(-0.5, 0.5, (n, 3)) * spread * s.radius.mean() + rng.normal(size=3) * 50
    return s, rot, pos


def walk_all(s, rot, pos, pairs, brute, scratch, feats=None):
    """walk_pairs over pairs (P, 2) int32 from feats (None: cold start); every output, by name."""
    k = len(pairs)
    out = {"feats": np.full((k, 2), -1, np.int64) if feats is None else feats.copy(), "dist": np.empty(k),
           "status": np.empty(k, np.int8), "points": np.empty((k, 2, 3))}
    out["steps"], out["fallbacks"] = walk_pairs(s.kernel_args(), s.radius, rot, pos, pairs, out["feats"], MAX_ITER,
                                                brute, out["dist"], out["status"], out["points"], scratch)
    return out


def all_pairs(n):
    """Every ordered pair a != b, (n (n - 1), 2) int32: both bodies play A."""
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    return np.stack([a, b], axis=1).astype(np.int32)


def answer(out, p):
    """Pair p of a `walk_all` result as a Closest."""
    return Closest(float(out["dist"][p]), bool(out["status"][p] == PENETRATING), tuple(out["feats"][p]),
                   out["points"][p], 0, False)


@settings(max_examples=25, deadline=None)
@given(FACES, st.floats(1.5, 8.0), SEEDS)
def test_walk_pairs_equal_brute_force_at_random_poses(faces, spread, seed):
    """Many pairs in one call, both bodies away from the origin and turned, either body as A."""
    rng = np.random.default_rng(seed)
    s, rot, pos = random_bodies(rng, 6, faces, spread)
    pairs = all_pairs(6)
    fast, ref = (walk_all(s, rot, pos, pairs, brute, walk_scratch(s)) for brute in (False, True))
    assert fast["fallbacks"] == 0
    for p, pair in enumerate(pairs):
        agree(answer(fast, p), answer(ref, p), s.radius[pair].sum())
        check_witnesses(s, rot, pos, answer(fast, p), pair)


@settings(max_examples=30, deadline=None)
@given(FACES, FACES, st.sampled_from([-1e-6, 0.0, 1e-6]), SEEDS)
@example(200, 20, 0.0, 3762)  # an edge of B's closest vertex sloping ~1e-4 towards A: missed when the
@example(200, 20, -1e-6, 3762)  # vertex's Voronoi planes had an absolute tolerance (closest.py docstring)
@example(36, 200, -1e-6, 4291660857)
def test_touching_barely_apart_and_barely_overlapping(faces_a, faces_b, push, seed):
    """B slid along the closest points' segment until the bodies touch (push 0), stay 1e-6 of the
    gap apart (push < 0) or pass each other's closest points by as much (push > 0), then both
    moved by one random rigid motion: brute force sees that, and the walk, cold or from the apart pose's features, agrees."""
    rng = np.random.default_rng(seed)
    s, rot, pos = random_pair(rng, faces_a, faces_b, 1.4)
    apart = closest_features(s, rot, pos, 0, 1, brute=True)
    pos[1] -= (apart.points[1] - apart.points[0]) * (1 + push)
    turn, shift = Rotation.random(random_state=rng).as_matrix(), rng.normal(size=3) * 30
    rot, pos = turn @ rot, pos @ turn.T + shift
    ref = closest_features(s, rot, pos, 0, 1, brute=True)
    if push < 0:
        assert not ref.penetrating and ref.distance == pytest.approx(-push * apart.distance, rel=1e-6)
    elif push > 0:  # B's closest point now lies push * gap past A's: the bodies overlap, or, where a
        # sharp vertex or edge leaves the segment's extension outside the other body, are at most that far apart
        assert ref.penetrating or ref.distance <= push * apart.distance * (1 + 1e-6) + 1e-12
    for start in (None, apart.features):
        fast = closest_features(s, rot, pos, 0, 1, start=start)
        assert not fast.fell_back
        agree(fast, ref, s.radius.sum())
        check_witnesses(s, rot, pos, fast)


@settings(max_examples=20, deadline=None)
@given(FACES, st.sampled_from([np.nan, np.inf, -1e300, 1.0]), st.booleans(), SEEDS)
def test_stale_scratch_never_changes_an_answer(faces, junk, brute, seed):
    """The kernels write every scratch entry before reading it: a scratch full of junk, or left
    from a call over other bodies with bigger faces, gives the answers of a zeroed one, bit for bit."""
    rng = np.random.default_rng(seed)
    s, rot, pos = random_bodies(rng, 5, faces, 3.0)
    pairs = all_pairs(5)
    fresh = walk_all(s, rot, pos, pairs, brute, np.zeros_like(walk_scratch(s)))
    o, o_rot, o_pos = random_bodies(rng, 3, 200, 2.0)
    used = walk_scratch(o)
    walk_all(o, o_rot, o_pos, all_pairs(3), brute, used)
    apart = fresh["status"] != PENETRATING
    for scratch in (np.full_like(walk_scratch(s), junk), used):
        got = walk_all(s, rot, pos, pairs, brute, scratch)
        for key in ("feats", "dist", "status", "steps", "fallbacks"):
            assert np.array_equal(got[key], fresh[key]), key
        assert np.array_equal(got["points"][apart], fresh["points"][apart])


def test_scratch_too_small_is_refused():
    s, rot, pos = random_bodies(np.random.default_rng(0), 2, 36, 3.0)
    with pytest.raises(ValueError, match="scratch too small"):
        walk_all(s, rot, pos, all_pairs(2), False, np.empty((4, 3)))
