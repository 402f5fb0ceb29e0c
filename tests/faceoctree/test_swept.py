"""Swept-space test: the hull kernel against a linear-programming reference, and a fighter that
crosses the freighter's tower between two samples — missed by both samples, caught by the swept
test, in agreement with a finely sub-sampled discrete test (checked against brute force)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spaceship_sim.faceoctree import FaceOctreeExact
from spaceship_sim.faceoctree.swept import swept_hits, swept_hits_ref
from spaceship_sim.meshes import load_model
from spaceship_sim.narrowphase.reference import brute_force_pair

SUBSAMPLES = 64


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_hull_test_matches_linear_programme(seed):
    rng = np.random.default_rng(seed)
    got, want = [], []
    for _ in range(50):
        T = rng.normal(size=(3, 3))
        away = rng.normal(size=3) * 1.5
        B0 = rng.normal(size=(3, 3)) * 0.5 + away
        B1 = B0 - away * rng.uniform(0, 2.5)  # translated toward T, maybe past it
        if rng.uniform() < 0.3:
            B1 = B1 + rng.normal(size=(3, 3)) * 0.3  # and deformed
        got.append(swept_hits(T, B0, B1))
        want.append(swept_hits_ref(T, B0, B1))
    assert got == want
    assert 0 < sum(want) < len(want)


def test_unmoved_face_is_the_triangle_test():
    T = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    B = np.array([[0.2, 0.2, -1], [0.2, 0.2, 1], [1, 1, 1]], float)
    assert swept_hits(T, B, B) and not swept_hits(T, B + [0, 0, 1.5], B + [0, 0, 1.5])


def _at(c):
    T = np.eye(4)
    T[:3, 3] = c
    return T[None]


@pytest.fixture(scope="module")
def ships():
    freighter, fighter = load_model("freighter"), load_model("fighter")
    return freighter, fighter, FaceOctreeExact([freighter, fighter])


@pytest.mark.parametrize("height, crosses", [(16.0, True), (23.0, False)])
def test_fighter_crossing_the_tower_between_samples(ships, height, crosses):
    """The freighter's tower is a wall ~2 m thick (x 32.4..34.5, up to z 20.3); the fighter flies
    along x at `height`, 22 m per sample: at 16 m through the wall, at 23 m over it."""
    freighter, fighter, det = ships
    start, end = np.array([20.0, 0.0, height]), np.array([42.0, 0.0, height])
    a, b, eye = np.zeros(1, np.int64), np.ones(1, np.int64), np.eye(4)[None]

    def discrete(c):
        return det.collide(a, b, eye, _at(c), all_contacts=False).colliding[0]

    assert not discrete(start) and not discrete(end)  # the samples see nothing
    sub = [discrete(start + s * (end - start)) for s in np.linspace(0.0, 1.0, SUBSAMPLES + 1)]
    swept = det.collide_swept(a, b, eye, _at(start), eye, _at(end))
    assert swept.colliding[0] == any(sub) == crosses
    if crosses:  # brute force confirms the sub-sampled hit
        mid = start + np.flatnonzero(sub)[0] / SUBSAMPLES * (end - start)
        assert len(brute_force_pair(freighter.vertices, freighter.faces, np.eye(4), fighter.vertices,
                                    fighter.faces, _at(mid)[0]))
