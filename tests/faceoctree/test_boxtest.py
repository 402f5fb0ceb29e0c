"""The triangle–box kernel against the clipping reference and the sphere-tree builder's numpy SAT."""
import numpy as np
from hypothesis import given, settings, strategies as st

from spaceship_sim.faceoctree.boxtest import overlap_triangle_box, overlap_triangle_box_ref
from spaceship_sim.geometry.triangles import triangle_box_overlap

SEEDS = st.integers(0, 2**32 - 1)


def kernel(T, lo, hi):
    boxes = np.stack([lo, hi], 1)
    return np.array([overlap_triangle_box(T, i, boxes, i) for i in range(len(T))])


def random_boxes(rng, n):
    c = rng.normal(size=(n, 3)) * 0.5
    h = rng.uniform(0.05, 1.0, size=(n, 3))
    return c - h, c + h


@settings(max_examples=25, deadline=None)
@given(SEEDS)
def test_matches_clipping_on_random_boxes(seed):
    rng = np.random.default_rng(seed)
    T = rng.normal(size=(300, 3, 3)) * rng.uniform(0.5, 1.5)
    lo, hi = random_boxes(rng, 300)
    want = np.array([overlap_triangle_box_ref(T[i], lo[i], hi[i]) for i in range(300)])
    assert np.array_equal(kernel(T, lo, hi), want)
    assert 0.1 < want.mean() < 0.9  # both verdicts exercised


@settings(max_examples=25, deadline=None)
@given(SEEDS)
def test_matches_numpy_sat_on_cubes(seed):
    rng = np.random.default_rng(seed)
    T = rng.normal(size=(300, 3, 3))
    c, h = rng.normal(size=(300, 3)), rng.uniform(0.05, 1.0, size=300)
    got = kernel(T, c - h[:, None], c + h[:, None])
    assert np.array_equal(got, triangle_box_overlap(T, c, h))


def test_touching_counts_and_a_gap_does_not():
    lo, hi = np.zeros((1, 3)), np.ones((1, 3))
    corner = np.array([[[1, 1, 1], [2, 1, 1], [1, 2, 3]]], float)      # shares the corner (1, 1, 1)
    on_face = np.array([[[0.5, 0.5, 1], [3, 0.5, 1], [0.5, 3, 1]]], float)  # lies on the face z = 1
    past_edge = np.array([[[2, 0, 0], [0, 2, 0], [0, 2, 1]]], float)   # cuts the corner region near x = y = 1
    gap = np.array([[[1.5, 0, 0], [0, 1.5, -0.5], [0.5, 1.5, 0.5]]], float) + [[0.6, 0.6, 0]]
    for tri, want in ((corner, True), (on_face, True), (past_edge, True), (gap, False)):
        assert kernel(tri, lo, hi)[0] == want == overlap_triangle_box_ref(tri[0], lo[0], hi[0])


def boxes_meet_lp(box, R, t) -> bool:
    """Reference: is there x with box[0] <= x <= box[0]'s hi and box[1] <= R^T (x - t) <= box[1]'s
    hi (B's box placed by x = R y + t)? A linear feasibility programme over x."""
    from scipy.optimize import linprog
    A = np.concatenate([R.T, -R.T])
    b = np.concatenate([box[1, 1] + R.T @ t, -(box[1, 0] + R.T @ t)])
    return linprog(np.zeros(3), A_ub=A, b_ub=b, bounds=list(zip(box[0, 0], box[0, 1])), method="highs").status == 0


@settings(max_examples=25, deadline=None)
@given(SEEDS)
def test_oriented_box_reject_never_separates_boxes_that_meet(seed):
    from spaceship_sim.bench.bench_narrowphase import random_rotations
    from spaceship_sim.faceoctree.kernels import _boxes_apart

    rng = np.random.default_rng(seed)
    n = 60
    lo, hi = random_boxes(rng, 2)
    box = np.stack([np.stack([lo[0], hi[0]]), np.stack([lo[1], hi[1]])])  # A's box, B's box
    R, t = random_rotations(rng, n), rng.normal(size=(n, 3)) * 4.0
    centre = box.mean(axis=1)  # (2, 3): half the poses put B's box centre on A's (they certainly meet)
    t[: n // 2] = centre[0] - R[: n // 2] @ centre[1] + rng.normal(size=(n // 2, 3)) * 0.1 * (hi[1] - lo[1]).min()
    apart = np.array([_boxes_apart(box, 0, 1, R, t, r) for r in range(n)])
    meet = np.array([boxes_meet_lp(box, R[r], t[r]) for r in range(n)])
    assert not (apart & meet).any()  # conservative: a reject is always right
    assert apart.any() and meet.any()  # both verdicts exercised
    assert (apart | meet).mean() > 0.7  # and it rejects most disjoint pairs (six of the 15 axes)


def test_oriented_box_reject_keeps_touching_boxes():
    from spaceship_sim.faceoctree.kernels import _boxes_apart

    box = np.array([[[0.0, 0, 0], [1, 1, 1]]] * 2)
    R = np.eye(3)[None]
    for t, apart in (([1.0, 0, 0], False), ([1.0, 1.0, 1.0], False), ([1.001, 0, 0], True)):
        assert _boxes_apart(box, 0, 1, R, np.array([t]), 0) == apart
