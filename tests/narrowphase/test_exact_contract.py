"""The exact-strategy contract: ExactAnswer's CSR and the brute-force oracle on simple meshes."""
import numpy as np

from spaceship_sim.meshes import validate_mesh_arrays
from spaceship_sim.narrowphase.exact import ExactAnswer
from spaceship_sim.registry import EXACT_METHODS


def _tetra():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return validate_mesh_arrays(v, f, "tetra")


def _at(x):
    T = np.eye(4)
    T[0, 3] = x
    return T


def test_from_lists_round_trips():
    hits = [np.array([[1, 2], [3, 4]]), np.zeros((0, 2), int), np.array([[5, 6]])]
    ans = ExactAnswer.from_lists(hits)
    assert ans.colliding.tolist() == [True, False, True]
    for i, h in enumerate(hits):
        assert np.array_equal(ans.pairs_of(i), h.reshape(-1, 2))
    assert np.isnan(ans.distance).all()


def test_brute_force_sees_overlap_and_gap():
    det = EXACT_METHODS["brute"]([_tetra()])
    z = np.zeros(3, np.int64)
    Ta = np.stack([_at(0.0)] * 3)
    Tb = np.stack([_at(0.2), _at(1.5), _at(0.9)])
    ans = det.collide(z, z, Ta, Tb)
    assert ans.colliding.tolist() == [True, False, True]
    first = det.collide(z, z, Ta, Tb, all_contacts=False)
    assert first.colliding.tolist() == [True, False, True]
    assert all(len(first.pairs_of(i)) <= 1 for i in range(3))
