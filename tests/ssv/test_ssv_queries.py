"""SSV queries against brute force: collide = all intersecting triangle pairs; distance = the
smallest triangle–triangle distance, its closest points on the two surfaces; tolerances honoured;
priority search, triangle caching and any thread count give the same answers."""
import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.narrowphase.exact import BruteForceExact
from spaceship_sim.geometry.reference import closest_point_triangle
from spaceship_sim.narrowphase.reference import world_triangles
from spaceship_sim.geometry.triangles import distance_triangle_triangle

SETTINGS = settings(max_examples=8, deadline=None)
SEEDS = st.integers(0, 2**32 - 1)
MODEL = st.sampled_from([0, 1, 2])  # ico, torus, lamp (conftest.models)


def _rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _poses(rng, models, a, b, k, reach=2.2):
    """(Ta, Tb) (k, 4, 4): A anywhere, B at a random orientation, centres up to reach x the sum of
    the bounding radii apart (about half the poses intersect)."""
    T = np.tile(np.eye(4), (2, k, 1, 1))
    for i in range(k):
        for s in range(2):
            T[s, i, :3, :3] = _rotation(rng)
        T[0, i, :3, 3] = rng.normal(size=3)
        d = rng.normal(size=3)
        span = models[a].bounding_radius + models[b].bounding_radius
        T[1, i, :3, 3] = T[0, i, :3, 3] + d / np.linalg.norm(d) * span * reach * rng.uniform(0.05, 1) / 2
    return T[0], T[1]


def _brute_distance(models, a, b, Ta, Tb, upto):
    """Smallest triangle–triangle distance among the pairs whose boxes are within `upto` (all pairs
    that could be closer than upto), and the pair: (d, i, j)."""
    A, B = world_triangles(models[a].vertices, models[a].faces, Ta), world_triangles(models[b].vertices, models[b].faces, Tb)
    gap = np.maximum(0, np.maximum(A.min(1)[:, None] - B.max(1)[None], B.min(1)[None] - A.max(1)[:, None]))
    ia, ib = np.nonzero(np.sqrt((gap ** 2).sum(2)) <= upto)
    out = np.empty((2, 3))
    d = [distance_triangle_triangle(A[i], B[j], out) for i, j in zip(ia, ib)]
    return min(d, default=np.inf), A, B


def _pair(k, a, b):
    return np.full(k, a, np.int64), np.full(k, b, np.int64)


@SETTINGS
@given(SEEDS, MODEL, MODEL, st.booleans())
def test_collide_equals_brute_force(ssv, models, seed, a, b, all_contacts):
    Ta, Tb = _poses(np.random.default_rng(seed), models, a, b, 4)
    ma, mb = _pair(4, a, b)
    got = ssv.collide(ma, mb, Ta, Tb, all_contacts)
    want = BruteForceExact(models).collide(ma, mb, Ta, Tb, True)
    assert np.array_equal(got.colliding, want.colliding)
    for i in range(4):
        g = {tuple(p) for p in got.pairs_of(i).tolist()}
        w = {tuple(p) for p in want.pairs_of(i).tolist()}
        assert g == w if all_contacts else (len(g) == min(len(w), 1) and g <= w)
    assert np.all(got.distance[got.colliding] == 0) and np.all(got.distance[~got.colliding] > 0)


@SETTINGS
@given(SEEDS, MODEL, MODEL)
def test_distance_equals_brute_force_with_closest_points_on_the_surfaces(ssv, models, seed, a, b):
    Ta, Tb = _poses(np.random.default_rng(seed), models, a, b, 3, reach=3.0)
    got = ssv.distance(*_pair(3, a, b), Ta, Tb)
    for i in range(3):
        d = got.distance[i]
        want, A, B = _brute_distance(models, a, b, Ta[i], Tb[i], d * (1 + 1e-9) + 1e-12)
        assert abs(d - want) <= 1e-9 * max(want, 1e-300) + 1e-15
        if d > 0:
            pa, pb = got.points[i]
            fa, fb = got.tri[i]
            assert abs(np.linalg.norm(pa - pb) - d) <= 1e-9 * d
            for p, tri in ((pa, A[fa]), (pb, B[fb])):
                assert np.linalg.norm(closest_point_triangle(p[None], tri[None])[0] - p) <= 1e-9 * max(1.0, d)
        # the exact answer agrees with collide's
        assert (d == 0) == ssv.collide(*_pair(1, a, b), Ta[i:i + 1], Tb[i:i + 1]).colliding[0]


@SETTINGS
@given(SEEDS, MODEL, st.sampled_from([0.01, 0.1, 0.5]), st.sampled_from([0.0, 0.05]))
def test_approximate_distance_within_tolerance(ssv, models, seed, a, rel, abs_tol):
    Ta, Tb = _poses(np.random.default_rng(seed), models, a, a, 4, reach=3.0)
    exact = ssv.distance(*_pair(4, a, a), Ta, Tb).distance
    approx = ssv.distance(*_pair(4, a, a), Ta, Tb, rel=rel, abs_tol=abs_tol)
    assert np.all(approx.distance >= exact * (1 - 1e-12))
    assert np.all(approx.distance <= np.maximum(exact * (1 + rel), exact + abs_tol) * (1 + 1e-12) + 1e-15)


@SETTINGS
@given(SEEDS, MODEL, st.floats(0.5, 1.5))
def test_tolerance_query_is_distance_below(ssv, models, seed, a, factor):
    Ta, Tb = _poses(np.random.default_rng(seed), models, a, a, 4, reach=3.0)
    exact = ssv.distance(*_pair(4, a, a), Ta, Tb).distance
    d = exact * factor + (exact == 0) * 0.01
    assert np.array_equal(ssv.closer_than(*_pair(4, a, a), Ta, Tb, d), exact <= d)


@SETTINGS
@given(SEEDS, MODEL, MODEL)
def test_priority_search_and_triangle_caching_give_the_exact_distance(ssv, models, seed, a, b):
    rng = np.random.default_rng(seed)
    Ta, Tb = _poses(rng, models, a, b, 4, reach=3.0)
    exact = ssv.distance(*_pair(4, a, b), Ta, Tb)
    assert np.array_equal(ssv.distance(*_pair(4, a, b), Ta, Tb, priority=True).distance, exact.distance)
    # last frame's closest pair (here: any random pair) seeds the query; the answer stays exact
    seed_tris = np.stack([rng.integers(0, len(models[a].faces), 4), rng.integers(0, len(models[b].faces), 4)], 1)
    for seed_ in (exact.tri, seed_tris):
        for priority in (False, True):
            got = ssv.distance(*_pair(4, a, b), Ta, Tb, seed=seed_, priority=priority)
            assert np.array_equal(got.distance, exact.distance)


@SETTINGS
@given(SEEDS, MODEL, MODEL, st.sampled_from([0.0, 0.1]), st.booleans())
def test_distance_rows_that_outgrow_their_room_are_rerun_to_the_same_answer(ssv, models, seed, a, b, rel, priority):
    Ta, Tb = _poses(np.random.default_rng(seed), models, a, b, 4, reach=3.0)
    want = ssv.distance(*_pair(4, a, b), Ta, Tb, rel=rel, priority=priority)
    room, ssv.room = ssv.room, 1  # a row overflows at its first pending pair: rerun with 2, 4, ... pairs of room
    try:
        got = ssv.distance(*_pair(4, a, b), Ta, Tb, rel=rel, priority=priority)
    finally:
        ssv.room = room
    for x, y in ((got.distance, want.distance), (got.tri, want.tri), (got.points, want.points)):
        assert np.array_equal(x, y, equal_nan=True)


def test_parallel_equals_serial(ssv, models):
    rng = np.random.default_rng(7)
    Ta, Tb = _poses(rng, models, 2, 2, 64)
    ma, mb = _pair(64, 2, 2)
    runs = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        try:
            c = ssv.collide(ma, mb, Ta, Tb, True)
            d = ssv.distance(ma, mb, Ta, Tb, rel=0.1)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        runs.append((c.colliding, c.tri_ptr, c.tri_a, c.tri_b, c.distance, d.distance, d.tri, d.points))
    for x, y in zip(*runs):
        assert np.array_equal(x, y, equal_nan=True)


def test_sphere_tree_separation_bound_is_above_the_exact_distance(ssv, models):
    from spaceship_sim.narrowphase import TreeBank, refine_frame
    from spaceship_sim.spheretree import load_or_build

    lamp = models[2]
    bank = TreeBank.from_trees([load_or_build(lamp, method="medial")])
    Ta, Tb = _poses(np.random.default_rng(3), models, 2, 2, 40)
    T = np.stack([Ta, Tb], 1).reshape(-1, 4, 4)
    pairs = np.arange(80).reshape(40, 2)
    exact = ssv.distance(*_pair(40, 2, 2), Ta, Tb).distance
    for level in range(4):
        r = refine_frame(bank, np.zeros(80, np.int64), T, pairs, deadline=np.inf, min_level=0, max_level=level,
                         exact=False)
        assert np.all(r.separation_bound[r.colliding] >= exact[r.colliding] * (1 - 1e-12))
        assert np.all(exact[~r.colliding] > 0)  # found apart by the spheres: apart


def test_bad_arguments_are_refused(ssv):
    with pytest.raises(ValueError, match="model indices"):
        ssv.collide([0], [9], np.eye(4)[None], np.eye(4)[None])
    with pytest.raises(ValueError, match="tolerances"):
        ssv.distance([0], [0], np.eye(4)[None], np.eye(4)[None], rel=-1)
