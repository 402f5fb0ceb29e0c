"""Segment–segment closest points (geometry.segments) against the exact rational oracle
(geometry.reference.segment_distance_ref), on random, nearly parallel, parallel, crossing and
degenerate (point) segments.

The kernel is the one behind the triangle distance, the Lin–Canny walk's feature pairs and the SSV
cores' edge pairs. Its nearly parallel branch (the cross-product form) keeps the distance to a few
ulps of the coordinates at every angle: the plain lines' solution lost up to 1e-8 of the segments'
length there (1e-7 with a zero-s fallback under sin^2 < 1e-14).
"""
import numpy as np
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from spaceship_sim.geometry import reference as ref
from spaceship_sim.geometry.segments import closest_points_segments, segment_params

SEEDS = st.integers(0, 2**32 - 1)
SETTINGS = settings(max_examples=40, deadline=None)
ANGLES = st.sampled_from([1.0, 0.1, 1e-2, 1e-3, 1e-5, 1e-7, 1e-9, 1e-12, 0.0])


def kernel(P):
    """(distances (n,), closest points (n, 2, 3), params (n, 2)) of segments P[i, 0] P[i, 1] and
    P[i, 2] P[i, 3] ((n, 4, 3))."""
    d, pts, st_ = np.empty(len(P)), np.empty((len(P), 2, 3)), np.empty((len(P), 2))
    for i, (p1, q1, p2, q2) in enumerate(P):
        x, y, s, t = closest_points_segments(tuple(p1), tuple(q1), tuple(p2), tuple(q2))
        pts[i], st_[i] = (x, y), (s, t)
        d[i] = np.linalg.norm(np.subtract(x, y))
    return d, pts, st_


def segment_pairs(rng, n, angle, offset_scale, where=(-0.3, 1.3)):
    """n pairs whose lines cross at `angle` [rad], at parameters drawn from `where` on each (inside
    (0, 1): the segments cross), the second shifted off the first by up to offset_scale along their
    common normal (0: the lines meet)."""
    P = np.empty((n, 4, 3))
    for k in range(n):
        c = rng.normal(size=3) * 3
        d1 = rng.normal(size=3)
        d1 /= np.linalg.norm(d1)
        axis = np.cross(d1, rng.normal(size=3))
        axis /= np.linalg.norm(axis)
        d2 = Rotation.from_rotvec(axis * angle).as_matrix() @ d1
        l1, l2, s1, s2 = rng.uniform(0.5, 2), rng.uniform(0.5, 2), rng.uniform(*where), rng.uniform(*where)
        off = axis * offset_scale * rng.uniform()
        P[k] = c - s1 * l1 * d1, c + (1 - s1) * l1 * d1, c + off - s2 * l2 * d2, c + off + (1 - s2) * l2 * d2
    return P


def assert_matches_oracle(P):
    d, pts, params = kernel(P)
    want = ref.segment_distance_ref(P[:, 0], P[:, 1], P[:, 2], P[:, 3])
    scale = 1.0 + np.abs(P).max(axis=(1, 2))
    assert np.all(np.abs(d - want) <= 4e-15 * scale), np.max(np.abs(d - want) / scale)
    assert np.all((params >= 0.0) & (params <= 1.0))
    # the points are the segments' own at those parameters
    for j, (p, q) in enumerate(((0, 1), (2, 3))):
        on = P[:, p] + params[:, j, None] * (P[:, q] - P[:, p])
        assert np.array_equal(pts[:, j], on)


@SETTINGS
@given(SEEDS, ANGLES, st.sampled_from([0.0, 1e-9, 1e-3, 1.0]))
def test_distance_matches_exact_oracle_at_every_angle(seed, angle, offset):
    assert_matches_oracle(segment_pairs(np.random.default_rng(seed), 25, angle, offset))


@SETTINGS
@given(SEEDS)
def test_random_and_degenerate_segments_match_exact_oracle(seed):
    """Free segments, points against segments, points against points, and collinear overlaps."""
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(40, 4, 3)) * rng.choice([1e-3, 1.0, 1e3])
    P[10:20, 1] = P[10:20, 0]  # the first a point
    P[15:25, 3] = P[15:25, 2]  # the second a point (15..19: both)
    P[25:30, 2] = P[25:30, 0] + rng.uniform(-1, 2, (5, 1)) * (P[25:30, 1] - P[25:30, 0])
    P[25:30, 3] = P[25:30, 0] + rng.uniform(-1, 2, (5, 1)) * (P[25:30, 1] - P[25:30, 0])  # on the first's line
    assert_matches_oracle(P)


def test_nearly_parallel_crossing_segments_meet():
    """Segments crossing at their middles at 1e-9 rad are at distance 0 to a few ulps (the lines'
    solution a e - b^2 = a e sin^2 is all rounding there)."""
    rng = np.random.default_rng(3)
    P = segment_pairs(rng, 200, 1e-9, 0.0, where=(0.2, 0.8))
    d, _, _ = kernel(P)
    assert d.max() < 1e-14


@SETTINGS
@given(SEEDS, ANGLES)
def test_symmetric_in_the_two_segments(seed, angle):
    P = segment_pairs(np.random.default_rng(seed), 20, angle, 1e-3)
    d, _, _ = kernel(P)
    d2, _, _ = kernel(P[:, [2, 3, 0, 1]])
    assert np.allclose(d, d2, rtol=0, atol=4e-15 * (1 + np.abs(P).max()))


def test_params_of_points_and_of_touching_ends():
    """Exact answers on small integers: both points, an end on the other segment, crossing."""
    assert segment_params((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 2.0, 3.0), (1.0, 2.0, 3.0)) == (0.0, 0.0)
    assert segment_params((0.0, 0.0, 0.0), (4.0, 0.0, 0.0), (1.0, 1.0, 0.0), (1.0, 1.0, 0.0)) == (0.25, 0.0)
    assert segment_params((0.0, 0.0, 0.0), (4.0, 0.0, 0.0), (4.0, 0.0, 0.0), (4.0, 3.0, 0.0)) == (1.0, 0.0)
    assert segment_params((-1.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, -1.0, 1.0), (0.0, 1.0, 1.0)) == (0.5, 0.5)
